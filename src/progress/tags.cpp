// SPDX-License-Identifier: BSD-3-Clause
// Round-robin tag range allocation.
#include "progress/tags.hpp"

#include <iterator>

namespace mpipcl::progress {

int TagAllocator::allocate(int n)
{
    if (n <= 0 || n > last_ - first_ + 1) {
        return -1;
    }
    bool wrapped = false;
    for (;;) {
        if (cursor_ > last_ - n + 1) {
            if (wrapped) {
                return -1;
            }
            wrapped = true;
            cursor_ = first_;
        }
        // The first live range that ends after cursor_ decides whether [cursor_, cursor_+n) fits.
        auto it = live_.upper_bound(cursor_);
        if (it != live_.begin()) {
            auto prev = std::prev(it);
            if (prev->first + prev->second > cursor_) {
                cursor_ = prev->first + prev->second;
                continue;
            }
        }
        if (it != live_.end() && it->first < cursor_ + n) {
            cursor_ = it->first + it->second;
            continue;
        }
        int base = cursor_;
        live_[base] = n;
        cursor_ += n;
        return base;
    }
}

}  // namespace mpipcl::progress
