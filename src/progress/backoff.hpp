// SPDX-License-Identifier: BSD-3-Clause
// Back-off for our waiting loops: a few yields, then sleeps that grow to a cap. Never spins on
// a core it may share (the machine is oversubscribed in tests).
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace mpipcl::progress {

class Backoff {
   public:
    explicit Backoff(int max_sleep_us = 100) : max_sleep_us_(max_sleep_us) {}
    void reset()
    {
        yields_ = 0;
        sleep_us_ = 1;
    }
    void pause()
    {
        if (yields_ < kYields) {
            ++yields_;
            sched_yield();
            return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
        sleep_us_ = std::min(max_sleep_us_, sleep_us_ * 2);
    }

   private:
    static constexpr int kYields = 64;
    int max_sleep_us_;
    int yields_ = 0;
    int sleep_us_ = 1;
};

}  // namespace mpipcl::progress
