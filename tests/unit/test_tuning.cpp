// SPDX-License-Identifier: BSD-3-Clause
// The tuning file of mpipcl_backend=auto: parsing, lookup by total bytes, file loading.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "common/tuning.hpp"

using mpipcl::BackendKind;
using mpipcl::tuning::LoadResult;
using mpipcl::tuning::Rule;
using mpipcl::tuning::Table;

namespace {

Table parsed(const std::string& text)
{
    Table t;
    std::string error;
    EXPECT_TRUE(mpipcl::tuning::parse(text, &t, &error)) << error;
    return t;
}

std::string parse_error(const std::string& text)
{
    Table t({Rule{7, BackendKind::Rma, 3}});
    std::string error;
    EXPECT_FALSE(mpipcl::tuning::parse(text, &t, &error)) << text;
    // A failed parse leaves the table as it was.
    EXPECT_EQ(t.rules().size(), 1u);
    return error;
}

/// A file in the test's temporary directory, removed at destruction.
struct TempFile {
    std::string path;
    explicit TempFile(const std::string& text)
    {
        char name[] = "/tmp/mpipcl-tuning-XXXXXX";
        const int fd = mkstemp(name);
        EXPECT_GE(fd, 0);
        close(fd);
        path = name;
        std::ofstream(path) << text;
    }
    ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

TEST(Tuning, EmptyTextIsAnEmptyTable)
{
    EXPECT_TRUE(parsed("").empty());
    EXPECT_TRUE(parsed("# only a comment\n\n   \t\n").empty());
    EXPECT_EQ(parsed("").find(1 << 30), nullptr);
}

TEST(Tuning, RulesApplyFromTheirSizeToTheNextRule)
{
    const Table t = parsed(
        "# written by hand\n"
        "0 persistent\n"
        "4M rma          # from 4 MiB up\n"
        "64M rma 32\n");
    ASSERT_EQ(t.rules().size(), 3u);
    EXPECT_EQ(t.find(0)->backend, BackendKind::Persistent);
    EXPECT_EQ(t.find((4 << 20) - 1)->backend, BackendKind::Persistent);
    EXPECT_EQ(t.find(4 << 20)->backend, BackendKind::Rma);
    EXPECT_EQ(t.find(4 << 20)->messages, 0);
    EXPECT_EQ(t.find(std::int64_t{64} << 20)->messages, 32);
    EXPECT_EQ(t.find(std::int64_t{1} << 40)->min_bytes, std::int64_t{64} << 20);
}

TEST(Tuning, BelowTheFirstRuleThereIsNone)
{
    const Table t = parsed("1024 rma\n");
    EXPECT_EQ(t.find(1023), nullptr);
    EXPECT_EQ(t.find(1024)->backend, BackendKind::Rma);
}

TEST(Tuning, UnsortedLinesAreSorted)
{
    const Table t = parsed("1G rma\n16k persistent 4\n1m rma 8\n");
    ASSERT_EQ(t.rules().size(), 3u);
    EXPECT_EQ(t.rules()[0].min_bytes, 16 << 10);
    EXPECT_EQ(t.rules()[1].min_bytes, 1 << 20);
    EXPECT_EQ(t.rules()[2].min_bytes, 1 << 30);
    EXPECT_EQ(t.find(2 << 20)->messages, 8);
}

TEST(Tuning, MalformedLinesNameTheirLine)
{
    EXPECT_EQ(parse_error("0 persistent\nbanana rma\n").rfind("line 2: ", 0), 0u);
    EXPECT_NE(parse_error("4M\n").find("no backend"), std::string::npos);
    EXPECT_NE(parse_error("4M auto\n").find("not persistent|rma"), std::string::npos);
    EXPECT_NE(parse_error("4M native\n").find("not persistent|rma"), std::string::npos);
    EXPECT_NE(parse_error("4M rma -1\n").find("messages"), std::string::npos);
    EXPECT_NE(parse_error("4M rma 1048577\n").find("messages"), std::string::npos);
    EXPECT_NE(parse_error("4M rma 2 extra\n").find("expected"), std::string::npos);
    EXPECT_NE(parse_error("4M rma\n4194304 persistent\n").find("line 2: "), std::string::npos);
    parse_error("-1 rma\n");
    parse_error("4MB rma\n");
    parse_error("4T rma\n");
    parse_error("99999999999999999999 rma\n");
    parse_error("9000000000000G rma\n");  // overflows 64 bits
    parse_error("4M RMA\n");
}

TEST(Tuning, RmaFrom)
{
    EXPECT_TRUE(Table::rma_from(0).empty());
    const Table t = Table::rma_from(65536);
    EXPECT_EQ(t.find(65535), nullptr);
    EXPECT_EQ(t.find(65536)->backend, BackendKind::Rma);
}

TEST(Tuning, LoadFile)
{
    Table t;
    std::string error;
    EXPECT_EQ(mpipcl::tuning::load_file("/nonexistent/mpipcl/tuning", &t, &error),
              LoadResult::Missing);
    EXPECT_NE(error.find("/nonexistent/mpipcl/tuning"), std::string::npos);
    {
        TempFile good("0 persistent\n16M rma 64\n");
        EXPECT_EQ(mpipcl::tuning::load_file(good.path, &t, &error), LoadResult::Loaded);
        EXPECT_EQ(t.find(32 << 20)->messages, 64);
    }
    {
        TempFile bad("0 persistent\n16M rma sixty-four\n");
        EXPECT_EQ(mpipcl::tuning::load_file(bad.path, &t, &error), LoadResult::Malformed);
        EXPECT_NE(error.find("line 2"), std::string::npos);
        EXPECT_NE(error.find(bad.path), std::string::npos);
    }
    {
        TempFile huge(std::string(2 << 20, '#'));
        EXPECT_EQ(mpipcl::tuning::load_file(huge.path, &t, &error), LoadResult::Malformed);
    }
    EXPECT_EQ(mpipcl::tuning::load_file("/", &t, &error), LoadResult::Malformed);
}

TEST(Tuning, DefaultPathNamesTheFlavour)
{
    const std::string flavour = mpipcl::tuning::mpi_flavour();
    EXPECT_FALSE(flavour.empty());
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    const std::string saved = xdg != nullptr ? xdg : "";
    setenv("XDG_CONFIG_HOME", "/cfg", 1);
    EXPECT_EQ(mpipcl::tuning::default_path(), "/cfg/mpipcl/tuning-" + flavour);
    setenv("XDG_CONFIG_HOME", "relative", 1);  // not absolute: ignored, as XDG says
    const char* home = std::getenv("HOME");
    if (home != nullptr && home[0] != '\0') {
        EXPECT_EQ(mpipcl::tuning::default_path(),
                  std::string(home) + "/.config/mpipcl/tuning-" + flavour);
    }
    if (xdg != nullptr) {
        setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
    } else {
        unsetenv("XDG_CONFIG_HOME");
    }
}
