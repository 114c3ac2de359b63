/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad-input suite: one erroneous (or legal corner-case) call per case; the command line names
 * cases, or groups of them as "@group" (one per table below), run in turn in one launch
 * (docs/errors.md lists them all with the expected error class). Under
 * MPI_ERRORS_RETURN each case checks the error class, that failed calls leave their output
 * arguments alone, that receive buffers and their guard bytes hold exactly what they must, and
 * then that a fresh correct transfer still works. A hang is caught by alarm(), a crash by a
 * signal handler; both print the case name and exit non-zero. A case that finalizes MPI
 * itself (after_finalize_*) runs alone. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "testutil.h"

#define TAG 21
#define SPARTS 8
#define RPARTS 4
#define TOTAL 4096
#define GUARD 64
#define GUARD_BYTE 0xA5
#define FRESH_BYTE 0xEE
#define CASE_ALARM_S 25
#define ORD_INTS 4

enum { SENDER = 0, RECEIVER = 1 };

static const char* g_case = "(none)";
static const char* g_phase = "setup";
static MPI_Comm ec; /* a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN */
static int g_skip;
static unsigned char g_send[2 * TOTAL];
static unsigned char g_recv[GUARD + TOTAL + GUARD];

/* ---- diagnostics ---------------------------------------------------------------------- */

static const char* class_name(int cls)
{
    static const struct {
        int cls;
        const char* name;
    } names[] = {{MPI_SUCCESS, "MPI_SUCCESS"},
                 {MPI_ERR_ARG, "MPI_ERR_ARG"},
                 {MPI_ERR_REQUEST, "MPI_ERR_REQUEST"},
                 {MPI_ERR_COUNT, "MPI_ERR_COUNT"},
                 {MPI_ERR_TYPE, "MPI_ERR_TYPE"},
                 {MPI_ERR_COMM, "MPI_ERR_COMM"},
                 {MPI_ERR_RANK, "MPI_ERR_RANK"},
                 {MPI_ERR_TAG, "MPI_ERR_TAG"},
                 {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"},
                 {MPI_ERR_INFO_VALUE, "MPI_ERR_INFO_VALUE"},
                 {MPI_ERR_INFO_KEY, "MPI_ERR_INFO_KEY"},
                 {MPI_ERR_INFO, "MPI_ERR_INFO"},
                 {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM"},
                 {MPI_ERR_OTHER, "MPI_ERR_OTHER"},
                 {MPI_ERR_INTERN, "MPI_ERR_INTERN"},
                 {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS"},
                 {MPI_ERR_PENDING, "MPI_ERR_PENDING"},
                 {MPI_ERR_BUFFER, "MPI_ERR_BUFFER"},
                 {MPI_ERR_UNSUPPORTED_OPERATION, "MPI_ERR_UNSUPPORTED_OPERATION"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        if (names[i].cls == cls) {
            return names[i].name;
        }
    }
    static char other[32];
    snprintf(other, sizeof other, "class %d", cls);
    return other;
}

static int rc_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS && MPI_Error_class(rc, &cls) != MPI_SUCCESS) {
        cls = -1;
    }
    return cls;
}

/* Fails the case unless @p rc has class @p a or @p b (either may be MPI_SUCCESS). */
static int expect_at(int rc, int a, int b, const char* what, int line)
{
    int cls = rc_class(rc);
    if (cls == a || cls == b) {
        return 1;
    }
    return tu_check(0, __FILE__, line, "case %s: %s: expected %s%s%s, got %s", g_case, what,
                    class_name(a), a == b ? "" : " or ", a == b ? "" : class_name(b),
                    class_name(cls));
}
#define EXPECT(call, cls) expect_at((call), (cls), (cls), #call, __LINE__)
#define EXPECT2(call, a, b) expect_at((call), (a), (b), #call, __LINE__)
#define CHECK(cond, ...) tu_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static void on_signal(int sig)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "[rank %d] case %s (%s): %s (signal %d)\n", tu_rank, g_case,
                     g_phase, sig == SIGALRM ? "HANG: watchdog alarm" : "CRASH: fatal signal", sig);
    if (n > 0) {
        ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
        (void)w;
    }
    _exit(sig == SIGALRM ? 3 : 4);
}

static void install_watchdogs(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGALRM, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; ++i) {
        sigaction(sigs[i], &sa, NULL);
    }
}

/* ---- a partitioned pair: rank 0 sends TOTAL bytes in SPARTS, rank 1 receives in RPARTS ---- */

typedef struct {
    MPI_Request req;
    int round;
    unsigned done;  /* send partitions already marked (must not be marked again) */
    unsigned maybe; /* send partitions a rejected call may or may not have marked */
} Pair;

static void reset_recv_buffer(void)
{
    memset(g_recv, GUARD_BYTE, sizeof g_recv);
    memset(g_recv + GUARD, FRESH_BYTE, TOTAL);
}

/* Guards intact; the data either the expected pattern or, with @p fresh, untouched. */
static void check_recv_buffer(int round, int fresh)
{
    tu_verify_value(g_recv, GUARD, GUARD_BYTE, "guard before the receive buffer");
    tu_verify_value(g_recv + GUARD + TOTAL, GUARD, GUARD_BYTE, "guard after the receive buffer");
    if (fresh) {
        tu_verify_value(g_recv + GUARD, TOTAL, FRESH_BYTE, "receive buffer of a failed transfer");
    } else {
        tu_verify(g_recv + GUARD, TOTAL, 0, SENDER, round, "received data");
    }
}

static void pair_init(Pair* p, MPI_Comm comm)
{
    memset(p, 0, sizeof *p);
    p->req = MPI_REQUEST_NULL;
    if (tu_rank == SENDER) {
        TU_MPI(MPI_Psend_init(g_send, SPARTS, TOTAL / SPARTS, MPI_BYTE, RECEIVER, TAG, comm,
                              MPI_INFO_NULL, &p->req));
    } else {
        reset_recv_buffer();
        TU_MPI(MPI_Precv_init(g_recv + GUARD, RPARTS, TOTAL / RPARTS, MPI_BYTE, SENDER, TAG, comm,
                              MPI_INFO_NULL, &p->req));
    }
}

static void pair_start(Pair* p)
{
    p->done = p->maybe = 0;
    if (tu_rank == SENDER) {
        tu_fill(g_send, TOTAL, 0, SENDER, p->round);
    }
    TU_MPI(MPI_Start(&p->req));
}

/* Marks what is left, completes the round and checks the data. */
static void pair_finish(Pair* p)
{
    g_phase = "completing the case's transfer";
    if (tu_rank == SENDER) {
        for (int i = 0; i < SPARTS; ++i) {
            if (p->done & (1u << i)) {
                continue;
            }
            int rc = MPI_Pready(i, p->req);
            if (p->maybe & (1u << i)) {
                int cls = rc_class(rc); /* already marked by the rejected call, or not */
                CHECK(cls == MPI_SUCCESS || cls == MPI_ERR_ARG || cls == MPI_ERR_REQUEST,
                      "case %s: Pready(%d) after the rejected call: %s", g_case, i,
                      class_name(cls));
            } else {
                TU_MPI(rc);
            }
        }
    }
    TU_MPI(tu_wait(&p->req, MPI_STATUS_IGNORE, "the case's transfer"));
    if (tu_rank == RECEIVER) {
        check_recv_buffer(p->round, 0);
    }
    ++p->round;
}

static void pair_free(Pair* p)
{
    if (p->req != MPI_REQUEST_NULL) {
        TU_MPI(MPI_Request_free(&p->req));
    }
}

/* ---- init calls with bad arguments (local) ---------------------------------------------- */

enum { PSEND, PRECV };
enum { T_BYTE, T_NULL, T_UNCOMMITTED, T_MIB };
enum { P_PEER, P_ANY_SOURCE, P_SIZE, P_NEGATIVE };
enum { G_TAG, G_ANY_TAG, G_NEGATIVE, G_ABOVE_UB };
enum { C_DUP, C_NULL, C_INTER };

typedef struct {
    const char* name;
    int side;
    int parts;
    MPI_Count count;
    int type, peer, tag, comm, null_request;
    const char* key;
    const char* value;
    int cls, alt; /* expected class, another accepted one (0: none) */
} InitCase;

