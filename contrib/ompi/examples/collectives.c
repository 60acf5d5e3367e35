/*
 * Collectives over pml swy (Open MPI's coll components use negative internal tags, so this
 * also checks that those round-trip through the tag layout and never match MPI_ANY_TAG).
 * Every result is checked against its closed form. Run with -np 2..8.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs, failures;

static void check(int ok, const char* what) {
    if (!ok) {
        fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
        ++failures;
    }
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    /* A posted ANY_TAG receive must not steal a collective's internal (negative-tag)
     * messages: keep one open across all the collectives below, then satisfy it. */
    int sentinel = -1;
    MPI_Request any_tag_req;
    MPI_Irecv(&sentinel, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &any_tag_req);

    int counts[] = {1, 1000, 1 << 20};
    for (int k = 0; k < 3; ++k) {
        int n = counts[k];
        double *in = malloc(n * sizeof(double)), *out = malloc(n * sizeof(double));
        for (int i = 0; i < n; ++i)
            in[i] = rank + i;
        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        int ok = 1;
        for (int i = 0; i < n; ++i)
            ok &= out[i] == (double)nprocs * (nprocs - 1) / 2 + (double)nprocs * i;
        check(ok, "allreduce sum");

        MPI_Request r;
        MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        ok = 1;
        for (int i = 0; i < n; ++i)
            ok &= out[i] == nprocs - 1 + i;
        check(ok, "iallreduce max");

        for (int root = 0; root < nprocs; ++root) {
            for (int i = 0; i < n; ++i)
                out[i] = rank == root ? root * 1000.0 + i : -1;
            MPI_Bcast(out, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
            ok = 1;
            for (int i = 0; i < n; ++i)
                ok &= out[i] == root * 1000.0 + i;
            check(ok, "bcast");
        }
        free(in);
        free(out);
    }

    int blocks[] = {1, 5000};
    for (int k = 0; k < 2; ++k) {
        int b = blocks[k];
        int *sb = malloc((size_t)b * nprocs * sizeof(int)),
            *rb = malloc((size_t)b * nprocs * sizeof(int));
        for (int p = 0; p < nprocs; ++p)
            for (int i = 0; i < b; ++i)
                sb[p * b + i] = rank * 1000000 + p * 1000 + i % 1000;
        MPI_Alltoall(sb, b, MPI_INT, rb, b, MPI_INT, MPI_COMM_WORLD);
        int ok = 1;
        for (int p = 0; p < nprocs; ++p)
            for (int i = 0; i < b; ++i)
                ok &= rb[p * b + i] == p * 1000000 + rank * 1000 + i % 1000;
        check(ok, "alltoall");

        MPI_Allgather(sb, b, MPI_INT, rb, b, MPI_INT, MPI_COMM_WORLD);
        ok = 1;
        for (int p = 0; p < nprocs; ++p)
            for (int i = 0; i < b; ++i)
                ok &= rb[p * b + i] == p * 1000000 + i % 1000;
        check(ok, "allgather");
        free(sb);
        free(rb);
    }

    for (int i = 0; i < 20; ++i)
        MPI_Barrier(MPI_COMM_WORLD);

    int v = rank + 1, sum = 0;
    MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, nprocs - 1, MPI_COMM_WORLD);
    if (rank == nprocs - 1) check(sum == nprocs * (nprocs + 1) / 2, "reduce to the last rank");
    int scan = 0;
    MPI_Scan(&v, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(scan == (rank + 1) * (rank + 2) / 2, "scan");

    int flag = 0;
    MPI_Test(&any_tag_req, &flag, MPI_STATUS_IGNORE);
    check(!flag, "an ANY_TAG receive matched no collective traffic");
    MPI_Barrier(MPI_COMM_WORLD);
    int token = 12345;
    MPI_Send(&token, 1, MPI_INT, (rank + 1) % nprocs, 7, MPI_COMM_WORLD);
    MPI_Status st;
    MPI_Wait(&any_tag_req, &st);
    check(sentinel == 12345 && st.MPI_TAG == 7 && st.MPI_SOURCE == (rank + nprocs - 1) % nprocs,
          "the ANY_TAG receive got the user message");

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("collectives (np %d): %s\n", nprocs, all ? "FAIL" : "PASS");
    MPI_Finalize();
    return all ? 1 : 0;
}
