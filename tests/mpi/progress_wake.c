/* SPDX-License-Identifier: BSD-3-Clause */
/* Wake-up races of the progress modes (MPIPCL_PROGRESS=thread|event|offload|caller): many short
 * rounds in which a sleeper (the progress thread on its doorbell, a caller in MPI_Wait on its
 * request) must be woken by work or a completion that comes just before it goes to sleep. A
 * lost wake-up shows as a hang, which the watchdog (armed per case and every WATCH_EVERY
 * rounds, naming the case and round) and the CTest timeout catch; every round's data is
 * verified byte for byte, and any mismatch fails the program. Rank 0 sends, rank 1 receives
 * (both ways in "mixed"). Cases, each a loop of a fixed number of rounds:
 * - short: Start, Pready of every partition, Wait, with 8 partitions of 8 bytes and then with
 *   4 partitions of 64 KiB (the latter also marked with MPI_Pready_range / MPI_Pready_list);
 * - trickle: 4 sender threads mark 2 partitions each after random delays of 0-200 us while
 *   the sender's main thread is already in MPI_Wait; the receiver waits while they trickle in;
 * - mixed: each rank sends and receives a partitioned message and a plain 8-byte message;
 *   MPI_Waitall over both partitioned requests and the plain MPI_Irecv; in odd rounds a helper
 *   thread marks the partitions and sends the plain message after a random delay, while the
 *   main thread is in MPI_Waitall;
 * - test: MPI_Test polling loops on both sides (flag must become 1, bounded by
 *   TU_WAIT_TIMEOUT_S); in odd rounds a helper thread marks the partitions after a random
 *   delay while the sender polls (in offload mode MPI_Pready only queues, so the data leaves
 *   only when the progress thread issues it, whatever the polling thread does);
 * - late: in even rounds the sender sleeps 2 ms before MPI_Start while the receiver is already
 *   in MPI_Wait; in odd rounds the receiver sleeps 2 ms before its MPI_Start while the sender
 *   has marked everything and waits.
 * Argument: percentage of the default round counts (default 100; the sanitizer builds pass
 * less). Rank 0 prints one line per case: rounds, seconds, slowest round. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define WORKERS 4
#define WATCH_EVERY 100
#define WATCH_S 20
#define MAX_DELAY_US 200
#define LATE_US 2000
#define MAX_REPORTS 5

enum { SENDER = 0, RECEIVER = 1 };
enum { TAG_SMALL = 41, TAG_BIG, TAG_TRICKLE, TAG_MIXED, TAG_PLAIN, TAG_TEST, TAG_LATE };

static int g_scale = 100;
static int g_reports = 0; /* detailed mismatch reports so far */

/* ---- data: a cheap per-round pattern (one 64-bit hash per 8 bytes), verified byte for byte */

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The word at byte offset @p off (a multiple of 8) of the message of (tag, rank, round). */
static uint64_t pattern_word(int tag, int rank, int round, size_t off)
{
    return mix64(((uint64_t)(unsigned)tag << 56) ^ ((uint64_t)(unsigned)rank << 48) ^
                 ((uint64_t)(unsigned)round << 32) ^ (uint64_t)(off / 8));
}

/* Fills @p n bytes (a multiple of 8) at @p buf, which hold message bytes first .. first+n-1. */
static void fill(void* buf, size_t n, size_t first, int tag, int rank, int round)
{
    unsigned char* p = buf;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = pattern_word(tag, rank, round, first + i);
        memcpy(p + i, &w, 8);
    }
}

