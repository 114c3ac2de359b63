// SPDX-License-Identifier: BSD-3-Clause
// Allocates ranges of data tags on the private communicator (receiver side). Ranges are handed
// out round-robin so a freed range is reused as late as possible.
#pragma once

#include <map>

namespace mpipcl::progress {

class TagAllocator {
   public:
    /// Tags [first, last] are available.
    void reset(int first, int last)
    {
        first_ = first;
        last_ = last;
        cursor_ = first;
        live_.clear();
    }
    /// Returns the base of @p n consecutive free tags, or -1 if none are left.
    int allocate(int n);
    void release(int base) { live_.erase(base); }

   private:
    int first_ = 1;
    int last_ = 1;
    int cursor_ = 1;
    std::map<int, int> live_;  // base -> length
};

}  // namespace mpipcl::progress
