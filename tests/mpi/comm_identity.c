/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicator identity: two communicators with the same group never pair each other's
 * partitioned operations, whichever MPI call made them. For each constructor two communicators
 * congruent with MPI_COMM_WORLD are made; MPI_COMM_WORLD and the first, then the first and the
 * second, each carry one send/receive pair with the same peer and tag at the same time, the
 * receives initialized in the order that pairs them crosswise if the two keys were equal (the
 * two sends differ in data and partition count, the totals are equal, so a crossed pairing
 * completes and shows as wrong bytes). MPI_Comm_split_type(SHARED) is congruent with
 * MPI_COMM_WORLD only on one node; across nodes each node's two communicators are checked
 * against each other. With 1 rank (comm_identity_np1) it also checks
 * MPI_COMM_SELF against MPI_COMM_WORLD and skips the intercommunicator cases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TAG 11
#define TOTAL 3072 /* bytes per transfer: a multiple of every partition count below */
#define SEND_PARTS_A 4
#define SEND_PARTS_B 8
#define RECV_PARTS_A 6
#define RECV_PARTS_B 3

static int g_case = 0; /* numbers the pairs (pattern round, watchdog label) */

/* Rank 0 of a and b sends on a (pattern 1) and then on b (pattern 2); their last rank (rank 0
 * too with 1 process) initializes its receive on b before the one on a. */
static void check_pair(MPI_Comm a, MPI_Comm b, const char* what)
{
    ++g_case;
    tu_watchdog_arm(TU_WATCHDOG_S, "case %d: %s", g_case, what);
    int cmp = MPI_UNEQUAL;
    TU_MPI(MPI_Comm_compare(a, b, &cmp));
    if (!TU_CHECK_MSG(cmp == MPI_CONGRUENT, "%s: the communicators are not congruent (%d)", what,
                      cmp)) {
        return;
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(a, &rank);
    MPI_Comm_size(a, &size);
    static unsigned char send_a[TOTAL], send_b[TOTAL], recv_a[TOTAL], recv_b[TOTAL];
    MPI_Request req[4];
    int n = 0;
    if (rank == 0) {
        tu_fill(send_a, TOTAL, 0, 1, g_case);
        tu_fill(send_b, TOTAL, 0, 2, g_case);
        TU_MPI(MPI_Psend_init(send_a, SEND_PARTS_A, TOTAL / SEND_PARTS_A, MPI_BYTE, size - 1, TAG,
                              a, MPI_INFO_NULL, &req[n++]));
        TU_MPI(MPI_Psend_init(send_b, SEND_PARTS_B, TOTAL / SEND_PARTS_B, MPI_BYTE, size - 1, TAG,
                              b, MPI_INFO_NULL, &req[n++]));
    }
    if (rank == size - 1) {
        memset(recv_a, 0, TOTAL);
        memset(recv_b, 0, TOTAL);
        TU_MPI(MPI_Precv_init(recv_b, RECV_PARTS_B, TOTAL / RECV_PARTS_B, MPI_BYTE, 0, TAG, b,
                              MPI_INFO_NULL, &req[n++]));
        TU_MPI(MPI_Precv_init(recv_a, RECV_PARTS_A, TOTAL / RECV_PARTS_A, MPI_BYTE, 0, TAG, a,
                              MPI_INFO_NULL, &req[n++]));
    }
    if (n == 0) {
        return;
    }
    TU_MPI(MPI_Startall(n, req));
    if (rank == 0) {
        tu_pready_all(SEND_PARTS_A, req[0]);
        tu_pready_all(SEND_PARTS_B, req[1]);
    }
    TU_MPI(tu_waitall(n, req, MPI_STATUSES_IGNORE, what));
    if (rank == size - 1) {
        char label[160];
        snprintf(label, sizeof label, "%s: receive on the first communicator", what);
        tu_verify(recv_a, TOTAL, 0, 1, g_case, label);
        snprintf(label, sizeof label, "%s: receive on the second communicator", what);
        tu_verify(recv_b, TOTAL, 0, 2, g_case, label);
    }
    for (int i = 0; i < n; ++i) {
        TU_MPI(MPI_Request_free(&req[i]));
    }
}

static MPI_Group world_group(void)
{
    MPI_Group g;
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    return g;
}

/* Makers: each creates two communicators congruent with MPI_COMM_WORLD, the same way. */

static void make_dup(MPI_Comm out[2])
{
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &out[i]));
    }
}

static void make_dup_with_info(MPI_Comm out[2])
{
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &out[i]));
    }
}

static void make_split(MPI_Comm out[2])
{
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, tu_rank, &out[i]));
    }
}

static void make_split_type(MPI_Comm out[2])
{
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, tu_rank, MPI_INFO_NULL,
                                   &out[i]));
    }
}

static void make_create(MPI_Comm out[2])
{
    MPI_Group g = world_group();
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_create(MPI_COMM_WORLD, g, &out[i]));
    }
    MPI_Group_free(&g);
}

static void make_cart_create(MPI_Comm out[2])
{
    int dims[1] = {tu_size}, periods[1] = {0};
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &out[i]));
    }
}