/* Verifies @p n bytes of the message of (tag, rank, round); reports the first wrong byte. */
static int verify(const void* buf, size_t n, int tag, int rank, int round, const char* what)
{
    const unsigned char* p = buf;
    size_t wrong = 0;
    size_t first = 0;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = pattern_word(tag, rank, round, i);
        const unsigned char* e = (const unsigned char*)&w;
        for (size_t b = 0; b < 8; ++b) {
            if (p[i + b] != e[b] && wrong++ == 0) {
                first = i + b;
            }
        }
    }
    if (wrong) {
        const int reports = __atomic_fetch_add(&g_reports, 1, __ATOMIC_RELAXED);
        uint64_t w = pattern_word(tag, rank, round, first - first % 8);
        if (reports < MAX_REPORTS) {
            tu_check(0, __FILE__, __LINE__,
                     "%s, round %d: %zu of %zu bytes wrong; first: byte %zu is 0x%02x, expected "
                     "0x%02x",
                     what, round, wrong, n, first, p[first], ((const unsigned char*)&w)[first % 8]);
        } else if (reports == MAX_REPORTS) {
            tu_check(0, __FILE__, __LINE__,
                     "%s, round %d: wrong bytes; further mismatches not "
                     "reported",
                     what, round);
        }
    }
    return wrong == 0;
}

/* ---- small helpers ---- */

