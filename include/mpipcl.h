/* SPDX-License-Identifier: BSD-3-Clause */
/* mpipcl: the MPI-4.0 partitioned point-to-point API on any MPI library (public C header). */
#ifndef MPIPCL_H_INCLUDED
#define MPIPCL_H_INCLUDED

#include <mpi.h>

#include "mpipcl_config.h"
#include "mpipcl_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Marks the symbols libmpipcl exports (everything else in the library is hidden). */
#if defined(__GNUC__)
#define MPIPCL_API __attribute__((visibility("default")))
#else
#define MPIPCL_API
#endif

/**
 * @file mpipcl.h
 *
 * Link with `-lmpipcl` placed before the MPI library (the MPI compiler wrappers already put
 * libmpi last), or preload it with `LD_PRELOAD=libmpipcl.so`. The library then provides the
 * six MPI-4.0 partitioned calls and wraps MPI_Init*, MPI_Finalize, MPI_Start, MPI_Startall,
 * MPI_Wait*, MPI_Test*, MPI_Request_free, MPI_Request_get_status and MPI_Cancel through the
 * PMPI profiling interface. Requests that are not partitioned pass straight to PMPI_*.
 *
 * Backend selection: info key "mpipcl_backend" = "auto" (default: persistent or rma by the
 * transfer's size, from the tuning file MPIPCL_TUNING_FILE) | "persistent" | "rma" |
 * "native", or the environment variable MPIPCL_BACKEND. A choice this process cannot honour
 * (rma without a window, native without the MPI's own partitioned calls) falls back to
 * persistent instead of failing; MPIX_Pcl_backend names the backend a request got. See
 * docs/config.md for every knob. The rma
 * backend writes with MPI_Put into the receiver's buffer through one dynamic window per
 * process, created inside MPI_Init* (set MPIPCL_RMA=0 to skip it).
 *
 * Thread levels: with MPI_THREAD_MULTIPLE the library runs one progress thread (it sleeps
 * with back-off, never spins) and MPI_Pready may start data movement from the calling
 * thread. Below MPI_THREAD_MULTIPLE no library thread makes MPI calls: all MPI work happens
 * inside the application's own calls (Start, Parrived, Wait, Test ...).
 */

/** The name of the progress thread (pthread_setname_np), as `top -H`, `perf` and
 * /proc/<pid>/task/<tid>/comm show it; mpipcl-bench reads its CPU time and wake-ups by it. */
#define MPIPCL_PROGRESS_THREAD_NAME "mpipcl-progress"

#if !MPIPCL_MPI_HAS_PARTITIONED
/* This MPI's mpi.h (e.g. Open MPI 4.1) does not declare the partitioned calls: mpipcl's own
 * prototypes, exactly MPI-4.0's. Where mpi.h has them (MPICH 4, Open MPI 5) its prototypes are
 * used and libmpipcl's definitions match them (see mpipcl_config.h). */

/**
 * @brief Create a partitioned send request (local, never blocks).
 * @param [in] buf        start of the send buffer (may be NULL when count is 0)
 * @param [in] partitions number of partitions, > 0
 * @param [in] count      elements of @p datatype per partition, >= 0
 * @param [in] datatype   committed datatype
 * @param [in] dest       destination rank in @p comm, or MPI_PROC_NULL
 * @param [in] tag        message tag, 0 <= tag <= MPI_TAG_UB
 * @param [in] comm       communicator
 * @param [in] info       MPI_INFO_NULL or info with "mpipcl_*" keys (others are ignored)
 * @param [out] request   the new, inactive request (written only on success)
 * @return MPI_SUCCESS, or MPI_ERR_ARG (partitions <= 0, NULL request), MPI_ERR_COUNT,
 *         MPI_ERR_TYPE, MPI_ERR_RANK, MPI_ERR_TAG, MPI_ERR_COMM, MPI_ERR_NO_MEM,
 *         MPI_ERR_OTHER (MPI not initialized through this library).
 * Thread safety: may be called from any thread at MPI_THREAD_MULTIPLE.
 */
