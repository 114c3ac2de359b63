/* SPDX-License-Identifier: BSD-3-Clause */
/* RMA backend paths: negotiation with the persistent backend, receive buffers that overlap or
 * contain an attached one, more concurrent receive buffers than Open MPI may attach (64), subarray
 * receive datatypes (described to the sender), a predefined datatype with a hole (no RMA
 * description: persistent), MPIX_Pbuf_prepare(all) and its errors. Without a window (MPIPCL_RMA=0,
 * the MPI cannot create one, or a build without the RMA backend): mpipcl_backend=rma requests
 * initialise and use the persistent backend. MPIX_Pcl_backend says which backend each pair got;
 * on MPICH (which has RMA on every transport) mpipcl_backend=rma must get rma unless MPIPCL_RMA=0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define N 4096 /* bytes per transfer in the buffer cases */
#define ROUNDS 2

static MPI_Info backend_info(const char* backend)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpipcl_backend", backend);
    return info;
}

/* MPIX_Pcl_backend of @p req is @p expect (checked after pairing, so on both sides). */
static void expect_backend(MPI_Request req, const char* expect, const char* what)
{
    const char* got = NULL;
    TU_MPI(MPIX_Pcl_backend(req, &got));
    TU_CHECK_MSG(got != NULL && strcmp(got, expect) == 0, "%s: rank %d uses %s, expected %s", what,
                 tu_rank, got ? got : "(null)", expect);
}

/* One MPI_BYTE transfer per round from rank 0's sbuf to rank 1's rbuf, backends by info; the
 * pair must end up on @p expect. */
static void bytes_case(const char* name, const char* sbackend, const char* rbackend,
                       const char* expect, int tag, unsigned char* rbuf)
{
    MPI_Info info = backend_info(tu_rank == 0 ? sbackend : rbackend);
    unsigned char* sbuf = malloc(N);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(sbuf, 8, N / 8, MPI_BYTE, 1, tag, MPI_COMM_WORLD, info, &req));
    } else {
        TU_MPI(MPI_Precv_init(rbuf, 4, N / 4, MPI_BYTE, 0, tag, MPI_COMM_WORLD, info, &req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        if (tu_rank == 0) {
            tu_fill(sbuf, N, 0, 0, round + tag);
            TU_MPI(MPI_Start(&req));
            TU_MPI(MPIX_Pbuf_prepare(req));
            tu_pready_all(8, req);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, name));
        } else {
            memset(rbuf, 0, N);
            TU_MPI(MPI_Start(&req));
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, name));
            tu_verify(rbuf, N, 0, 0, round + tag, name);
        }
    }
    expect_backend(req, expect, name);
    TU_MPI(MPI_Request_free(&req));
    MPI_Info_free(&info);
    free(sbuf);
}

/* Two rma receives of bytes[k] bytes at big+off[k] that overlap or nest; both stay paired
 * (their buffers attached) while the other one runs. */
static void two_buffers_case(const char* name, size_t off_a, int bytes_a, size_t off_b, int bytes_b,
                             int tag)
{
    MPI_Info info = backend_info("rma");
    unsigned char* sbuf = malloc(2 * N);
    unsigned char* big = malloc(4 * N);
    MPI_Request req[2];
    const size_t off[2] = {off_a, off_b};
    const int count[2] = {bytes_a / 4, bytes_b / 4};
    for (int k = 0; k < 2; ++k) {
        if (tu_rank == 0) {
            TU_MPI(MPI_Psend_init(sbuf, 4, count[k], MPI_BYTE, 1, tag + k, MPI_COMM_WORLD, info,
                                  &req[k]));
        } else {
            TU_MPI(MPI_Precv_init(big + off[k], 4, count[k], MPI_BYTE, 0, tag + k, MPI_COMM_WORLD,
                                  info, &req[k]));
        }
    }
    for (int round = 0; round < ROUNDS; ++round) {
        for (int k = 0; k < 2; ++k) {
            const size_t bytes = (size_t)count[k] * 4;
            if (tu_rank == 0) {
                tu_fill(sbuf, bytes, 0, 0, round * 2 + k);
                TU_MPI(MPI_Start(&req[k]));
                tu_pready_all(4, req[k]);
                TU_MPI(tu_wait(&req[k], MPI_STATUS_IGNORE, name));
            } else {
                memset(big, 0xEE, 4 * N);
                TU_MPI(MPI_Start(&req[k]));
                TU_MPI(tu_wait(&req[k], MPI_STATUS_IGNORE, name));
                tu_verify(big + off[k], bytes, 0, 0, round * 2 + k, name);
                tu_verify_value(big, off[k], 0xEE, "bytes before the receive buffer");
                tu_verify_value(big + off[k] + bytes, 4 * N - off[k] - bytes, 0xEE,
                                "bytes after the receive buffer");
            }
        }
    }
    for (int k = 0; k < 2; ++k) {
        TU_MPI(MPI_Request_free(&req[k]));
    }
    MPI_Info_free(&info);
    free(sbuf);
    free(big);
}

