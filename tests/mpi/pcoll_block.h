/* SPDX-License-Identifier: BSD-3-Clause */
/* The block-wise partitioned collectives' test program (pcoll_block.c): what its cases share.
 * A block is sp x sc ints on the send side and rp x rc elements of the receive type on the
 * receive side (MPI_INT, or a vector that takes two ints of every four and leaves two holes).
 * Int k of the block that rank src sends as its send block sblk in round r holds
 * pcb_value(src, sblk, k, r); receive buffers, holes and a guard past the last block start
 * as PCB_FILL bytes, and whatever nothing is sent to must keep them. */
#ifndef MPIPCL_TESTS_PCOLL_BLOCK_H
#define MPIPCL_TESTS_PCOLL_BLOCK_H

#include <mpi.h>
#include <stddef.h>

#define PCB_ROUNDS 3
#define PCB_FILL 0x5a
#define PCB_GUARD 64

/* The shape of a case's blocks, parsed from "<sp> <sc> <rp> <rc> <threads> [flags]" (flags:
 * v = the holed vector as receive type, i = MPI_IN_PLACE where allowed, r = the number of send
 * partitions varies by rank, the block's bytes stay). */
typedef struct {
    int sp, sc, rp, rc;
    int vec, in_place, vary;
    int nthreads;       /* threads marking partitions; 0: the main thread, before polling */
    int block_ints;     /* data ints per block (sp x sc) */
    MPI_Datatype rtype; /* MPI_INT or the vector (committed; pcb_shape_free frees it) */
    size_t rpart;       /* bytes of one receive partition: rc extents of rtype */
    size_t rblock;      /* bytes of one receive block */
} PcbShape;

/* Parses the shape from args[first..] (n words in all); the thread count drops to 0 below
 * MPI_THREAD_MULTIPLE. Aborts on a shape whose two sides' bytes differ. */
void pcb_shape_parse(char** args, int n, int first, int level, PcbShape* s);
void pcb_shape_free(PcbShape* s);
/* Send partitions and ints per send partition of @p rank (flag r: a divisor of the block). */
int pcb_send_parts(const PcbShape* s, int rank);
int pcb_send_count(const PcbShape* s, int rank);

int pcb_value(int src, int sblk, int k, int round);
/* Fills @p nblocks send blocks of ints: block b holds pcb_value(rank, b, k, round). */
void pcb_fill_send(int* buf, int nblocks, const PcbShape* s, int rank, int round);
/* Writes the block rank src sends as its block sblk into the receive layout at @p rblk
 * (its data bytes only; the holes keep what they hold). */
void pcb_put_block(char* rblk, const PcbShape* s, int src, int sblk, int round);
/* A receive buffer of @p nblocks blocks and PCB_GUARD bytes, all PCB_FILL; *bytes its size. */
char* pcb_alloc_recv(const PcbShape* s, int nblocks, size_t* bytes);

/* One request of a round, as this rank sees it. */
typedef struct {
    MPI_Request req;
    int nmark;        /* partitions this rank marks with MPI_Pready* (0: none) */
    int npoll;        /* partitions this rank polls with MPI_Parrived (0: none) */
    int rp;           /* partitions per receive block (for messages) */
    char* recv;       /* the receive buffer, or NULL */
    char* exp;        /* what it holds after the round, guard included */
    size_t bytes;     /* of recv and exp */
    size_t rpart;     /* bytes of one receive partition */
    const char* name; /* for messages */
} PcbReq;

/* One round on @p n requests: MPI_Startall; the partitions marked in a scrambled order by
 * @p nthreads threads (MPI_Pready, _range or _list by round) while the main thread polls
 * MPI_Parrived and checks each receive partition when it is first reported; a bounded
 * MPI_Waitall; then every receive buffer compared whole with its expected bytes. */
void pcb_round(PcbReq* r, int n, int nthreads, int round);
/* MPI_Request_free of each request (checked to be MPI_REQUEST_NULL after), buffers freed. */
void pcb_free(PcbReq* r, int n);
/* Compares @p n bytes; reports the first difference (as an int of the block layout). */
int pcb_same(const char* got, const char* exp, size_t n, size_t base, const char* what, int round);

/* A duplicate of MPI_COMM_WORLD and a periodic 1-D cartesian ring over it, both with
 * MPI_ERRORS_RETURN (the error cases); pcb_error_comms_free frees both. */
void pcb_error_comms(MPI_Comm* comm, MPI_Comm* ring);
void pcb_error_comms_free(MPI_Comm* comm, MPI_Comm* ring);

/* Starts marking every request's partitions (pcoll_block_mark.c); with 0 threads it marks
 * them all before it returns. pcb_mark_join waits for the threads. */
typedef struct PcbMarking PcbMarking;
PcbMarking* pcb_mark_begin(const PcbReq* r, int n, int nthreads, int round);
void pcb_mark_join(PcbMarking* m);

/* The cases; args[0] is the case's name, the file's header comment says the rest. */
void pcb_dense_case(char** args, int n, int level);    /* gather, allgather, alltoall */
void pcb_neighbor_case(char** args, int n, int level); /* pcoll_block_neighbor.c */
void pcb_errors_case(char** args, int n, int level);   /* pcoll_block_errors.c */
void pcb_mismatch_case(char** args, int n, int level); /* also mismatch_reuse */

#endif
