// SPDX-License-Identifier: BSD-3-Clause
// Unit tests of mpipcl-bench's derived metrics and CSV (no MPI launch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "report.hpp"
#include "tune.hpp"

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
    p.slowdown = {1.5, 1.25, 1.0};
    p.send_cpu = {6e-3};
    p.send_progress_cpu = {7e-4};
    p.send_wakeups = {8.0};
    p.recv_cpu = {9e-3};
    p.recv_progress_cpu = {1.1e-3};
    p.recv_wakeups = {12.0};
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
    recv.moved = {0.875, 1.0, 0.9375};  // median 15/16
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
    // Each group appended after the last, so readers by position keep every older column
    // where it was: moved, then the pipeline side's columns.
    EXPECT_EQ(header.back(), "recv_progress_wakeups");
    EXPECT_EQ(header.at(header.size() - 10), "compute");
    EXPECT_EQ(header.at(header.size() - 11), "early_replies_median");
    EXPECT_EQ(header.at(header.size() - 19), "moved");
    EXPECT_EQ(header.at(header.size() - 20), "extra_ratio_to_multi");
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
        EXPECT_DOUBLE_EQ(number("repeats"), 1.0);
        EXPECT_EQ(row.at(column("ratio_to_multi")), "");  // no multi point in this run
        EXPECT_EQ(row.at(column("compute")), "sleep");
        EXPECT_EQ(row.at(column("work_units_per_ms")), "");  // sleep: no kernel
        EXPECT_DOUBLE_EQ(number("compute_slowdown_median"), 1.25);
        EXPECT_DOUBLE_EQ(number("compute_slowdown_p90"), 1.45);
        EXPECT_DOUBLE_EQ(number("send_cpu_ms"), 6.0);
        EXPECT_DOUBLE_EQ(number("send_progress_cpu_ms"), 0.7);
        EXPECT_DOUBLE_EQ(number("send_progress_wakeups"), 8.0);
        EXPECT_DOUBLE_EQ(number("recv_cpu_ms"), 9.0);
        EXPECT_DOUBLE_EQ(number("recv_progress_cpu_ms"), 1.1);
        EXPECT_DOUBLE_EQ(number("recv_progress_wakeups"), 12.0);
    }
    EXPECT_EQ(csv_fields(lines[1]).at(column("extra_compute_us_median")), "");  // send side
    EXPECT_EQ(std::stod(csv_fields(lines[2]).at(column("extra_compute_us_median"))), 400.0);
    EXPECT_EQ(csv_fields(lines[1]).at(column("moved")), "");  // send side: not measured
    EXPECT_EQ(std::stod(csv_fields(lines[2]).at(column("moved"))), 0.9375);
    for (std::size_t r = 1; r < lines.size(); ++r) {  // not the pipeline side
        EXPECT_EQ(csv_fields(lines[r]).at(column("reply_bytes")), "");
        EXPECT_EQ(csv_fields(lines[r]).at(column("round_trip_us_median")), "");
        EXPECT_EQ(csv_fields(lines[r]).at(column("overhead")), "");
    }
}

/// A pipeline point of @p mode whose rounds took @p round_trip seconds (three rounds).
PointResult pipeline_point(Mode mode, double round_trip)
{
    PointResult p = point_16mib();
    p.mode = mode;
    p.side = Side::pipeline;
    p.moved = {0.5, 0.5, 0.5};
    p.round_trip = {round_trip, round_trip * 2, round_trip / 2};
    p.part_round_trip = {3e-6, 3e-6, 3e-6};
    p.inside = {0.25, 0.75, 0.5};
    p.early_replies = {15, 14, 15};
    return p;
}