/* All started before any completes: three pending handles at once; the third is freed before
 * any use (its entry must go with it). */
static void make_idup(MPI_Comm out[2])
{
    MPI_Request req[3];
    MPI_Comm unused;
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &out[i], &req[i]));
    }
    TU_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &unused, &req[2]));
    TU_MPI(tu_waitall(3, req, MPI_STATUSES_IGNORE, "MPI_Comm_idup"));
    TU_MPI(MPI_Comm_free(&unused));
}

#if MPIPCL_MPI_HAS_COMM_IDUP_WITH_INFO
static void make_idup_with_info(MPI_Comm out[2])
{
    MPI_Request req[2];
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_idup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &out[i], &req[i]));
    }
    TU_MPI(tu_waitall(2, req, MPI_STATUSES_IGNORE, "MPI_Comm_idup_with_info"));
}
#endif

/* The same tag twice: only the order of the calls tells the two apart. */
static void make_create_group(MPI_Comm out[2])
{
    MPI_Group g = world_group();
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, 5, &out[i]));
    }
    MPI_Group_free(&g);
}

#if MPIPCL_MPI_HAS_COMM_CREATE_FROM_GROUP
/* The same string tag twice, from MPI_COMM_WORLD's group (no session needed). */
static void make_create_from_group(MPI_Comm out[2])
{
    MPI_Group g = world_group();
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Comm_create_from_group(g, "org.mpipcl.test.comm_identity", MPI_INFO_NULL,
                                          MPI_ERRORS_RETURN, &out[i]));
    }
    MPI_Group_free(&g);
}
#endif

static void make_cart_sub(MPI_Comm out[2])
{
    MPI_Comm cart;
    make_cart_create(out);
    cart = out[0];
    MPI_Comm_free(&out[1]);
    int remain[1] = {1};
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Cart_sub(cart, remain, &out[i]));
    }
    MPI_Comm_free(&cart);
}

static void make_graph_create(MPI_Comm out[2])
{
    int* index = malloc(2 * sizeof(int) * (size_t)tu_size);
    int* edges = index + tu_size;
    for (int i = 0; i < tu_size; ++i) { /* a directed ring: node i -> i + 1 */
        index[i] = i + 1;
        edges[i] = (i + 1) % tu_size;
    }
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Graph_create(MPI_COMM_WORLD, tu_size, index, edges, 0, &out[i]));
    }
    free(index);
}

static void make_dist_graph_create(MPI_Comm out[2])
{
    /* Weights given (Open MPI's MPI_UNWEIGHTED, a fake pointer, trips -Wstringop-overread). */
    int source = tu_rank, degree = 1, dest = (tu_rank + 1) % tu_size, weight = 1;
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &source, &degree, &dest, &weight,
                                     MPI_INFO_NULL, 0, &out[i]));
    }
}

static void make_dist_graph_create_adjacent(MPI_Comm out[2])
{
    int source = (tu_rank + tu_size - 1) % tu_size, dest = (tu_rank + 1) % tu_size, weight = 1;
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &source, &weight, 1, &dest,
                                              &weight, MPI_INFO_NULL, 0, &out[i]));
    }
}

/* An intercommunicator between the lower and the upper half of MPI_COMM_WORLD (2+ ranks); its
 * merge with high = "upper half" orders the ranks as MPI_COMM_WORLD does. */
static int upper_half(void) { return tu_rank >= tu_size / 2; }

static MPI_Comm make_intercomm(int tag)
{
    MPI_Comm half, inter;
    TU_MPI(MPI_Comm_split(MPI_COMM_WORLD, upper_half(), tu_rank, &half));
    TU_MPI(
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, upper_half() ? 0 : tu_size / 2, tag, &inter));
    MPI_Comm_free(&half);
    /* Intercommunicators themselves stay unsupported for partitioned operations. */
    static unsigned char buf[16];
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    TU_EXPECT_ERR(MPI_Psend_init(buf, 1, 16, MPI_BYTE, 0, TAG, inter, MPI_INFO_NULL, &req),
                  MPI_ERR_COMM);
    return inter;
}

/* Two intercommunicators between the same two groups, each merged once. */
static void make_intercomm_create_merge(MPI_Comm out[2])
{
    for (int i = 0; i < 2; ++i) {
        MPI_Comm inter = make_intercomm(20 + i);
        TU_MPI(MPI_Intercomm_merge(inter, upper_half(), &out[i]));
        MPI_Comm_free(&inter);
    }
}

/* One intercommunicator merged twice. */
static void make_intercomm_merge_twice(MPI_Comm out[2])
{
    MPI_Comm inter = make_intercomm(22);
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Intercomm_merge(inter, upper_half(), &out[i]));
    }
    MPI_Comm_free(&inter);
}

/* An intercommunicator and its MPI_Comm_dup, each merged. */
static void make_intercomm_dup_merge(MPI_Comm out[2])
{
    MPI_Comm inter = make_intercomm(23);
    MPI_Comm dup;
    TU_MPI(MPI_Comm_dup(inter, &dup));
    TU_MPI(MPI_Intercomm_merge(inter, upper_half(), &out[0]));
    TU_MPI(MPI_Intercomm_merge(dup, upper_half(), &out[1]));
    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter);
}

