/*
 * Ping-pong with byte-for-byte payload checks, 0 B .. 64 MiB (powers of two and their
 * neighbours, so every protocol switch-over is crossed). Rank 0 sends a pattern, rank 1
 * checks it and answers with a different pattern, rank 0 checks that. Exit code 0 only if
 * every byte of every size arrived right. Run with -np 2.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(size_t i, size_t size, int salt) {
    return (unsigned char)((i * 131u + size * 7u + (size_t)salt * 29u) & 0xff);
}

static int check(const unsigned char* buf, size_t size, int salt, const char* who) {
    for (size_t i = 0; i < size; ++i) {
        if (buf[i] != pattern(i, size, salt)) {
            fprintf(stderr, "%s: size %zu: byte %zu is %u, expected %u\n", who, size, i, buf[i],
                    pattern(i, size, salt));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char** argv) {
    int rank, nprocs, errors = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 2) {
        if (rank == 0) fprintf(stderr, "run with -np 2\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const size_t max = (size_t)64 << 20;
    unsigned char* buf = malloc(max + 64);
    size_t sizes[128];
    int n = 0;
    sizes[n++] = 0;
    for (size_t s = 1; s <= max; s <<= 1) {
        if (s > 2) sizes[n++] = s - 1;
        sizes[n++] = s;
        if (s < max) sizes[n++] = s + 1;
    }
    for (int k = 0; k < n; ++k) {
        size_t size = sizes[k];
        int count = (int)size;
        /* a canary after the buffer: nothing may be written past `size` */
        memset(buf, 0xee, size + 64);
        if (rank == 0) {
            for (size_t i = 0; i < size; ++i)
                buf[i] = pattern(i, size, 1);
            MPI_Send(buf, count, MPI_BYTE, 1, k, MPI_COMM_WORLD);
            memset(buf, 0xee, size + 64);
            MPI_Status st;
            MPI_Recv(buf, count, MPI_BYTE, 1, k, MPI_COMM_WORLD, &st);
            int got;
            MPI_Get_count(&st, MPI_BYTE, &got);
            if (got != count || st.MPI_SOURCE != 1 || st.MPI_TAG != k) {
                fprintf(stderr, "rank 0: size %zu: count %d source %d tag %d\n", size, got,
                        st.MPI_SOURCE, st.MPI_TAG);
                ++errors;
            }
            errors += check(buf, size, 2, "rank 0");
        } else {
            MPI_Status st;
            MPI_Recv(buf, count, MPI_BYTE, 0, k, MPI_COMM_WORLD, &st);
            int got;
            MPI_Get_count(&st, MPI_BYTE, &got);
            if (got != count) ++errors;
            errors += check(buf, size, 1, "rank 1");
            for (size_t i = 0; i < 64; ++i) {
                if (buf[size + i] != 0xee) {
                    fprintf(stderr, "rank 1: size %zu: overrun\n", size);
                    ++errors;
                    break;
                }
            }
            for (size_t i = 0; i < size; ++i)
                buf[i] = pattern(i, size, 2);
            MPI_Send(buf, count, MPI_BYTE, 0, k, MPI_COMM_WORLD);
        }
    }
    int total = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("pingpong: %d sizes, 0 B .. 64 MiB: %s\n", n, total ? "FAIL" : "PASS");
    free(buf);
    MPI_Finalize();
    return total ? 1 : 0;
}
