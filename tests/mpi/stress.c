/* SPDX-License-Identifier: BSD-3-Clause */
/* Randomized stress of partitioned transfers (docs/errors.md, "Randomized stress"): for a time
 * budget, plans of several concurrent transfers between 2-4 ranks with random partition counts
 * (1-4096, sender != receiver), datatypes (contiguous, vector, struct with holes, MPI_BOTTOM
 * with absolute addresses), 1-16 Pready threads, Pready orders, backends (info key per request)
 * and completion styles. Every byte, every hole and guard byte, every status and every
 * MPI_Parrived answer of 1 is checked.
 *   stress [--seconds S | --minutes M] [--seed N] [--max-bytes B] [--bottom 0|1] [--plan P]
 *          [--xfers MASK] [--backends MASK]
 * (default: 4 s, seed 1, 1 MiB, MPI_BOTTOM sides drawn; --plan P: only plan P of the seed's
 * sequence, again and again, to replay a failure; --xfers MASK: of its transfers only those
 * whose bit (1 << index) is set; --backends MASK: draw only the backend kinds whose bit is set,
 * 1 persistent, 2 rma, 4 no key (MPIPCL_BACKEND), 8 mixed). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define MAX_XFERS 6
#define MAX_THREADS 16
#define NCOMMS 3
#define GUARD 32
#define SENTINEL 0xD7
#define WAIT_S 30.0
#define PROGRESS_S 10.0

enum { L_CONTIG, L_VECTOR, L_STRUCT_HOLES, L_KINDS };
enum { B_PERSISTENT, B_RMA, B_DEFAULT, B_MIXED, B_KINDS };
static const char* const backend_names[B_KINDS] = {"persistent", "rma", "default(env)", "mixed"};
enum { O_IN_ORDER, O_REVERSE, O_RANDOM, O_RANGE, O_LIST, O_KINDS };
enum {
    C_WAIT,
    C_TEST,
    C_WAITALL,
    C_TESTALL,
    C_TESTSOME,
    C_WAITSOME,
    C_WAITANY,
    C_TESTANY,
    C_KINDS
};

/* ---- random numbers: one stream shared by all ranks (the plan), one per rank (local) ---- */

typedef struct {
    uint64_t s;
} Rng;

