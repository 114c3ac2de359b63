/* SPDX-License-Identifier: BSD-3-Clause */
/* Block-wise partitioned collectives (MPIX_Pgather_init, MPIX_Pallgather_init,
 * MPIX_Palltoall_init, MPIX_Pneighbor_alltoall_init): one launch runs a list of cases.
 * Arguments: cases separated by "+", each one of
 *   gather|allgather|alltoall <sp> <sc> <rp> <rc> <threads> [flags]  (pcoll_block_dense.c)
 *   neighbor ring|line|grid|graph <sp> <sc> <rp> <rc> <threads> [flags]
 *                                                            (pcoll_block_neighbor.c)
 *   errors                                                   (pcoll_block_errors.c)
 *   mismatch, mismatch_reuse, mismatch_race [rounds]         (pcoll_block_mismatch.c)
 * sp / rp: partitions per send / receive block, sc / rc: elements per partition (ints on the
 * send side, ints or a holed vector on the receive side), flags: pcoll_block.h. Every case
 * checks what its file says; the watchdog is re-armed before each one (pcoll_common.c). */
#include "pcoll_block.h"

#include <string.h>

#include "pcoll.h"
#include "testutil.h"

static void run_case(char** args, int n, char* prog, int level)
{
    (void)prog;
    const char* mode = args[0];
    if (strcmp(mode, "gather") == 0 || strcmp(mode, "allgather") == 0 ||
        strcmp(mode, "alltoall") == 0) {
        pcb_dense_case(args, n, level);
    } else if (strcmp(mode, "neighbor") == 0) {
        pcb_neighbor_case(args, n, level);
    } else if (strcmp(mode, "errors") == 0) {
        pcb_errors_case(args, n, level);
    } else if (strcmp(mode, "mismatch") == 0 || strcmp(mode, "mismatch_reuse") == 0 ||
               strcmp(mode, "mismatch_race") == 0) {
        pcb_mismatch_case(args, n, level);
    } else {
        TU_ABORT("unknown case");
    }
}

int main(int argc, char** argv) { return pcoll_run_cases(argc, argv, run_case); }
