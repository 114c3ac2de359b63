// SPDX-License-Identifier: BSD-3-Clause
// ReadyCounter: which partitions of a round are ready, per unit (internal message or RMA put
// unit), in one atomic read-modify-write per MPI_Pready. Used by both backends' send paths.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/ready_queue.hpp"

namespace mpipcl {

/// What a send path did with a ready partition (Backend::partition_ready).
enum class Marked {
    Duplicate,  ///< it was already ready this round: nothing changed
    Counted,    ///< counted; its unit still waits for others
    Queued,     ///< it completed its unit, which is now queued for flush()
};

/// A bit per partition, grouped in 64-bit words per unit (a unit is a contiguous range of
/// partitions). mark(p) is one fetch_or: the old bit says "duplicate", the new word says
/// whether the unit is complete. A unit of more than 64 partitions also counts its full words
/// down (a second read-modify-write once per 64 partitions). With few units every word has a
/// cache line of its own, so threads marking different units never share a line.
class ReadyCounter {
   public:
    enum class Mark { Duplicate, Counted, Completed };

    /// @p part_begin: unit u covers partitions [part_begin[u], part_begin[u+1]); the last
    /// entry is the partition count. Throws std::bad_alloc.
    void init(const std::vector<int>& part_begin)
    {
        const int units = static_cast<int>(part_begin.size()) - 1;
        units_count_ = units > 0 ? units : 0;
        stride_ = units <= kPaddedUnits ? kLine : 1;
        // Units of one power-of-two length (one partition per unit, or P/M with M dividing P):
        // computed, not tabled (4096 one-partition units: 112 KiB less per request).
        const int len0 = units > 0 ? part_begin[1] - part_begin[0] : 0;
        bool uniform = len0 > 0 && (len0 & (len0 - 1)) == 0;
        for (int u = 1; u < units && uniform; ++u) {
            uniform = part_begin[u + 1] - part_begin[u] == len0;
        }
        units_.clear();
        part_unit_.clear();
        std::int64_t words = 0;
        if (uniform) {
            shift_ = 0;
            while ((1 << shift_) < len0) {
                ++shift_;
            }
            uniform_ = make_unit(0, len0, 0);
            unit_words_ = (uniform_.nwords() + (uniform_.nwords() > 1 ? 1 : 0)) * stride_;
            words = unit_words_ * units;
        } else {
            shift_ = -1;
            units_.resize(units_count_);
            part_unit_.resize(units > 0 ? part_begin.back() : 0);
            for (int u = 0; u < units; ++u) {
                units_[u] = make_unit(part_begin[u], part_begin[u + 1] - part_begin[u], words);
                const Unit& un = units_[u];
                words +=
                    (un.nwords() + (un.nwords() > 1 ? 1 : 0)) * stride_;  // bits (+ count word)
                for (int p = part_begin[u]; p < part_begin[u + 1]; ++p) {
                    part_unit_[p] = u;
                }
            }
        }
        // One line of slack so the first word can start a cache line.
        storage_ = std::make_unique<Word[]>(static_cast<std::size_t>(words + kLine));
        const auto addr = reinterpret_cast<std::uintptr_t>(storage_.get());
        words_ = storage_.get() +
                 ((kLine * sizeof(Word) - addr % (kLine * sizeof(Word))) % (kLine * sizeof(Word))) /
                     sizeof(Word);
        reset();
    }

    /// A new round (not concurrent with mark()).
    void reset() noexcept
    {
        for (int u = 0; u < units_count_; ++u) {
            const Unit un = unit(u);
            for (int j = 0; j < un.nwords(); ++j) {
                words_[un.first + j * stride_].store(0, std::memory_order_relaxed);
            }
            if (un.nwords() > 1) {
                words_[un.first + un.nwords() * stride_].store(un.nwords(),
                                                               std::memory_order_relaxed);
            }
        }
    }

    /// Partition @p p is ready; *unit gets its unit. Lock-free, any thread.
    Mark mark(int p, int* unit_out) noexcept
    {
        const int u = unit_of(p);
        *unit_out = u;
        const Unit un = unit(u);
        const int k = p - un.p0;
        const int j = k >> 6;
        const std::uint64_t bit = std::uint64_t{1} << (k & 63);
        // sync: acq_rel chains every Pready thread's buffer writes (release) to the one that
        // completes the word (acquire, through the release sequence of the word's RMWs).
        const std::uint64_t old =
            words_[un.first + j * stride_].fetch_or(bit, std::memory_order_acq_rel);
        if ((old & bit) != 0) {
            return Mark::Duplicate;
        }
        const std::uint64_t full = j == un.nwords() - 1 ? un.last_full : ~std::uint64_t{0};
        if ((old | bit) != full) {
            return Mark::Counted;
        }
        if (un.nwords() == 1) {
            return Mark::Completed;
        }
        // sync: acq_rel, the same chain across the unit's words.
        return words_[un.first + un.nwords() * stride_].fetch_sub(1, std::memory_order_acq_rel) == 1
                   ? Mark::Completed
                   : Mark::Counted;
    }