#define BIG ((MPI_Count)1 << 62)
static const InitCase init_cases[] = {
    {"psend_partitions_zero", PSEND, 0, 1, .cls = MPI_ERR_ARG},
    {"psend_partitions_negative", PSEND, -1, 1, .cls = MPI_ERR_ARG},
    {"precv_partitions_zero", PRECV, 0, 1, .cls = MPI_ERR_ARG},
    {"precv_partitions_negative", PRECV, -7, 1, .cls = MPI_ERR_ARG},
    {"psend_count_negative", PSEND, 4, -1, .cls = MPI_ERR_COUNT},
    {"precv_count_negative", PRECV, 4, -1, .cls = MPI_ERR_COUNT},
    {"psend_datatype_null", PSEND, 4, 1, .type = T_NULL, .cls = MPI_ERR_TYPE},
    {"precv_datatype_null", PRECV, 4, 1, .type = T_NULL, .cls = MPI_ERR_TYPE},
    {"psend_datatype_uncommitted", PSEND, 4, 1, .type = T_UNCOMMITTED, .cls = MPI_ERR_TYPE},
    {"precv_datatype_uncommitted", PRECV, 4, 1, .type = T_UNCOMMITTED, .cls = MPI_ERR_TYPE},
    {"psend_comm_null", PSEND, 4, 1, .comm = C_NULL, .cls = MPI_ERR_COMM},
    {"precv_comm_null", PRECV, 4, 1, .comm = C_NULL, .cls = MPI_ERR_COMM},
    {"psend_intercomm", PSEND, 4, 1, .comm = C_INTER, .cls = MPI_ERR_COMM},
    {"precv_intercomm", PRECV, 4, 1, .comm = C_INTER, .cls = MPI_ERR_COMM},
    {"precv_any_source", PRECV, 4, 1, .peer = P_ANY_SOURCE, .cls = MPI_ERR_RANK},
    {"precv_any_tag", PRECV, 4, 1, .tag = G_ANY_TAG, .cls = MPI_ERR_TAG},
    {"psend_dest_comm_size", PSEND, 4, 1, .peer = P_SIZE, .cls = MPI_ERR_RANK},
    {"psend_dest_negative", PSEND, 4, 1, .peer = P_NEGATIVE, .cls = MPI_ERR_RANK},
    {"precv_source_comm_size", PRECV, 4, 1, .peer = P_SIZE, .cls = MPI_ERR_RANK},
    {"psend_any_tag", PSEND, 4, 1, .tag = G_ANY_TAG, .cls = MPI_ERR_TAG},
    {"psend_tag_negative", PSEND, 4, 1, .tag = G_NEGATIVE, .cls = MPI_ERR_TAG},
    {"psend_tag_above_ub", PSEND, 4, 1, .tag = G_ABOVE_UB, .cls = MPI_ERR_TAG},
    {"psend_request_null_pointer", PSEND, 4, 1, .null_request = 1, .cls = MPI_ERR_ARG},
    {"precv_request_null_pointer", PRECV, 4, 1, .null_request = 1, .cls = MPI_ERR_ARG},
    /* A malformed mpipcl_* value is a hint the library cannot read: ignored (one warning per
     * process and key), the init call succeeds. */
    {"info_backend_bogus_send", PSEND, 4, 1, .key = "mpipcl_backend", .value = "bogus",
     .cls = MPI_SUCCESS},
    {"info_backend_bogus_recv", PRECV, 4, 1, .key = "mpipcl_backend", .value = "bogus",
     .cls = MPI_SUCCESS},
    {"info_messages_negative", PSEND, 4, 1, .key = "mpipcl_messages", .value = "-3",
     .cls = MPI_SUCCESS},
    {"info_messages_abc", PRECV, 4, 1, .key = "mpipcl_messages", .value = "abc",
     .cls = MPI_SUCCESS},
    {"info_messages_trailing_garbage", PSEND, 4, 1, .key = "mpipcl_messages", .value = "4x",
     .cls = MPI_SUCCESS},
    {"info_messages_overflow", PRECV, 4, 1, .key = "mpipcl_messages",
     .value = "99999999999999999999", .cls = MPI_SUCCESS},
    {"info_notify_bogus", PRECV, 4, 1, .key = "mpipcl_notify", .value = "sometimes",
     .cls = MPI_SUCCESS},
    /* partitions * count * extent beyond MPI_Aint/MPI_Count: must fail, not wrap around. */
    {"overflow_count_times_extent", PSEND, 2, BIG, .type = T_MIB, .cls = MPI_ERR_COUNT},
    {"overflow_total_above_aint_max", PSEND, 2, BIG, .cls = MPI_ERR_COUNT},
    {"overflow_total_wraps_to_zero", PSEND, 4, BIG, .cls = MPI_ERR_COUNT},
    {"overflow_total_wraps_to_8", PRECV, 8, BIG / 2 + 1, .cls = MPI_ERR_COUNT},
    {"overflow_int_max_partitions", PRECV, INT_MAX, (MPI_Count)INT_MAX, .type = T_MIB,
     .cls = MPI_ERR_COUNT},
    /* INT_MAX partitions whose 8 EiB buffer fits MPI_Aint: init is local and touches no
     * memory, so it may succeed (then it is freed unstarted) or report MPI_ERR_NO_MEM. */
    {"huge_partitions_buffer_init", PSEND, INT_MAX, (MPI_Count)1 << 32, .cls = MPI_SUCCESS,
     .alt = MPI_ERR_NO_MEM},
};
#undef BIG

/* Limits this process's address space to its current size + @p extra bytes (soft limit), so
 * that a huge allocation fails instead of eating the shared machine's memory. */
static void limit_memory(size_t extra)
{
    FILE* f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) {
            pages = 0;
        }
        fclose(f);
    }
    struct rlimit rl;
    if (pages && getrlimit(RLIMIT_AS, &rl) == 0) {
        rl.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + extra;
        setrlimit(RLIMIT_AS, &rl);
    }
}

static void unlimit_memory(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_AS, &rl);
    }
}

static void run_init_case(const InitCase* c)
{
    int peer = 1 - tu_rank;
    MPI_Datatype type = MPI_BYTE, owned = MPI_DATATYPE_NULL;
    if (c->type == T_NULL) {
        type = MPI_DATATYPE_NULL;
    } else if (c->type == T_UNCOMMITTED) {
        MPI_Type_vector(4, 1, 2, MPI_INT, &owned);
        type = owned;
    } else if (c->type == T_MIB) {
        MPI_Type_contiguous(1 << 20, MPI_BYTE, &owned);
        MPI_Type_commit(&owned);
        type = owned;
    }
    if (c->peer == P_ANY_SOURCE) {
        peer = MPI_ANY_SOURCE;
    } else if (c->peer == P_SIZE) {
        peer = tu_size;
    } else if (c->peer == P_NEGATIVE) {
        peer = -5;
    }
    int tag = TAG;
    if (c->tag == G_ANY_TAG) {
        tag = MPI_ANY_TAG;
    } else if (c->tag == G_NEGATIVE) {
        tag = -2;
    } else if (c->tag == G_ABOVE_UB) {
        int* ub = NULL;
        int flag = 0;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
        if (!flag || *ub == INT_MAX) {
            g_skip = 1; /* no tag above MPI_TAG_UB exists */
            return;
        }
        tag = *ub + 1;
    }
    MPI_Comm comm = ec, inter = MPI_COMM_NULL;
    if (c->comm == C_NULL) {
        comm = MPI_COMM_NULL;
    } else if (c->comm == C_INTER) {
        TU_MPI(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, 1 - tu_rank, TAG, &inter));
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        comm = inter;
        peer = 0;
    }
    MPI_Info info = MPI_INFO_NULL;
    if (c->key) {
        MPI_Info_create(&info);
        MPI_Info_set(info, c->key, c->value);
    }
    if (c->parts == INT_MAX) {
        limit_memory((size_t)3 << 30);
    }
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Request* out = c->null_request ? NULL : &req;
    int rc =
        c->side == PSEND
            ? MPI_Psend_init(g_send, c->parts, c->count, type, peer, tag, comm, info, out)
            : MPI_Precv_init(g_recv + GUARD, c->parts, c->count, type, peer, tag, comm, info, out);
    unlimit_memory();
    expect_at(rc, c->cls, c->alt ? c->alt : c->cls,
              c->side == PSEND ? "MPI_Psend_init" : "MPI_Precv_init", __LINE__);
    if (rc != MPI_SUCCESS) {
        CHECK(req == MPI_REQUEST_NULL, "case %s: a failed init call wrote the request handle",
              g_case);
    } else if (req != MPI_REQUEST_NULL) {
        TU_MPI(MPI_Request_free(&req)); /* never started: must leave nothing behind */
    }
    if (info != MPI_INFO_NULL) {
        MPI_Info_free(&info);
    }
    if (owned != MPI_DATATYPE_NULL) {
        MPI_Type_free(&owned);
    }
    if (inter != MPI_COMM_NULL) {
        MPI_Comm_free(&inter);
    }
}

/* Unknown info keys are ignored: a transfer with them on both sides works. */
static void unknown_info_keys(void)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_such_key", "1");
    MPI_Info_set(info, "mpipcl_no_such_key", "bogus");
    MPI_Request req;
    if (tu_rank == SENDER) {
        tu_fill(g_send, TOTAL, 0, SENDER, 0);
        TU_MPI(MPI_Psend_init(g_send, SPARTS, TOTAL / SPARTS, MPI_BYTE, RECEIVER, TAG, ec, info,
                              &req));
    } else {
        reset_recv_buffer();
        TU_MPI(MPI_Precv_init(g_recv + GUARD, RPARTS, TOTAL / RPARTS, MPI_BYTE, SENDER, TAG, ec,
                              info, &req));
    }
    MPI_Info_free(&info);
    TU_MPI(MPI_Start(&req));
    if (tu_rank == SENDER) {
        TU_MPI(MPI_Pready_range(0, SPARTS - 1, req));
    }
    TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "transfer with unknown info keys"));
    if (tu_rank == RECEIVER) {
        check_recv_buffer(0, 0);
    }
    TU_MPI(MPI_Request_free(&req));
}

/* ---- MPI_Pready* ------------------------------------------------------------------------ */

enum { W_BEFORE_START, W_ACTIVE, W_AFTER_ROUND, W_ON_RECV };
enum { OP_ONE, OP_RANGE, OP_LIST, OP_LIST_NULL };

typedef struct {
    const char* name;
    int when, op;
    int a, b;     /* OP_ONE: a; OP_RANGE: a..b; OP_LIST: length a */
    int list[3];  /* OP_LIST entries */
    unsigned pre; /* partitions marked (successfully) before the call */
    unsigned maybe;
    int cls, alt;
} PreadyCase;

