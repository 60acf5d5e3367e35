/* Derived datatypes of an exact packed size, for the datatype tests (datatypes_edges.c,
 * datatypes_modes.c), and the memory image a transfer must produce.
 *
 * Two shapes, both non-contiguous for every size above one element:
 *   DT_BYTES    N elements of a byte resized to an extent of 3: strided single bytes, packed
 *               size N. Its prefixes are its own smaller counts, so short messages and
 *               truncation have an obvious expected image.
 *   DT_RECORDS  k records {char at 0, double at 8} (extent 16, 9 bytes packed) followed by r
 *               trailing bytes, N = 9k + r: a double straddles most fragment boundaries, so
 *               the sender packs and the receiver unpacks partial elements.
 * The expected image of a buffer comes from MPI_Unpack of the test pattern into it: Open
 * MPI's local (whole-message) unpack is the oracle for what the PML streams in fragments.
 */
#ifndef SWY_DT_SHAPES_H
#define SWY_DT_SHAPES_H

#include "mpitest.h"

typedef enum { DT_BYTES, DT_RECORDS, DT_NSHAPES } dt_shape_t;

static const char* const dt_shape_names[DT_NSHAPES] = {"strided bytes", "records"};

/** (buf, count, type) describing `packed` bytes laid out over `span` bytes of memory. */
typedef struct {
    MPI_Datatype type; /* committed; dt_free releases it */
    int count;
    size_t packed;
    size_t span;
} dt_layout_t;

enum { DT_BYTE_EXTENT = 3, DT_RECORD_EXTENT = 16, DT_RECORD_PACKED = 9 };

/** The layout of @p shape with exactly @p packed bytes. */
static inline dt_layout_t dt_make(dt_shape_t shape, size_t packed) {
    dt_layout_t l = {MPI_DATATYPE_NULL, 1, packed, 0};
    if (shape == DT_BYTES) {
        MT_MPI(MPI_Type_create_resized(MPI_BYTE, 0, DT_BYTE_EXTENT, &l.type));
        l.count = (int)packed;
        l.span = packed * DT_BYTE_EXTENT;
    } else {
        const int k = (int)(packed / DT_RECORD_PACKED), r = (int)(packed % DT_RECORD_PACKED);
        int lens[2] = {1, 1};
        MPI_Aint displs[2] = {0, 8};
        MPI_Datatype types[2] = {MPI_CHAR, MPI_DOUBLE}, raw, rec;
        MT_MPI(MPI_Type_create_struct(2, lens, displs, types, &raw));
        MT_MPI(MPI_Type_create_resized(raw, 0, DT_RECORD_EXTENT, &rec));
        MPI_Type_free(&raw);
        int blocks[2] = {k, r};
        MPI_Aint at[2] = {0, (MPI_Aint)k * DT_RECORD_EXTENT};
        MPI_Datatype parts[2] = {rec, MPI_BYTE};
        MT_MPI(MPI_Type_create_struct(2, blocks, at, parts, &l.type));
        MPI_Type_free(&rec);
        l.span = (size_t)k * DT_RECORD_EXTENT + (size_t)r;
    }
    MT_MPI(MPI_Type_commit(&l.type));
    return l;
}

/** Plain bytes: the contiguous side of a mixed transfer. */
static inline dt_layout_t dt_contig(size_t packed) {
    dt_layout_t l = {MPI_BYTE, (int)packed, packed, packed};
    return l;
}

static inline void dt_free(dt_layout_t* l) {
    if (l->type != MPI_BYTE && l->type != MPI_DATATYPE_NULL) MPI_Type_free(&l->type);
}

/** Fill @p buf (l->span bytes) so that (buf, l) packs to the first l->packed bytes of pattern
 *  @p seed; the bytes the type skips hold @p gap. */
static inline void dt_fill(void* buf, const dt_layout_t* l, uint32_t seed, uint8_t gap) {
    memset(buf, gap, l->span);
    if (l->packed == 0) return;
    uint8_t* packed = (uint8_t*)mt_malloc(l->packed);
    mt_fill(packed, l->packed, seed);
    int pos = 0;
    MT_MPI(MPI_Unpack(packed, (int)l->packed, &pos, buf, l->count, l->type, MPI_COMM_SELF));
    MT_CHECK((size_t)pos == l->packed, "MPI_Unpack used %d of %zu bytes", pos, l->packed);
    free(packed);
}

/** Fail unless the first @p span bytes of @p got equal @p want; names the first difference. */
static inline void dt_expect_image(const uint8_t* got, const uint8_t* want, size_t span,
                                   const char* what) {
    if (memcmp(got, want, span) == 0) return;
    size_t i = 0;
    while (got[i] == want[i])
        ++i;
    MT_FAIL("%s: byte %zu of %zu is 0x%02x, want 0x%02x", what, i, span, got[i], want[i]);
}

#endif
