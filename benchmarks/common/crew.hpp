// SPDX-License-Identifier: BSD-3-Clause
// A fixed crew of worker threads that runs one job per worker per round (no thread creation
// inside timed regions).
#pragma once

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mpipcl::bench {

/// Worker threads created once and reused: run(job, tail) calls job(i) on worker i, i in
/// [0, size); the worker whose job returns last then calls tail() itself, so the tail starts
/// without a thread wake-up (a join costs 10-40 us on a busy 2-core machine). Idle workers
/// sleep on a condition variable.
class Crew {
   public:
    explicit Crew(int size)
    {
        threads_.reserve(static_cast<std::size_t>(size));
        for (int i = 0; i < size; ++i) {
            threads_.emplace_back([this, i] { work(i); });
        }
    }

    Crew(const Crew&) = delete;
    Crew& operator=(const Crew&) = delete;

    ~Crew()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        go_.notify_all();
        for (auto& t : threads_) {
            t.join();
        }
    }

    [[nodiscard]] int size() const { return static_cast<int>(threads_.size()); }

    /// Runs job(i) on every worker, then tail() (if any) on the last one to finish, and waits
    /// for all of it. Not reentrant.
    void run(const std::function<void(int)>& job, const std::function<void()>& tail = {})
    {
        std::unique_lock<std::mutex> lock(mutex_);
        job_ = &job;
        tail_ = &tail;
        busy_ = size();
        // sync: relaxed is enough, the mutex orders it before the workers' fetch_sub.
        pending_.store(size(), std::memory_order_relaxed);
        ++round_;
        go_.notify_all();
        done_.wait(lock, [this] { return busy_ == 0; });
        job_ = nullptr;
        tail_ = nullptr;
    }

   private:
    void work(int id)
    {
#ifdef __linux__
        // Timed sleeps end within ~1-10 us instead of the default 50 us timer slack.
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
        std::uint64_t seen = 0;
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            go_.wait(lock, [&] { return stop_ || round_ != seen; });
            if (stop_) {
                return;
            }
            seen = round_;
            const std::function<void(int)>* job = job_;
            const std::function<void()>* tail = tail_;
            lock.unlock();
            (*job)(id);
            // sync: acq_rel, so the tail sees everything the other workers' jobs wrote.
            if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1 && *tail) {
                (*tail)();
            }
            lock.lock();
            if (--busy_ == 0) {
                done_.notify_one();
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable go_;
    std::condition_variable done_;
    const std::function<void(int)>* job_ = nullptr;
    const std::function<void()>* tail_ = nullptr;
    std::atomic<int> pending_{0};  ///< jobs of this round still running
    std::uint64_t round_ = 0;
    int busy_ = 0;
    bool stop_ = false;
    std::vector<std::thread> threads_;  // last: the workers start after the members above
};

}  // namespace mpipcl::bench