static const PreadyCase pready_cases[] = {
    {"pready_negative", W_ACTIVE, OP_ONE, -1, .cls = MPI_ERR_ARG},
    {"pready_partitions", W_ACTIVE, OP_ONE, SPARTS, .cls = MPI_ERR_ARG},
    {"pready_int_max", W_ACTIVE, OP_ONE, INT_MAX, .cls = MPI_ERR_ARG},
    {"pready_range_low_above_high", W_ACTIVE, OP_RANGE, 2, 1, .cls = MPI_ERR_ARG},
    {"pready_range_high_out_of_range", W_ACTIVE, OP_RANGE, 0, SPARTS, .maybe = 0xFF,
     .cls = MPI_ERR_ARG},
    {"pready_range_low_negative", W_ACTIVE, OP_RANGE, -1, 0, .maybe = 1, .cls = MPI_ERR_ARG},
    {"pready_list_duplicate", W_ACTIVE, OP_LIST, 3, 0, {1, 2, 1}, .maybe = 6, .cls = MPI_ERR_ARG},
    {"pready_list_negative_length", W_ACTIVE, OP_LIST, -1, 0, {1, 2}, .cls = MPI_ERR_ARG},
    {"pready_list_null_array", W_ACTIVE, OP_LIST_NULL, 2, .cls = MPI_ERR_ARG},
    {"pready_list_entry_out_of_range",
     W_ACTIVE,
     OP_LIST,
     2,
     0,
     {3, SPARTS},
     .maybe = 8,
     .cls = MPI_ERR_ARG},
    {"pready_list_entry_negative",
     W_ACTIVE,
     OP_LIST,
     2,
     0,
     {2, -1},
     .maybe = 4,
     .cls = MPI_ERR_ARG},
    {"pready_twice", W_ACTIVE, OP_ONE, 0, .pre = 1, .cls = MPI_ERR_ARG, .alt = MPI_ERR_REQUEST},
    {"pready_range_overlaps_marked", W_ACTIVE, OP_RANGE, 2, 4, .pre = 8, .maybe = 0x14,
     .cls = MPI_ERR_ARG, .alt = MPI_ERR_REQUEST},
    {"pready_list_marked_entry",
     W_ACTIVE,
     OP_LIST,
     2,
     0,
     {6, 5},
     .pre = 0x20,
     .maybe = 0x40,
     .cls = MPI_ERR_ARG,
     .alt = MPI_ERR_REQUEST},
    {"pready_before_start", W_BEFORE_START, OP_ONE, 0, .cls = MPI_ERR_REQUEST},
    {"pready_range_before_start", W_BEFORE_START, OP_RANGE, 0, 3, .cls = MPI_ERR_REQUEST},
    {"pready_list_before_start", W_BEFORE_START, OP_LIST, 2, 0, {0, 1}, .cls = MPI_ERR_REQUEST},
    {"pready_after_round", W_AFTER_ROUND, OP_ONE, 0, .cls = MPI_ERR_REQUEST},
    {"pready_on_receive", W_ON_RECV, OP_ONE, 0, .cls = MPI_ERR_REQUEST},
    {"pready_range_on_receive", W_ON_RECV, OP_RANGE, 0, 1, .cls = MPI_ERR_REQUEST},
};

static int pready_call(const PreadyCase* c, MPI_Request req)
{
    switch (c->op) {
        case OP_ONE:
            return MPI_Pready(c->a, req);
        case OP_RANGE:
            return MPI_Pready_range(c->a, c->b, req);
        case OP_LIST:
            return MPI_Pready_list(c->a, (int*)c->list, req); /* MPICH 4.0.2: no const */
        default:
            return MPI_Pready_list(c->a, NULL, req);
    }
}

static void run_pready_case(const PreadyCase* c)
{
    Pair p;
    pair_init(&p, ec);
    int me = c->when == W_ON_RECV ? RECEIVER : SENDER;
    int alt = c->alt ? c->alt : c->cls;
    if (c->when == W_BEFORE_START && tu_rank == me) {
        expect_at(pready_call(c, p.req), c->cls, alt, c->name, __LINE__);
    }
    pair_start(&p);
    if (c->when != W_BEFORE_START && c->when != W_AFTER_ROUND && tu_rank == me) {
        for (int i = 0; i < SPARTS; ++i) {
            if (c->pre & (1u << i)) {
                TU_MPI(MPI_Pready(i, p.req));
            }
        }
        expect_at(pready_call(c, p.req), c->cls, alt, c->name, __LINE__);
    }
    p.done = c->pre;
    p.maybe = c->maybe;
    pair_finish(&p);
    if (c->when == W_AFTER_ROUND && tu_rank == me) {
        expect_at(pready_call(c, p.req), c->cls, alt, c->name, __LINE__);
    }
    /* The request still works for another round. */
    pair_start(&p);
    pair_finish(&p);
    pair_free(&p);
}

/* Pready on handles that are not partitioned send requests. */
static void pready_on_foreign(int kind)
{
    if (kind == 0) {
        EXPECT(MPI_Pready(0, MPI_REQUEST_NULL), MPI_ERR_REQUEST);
        return;
    }
    int in = 0, out = 5;
    MPI_Request r;
    TU_MPI(MPI_Irecv(&in, 1, MPI_INT, 0, TAG, MPI_COMM_SELF, &r));
    EXPECT(MPI_Pready(0, r), MPI_ERR_REQUEST);
    EXPECT(MPI_Pready_range(0, 0, r), MPI_ERR_REQUEST);
    TU_MPI(MPI_Send(&out, 1, MPI_INT, 0, TAG, MPI_COMM_SELF));
    TU_MPI(tu_wait(&r, MPI_STATUS_IGNORE, "ordinary receive"));
    CHECK(in == out, "case %s: ordinary receive got %d", g_case, in);
}

/* ---- MPI_Parrived ------------------------------------------------------------------------ */

enum {
    PA_ON_SEND,
    PA_ON_RECV_INIT,
    PA_ON_IRECV,
    PA_NULL_REQUEST,
    PA_NEVER_STARTED,
    PA_AFTER_ROUND,
    PA_NULL_FLAG,
    PA_NULL_FLAG_NULL_REQUEST,
    PA_NEGATIVE,
    PA_PARTITIONS,
    PA_INT_MAX,
};

typedef struct {
    const char* name;
    int kind;
    int cls;
} ParrivedCase;

static const ParrivedCase parrived_cases[] = {
    {"parrived_on_send", PA_ON_SEND, MPI_ERR_REQUEST},
    {"parrived_on_ordinary_recv_init", PA_ON_RECV_INIT, MPI_ERR_REQUEST},
    {"parrived_on_ordinary_irecv", PA_ON_IRECV, MPI_ERR_REQUEST},
    {"parrived_request_null", PA_NULL_REQUEST, MPI_SUCCESS},
    {"parrived_never_started", PA_NEVER_STARTED, MPI_SUCCESS},
    {"parrived_after_round", PA_AFTER_ROUND, MPI_SUCCESS},
    {"parrived_null_flag", PA_NULL_FLAG, MPI_ERR_ARG},
    {"parrived_null_flag_request_null", PA_NULL_FLAG_NULL_REQUEST, MPI_ERR_ARG},
    {"parrived_negative", PA_NEGATIVE, MPI_ERR_ARG},
    {"parrived_partitions", PA_PARTITIONS, MPI_ERR_ARG},
    {"parrived_int_max", PA_INT_MAX, MPI_ERR_ARG},
};

/* The call's code is as expected; on success flag = 1, on failure the flag is untouched. */
static void check_parrived(const ParrivedCase* c, MPI_Request req, int partition, int null_flag)
{
    int flag = 7;
    int rc = MPI_Parrived(req, partition, null_flag ? NULL : &flag);
    expect_at(rc, c->cls, c->cls, c->name, __LINE__);
    if (!null_flag && rc == MPI_SUCCESS) {
        CHECK(flag == 1, "case %s: flag %d, expected 1", g_case, flag);
    } else if (!null_flag) {
        CHECK(flag == 7, "case %s: a failed MPI_Parrived wrote flag = %d", g_case, flag);
    }
}

static void run_parrived_case(const ParrivedCase* c)
{
    if (c->kind == PA_NULL_REQUEST || c->kind == PA_NULL_FLAG_NULL_REQUEST) {
        check_parrived(c, MPI_REQUEST_NULL, 0, c->kind == PA_NULL_FLAG_NULL_REQUEST);
        return;
    }
    if (c->kind == PA_ON_RECV_INIT || c->kind == PA_ON_IRECV) {
        int in = 0, out = 9;
        MPI_Request r;
        if (c->kind == PA_ON_RECV_INIT) {
            TU_MPI(MPI_Recv_init(&in, 1, MPI_INT, 0, TAG, MPI_COMM_SELF, &r));
            check_parrived(c, r, 0, 0);
            TU_MPI(MPI_Request_free(&r));
            return;
        }
        TU_MPI(MPI_Irecv(&in, 1, MPI_INT, 0, TAG, MPI_COMM_SELF, &r));
        check_parrived(c, r, 0, 0);
        TU_MPI(MPI_Send(&out, 1, MPI_INT, 0, TAG, MPI_COMM_SELF));
        TU_MPI(tu_wait(&r, MPI_STATUS_IGNORE, "ordinary receive"));
        CHECK(in == out, "case %s: ordinary receive got %d", g_case, in);
        return;
    }
    Pair p;
    pair_init(&p, ec);
    if (c->kind == PA_NEVER_STARTED && tu_rank == RECEIVER) {
        check_parrived(c, p.req, 0, 0);
    }
    pair_start(&p);
    int partition = c->kind == PA_NEGATIVE     ? -1
                    : c->kind == PA_PARTITIONS ? RPARTS
                    : c->kind == PA_INT_MAX    ? INT_MAX
                                               : 0;
    if ((c->kind == PA_ON_SEND && tu_rank == SENDER) ||
        (c->kind >= PA_NULL_FLAG && tu_rank == RECEIVER)) {
        check_parrived(c, p.req, partition, c->kind == PA_NULL_FLAG);
    }
    pair_finish(&p);
    if (c->kind == PA_AFTER_ROUND && tu_rank == RECEIVER) {
        check_parrived(c, p.req, RPARTS - 1, 0);
    }
    pair_free(&p);
}

