// SPDX-License-Identifier: BSD-3-Clause
// The request state machine: legal transitions succeed, illegal ones are refused, and racing
// threads can never both win one transition.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "requests/state.hpp"

using mpipcl::requests::State;
using mpipcl::requests::StateMachine;

TEST(StateMachine, ARoundTrip)
{
    StateMachine s;
    EXPECT_EQ(s.load(), State::Inactive);
    EXPECT_FALSE(s.active());
    EXPECT_TRUE(s.begin_start());
    EXPECT_EQ(s.load(), State::Starting);
    EXPECT_FALSE(s.active()) << "Pready must not see a round that is still being set up";
    EXPECT_TRUE(s.end_start());
    EXPECT_TRUE(s.active());
    EXPECT_TRUE(s.complete());
    EXPECT_EQ(s.load(), State::Inactive);
}

TEST(StateMachine, IllegalTransitionsAreRefused)
{
    StateMachine s;
    EXPECT_FALSE(s.end_start());
    EXPECT_FALSE(s.complete()) << "completing an inactive request";
    EXPECT_FALSE(s.abort_start());
    ASSERT_TRUE(s.begin_start());
    EXPECT_FALSE(s.begin_start()) << "a second MPI_Start";
    EXPECT_FALSE(s.begin_free()) << "freeing a request that is starting";
    EXPECT_FALSE(s.complete());
    ASSERT_TRUE(s.end_start());
    EXPECT_FALSE(s.begin_start()) << "starting an active request";
    EXPECT_FALSE(s.begin_free()) << "freeing an active request";
    ASSERT_TRUE(s.complete());
    EXPECT_FALSE(s.complete()) << "completing twice";
    ASSERT_TRUE(s.begin_free());
    EXPECT_EQ(s.load(), State::Freed);
    EXPECT_FALSE(s.begin_start()) << "starting a freed request";
    EXPECT_FALSE(s.begin_free()) << "freeing twice";
}

TEST(StateMachine, AFailedStartLeavesItInactive)
{
    StateMachine s;
    ASSERT_TRUE(s.begin_start());
    EXPECT_TRUE(s.abort_start());
    EXPECT_EQ(s.load(), State::Inactive);
    EXPECT_TRUE(s.begin_start());
}

TEST(StateMachine, ExactlyOneOfManyRacingThreadsWins)
{
    for (int round = 0; round < 2000; ++round) {
        StateMachine s;
        ASSERT_TRUE(s.begin_start());
        ASSERT_TRUE(s.end_start());
        std::atomic<int> wins{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&] { wins += s.complete() ? 1 : 0; });
        }
        for (auto& t : threads) {
            t.join();
        }
        ASSERT_EQ(wins.load(), 1);
    }
}