static uint64_t rng_next(Rng* r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static int rng_int(Rng* r, int lo, int hi)
{
    return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

static void rng_shuffle(Rng* r, int* a, int n)
{
    for (int i = n - 1; i > 0; --i) {
        int j = rng_int(r, 0, i);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ---- one side of a transfer: layout, buffer, the datatype given to the init call -------- */

typedef struct {
    int layout, ints, bottom; /* ints of data per element */
    int parts, count;
    MPI_Datatype rel;  /* element layout relative to the buffer */
    MPI_Datatype pass; /* rel, or a struct of absolute addresses used with MPI_BOTTOM */
    MPI_Aint extent;
    unsigned char* mem; /* GUARD + span + GUARD */
    size_t mem_bytes;
    unsigned char* buf;
} Side;

typedef struct {
    int id; /* pattern owner: src * MAX_XFERS + index, so that swapped transfers show */
    int src, dst, comm, tag, backend, sbackend, rbackend;
    int threads, order;
    Side s, r;
    size_t bytes; /* data bytes per round */
    MPI_Request req;
    unsigned char* arrived; /* receiver: partitions already reported and verified this round */
    int bad;                /* this rank saw a failure on this transfer this round */
} Xfer;

typedef struct {
    Xfer x[MAX_XFERS];
    int n, rounds;
} Plan;

static MPI_Comm g_comms[NCOMMS + 1];
static Rng g_local;
static int g_plan_no;
static unsigned long long g_seed;
static int g_bottom = 1;           /* draw MPI_BOTTOM sides (--bottom 0: never) */
static int g_only_plan = -1;       /* --plan P: replay plan P only */
static unsigned g_xfer_mask = ~0u; /* --xfers MASK: keep these transfers of a plan */
/* --backends MASK: draw only these backend kinds (bit 1 << B_*); the default keeps all. */
static unsigned g_backend_mask = (1u << B_KINDS) - 1;

/* Maps a drawn kind onto the allowed ones (identity when all are allowed, so the plans of a
 * seed stay the same). */
static int allowed_backend(int drawn)
{
    int allowed[B_KINDS], n = 0;
    for (int b = 0; b < B_KINDS; ++b) {
        if (g_backend_mask & (1u << b)) {
            allowed[n++] = b;
        }
    }
    if ((g_backend_mask & (1u << drawn)) || n == 0) {
        return drawn;
    }
    return allowed[drawn % n];
}

typedef struct {
    long long rounds, bytes, parrived, failures, rma; /* rma: rounds the pair ran over rma */
} Stats;
static Stats g_stats[B_KINDS];

static int lcm_fits(long long a, long long b, long long cap, long long* out)
{
    long long x = a, y = b;
    while (y) {
        long long t = x % y;
        x = y;
        y = t;
    }
    long long l = a / x * b;
    *out = l;
    return l <= cap;
}

static int draw_parts(Rng* r)
{
    switch (rng_int(r, 0, 3)) {
        case 0:
            return rng_int(r, 1, 16);
        case 1:
            return 1 << rng_int(r, 0, 12);
        case 2:
            return rng_int(r, 1, 256);
        default:
            return rng_int(r, 1, 4096);
    }
}

static MPI_Datatype make_layout(int layout, int ints)
{
    MPI_Datatype t, r;
    if (layout == L_CONTIG) {
        MPI_Type_contiguous(ints, MPI_INT, &t);
    } else if (layout == L_VECTOR) {
        MPI_Type_vector(ints, 1, 2, MPI_INT, &t);
    } else {
        /* A leading hole, two blocks with a hole between them, a trailing hole. */
        int a = (ints + 1) / 2, b = ints - a;
        int len[2] = {a, b};
        MPI_Aint disp[2] = {(MPI_Aint)sizeof(int), (MPI_Aint)((a + 2) * sizeof(int))};
        MPI_Datatype types[2] = {MPI_INT, MPI_INT};
        MPI_Type_create_struct(b ? 2 : 1, len, disp, types, &r);
        MPI_Type_create_resized(r, 0, (MPI_Aint)((ints + 4) * sizeof(int)), &t);
        MPI_Type_free(&r);
    }
    MPI_Type_commit(&t);
    return t;
}

/* Buffer and datatypes of a side (called on the rank that owns it). */
static void side_setup(Side* s)
{
    s->rel = make_layout(s->layout, s->ints);
    MPI_Aint lb;
    MPI_Type_get_extent(s->rel, &lb, &s->extent);
    size_t span = (size_t)s->parts * (size_t)s->count * (size_t)s->extent + (size_t)s->extent;
    s->mem_bytes = span + 2 * GUARD;
    s->mem = malloc(s->mem_bytes);
    s->buf = s->mem + GUARD;
    s->pass = s->rel;
    if (s->bottom) {
        MPI_Aint base;
        MPI_Get_address(s->buf, &base);
        int one = 1;
        MPI_Datatype st;
        MPI_Type_create_struct(1, &one, &base, &s->rel, &st);
        MPI_Type_create_resized(st, base, s->extent, &s->pass);
        MPI_Type_commit(&s->pass);
        MPI_Type_free(&st);
    }
}

static void side_free(Side* s)
{
    if (s->pass != s->rel) {
        MPI_Type_free(&s->pass);
    }
    MPI_Type_free(&s->rel);
    free(s->mem);
}

/* Draws the whole plan from the shared stream (every rank draws the same). */
static void draw_plan(Rng* r, Plan* p, long long max_bytes)
{
    static const int ints_choice[] = {1, 2, 3, 4, 6, 8};
    p->n = rng_int(r, 1, MAX_XFERS);
    p->rounds = rng_int(r, 1, 3);
    for (int i = 0; i < p->n; ++i) {
        Xfer* x = &p->x[i];
        memset(x, 0, sizeof *x);
        x->src = rng_int(r, 0, tu_size - 1);
        x->id = x->src * MAX_XFERS + i;
        x->dst = (x->src + rng_int(r, 1, tu_size - 1)) % tu_size;
        x->comm = rng_int(r, 0, NCOMMS);
        x->tag = rng_int(r, 0, 3);
        x->backend = allowed_backend(rng_int(r, 0, B_KINDS - 1));
        x->sbackend = x->backend == B_MIXED ? B_RMA : x->backend;
        x->rbackend = x->backend == B_MIXED ? B_PERSISTENT : x->backend;
        long long cap = rng_int(r, 0, 7) == 0 ? max_bytes : max_bytes / 8;
        long long l = 0;
        for (int tries = 0;; ++tries) {
            x->s.ints = ints_choice[rng_int(r, 0, 5)];
            x->r.ints = ints_choice[rng_int(r, 0, 5)];
            x->s.parts = draw_parts(r);
            x->r.parts = draw_parts(r);
            if (x->s.parts == x->r.parts) {
                continue;
            }
            if (lcm_fits((long long)x->s.parts * x->s.ints, (long long)x->r.parts * x->r.ints,
                         cap / (long long)sizeof(int), &l) ||
                tries > 1000) {
                break;
            }
        }
        if (l * (long long)sizeof(int) > cap) { /* fallback: 3 / 2 partitions */
            x->s.parts = 3;
            x->r.parts = 2;
            x->s.ints = x->r.ints = 1;
            l = 6;
        }
        long long mult_max = cap / (l * (long long)sizeof(int));
        int mult = mult_max >= 4 ? 4 : mult_max < 1 ? 1 : (int)mult_max;
        long long ints = l * rng_int(r, 1, mult);
        x->s.count = (int)(ints / ((long long)x->s.parts * x->s.ints));
        x->r.count = (int)(ints / ((long long)x->r.parts * x->r.ints));
        x->bytes = (size_t)ints * sizeof(int);
        x->s.layout = rng_int(r, 0, L_KINDS - 1);
        x->r.layout = rng_int(r, 0, L_KINDS - 1);
        x->s.bottom = rng_int(r, 0, 4) == 0 && g_bottom;
        x->r.bottom = rng_int(r, 0, 4) == 0 && g_bottom;
        x->threads = rng_int(r, 1, MAX_THREADS);
        if (x->threads > x->s.parts) {
            x->threads = x->s.parts;
        }
        x->order = rng_int(r, 0, O_KINDS - 1);
        x->req = MPI_REQUEST_NULL;
    }
}

static void describe(const Xfer* x, char* out, size_t n)
{
    snprintf(out, n,
             "seed %llu plan %d: %d->%d comm %d tag %d backend %s, send %dx%d of %d-int layout "
             "%d%s, recv %dx%d of %d-int layout %d%s, %d threads, order %d, %zu bytes",
             g_seed, g_plan_no, x->src, x->dst, x->comm, x->tag, backend_names[x->backend],
             x->s.parts, x->s.count, x->s.ints, x->s.layout, x->s.bottom ? " MPI_BOTTOM" : "",
             x->r.parts, x->r.count, x->r.ints, x->r.layout, x->r.bottom ? " MPI_BOTTOM" : "",
             x->threads, x->order, x->bytes);
}

static void fail(Xfer* x, const char* what)
{
    char d[512];
    describe(x, d, sizeof d);
    tu_check(0, __FILE__, __LINE__, "%s (%s)", what, d);
    x->bad = 1;
}

/* fail() with the error class and string of @p rc. */
static void fail_rc(Xfer* x, const char* call, int rc)
{
    char text[MPI_MAX_ERROR_STRING], msg[MPI_MAX_ERROR_STRING + 64];
    int len = 0, cls = -1;
    MPI_Error_class(rc, &cls);
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) {
        snprintf(text, sizeof text, "?");
    }
    snprintf(msg, sizeof msg, "%s failed: class %d, %s", call, cls, text);
    fail(x, msg);
}

/* ---- Pready threads --------------------------------------------------------------------- */

typedef struct {
    Xfer* x;
    int* parts; /* this thread's partitions */
    int n;
    int order;
    pthread_t tid;
} Worker;

static void* pready_worker(void* arg)
{
    Worker* w = arg;
    int rc = MPI_SUCCESS;
    switch (w->order) {
        case O_RANGE: /* parts is a contiguous ascending chunk: one or two ranges */
            if (w->n > 1) {
                int mid = w->n / 2;
                rc = MPI_Pready_range(w->parts[mid], w->parts[w->n - 1], w->x->req);
                if (rc == MPI_SUCCESS) {
                    rc = MPI_Pready_range(w->parts[0], w->parts[mid - 1], w->x->req);
                }
            } else {
                rc = MPI_Pready_range(w->parts[0], w->parts[0], w->x->req);
            }
            break;
        case O_LIST:
            rc = MPI_Pready_list(w->n, w->parts, w->x->req);
            break;
        default:
            for (int i = 0; i < w->n && rc == MPI_SUCCESS; ++i) {
                rc = MPI_Pready(w->parts[i], w->x->req);
            }
            break;
    }
    if (rc != MPI_SUCCESS) {
        fail_rc(w->x, "MPI_Pready*", rc);
    }
    return NULL;
}

/* Splits the send partitions among the threads in the transfer's order and starts them. */
static int start_workers(Xfer* x, Worker* w, int* parts, Rng* r)
{
    int n = x->s.parts, t = x->threads;
    for (int i = 0; i < n; ++i) {
        parts[i] = i;
    }
    if (x->order == O_REVERSE) {
        for (int i = 0; i < n; ++i) {
            parts[i] = n - 1 - i;
        }
    } else if (x->order == O_RANDOM || x->order == O_LIST) {
        rng_shuffle(r, parts, n);
    }
    int at = 0;
    for (int k = 0; k < t; ++k) {
        int len = n / t + (k < n % t ? 1 : 0);
        w[k].x = x;
        w[k].parts = parts + at;
        w[k].n = len;
        w[k].order = x->order;
        at += len;
        if (pthread_create(&w[k].tid, NULL, pready_worker, &w[k]) != 0) {
            TU_ABORT("pthread_create failed");
        }
    }
    return t;
}

/* ---- receive checks --------------------------------------------------------------------- */

/* Receive partition p's data bytes hold the pattern of this round. */
static int verify_partition(Xfer* x, int p, int rid)
{
    Side* s = &x->r;
    int size = 0;
    MPI_Type_size(s->rel, &size);
    size_t first = (size_t)p * (size_t)s->count * (size_t)size;
    int n = 0;
    MPI_Pack_size(s->count, s->rel, MPI_COMM_SELF, &n);
    unsigned char* packed = malloc((size_t)n + 1);
    int pos = 0;
    MPI_Pack(s->buf + (size_t)p * (size_t)s->count * (size_t)s->extent, s->count, s->rel, packed, n,
             &pos, MPI_COMM_SELF);
    int ok = tu_verify(packed, (size_t)pos, first, x->id, rid, "partition reported by Parrived");
    free(packed);
    return ok;
}

/* Polls MPI_Parrived on a few partitions of every active receive; a flag of 1 is verified at
 * once. Returns the number of partitions newly reported. */
static int poll_arrived(Plan* p, int rid, int polls)
{
    int found = 0;
    for (int i = 0; i < p->n; ++i) {
        Xfer* x = &p->x[i];
        if (x->dst != tu_rank || !x->arrived || x->bad) { /* one report per transfer-round */
            continue;
        }
        for (int k = 0; k < polls; ++k) {
            int part = rng_int(&g_local, 0, x->r.parts - 1);
            if (x->arrived[part]) {
                continue;
            }
            int flag = 0;
            int rc = MPI_Parrived(x->req, part, &flag);
            if (rc != MPI_SUCCESS) {
                fail_rc(x, "MPI_Parrived", rc);
                return found;
            }
            if (flag) {
                x->arrived[part] = 1;
                ++found;
                ++g_stats[x->backend].parrived;
                if (!verify_partition(x, part, rid)) {
                    fail(x, "MPI_Parrived said 1 before the bytes were there");
                }
            }
        }
    }
    return found;
}

/* After completion: all data, then holes and guards (data set to SENTINEL, all SENTINEL). */
static void verify_receive(Xfer* x, int rid, const MPI_Status* st)
{
    Side* s = &x->r;
    int n = s->parts * s->count;
    if (!tu_type_verify(s->buf, s->rel, n, x->id, rid, "received data")) {
        fail(x, "wrong data");
    }
    tu_type_set(s->buf, s->rel, n, SENTINEL);
    if (!tu_verify_value(s->mem, s->mem_bytes, SENTINEL, "holes and guards")) {
        fail(x, "write outside the data");
    }
    if (st) {
        int count = -1;
        MPI_Get_count(st, x->r.pass, &count);
        if (st->MPI_SOURCE != x->src || st->MPI_TAG != x->tag || count != n) {
            char msg[160];
            snprintf(msg, sizeof msg, "status: source %d tag %d count %d (expected %d %d %d)",
                     st->MPI_SOURCE, st->MPI_TAG, count, x->src, x->tag, n);
            fail(x, msg);
        }
    }
}

/* ---- one plan --------------------------------------------------------------------------- */

static void set_backend(MPI_Info info, int backend)
{
    if (backend == B_PERSISTENT) {
        MPI_Info_set(info, "mpipcl_backend", "persistent");
    } else if (backend == B_RMA) {
        MPI_Info_set(info, "mpipcl_backend", "rma");
    }
}

static void init_requests(Plan* p)
{
    for (int i = 0; i < p->n; ++i) {
        Xfer* x = &p->x[i];
        int rc = MPI_SUCCESS;
        if (x->src != tu_rank && x->dst != tu_rank) {
            continue;
        }
        MPI_Info info;
        MPI_Info_create(&info);
        if (x->src == tu_rank) {
            side_setup(&x->s);
            set_backend(info, x->sbackend);
            rc = MPI_Psend_init(x->s.bottom ? MPI_BOTTOM : x->s.buf, x->s.parts, x->s.count,
                                x->s.pass, x->dst, x->tag, g_comms[x->comm], info, &x->req);
        } else {
            side_setup(&x->r);
            set_backend(info, x->rbackend);
            x->arrived = calloc((size_t)x->r.parts, 1);
            rc = MPI_Precv_init(x->r.bottom ? MPI_BOTTOM : x->r.buf, x->r.parts, x->r.count,
                                x->r.pass, x->src, x->tag, g_comms[x->comm], info, &x->req);
        }
        MPI_Info_free(&info);
        if (rc != MPI_SUCCESS) {
            fail_rc(x, "the init call", rc);
            TU_ABORT("cannot continue the plan without the request");
        }
    }
}

/* A failed array call: reports it, then every request is completed one by one with MPI_Test
 * (an inactive one returns at once), so the failing request and its class show. */
static int array_failed(Plan* p, const int* owner, int n, const char* call, int rc, int* done,
                        int* style)
{
    char what[96];
    snprintf(what, sizeof what, "%s on %d requests (one of them)", call, n);
    fail_rc(&p->x[owner[0]], what, rc);
    for (int i = 0; i < n; ++i) {
        done[i] = 0;
    }
    *style = C_TEST;
    return n;
}

/* One call of the completion style; updates done[] and st[]; returns how many completed. */
static int complete_step(Plan* p, MPI_Request* reqs, const int* owner, int n, int* done,
                         MPI_Status* st, int* style, int* errored)
{
    int rc, flag = 1, outcount = 0, idx[MAX_XFERS], index = MPI_UNDEFINED, completed = 0;
    MPI_Status some[MAX_XFERS];
    switch (*style) {
        case C_WAIT:
        case C_TEST:
            for (int i = 0; i < n; ++i) {
                if (done[i]) {
                    continue;
                }
                flag = 1;
                rc = *style == C_WAIT ? MPI_Wait(&reqs[i], &st[i])
                                      : MPI_Test(&reqs[i], &flag, &st[i]);
                if (rc != MPI_SUCCESS) {
                    fail_rc(&p->x[owner[i]], *style == C_WAIT ? "MPI_Wait" : "MPI_Test", rc);
                    *errored = 1;
                }
                if (flag || rc != MPI_SUCCESS) {
                    done[i] = 1;
                    ++completed;
                }
            }
            return completed;
        case C_WAITALL:
        case C_TESTALL:
            rc = *style == C_WAITALL ? MPI_Waitall(n, reqs, st) : MPI_Testall(n, reqs, &flag, st);
            if (rc != MPI_SUCCESS) {
                *errored = 1;
                for (int i = 0; rc == MPI_ERR_IN_STATUS && i < n; ++i) {
                    if (st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING) {
                        fail_rc(&p->x[owner[i]], "MPI_Waitall/Testall: MPI_ERROR", st[i].MPI_ERROR);
                    }
                }
                return -array_failed(p, owner, n, "MPI_Waitall/Testall", rc, done, style);
            }
            for (int i = 0; flag && i < n; ++i) {
                done[i] = 1;
            }
            return flag ? n : 0;
        case C_WAITSOME:
        case C_TESTSOME:
            rc = *style == C_WAITSOME ? MPI_Waitsome(n, reqs, &outcount, idx, some)
                                      : MPI_Testsome(n, reqs, &outcount, idx, some);
            if (rc != MPI_SUCCESS || outcount == MPI_UNDEFINED) {
                *errored = 1;
                if (rc == MPI_SUCCESS) {
                    fail(&p->x[owner[0]], "completion lost: MPI_UNDEFINED with requests left");
                    return -n;
                }
                for (int k = 0; rc == MPI_ERR_IN_STATUS && k < outcount; ++k) {
                    if (some[k].MPI_ERROR != MPI_SUCCESS) {
                        fail_rc(&p->x[owner[idx[k]]], "MPI_Waitsome/Testsome: MPI_ERROR",
                                some[k].MPI_ERROR);
                    }
                }
                return -array_failed(p, owner, n, "MPI_Waitsome/Testsome", rc, done, style);
            }
            for (int k = 0; k < outcount; ++k) {
                if (done[idx[k]]) {
                    fail(&p->x[owner[idx[k]]], "request reported twice");
                }
                done[idx[k]] = 1;
                st[idx[k]] = some[k];
            }
            return outcount;
        default:
            rc = *style == C_WAITANY ? MPI_Waitany(n, reqs, &index, some)
                                     : MPI_Testany(n, reqs, &index, &flag, some);
            if (rc != MPI_SUCCESS || (flag && index == MPI_UNDEFINED)) {
                *errored = 1;
                if (rc == MPI_SUCCESS) {
                    fail(&p->x[owner[0]], "completion lost: MPI_UNDEFINED with requests left");
                    return -n;
                }
                return -array_failed(p, owner, n, "MPI_Waitany/Testany", rc, done, style);
            }
            if (!flag) {
                return 0;
            }
            if (done[index]) {
                fail(&p->x[owner[index]], "request reported twice");
            }
            done[index] = 1;
            st[index] = some[0];
            return 1;
    }
}

/* Completes all of this rank's requests with one completion style, polling Parrived. */
static void complete(Plan* p, int rid, MPI_Request* reqs, const int* owner, int n)
{
    MPI_Status st[MAX_XFERS];
    int done[MAX_XFERS] = {0}, left = n, errored = 0;
    int style = rng_int(&g_local, 0, C_KINDS - 1);
    double deadline = MPI_Wtime() + WAIT_S;
    /* Blocking styles first give Parrived a chance while data is moving. */
    if (style == C_WAIT || style == C_WAITALL || style == C_WAITSOME || style == C_WAITANY) {
        for (int k = 0; k < 200; ++k) {
            poll_arrived(p, rid, 4);
        }
    }
    while (left > 0) {
        int got = complete_step(p, reqs, owner, n, done, st, &style, &errored);
        left = got < 0 ? (got == -n && style != C_TEST ? 0 : n) : left - got;
        if (left > 0) {
            poll_arrived(p, rid, 2);
            if (MPI_Wtime() > deadline) {
                for (int i = 0; i < n; ++i) {
                    char d[512];
                    describe(&p->x[owner[i]], d, sizeof d);
                    fprintf(stderr, "[rank %d] stress: completion style %d: %s (%s)\n", tu_rank,
                            style, done[i] ? "done" : "HUNG", d);
                }
                TU_ABORT("stress transfer hung");
            }
        }
    }
    for (int i = 0; i < n; ++i) {
        Xfer* x = &p->x[owner[i]];
        if (x->dst == tu_rank) {
            verify_receive(x, rid, errored ? NULL : &st[i]); /* statuses only from clean calls */
        }
    }
}

static void run_round(Plan* p, int round)
{
    int rid = (g_plan_no * 4 + round) & 0x3fffffff;
    MPI_Request reqs[MAX_XFERS];
    int owner[MAX_XFERS], n = 0;
    Worker workers[MAX_XFERS][MAX_THREADS];
    int* parts[MAX_XFERS] = {0};
    int nthreads[MAX_XFERS] = {0};
    for (int i = 0; i < p->n; ++i) {
        Xfer* x = &p->x[i];
        x->bad = 0;
        if (x->src == tu_rank) {
            tu_type_fill(x->s.buf, x->s.rel, x->s.parts * x->s.count, x->id, rid);
        } else if (x->dst == tu_rank) {
            memset(x->r.mem, SENTINEL, x->r.mem_bytes);
            memset(x->arrived, 0, (size_t)x->r.parts);
        } else {
            continue;
        }
        int rc = MPI_Start(&x->req);
        if (rc != MPI_SUCCESS) {
            fail_rc(x, "MPI_Start", rc);
            TU_ABORT("cannot continue after a failed MPI_Start");
        }
    }
    for (int i = 0; i < p->n; ++i) {
        Xfer* x = &p->x[i];
        if (x->src == tu_rank) {
            parts[i] = malloc((size_t)x->s.parts * sizeof(int));
            nthreads[i] = start_workers(x, workers[i], parts[i], &g_local);
        }
    }
    for (int i = 0; i < p->n; ++i) {
        if (p->x[i].src == tu_rank || p->x[i].dst == tu_rank) {
            owner[n] = i;
            reqs[n++] = p->x[i].req;
        }
    }
    if (n > 0) {
        complete(p, rid, reqs, owner, n);
    }
    for (int i = 0; i < p->n; ++i) {
        for (int k = 0; k < nthreads[i]; ++k) {
            pthread_join(workers[i][k].tid, NULL);
        }
        free(parts[i]);
        Xfer* x = &p->x[i];
        if (x->src == tu_rank || x->dst == tu_rank) {
            Stats* s = &g_stats[x->backend];
            if (x->dst == tu_rank) {
                /* The backend the pair really uses (an rma request falls back to persistent
                 * without a window, or for a buffer or datatype RMA cannot take). */
                const char* used = NULL;
                TU_MPI(MPIX_Pcl_backend(x->req, &used));
                const int rma = used != NULL && strcmp(used, "rma") == 0;
                s->rma += rma;
                if (rma && (x->backend == B_PERSISTENT || x->backend == B_MIXED)) {
                    fail(x, "an rma pair where one side asked for persistent");
                }
                ++s->rounds;
                s->bytes += x->bad ? 0 : (long long)x->bytes;
            }
            s->failures += x->bad;
        }
    }
}

static void free_plan(Plan* p)
{
    for (int i = 0; i < p->n; ++i) {
        Xfer* x = &p->x[i];
        if (x->src == tu_rank) {
            TU_MPI(MPI_Request_free(&x->req));
            side_free(&x->s);
        } else if (x->dst == tu_rank) {
            TU_MPI(MPI_Request_free(&x->req));
            side_free(&x->r);
            free(x->arrived);
        }
    }
}

static void report(const char* what, double elapsed)
{
    long long local[B_KINDS * 5], sum[B_KINDS * 5];
    for (int b = 0; b < B_KINDS; ++b) {
        local[5 * b] = g_stats[b].rounds;
        local[5 * b + 1] = g_stats[b].bytes;
        local[5 * b + 2] = g_stats[b].parrived;
        local[5 * b + 3] = g_stats[b].failures;
        local[5 * b + 4] = g_stats[b].rma;
    }
    MPI_Reduce(local, sum, B_KINDS * 5, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (tu_rank != 0) {
        return;
    }
    long long t[4] = {0, 0, 0, 0};
    for (int b = 0; b < B_KINDS; ++b) {
        for (int k = 0; k < 4; ++k) {
            t[k] += sum[5 * b + k];
        }
    }
    printf(
        "stress %s: %.0f s, seed %llu, %d ranks, %d plans: %lld transfer-rounds, %lld bytes "
        "verified, %lld Parrived=1 answers verified, %lld failures\n",
        what, elapsed, g_seed, tu_size, g_plan_no, t[0], t[1], t[2], t[3]);
    for (int b = 0; what[0] == 'd' && b < B_KINDS; ++b) {
        printf(
            "stress   backend %-12s: %lld transfer-rounds (%lld over rma), %lld bytes, %lld "
            "Parrived, %lld failures\n",
            backend_names[b], sum[5 * b], sum[5 * b + 4], sum[5 * b + 1], sum[5 * b + 2],
            sum[5 * b + 3]);
    }
    fflush(stdout);
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 0);
    double budget = 4.0;
    long long max_bytes = 1 << 20;
    g_seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seconds") == 0) {
            budget = atof(argv[i + 1]);
        } else if (strcmp(argv[i], "--minutes") == 0) {
            budget = 60.0 * atof(argv[i + 1]);
        } else if (strcmp(argv[i], "--seed") == 0) {
            g_seed = strtoull(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--bottom") == 0) {
            g_bottom = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--max-bytes") == 0) {
            max_bytes = atoll(argv[i + 1]);
        } else if (strcmp(argv[i], "--plan") == 0) {
            g_only_plan = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--xfers") == 0) {
            g_xfer_mask = (unsigned)strtoul(argv[i + 1], NULL, 0);
        } else if (strcmp(argv[i], "--backends") == 0) {
            g_backend_mask = (unsigned)strtoul(argv[i + 1], NULL, 0) & ((1u << B_KINDS) - 1);
        }
    }
    if (tu_size < 2) {
        if (tu_rank == 0) {
            fprintf(stderr, "SKIP: stress needs 2 or more ranks\n");
        }
        MPI_Finalize();
        return TU_SKIP_CODE;
    }
    /* Errors are counted as failures, not fatal (the duplicates inherit the handler). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    g_comms[0] = MPI_COMM_WORLD;
    for (int c = 1; c <= NCOMMS; ++c) {
        MPI_Comm_dup(MPI_COMM_WORLD, &g_comms[c]);
    }
    Rng shared = {g_seed};
    g_local.s = g_seed * 1000003u + (uint64_t)tu_rank;
    double t0 = MPI_Wtime(), next_report = t0 + PROGRESS_S;
    int stop = 0;
    Plan only;
    if (g_only_plan >= 0) { /* draw the plans before it from the shared stream */
        for (g_plan_no = 0; g_plan_no <= g_only_plan; ++g_plan_no) {
            draw_plan(&shared, &only, max_bytes);
        }
        g_plan_no = g_only_plan;
    }
    while (!stop) {
        Plan p;
        if (g_only_plan >= 0) {
            p = only;
        } else {
            draw_plan(&shared, &p, max_bytes);
        }
        for (int i = 0; i < p.n; ++i) { /* a dropped transfer involves no rank */
            if (!(g_xfer_mask & (1u << i))) {
                p.x[i].src = p.x[i].dst = -1;
            }
        }
        init_requests(&p);
        for (int round = 0; round < p.rounds; ++round) {
            run_round(&p, round);
        }
        free_plan(&p);
        g_plan_no += g_only_plan < 0;
        tu_watchdog_rearm(2 * (int)WAIT_S);
        double now = MPI_Wtime();
        stop = now - t0 >= budget;
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        int progress = now >= next_report;
        MPI_Bcast(&progress, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (progress && !stop) {
            report("progress", now - t0);
            next_report = now + PROGRESS_S;
        }
    }
    report("done", MPI_Wtime() - t0);
    for (int c = 1; c <= NCOMMS; ++c) {
        MPI_Comm_free(&g_comms[c]);
    }
    return tu_finish();
}