/* ---- request lifetime ------------------------------------------------------------------- */

enum {
    L_FREE,
    L_CANCEL,
    L_START,
    L_STARTALL,
    L_TEST_NULL_FLAG,
    L_TESTALL_NULL_FLAG,
    L_GET_STATUS_NULL_FLAG
};

/* An erroneous call on the active request of side @p side; the round then completes. */
static void active_request_call(int side, int what, int cls)
{
    Pair p;
    pair_init(&p, ec);
    pair_start(&p);
    if (tu_rank == side) {
        MPI_Request copy = p.req;
        int rc;
        switch (what) {
            case L_FREE:
                rc = MPI_Request_free(&copy);
                break;
            case L_CANCEL:
                rc = MPI_Cancel(&copy);
                break;
            case L_START:
                rc = MPI_Start(&copy);
                break;
            case L_STARTALL:
                rc = MPI_Startall(1, &copy);
                break;
            case L_TEST_NULL_FLAG:
                rc = MPI_Test(&copy, NULL, MPI_STATUS_IGNORE);
                break;
            case L_TESTALL_NULL_FLAG: {
                /* A status array, not MPI_STATUSES_IGNORE: gcc reads MPICH's access attribute
                 * as a zero-size region for it next to the null flag (-Wstringop-overflow). */
                MPI_Status st[1];
                rc = MPI_Testall(1, &copy, NULL, st);
                break;
            }
            default:
                rc = MPI_Request_get_status(copy, NULL, MPI_STATUS_IGNORE);
                break;
        }
        expect_at(rc, cls, cls, "the call on the active request", __LINE__);
        CHECK(copy == p.req, "case %s: the failed call changed the request handle", g_case);
        if (rc == MPI_SUCCESS && what == L_FREE) {
            TU_ABORT("MPI_Request_free released an active request");
        }
    }
    pair_finish(&p);
    pair_start(&p); /* still usable */
    pair_finish(&p);
    pair_free(&p);
}

/* Handles used after MPI_Request_free, as far as mpipcl can tell them from live ones. */
static void stale_handle(int what)
{
    Pair p;
    pair_init(&p, ec);
    if (what == 1) {
        pair_start(&p);
        pair_finish(&p);
    }
    MPI_Request stale = p.req;
    pair_free(&p);
    int flag = 7;
    if (tu_rank == SENDER) {
        EXPECT(MPI_Pready(0, stale), MPI_ERR_REQUEST);
        EXPECT(MPI_Pready_range(0, 1, stale), MPI_ERR_REQUEST);
    } else {
        EXPECT(MPI_Parrived(stale, 0, &flag), MPI_ERR_REQUEST);
    }
}

/* A request freed before it ever started must leave nothing behind: the next transfer on the
 * same (communicator, peer, tag) pairs with the next init call. @p side frees; with @p bytes
 * different from the fresh transfer's TOTAL. */
static void free_unstarted(int side, int bytes)
{
    MPI_Request req = MPI_REQUEST_NULL;
    if (tu_rank == side && side == SENDER) {
        TU_MPI(
            MPI_Psend_init(g_send, 2, bytes / 2, MPI_BYTE, RECEIVER, TAG, ec, MPI_INFO_NULL, &req));
    } else if (tu_rank == side) {
        TU_MPI(MPI_Precv_init(g_recv + GUARD, 2, bytes / 2, MPI_BYTE, SENDER, TAG, ec,
                              MPI_INFO_NULL, &req));
    }
    if (req != MPI_REQUEST_NULL) {
        TU_MPI(MPI_Request_free(&req));
    }
    /* main's fresh transfer (TOTAL bytes, same communicator and tag) must now work. */
}

/* ---- size and signature mismatches ------------------------------------------------------ */

/* The sender's total is @p sbytes against the receiver's TOTAL; two rounds (errors found at
 * pairing are sticky). The receiver's buffer and guards must stay untouched. */
static void size_mismatch(int sbytes)
{
    MPI_Request req;
    if (tu_rank == SENDER) {
        TU_MPI(MPI_Psend_init(g_send, 2, sbytes / 2, MPI_BYTE, RECEIVER, TAG, ec, MPI_INFO_NULL,
                              &req));
    } else {
        reset_recv_buffer();
        TU_MPI(MPI_Precv_init(g_recv + GUARD, RPARTS, TOTAL / RPARTS, MPI_BYTE, SENDER, TAG, ec,
                              MPI_INFO_NULL, &req));
    }
    for (int round = 0; round < 2; ++round) {
        tu_fill(g_send, (size_t)sbytes, 0, SENDER, round);
        TU_MPI(MPI_Start(&req));
        if (tu_rank == SENDER) {
            TU_MPI(MPI_Pready_range(0, 1, req));
        }
        int rc = tu_wait(&req, MPI_STATUS_IGNORE, "mismatched transfer");
        if (tu_rank == RECEIVER && sbytes > TOTAL) {
            EXPECT(rc, MPI_ERR_TRUNCATE);
        } else {
            EXPECT2(rc, MPI_ERR_TRUNCATE, MPI_ERR_COUNT);
        }
        if (tu_rank == RECEIVER) {
            check_recv_buffer(round, 1);
        }
    }
    TU_MPI(MPI_Request_free(&req));
}

/* A transfer with datatypes and buffers of the two sides' choosing (all rounds, all bytes):
 * the receive buffer @p rbuf spans @p rspan bytes with GUARD guard bytes on both sides. */
typedef struct {
    const void* sbuf;
    MPI_Datatype stype;
    int sparts, scount;
    void* rbuf;
    MPI_Datatype rtype;
    int rparts, rcount;
    unsigned char* rspan; /* first guard byte */
    size_t rspan_bytes;   /* data span + 2 * GUARD */
    MPI_Info info;
    int free_types; /* MPI_Type_free both types right after the init calls */
    int accept_type_error;
    /* Optional views of the same bytes for filling and checking (MPI_BOTTOM transfers: MPICH
     * 4.0.2's MPI_Pack/MPI_Unpack reject MPI_BOTTOM, so they get relative twins). */
    void *sview, *rview;
    MPI_Datatype sview_type, rview_type;
} Typed;

static void typed_transfer(Typed* t)
{
    MPI_Request req;
    int rc;
    if (tu_rank == SENDER) {
        rc = MPI_Psend_init(t->sbuf, t->sparts, t->scount, t->stype, RECEIVER, TAG, ec, t->info,
                            &req);
    } else {
        rc =
            MPI_Precv_init(t->rbuf, t->rparts, t->rcount, t->rtype, SENDER, TAG, ec, t->info, &req);
    }
    TU_MPI(rc);
    /* Sizes of one whole transfer, taken before the types may be freed. */
    int sn = t->sparts * t->scount, rn = t->rparts * t->rcount;
    MPI_Datatype stype, rtype;
    MPI_Type_dup(t->stype, &stype);
    MPI_Type_dup(t->rtype, &rtype);
    if (t->free_types) {
        MPI_Type_free(&t->stype);
        MPI_Type_free(&t->rtype);
    }
    void* sbuf = t->sview ? t->sview : (void*)t->sbuf;
    void* rbuf = t->rview ? t->rview : t->rbuf;
    MPI_Datatype sview = t->sview ? t->sview_type : stype;
    MPI_Datatype rview = t->rview ? t->rview_type : rtype;
    for (int round = 0; round < 2 && rc == MPI_SUCCESS; ++round) {
        if (tu_rank == SENDER) {
            tu_type_fill(sbuf, sview, sn, SENDER, round);
        } else {
            memset(t->rspan, GUARD_BYTE, t->rspan_bytes);
            tu_type_set(rbuf, rview, rn, FRESH_BYTE);
        }
        TU_MPI(MPI_Start(&req));
        if (tu_rank == SENDER) {
            tu_pready_all(t->sparts, req);
        }
        rc = tu_wait(&req, MPI_STATUS_IGNORE, "typed transfer");
        if (t->accept_type_error && rc != MPI_SUCCESS) {
            EXPECT(rc, MPI_ERR_TYPE);
        } else {
            TU_MPI(rc);
        }
        if (tu_rank == RECEIVER && rc == MPI_SUCCESS) {
            tu_type_verify(rbuf, rview, rn, SENDER, round, "received data");
        }
        if (tu_rank == RECEIVER) {
            /* Holes and guards: everything outside the data is still GUARD_BYTE. */
            tu_type_set(rbuf, rview, rn, GUARD_BYTE);
            tu_verify_value(t->rspan, t->rspan_bytes, GUARD_BYTE,
                            "guards and holes of the receive buffer");
        }
    }
    MPI_Type_free(&stype);
    MPI_Type_free(&rtype);
    if (req != MPI_REQUEST_NULL) {
        TU_MPI(MPI_Request_free(&req));
    }
}

/* Equal sizes, different signatures (MPI_INT against MPI_FLOAT or 2x MPI_SHORT): erroneous but
 * not detectable by MPI in general; a byte-exact copy or MPI_ERR_TYPE are accepted. */
static void signature_mismatch(int shorts)
{
    enum { N = 1024 };
    static int sbuf[N];
    Typed t = {.sbuf = sbuf,
               .stype = MPI_INT,
               .sparts = 4,
               .scount = N / 4,
               .rbuf = g_recv + GUARD,
               .rtype = shorts ? MPI_SHORT : MPI_FLOAT,
               .rparts = 2,
               .rcount = shorts ? N : N / 2,
               .rspan = g_recv,
               .rspan_bytes = sizeof g_recv,
               .info = MPI_INFO_NULL,
               .accept_type_error = 1};
    typed_transfer(&t);
}

/* A vector datatype with holes, freed right after the init calls (legal: the requests keep
 * what they need); two rounds, byte-exact, holes untouched. */