    int units() const noexcept { return units_count_; }

    /// MPI_Pready_range: partitions [@p lo, @p hi] (in range) are ready. One read-modify-write
    /// per 64-bit word instead of one per partition; pushes each unit this call completed on
    /// @p queue (then *pushed is set). Returns true when any of them was already ready this
    /// round (a duplicate; the others are marked all the same).
    bool mark_range_and_queue(int lo, int hi, ReadyQueue& queue, bool* pushed) noexcept
    {
        bool duplicate = false;
        *pushed = false;
        for (int p = lo; p <= hi;) {
            const int u = unit_of(p);
            const Unit un = unit(u);
            const int unit_last = un.p0 + un.len - 1;
            const int last = hi < unit_last ? hi : unit_last;
            std::uint64_t done_words = 0;
            for (int k = p - un.p0; k <= last - un.p0;) {
                const int j = k >> 6;
                const int k_end = std::min((j << 6) + 63, last - un.p0);  // last bit this word
                const int width = k_end - k + 1;
                const std::uint64_t bits =
                    (width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1) << (k & 63);
                // sync: acq_rel, as in mark().
                const std::uint64_t old =
                    words_[un.first + j * stride_].fetch_or(bits, std::memory_order_acq_rel);
                duplicate = duplicate || (old & bits) != 0;
                const std::uint64_t full = j == un.nwords() - 1 ? un.last_full : ~std::uint64_t{0};
                if (old != full && (old | bits) == full) {
                    ++done_words;
                }
                k = k_end + 1;
            }
            bool completed = false;
            if (done_words > 0) {
                // sync: acq_rel, the same chain across the unit's words.
                completed =
                    un.nwords() == 1 || words_[un.first + un.nwords() * stride_].fetch_sub(
                                            done_words, std::memory_order_acq_rel) == done_words;
            }
            if (completed) {
                queue.push(u);
                *pushed = true;
            }
            p = last + 1;
        }
        return duplicate;
    }

    /// partition_ready of both send paths: marks @p p and pushes its unit on @p queue when
    /// this call completed it.
    Marked mark_and_queue(int p, ReadyQueue& queue) noexcept
    {
        int u = 0;
        switch (mark(p, &u)) {
            case Mark::Duplicate:
                return Marked::Duplicate;
            case Mark::Counted:
                return Marked::Counted;
            case Mark::Completed:
                break;
        }
        queue.push(u);
        return Marked::Queued;
    }

   private:
    /// Up to this many units, each word gets its own cache line (at most 16 KiB per request).
    static constexpr int kPaddedUnits = 256;
    static constexpr int kLine = 8;  ///< words per cache line
    using Word = std::atomic<std::uint64_t>;
    struct Unit {
        int p0 = 0;                   ///< first partition
        int len = 0;                  ///< partitions
        std::int64_t first = 0;       ///< index of its first word in words_
        std::uint64_t last_full = 0;  ///< the last word's value when all its partitions are in
        int nwords() const noexcept { return (len + 63) / 64; }  ///< 64-bit words of bits
    };
    static Unit make_unit(int p0, int len, std::int64_t first) noexcept
    {
        Unit un;
        un.p0 = p0;
        un.len = len;
        un.first = first;
        const int tail = len % 64;
        un.last_full = tail == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << tail) - 1;
        return un;
    }
    [[gnu::always_inline]] int unit_of(int p) const noexcept
    {
        return shift_ >= 0 ? p >> shift_ : part_unit_[p];
    }
    [[gnu::always_inline]] Unit unit(int u) const noexcept
    {
        if (shift_ < 0) {
            return units_[u];
        }
        Unit un = uniform_;
        un.p0 = u << shift_;
        un.first = static_cast<std::int64_t>(u) * unit_words_;
        return un;
    }

    int units_count_ = 0;
    /// Uniform units: log2 of their length (unit_of is a shift), else -1 (the tables below).
    int shift_ = -1;
    Unit uniform_;                 ///< unit 0 of a uniform counter
    std::int64_t unit_words_ = 0;  ///< words per uniform unit (bits, count word, padding)
    std::vector<Unit> units_;      ///< per unit, when not uniform
    std::vector<int> part_unit_;   ///< per partition, when not uniform
    std::unique_ptr<Word[]> storage_;
    Word* words_ = nullptr;  ///< storage_, from its first cache-line boundary
    int stride_ = 1;
};

}  // namespace mpipcl
