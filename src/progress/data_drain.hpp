// SPDX-License-Identifier: BSD-3-Clause
// The finalize drain of data messages: every data message another process sent here that no
// receive took is received and dropped before the private communicator is freed.
#pragma once

#include <mpi.h>

namespace mpipcl::progress {

/// MPI_Finalize (collective over @p comm, the private communicator), after every backend was
/// destroyed and the control drain ran: exchanges how many data messages each process sent to
/// each other (common/traffic.hpp), then receives and drops each one still missing here. A
/// failed round's receive may have been cancelled while its sender's message was on the way,
/// or before the sender, not yet told, started it; MPI would find such a message unmatched
/// when the communicator is freed (MPICH 4.2 fails MPI_Finalize on it). Gives up, with a
/// warning, when nothing arrives for kFinalizeDataDrainGiveUpMs while messages are missing.
void drain_data_messages(MPI_Comm comm);

}  // namespace mpipcl::progress