static void freed_datatype(void)
{
    MPI_Datatype vec, elem;
    MPI_Type_vector(16, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 32 * sizeof(int), &elem);
    MPI_Type_commit(&elem);
    MPI_Type_free(&vec);
    MPI_Datatype relem;
    MPI_Type_dup(elem, &relem);
    /* 16 elements of 32 ints (128 bytes each) = TOTAL/2 ints of span, 256 data ints. */
    static int sbuf[16 * 32];
    Typed t = {.sbuf = sbuf,
               .stype = elem,
               .sparts = SPARTS,
               .scount = 16 / SPARTS,
               .rbuf = g_recv + GUARD,
               .rtype = relem,
               .rparts = RPARTS,
               .rcount = 16 / RPARTS,
               .rspan = g_recv,
               .rspan_bytes = GUARD + 16 * 32 * sizeof(int) + GUARD,
               .info = MPI_INFO_NULL,
               .free_types = 1};
    typed_transfer(&t);
}

/* A duplicate communicator freed right after the init calls (legal); two rounds. */
static void freed_comm(void)
{
    MPI_Comm c;
    MPI_Comm_dup(ec, &c);
    Pair p;
    pair_init(&p, c);
    MPI_Comm_free(&c);
    for (int round = 0; round < 2; ++round) {
        pair_start(&p);
        pair_finish(&p);
    }
    pair_free(&p);
}

/* ---- MPI_BOTTOM with struct datatypes of absolute addresses ---------------------------- */

/* One partition = one element: two blocks of @p block ints at absolute addresses base and
 * base + block + hole, each followed by @p hole untouched ints; extent 2 * (block + hole) ints,
 * so element i of the partition sequence starts at base + i * extent. */
static MPI_Datatype absolute_struct(int* base, int block, int hole, int absolute)
{
    MPI_Aint disp[2];
    MPI_Get_address(base, &disp[0]);
    MPI_Get_address(base + block + hole, &disp[1]);
    if (!absolute) { /* the relative twin: the same layout seen from base */
        disp[1] = MPI_Aint_diff(disp[1], disp[0]);
        disp[0] = 0;
    }
    int len[2] = {block, block};
    MPI_Datatype types[2] = {MPI_INT, MPI_INT}, s, r;
    MPI_Type_create_struct(2, len, disp, types, &s);
    MPI_Type_create_resized(s, disp[0], (MPI_Aint)(2 * (block + hole) * sizeof(int)), &r);
    MPI_Type_commit(&r);
    MPI_Type_free(&s);
    return r;
}

/* 4096 ints from MPI_BOTTOM, 4 send / 2 receive partitions, mpipcl_messages=4 (>= 2 internal
 * messages); with @p holes, both sides' structs leave gaps the receiver must not touch. */
static void bottom_struct(int holes)
{
    enum { N = 4096, SP = 4, RP = 2 };
    int sh = holes ? 32 : 0, rh = holes ? 64 : 0;
    int sblock = N / SP / 2, rblock = N / RP / 2;
    size_t rdata = (size_t)RP * 2 * (rblock + rh) * sizeof(int);
    unsigned char* rspan = malloc(rdata + 2 * GUARD);
    int* sbase = malloc((size_t)SP * 2 * (sblock + sh) * sizeof(int));
    int* rbase = (int*)(rspan + GUARD);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpipcl_messages", "4");
    Typed t = {.sbuf = MPI_BOTTOM,
               .stype = absolute_struct(sbase, sblock, sh, 1),
               .sparts = SP,
               .scount = 1,
               .rbuf = MPI_BOTTOM,
               .rtype = absolute_struct(rbase, rblock, rh, 1),
               .rparts = RP,
               .rcount = 1,
               .rspan = rspan,
               .rspan_bytes = rdata + 2 * GUARD,
               .info = info,
               .free_types = 1,
               .sview = sbase,
               .sview_type = absolute_struct(sbase, sblock, sh, 0),
               .rview = rbase,
               .rview_type = absolute_struct(rbase, rblock, rh, 0)};
    typed_transfer(&t);
    MPI_Type_free(&t.sview_type);
    MPI_Type_free(&t.rview_type);
    MPI_Info_free(&info);
    free(sbase);
    free(rspan);
}

/* ---- huge partition counts -------------------------------------------------------------- */

/* INT_MAX receive partitions of count 0 against one send partition of count 0: legal; init
 * may report MPI_ERR_NO_MEM (address space limited to +3 GiB), else the transfer completes and
 * the last partition arrives. */
static void huge_partitions_receive(void)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (tu_rank == RECEIVER) {
        limit_memory((size_t)3 << 30);
        rc = MPI_Precv_init(NULL, INT_MAX, 0, MPI_INT, SENDER, TAG, ec, MPI_INFO_NULL, &req);
        unlimit_memory();
        EXPECT2(rc, MPI_SUCCESS, MPI_ERR_NO_MEM);
    } else {
        TU_MPI(MPI_Psend_init(NULL, 1, 0, MPI_INT, RECEIVER, TAG, ec, MPI_INFO_NULL, &req));
    }
    int ok = rc == MPI_SUCCESS, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok) {
        limit_memory((size_t)3 << 30);
        ok = TU_MPI(MPI_Start(&req)) == MPI_SUCCESS;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all_ok) {
            TU_ABORT("a Start failed after a successful init: the pair can never complete");
        }
        if (tu_rank == SENDER) {
            TU_MPI(MPI_Pready(0, req));
        } else {
            tu_wait_arrived(req, INT_MAX - 1, "the last of INT_MAX partitions");
        }
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "INT_MAX partitions"));
        unlimit_memory();
    }
    if (req != MPI_REQUEST_NULL) {
        TU_MPI(MPI_Request_free(&req));
    }
}

/* ---- array completion calls with one failing request ------------------------------------ */

enum { F_PARTITIONED, F_ORDINARY };
enum { S_WAITALL, S_TESTALL, S_WAITSOME, S_TESTSOME, S_WAITANY, S_TESTANY };

typedef struct {
    const char* name;
    int failing, style, ignore;
} ArrayCase;

static const ArrayCase array_cases[] = {
    {"waitall_statuses_ignore_partitioned_truncate", F_PARTITIONED, S_WAITALL, 1},
    {"waitall_statuses_partitioned_truncate", F_PARTITIONED, S_WAITALL, 0},
    {"testall_statuses_ignore_partitioned_truncate", F_PARTITIONED, S_TESTALL, 1},
    {"testall_statuses_partitioned_truncate", F_PARTITIONED, S_TESTALL, 0},
    {"testsome_statuses_ignore_partitioned_truncate", F_PARTITIONED, S_TESTSOME, 1},
    {"waitsome_statuses_partitioned_truncate", F_PARTITIONED, S_WAITSOME, 0},
    {"waitany_partitioned_truncate", F_PARTITIONED, S_WAITANY, 1},
    {"testany_partitioned_truncate", F_PARTITIONED, S_TESTANY, 1},
    {"waitall_statuses_ignore_ordinary_truncate", F_ORDINARY, S_WAITALL, 1},
    {"waitall_statuses_ordinary_truncate", F_ORDINARY, S_WAITALL, 0},
    {"testall_statuses_ordinary_truncate", F_ORDINARY, S_TESTALL, 0},
    {"testsome_mixed_ordinary_truncate", F_ORDINARY, S_TESTSOME, 0},
    {"waitsome_mixed_ordinary_truncate", F_ORDINARY, S_WAITSOME, 0},
    {"testsome_statuses_ignore_ordinary_truncate", F_ORDINARY, S_TESTSOME, 1},
};

typedef struct {
    const ArrayCase* c;
    MPI_Request reqs[2]; /* [0] partitioned receive, [1] ordinary MPI_Irecv */
    MPI_Status st[2];
    int reported[2];
    int codes[2]; /* the error code reported for each request (per-request or call code) */
} ArrayRun;

/* One call of the case's completion function; records what it reports. Returns 0 when
 * nothing is left to report. */