TEST(Csv, PipelineRowsHaveThePipelineColumns)
{
    Options o;
    o.reply_bytes = 3;
    RunInfo info;
    const std::vector<PointResult> points = {pipeline_point(Mode::single, 1e-3),
                                             pipeline_point(Mode::part_rma, 2.5e-4)};
    std::FILE* file = std::tmpfile();
    ASSERT_NE(file, nullptr);
    write_csv(file, o, info, points);
    std::rewind(file);
    char buffer[4096];
    std::vector<std::vector<std::string>> rows;
    while (std::fgets(buffer, sizeof buffer, file) != nullptr) {
        std::string line = buffer;
        line.pop_back();
        rows.push_back(csv_fields(line));
    }
    std::fclose(file);
    ASSERT_EQ(rows.size(), 3u);
    const std::vector<std::string>& header = rows[0];
    auto at = [&](std::size_t row, const std::string& name) {
        const auto it = std::find(header.begin(), header.end(), name);
        EXPECT_NE(it, header.end()) << name;
        return rows[row].at(static_cast<std::size_t>(it - header.begin()));
    };
    EXPECT_EQ(at(2, "side"), "pipeline");
    EXPECT_EQ(at(2, "reply_bytes"), "3");
    EXPECT_DOUBLE_EQ(std::stod(at(2, "round_trip_us_median")), 250.0);
    EXPECT_DOUBLE_EQ(std::stod(at(2, "round_trip_us_p10")), 150.0);
    EXPECT_DOUBLE_EQ(std::stod(at(2, "part_round_trip_us_median")), 3.0);
    EXPECT_DOUBLE_EQ(std::stod(at(2, "early_bird_share_median")), 0.5);
    EXPECT_DOUBLE_EQ(std::stod(at(2, "overhead")), 0.25);  // 250 us / single's 1000 us
    EXPECT_DOUBLE_EQ(std::stod(at(1, "overhead")), 1.0);   // single itself
    EXPECT_DOUBLE_EQ(std::stod(at(2, "early_replies_median")), 15.0);
    EXPECT_DOUBLE_EQ(std::stod(at(2, "moved")), 0.5);
    EXPECT_EQ(at(2, "extra_compute_us_median"), "");  // a recv-side figure
}

TEST(Pipeline, RoundTripIsTheUnionOfThePartitionsIntervals)
{
    // Intervals [0, 2], [1, 3], [5, 6]: union [0, 3] and [5, 6], 4 s; 2.5 s of it before the
    // compute ended at 2.5. Replies at 2 and 3 came before the last Pready began (4.5).
    const PipelineRound r = pipeline_round({0, 1, 4.5}, {0, 1, 5}, {2, 3, 6}, 2.5);
    EXPECT_DOUBLE_EQ(r.round_trip, 4.0);
    EXPECT_DOUBLE_EQ(r.inside, 2.5 / 4.0);
    EXPECT_DOUBLE_EQ(r.part_round_trip, 2.0);  // lengths 2, 2, 1
    EXPECT_DOUBLE_EQ(r.early_replies, 2.0);
}

TEST(Pipeline, AnIntervalInsideAnotherAddsNothing)
{
    // [1, 2] lies inside [0, 10]: the union is [0, 10] (the merge keeps the larger end).
    const PipelineRound r = pipeline_round({0, 1}, {0, 1}, {10, 2}, 20);
    EXPECT_DOUBLE_EQ(r.round_trip, 10.0);
    EXPECT_DOUBLE_EQ(r.inside, 1.0);
    EXPECT_DOUBLE_EQ(r.part_round_trip, 5.5);  // median of 10 and 1
    EXPECT_DOUBLE_EQ(r.early_replies, 0.0);    // both replies after the last Pready (1)
}

TEST(Pipeline, SingleIsOneIntervalAfterTheCompute)
{
    // single: every partition's interval is the one send and reply after the join.
    const PipelineRound r = pipeline_round({1, 2, 3}, {4, 4, 4}, {7, 7, 7}, 3);
    EXPECT_DOUBLE_EQ(r.round_trip, 3.0);
    EXPECT_DOUBLE_EQ(r.inside, 0.0);
    EXPECT_DOUBLE_EQ(r.part_round_trip, 3.0);
    EXPECT_DOUBLE_EQ(r.early_replies, 0.0);
    EXPECT_TRUE(std::isnan(pipeline_round({}, {}, {}, 0).round_trip));
}

TEST(Pipeline, OverheadOnlyAgainstSingleOnThePipelineSide)
{
    const Options o;
    const std::vector<PointResult> points = {pipeline_point(Mode::single, 1e-3),
                                             pipeline_point(Mode::multi, 5e-4), point_16mib()};
    EXPECT_DOUBLE_EQ(overhead(points, points[1], o), 0.5);
    EXPECT_TRUE(std::isnan(overhead(points, points[2], o)));  // send side
    const std::vector<PointResult> no_single = {points[1]};
    EXPECT_TRUE(std::isnan(overhead(no_single, no_single[0], o)));
}

TEST(Repeats, PipelineFiguresAreMediansOfRepeatMedians)
{
    const PointResult a = pipeline_point(Mode::part_persistent, 1e-3);  // median 1 ms
    const PointResult b = pipeline_point(Mode::part_persistent, 3e-3);  // median 3 ms
    const PointResult c = pipeline_point(Mode::part_persistent, 2e-3);  // median 2 ms
    const PointResult combined = combine_repeats({a, b, c});
    EXPECT_EQ(combined.round_trip, (std::vector<double>{1e-3, 3e-3, 2e-3}));
    EXPECT_EQ(combined.early_replies, (std::vector<double>{15, 15, 15}));
    EXPECT_EQ(combined.inside, (std::vector<double>{0.5, 0.5, 0.5}));
    EXPECT_DOUBLE_EQ(derive(combined, Options{}).round_trip_us.median, 2000.0);
}