static unsigned next_rand(unsigned* s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Sleeps 0 .. MAX_DELAY_US microseconds (0 often: no sleep at all). */
static void random_delay(unsigned* s)
{
    unsigned us = next_rand(s) % (MAX_DELAY_US + 1);
    if (us > MAX_DELAY_US / 8) {
        tu_sleep_us((long)us);
    }
}

static int scaled(int rounds)
{
    int n = (int)((long)rounds * g_scale / 100);
    return n > 0 ? n : 1;
}

/* Statistics of one case: slowest round. */
typedef struct {
    const char* name;
    int rounds;
    double start;
    double round_start;
    double worst;
} Case;

static void case_begin(Case* c, const char* name, int rounds)
{
    c->name = name;
    c->rounds = scaled(rounds);
    c->worst = 0.0;
    tu_watchdog_arm(WATCH_S, "progress_wake: case %s, round 0 of %d", name, c->rounds);
    MPI_Barrier(MPI_COMM_WORLD);
    c->start = MPI_Wtime();
}

static void round_begin(Case* c, int round)
{
    if (round % WATCH_EVERY == 0 && round > 0) {
        tu_watchdog_arm(WATCH_S, "progress_wake: case %s, rounds %d-%d of %d", c->name, round,
                        round + WATCH_EVERY - 1, c->rounds);
    }
    c->round_start = MPI_Wtime();
}

static void round_end(Case* c)
{
    double t = MPI_Wtime() - c->round_start;
    if (t > c->worst) {
        c->worst = t;
    }
}

static void case_end(Case* c)
{
    double total = MPI_Wtime() - c->start;
    double worst = 0.0;
    MPI_Reduce(&c->worst, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (tu_rank == 0) {
        printf("progress_wake: %-10s %5d rounds %7.3f s, slowest round %7.3f ms\n", c->name,
               c->rounds, total, worst * 1e3);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- a pool of WORKERS threads that run one job per round ---- */

typedef struct {
    int round;
    MPI_Request req;
    unsigned char* buf;
    int plain_out; /* mixed: the plain message to send (rank's pattern), -1: none */
    MPI_Comm plain_comm;
} Job;

static pthread_t g_workers[WORKERS];
static pthread_barrier_t g_go, g_done;
static void (*g_job_fn)(int id, const Job* job);
static Job g_job;
static int g_stop;

static void* worker_main(void* arg)
{
    int id = (int)(intptr_t)arg;
    for (;;) {
        pthread_barrier_wait(&g_go);
        if (g_stop) {
            return NULL;
        }
        g_job_fn(id, &g_job);
        pthread_barrier_wait(&g_done);
    }
}

static void pool_start(void)
{
    pthread_barrier_init(&g_go, NULL, WORKERS + 1);
    pthread_barrier_init(&g_done, NULL, WORKERS + 1);
    for (int i = 0; i < WORKERS; ++i) {
        if (pthread_create(&g_workers[i], NULL, worker_main, (void*)(intptr_t)i) != 0) {
            TU_ABORT("pthread_create failed");
        }
    }
}

/* Releases the workers on @p job (they run while the caller goes on). */
static void pool_release(void (*fn)(int, const Job*), Job job)
{
    g_job_fn = fn;
    g_job = job;
    pthread_barrier_wait(&g_go);
}

/* Waits until every worker has finished the job released last. */
static void pool_join(void) { pthread_barrier_wait(&g_done); }

static void pool_stop(void)
{
    g_stop = 1;
    pthread_barrier_wait(&g_go);
    for (int i = 0; i < WORKERS; ++i) {
        pthread_join(g_workers[i], NULL);
    }
    pthread_barrier_destroy(&g_go);
    pthread_barrier_destroy(&g_done);
}

/* ---- the cases ---- */

/* short: Start, Pready all, Wait; @p parts partitions of @p bytes on both sides. */
static void case_short(const char* name, int tag, int parts, int bytes, int rounds)
{
    const size_t total = (size_t)parts * (size_t)bytes;
    unsigned char* buf = calloc(total, 1);
    MPI_Request req;
    TU_MPI(tu_pair_init(buf, parts, bytes, MPI_BYTE, tag, MPI_COMM_WORLD, &req));
    Case c;
    case_begin(&c, name, rounds);
    int list[8];
    for (int round = 0; round < c.rounds; ++round) {
        round_begin(&c, round);
        TU_MPI(MPI_Start(&req));
        if (tu_rank == SENDER) {
            fill(buf, total, 0, tag, SENDER, round);
            if (bytes < 1024 || round % 3 == 0) {
                tu_pready_all(parts, req);
            } else if (round % 3 == 1) {
                TU_MPI(MPI_Pready_range(0, parts - 1, req));
            } else {
                tu_shuffled_indices(list, parts, (unsigned)round);
                TU_MPI(MPI_Pready_list(parts, list, req));
            }
        }
        TU_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (tu_rank == RECEIVER) {
            verify(buf, total, tag, SENDER, round, name);
        }
        round_end(&c);
    }
    case_end(&c);
    TU_MPI(MPI_Request_free(&req));
    free(buf);
}

#define TRICKLE_PARTS (2 * WORKERS)
#define TRICKLE_BYTES 4096

/* Sender worker of "trickle": its two partitions, each after a random delay, marked with
 * MPI_Pready, MPI_Pready_range or MPI_Pready_list by round. */
static void trickle_worker(int id, const Job* job)
{
    unsigned seed = (unsigned)(job->round * 7919 + id * 104729 + 1);
    for (int k = 0; k < 2; ++k) {
        int p = 2 * id + k;
        random_delay(&seed);
        fill(job->buf + (size_t)p * TRICKLE_BYTES, TRICKLE_BYTES, (size_t)p * TRICKLE_BYTES,
             TAG_TRICKLE, SENDER, job->round);
        switch ((job->round + id) % 3) {
            case 0:
                TU_MPI(MPI_Pready(p, job->req));
                break;
            case 1:
                TU_MPI(MPI_Pready_range(p, p, job->req));
                break;
            default:
                TU_MPI(MPI_Pready_list(1, &p, job->req));
                break;
        }
    }
}

static void case_trickle(int rounds)
{
    const size_t total = (size_t)TRICKLE_PARTS * TRICKLE_BYTES;
    unsigned char* buf = calloc(total, 1);
    MPI_Request req;
    TU_MPI(tu_pair_init(buf, TRICKLE_PARTS, TRICKLE_BYTES, MPI_BYTE, TAG_TRICKLE, MPI_COMM_WORLD,
                        &req));
    Case c;
    case_begin(&c, "trickle", rounds);
    for (int round = 0; round < c.rounds; ++round) {
        round_begin(&c, round);
        TU_MPI(MPI_Start(&req));
        if (tu_rank == SENDER) {
            pool_release(trickle_worker, (Job){round, req, buf, -1, MPI_COMM_NULL});
        }
        /* The sender's workers are still marking (most of the time): a sleeping wait. */
        TU_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (tu_rank == SENDER) {
            pool_join();
        } else {
            verify(buf, total, TAG_TRICKLE, SENDER, round, "trickle");
        }
        round_end(&c);
    }
    case_end(&c);
    TU_MPI(MPI_Request_free(&req));
    free(buf);
}

#define MIXED_PARTS 4
#define MIXED_BYTES 1024

/* Marks every partition of the partitioned send and sends the plain message. */
static void mixed_send(const Job* job)
{
    const size_t total = (size_t)MIXED_PARTS * MIXED_BYTES;
    fill(job->buf, total, 0, TAG_MIXED, tu_rank, job->round);
    tu_pready_all(MIXED_PARTS, job->req);
    uint64_t plain = pattern_word(TAG_PLAIN, tu_rank, job->round, 0);
    TU_MPI(MPI_Send(&plain, 8, MPI_BYTE, 1 - tu_rank, TAG_PLAIN, job->plain_comm));
}

/* Helper worker of "mixed" (worker 0 only): a random delay, then mixed_send. */
static void mixed_worker(int id, const Job* job)
{
    if (id != 0) {
        return;
    }
    unsigned seed = (unsigned)(job->round * 31 + tu_rank * 1000003 + 7);
    random_delay(&seed);
    mixed_send(job);
}

static void case_mixed(int rounds)
{
    const size_t total = (size_t)MIXED_PARTS * MIXED_BYTES;
    unsigned char* sbuf = calloc(total, 1);
    unsigned char* rbuf = calloc(total, 1);
    const int peer = 1 - tu_rank;
    MPI_Comm plain_comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &plain_comm);
    /* reqs: partitioned send, partitioned receive, plain receive. */
    MPI_Request reqs[3];
    TU_MPI(MPI_Psend_init(sbuf, MIXED_PARTS, MIXED_BYTES, MPI_BYTE, peer, TAG_MIXED, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &reqs[0]));
    TU_MPI(MPI_Precv_init(rbuf, MIXED_PARTS, MIXED_BYTES, MPI_BYTE, peer, TAG_MIXED, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &reqs[1]));
    Case c;
    case_begin(&c, "mixed", rounds);
    for (int round = 0; round < c.rounds; ++round) {
        round_begin(&c, round);
        uint64_t plain_in = 0;
        TU_MPI(MPI_Irecv(&plain_in, 8, MPI_BYTE, peer, TAG_PLAIN, plain_comm, &reqs[2]));
        TU_MPI(MPI_Startall(2, reqs));
        Job job = {round, reqs[0], sbuf, 0, plain_comm};
        const int helper = round % 2 == 1;
        if (helper) {
            pool_release(mixed_worker, job);
        } else {
            mixed_send(&job);
        }
        MPI_Status st[3];
        TU_MPI(MPI_Waitall(3, reqs, st));
        if (helper) {
            pool_join();
        }
        TU_CHECK_MSG(reqs[2] == MPI_REQUEST_NULL, "round %d: MPI_Irecv request not freed", round);
        TU_CHECK_MSG(plain_in == pattern_word(TAG_PLAIN, peer, round, 0),
                     "round %d: plain message wrong", round);
        verify(rbuf, total, TAG_MIXED, peer, round, "mixed partitioned receive");
        round_end(&c);
    }
    case_end(&c);
    TU_MPI(MPI_Request_free(&reqs[0]));
    TU_MPI(MPI_Request_free(&reqs[1]));
    MPI_Comm_free(&plain_comm);
    free(sbuf);
    free(rbuf);
}

#define TEST_PARTS 4
#define TEST_BYTES 2048

/* Helper worker of "test" (worker 0 only): a random delay, then every partition. */
static void test_worker(int id, const Job* job)
{
    if (id != 0) {
        return;
    }
    unsigned seed = (unsigned)(job->round * 131 + 3);
    random_delay(&seed);
    fill(job->buf, (size_t)TEST_PARTS * TEST_BYTES, 0, TAG_TEST, SENDER, job->round);
    tu_pready_all(TEST_PARTS, job->req);
}

static void case_test(int rounds)
{
    const size_t total = (size_t)TEST_PARTS * TEST_BYTES;
    unsigned char* buf = calloc(total, 1);
    MPI_Request req;
    TU_MPI(tu_pair_init(buf, TEST_PARTS, TEST_BYTES, MPI_BYTE, TAG_TEST, MPI_COMM_WORLD, &req));
    Case c;
    case_begin(&c, "test", rounds);
    long polls = 0;
    for (int round = 0; round < c.rounds; ++round) {
        round_begin(&c, round);
        TU_MPI(MPI_Start(&req));
        const int helper = tu_rank == SENDER && round % 2 == 1;
        if (helper) {
            pool_release(test_worker, (Job){round, req, buf, -1, MPI_COMM_NULL});
        } else if (tu_rank == SENDER) {
            test_worker(0, &(Job){round, req, buf, -1, MPI_COMM_NULL});
        }
        double deadline = tu_deadline();
        int flag = 0;
        while (!flag) {
            if (TU_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
                break;
            }
            ++polls;
            tu_check_deadline(deadline, "MPI_Test to set its flag");
        }
        if (helper) {
            pool_join();
        }
        if (tu_rank == RECEIVER) {
            verify(buf, total, TAG_TEST, SENDER, round, "test");
        }
        round_end(&c);
    }
    case_end(&c);
    if (tu_rank == RECEIVER) {
        printf("progress_wake: test: receiver polled MPI_Test %ld times\n", polls);
        fflush(stdout);
    }
    TU_MPI(MPI_Request_free(&req));
    free(buf);
}

#define LATE_PARTS 4
#define LATE_BYTES 8192

static void case_late(int rounds)
{
    const size_t total = (size_t)LATE_PARTS * LATE_BYTES;
    unsigned char* buf = calloc(total, 1);
    MPI_Request req;
    TU_MPI(tu_pair_init(buf, LATE_PARTS, LATE_BYTES, MPI_BYTE, TAG_LATE, MPI_COMM_WORLD, &req));
    Case c;
    case_begin(&c, "late", rounds);
    for (int round = 0; round < c.rounds; ++round) {
        round_begin(&c, round);
        /* Even rounds: the sender comes late; odd rounds: the receiver. */
        const int late = round % 2 == 0 ? SENDER : RECEIVER;
        if (tu_rank == late) {
            tu_sleep_us(LATE_US);
        }
        TU_MPI(MPI_Start(&req));
        if (tu_rank == SENDER) {
            fill(buf, total, 0, TAG_LATE, SENDER, round);
            tu_pready_all(LATE_PARTS, req);
        }
        TU_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (tu_rank == RECEIVER) {
            verify(buf, total, TAG_LATE, SENDER, round, "late");
        }
        round_end(&c);
    }
    case_end(&c);
    TU_MPI(MPI_Request_free(&req));
    free(buf);
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    g_scale = tu_arg_int(argc, argv, 1, 100);
    if (g_scale <= 0) {
        g_scale = 100;
    }
    if (tu_rank == 0) {
        const char* mode = getenv("MPIPCL_PROGRESS");
        const char* backend = getenv("MPIPCL_BACKEND");
        printf("progress_wake: MPIPCL_PROGRESS=%s MPIPCL_BACKEND=%s, %d%% of the rounds\n",
               mode ? mode : "(unset)", backend ? backend : "(unset)", g_scale);
        fflush(stdout);
    }
    pool_start();
    case_short("short-8B", TAG_SMALL, 8, 8, 2000);
    case_short("short-64K", TAG_BIG, 4, 64 * 1024, 800);
    case_trickle(400);
    case_mixed(500);
    case_test(200);
    case_late(50);
    pool_stop();
    return tu_finish();
}
