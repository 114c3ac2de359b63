/* SPDX-License-Identifier: BSD-3-Clause */
/* 16 threads mark send partitions concurrently; 16 threads poll MPI_Parrived on the receiver. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define THREADS 16
#define PER_THREAD 4
#define SPARTS (THREADS * PER_THREAD)
#define RPARTS (THREADS * 2)
#define PART_BYTES 2048
#define TOTAL (SPARTS * PART_BYTES)
#define ROUNDS 6
#define TAG 21

typedef struct {
    int id;
    int round;
    unsigned char* buf;
    MPI_Request req;
} Worker;

/* Sender thread: fill its own PER_THREAD partitions, then mark them (single, range or list). */
static void* send_worker(void* arg)
{
    Worker* w = arg;
    int first = w->id * PER_THREAD;
    tu_fill(w->buf + (size_t)first * PART_BYTES, (size_t)PER_THREAD * PART_BYTES,
            (size_t)first * PART_BYTES, 0, w->round);
    int list[PER_THREAD];
    tu_shuffled_indices(list, PER_THREAD, (unsigned)(w->id * 31 + w->round));
    switch (w->round % 3) {
        case 0:
            for (int i = 0; i < PER_THREAD; ++i) {
                TU_MPI(MPI_Pready(first + list[i], w->req));
            }
            break;
        case 1:
            TU_MPI(MPI_Pready_range(first, first + PER_THREAD - 1, w->req));
            break;
        default:
            for (int i = 0; i < PER_THREAD; ++i) {
                list[i] += first;
            }
            TU_MPI(MPI_Pready_list(PER_THREAD, list, w->req));
            break;
    }
    return NULL;
}

/* Receiver thread: wait for its two receive partitions with MPI_Parrived and check them. */
static void* recv_worker(void* arg)
{
    Worker* w = arg;
    const size_t rbytes = TOTAL / RPARTS;
    for (int p = 2 * w->id; p < 2 * w->id + 2; ++p) {
        tu_wait_arrived(w->req, p, "receive partition");
        tu_verify(w->buf + p * rbytes, rbytes, p * rbytes, 0, w->round, "receive partition");
    }
    return NULL;
}

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_MULTIPLE, 2);
    unsigned char* buf = malloc(TOTAL);
    MPI_Request req;
    if (tu_rank == 0) {
        TU_MPI(MPI_Psend_init(buf, SPARTS, PART_BYTES, MPI_BYTE, 1, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    } else {
        TU_MPI(MPI_Precv_init(buf, RPARTS, TOTAL / RPARTS, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &req));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        if (tu_rank == 1) {
            memset(buf, 0, TOTAL);
        }
        TU_MPI(MPI_Start(&req));
        pthread_t tid[THREADS];
        Worker w[THREADS];
        for (int t = 0; t < THREADS; ++t) {
            w[t] = (Worker){t, round, buf, req};
            pthread_create(&tid[t], NULL, tu_rank == 0 ? send_worker : recv_worker, &w[t]);
        }
        for (int t = 0; t < THREADS; ++t) {
            pthread_join(tid[t], NULL);
        }
        TU_MPI(tu_wait(&req, MPI_STATUS_IGNORE, "completion"));
        if (tu_rank == 1) {
            tu_verify(buf, TOTAL, 0, 0, round, "received data");
        }
    }
    TU_MPI(MPI_Request_free(&req));
    free(buf);
    return tu_finish();
}