TEST(Moved, ShareOfUnitsBeforeTheLaggardsComputeEnded)
{
    // Receiver clock 5 s ahead of the sender's; the laggard's compute ends at 10 s (sender).
    const double offset = 5.0;
    const double end = 10.0;
    const std::vector<double> all_early(16, 14.0);  // 9 s on the sender's clock
    EXPECT_DOUBLE_EQ(moved_share(all_early.data(), 16, offset, end), 1.0);
    // The ideal early-bird transfer: every unit but the laggard's before the end.
    std::vector<double> ideal(15, 14.999);
    ideal.push_back(15.001);
    EXPECT_DOUBLE_EQ(moved_share(ideal.data(), 16, offset, end), 15.0 / 16.0);
    // An arrival at the end itself is not before it; without the offset all would count.
    const std::vector<double> at_end = {15.0, 15.5};
    EXPECT_DOUBLE_EQ(moved_share(at_end.data(), 2, offset, end), 0.0);
    EXPECT_DOUBLE_EQ(moved_share(at_end.data(), 2, 0.0, 20.0), 1.0);
    // single: one unit, after the end.
    const double one = 15.2;
    EXPECT_DOUBLE_EQ(moved_share(&one, 1, offset, end), 0.0);
    EXPECT_TRUE(std::isnan(moved_share(nullptr, 0, offset, end)));
}

TEST(Repeats, MovedIsTheMedianOfRepeatMedians)
{
    PointResult a = point_16mib();
    a.side = Side::recv;
    a.moved = {0.5, 1.0, 0.875};  // median 0.875
    PointResult b = a;
    b.moved = {0.0, 0.25, 0.5, 1.0};  // median 0.375
    PointResult c = a;
    c.moved = {0.75};
    const Metrics single_repeat = derive(combine_repeats({a}), Options{});
    EXPECT_DOUBLE_EQ(single_repeat.moved.median, 0.875);
    EXPECT_DOUBLE_EQ(single_repeat.moved.min, 0.5);  // one repeat: every iteration stays

    const PointResult all = combine_repeats({a, b, c});
    ASSERT_EQ(all.moved.size(), 3u);
    const Metrics m = derive(all, Options{});
    EXPECT_DOUBLE_EQ(m.moved.median, 0.75);  // median of 0.875, 0.375, 0.75
    EXPECT_DOUBLE_EQ(m.moved.min, 0.375);
    EXPECT_DOUBLE_EQ(m.moved.max, 0.875);
}

TEST(Repeats, MedianOfRepeatMedians)
{
    PointResult a = point_16mib();
    a.perceived = {1e-3, 9e-3, 2e-3};  // median 2 ms
    PointResult b = point_16mib();
    b.perceived = {5e-3, 4e-3, 6e-3, 7e-3};  // median 5.5 ms
    PointResult c = point_16mib();
    c.perceived = {3e-3};  // median 3 ms
    c.verify_errors = 2;
    const PointResult one = combine_repeats({a});
    EXPECT_EQ(one.perceived, a.perceived);  // one repeat: every iteration stays
    EXPECT_EQ(one.repeats, 1);
    const PointResult all = combine_repeats({a, b, c});
    EXPECT_EQ(all.repeats, 3);
    EXPECT_EQ(all.verify_errors, 2);
    ASSERT_EQ(all.perceived.size(), 3u);
    const Metrics m = derive(all, Options{});
    EXPECT_DOUBLE_EQ(m.perceived_us.median, 3000.0);  // median of 2, 5.5, 3 ms
    EXPECT_DOUBLE_EQ(m.perceived_us.min, 2000.0);     // spread of the repeat medians
    EXPECT_DOUBLE_EQ(m.perceived_us.max, 5500.0);
    EXPECT_TRUE(all.extra.empty());  // send side: not measured, stays empty
    EXPECT_TRUE(all.moved.empty());
    EXPECT_TRUE(std::isnan(m.moved.median));
}

/// A send-side point of @p mode at @p bytes whose median perceived time is @p us.
PointResult tune_point(Mode mode, std::size_t bytes, double us)
{
    PointResult p = point_16mib();
    p.mode = mode;
    p.bytes = bytes;
    p.perceived = {us * 1e-6};
    return p;
}

/// What print_summary writes for @p r.
std::string summary_text(const std::vector<Ratio>& r)
{
    std::FILE* file = std::tmpfile();
    if (file == nullptr) {
        ADD_FAILURE() << "tmpfile";
        return {};
    }
    print_summary(file, r);
    std::rewind(file);
    std::string text;
    char buffer[1024];
    while (std::fgets(buffer, sizeof buffer, file) != nullptr) {
        text += buffer;
    }
    std::fclose(file);
    return text;
}

