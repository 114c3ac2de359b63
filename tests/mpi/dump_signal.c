/* SPDX-License-Identifier: BSD-3-Clause */
/* MPIPCL_DUMP_SIGNAL: the signal makes the library log every request's state.
 *
 * Rank 0 sends PARTS partitions but holds back the last one; once both rounds run, rank 1
 * sends itself the dump signal
 * (SIGUSR1, which tu_init configures) with its stderr redirected into a pipe, and drives
 * progress with MPI_Test until a line "state dump: transfer ..." describing its receive as
 * RUNNING shows up (bounded). Then rank 0 marks the last partition and the data is checked:
 * the dump must not disturb the transfer.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define PARTS 4
#define COUNT 256
#define TAG 12

/* Reads what is in the non-blocking pipe @p fd onto the end of @p text (size @p cap). */
static void drain_pipe(int fd, char* text, size_t cap)
{
    size_t len = strlen(text);
    for (;;) {
        ssize_t n = read(fd, text + len, cap - 1 - len);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
        text[len] = '\0';
    }
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static unsigned char buf[PARTS * COUNT];
    MPI_Request req = MPI_REQUEST_NULL;
    if (tu_rank == 0) {
        tu_fill(buf, sizeof buf, 0, 0, 1);
        TU_MPI(MPI_Psend_init(buf, PARTS, COUNT, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req));
        TU_MPI(MPI_Start(&req));
        TU_MPI(MPI_Pready_range(0, PARTS - 2, req));
        MPI_Barrier(MPI_COMM_WORLD); /* both rounds run */
        MPI_Barrier(MPI_COMM_WORLD); /* rank 1 has its dump */
        TU_MPI(MPI_Pready(PARTS - 1, req));
        tu_wait(&req, MPI_STATUS_IGNORE, "send");
    } else {
        memset(buf, 0, sizeof buf);
        TU_MPI(MPI_Precv_init(buf, PARTS, COUNT, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                              &req));
        TU_MPI(MPI_Start(&req));
        MPI_Barrier(MPI_COMM_WORLD);
        int fds[2];
        TU_CHECK(pipe(fds) == 0);
        fcntl(fds[0], F_SETFL, O_NONBLOCK);
        fflush(stderr);
        const int saved = dup(2);
        dup2(fds[1], 2);
        raise(SIGUSR1);
        static char text[1 << 16];
        text[0] = '\0';
        const double until = MPI_Wtime() + 5.0;
        int found = 0;
        while (!found && MPI_Wtime() < until) {
            int flag = 0;
            TU_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            TU_CHECK_MSG(!flag, "the receive completed without its last partition");
            drain_pipe(fds[0], text, sizeof text);
            const char* line = strstr(text, "state dump: transfer ");
            found = line != NULL && strstr(line, "recv peer=0") != NULL &&
                    strstr(line, "RUNNING") != NULL;
            usleep(1000);
        }
        dup2(saved, 2);
        close(saved);
        close(fds[0]);
        close(fds[1]);
        fputs(text, stderr);
        TU_CHECK_MSG(found, "no state dump of the running receive within 5 s of the signal");
        MPI_Barrier(MPI_COMM_WORLD);
        tu_wait(&req, MPI_STATUS_IGNORE, "receive");
        tu_verify(buf, sizeof buf, 0, 0, 1, "received data");
    }
    TU_MPI(MPI_Request_free(&req));
    return tu_finish();
}
