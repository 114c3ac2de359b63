// SPDX-License-Identifier: BSD-3-Clause
// The RMA backend's view of a flattened datatype (common/datatype.hpp decodes it): the layout
// as the sender addresses the receiver's buffer.
#pragma once

#include "common/datatype.hpp"

namespace mpipcl::rma {

/// The layout as the sender addresses the receiver: from the element's first touched byte, not
/// from its lb. Returns @p f with every block moved down by f.true_lb and lb = true_lb = 0
/// (extent, size and true_extent kept), so element i of a buffer at address A is Put at
/// A + f.true_lb + i * f.extent and every byte the Put's target range spans, [that address,
/// + true_extent), lies in the attached bytes (addressed from lb, a type with true_lb > lb
/// starts below the attachment: see RmaBackend::init_receiver).
Flat from_first_byte(const Flat& f);

}  // namespace mpipcl::rma