/* MANY pairs with distinct receive buffers, all active at once: more than Open MPI's
 * osc_rdma_max_attach (64); the pairs beyond the MPI's limit must use the persistent backend
 * (an attach refused by Open MPI 4.1 made every later Put to that process hang). */
static void many_buffers_case(int tag)
{
    enum { MANY = 100, BYTES = 8192 }; /* whole pages apart: Open MPI attaches pages */
    MPI_Info info = backend_info("rma");
    unsigned char* bufs = malloc((size_t)MANY * BYTES);
    MPI_Request req[MANY];
    for (int i = 0; i < MANY; ++i) {
        unsigned char* b = bufs + (size_t)i * BYTES;
        if (tu_rank == 0) {
            TU_MPI(MPI_Psend_init(b, 4, BYTES / 4, MPI_BYTE, 1, tag + i, MPI_COMM_WORLD, info,
                                  &req[i]));
        } else {
            TU_MPI(MPI_Precv_init(b, 2, BYTES / 2, MPI_BYTE, 0, tag + i, MPI_COMM_WORLD, info,
                                  &req[i]));
        }
    }
    for (int round = 0; round < ROUNDS; ++round) {
        if (tu_rank == 0) {
            tu_fill(bufs, (size_t)MANY * BYTES, 0, 0, round);
        } else {
            memset(bufs, 0, (size_t)MANY * BYTES);
        }
        TU_MPI(MPI_Startall(MANY, req));
        if (tu_rank == 0) {
            for (int i = 0; i < MANY; ++i) {
                TU_MPI(MPI_Pready_range(0, 3, req[i]));
            }
        }
        TU_MPI(tu_waitall(MANY, req, MPI_STATUSES_IGNORE, "many buffers"));
        if (tu_rank == 1) {
            tu_verify(bufs, (size_t)MANY * BYTES, 0, 0, round, "many buffers");
        }
    }
    for (int i = 0; i < MANY; ++i) {
        TU_MPI(MPI_Request_free(&req[i]));
    }
    MPI_Info_free(&info);
    free(bufs);
}

/* Receive type: the 4x5 box at (2, 3) of an 8x10 int array (C order); one box per element. */
static void subarray_case(int tag)
{
    MPI_Info info = backend_info("rma");
    enum { ELEMS = 3, BOX = 20, ARR = 80 };
    int sbuf[ELEMS * BOX];
    int rbuf[ELEMS * ARR];
    MPI_Datatype box;
    int sizes[2] = {8, 10}, subs[2] = {4, 5}, starts[2] = {2, 3};
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &box);
    MPI_Type_commit(&box);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(
            MPI_Psend_init(sbuf, ELEMS * 2, BOX / 2, MPI_INT, 1, tag, MPI_COMM_WORLD, info, &req));
    } else {
        TU_MPI(MPI_Precv_init(rbuf, ELEMS, 1, box, 0, tag, MPI_COMM_WORLD, info, &req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        if (tu_rank == 0) {
            for (int i = 0; i < ELEMS * BOX; ++i) {
                sbuf[i] = 1000 * round + i;
            }
            TU_MPI(MPI_Start(&req));
            tu_pready_all(ELEMS * 2, req);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "subarray send"));
            continue;
        }
        for (int i = 0; i < ELEMS * ARR; ++i) {
            rbuf[i] = -1;
        }
        TU_MPI(MPI_Start(&req));
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "subarray receive"));
        int bad = 0;
        for (int e = 0; e < ELEMS; ++e) {
            for (int r = 0; r < 8; ++r) {
                for (int c = 0; c < 10; ++c) {
                    const int in_box = r >= 2 && r < 6 && c >= 3 && c < 8;
                    const int want = in_box ? 1000 * round + e * BOX + (r - 2) * 5 + (c - 3) : -1;
                    bad += rbuf[e * ARR + r * 10 + c] != want;
                }
            }
        }
        TU_CHECK_MSG(bad == 0, "subarray round %d: %d wrong ints", round, bad);
    }
    TU_MPI(MPI_Request_free(&req));
    MPI_Type_free(&box);
    MPI_Info_free(&info);
}

/* MPI_SHORT_INT has a hole inside a predefined type: it cannot be described as byte blocks, so
 * the pair uses the persistent backend; the data must still arrive. */