MPIPCL_API int MPI_Psend_init(const void* buf, int partitions, MPI_Count count,
                              MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                              MPI_Info info, MPI_Request* request);

/**
 * @brief Create a partitioned receive request (local, never blocks).
 * @param [in] buf        start of the receive buffer (may be NULL when count is 0)
 * @param [in] partitions number of partitions, > 0 (may differ from the sender's)
 * @param [in] count      elements of @p datatype per partition, >= 0
 * @param [in] datatype   committed datatype
 * @param [in] source     source rank in @p comm, or MPI_PROC_NULL (never MPI_ANY_SOURCE)
 * @param [in] tag        message tag (never MPI_ANY_TAG)
 * @param [in] comm       communicator
 * @param [in] info       MPI_INFO_NULL or info with "mpipcl_*" keys
 * @param [out] request   the new, inactive request (written only on success)
 * @return MPI_SUCCESS, or MPI_ERR_RANK (wildcard or bad source), MPI_ERR_TAG (wildcard or bad
 *         tag), MPI_ERR_ARG, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_COMM, MPI_ERR_NO_MEM.
 * Thread safety: may be called from any thread at MPI_THREAD_MULTIPLE.
 */
MPIPCL_API int MPI_Precv_init(void* buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                              int source, int tag, MPI_Comm comm, MPI_Info info,
                              MPI_Request* request);

/**
 * @brief Mark one send partition ready to be transferred.
 * @param [in] partition partition index in [0, partitions)
 * @param [in] request   an active partitioned send request
 * @return MPI_SUCCESS, MPI_ERR_ARG (partition out of range or already marked in this round),
 *         MPI_ERR_REQUEST (not a partitioned send request, or not started).
 * Thread safety: lock-free; many threads may mark different partitions concurrently.
 */
MPIPCL_API int MPI_Pready(int partition, MPI_Request request);

/**
 * @brief Mark the partitions partition_low..partition_high (inclusive) ready.
 * @return as MPI_Pready; MPI_ERR_ARG also when partition_low > partition_high.
 * Thread safety: as MPI_Pready.
 */
MPIPCL_API int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request);

/**
 * @brief Mark the listed partitions ready (any order; duplicates are erroneous).
 * @return as MPI_Pready; MPI_ERR_ARG for a negative length, NULL array or duplicate entry.
 * Thread safety: as MPI_Pready.
 */
MPIPCL_API int MPI_Pready_list(int length, const int array_of_partitions[], MPI_Request request);

/**
 * @brief Ask whether one receive partition has arrived.
 * @param [in] request   partitioned receive request (MPI_REQUEST_NULL or inactive: flag = true)
 * @param [in] partition receive partition index in [0, partitions)
 * @param [out] flag     true once every byte of that partition is in the buffer
 * @return MPI_SUCCESS, MPI_ERR_ARG (partition out of range, NULL flag), MPI_ERR_REQUEST
 *         (a send request or a request that is not partitioned).
 * Thread safety: may be called from any thread at MPI_THREAD_MULTIPLE; it drives progress
 * itself, so a loop of only MPI_Parrived calls terminates.
 */
MPIPCL_API int MPI_Parrived(MPI_Request request, int partition, int* flag);

#endif /* !MPIPCL_MPI_HAS_PARTITIONED */

/**
 * @brief Report whether this process's MPI calls reach mpipcl's wrappers.
 * @param [out] flag 1 if MPI_Wait and MPI_Start resolve to mpipcl (correct link order or
 *                   LD_PRELOAD), 0 if the MPI library's own symbols win.
 * @return MPI_SUCCESS.
 * Thread safety: any thread.
 */
MPIPCL_API int MPIX_Pcl_interposed(int* flag);

/**
 * @brief Name the backend a partitioned request of mpipcl uses.
 *
 * Before the pair is made: the backend this side settled on at init ("auto" resolved, and an
 * rma or native hint this process cannot honour already fallen back to "persistent"). Once
 * paired: the backend both sides agreed on ("rma" only when both sides chose it and the
 * receive buffer could be attached; see docs/config.md).
 * @param [in] request a partitioned request created by mpipcl (not MPI_REQUEST_NULL; a request
 *                     of mpipcl_backend=native belongs to the MPI library and is refused)
 * @param [out] name "persistent" or "rma" (a static string)
 * @return MPI_SUCCESS; MPI_ERR_ARG if @p name is NULL; MPI_ERR_REQUEST if @p request is not
 *         an mpipcl partitioned request.
 * Thread safety: any thread.
 */