static int array_step(ArrayRun* r)
{
    const ArrayCase* c = r->c;
    MPI_Status* st = c->ignore ? MPI_STATUSES_IGNORE : r->st;
    int fail = c->failing == F_PARTITIONED ? 0 : 1;
    int flag = 0, outcount = 0, index = MPI_UNDEFINED, indices[2];
    for (int i = 0; i < 2; ++i) {
        r->st[i].MPI_ERROR = -12345;
    }
    int rc;
    switch (c->style) {
        case S_WAITALL:
        case S_TESTALL:
            rc = c->style == S_WAITALL ? MPI_Waitall(2, r->reqs, st)
                                       : MPI_Testall(2, r->reqs, &flag, st);
            if (rc == MPI_SUCCESS && !flag && c->style == S_TESTALL) {
                return 1;
            }
            if (c->ignore) {
                expect_at(rc, MPI_ERR_TRUNCATE, MPI_ERR_IN_STATUS, c->name, __LINE__);
            } else {
                expect_at(rc, MPI_ERR_IN_STATUS, MPI_ERR_IN_STATUS, c->name, __LINE__);
                expect_at(r->st[fail].MPI_ERROR, MPI_ERR_TRUNCATE, MPI_ERR_TRUNCATE,
                          "MPI_ERROR of the failing request", __LINE__);
                expect_at(r->st[1 - fail].MPI_ERROR, MPI_SUCCESS, MPI_ERR_PENDING,
                          "MPI_ERROR of the other request", __LINE__);
                r->reported[1 - fail] = r->st[1 - fail].MPI_ERROR == MPI_SUCCESS;
            }
            r->reported[fail] = 1;
            return 0;
        case S_WAITSOME:
        case S_TESTSOME:
            rc = c->style == S_WAITSOME ? MPI_Waitsome(2, r->reqs, &outcount, indices, st)
                                        : MPI_Testsome(2, r->reqs, &outcount, indices, st);
            if (outcount == MPI_UNDEFINED) {
                TU_MPI(rc);
                return 0;
            }
            if (!CHECK(outcount >= 0 && outcount <= 2, "case %s: outcount %d", g_case, outcount)) {
                return 0;
            }
            int fail_now = 0;
            for (int k = 0; k < outcount; ++k) {
                int i = indices[k] & 1;
                CHECK(indices[k] == i, "case %s: index %d", g_case, indices[k]);
                CHECK(!r->reported[i], "case %s: request %d reported twice", g_case, i);
                r->reported[i] = 1;
                fail_now |= i == fail;
                /* MPI_ERROR is defined only when the call returns MPI_ERR_IN_STATUS. */
                r->codes[i] = rc == MPI_SUCCESS ? MPI_SUCCESS
                              : c->ignore       ? (i == fail ? MPI_ERR_TRUNCATE : MPI_SUCCESS)
                                                : r->st[k].MPI_ERROR;
            }
            int want = !fail_now ? MPI_SUCCESS : MPI_ERR_IN_STATUS;
            expect_at(rc, want, fail_now && c->ignore ? MPI_ERR_TRUNCATE : want, c->name, __LINE__);
            return 1;
        default:
            rc = c->style == S_WAITANY ? MPI_Waitany(2, r->reqs, &index, MPI_STATUS_IGNORE)
                                       : MPI_Testany(2, r->reqs, &index, &flag, MPI_STATUS_IGNORE);
            if (index == MPI_UNDEFINED) {
                TU_MPI(rc);
                return c->style == S_TESTANY && !flag;
            }
            CHECK(index == 0 || index == 1, "case %s: index %d", g_case, index);
            CHECK(!r->reported[index & 1], "case %s: request %d reported twice", g_case, index);
            r->reported[index & 1] = 1;
            r->codes[index & 1] = rc;
            return 1;
    }
}

static void run_array_case(const ArrayCase* c)
{
    int fail = c->failing == F_PARTITIONED ? 0 : 1;
    int sbytes = fail == 0 ? 2 * TOTAL : TOTAL;
    int ord[2 * ORD_INTS], ord_in[ORD_INTS + 1];
    for (int i = 0; i < 2 * ORD_INTS; ++i) {
        ord[i] = 100 + i;
    }
    if (tu_rank == SENDER) {
        MPI_Request req;
        tu_fill(g_send, (size_t)sbytes, 0, SENDER, 0);
        TU_MPI(MPI_Psend_init(g_send, SPARTS, sbytes / SPARTS, MPI_BYTE, RECEIVER, TAG, ec,
                              MPI_INFO_NULL, &req));
        TU_MPI(MPI_Start(&req));
        TU_MPI(MPI_Send(ord, fail == 1 ? 2 * ORD_INTS : ORD_INTS, MPI_INT, RECEIVER, TAG + 1, ec));
        tu_pready_all(SPARTS, req);
        int rc = tu_wait(&req, MPI_STATUS_IGNORE, "partitioned send");
        if (fail == 0) {
            EXPECT2(rc == MPI_SUCCESS ? MPI_ERR_TRUNCATE : rc, MPI_ERR_TRUNCATE, MPI_ERR_COUNT);
        } else {
            TU_MPI(rc);
        }
        TU_MPI(MPI_Request_free(&req));
        return;
    }
    ArrayRun r;
    memset(&r, 0, sizeof r);
    r.c = c;
    reset_recv_buffer();
    ord_in[ORD_INTS] = -1;
    TU_MPI(MPI_Precv_init(g_recv + GUARD, RPARTS, TOTAL / RPARTS, MPI_BYTE, SENDER, TAG, ec,
                          MPI_INFO_NULL, &r.reqs[0]));
    MPI_Request precv = r.reqs[0];
    TU_MPI(MPI_Start(&r.reqs[0]));
    TU_MPI(MPI_Irecv(ord_in, ORD_INTS, MPI_INT, SENDER, TAG + 1, ec, &r.reqs[1]));
    double deadline = tu_deadline();
    while (array_step(&r)) {
        tu_check_deadline(deadline, c->name);
    }
    if (c->style >= S_WAITSOME) {
        CHECK(r.reported[0] && r.reported[1], "case %s: completion lost (reported %d %d)", g_case,
              r.reported[0], r.reported[1]);
        expect_at(r.codes[fail], MPI_ERR_TRUNCATE, MPI_ERR_TRUNCATE,
                  "code reported for the failing request", __LINE__);
        expect_at(r.codes[1 - fail], MPI_SUCCESS, MPI_SUCCESS,
                  "code reported for the other request", __LINE__);
    }
    /* Whatever the call left incomplete completes now (an inactive request at once). */
    for (int i = 0; i < 2; ++i) {
        if (r.reqs[i] != MPI_REQUEST_NULL && !r.reported[i]) {
            int rc = tu_wait(&r.reqs[i], MPI_STATUS_IGNORE, "left-over request");
            EXPECT2(rc, MPI_SUCCESS, i == fail ? MPI_ERR_TRUNCATE : MPI_SUCCESS);
        }
    }
    CHECK(r.reqs[1] == MPI_REQUEST_NULL, "case %s: ordinary request not freed", g_case);
    CHECK(r.reqs[0] == precv, "case %s: partitioned handle changed", g_case);
    check_recv_buffer(0, fail == 0);
    if (fail == 0) {
        for (int i = 0; i < ORD_INTS; ++i) {
            CHECK(ord_in[i] == ord[i], "case %s: ordinary int %d = %d", g_case, i, ord_in[i]);
        }
    }
    CHECK(ord_in[ORD_INTS] == -1, "case %s: ordinary receive wrote past its buffer", g_case);
    TU_MPI(MPI_Request_free(&r.reqs[0]));
}

/* ---- calls after MPI_Finalize ----------------------------------------------------------- */

/* MPI may end the process itself inside a call after MPI_Finalize (Open MPI prints "called
 * after MPI_FINALIZE was invoked" and exits): that is MPI's documented abort, accepted. */
static void exit_inside_call(void)
{
    if (strcmp(g_phase, "the call after MPI_Finalize") == 0) {
        fprintf(stderr, "[rank %d] case %s: MPI ended the process inside the call (MPI abort)\n",
                tu_rank, g_case);
        _exit(0);
    }
}

enum { AF_START, AF_PARRIVED, AF_PREADY, AF_FREE, AF_INIT, AF_TEST, AF_PCOLL };

/* A pair completes a round and is left allocated; after MPI_Finalize each call on it must
 * return an error (never success, never a crash). Returns the exit code. */
static int after_finalize(int what)
{
    Pair p;
    pair_init(&p, MPI_COMM_WORLD);
    pair_start(&p);
    pair_finish(&p);
    tu_transfer_check(ec, SENDER, RECEIVER, TAG + 2, 4, 8, TOTAL, 7);
    MPI_Comm_free(&ec);
    g_phase = "MPI_Finalize with an allocated partitioned request";
    int code = tu_finish();
    g_phase = "the call after MPI_Finalize";
    atexit(exit_inside_call);
    int rc = MPI_SUCCESS, flag = 0;
    const char* call = "";
    switch (what) {
        case AF_START:
            call = "MPI_Start";
            rc = MPI_Start(&p.req);
            break;
        case AF_PARRIVED:
            call = "MPI_Parrived";
            rc = tu_rank == RECEIVER ? MPI_Parrived(p.req, 0, &flag) : MPI_ERR_OTHER;
            break;
        case AF_PREADY:
            call = "MPI_Pready";
            rc = tu_rank == SENDER ? MPI_Pready(0, p.req) : MPI_ERR_OTHER;
            break;
        case AF_FREE:
            call = "MPI_Request_free";
            rc = MPI_Request_free(&p.req);
            break;
        case AF_TEST:
            call = "MPI_Test";
            rc = MPI_Test(&p.req, &flag, MPI_STATUS_IGNORE);
            break;
        default: {
            MPI_Request req = MPI_REQUEST_NULL;
            call = "MPI_Psend_init";
            rc = MPI_Psend_init(g_send, 2, 4, MPI_BYTE, 1 - tu_rank, TAG, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &req);
            break;
        }
    }
    g_phase = "done";
    if (rc == MPI_SUCCESS) {
        fprintf(stderr, "[rank %d] case %s: %s after MPI_Finalize returned MPI_SUCCESS\n", tu_rank,
                g_case, call);
        code = 1;
    }
    return code;
}

/* ---- partitioned collectives ------------------------------------------------------------ */

/* MPI_Pready and MPI_Parrived on an allreduce request (inactive: its round completed) after
 * MPI_Finalize return an error class, as on point-to-point requests. */
static int after_finalize_pcoll(void)
{
    int in[SPARTS] = {0};
    int out[SPARTS] = {0};
    MPI_Request r = MPI_REQUEST_NULL;
    TU_MPI(MPIX_Pallreduce_init(in, out, SPARTS, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                &r));
    TU_MPI(MPI_Start(&r));
    TU_MPI(MPI_Pready_range(0, SPARTS - 1, r));
    TU_MPI(tu_wait(&r, MPI_STATUS_IGNORE, "the allreduce before MPI_Finalize"));
    MPI_Comm_free(&ec);
    g_phase = "MPI_Finalize with an allocated partitioned collective request";
    int code = tu_finish();
    g_phase = "the call after MPI_Finalize";
    atexit(exit_inside_call);
    int flag = 0;
    const int parrived = MPI_Parrived(r, 0, &flag);
    const int pready = MPI_Pready(0, r);
    g_phase = "done";
    if (parrived == MPI_SUCCESS || pready == MPI_SUCCESS) {
        fprintf(stderr,
                "[rank %d] case %s: after MPI_Finalize MPI_Parrived returned %d, "
                "MPI_Pready %d (MPI_SUCCESS is 0)\n",
                tu_rank, g_case, parrived, pready);
        code = 1;
    }
    return code;
}