TEST(Ratios, EachPartModeAgainstMultiAndTheBest)
{
    PointResult multi = point_16mib();
    multi.mode = Mode::multi;
    multi.perceived = {2e-3};
    PointResult persistent = point_16mib();
    persistent.perceived = {1.5e-3};
    PointResult rma = point_16mib();
    rma.mode = Mode::part_rma;
    rma.perceived = {3e-3};
    PointResult single = point_16mib();
    single.mode = Mode::single;
    PointResult other_size = point_16mib();  // no multi of this size: no ratio
    other_size.bytes = 1u << 20;
    const std::vector<Ratio> r = ratios({single, multi, persistent, rma, other_size}, Options{});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].mode, Mode::part_persistent);
    EXPECT_DOUBLE_EQ(r[0].to_multi, 0.75);
    EXPECT_TRUE(r[0].best);
    EXPECT_EQ(r[1].mode, Mode::part_rma);
    EXPECT_DOUBLE_EQ(r[1].to_multi, 1.5);
    EXPECT_FALSE(r[1].best);
    EXPECT_NEAR(r[0].efficiency, 1201.0 / 1500.0, 1e-12);
    EXPECT_TRUE(std::isnan(r[0].extra_to_multi));  // send side

    const std::string text = summary_text(r);
    EXPECT_NE(text.find("summary 16 MiB send:  part-persistent 0.75 (eff 0.80)  part-rma 1.50 "
                        "(eff 0.40)  | best part-persistent 0.75\n"),
              std::string::npos)
        << text;
}

TEST(Ratios, AutoIsNeverBestAndIsReportedAgainstTheBest)
{
    const std::size_t s = 16u << 20;
    // part-auto faster than the best forced mode, by noise
    const std::vector<Ratio> r =
        ratios({tune_point(Mode::multi, s, 2000), tune_point(Mode::part_persistent, s, 1600),
                tune_point(Mode::part_auto, s, 1500)},
               Options{});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_TRUE(r[0].best);
    EXPECT_FALSE(r[1].best);
    const std::string text = summary_text(r);
    EXPECT_NE(text.find("| best part-persistent 0.80  | auto/best 0.94\n"), std::string::npos)
        << text;
}

TEST(Tune, RmaOnlyWhenClearlyFasterAndARuleWhereTheChoiceChanges)
{
    Options o;
    o.sizes = {1u << 20, 4u << 20, 16u << 20, 64u << 20};
    const std::vector<PointResult> points = {
        tune_point(Mode::part_persistent, 1u << 20, 100),
        tune_point(Mode::part_rma, 1u << 20, 97),  // within the margin: persistent
        tune_point(Mode::part_persistent, 4u << 20, 800),
        tune_point(Mode::part_rma, 4u << 20, 350),
        tune_point(Mode::part_persistent, 16u << 20, 3000),
        tune_point(Mode::part_rma, 16u << 20, 1800),
        tune_point(Mode::part_persistent, 64u << 20, 6000),
        tune_point(Mode::part_rma, 64u << 20, 7000),
    };
    const std::vector<TuneChoice> c = tune_choices(points, o);
    ASSERT_EQ(c.size(), 4u);
    EXPECT_FALSE(c[0].rma);
    EXPECT_TRUE(c[1].rma);
    EXPECT_TRUE(c[2].rma);
    EXPECT_FALSE(c[3].rma);
    EXPECT_DOUBLE_EQ(c[1].rma_us, 350);
    RunInfo info;
    info.mpi_library = "Test MPI";
    info.mpipcl_version = "0.0";
    const std::string text = tuning_file_text(c, o, info);
    EXPECT_NE(text.find("# MPI: Test MPI\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\n0 persistent\n4194304 rma\n67108864 persistent\n"), std::string::npos)
        << text;
    EXPECT_EQ(text.find("16777216"), std::string::npos) << text;  // no change there: no rule
}

TEST(Tune, WithoutRmaEverySizeIsPersistent)
{
    Options o;
    o.sizes = {64u << 10, 1u << 20};
    const std::vector<TuneChoice> c =
        tune_choices({tune_point(Mode::part_persistent, 64u << 10, 50),
                      tune_point(Mode::part_persistent, 1u << 20, 90)},
                     o);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_FALSE(c[0].rma || c[1].rma);
    EXPECT_TRUE(std::isnan(c[0].rma_us));
    const std::string text = tuning_file_text(c, o, RunInfo{});
    EXPECT_NE(text.find("\n0 persistent\n"), std::string::npos) << text;
    EXPECT_EQ(text.find(" rma\n"), std::string::npos) << text;
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