MPIPCL_API int MPIX_Pcl_backend(MPI_Request request, const char** name);

/**
 * @brief Wait until the receiver's buffer is ready for this round.
 *
 * Data is never written into a receive buffer before the receiver's MPI_Start of that round.
 * The RMA backend learns of it from a notice every MPI_Start of an RMA receive sends ("ready
 * for round r") and holds ready partitions back until it arrives; the persistent backend
 * needs no notice (MPI's matching holds its messages until the receive is posted), so its
 * receives send none. This call makes the wait explicit:
 * - send request: once paired, persistent backend: returns at once (its Pready moves data
 *   at once anyway). RMA backend: returns once the receiver has called MPI_Start for the
 *   round this request is in. Both: also returns when the round completed or pairing failed
 *   (the error is reported by the completion call). It drives progress while waiting (with
 *   back-off). After it returns, MPI_Pready of this round moves data at once (RMA: MPI_Put
 *   from the Pready caller at MPI_THREAD_MULTIPLE) instead of waiting for the notice.
 * - receive request: local; returns at once (an RMA receive's notice left at MPI_Start, or
 *   leaves when the sender's MPI_Psend_init has been matched).
 * @param [in] request an active partitioned request, or MPI_REQUEST_NULL (returns at once)
 * @return MPI_SUCCESS, MPI_ERR_REQUEST (not a partitioned request, or not started).
 * Thread safety: any thread at MPI_THREAD_MULTIPLE.
 */
MPIPCL_API int MPIX_Pbuf_prepare(MPI_Request request);

/**
 * @brief MPIX_Pbuf_prepare on each of @p count requests, in order (MPI_REQUEST_NULL allowed).
 * @return MPI_SUCCESS, or the first failing request's error; MPI_ERR_ARG for count < 0 or a
 *         NULL array.
 * Thread safety: as MPIX_Pbuf_prepare.
 */
MPIPCL_API int MPIX_Pbuf_prepareall(int count, MPI_Request requests[]);

/* Partitioned collectives (an extension: no MPI standard has them yet). Each call creates one
 * persistent request, local and non-blocking like MPI_Psend_init, used with MPI_Start[all],
 * MPI_Wait*, MPI_Test*, MPI_Request_free like any other and mixed freely with other requests
 * in arrays. Every rank of @p comm makes the call with the same partitions, count, datatype
 * (size), root and op, and collective inits on one communicator happen in the same order on
 * every rank (as for MPI's own collectives). count is elements per partition. Contributors
 * mark partitions with MPI_Pready, MPI_Pready_range, MPI_Pready_list; ranks that receive a
 * result may poll MPI_Parrived(request, p, &flag), true once partition p of the result is
 * final in the buffer. A partition moves through the algorithm (trees of internal partitioned
 * transfers that follow the nodes, over the backend "mpipcl_backend" selects) as soon as its
 * inputs are there, never waiting for the whole buffer. Intracommunicators only. */

/**
 * @brief Create a partitioned broadcast request (local, never blocks).
 *
 * The root marks partitions of @p buffer ready with MPI_Pready*; every other rank may poll
 * MPI_Parrived for partition p of @p buffer. An interior rank of the tree forwards partition
 * p as soon as it arrived.
 * @param [in,out] buffer  the root's data; the result on the other ranks
 * @param [in] partitions  number of partitions, > 0, the same on every rank
 * @param [in] count       elements of @p datatype per partition, >= 0
 * @param [in] datatype    committed datatype
 * @param [in] root        rank of the root in @p comm
 * @param [in] comm        intracommunicator
 * @param [in] info        MPI_INFO_NULL or info with "mpipcl_*" keys (others are ignored)
 * @param [out] request    the new request (inactive)
 * @return MPI_SUCCESS; MPI_ERR_ARG (partitions <= 0, NULL request), MPI_ERR_ROOT (root out
 *         of range), MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_COMM (null or intercommunicator).
 *         MPI_Pready* on a non-root and MPI_Parrived on the root: MPI_ERR_REQUEST. Ranks
 *         that disagree on partitions, count, datatype size or root: every rank's round
 *         fails (MPI_ERR_ARG, MPI_ERR_TRUNCATE / MPI_ERR_COUNT, MPI_ERR_ROOT).
 * Thread safety: any thread; MPI_Pready* on the request from many threads at once.
 */
