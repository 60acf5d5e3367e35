/*
 * pml swy: how an MPI (tag, source, communicator) triple is packed into the 64-bit
 * Switchyard tag, and back.
 *
 *   bit 63 ............ 40 | 39 ............ 20 | 19 ............. 0
 *        MPI tag (24)      |  sender rank (20)  |  context id (20)
 *
 * The MPI tag is stored as 24-bit two's complement, so its top bit (bit 63) is its sign.
 * Open MPI's collectives use negative tags; MPI_ANY_TAG must never match them. A receive
 * with MPI_ANY_TAG therefore keeps bit 63 in its mask (tag bits 0): it matches exactly the
 * non-negative tags. A specific tag (negative or not) masks all 24 bits.
 * MPI_ANY_SOURCE drops the rank field from the mask. The context id is always matched.
 * Limits that follow: pml_max_tag = 2^23 - 1, pml_max_contextid = 2^20 - 1, and a
 * communicator may have at most 2^20 ranks (checked in add_comm).
 */
#ifndef PML_SWY_TAG_H
#define PML_SWY_TAG_H

#include <stdint.h>

#include <switchyard/switchyard.h>

enum {
    PML_SWY_TAG_BITS = 24,
    PML_SWY_RANK_BITS = 20,
    PML_SWY_CONTEXT_BITS = 20,
    PML_SWY_RANK_SHIFT = PML_SWY_CONTEXT_BITS,
    PML_SWY_TAG_SHIFT = PML_SWY_CONTEXT_BITS + PML_SWY_RANK_BITS,
    /** Largest MPI tag (the 24-bit field holds negatives too, hence 23 bits). */
    PML_SWY_MAX_TAG = (1 << (PML_SWY_TAG_BITS - 1)) - 1,
    PML_SWY_MAX_CONTEXTID = (1 << PML_SWY_CONTEXT_BITS) - 1,
    /** Communicator size limit: the rank field must hold every rank. */
    PML_SWY_MAX_RANKS = 1 << PML_SWY_RANK_BITS
};

static const uint64_t pml_swy_context_mask = (UINT64_C(1) << PML_SWY_CONTEXT_BITS) - 1;
static const uint64_t pml_swy_rank_mask = ((UINT64_C(1) << PML_SWY_RANK_BITS) - 1)
                                          << PML_SWY_RANK_SHIFT;
static const uint64_t pml_swy_tag_mask = ((UINT64_C(1) << PML_SWY_TAG_BITS) - 1)
                                         << PML_SWY_TAG_SHIFT;
static const uint64_t pml_swy_tag_sign = UINT64_C(1) << 63;

/** Tag of a message sent by rank @p my_rank of communicator @p context_id. */
static inline swy_tag_t pml_swy_send_tag(int mpi_tag, int my_rank, uint32_t context_id) {
    return (((uint64_t)(uint32_t)mpi_tag << PML_SWY_TAG_SHIFT) & pml_swy_tag_mask) |
           (((uint64_t)(uint32_t)my_rank << PML_SWY_RANK_SHIFT) & pml_swy_rank_mask) |
           ((uint64_t)context_id & pml_swy_context_mask);
}

/** pml_swy_send_tag() with the rank and context fields already in @p base (what
 *  pml_swy_send_tag(0, rank, context) returns; cached per communicator). */
static inline swy_tag_t pml_swy_send_tag_at(int mpi_tag, swy_tag_t base) {
    return (((uint64_t)(uint32_t)mpi_tag << PML_SWY_TAG_SHIFT) & pml_swy_tag_mask) | base;
}

/**
 * Tag and mask a receive for (@p src, @p mpi_tag) on communicator @p context_id posts.
 * @p any_source / @p any_tag are the values of MPI_ANY_SOURCE / MPI_ANY_TAG (passed in so
 * this header does not depend on mpi.h).
 */
static inline void pml_swy_recv_tag(int mpi_tag, int src, uint32_t context_id, int any_tag,
                                    int any_source, swy_tag_t* tag, swy_tag_t* mask) {
    uint64_t t = (uint64_t)context_id & pml_swy_context_mask;
    uint64_t m = pml_swy_context_mask;
    if (src != any_source) {
        t |= ((uint64_t)(uint32_t)src << PML_SWY_RANK_SHIFT) & pml_swy_rank_mask;
        m |= pml_swy_rank_mask;
    }
    if (mpi_tag != any_tag) {
        t |= ((uint64_t)(uint32_t)mpi_tag << PML_SWY_TAG_SHIFT) & pml_swy_tag_mask;
        m |= pml_swy_tag_mask;
    } else {
        m |= pml_swy_tag_sign; /* tag bits stay 0: only non-negative tags match */
    }
    *tag = t;
    *mask = m;
}

/** The MPI tag a sender used (sign-extended from 24 bits). */
static inline int pml_swy_tag_mpi_tag(swy_tag_t tag) {
    /* Arithmetic shift of the signed value sign-extends the 24-bit field (gcc and clang
     * define >> on negative values as arithmetic). */
    return (int)((int64_t)tag >> PML_SWY_TAG_SHIFT);
}

/** The sender's rank in the communicator. */
static inline int pml_swy_tag_source(swy_tag_t tag) {
    return (int)((tag & pml_swy_rank_mask) >> PML_SWY_RANK_SHIFT);
}

#endif /* PML_SWY_TAG_H */
