// SPDX-License-Identifier: BSD-3-Clause
// Matching of partitioned receives with the senders' Setup messages, in init order: the
// unexpected Setups, the receives waiting for one, and the matches whose pairing waits for the
// receive's first Start. Pure bookkeeping over ids (no MPI call, no Transfer), unit-tested in
// tests/unit/test_matcher.cpp; the engine calls it with its lock held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "progress/protocol.hpp"

namespace mpipcl::progress {

/// What a Setup and a receive must share to match: the user's communicator, the sender's rank
/// on the private communicator (the receive's peer) and the user's tag.
struct MatchKey {
    std::uint64_t comm_key;
    int src;
    int tag;
    bool operator<(const MatchKey& o) const
    {
        return std::tie(comm_key, src, tag) < std::tie(o.comm_key, o.src, o.tag);
    }
};

/// A Setup control message and the private rank it came from.
struct Setup {
    CtrlMsg msg;
    int src;
    MatchKey key() const { return MatchKey{msg.comm_key, src, msg.tag}; }
};

/// Receives are matched with Setups per MatchKey in init order, as MPI matches messages: the
/// control channel is non-overtaking between two processes, so the n-th Setup a sender made
/// for (communicator, tag) pairs with the n-th receive made for (communicator, sender, tag).
/// A match records the receive under (src, send id) for the sender's later Cancel and Abort,
/// and holds the Setup: the pairing (backend, data tags, Reply) waits for the receive's first
/// Start (take_held). A receive freed before it ever starts then gives its Setup back to the
/// next receive in line, and the sender has sent nothing that could go astray.
class Matcher {
   public:
    using Id = std::uint64_t;
    /// A receive and the Setup it was just matched with (held until take_held).
    struct Match {
        Id recv;
        Setup setup;
    };
    /// What a sender's Cancel withdrew.
    struct Cancelled {
        enum class What {
            Nothing,     ///< no unexpected Setup and no receive of that send (already gone)
            Unexpected,  ///< its Setup was still unexpected: dropped
            Receive,     ///< receive recv had matched it: back at the front of its line
        };
        What what = What::Nothing;
        Id recv = 0;
        /// What::Receive: the receive never paired (its Setup was held, nothing to undo).
        bool was_held = false;
        /// What::Receive: the receive matched the next unexpected Setup at once.
        std::optional<Match> next;
    };
    /// What freeing a receive changed.
    struct Removed {
        /// It had matched a Setup but never started: that Setup went to the next receive.
        bool was_held = false;
        /// was_held: the next receive in line that took the Setup (else it is unexpected
        /// again, at the front of its line).
        std::optional<Match> next;
    };

    /// A Setup arrived: matched with the oldest receive waiting under its key, or queued as
    /// unexpected (behind the earlier ones).
    std::optional<Match> add_setup(const Setup& setup);
    /// A receive enters matching under @p key: matched with the oldest unexpected Setup, or
    /// queued. @p first_in_line: it was first in line before an unpairing (Cancel), so it goes
    /// back to the front of its line.
    std::optional<Match> add_receive(Id recv, const MatchKey& key, bool first_in_line);
    /// The receive starts (or has started): the Setup it holds, handed over for pairing.
    std::optional<Setup> take_held(Id recv);
    /// The sender @p key.src freed send @p send_id before it ever started (Cancel).
    Cancelled cancel(const MatchKey& key, Id send_id);
    /// The receive @p recv (made under @p key) is freed. @p peer_send_id: the send it matched
    /// last (0 = none). A held Setup goes to the next receive in line, as if the freed one
    /// never existed.
    Removed remove_receive(Id recv, const MatchKey& key, Id peer_send_id);
    /// The receive matched with send @p send_id of @p src, if any.
    std::optional<Id> receive_of(int src, Id send_id) const;
    /// MPI_Finalize: forgets everything.
    void clear();

    std::size_t unexpected_count() const { return count(unexpected_); }
    std::size_t waiting_count() const { return count(waiting_); }
    std::size_t held_count() const { return held_.size(); }

   private:
    /// Records the match of @p recv with @p setup (held until take_held).
    Match match(Id recv, const Setup& setup);
    template <class Map>
    static std::size_t count(const Map& map)
    {
        std::size_t n = 0;
        for (const auto& [key, q] : map) {
            n += q.size();
        }
        return n;
    }

    std::map<MatchKey, std::deque<Setup>> unexpected_;  ///< Setups no receive matched yet
    std::map<MatchKey, std::deque<Id>> waiting_;        ///< receives waiting for a Setup
    std::unordered_map<Id, Setup> held_;                ///< never-started receive -> its Setup
    std::map<std::pair<int, Id>, Id> by_send_;          ///< (src, send id) -> matched receive
};

}  // namespace mpipcl::progress