MPIPCL_API int MPIX_Pbcast_init(void* buffer, int partitions, MPI_Count count,
                                MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
                                MPI_Request* request);

/**
 * @brief Create a partitioned reduce request (local, never blocks).
 *
 * Every rank marks partitions of @p sendbuf ready with MPI_Pready*; the root may poll
 * MPI_Parrived for partition p of @p recvbuf. Partition p is combined with MPI_Reduce_local as
 * soon as the contributions for p are there; operands are combined in rank order, so
 * non-commutative ops are right.
 * @param [in] sendbuf     this rank's contribution, or MPI_IN_PLACE at the root (then in
 *                         @p recvbuf)
 * @param [out] recvbuf    the result (significant at the root only)
 * @param [in] partitions  number of partitions, > 0, the same on every rank
 * @param [in] count       elements of @p datatype per partition, >= 0
 * @param [in] datatype    committed datatype
 * @param [in] op          predefined or user op (MPI_Op_create)
 * @param [in] root        rank of the root in @p comm
 * @param [in] comm        intracommunicator
 * @param [in] info        MPI_INFO_NULL or info with "mpipcl_*" keys
 * @param [out] request    the new request (inactive)
 * @return as MPIX_Pbcast_init; MPI_ERR_OP for MPI_OP_NULL and for a predefined op the
 *         standard does not define on @p datatype; MPI_ERR_BUFFER for MPI_IN_PLACE at a
 *         non-root. MPI_Parrived on a rank other than the root: MPI_ERR_REQUEST. Ranks that
 *         disagree on a predefined op: every rank's round fails with MPI_ERR_OP.
 * Thread safety: as MPIX_Pbcast_init.
 */
MPIPCL_API int MPIX_Preduce_init(const void* sendbuf, void* recvbuf, int partitions,
                                 MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root,
                                 MPI_Comm comm, MPI_Info info, MPI_Request* request);

/**
 * @brief Create a partitioned allreduce request (local, never blocks).
 *
 * Every rank marks partitions of @p sendbuf ready with MPI_Pready* and may poll MPI_Parrived
 * for partition p of @p recvbuf (a reduce to rank 0 followed by a bcast, pipelined per
 * partition).
 * @param [in] sendbuf     this rank's contribution, or MPI_IN_PLACE (then in @p recvbuf)
 * @param [out] recvbuf    the result
 * @param [in] partitions  number of partitions, > 0, the same on every rank
 * @param [in] count       elements of @p datatype per partition, >= 0
 * @param [in] datatype    committed datatype
 * @param [in] op          predefined or user op
 * @param [in] comm        intracommunicator
 * @param [in] info        MPI_INFO_NULL or info with "mpipcl_*" keys
 * @param [out] request    the new request (inactive)
 * @return as MPIX_Preduce_init (no root).
 * Thread safety: as MPIX_Pbcast_init.
 */
MPIPCL_API int MPIX_Pallreduce_init(const void* sendbuf, void* recvbuf, int partitions,
                                    MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm, MPI_Info info, MPI_Request* request);

