/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers of the MPI test programs: init/finish, checks, byte patterns, bounded waits. */
#define _GNU_SOURCE /* gettid, SIGEV_THREAD_ID (the stall timers) */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int tu_rank = -1;
int tu_size = 0;

static int g_failed = 0;

static pthread_t g_watchdog;
static pthread_mutex_t g_watchdog_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_watchdog_cond = PTHREAD_COND_INITIALIZER;
static int g_watchdog_stop = 0;
static int g_watchdog_running = 0;
/* Guarded by g_watchdog_lock: when the watchdog fires, and what it then reports. */
static struct timespec g_watchdog_until;
static int g_watchdog_limit_s = TU_WATCHDOG_S;
static char g_watchdog_what[256] = "test";

/* Every rank's pid and host (a hash of its name), for tu_dump_all. */
static long* g_pids = NULL;
static int g_dump_signal = 0;

static long host_hash(void)
{
    char name[256] = "";
    gethostname(name, sizeof name - 1);
    unsigned long h = 5381;
    for (const char* c = name; *c; ++c) {
        h = h * 33 + (unsigned char)*c;
    }
    return (long)(h & 0x7fffffffUL);
}

/* A failing test asks every rank on this host for libmpipcl's state dump (MPIPCL_DUMP_SIGNAL,
 * set to USR1 here unless the environment chose otherwise), and gives their progress threads
 * a moment to write it before the abort. */
static void tu_dump_all(void)
{
    if (g_pids == NULL || g_dump_signal == 0) {
        return;
    }
    const long host = host_hash();
    for (int r = 0; r < tu_size; ++r) {
        if (g_pids[2 * r + 1] == host && g_pids[2 * r] > 0) {
            kill((pid_t)g_pids[2 * r], g_dump_signal);
        }
    }
    usleep(1500 * 1000);
}

static void* watchdog_main(void* arg)
{
    (void)arg;
    pthread_mutex_lock(&g_watchdog_lock);
    int fire = 0;
    while (!g_watchdog_stop && !fire) {
        /* Re-read the deadline on every wake-up: tu_watchdog_arm may have moved it. */
        struct timespec until = g_watchdog_until;
        int rc = pthread_cond_timedwait(&g_watchdog_cond, &g_watchdog_lock, &until);
        if (rc == ETIMEDOUT) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            fire =
                now.tv_sec > g_watchdog_until.tv_sec ||
                (now.tv_sec == g_watchdog_until.tv_sec && now.tv_nsec >= g_watchdog_until.tv_nsec);
        }
    }
    fire = fire && !g_watchdog_stop;
    char what[sizeof g_watchdog_what];
    memcpy(what, g_watchdog_what, sizeof what);
    int limit = g_watchdog_limit_s;
    pthread_mutex_unlock(&g_watchdog_lock);
    if (fire) {
        fprintf(stderr, "[rank %d] watchdog: %s: no progress for %d s, aborting\n", tu_rank, what,
                limit);
        fflush(stderr);
        tu_dump_all();
        MPI_Abort(MPI_COMM_WORLD, 2);
        _exit(2);
    }
    return NULL;
}

void tu_watchdog_arm(int seconds, const char* fmt, ...)
{
    pthread_mutex_lock(&g_watchdog_lock);
    clock_gettime(CLOCK_REALTIME, &g_watchdog_until);
    g_watchdog_until.tv_sec += seconds;
    g_watchdog_limit_s = seconds;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_watchdog_what, sizeof g_watchdog_what, fmt, ap);
    va_end(ap);
    pthread_cond_signal(&g_watchdog_cond);
    pthread_mutex_unlock(&g_watchdog_lock);
}

