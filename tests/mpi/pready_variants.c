/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Pready, MPI_Pready_range and MPI_Pready_list (shuffled, split, mixed) over several rounds. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SPARTS 24
#define RPARTS 6
#define PART_BYTES 1000
#define TOTAL (SPARTS * PART_BYTES)
#define TAG 7

enum { SINGLE_REVERSE, RANGE_CHUNKS, LIST_SHUFFLED, LIST_SPLIT, MIXED, RANGE_ALL, NUM_ROUNDS };

static void mark_round(int round, MPI_Request req)
{
    int list[SPARTS];
    tu_shuffled_indices(list, SPARTS, (unsigned)round + 1);
    switch (round) {
        case SINGLE_REVERSE:
            for (int i = SPARTS - 1; i >= 0; --i) {
                TU_MPI(MPI_Pready(i, req));
            }
            break;
        case RANGE_CHUNKS: /* [21,23], [18,20] ... [0,2]: chunks of 3 straddle receive
                              partitions of 4 send partitions */
            for (int hi = SPARTS - 1; hi >= 0; hi -= 3) {
                TU_MPI(MPI_Pready_range(hi - 2, hi, req));
            }
            break;
        case LIST_SHUFFLED:
            TU_MPI(MPI_Pready_list(SPARTS, list, req));
            break;
        case LIST_SPLIT: /* several calls, one of them empty */
            TU_MPI(MPI_Pready_list(5, list, req));
            TU_MPI(MPI_Pready_list(0, list + 5, req));
            TU_MPI(MPI_Pready_list(1, list + 5, req));
            TU_MPI(MPI_Pready_list(SPARTS - 6, list + 6, req));
            break;
        case MIXED: { /* a one-partition range, a list of the odd ones, singles for the rest */
            int odd[SPARTS / 2];
            int n = 0;
            for (int i = 0; i < SPARTS; ++i) {
                if (list[i] % 2 == 1) {
                    odd[n++] = list[i];
                }
            }
            TU_MPI(MPI_Pready_range(4, 4, req));
            TU_MPI(MPI_Pready_list(n, odd, req));
            for (int i = 0; i < SPARTS; i += 2) {
                if (i != 4) {
                    TU_MPI(MPI_Pready(i, req));
                }
            }
            break;
        }
        default:
            TU_MPI(MPI_Pready_range(0, SPARTS - 1, req));
            break;
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    unsigned char* buf = malloc(TOTAL);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, SPARTS, PART_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, RPARTS, TOTAL / RPARTS, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    }
    for (int round = 0; round < NUM_ROUNDS; ++round) {
        if (tu_rank == 0) {
            TU_MPI(MPI_Start(&req));
            tu_fill(buf, TOTAL, 0, 0, round);
            mark_round(round, req);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "send"));
        } else {
            memset(buf, 0, TOTAL);
            TU_MPI(MPI_Start(&req));
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "receive"));
            tu_verify(buf, TOTAL, 0, 0, round, "received data");
        }
    }
    TU_MPI(MPI_Request_free(&req));
    free(buf);
    return tu_finish();
}