enum {
    PC_BCAST_ROOT_NEGATIVE,
    PC_BCAST_ROOT_SIZE,
    PC_REDUCE_ROOT_SIZE,
    PC_BCAST_PARTITIONS_ZERO,
    PC_ALLREDUCE_PARTITIONS_NEGATIVE,
    PC_BCAST_REQUEST_NULL,
    PC_ALLREDUCE_REQUEST_NULL,
    PC_REDUCE_OP_NULL,
    PC_REDUCE_SUM_BYTE,
    PC_ALLREDUCE_LAND_DOUBLE,
    PC_ALLREDUCE_MAXLOC_INT,
    PC_ALLREDUCE_REPLACE,
    PC_ALLREDUCE_SUM_DERIVED_BYTES,
    PC_REDUCE_IN_PLACE_NON_ROOT,
    PC_BCAST_PREADY_NON_ROOT,
    PC_BCAST_PARRIVED_ROOT,
    PC_REDUCE_PARRIVED_NON_ROOT,
};

/* The inits with an op the standard does not define on the datatype (MPI_ERR_OP), and
 * MPI_IN_PLACE at a reduce's non-root (MPI_ERR_BUFFER: every rank names the next as root). */
static int collective_op_init(int what, int size, int* data, int* out, MPI_Request* rp)
{
    double d[SPARTS] = {0};
    double dout[SPARTS] = {0};
    switch (what) {
        case PC_REDUCE_SUM_BYTE:
            return MPIX_Preduce_init(data, out, SPARTS, 1, MPI_BYTE, MPI_SUM, 0, ec, MPI_INFO_NULL,
                                     rp);
        case PC_ALLREDUCE_LAND_DOUBLE:
            return MPIX_Pallreduce_init(d, dout, SPARTS, 1, MPI_DOUBLE, MPI_LAND, ec, MPI_INFO_NULL,
                                        rp);
        case PC_ALLREDUCE_MAXLOC_INT:
            return MPIX_Pallreduce_init(data, out, SPARTS / 2, 1, MPI_INT, MPI_MAXLOC, ec,
                                        MPI_INFO_NULL, rp);
        case PC_ALLREDUCE_REPLACE:
            return MPIX_Pallreduce_init(data, out, SPARTS, 1, MPI_INT, MPI_REPLACE, ec,
                                        MPI_INFO_NULL, rp);
        case PC_ALLREDUCE_SUM_DERIVED_BYTES: {
            MPI_Datatype bytes;
            MPI_Type_contiguous(4, MPI_BYTE, &bytes);
            MPI_Type_commit(&bytes);
            const int rc =
                MPIX_Pallreduce_init(data, out, SPARTS, 1, bytes, MPI_SUM, ec, MPI_INFO_NULL, rp);
            MPI_Type_free(&bytes);
            return rc;
        }
        default: /* PC_REDUCE_IN_PLACE_NON_ROOT */
            return MPIX_Preduce_init(MPI_IN_PLACE, out, SPARTS, 1, MPI_INT, MPI_SUM,
                                     (tu_rank + 1) % size, ec, MPI_INFO_NULL, rp);
    }
}

/* An init call that must fail with @p cls and leave the request handle alone. */
static void collective_init_fails(int what, int cls)
{
    int size = 0;
    MPI_Comm_size(ec, &size);
    int data[SPARTS] = {0};
    int out[SPARTS] = {0};
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Request* rp = &r;
    int rc = MPI_SUCCESS;
    switch (what) {
        case PC_BCAST_ROOT_NEGATIVE:
        case PC_BCAST_ROOT_SIZE:
            rc = MPIX_Pbcast_init(data, SPARTS, 1, MPI_INT, what == PC_BCAST_ROOT_SIZE ? size : -1,
                                  ec, MPI_INFO_NULL, rp);
            break;
        case PC_REDUCE_ROOT_SIZE:
            rc = MPIX_Preduce_init(data, out, SPARTS, 1, MPI_INT, MPI_SUM, size, ec, MPI_INFO_NULL,
                                   rp);
            break;
        case PC_BCAST_PARTITIONS_ZERO:
            rc = MPIX_Pbcast_init(data, 0, 1, MPI_INT, 0, ec, MPI_INFO_NULL, rp);
            break;
        case PC_ALLREDUCE_PARTITIONS_NEGATIVE:
            rc = MPIX_Pallreduce_init(data, out, -3, 1, MPI_INT, MPI_SUM, ec, MPI_INFO_NULL, rp);
            break;
        case PC_BCAST_REQUEST_NULL:
            rc = MPIX_Pbcast_init(data, SPARTS, 1, MPI_INT, 0, ec, MPI_INFO_NULL, NULL);
            break;
        case PC_ALLREDUCE_REQUEST_NULL:
            rc = MPIX_Pallreduce_init(data, out, SPARTS, 1, MPI_INT, MPI_SUM, ec, MPI_INFO_NULL,
                                      NULL);
            break;
        case PC_REDUCE_OP_NULL:
            rc = MPIX_Preduce_init(data, out, SPARTS, 1, MPI_INT, MPI_OP_NULL, 0, ec, MPI_INFO_NULL,
                                   rp);
            break;
        default:
            rc = collective_op_init(what, size, data, out, rp);
            break;
    }
    EXPECT(rc, cls);
    CHECK(r == MPI_REQUEST_NULL, "case %s: a failed init wrote the request handle", g_case);
}

/* A valid collective on which one rank makes a call its role does not allow; then the round
 * completes normally and the data is checked. */
static void collective_wrong_role(int what)
{
    const int bcast = what != PC_REDUCE_PARRIVED_NON_ROOT;
    int data[SPARTS];
    int out[SPARTS];
    for (int i = 0; i < SPARTS; ++i) {
        data[i] = tu_rank == 0 || !bcast ? 100 + i : -1; /* bcast: only the root's counts */
        out[i] = -1;
    }
    MPI_Request r = MPI_REQUEST_NULL;
    if (bcast) {
        TU_MPI(MPIX_Pbcast_init(data, SPARTS, 1, MPI_INT, 0, ec, MPI_INFO_NULL, &r));
    } else {
        TU_MPI(MPIX_Preduce_init(data, out, SPARTS, 1, MPI_INT, MPI_SUM, 0, ec, MPI_INFO_NULL, &r));
    }
    TU_MPI(MPI_Start(&r));
    int flag = 7;
    if (what == PC_BCAST_PREADY_NON_ROOT && tu_rank == 1) {
        EXPECT(MPI_Pready(0, r), MPI_ERR_REQUEST);
        EXPECT(MPI_Pready_range(0, SPARTS - 1, r), MPI_ERR_REQUEST);
    } else if ((what == PC_BCAST_PARRIVED_ROOT && tu_rank == 0) ||
               (what == PC_REDUCE_PARRIVED_NON_ROOT && tu_rank == 1)) {
        EXPECT(MPI_Parrived(r, 0, &flag), MPI_ERR_REQUEST);
        CHECK(flag == 7, "case %s: a failed MPI_Parrived wrote flag", g_case);
    }
    if (!bcast || tu_rank == 0) {
        TU_MPI(MPI_Pready_range(0, SPARTS - 1, r));
    }
    TU_MPI(tu_wait(&r, MPI_STATUS_IGNORE, "the collective after the erroneous call"));
    for (int i = 0; i < SPARTS; ++i) {
        if (bcast) {
            CHECK(data[i] == 100 + i, "case %s: bcast element %d is %d", g_case, i, data[i]);
        } else if (tu_rank == 0) {
            CHECK(out[i] == tu_size * (100 + i), "case %s: reduce element %d is %d", g_case, i,
                  out[i]);
        }
    }
    TU_MPI(MPI_Request_free(&r));
}

static void c_collective(int what)
{
    static const int init_class[] = {
        [PC_BCAST_ROOT_NEGATIVE] = MPI_ERR_ROOT,
        [PC_BCAST_ROOT_SIZE] = MPI_ERR_ROOT,
        [PC_REDUCE_ROOT_SIZE] = MPI_ERR_ROOT,
        [PC_BCAST_PARTITIONS_ZERO] = MPI_ERR_ARG,
        [PC_ALLREDUCE_PARTITIONS_NEGATIVE] = MPI_ERR_ARG,
        [PC_BCAST_REQUEST_NULL] = MPI_ERR_ARG,
        [PC_ALLREDUCE_REQUEST_NULL] = MPI_ERR_ARG,
        [PC_REDUCE_OP_NULL] = MPI_ERR_OP,
        [PC_REDUCE_SUM_BYTE] = MPI_ERR_OP,
        [PC_ALLREDUCE_LAND_DOUBLE] = MPI_ERR_OP,
        [PC_ALLREDUCE_MAXLOC_INT] = MPI_ERR_OP,
        [PC_ALLREDUCE_REPLACE] = MPI_ERR_OP,
        [PC_ALLREDUCE_SUM_DERIVED_BYTES] = MPI_ERR_OP,
        [PC_REDUCE_IN_PLACE_NON_ROOT] = MPI_ERR_BUFFER,
    };
    if (what <= PC_REDUCE_IN_PLACE_NON_ROOT) {
        collective_init_fails(what, init_class[what]);
    } else {
        collective_wrong_role(what);
    }
}

/* The partitioned-collective cases (group "coll"). */
typedef struct {
    const char* name;
    int what;
} CollCase;

