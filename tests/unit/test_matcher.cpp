// SPDX-License-Identifier: BSD-3-Clause
// Matching of receives with Setups (MPI order, unexpected and waiting sides) and the cancel
// and free rules, without MPI.
#include <gtest/gtest.h>

#include <optional>

#include "progress/matcher.hpp"

using mpipcl::progress::Matcher;
using mpipcl::progress::MatchKey;
using mpipcl::progress::MsgType;
using mpipcl::progress::Setup;
using What = Matcher::Cancelled::What;

namespace {

constexpr std::uint64_t kComm = 0xc0;

Setup setup(std::uint64_t send_id, int src = 1, int tag = 7, std::uint64_t comm = kComm)
{
    Setup s{};
    s.msg.type = MsgType::Setup;
    s.msg.send_id = send_id;
    s.msg.tag = tag;
    s.msg.comm_key = comm;
    s.src = src;
    return s;
}

MatchKey key(int src = 1, int tag = 7, std::uint64_t comm = kComm)
{
    return MatchKey{comm, src, tag};
}

/// The send id a match carries, 0 = no match.
std::uint64_t send_of(const std::optional<Matcher::Match>& m)
{
    return m ? m->setup.msg.send_id : 0;
}

}  // namespace

TEST(Matcher, UnexpectedSetupsMatchLaterReceivesInOrder)
{
    Matcher m;
    EXPECT_FALSE(m.add_setup(setup(100)));
    EXPECT_FALSE(m.add_setup(setup(101)));
    EXPECT_EQ(m.unexpected_count(), 2u);
    const auto a = m.add_receive(1, key(), false);
    const auto b = m.add_receive(2, key(), false);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->recv, 1u);
    EXPECT_EQ(send_of(a), 100u);  // non-overtaking: the first Setup goes to the first receive
    EXPECT_EQ(send_of(b), 101u);
    EXPECT_EQ(m.unexpected_count(), 0u);
    EXPECT_EQ(m.held_count(), 2u);
}

TEST(Matcher, ReceivesWaitForSetupsInOrder)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    EXPECT_FALSE(m.add_receive(2, key(), false));
    EXPECT_EQ(m.waiting_count(), 2u);
    const auto a = m.add_setup(setup(100));
    const auto b = m.add_setup(setup(101));
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->recv, 1u);
    EXPECT_EQ(send_of(a), 100u);
    EXPECT_EQ(b->recv, 2u);
    EXPECT_EQ(send_of(b), 101u);
    EXPECT_EQ(m.waiting_count(), 0u);
}

TEST(Matcher, OnlyTheSameCommunicatorSourceAndTagMatch)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(1, 7, kComm), false));
    EXPECT_FALSE(m.add_setup(setup(100, 1, 8, kComm)));      // other tag
    EXPECT_FALSE(m.add_setup(setup(101, 2, 7, kComm)));      // other source
    EXPECT_FALSE(m.add_setup(setup(102, 1, 7, kComm + 1)));  // other communicator
    EXPECT_EQ(m.unexpected_count(), 3u);
    const auto r = m.add_setup(setup(103, 1, 7, kComm));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->recv, 1u);
    EXPECT_EQ(send_of(r), 103u);
}

TEST(Matcher, PeersAndTagsInterleaved)
{
    Matcher m;
    // Setups of two senders on two tags arrive interleaved; each (source, tag) keeps its order.
    EXPECT_FALSE(m.add_setup(setup(10, 1, 7)));
    EXPECT_FALSE(m.add_setup(setup(20, 2, 7)));
    EXPECT_FALSE(m.add_setup(setup(11, 1, 8)));
    EXPECT_FALSE(m.add_setup(setup(12, 1, 7)));
    EXPECT_FALSE(m.add_setup(setup(21, 2, 7)));
    EXPECT_FALSE(m.add_receive(5, key(3, 7), false));  // a peer that sent nothing
    EXPECT_EQ(send_of(m.add_receive(1, key(2, 7), false)), 20u);
    EXPECT_EQ(send_of(m.add_receive(2, key(1, 7), false)), 10u);
    EXPECT_EQ(send_of(m.add_receive(3, key(1, 8), false)), 11u);
    EXPECT_EQ(send_of(m.add_receive(4, key(1, 7), false)), 12u);
    EXPECT_EQ(send_of(m.add_receive(6, key(2, 7), false)), 21u);
    EXPECT_EQ(m.unexpected_count(), 0u);
    EXPECT_EQ(m.waiting_count(), 1u);
    EXPECT_EQ(m.add_setup(setup(30, 3, 7))->recv, 5u);
}

