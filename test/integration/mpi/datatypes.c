/* Derived datatypes through the PML: vector, indexed and struct (with padding), sent typed
 * and received contiguous and the other way round, small (eager) and large (rendezvous,
 * where a PML must pack or unpack non-contiguous memory in pieces). Elements the type
 * skips must stay untouched on the receiver. */
#include <stddef.h>

#include "mpitest.h"

/* Distinct for every position and salt; unsigned, so the multiplication wraps instead of
 * overflowing (undefined for int). */
static int value_at(int i, int salt) { return (int)((unsigned)i * 2654435u + (unsigned)salt); }

/* vector: `count` blocks of 3 ints every 7 ints. */
static void vector(int me, int count) {
    const int stride = 7, block = 3, span = count * stride;
    MPI_Datatype vec;
    MT_MPI(MPI_Type_vector(count, block, stride, MPI_INT, &vec));
    MT_MPI(MPI_Type_commit(&vec));
    int* strided = (int*)mt_malloc((size_t)span * sizeof(int));
    int* packed = (int*)mt_malloc((size_t)count * block * sizeof(int));
    if (me == 0) {
        for (int i = 0; i < span; ++i)
            strided[i] = value_at(i, 1);
        MT_MPI(MPI_Send(strided, 1, vec, 1, 1, MPI_COMM_WORLD)); /* typed -> contiguous */
        for (int i = 0; i < count * block; ++i)
            packed[i] = value_at(i, 2);
        MT_MPI(MPI_Send(packed, count * block, MPI_INT, 1, 2, MPI_COMM_WORLD)); /* the reverse */
    } else {
        MPI_Status st;
        int n;
        MT_MPI(MPI_Recv(packed, count * block, MPI_INT, 0, 1, MPI_COMM_WORLD, &st));
        MT_MPI(MPI_Get_count(&st, MPI_INT, &n));
        MT_CHECK(n == count * block, "vector count %d want %d", n, count * block);
        for (int b = 0; b < count; ++b)
            for (int k = 0; k < block; ++k)
                MT_CHECK(packed[b * block + k] == value_at(b * stride + k, 1),
                         "vector send: block %d element %d", b, k);
        for (int i = 0; i < span; ++i)
            strided[i] = -7;
        MT_MPI(MPI_Recv(strided, 1, vec, 0, 2, MPI_COMM_WORLD, &st));
        MT_MPI(MPI_Get_count(&st, vec, &n));
        MT_CHECK(n == 1, "vector receive count %d", n);
        MT_MPI(MPI_Get_elements(&st, MPI_INT, &n));
        MT_CHECK(n == count * block, "vector receive elements %d", n);
        for (int i = 0; i < span; ++i) {
            const int b = i / stride, k = i % stride;
            const int want = k < block ? value_at(b * block + k, 2) : -7;
            MT_CHECK(strided[i] == want, "vector receive: int %d is %d, want %d", i, strided[i],
                     want);
        }
    }
    MPI_Type_free(&vec);
    free(strided);
    free(packed);
}

/* indexed: irregular blocks (lengths 1..5, gaps 0..3), repeated to cover `reps` patterns. */
static void indexed(int me, int reps) {
    const int nblk = 5 * reps;
    int* lens = (int*)mt_malloc((size_t)nblk * sizeof(int));
    int* displs = (int*)mt_malloc((size_t)nblk * sizeof(int));
    int at = 0;
    for (int b = 0; b < nblk; ++b) {
        lens[b] = 1 + b % 5;
        displs[b] = at;
        at += lens[b] + b % 4;
    }
    const int span = at;
    MPI_Datatype idx;
    MT_MPI(MPI_Type_indexed(nblk, lens, displs, MPI_INT, &idx));
    MT_MPI(MPI_Type_commit(&idx));
    int* buf = (int*)mt_malloc((size_t)span * sizeof(int));
    if (me == 0) {
        for (int i = 0; i < span; ++i)
            buf[i] = value_at(i, 3);
        MT_MPI(MPI_Send(buf, 1, idx, 1, 3, MPI_COMM_WORLD));
    } else {
        for (int i = 0; i < span; ++i)
            buf[i] = -3;
        MT_MPI(MPI_Recv(buf, 1, idx, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        int b = 0;
        for (int i = 0; i < span; ++i) {
            while (b + 1 < nblk && i >= displs[b + 1])
                ++b;
            const int inside = i >= displs[b] && i < displs[b] + lens[b];
            const int want = inside ? value_at(i, 3) : -3;
            MT_CHECK(buf[i] == want, "indexed: int %d is %d, want %d", i, buf[i], want);
        }
    }
    MPI_Type_free(&idx);
    free(buf);
    free(lens);
    free(displs);
}

typedef struct {
    char c; /* followed by padding */
    double d;
    short s[3]; /* and padding at the end */
} rec_t;

static void structs(int me, int count) {
    int lens[3] = {1, 1, 3};
    MPI_Aint displs[3] = {offsetof(rec_t, c), offsetof(rec_t, d), offsetof(rec_t, s)};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_SHORT}, raw, rec;
    MT_MPI(MPI_Type_create_struct(3, lens, displs, types, &raw));
    MT_MPI(MPI_Type_create_resized(raw, 0, sizeof(rec_t), &rec));
    MT_MPI(MPI_Type_commit(&rec));
    rec_t* r = (rec_t*)mt_malloc((size_t)count * sizeof(rec_t));
    if (me == 0) {
        memset(r, 0x11, (size_t)count * sizeof(rec_t)); /* padding: must not matter */
        for (int i = 0; i < count; ++i) {
            r[i].c = (char)(i * 7);
            r[i].d = i * 0.5 + 1e9;
            for (int k = 0; k < 3; ++k)
                r[i].s[k] = (short)(i * 3 + k);
        }
        MT_MPI(MPI_Send(r, count, rec, 1, 4, MPI_COMM_WORLD));
    } else {
        memset(r, 0, (size_t)count * sizeof(rec_t));
        MPI_Status st;
        int n;
        MT_MPI(MPI_Recv(r, count, rec, 0, 4, MPI_COMM_WORLD, &st));
        MT_MPI(MPI_Get_count(&st, rec, &n));
        MT_CHECK(n == count, "struct count %d want %d", n, count);
        for (int i = 0; i < count; ++i) {
            MT_CHECK(r[i].c == (char)(i * 7) && r[i].d == i * 0.5 + 1e9, "struct %d fields", i);
            for (int k = 0; k < 3; ++k)
                MT_CHECK(r[i].s[k] == (short)(i * 3 + k), "struct %d s", i);
        }
    }
    MPI_Type_free(&rec);
    MPI_Type_free(&raw);
    free(r);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MT_CHECK(mt_size() == 2, "run with exactly 2 ranks");
    const int me = mt_rank();
    /* 1 and 10 blocks are eager; 100000 blocks (1.2 MB of ints) go by rendezvous. */
    const int counts[] = {1, 10, 400, 100000};
    for (int i = 0; i < 4; ++i) {
        vector(me, counts[i]);
        indexed(me, counts[i]);
        structs(me, counts[i]);
    }
    mt_pass("datatypes");
    MPI_Finalize();
    return 0;
}