static const CollCase coll_cases[] = {
    {.name = "pbcast_root_negative", .what = PC_BCAST_ROOT_NEGATIVE},
    {.name = "pbcast_root_comm_size", .what = PC_BCAST_ROOT_SIZE},
    {.name = "preduce_root_comm_size", .what = PC_REDUCE_ROOT_SIZE},
    {.name = "pbcast_partitions_zero", .what = PC_BCAST_PARTITIONS_ZERO},
    {.name = "pallreduce_partitions_negative", .what = PC_ALLREDUCE_PARTITIONS_NEGATIVE},
    {.name = "pbcast_request_null_pointer", .what = PC_BCAST_REQUEST_NULL},
    {.name = "pallreduce_request_null_pointer", .what = PC_ALLREDUCE_REQUEST_NULL},
    {.name = "preduce_op_null", .what = PC_REDUCE_OP_NULL},
    {.name = "preduce_sum_byte", .what = PC_REDUCE_SUM_BYTE},
    {.name = "pallreduce_land_double", .what = PC_ALLREDUCE_LAND_DOUBLE},
    {.name = "pallreduce_maxloc_int", .what = PC_ALLREDUCE_MAXLOC_INT},
    {.name = "pallreduce_replace", .what = PC_ALLREDUCE_REPLACE},
    {.name = "pallreduce_sum_derived_bytes", .what = PC_ALLREDUCE_SUM_DERIVED_BYTES},
    {.name = "preduce_in_place_non_root", .what = PC_REDUCE_IN_PLACE_NON_ROOT},
    {.name = "pbcast_pready_non_root", .what = PC_BCAST_PREADY_NON_ROOT},
    {.name = "pbcast_parrived_root", .what = PC_BCAST_PARRIVED_ROOT},
    {.name = "preduce_parrived_non_root", .what = PC_REDUCE_PARRIVED_NON_ROOT},
};

/* ---- the case table --------------------------------------------------------------------- */

typedef struct {
    const char* name;
    void (*run)(int);
    int arg;
} Case;

static void c_stale(int what) { stale_handle(what); }
static void c_free_active(int side) { active_request_call(side, L_FREE, MPI_ERR_REQUEST); }
static void c_cancel_active(int side) { active_request_call(side, L_CANCEL, MPI_ERR_REQUEST); }
static void c_start_active(int side) { active_request_call(side, L_START, MPI_ERR_REQUEST); }
static void c_startall_active(int side) { active_request_call(side, L_STARTALL, MPI_ERR_REQUEST); }
static void c_null_flag(int what) { active_request_call(RECEIVER, what, MPI_ERR_ARG); }
static void c_free_unstarted_send(int bytes) { free_unstarted(SENDER, bytes); }
static void c_free_unstarted_recv(int bytes) { free_unstarted(RECEIVER, bytes); }
static void c_size(int sbytes) { size_mismatch(sbytes); }
static void c_signature(int shorts) { signature_mismatch(shorts); }
static void c_freed(int comm)
{
    if (comm) {
        freed_comm();
    } else {
        freed_datatype();
    }
}
static void c_bottom(int holes) { bottom_struct(holes); }
static void c_huge(int unused)
{
    (void)unused;
    huge_partitions_receive();
}
static void c_unknown_info(int unused)
{
    (void)unused;
    unknown_info_keys();
}
static void c_pready_foreign(int kind) { pready_on_foreign(kind); }

static const Case cases[] = {
    {"pready_request_null", c_pready_foreign, 0},
    {"pready_on_ordinary_irecv", c_pready_foreign, 1},
    {"info_unknown_keys_ignored", c_unknown_info, 0},
    {"stale_handle_never_started", c_stale, 0},
    {"stale_handle_after_round", c_stale, 1},
    {"free_active_send", c_free_active, SENDER},
    {"free_active_recv", c_free_active, RECEIVER},
    {"cancel_active_send", c_cancel_active, SENDER},
    {"cancel_active_recv", c_cancel_active, RECEIVER},
    {"start_active_send", c_start_active, SENDER},
    {"start_active_recv", c_start_active, RECEIVER},
    {"startall_active_send", c_startall_active, SENDER},
    {"test_null_flag", c_null_flag, L_TEST_NULL_FLAG},
    {"testall_null_flag", c_null_flag, L_TESTALL_NULL_FLAG},
    {"request_get_status_null_flag", c_null_flag, L_GET_STATUS_NULL_FLAG},
    {"free_unstarted_send_same_size", c_free_unstarted_send, TOTAL},
    {"free_unstarted_send_other_size", c_free_unstarted_send, 64},
    {"free_unstarted_recv_same_size", c_free_unstarted_recv, TOTAL},
    {"free_unstarted_recv_other_size", c_free_unstarted_recv, 64},
    {"size_mismatch_truncate", c_size, 2 * TOTAL},
    {"size_mismatch_short_send", c_size, TOTAL / 2},
    {"signature_mismatch_int_float", c_signature, 0},
    {"signature_mismatch_int_2short", c_signature, 1},
    {"freed_datatype_after_init", c_freed, 0},
    {"freed_comm_after_init", c_freed, 1},
    {"bottom_struct_absolute", c_bottom, 0},
    {"bottom_struct_absolute_holes", c_bottom, 1},
    {"huge_partitions_count0_recv", c_huge, 0},
};

typedef struct {
    const char* name;
    int what;
} FinalizeCase;

static const FinalizeCase finalize_cases[] = {
    {"after_finalize_start", AF_START},     {"after_finalize_parrived", AF_PARRIVED},
    {"after_finalize_pready", AF_PREADY},   {"after_finalize_request_free", AF_FREE},
    {"after_finalize_psend_init", AF_INIT}, {"after_finalize_test", AF_TEST},
    {"after_finalize_pcoll", AF_PCOLL},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The entry named @p name in a table of structs that begin with their name, or NULL. */
static const void* find_case(const void* table, size_t n, size_t stride, const char* name)
{
    for (size_t i = 0; i < n; ++i) {
        const void* entry = (const char*)table + i * stride;
        if (strcmp(*(const char* const*)entry, name) == 0) {
            return entry;
        }
    }
    return NULL;
}
#define FIND(table, name) find_case((table), COUNT_OF(table), sizeof((table)[0]), (name))

static void run_init_entry(const void* e) { run_init_case(e); }
static void run_pready_entry(const void* e) { run_pready_case(e); }
static void run_parrived_entry(const void* e) { run_parrived_case(e); }
static void run_array_entry(const void* e) { run_array_case(e); }
static void run_coll_entry(const void* e) { c_collective(((const CollCase*)e)->what); }
static void run_misc_entry(const void* e) { ((const Case*)e)->run(((const Case*)e)->arg); }

/* The case tables; "@name" on the command line runs every case of one, in one launch. */
typedef struct {
    const char* name;
    const void* table;
    size_t n, stride;
    void (*run)(const void* entry);
} Group;
#define GROUP(name, table, run)                               \
    {                                                         \
        name, table, COUNT_OF(table), sizeof((table)[0]), run \
    }
static const Group groups[] = {
    GROUP("init", init_cases, run_init_entry),
    GROUP("pready", pready_cases, run_pready_entry),
    GROUP("parrived", parrived_cases, run_parrived_entry),
    GROUP("array", array_cases, run_array_entry),
    GROUP("coll", coll_cases, run_coll_entry),
    GROUP("misc", cases, run_misc_entry),
};

static int g_ran, g_skipped;

/* One case: the erroneous call, then a fresh transfer on the same communicator and tag and
 * one on MPI_COMM_WORLD (the library still works). Each case has its own alarm. */
static void run_case(const Group* g, const void* entry)
{
    g_case = *(const char* const*)entry;
    g_phase = "the case";
    g_skip = 0;
    alarm(CASE_ALARM_S);
    g->run(entry);
    g_phase = "the fresh transfer after the case";
    tu_transfer_check(ec, SENDER, RECEIVER, TAG, 4, 8, TOTAL, 3);
    tu_transfer_check(MPI_COMM_WORLD, RECEIVER, SENDER, TAG, 3, 1, 3 * 1024, 4);
    ++g_ran;
    if (g_skip) {
        ++g_skipped;
        if (tu_rank == 0) {
            fprintf(stderr, "SKIP: case %s does not apply to this MPI\n", g_case);
        }
    }
}

/* Runs a case name or "@group"; returns 0 if there is no such case or group. */
static int run_arg(const char* arg)
{
    for (size_t i = 0; i < COUNT_OF(groups); ++i) {
        const Group* g = &groups[i];
        if (arg[0] == '@' && strcmp(arg + 1, g->name) == 0) {
            for (size_t k = 0; k < g->n; ++k) {
                run_case(g, (const char*)g->table + k * g->stride);
            }
            return 1;
        }
        const void* e = find_case(g->table, g->n, g->stride, arg);
        if (e) {
            run_case(g, e);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    if (argc < 2) {
        if (tu_rank == 0) {
            fprintf(stderr, "usage: %s <case>|@<group>... (see docs/errors.md)\n", argv[0]);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    install_watchdogs();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &ec);
    /* A case that finalizes MPI itself runs alone. */
    const FinalizeCase* f = FIND(finalize_cases, argv[1]);
    if (f && argc == 2) {
        g_case = f->name;
        g_phase = "the case";
        alarm(CASE_ALARM_S);
        return f->what == AF_PCOLL ? after_finalize_pcoll() : after_finalize(f->what);
    }
    for (int i = 1; i < argc; ++i) {
        if (!run_arg(argv[i])) {
            fprintf(stderr, "unknown case or group %s%s\n", argv[i],
                    FIND(finalize_cases, argv[i]) ? " (an after_finalize case runs alone)" : "");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Comm_free(&ec);
    g_case = "(all named)";
    g_phase = "MPI_Finalize";
    alarm(CASE_ALARM_S);
    int code = tu_finish();
    if (code == 0 && g_skipped == g_ran) {
        return TU_SKIP_CODE;
    }
    return code;
}