int tu_init_level(int* argc, char*** argv, int requested, int required, int nprocs)
{
    int provided = MPI_THREAD_SINGLE;
    setenv("MPIPCL_DUMP_SIGNAL", "USR1", 0);
    const char* dump = getenv("MPIPCL_DUMP_SIGNAL");
    g_dump_signal = strcmp(dump, "USR1") == 0 || strcmp(dump, "SIGUSR1") == 0 ? SIGUSR1 : 0;
    if (MPI_Init_thread(argc, argv, requested, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init_thread failed\n");
        exit(1);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &tu_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tu_size);
    long mine[2] = {(long)getpid(), host_hash()};
    g_pids = calloc(2 * (size_t)tu_size, sizeof *g_pids);
    if (g_pids != NULL) {
        MPI_Allgather(mine, 2, MPI_LONG, g_pids, 2, MPI_LONG, MPI_COMM_WORLD);
    }
    int skip = 0;
    if (provided < required) {
        if (tu_rank == 0) {
            fprintf(stderr, "SKIP: thread level %d granted, %d required\n", provided, required);
        }
        skip = 1;
    }
    if (nprocs > 0 && tu_size != nprocs) {
        if (tu_rank == 0) {
            fprintf(stderr, "SKIP: needs exactly %d ranks, got %d\n", nprocs, tu_size);
        }
        skip = 1;
    }
    if (skip) {
        MPI_Finalize();
        exit(TU_SKIP_CODE);
    }
    tu_watchdog_arm(TU_WATCHDOG_S, "test still running");
    if (pthread_create(&g_watchdog, NULL, watchdog_main, NULL) == 0) {
        g_watchdog_running = 1;
    }
    return provided;
}

int tu_init(int* argc, char*** argv, int required, int nprocs)
{
    static const struct {
        const char* name;
        int level;
    } levels[] = {{"single", MPI_THREAD_SINGLE},
                  {"funneled", MPI_THREAD_FUNNELED},
                  {"serialized", MPI_THREAD_SERIALIZED},
                  {"multiple", MPI_THREAD_MULTIPLE}};
    int requested = MPI_THREAD_MULTIPLE;
    const char* env = getenv("MPIPCL_TEST_THREAD_LEVEL");
    for (size_t i = 0; env && i < sizeof levels / sizeof levels[0]; ++i) {
        if (strcmp(env, levels[i].name) == 0) {
            requested = levels[i].level;
        }
    }
    return tu_init_level(argc, argv, requested, required, nprocs);
}

void tu_watchdog_rearm(int seconds) { tu_watchdog_arm(seconds, "test still running"); }

int tu_finish(void)
{
    int failed = 0;
    int mine = __atomic_load_n(&g_failed, __ATOMIC_RELAXED);
    MPI_Allreduce(&mine, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (tu_rank == 0) {
        printf("%s\n", failed ? "FAIL" : "PASS");
        fflush(stdout);
    }
    if (g_watchdog_running) {
        pthread_mutex_lock(&g_watchdog_lock);
        g_watchdog_stop = 1;
        pthread_cond_signal(&g_watchdog_cond);
        pthread_mutex_unlock(&g_watchdog_lock);
        pthread_join(g_watchdog, NULL);
    }
    MPI_Finalize();
    return failed ? 1 : 0;
}

int tu_check(int ok, const char* file, int line, const char* fmt, ...)
{
    if (!ok) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "[rank %d] %s:%d: %s\n", tu_rank, file, line, msg);
        fflush(stderr);
        /* sync: relaxed; checks may fail on several threads at once, tu_finish joins them. */
        __atomic_store_n(&g_failed, 1, __ATOMIC_RELAXED);
    }
    return ok;
}

static void error_text(int rc, char* out, size_t size)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    int cls = -1;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) {
        snprintf(text, sizeof text, "(no error string)");
    }
    MPI_Error_class(rc, &cls);
    snprintf(out, size, "code %d, class %d: %s", rc, cls, text);
}

int tu_mpi_ok(int rc, const char* what, const char* file, int line)
{
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING + 64];
        error_text(rc, text, sizeof text);
        tu_check(0, file, line, "%s failed (%s)", what, text);
    }
    return rc;
}

int tu_expect_err_class(int rc, int cls1, int cls2, const char* what, const char* file, int line)
{
    if (rc == MPI_SUCCESS) {
        return tu_check(0, file, line, "%s returned MPI_SUCCESS, expected an error", what);
    }
    if (cls1 == MPI_ERR_LASTCODE) {
        return 1;
    }
    int cls = -1;
    MPI_Error_class(rc, &cls);
    if (cls != cls1 && cls != cls2) {
        char text[MPI_MAX_ERROR_STRING + 64];
        error_text(rc, text, sizeof text);
        if (cls1 == cls2) {
            return tu_check(0, file, line, "%s: expected error class %d, got %s", what, cls1, text);
        }
        return tu_check(0, file, line, "%s: expected error class %d or %d, got %s", what, cls1,
                        cls2, text);
    }
    return 1;
}