#if MPIPCL_MPI_HAS_INTERCOMM_CREATE_FROM_GROUPS
/* Two intercommunicators from the same two groups and string tag, each merged once. */
static void make_intercomm_from_groups_merge(MPI_Comm out[2])
{
    MPI_Group world = world_group(), half[2];
    int ranges[2][1][3] = {{{0, tu_size / 2 - 1, 1}}, {{tu_size / 2, tu_size - 1, 1}}};
    for (int h = 0; h < 2; ++h) {
        MPI_Group_range_incl(world, 1, ranges[h], &half[h]);
    }
    for (int i = 0; i < 2; ++i) {
        MPI_Comm inter;
        TU_MPI(MPI_Intercomm_create_from_groups(half[upper_half()], 0, half[!upper_half()], 0,
                                                "org.mpipcl.test.comm_identity", MPI_INFO_NULL,
                                                MPI_ERRORS_RETURN, &inter));
        TU_MPI(MPI_Intercomm_merge(inter, upper_half(), &out[i]));
        MPI_Comm_free(&inter);
    }
    MPI_Group_free(&half[0]);
    MPI_Group_free(&half[1]);
    MPI_Group_free(&world);
}
#endif

struct maker {
    const char* name;
    void (*make)(MPI_Comm out[2]);
    int min_size;
    int per_node; /* congruent with MPI_COMM_WORLD only when every rank shares one node */
};

static const struct maker makers[] = {
    {"MPI_Comm_dup", make_dup, 1, 0},
    {"MPI_Comm_dup_with_info", make_dup_with_info, 1, 0},
    {"MPI_Comm_split", make_split, 1, 0},
    {"MPI_Comm_split_type", make_split_type, 1, 1},
    {"MPI_Comm_create", make_create, 1, 0},
    {"MPI_Cart_create", make_cart_create, 1, 0},
    {"MPI_Comm_idup", make_idup, 1, 0},
#if MPIPCL_MPI_HAS_COMM_IDUP_WITH_INFO
    {"MPI_Comm_idup_with_info", make_idup_with_info, 1, 0},
#endif
    {"MPI_Comm_create_group", make_create_group, 1, 0},
#if MPIPCL_MPI_HAS_COMM_CREATE_FROM_GROUP
    {"MPI_Comm_create_from_group", make_create_from_group, 1, 0},
#endif
    {"MPI_Cart_sub", make_cart_sub, 1, 0},
    {"MPI_Graph_create", make_graph_create, 1, 0},
    {"MPI_Dist_graph_create", make_dist_graph_create, 1, 0},
    {"MPI_Dist_graph_create_adjacent", make_dist_graph_create_adjacent, 1, 0},
    {"MPI_Intercomm_create + MPI_Intercomm_merge", make_intercomm_create_merge, 2, 0},
    {"MPI_Intercomm_merge twice", make_intercomm_merge_twice, 2, 0},
    {"MPI_Comm_dup of an intercommunicator + MPI_Intercomm_merge", make_intercomm_dup_merge, 2, 0},
#if MPIPCL_MPI_HAS_INTERCOMM_CREATE_FROM_GROUPS
    {"MPI_Intercomm_create_from_groups + MPI_Intercomm_merge", make_intercomm_from_groups_merge, 2,
     0},
#endif
};

int main(int argc, char** argv)
{
    tu_init(&argc, &argv, MPI_THREAD_SINGLE, 0);
    if (tu_size == 1) {
        check_pair(MPI_COMM_WORLD, MPI_COMM_SELF, "MPI_COMM_WORLD vs MPI_COMM_SELF");
    }
    for (size_t i = 0; i < sizeof makers / sizeof makers[0]; ++i) {
        const struct maker* m = &makers[i];
        if (tu_size < m->min_size) {
            if (tu_rank == 0) {
                printf("skipped: %s (needs %d+ ranks)\n", m->name, m->min_size);
            }
            continue;
        }
        MPI_Comm c[2] = {MPI_COMM_NULL, MPI_COMM_NULL};
        m->make(c);
        char what[160];
        int cmp = MPI_CONGRUENT;
        TU_MPI(MPI_Comm_compare(MPI_COMM_WORLD, c[0], &cmp));
        if (m->per_node && cmp != MPI_CONGRUENT) {
            /* Ranks on several nodes: each node's two communicators are still checked. */
            if (tu_rank == 0) {
                printf(
                    "%s: the ranks span several nodes; only the two node communicators are "
                    "checked against each other\n",
                    m->name);
            }
        } else {
            snprintf(what, sizeof what, "MPI_COMM_WORLD vs %s", m->name);
            check_pair(MPI_COMM_WORLD, c[0], what);
        }
        snprintf(what, sizeof what, "two of %s", m->name);
        check_pair(c[0], c[1], what);
        MPI_Comm_free(&c[0]);
        MPI_Comm_free(&c[1]);
    }
    return tu_finish();
}
