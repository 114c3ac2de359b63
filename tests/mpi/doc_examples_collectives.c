/* SPDX-License-Identifier: BSD-3-Clause */
/* The examples of docs/collectives.md, one function per partitioned collective, each checking
 * its own result (0 = right). Every ```c block of that page must stand in this file verbatim
 * (the CTest entry doc_examples_collectives_in_sync checks it); main runs them all. */
#include <mpi.h>
#include <mpipcl.h>
#include <stdlib.h>

#include "testutil.h"

/* Broadcast: the root's threads each compute one partition and mark it; every other rank
 * consumes each partition as soon as MPI_Parrived reports it. */
int example_bcast(MPI_Comm comm)
{
    enum { PARTS = 8, COUNT = 1000 };
    static double buf[PARTS * COUNT];
    int rank, wrong = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Request req;
    MPIX_Pbcast_init(buf, PARTS, COUNT, MPI_DOUBLE, 0, comm, MPI_INFO_NULL, &req);
    for (int iter = 0; iter < 3; ++iter) {
        MPI_Start(&req);
        if (rank == 0) {
#pragma omp parallel for
            for (int p = 0; p < PARTS; ++p) {
                for (int i = 0; i < COUNT; ++i) {
                    buf[p * COUNT + i] = iter + p * COUNT + i; /* "compute" partition p */
                }
                MPI_Pready(p, req);
            }
        } else {
            char seen[PARTS] = {0};
            for (int left = PARTS; left > 0;) {
                for (int p = 0; p < PARTS; ++p) {
                    int flag = 0;
                    if (!seen[p] && MPI_Parrived(req, p, &flag) == MPI_SUCCESS && flag) {
                        seen[p] = 1; /* partition p is final: consume it now */
                        --left;
                        for (int i = 0; i < COUNT; ++i) {
                            wrong += buf[p * COUNT + i] != iter + p * COUNT + i;
                        }
                    }
                }
            }
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&req);
    return wrong;
}

/* Reduce: every rank marks the partitions of its contribution as it computes them (here from
 * the last to the first); rank 0 gets the sums. */
int example_reduce(MPI_Comm comm)
{
    enum { PARTS = 4, COUNT = 256 };
    int send[PARTS * COUNT], sum[PARTS * COUNT];
    int rank, size, wrong = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request req;
    MPIX_Preduce_init(send, sum, PARTS, COUNT, MPI_INT, MPI_SUM, 0, comm, MPI_INFO_NULL, &req);
    MPI_Start(&req);
    for (int p = PARTS - 1; p >= 0; --p) {
        for (int i = 0; i < COUNT; ++i) {
            send[p * COUNT + i] = rank + i;
        }
        MPI_Pready(p, req);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; rank == 0 && i < PARTS * COUNT; ++i) {
        wrong += sum[i] != size * (size - 1) / 2 + size * (i % COUNT);
    }
    MPI_Request_free(&req);
    return wrong;
}

/* Allreduce in place: the contribution is in buf and the result replaces it. Every rank marks
 * two ranges of partitions and uses partition 0 of the result before the rest has arrived. */
int example_allreduce(MPI_Comm comm)
{
    enum { PARTS = 4, COUNT = 100 };
    double buf[PARTS * COUNT];
    int rank, size, flag = 0, wrong = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request req;
    MPIX_Pallreduce_init(MPI_IN_PLACE, buf, PARTS, COUNT, MPI_DOUBLE, MPI_MAX, comm, MPI_INFO_NULL,
                         &req);
    for (int i = 0; i < PARTS * COUNT; ++i) {
        buf[i] = rank * 1000 + i;
    }
    MPI_Start(&req);
    MPI_Pready_range(0, PARTS / 2 - 1, req);
    MPI_Pready_range(PARTS / 2, PARTS - 1, req);
    while (!flag) {
        MPI_Parrived(req, 0, &flag);
    }
    for (int i = 0; i < COUNT; ++i) { /* partition 0 is final */
        wrong += buf[i] != (size - 1) * 1000 + i;
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = COUNT; i < PARTS * COUNT; ++i) {
        wrong += buf[i] != (size - 1) * 1000 + i;
    }
    MPI_Request_free(&req);
    return wrong;
}

/* Gather: each rank sends its block as 4 partitions of 25 ints (marked in any order); rank 0
 * cuts every block into 2 partitions of 50 and handles rank r's block as soon as its receive
 * partitions 2r and 2r+1 have arrived. */
int example_gather(MPI_Comm comm)
{
    enum { SP = 4, SC = 25, RP = 2, RC = 50, BLOCK = SP * SC };
    int rank, size, wrong = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int block[BLOCK];
    int* all = malloc(sizeof(int) * BLOCK * size); /* significant at the root only */
    MPI_Request req;
    MPIX_Pgather_init(block, SP, SC, MPI_INT, all, RP, RC, MPI_INT, 0, comm, MPI_INFO_NULL, &req);
    MPI_Start(&req);
    for (int i = 0; i < BLOCK; ++i) {
        block[i] = rank * BLOCK + i;
    }
    int order[SP] = {3, 0, 2, 1};
    MPI_Pready_list(SP, order, req);
    for (int r = 0; rank == 0 && r < size; ++r) {
        int first = 0, second = 0;
        while (!first || !second) {
            MPI_Parrived(req, RP * r, &first);
            MPI_Parrived(req, RP * r + 1, &second);
        }
        for (int i = 0; i < BLOCK; ++i) { /* rank r's block is final */
            wrong += all[r * BLOCK + i] != r * BLOCK + i;
        }
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Request_free(&req);
    free(all);
    return wrong;
}

/* Allgather in place: each rank computes its block straight into its slot of the result and
 * marks it with the receive partition numbers 0 .. RP-1 (the send arguments are ignored). */
int example_allgather(MPI_Comm comm)
{
    enum { RP = 3, RC = 10, BLOCK = RP * RC };
    int rank, size, wrong = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long* all = malloc(sizeof(long) * BLOCK * size);
    MPI_Request req;
    MPIX_Pallgather_init(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL, all, RP, RC, MPI_LONG, comm,
                         MPI_INFO_NULL, &req);
    MPI_Start(&req);
    long* mine = all + (size_t)rank * BLOCK;
    for (int p = RP - 1; p >= 0; --p) {
        for (int i = 0; i < RC; ++i) {
            mine[p * RC + i] = rank * 1000L + p * RC + i;
        }
        MPI_Pready(p, req);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < BLOCK * size; ++i) {
        wrong += all[i] != i / BLOCK * 1000L + i % BLOCK;
    }
    MPI_Request_free(&req);
    free(all);
    return wrong;
}

/* Alltoall: one thread per destination d fills the block for rank d and marks its partitions
 * d*SP .. d*SP+SP-1 with one MPI_Pready_range; each received block is one partition. */
int example_alltoall(MPI_Comm comm)
{
    enum { SP = 2, SC = 8, BLOCK = SP * SC };
    int rank, size, wrong = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int* send = malloc(sizeof(int) * BLOCK * size);
    int* recv = malloc(sizeof(int) * BLOCK * size);
    MPI_Request req;
    MPIX_Palltoall_init(send, SP, SC, MPI_INT, recv, 1, BLOCK, MPI_INT, comm, MPI_INFO_NULL, &req);
    MPI_Start(&req);
#pragma omp parallel for
    for (int d = 0; d < size; ++d) {
        for (int i = 0; i < BLOCK; ++i) {
            send[d * BLOCK + i] = rank * 10000 + d * 100 + i;
        }
        MPI_Pready_range(d * SP, d * SP + SP - 1, req);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int s = 0; s < size; ++s) {
        for (int i = 0; i < BLOCK; ++i) { /* block s: what rank s sent to this rank */
            wrong += recv[s * BLOCK + i] != s * 10000 + rank * 100 + i;
        }
    }
    MPI_Request_free(&req);
    free(send);
    free(recv);
    return wrong;
}

/* Neighbour alltoall on a periodic ring: send block 0 goes to the left neighbour, block 1 to
 * the right one; receive block 0 comes from the left neighbour (its block 1), receive block 1
 * from the right one (its block 0). */
int example_neighbor_alltoall(MPI_Comm comm)
{
    enum { PARTS = 2, COUNT = 16, BLOCK = PARTS * COUNT };
    int size, rank, left, right, periodic = 1, wrong = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm ring;
    MPI_Cart_create(comm, 1, &size, &periodic, 0, &ring);
    MPI_Comm_rank(ring, &rank);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    double send[2 * BLOCK], recv[2 * BLOCK];
    MPI_Request req;
    MPIX_Pneighbor_alltoall_init(send, PARTS, COUNT, MPI_DOUBLE, recv, PARTS, COUNT, MPI_DOUBLE,
                                 ring, MPI_INFO_NULL, &req);
    for (int i = 0; i < 2 * BLOCK; ++i) {
        send[i] = rank + (i < BLOCK ? 0.0 : 0.5); /* block 0: rank, block 1: rank + 0.5 */
    }
    MPI_Start(&req);
    MPI_Pready_range(0, 2 * PARTS - 1, req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < BLOCK; ++i) {
        wrong += recv[i] != left + 0.5;    /* the left neighbour's block 1 */
        wrong += recv[BLOCK + i] != right; /* the right neighbour's block 0 */
    }
    MPI_Request_free(&req);
    MPI_Comm_free(&ring);
    return wrong;
}

int main(int argc, char** argv)
{
    static const struct {
        const char* name;
        int (*run)(MPI_Comm);
    } examples[] = {{"bcast", example_bcast},
                    {"reduce", example_reduce},
                    {"allreduce", example_allreduce},
                    {"gather", example_gather},
                    {"allgather", example_allgather},
                    {"alltoall", example_alltoall},
                    {"neighbor_alltoall", example_neighbor_alltoall}};
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 0);
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; ++i) {
        tu_watchdog_arm(TU_WATCHDOG_S, "example %s", examples[i].name);
        const int wrong = examples[i].run(MPI_COMM_WORLD);
        TU_CHECK_MSG(wrong == 0, "example %s: %d wrong values", examples[i].name, wrong);
    }
    return tu_finish();
}