void tu_abort(const char* what, const char* file, int line)
{
    fprintf(stderr, "[rank %d] %s:%d: %s; aborting\n", tu_rank, file, line, what);
    fflush(stderr);
    tu_dump_all();
    MPI_Abort(MPI_COMM_WORLD, 3);
    _exit(3);
}

unsigned char tu_pattern(int rank, int round, size_t index)
{
    /* A mixing hash, so that a byte moved to another index, round or sender is caught. */
    uint64_t x = (uint64_t)index * 0x9E3779B97F4A7C15ull;
    x ^= ((uint64_t)(unsigned)rank << 40) ^ ((uint64_t)(unsigned)round << 20) ^ 0x5bd1e995u;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (unsigned char)(x >> 24);
}

void tu_fill(void* buf, size_t n, size_t first, int rank, int round)
{
    unsigned char* p = (unsigned char*)buf;
    for (size_t i = 0; i < n; ++i) {
        p[i] = tu_pattern(rank, round, first + i);
    }
}

int tu_verify(const void* buf, size_t n, size_t first, int rank, int round, const char* what)
{
    const unsigned char* p = (const unsigned char*)buf;
    size_t wrong = 0;
    size_t first_wrong = 0;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != tu_pattern(rank, round, first + i)) {
            if (wrong++ == 0) {
                first_wrong = i;
            }
        }
    }
    if (wrong) {
        tu_check(0, __FILE__, __LINE__,
                 "%s: %zu of %zu bytes wrong (sender %d, round %d); first at byte %zu: got 0x%02x, "
                 "expected 0x%02x",
                 what, wrong, n, rank, round, first + first_wrong, p[first_wrong],
                 tu_pattern(rank, round, first + first_wrong));
    }
    return wrong == 0;
}

int tu_verify_value(const void* buf, size_t n, unsigned char value, const char* what)
{
    const unsigned char* p = (const unsigned char*)buf;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != value) {
            return tu_check(0, __FILE__, __LINE__, "%s: byte %zu is 0x%02x, expected 0x%02x", what,
                            i, p[i], value);
        }
    }
    return 1;
}

size_t tu_type_span(MPI_Datatype type, int n)
{
    MPI_Aint lb, extent, true_lb, true_extent;
    MPI_Type_get_extent(type, &lb, &extent);
    MPI_Type_get_true_extent(type, &true_lb, &true_extent);
    MPI_Aint tail = true_lb + true_extent - extent;
    return (size_t)(n * extent + (tail > 0 ? tail : 0));
}

unsigned char* tu_expected_recv(const void* sbuf, int scount, MPI_Datatype stype, int rcount,
                                MPI_Datatype rtype, size_t rbytes, unsigned char fill)
{
    int packed_size = 0;
    MPI_Pack_size(scount, stype, MPI_COMM_WORLD, &packed_size);
    unsigned char* packed = malloc((size_t)packed_size);
    int pos = 0;
    MPI_Pack(sbuf, scount, stype, packed, packed_size, &pos, MPI_COMM_WORLD);
    unsigned char* expect = malloc(rbytes);
    memset(expect, fill, rbytes);
    int upos = 0;
    MPI_Unpack(packed, pos, &upos, expect, rcount, rtype, MPI_COMM_WORLD);
    free(packed);
    return expect;
}

int tu_verify_expected(const void* got, const void* expect, size_t n, unsigned char hole,
                       const char* what)
{
    const unsigned char* g = (const unsigned char*)got;
    const unsigned char* e = (const unsigned char*)expect;
    size_t wrong = 0;
    size_t first = 0;
    for (size_t i = 0; i < n; ++i) {
        if (g[i] != e[i] && wrong++ == 0) {
            first = i;
        }
    }
    if (wrong) {
        tu_check(0, __FILE__, __LINE__,
                 "%s: %zu of %zu bytes wrong; first: byte %zu is 0x%02x, expected 0x%02x%s", what,
                 wrong, n, first, g[first], e[first],
                 e[first] == hole ? " (a hole of the receive datatype)" : "");
    }
    return wrong == 0;
}

/* The packed size of n elements of type, and a buffer of that size (caller frees). */
static unsigned char* packed_stream(MPI_Datatype type, int n, int* size)
{
    *size = 0;
    MPI_Pack_size(n, type, MPI_COMM_SELF, size);
    return malloc(*size > 0 ? (size_t)*size : 1);
}