TEST(Matcher, MatchHoldsTheSetupUntilTheReceiveStarts)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    EXPECT_FALSE(m.take_held(1));  // not matched yet
    ASSERT_TRUE(m.add_setup(setup(100)));
    EXPECT_EQ(m.receive_of(1, 100), std::optional<std::uint64_t>(1));
    EXPECT_FALSE(m.receive_of(2, 100));  // the send id of another sender
    const auto held = m.take_held(1);
    ASSERT_TRUE(held);
    EXPECT_EQ(held->msg.send_id, 100u);
    EXPECT_EQ(held->src, 1);
    EXPECT_FALSE(m.take_held(1));                                      // handed over once
    EXPECT_EQ(m.receive_of(1, 100), std::optional<std::uint64_t>(1));  // still paired
}

TEST(Matcher, CancelDropsAnUnexpectedSetup)
{
    Matcher m;
    EXPECT_FALSE(m.add_setup(setup(100)));
    EXPECT_FALSE(m.add_setup(setup(101)));
    const Matcher::Cancelled c = m.cancel(key(), 100);
    EXPECT_EQ(c.what, What::Unexpected);
    EXPECT_FALSE(c.next);
    EXPECT_EQ(send_of(m.add_receive(1, key(), false)), 101u);  // as if 100 never existed
}

TEST(Matcher, CancelOfANeverStartedMatchPutsTheReceiveFirstInLine)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    EXPECT_FALSE(m.add_receive(2, key(), false));
    ASSERT_TRUE(m.add_setup(setup(100)));  // -> receive 1, held
    const Matcher::Cancelled c = m.cancel(key(), 100);
    EXPECT_EQ(c.what, What::Receive);
    EXPECT_EQ(c.recv, 1u);
    EXPECT_TRUE(c.was_held);
    EXPECT_FALSE(c.next);
    EXPECT_FALSE(m.take_held(1));
    EXPECT_FALSE(m.receive_of(1, 100));
    // Receive 1 is first in line again, ahead of receive 2.
    EXPECT_EQ(m.add_setup(setup(101))->recv, 1u);
    EXPECT_EQ(m.add_setup(setup(102))->recv, 2u);
}

TEST(Matcher, CancelOfAPairedReceiveTakesTheNextUnexpectedSetup)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    ASSERT_TRUE(m.add_setup(setup(100)));
    ASSERT_TRUE(m.take_held(1));            // the receive started: paired
    EXPECT_FALSE(m.add_setup(setup(101)));  // unexpected meanwhile
    const Matcher::Cancelled c = m.cancel(key(), 100);
    EXPECT_EQ(c.what, What::Receive);
    EXPECT_EQ(c.recv, 1u);
    EXPECT_FALSE(c.was_held);  // the engine unpairs it
    ASSERT_TRUE(c.next);
    EXPECT_EQ(c.next->recv, 1u);
    EXPECT_EQ(send_of(c.next), 101u);
    EXPECT_EQ(m.receive_of(1, 101), std::optional<std::uint64_t>(1));
}

TEST(Matcher, CancelOfAnUnknownSendChangesNothing)
{
    Matcher m;
    EXPECT_FALSE(m.add_setup(setup(100)));
    EXPECT_FALSE(m.add_receive(1, key(2, 7), false));
    EXPECT_EQ(m.cancel(key(), 999).what, What::Nothing);
    EXPECT_EQ(m.cancel(key(2, 7), 100).what, What::Nothing);  // same id, other sender
    EXPECT_EQ(m.unexpected_count(), 1u);
    EXPECT_EQ(m.waiting_count(), 1u);
}

