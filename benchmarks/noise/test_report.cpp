// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of mpipcl-bench's derived metrics and CSV (no MPI launch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "report.hpp"

namespace mpipcl::bench {
namespace {

/// A send-side point of 16 MiB with a baseline in round numbers (seconds).
PointResult point_16mib()
{
    PointResult p;
    p.mode = Mode::part_persistent;
    p.side = Side::send;
    p.bytes = 16u << 20;
    p.baseline.latency = 1e-6;
    p.baseline.send_time = 2001e-6;      // one MPI_Send of S: B = S / 2 ms
    p.baseline.stream_time = 1601e-6;    // P MPI_Isends of S/P: faster, B = S / 1.6 ms
    p.baseline.part_send_time = 101e-6;  // one MPI_Send of S/P: S/P in 100 us
    p.perceived = {3e-3, 1e-3, 2e-3};    // median 2 ms
    p.comm = {1e-3, 1e-3, 1e-3};
    p.late = {3e-6, 5e-6, 4e-6};  // median 4 us, distinct from every other column
    return p;
}

TEST(Derive, BoundTakesFasterPlainPathAndLaggardDelay)
{
    Options o;
    o.partitions = 16;
    o.compute_ms = 10;
    o.noise_pct = 4;  // d = 0.4 ms
    const Metrics m = derive(point_16mib(), o);
    // T* = L + max(S/(P*B_part), S/B - d) = 1 + max(100, 1600 - 400) us.
    EXPECT_NEAR(m.ideal_us, 1201.0, 1e-6);
    EXPECT_NEAR(m.send_bw, 16.0 / 1.6e-3, 1e-6);
    EXPECT_NEAR(m.one_send_bw, 16.0 / 2e-3, 1e-6);
    EXPECT_NEAR(m.part_bw, 1.0 / 100e-6, 1e-6);
    EXPECT_NEAR(m.perceived_us.median, 2000.0, 1e-6);
    EXPECT_NEAR(m.efficiency, 1201.0 / 2000.0, 1e-9);
    EXPECT_NEAR(m.perceived_bw.median, 16.0 / 2e-3, 1e-6);
    EXPECT_NEAR(m.late_us.median, 4.0, 1e-9);
    EXPECT_NEAR(m.late_us.max, 5.0, 1e-9);
}

TEST(Derive, LongLaggardLeavesOnlyTheLastPartition)
{
    Options o;
    o.partitions = 16;
    o.compute_ms = 100;
    o.noise_pct = 10;  // d = 10 ms: everything but the laggard's part moved meanwhile
    const Metrics m = derive(point_16mib(), o);
    EXPECT_NEAR(m.ideal_us, 101.0, 1e-6);
}

TEST(Derive, OnePartitionNoNoiseIsTheFastestPlainSend)
{
    Options o;
    o.partitions = 1;
    o.noise_pct = 0;
    PointResult p = point_16mib();
    p.baseline.stream_time = p.baseline.send_time;  // P = 1: the same message
    p.baseline.part_send_time = p.baseline.send_time;
    EXPECT_NEAR(derive(p, o).ideal_us, 2001.0, 1e-6);
}

TEST(Derive, SendSideHasNoExtraComputeTime)
{
    const Metrics m = derive(point_16mib(), Options{});
    EXPECT_TRUE(std::isnan(m.extra_us.median));
}

/// Splits one CSV line at commas outside double quotes; "" inside quotes is one quote.
std::vector<std::string> csv_fields(const std::string& line)
{
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
            fields.back() += '"';
            ++i;
        } else if (c == '"') {
            quoted = !quoted;
        } else if (c == ',' && !quoted) {
            fields.emplace_back();
        } else {
            fields.back() += c;
        }
    }
    return fields;
}

TEST(Csv, EveryRowHasEveryColumnAndTheRunParameters)
{
    Options o;
    RunInfo info;
    info.mpi_library = "Open MPI v4.1.4, package: \"Debian\" OpenMPI";  // commas, quotes
    info.mpipcl_version = "0.1.0";
    PointResult recv = point_16mib();
    recv.side = Side::recv;
    recv.extra = {4e-4, 4e-4, 4e-4};
    const std::vector<PointResult> points = {point_16mib(), recv};

    std::FILE* file = std::tmpfile();
    ASSERT_NE(file, nullptr);
    write_csv(file, o, info, points);
    std::rewind(file);
    std::vector<std::string> lines;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, file) != nullptr) {
        std::string line = buffer;
        ASSERT_EQ(line.back(), '\n');
        line.pop_back();
        lines.push_back(line);
    }
    std::fclose(file);

    ASSERT_EQ(lines.size(), 3u);
    const std::vector<std::string> header = csv_fields(lines[0]);
    auto column = [&](const std::string& name) {
        for (std::size_t i = 0; i < header.size(); ++i) {
            if (header[i] == name) {
                return i;
            }
        }
        ADD_FAILURE() << "no column " << name;
        return header.size();  // row.at() below then throws: the test fails, never crashes
    };
    for (std::size_t r = 1; r < lines.size(); ++r) {
        const std::vector<std::string> row = csv_fields(lines[r]);
        ASSERT_EQ(row.size(), header.size()) << lines[r];
        auto number = [&](const std::string& name) { return std::stod(row.at(column(name))); };
        EXPECT_EQ(row.at(column("mpi_library")), info.mpi_library);
        EXPECT_EQ(row.at(column("mpipcl_version")), "0.1.0");
        EXPECT_EQ(row.at(column("size_bytes")), "16777216");
        EXPECT_EQ(row.at(column("partitions")), "16");
        EXPECT_EQ(row.at(column("laggard_delay_ms")), "0.4");
        // Every derived column by name, each with a different value: a shifted column fails.
        EXPECT_DOUBLE_EQ(number("perceived_us_median"), 2000.0);
        EXPECT_DOUBLE_EQ(number("perceived_us_min"), 1000.0);
        EXPECT_DOUBLE_EQ(number("perceived_us_max"), 3000.0);
        EXPECT_DOUBLE_EQ(number("latency_us"), 1.0);
        EXPECT_DOUBLE_EQ(number("send_bw_MiBps"), 10000.0);
        EXPECT_DOUBLE_EQ(number("one_send_bw_MiBps"), 8000.0);
        EXPECT_DOUBLE_EQ(number("part_send_bw_MiBps"), 10000.0);
        EXPECT_DOUBLE_EQ(number("ideal_us"), 1201.0);
        EXPECT_DOUBLE_EQ(number("comm_us_median"), 1000.0);
        EXPECT_DOUBLE_EQ(number("late_us_median"), 4.0);
        EXPECT_NEAR(number("late_us_p90"), 4.8, 1e-9);
    }
    EXPECT_EQ(csv_fields(lines[1]).at(column("extra_compute_us_median")), "");  // send side
    EXPECT_EQ(std::stod(csv_fields(lines[2]).at(column("extra_compute_us_median"))), 400.0);
}

TEST(FormatSize, BinaryUnitsOnlyWhenExact)
{
    EXPECT_EQ(format_size(64u << 10), "64 KiB");
    EXPECT_EQ(format_size(1u << 20), "1 MiB");
    EXPECT_EQ(format_size(1000), "1000 B");
    EXPECT_EQ(format_size(1536), "1536 B");
}

}  // namespace
}  // namespace mpipcl::bench