static void unpack_stream(unsigned char* stream, int size, void* buf, MPI_Datatype type, int n)
{
    int pos = 0;
    TU_MPI(MPI_Unpack(stream, size, &pos, buf, n, type, MPI_COMM_SELF));
    free(stream);
}

void tu_type_fill(void* buf, MPI_Datatype type, int n, int rank, int round)
{
    int size;
    unsigned char* stream = packed_stream(type, n, &size);
    tu_fill(stream, (size_t)size, 0, rank, round);
    unpack_stream(stream, size, buf, type, n);
}

void tu_type_set(void* buf, MPI_Datatype type, int n, unsigned char value)
{
    int size;
    unsigned char* stream = packed_stream(type, n, &size);
    memset(stream, value, (size_t)size);
    unpack_stream(stream, size, buf, type, n);
}

int tu_type_verify(const void* buf, MPI_Datatype type, int n, int rank, int round, const char* what)
{
    int size;
    unsigned char* stream = packed_stream(type, n, &size);
    int pos = 0;
    int ok = TU_MPI(MPI_Pack(buf, n, type, stream, size, &pos, MPI_COMM_SELF)) == MPI_SUCCESS;
    ok = ok && tu_verify(stream, (size_t)pos, 0, rank, round, what);
    free(stream);
    return ok;
}

double tu_deadline(void) { return MPI_Wtime() + TU_WAIT_TIMEOUT_S; }

void tu_check_deadline(double deadline, const char* what)
{
    if (MPI_Wtime() > deadline) {
        char msg[256];
        snprintf(msg, sizeof msg, "timeout after %.0f s waiting for %s", TU_WAIT_TIMEOUT_S, what);
        tu_abort(msg, __FILE__, __LINE__);
    }
}

int tu_wait(MPI_Request* req, MPI_Status* status, const char* what)
{
    double deadline = tu_deadline();
    for (;;) {
        int flag = 0;
        int rc = MPI_Test(req, &flag, status);
        if (rc != MPI_SUCCESS || flag) {
            return rc;
        }
        tu_check_deadline(deadline, what);
    }
}

int tu_waitall(int n, MPI_Request* reqs, MPI_Status* statuses, const char* what)
{
    double deadline = tu_deadline();
    for (;;) {
        int flag = 0;
        int rc = MPI_Testall(n, reqs, &flag, statuses);
        if (rc != MPI_SUCCESS || flag) {
            return rc;
        }
        tu_check_deadline(deadline, what);
    }
}

void tu_wait_arrived(MPI_Request req, int partition, const char* what)
{
    double deadline = tu_deadline();
    int flag = 0;
    while (!flag) {
        if (TU_MPI(MPI_Parrived(req, partition, &flag)) != MPI_SUCCESS) {
            return;
        }
        tu_check_deadline(deadline, what);
    }
}

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

_Thread_local volatile int tu_in_call = 0;
static long g_stall_ns = 0;
static long g_stalls = 0;
static long g_stalls_in_call = 0;

static void stall_handler(int sig)
{
    (void)sig;
    int saved = errno;
    __atomic_fetch_add(&g_stalls, 1, __ATOMIC_RELAXED);
    if (tu_in_call) {
        __atomic_fetch_add(&g_stalls_in_call, 1, __ATOMIC_RELAXED);
    }
    struct timespec ts = {0, g_stall_ns};
    nanosleep(&ts, NULL);
    errno = saved;
}

void tu_stall_install(long stall_us)
{
    g_stall_ns = stall_us * 1000L;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stall_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(TU_STALL_SIGNAL, &sa, NULL) != 0) {
        TU_ABORT("sigaction failed");
    }
}

timer_t tu_stall_timer_create(void)
{
    timer_t timer;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = TU_STALL_SIGNAL;
    sev.sigev_notify_thread_id = gettid();
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) {
        TU_ABORT("timer_create failed");
    }
    return timer;
}

void tu_stall_arm(timer_t timer, long first_ns, long interval_ns)
{
    struct itimerspec its = {{interval_ns / 1000000000L, interval_ns % 1000000000L},
                             {first_ns / 1000000000L, first_ns % 1000000000L}};
    timer_settime(timer, 0, &its, NULL);
}

long tu_stalls(int in_call)
{
    return __atomic_load_n(in_call ? &g_stalls_in_call : &g_stalls, __ATOMIC_RELAXED);
}

