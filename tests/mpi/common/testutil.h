/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers of the MPI test programs: init/finish, checks, byte patterns, bounded waits. */
#ifndef MPIPCL_TESTUTIL_H_INCLUDED
#define MPIPCL_TESTUTIL_H_INCLUDED

#include <mpipcl.h>
#include <stddef.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Seconds a bounded wait loop may take before the test fails and aborts. */
#define TU_WAIT_TIMEOUT_S 20.0
/** Seconds after tu_init (or tu_watchdog_rearm) at which the watchdog aborts a hung program. */
#define TU_WATCHDOG_S 60
/** Exit code that CTest treats as "skipped" (SKIP_RETURN_CODE). */
#define TU_SKIP_CODE 77

/** This process's rank and the size of MPI_COMM_WORLD (valid after tu_init). */
extern int tu_rank;
extern int tu_size;

/**
 * Initializes MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE) and starts the watchdog. The
 * environment variable MPIPCL_TEST_THREAD_LEVEL (single|funneled|serialized|multiple) asks for
 * another level, so one program also covers the library's behaviour without a progress thread.
 * Exits with TU_SKIP_CODE on every rank when the granted level is below @p required or when
 * MPI_COMM_WORLD does not have exactly @p nprocs ranks (0 = any size). Returns the granted level.
 */
int tu_init(int* argc, char*** argv, int required, int nprocs);

/** As tu_init, but asks MPI_Init_thread for @p requested instead of MPI_THREAD_MULTIPLE. */
int tu_init_level(int* argc, char*** argv, int requested, int required, int nprocs);

/** Moves the watchdog's deadline to @p seconds from now (long-running programs call it often). */
void tu_watchdog_rearm(int seconds);

/**
 * Agrees on the result (MPI_Allreduce MAX of the failure flags on MPI_COMM_WORLD), stops the
 * watchdog, finalizes MPI and returns the exit code: 0 when every rank passed, 1 otherwise.
 */
int tu_finish(void);