static void short_int_case(int tag)
{
    typedef struct {
        short s;
        int i;
    } ShortInt;
    MPI_Info info = backend_info("rma");
    ShortInt buf[16];
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, 4, 4, MPI_SHORT_INT, 1, tag, MPI_COMM_WORLD, info, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, 2, 8, MPI_SHORT_INT, 0, tag, MPI_COMM_WORLD, info, &req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        if (tu_rank == 0) {
            for (int k = 0; k < 16; ++k) {
                buf[k].s = (short)(k + round);
                buf[k].i = 100 * k + round;
            }
            TU_MPI(MPI_Start(&req));
            tu_pready_all(4, req);
            TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "short_int send"));
            continue;
        }
        memset(buf, 0, sizeof buf);
        TU_MPI(MPI_Start(&req));
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "short_int receive"));
        int bad = 0;
        for (int k = 0; k < 16; ++k) {
            bad += buf[k].s != (short)(k + round) || buf[k].i != 100 * k + round;
        }
        TU_CHECK_MSG(bad == 0, "MPI_SHORT_INT round %d: %d wrong elements", round, bad);
    }
    TU_MPI(MPI_Request_free(&req));
    MPI_Info_free(&info);
}

static void pbuf_prepare_errors(int tag)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    TU_MPI(MPIX_Pbuf_prepare(MPI_REQUEST_NULL));
    TU_EXPECT_ERR(MPIX_Pbuf_prepareall(-1, NULL), MPI_ERR_ARG);
    int x = 0;
    MPI_Request plain;
    MPI_Recv_init(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &plain);
    TU_EXPECT_ERR(MPIX_Pbuf_prepare(plain), MPI_ERR_REQUEST);
    MPI_Request_free(&plain);
    int buf[8];
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, 2, 4, MPI_INT, 1, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    } else {
        TU_MPI(MPI_Precv_init(buf, 2, 4, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]));
    }
    TU_EXPECT_ERR(MPIX_Pbuf_prepare(req[0]), MPI_ERR_REQUEST); /* not started */
    TU_MPI(MPI_Start(&req[0]));
    TU_MPI(MPIX_Pbuf_prepareall(2, req)); /* one active request and MPI_REQUEST_NULL */
    if (tu_rank == 0) {
        tu_pready_all(2, req[0]);
    }
    TU_MPI(tu_wait(&req[0], MPI_STATUS_IGNORE, "pbuf_prepare transfer"));
    TU_MPI(MPI_Request_free(&req[0]));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

/* Whether mpipcl_backend=rma requests get the rma backend (probed on an MPI_PROC_NULL send:
 * without a window the hint falls back to persistent at init). */
static int rma_available(void)
{
    MPI_Info info = backend_info("rma");
    int buf = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    TU_MPI(MPI_Psend_init(&buf, 1, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, info, &req));
    MPI_Info_free(&info);
    const char* name = NULL;
    TU_MPI(MPIX_Pcl_backend(req, &name));
    const int rma = name != NULL && strcmp(name, "rma") == 0;
    TU_MPI(MPI_Request_free(&req));
    return rma;
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    unsigned char* rbuf = malloc(N);
    const char* rma_env = getenv("MPIPCL_RMA");
    const int window = rma_available();
    const int disabled = rma_env != NULL && strcmp(rma_env, "0") == 0;
    if (disabled) {
        TU_CHECK_MSG(!window, "MPIPCL_RMA=0, yet mpipcl_backend=rma gets the rma backend");
    }
#if defined(MPICH_VERSION)
    /* MPICH has one-sided communication at MPI_THREAD_MULTIPLE on every transport (also
     * across hosts over UCX): there the rma backend must really be used. */
    if (!disabled) {
        TU_CHECK_MSG(window, "MPICH: mpipcl_backend=rma falls back to persistent");
    }
#endif
    if (tu_rank == 0) {
        fprintf(stderr, "mpipcl_backend=rma gets the %s backend\n",
                window ? "rma" : "persistent (no window)");
    }
    if (!window) {
        bytes_case("rma without a window", "rma", "rma", "persistent", 8, rbuf);
        bytes_case("persistent without a window", "persistent", "persistent", "persistent", 10,
                   rbuf);
        free(rbuf);
        pbuf_prepare_errors(40);
        return tu_finish();
    }
    bytes_case("rma sender, persistent receiver", "rma", "persistent", "persistent", 10, rbuf);
    bytes_case("persistent sender, rma receiver", "persistent", "rma", "persistent", 12, rbuf);
    bytes_case("rma both sides", "rma", "rma", "rma", 14, rbuf);
    free(rbuf);
    two_buffers_case("overlapping receive buffers", 0, 2 * N, 3 * N / 2, N, 20);
    two_buffers_case("second buffer inside the first", 0, 2 * N, N / 2, N, 22);
    two_buffers_case("second buffer around the first", N, N, N / 2, 2 * N, 24);
    subarray_case(30);
    many_buffers_case(100);
    short_int_case(32);
    pbuf_prepare_errors(40);
    return tu_finish();
}