/* Block-wise partitioned collectives. Each rank exchanges blocks with others; a block is
 * partitions x count elements of its side's datatype, and the two sides of a block may cut it
 * into different partition counts (and use different datatypes) as long as the type-signature
 * bytes match, exactly as for MPI_Psend_init / MPI_Precv_init. Send partitions are numbered
 * across the send blocks: MPI_Pready(p) marks partition p % send_partitions of send block
 * p / send_partitions. Receive partitions likewise: MPI_Parrived(request, q, &flag) reports
 * partition q % recv_partitions of receive block q / recv_partitions, the block from rank (or
 * in-neighbour) q / recv_partitions. A marked partition leaves at once, never waiting for the
 * rest of the buffer. MPI_IN_PLACE (gather at the root, allgather): the rank's own block is
 * already in recvbuf (block rank), its send arguments are ignored, and it marks that block's
 * partitions, numbered as receive partitions (0 .. recv_partitions-1), with MPI_Pready*.
 * Ranks whose block sizes do not match: every rank's round fails with an error class
 * (MPI_ERR_TRUNCATE where the receiver's block is smaller, else MPI_ERR_COUNT or
 * MPI_ERR_ARG), never a hang. Errors at init as MPIX_Pbcast_init, and: MPI_ERR_ARG for
 * send_partitions or recv_partitions <= 0 where significant, MPI_ERR_BUFFER for MPI_IN_PLACE
 * where it is not allowed. Thread safety as MPIX_Pbcast_init. */

/**
 * @brief Create a partitioned gather request (local, never blocks).
 *
 * Every rank marks the partitions of its block (@p sendbuf) with MPI_Pready*; the root may poll
 * MPI_Parrived for partition q of @p recvbuf (block q / recv_partitions, from that rank).
 * @param [in] sendbuf          this rank's block; MPI_IN_PLACE at the root (its block is in
 *                              @p recvbuf already)
 * @param [in] send_partitions  partitions of the block, > 0 (ignored at an in-place root)
 * @param [in] send_count       elements of @p sendtype per send partition, >= 0
 * @param [in] sendtype         committed datatype
 * @param [out] recvbuf         size blocks in rank order (significant at the root only)
 * @param [in] recv_partitions  partitions per received block, > 0 (root only)
 * @param [in] recv_count       elements of @p recvtype per receive partition (root only)
 * @param [in] recvtype         committed datatype (root only)
 * @param [in] root             rank of the root in @p comm
 * @param [in] comm             intracommunicator
 * @param [in] info             MPI_INFO_NULL or info with "mpipcl_*" keys
 * @param [out] request         the new request (inactive)
 * @return see the block-wise collectives above; MPI_ERR_ROOT for a root out of range;
 *         MPI_ERR_BUFFER for MPI_IN_PLACE at a non-root. MPI_Parrived on a non-root:
 *         MPI_ERR_REQUEST.
 */
MPIPCL_API int MPIX_Pgather_init(const void* sendbuf, int send_partitions, MPI_Count send_count,
                                 MPI_Datatype sendtype, void* recvbuf, int recv_partitions,
                                 MPI_Count recv_count, MPI_Datatype recvtype, int root,
                                 MPI_Comm comm, MPI_Info info, MPI_Request* request);

/**
 * @brief Create a partitioned allgather request (local, never blocks).
 *
 * Every rank marks the partitions of its block with MPI_Pready* and may poll MPI_Parrived for
 * partition q of @p recvbuf (block q / recv_partitions, from that rank; its own block counts
 * as arrived once marked and copied).
 * @param [in] sendbuf          this rank's block, or MPI_IN_PLACE (block rank of @p recvbuf)
 * @param [in] send_partitions  partitions of the block, > 0 (ignored with MPI_IN_PLACE)
 * @param [in] send_count       elements of @p sendtype per send partition, >= 0
 * @param [in] sendtype         committed datatype
 * @param [out] recvbuf         size blocks in rank order
 * @param [in] recv_partitions  partitions per received block, > 0
 * @param [in] recv_count       elements of @p recvtype per receive partition, >= 0
 * @param [in] recvtype         committed datatype
 * @param [in] comm             intracommunicator
 * @param [in] info             MPI_INFO_NULL or info with "mpipcl_*" keys
 * @param [out] request         the new request (inactive)
 * @return see the block-wise collectives above.
 */