/** Records a failure (file, line, rank, message on stderr). Returns @p ok. */
int tu_check(int ok, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** Fails the test when @p cond is false; evaluates to the truth of @p cond. */
#define TU_CHECK(cond) tu_check(!!(cond), __FILE__, __LINE__, "check failed: %s", #cond)
/** As TU_CHECK with a printf-style explanation. */
#define TU_CHECK_MSG(cond, ...) tu_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
/** Fails the test when the MPI call does not return MPI_SUCCESS; evaluates to the code. */
#define TU_MPI(call) tu_mpi_ok((call), #call, __FILE__, __LINE__)
/** Fails the test unless @p rc is an error of class @p cls. */
#define TU_EXPECT_ERR(rc, cls) tu_expect_err_class((rc), (cls), (cls), #rc, __FILE__, __LINE__)
/** Fails the test unless @p rc is an error of class @p cls1 or @p cls2. */
#define TU_EXPECT_ERR2(rc, cls1, cls2) \
    tu_expect_err_class((rc), (cls1), (cls2), #rc, __FILE__, __LINE__)
/** Fails the test when @p rc is MPI_SUCCESS (any error class is accepted). */
#define TU_EXPECT_ANY_ERR(rc) \
    tu_expect_err_class((rc), MPI_ERR_LASTCODE, MPI_ERR_LASTCODE, #rc, __FILE__, __LINE__)

int tu_mpi_ok(int rc, const char* what, const char* file, int line);
int tu_expect_err_class(int rc, int cls1, int cls2, const char* what, const char* file, int line);

/**
 * Re-arms the watchdog: it aborts the job with a one-line message naming @p fmt (printf-style)
 * unless it is re-armed again or tu_finish runs within @p seconds. tu_init arms it for
 * TU_WATCHDOG_S; long tests re-arm it at each step, so a hang is reported where it happened.
 */
void tu_watchdog_arm(int seconds, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/** Prints @p what with file/line and rank, then aborts the whole job (for hangs). */
void tu_abort(const char* what, const char* file, int line);
#define TU_ABORT(what) tu_abort((what), __FILE__, __LINE__)

/** The pattern byte of byte @p index of the data rank @p rank sends in round @p round. */
unsigned char tu_pattern(int rank, int round, size_t index);
/** Fills @p n bytes with the pattern bytes first .. first+n-1 of (rank, round). */
void tu_fill(void* buf, size_t n, size_t first, int rank, int round);
/**
 * Verifies @p n bytes against pattern bytes first .. first+n-1 of (rank, round); reports the
 * first mismatch (labelled @p what) and the number of wrong bytes as a failure. Returns 1 if OK.
 */
int tu_verify(const void* buf, size_t n, size_t first, int rank, int round, const char* what);
/** Verifies that @p n bytes all equal @p value (guard regions, untouched buffers). */
int tu_verify_value(const void* buf, size_t n, unsigned char value, const char* what);

/** Bytes spanned by @p n consecutive elements of @p type (whose lower bound must be 0). */
size_t tu_type_span(MPI_Datatype type, int n);

/**
 * The receive buffer a transfer must produce: @p scount elements of @p stype from @p sbuf
 * packed, then unpacked as @p rcount elements of @p rtype over @p rbytes bytes of @p fill (so
 * the holes of the receive datatype keep @p fill). Returns a malloc'ed buffer.
 */
unsigned char* tu_expected_recv(const void* sbuf, int scount, MPI_Datatype stype, int rcount,
                                MPI_Datatype rtype, size_t rbytes, unsigned char fill);

/**
 * Compares @p n received bytes with @p expect; reports the first difference (labelled @p what,
 * noting when the expected byte is @p hole, i.e. a hole of the receive datatype) and the number
 * of wrong bytes as a failure. Returns 1 if equal.
 */
int tu_verify_expected(const void* got, const void* expect, size_t n, unsigned char hole,
                       const char* what);

/**
 * Writes pattern bytes 0 .. size-1 of (rank, round) into the data bytes of @p n elements of
 * @p type at @p buf (MPI_Unpack of the pattern stream: holes stay as they are; @p buf may be
 * MPI_BOTTOM for types of absolute addresses).
 */
void tu_type_fill(void* buf, MPI_Datatype type, int n, int rank, int round);
/**
 * Verifies that the data bytes of @p n elements of @p type at @p buf hold pattern bytes
 * 0 .. size-1 of (rank, round) (MPI_Pack, then tu_verify). Returns 1 if OK.
 */
int tu_type_verify(const void* buf, MPI_Datatype type, int n, int rank, int round,
                   const char* what);
/** Sets every data byte of @p n elements of @p type at @p buf to @p value (holes untouched). */
void tu_type_set(void* buf, MPI_Datatype type, int n, unsigned char value);

/** MPI_Wtime() + TU_WAIT_TIMEOUT_S. */
double tu_deadline(void);
/** Aborts (TU_ABORT) when @p deadline has passed; @p what names the operation waited for. */
void tu_check_deadline(double deadline, const char* what);

/** MPI_Test loop bounded by TU_WAIT_TIMEOUT_S; returns the MPI_Test code that completed it. */
int tu_wait(MPI_Request* req, MPI_Status* status, const char* what);
/** MPI_Testall loop bounded by TU_WAIT_TIMEOUT_S; returns the MPI_Testall code. */
int tu_waitall(int n, MPI_Request* reqs, MPI_Status* statuses, const char* what);
/** MPI_Parrived loop on one partition bounded by TU_WAIT_TIMEOUT_S. */
void tu_wait_arrived(MPI_Request req, int partition, const char* what);

/**
 * Stall timers: a stand-in for preemption at a chosen moment. A thread arms a timer that sends
 * TU_STALL_SIGNAL to itself; the handler sleeps, so the thread stops for a while wherever it
 * is, typically inside an MPI call and possibly holding a library lock. This widens race
 * windows that are otherwise nanoseconds wide, without touching the library.
 */
#define TU_STALL_SIGNAL SIGUSR2
/** Installs the process-wide handler: every stall sleeps @p stall_us microseconds. */
void tu_stall_install(long stall_us);
/** Creates a timer that signals the calling thread (delete it with timer_delete). */
timer_t tu_stall_timer_create(void);
/** Arms @p timer: first stall after @p first_ns (>= 1), then every @p interval_ns (0 = once);
 * first_ns = 0 disarms it. */
void tu_stall_arm(timer_t timer, long first_ns, long interval_ns);
/** Set to 1 by a thread while it is inside the call under test (stall statistics). */
extern _Thread_local volatile int tu_in_call;
/** Number of stalls so far; with @p in_call = 1, only those that hit while tu_in_call was 1. */
long tu_stalls(int in_call);

/** Sleeps @p us microseconds (nanosleep; usleep is not C11/POSIX-2008). */
void tu_sleep_us(long us);

/** Integer command-line argument @p i (1-based), or @p fallback when absent. */
int tu_arg_int(int argc, char** argv, int i, int fallback);

/* 1 when the environment turns the library's progress thread off: MPIPCL_PROGRESS=caller, or
 * MPIPCL_PROGRESS_THREAD=0 while MPIPCL_PROGRESS names no other valid mode (docs/config.md). */
int tu_progress_thread_off(void);

/** Fills @p a with 0 .. n-1 in a pseudo-random order determined by @p seed. */
void tu_shuffled_indices(int* a, int n, unsigned seed);

/**
 * The two-rank pair of the simplest programs: rank 0 gets MPI_Psend_init(@p buf, ...) to rank
 * 1, rank 1 MPI_Precv_init(@p buf, ...) from rank 0 (MPI_INFO_NULL). Returns the init's code.
 */
int tu_pair_init(void* buf, int parts, MPI_Count count, MPI_Datatype type, int tag, MPI_Comm comm,
                 MPI_Request* req);

/**
 * tu_pair_init on a fresh buffer of @p parts x @p part_bytes bytes (MPI_BYTE, MPI_COMM_WORLD),
 * with a duplicate of MPI_COMM_WORLD for the program's own messages in @p ctl. Returns the
 * buffer (free it); aborts when the init fails.
 */
unsigned char* tu_pair_setup(int parts, size_t part_bytes, int tag, MPI_Comm* ctl,
                             MPI_Request* req);

/** Marks partitions 0 .. parts-1 ready in a scrambled order, one MPI_Pready each. */
void tu_pready_all(int parts, MPI_Request req);

/**
 * One complete partitioned transfer of @p total bytes (MPI_BYTE) from rank @p src to rank
 * @p dst on @p comm with fresh requests (sparts / rparts partitions), bounded waits, every byte
 * verified on @p dst, requests freed. Ranks other than src and dst return at once. Returns 1
 * when this rank's part succeeded.
 */
int tu_transfer_check(MPI_Comm comm, int src, int dst, int tag, int sparts, int rparts, int total,
                      int round);

#ifdef __cplusplus
}
#endif

#endif /* MPIPCL_TESTUTIL_H_INCLUDED */