void tu_sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int tu_arg_int(int argc, char** argv, int i, int fallback)
{
    return i < argc ? atoi(argv[i]) : fallback;
}

void tu_shuffled_indices(int* a, int n, unsigned seed)
{
    uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (int i = 0; i < n; ++i) {
        a[i] = i;
    }
    for (int i = n - 1; i > 0; --i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((x >> 33) % (uint64_t)(i + 1));
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

int tu_pair_init(void* buf, int parts, MPI_Count count, MPI_Datatype type, int tag, MPI_Comm comm,
                 MPI_Request* req)
{
    if (tu_rank == 0) {
        return MPI_Psend_init(buf, parts, count, type, 1, tag, comm, MPI_INFO_NULL, req);
    }
    return MPI_Precv_init(buf, parts, count, type, 0, tag, comm, MPI_INFO_NULL, req);
}

unsigned char* tu_pair_setup(int parts, size_t part_bytes, int tag, MPI_Comm* ctl, MPI_Request* req)
{
    unsigned char* buf = malloc((size_t)parts * part_bytes);
    MPI_Comm_dup(MPI_COMM_WORLD, ctl);
    if (buf == NULL || TU_MPI(tu_pair_init(buf, parts, (MPI_Count)part_bytes, MPI_BYTE, tag,
                                           MPI_COMM_WORLD, req)) != MPI_SUCCESS) {
        TU_ABORT("tu_pair_setup");
    }
    return buf;
}

void tu_pready_all(int parts, MPI_Request req)
{
    /* Odd partitions in descending order, then even ones ascending: never the natural order. */
    for (int i = parts - 1 - (parts % 2 == 0 ? 0 : 1); i >= 1; i -= 2) {
        TU_MPI(MPI_Pready(i, req));
    }
    for (int i = 0; i < parts; i += 2) {
        TU_MPI(MPI_Pready(i, req));
    }
}

int tu_transfer_check(MPI_Comm comm, int src, int dst, int tag, int sparts, int rparts, int total,
                      int round)
{
    int me = -1;
    MPI_Comm_rank(comm, &me);
    if (me != src && me != dst) {
        return 1;
    }
    unsigned char* sbuf = malloc((size_t)total + 1);
    unsigned char* rbuf = malloc((size_t)total + 1);
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int ok = 1;
    if (me == src) {
        tu_fill(sbuf, (size_t)total, 0, src, round);
        ok &= TU_MPI(MPI_Psend_init(sbuf, sparts, total / sparts, MPI_BYTE, dst, tag, comm,
                                    MPI_INFO_NULL, &reqs[0])) == MPI_SUCCESS;
    }
    if (me == dst) {
        memset(rbuf, 0, (size_t)total);
        ok &= TU_MPI(MPI_Precv_init(rbuf, rparts, total / rparts, MPI_BYTE, src, tag, comm,
                                    MPI_INFO_NULL, &reqs[1])) == MPI_SUCCESS;
    }
    if (ok) {
        for (int i = 0; i < 2; ++i) {
            if (reqs[i] != MPI_REQUEST_NULL) {
                ok &= TU_MPI(MPI_Start(&reqs[i])) == MPI_SUCCESS;
            }
        }
        if (me == src && ok) {
            tu_pready_all(sparts, reqs[0]);
        }
        ok &= TU_MPI(tu_waitall(2, reqs, MPI_STATUSES_IGNORE, "tu_transfer_check")) == MPI_SUCCESS;
        if (me == dst) {
            ok &= tu_verify(rbuf, (size_t)total, 0, src, round, "tu_transfer_check data");
        }
    }
    for (int i = 0; i < 2; ++i) {
        if (reqs[i] != MPI_REQUEST_NULL) {
            TU_MPI(MPI_Request_free(&reqs[i]));
        }
    }
    free(sbuf);
    free(rbuf);
    return ok;
}

int tu_progress_thread_off(void)
{
    const char* mode = getenv("MPIPCL_PROGRESS");
    if (mode != NULL && (strcmp(mode, "thread") == 0 || strcmp(mode, "event") == 0 ||
                         strcmp(mode, "offload") == 0)) {
        return 0;
    }
    if (mode != NULL && strcmp(mode, "caller") == 0) {
        return 1;
    }
    const char* thread = getenv("MPIPCL_PROGRESS_THREAD");
    return thread != NULL && strcmp(thread, "0") == 0;
}