MPIPCL_API int MPIX_Pallgather_init(const void* sendbuf, int send_partitions, MPI_Count send_count,
                                    MPI_Datatype sendtype, void* recvbuf, int recv_partitions,
                                    MPI_Count recv_count, MPI_Datatype recvtype, MPI_Comm comm,
                                    MPI_Info info, MPI_Request* request);

/**
 * @brief Create a partitioned alltoall request (local, never blocks).
 *
 * @p sendbuf holds size blocks, block r for rank r: MPI_Pready(p) marks partition
 * p % send_partitions of the block for rank p / send_partitions. @p recvbuf holds size blocks,
 * block r from rank r: MPI_Parrived(q) reports partition q % recv_partitions of the block from
 * rank q / recv_partitions.
 * @param [in] sendbuf          size blocks (MPI_IN_PLACE: MPI_ERR_BUFFER)
 * @param [in] send_partitions  partitions per send block, > 0
 * @param [in] send_count       elements of @p sendtype per send partition, >= 0
 * @param [in] sendtype         committed datatype
 * @param [out] recvbuf         size blocks in rank order
 * @param [in] recv_partitions  partitions per received block, > 0
 * @param [in] recv_count       elements of @p recvtype per receive partition, >= 0
 * @param [in] recvtype         committed datatype
 * @param [in] comm             intracommunicator
 * @param [in] info             MPI_INFO_NULL or info with "mpipcl_*" keys
 * @param [out] request         the new request (inactive)
 * @return see the block-wise collectives above.
 */
MPIPCL_API int MPIX_Palltoall_init(const void* sendbuf, int send_partitions, MPI_Count send_count,
                                   MPI_Datatype sendtype, void* recvbuf, int recv_partitions,
                                   MPI_Count recv_count, MPI_Datatype recvtype, MPI_Comm comm,
                                   MPI_Info info, MPI_Request* request);

/**
 * @brief Create a partitioned neighbourhood alltoall request (local, never blocks).
 *
 * The neighbours and their order are MPI_Neighbor_alltoall's: for a cartesian communicator,
 * per dimension the lower then the upper neighbour (MPI_Cart_shift by 1), for a distributed
 * graph the destinations (send blocks) and sources (receive blocks) as
 * MPI_Dist_graph_neighbors gives them, for a graph MPI_Graph_neighbors. What a rank receives
 * in block 2d (from its lower neighbour in dimension d) is that neighbour's block 2d+1 (the
 * one it sends up), also where both neighbours are the same rank (a periodic dimension of
 * size 1 or 2). Blocks towards or from MPI_PROC_NULL move nothing; MPI_Parrived reports them
 * arrived. Repeated edges between two ranks pair in their order.
 * @param [in] sendbuf          outdegree blocks (MPI_IN_PLACE: MPI_ERR_BUFFER)
 * @param [in] send_partitions  partitions per send block, > 0
 * @param [in] send_count       elements of @p sendtype per send partition, >= 0
 * @param [in] sendtype         committed datatype
 * @param [out] recvbuf         indegree blocks
 * @param [in] recv_partitions  partitions per received block, > 0
 * @param [in] recv_count       elements of @p recvtype per receive partition, >= 0
 * @param [in] recvtype         committed datatype
 * @param [in] comm             intracommunicator with a cartesian, graph or distributed graph
 *                              topology (otherwise MPI_ERR_TOPOLOGY)
 * @param [in] info             MPI_INFO_NULL or info with "mpipcl_*" keys
 * @param [out] request         the new request (inactive)
 * @return see the block-wise collectives above; MPI_ERR_TOPOLOGY without a topology. A rank
 *         without out-neighbours gets MPI_ERR_REQUEST from MPI_Pready*, one without
 *         in-neighbours from MPI_Parrived.
 */
MPIPCL_API int MPIX_Pneighbor_alltoall_init(const void* sendbuf, int send_partitions,
                                            MPI_Count send_count, MPI_Datatype sendtype,
                                            void* recvbuf, int recv_partitions,
                                            MPI_Count recv_count, MPI_Datatype recvtype,
                                            MPI_Comm comm, MPI_Info info, MPI_Request* request);

#ifdef __cplusplus
}
#endif

#endif /* MPIPCL_H_INCLUDED */