TEST(Matcher, FreedHeldReceiveGivesItsSetupToTheNextReceive)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    EXPECT_FALSE(m.add_receive(2, key(), false));
    ASSERT_TRUE(m.add_setup(setup(100)));  // -> 1
    const Matcher::Removed r = m.remove_receive(1, key(), 100);
    EXPECT_TRUE(r.was_held);
    ASSERT_TRUE(r.next);
    EXPECT_EQ(r.next->recv, 2u);
    EXPECT_EQ(send_of(r.next), 100u);
    EXPECT_EQ(m.receive_of(1, 100), std::optional<std::uint64_t>(2));
}

TEST(Matcher, FreedHeldReceiveWithNobodyWaitingPutsItsSetupFirst)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    ASSERT_TRUE(m.add_setup(setup(100)));
    EXPECT_FALSE(m.add_setup(setup(101)));
    const Matcher::Removed r = m.remove_receive(1, key(), 100);
    EXPECT_TRUE(r.was_held);
    EXPECT_FALSE(r.next);
    EXPECT_FALSE(m.receive_of(1, 100));
    // Setup 100 is unexpected again, ahead of 101 (init order).
    EXPECT_EQ(send_of(m.add_receive(2, key(), false)), 100u);
    EXPECT_EQ(send_of(m.add_receive(3, key(), false)), 101u);
    // The send of a Setup given back can still be cancelled.
    EXPECT_FALSE(m.add_setup(setup(102)));
    EXPECT_FALSE(m.remove_receive(3, key(), 101).next);
    EXPECT_EQ(m.cancel(key(), 101).what, What::Unexpected);
    EXPECT_EQ(send_of(m.add_receive(4, key(), false)), 102u);
}

TEST(Matcher, FreedWaitingReceiveLeavesTheLine)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    EXPECT_FALSE(m.add_receive(2, key(), false));
    const Matcher::Removed r = m.remove_receive(1, key(), 0);
    EXPECT_FALSE(r.was_held);
    EXPECT_FALSE(r.next);
    EXPECT_EQ(m.waiting_count(), 1u);
    EXPECT_EQ(m.add_setup(setup(100))->recv, 2u);
}

TEST(Matcher, FreedPairedReceiveIsForgotten)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    ASSERT_TRUE(m.add_setup(setup(100)));
    ASSERT_TRUE(m.take_held(1));
    const Matcher::Removed r = m.remove_receive(1, key(), 100);
    EXPECT_FALSE(r.was_held);
    EXPECT_FALSE(m.receive_of(1, 100));
    EXPECT_EQ(m.cancel(key(), 100).what, What::Nothing);  // a late Cancel finds nothing
}

TEST(Matcher, FreeKeepsAnotherReceivesPairing)
{
    Matcher m;
    EXPECT_FALSE(m.add_receive(1, key(), false));
    ASSERT_TRUE(m.add_setup(setup(100)));  // -> 1, then cancelled: 1 waits again
    EXPECT_EQ(m.cancel(key(), 100).what, What::Receive);
    EXPECT_FALSE(m.add_receive(2, key(), false));
    ASSERT_TRUE(m.add_setup(setup(101)));  // -> 1 (first in line)
    // Receive 2 never matched: freeing it touches nothing of receive 1's.
    EXPECT_FALSE(m.remove_receive(2, key(), 0).was_held);
    EXPECT_EQ(m.receive_of(1, 101), std::optional<std::uint64_t>(1));
    EXPECT_TRUE(m.take_held(1));
}

TEST(Matcher, ClearForgetsEverything)
{
    Matcher m;
    EXPECT_FALSE(m.add_setup(setup(100)));
    EXPECT_FALSE(m.add_receive(1, key(2, 7), false));
    EXPECT_FALSE(m.add_receive(2, key(3, 7), false));
    ASSERT_TRUE(m.add_setup(setup(200, 3, 7)));
    m.clear();
    EXPECT_EQ(m.unexpected_count(), 0u);
    EXPECT_EQ(m.waiting_count(), 0u);
    EXPECT_EQ(m.held_count(), 0u);
    EXPECT_FALSE(m.receive_of(3, 200));
}
