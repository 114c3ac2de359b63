// SPDX-License-Identifier: BSD-3-Clause
// Matching of receives with Setups in init order, and the cancel rules.
#include "progress/matcher.hpp"

#include <algorithm>

namespace mpipcl::progress {

namespace {
/// Takes the oldest entry queued under @p key (and drops the key once its queue is empty).
template <class Map, class T>
bool pop_front(Map& map, const typename Map::key_type& key, T* out)
{
    auto it = map.find(key);
    if (it == map.end() || it->second.empty()) {
        return false;
    }
    *out = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) {
        map.erase(it);
    }
    return true;
}

/// Erases the first entry of @p key's queue that @p pred accepts (and the key once its queue
/// is empty). True if one was erased.
template <class Map, class Pred>
bool erase_first(Map& map, const typename Map::key_type& key, Pred pred)
{
    auto it = map.find(key);
    if (it == map.end()) {
        return false;
    }
    auto& q = it->second;
    auto e = std::find_if(q.begin(), q.end(), pred);
    if (e == q.end()) {
        return false;
    }
    q.erase(e);
    if (q.empty()) {
        map.erase(it);
    }
    return true;
}
}  // namespace

Matcher::Match Matcher::match(Id recv, const Setup& setup)
{
    by_send_[{setup.src, setup.msg.send_id}] = recv;
    held_[recv] = setup;
    return Match{recv, setup};
}

std::optional<Matcher::Match> Matcher::add_setup(const Setup& setup)
{
    const MatchKey key = setup.key();
    Id recv = 0;
    if (pop_front(waiting_, key, &recv)) {
        return match(recv, setup);
    }
    unexpected_[key].push_back(setup);
    return std::nullopt;
}

std::optional<Matcher::Match> Matcher::add_receive(Id recv, const MatchKey& key, bool first_in_line)
{
    Setup setup{};
    if (pop_front(unexpected_, key, &setup)) {
        return match(recv, setup);
    }
    if (first_in_line) {
        waiting_[key].push_front(recv);
    } else {
        waiting_[key].push_back(recv);
    }
    return std::nullopt;
}

std::optional<Setup> Matcher::take_held(Id recv)
{
    auto it = held_.find(recv);
    if (it == held_.end()) {
        return std::nullopt;
    }
    const Setup setup = it->second;
    held_.erase(it);
    return setup;
}

Matcher::Cancelled Matcher::cancel(const MatchKey& key, Id send_id)
{
    Cancelled c;
    if (erase_first(unexpected_, key, [&](const Setup& s) { return s.msg.send_id == send_id; })) {
        c.what = Cancelled::What::Unexpected;
        return c;
    }
    auto r = by_send_.find({key.src, send_id});
    if (r == by_send_.end()) {
        return c;
    }
    // The receive was matched with a send that was freed before it ever started: it takes
    // the next Setup, as if the send had never existed, and stays first in its line.
    c.what = Cancelled::What::Receive;
    c.recv = r->second;
    by_send_.erase(r);
    c.was_held = held_.erase(c.recv) != 0;
    c.next = add_receive(c.recv, key, true);
    return c;
}

Matcher::Removed Matcher::remove_receive(Id recv, const MatchKey& key, Id peer_send_id)
{
    Removed r;
    if (std::optional<Setup> setup = take_held(recv)) {
        // Never started: its Setup goes to the next receive in line, as if it never existed.
        r.was_held = true;
        by_send_.erase({setup->src, setup->msg.send_id});
        Id next = 0;
        if (pop_front(waiting_, key, &next)) {
            r.next = match(next, *setup);
        } else {
            unexpected_[key].push_front(*setup);
        }
        return r;
    }
    erase_first(waiting_, key, [recv](Id id) { return id == recv; });
    if (auto s = by_send_.find({key.src, peer_send_id}); s != by_send_.end() && s->second == recv) {
        by_send_.erase(s);
    }
    return r;
}

std::optional<Matcher::Id> Matcher::receive_of(int src, Id send_id) const
{
    auto it = by_send_.find({src, send_id});
    if (it == by_send_.end()) {
        return std::nullopt;
    }
    return it->second;
}

void Matcher::clear()
{
    unexpected_.clear();
    waiting_.clear();
    held_.clear();
    by_send_.clear();
}

}  // namespace mpipcl::progress
