// DataView: the data of one operation (tag send/receive, put/get, active message) as the
// protocols see it, whatever its datatype (switchyard/datatype.h): a packed length, and
// random-access pack (sender side) and unpack (receiver side) of packed byte ranges. The
// protocols move fragments through it, so non-contiguous data streams fragment by fragment
// and never needs a temporary copy of the whole message.
//
// Contiguous data keeps its pointer (contiguous() / data()): the zero-copy and PIO paths
// use it directly and pay nothing for the abstraction. A request carries a DataView only for
// non-contiguous data (core::Request::view); the core pools them, so an operation allocates
// nothing once the pool is warm.
#pragma once

#include <switchyard/datatype.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/status.h"

namespace swy::dt {

/// What swy_dt_create_generic() returns a pointer to (the swy_datatype_t value).
struct GenericType {
    swy_dt_generic_ops_t ops;
    void* context;
    uint64_t magic;  ///< kGenericMagic while alive: a destroyed or bogus handle is refused
};
inline constexpr uint64_t kGenericMagic = 0x5357594454474e52ull;  // "SWYDTGNR"

/// The kind of a datatype value.
enum class Kind : uint8_t { kContig, kIov, kGeneric };

class DataView {
public:
    DataView() = default;
    DataView(const DataView&) = delete;
    DataView& operator=(const DataView&) = delete;
    ~DataView() { finish(); }

    /// Contiguous bytes (the default datatype, no callbacks).
    void init_contig(const void* buffer, size_t length) {
        finish();
        kind_ = Kind::kContig;
        base_ = static_cast<uint8_t*>(const_cast<void*>(buffer));
        length_ = length;
        error_ = Status::kOk;
    }
    /// Read (@p for_pack: the data is a source) or write (receiver) @p count items at
    /// @p buffer of @p datatype. kInvalidParam for an unknown or destroyed datatype, a NULL
    /// iov array with entries, an iov entry with a NULL buffer and a length, or a generic
    /// start callback that returned NULL (then no finish is owed).
    Status init(swy_datatype_t datatype, const void* buffer, size_t count, bool for_pack);

    Kind kind() const { return kind_; }
    bool contiguous() const { return kind_ == Kind::kContig; }
    /// Contiguous only: the bytes.
    uint8_t* data() const { return base_; }
    /// Packed length in bytes.
    size_t length() const { return length_; }
    /// The first error an unpack returned (kOk if none): what the receive fails with.
    Status error() const { return error_; }

    /// Write packed bytes [offset, offset + max) into @p dst (fewer at the end of the data);
    /// @return how many were written.
    size_t pack(size_t offset, void* dst, size_t max);
    /// Place packed bytes [offset, offset + length) from @p src. Bytes past length() are the
    /// caller's to refuse (truncation); here they are ignored. kOk, or the generic type's error
    /// (also remembered in error()).
    Status unpack(size_t offset, const void* src, size_t length);
    /// Where packed bytes [offset, offset + n) lie as one contiguous range of the user's
    /// memory (contiguous data, or one iov entry holds them all), so a transport may place
    /// them directly; null otherwise (generic data never).
    uint8_t* direct(size_t offset, size_t n);
    /// End of the operation: the generic type's finish callback (once). Idempotent; afterwards
    /// the view is empty (length 0), so a late fragment can never reach a finished state.
    void finish();
    /// Take over @p other's data and state (a generic type's started pack or unpack included:
    /// it is finished once, by whichever view holds it last); @p other is left empty.
    void take(DataView& other) {
        finish();
        kind_ = other.kind_;
        base_ = other.base_;
        length_ = other.length_;
        error_ = other.error_;
        iov_ = other.iov_;
        iov_count_ = other.iov_count_;
        cursor_entry_ = other.cursor_entry_;
        cursor_start_ = other.cursor_start_;
        generic_ = other.generic_;
        state_ = other.state_;
        other.state_ = nullptr;
        other.kind_ = Kind::kContig;
        other.base_ = nullptr;
        other.length_ = 0;
    }

private:
    /// iov: move the cursor to the entry holding packed offset @p offset (a cursor remembers
    /// the last position, so fragments in order cost no search).
    void seek_iov(size_t offset);
    /// iov: copy @p n packed bytes at @p offset between @p bytes and the entries (@p to_iov:
    /// unpack); leaves the cursor on the last entry touched.
    void copy_iov(size_t offset, uint8_t* bytes, size_t n, bool to_iov);

    Kind kind_ = Kind::kContig;
    uint8_t* base_ = nullptr;
    size_t length_ = 0;
    Status error_ = Status::kOk;
    // iov
    const swy_dt_iov_t* iov_ = nullptr;
    size_t iov_count_ = 0;
    size_t cursor_entry_ = 0;  ///< entry holding packed offset cursor_start_ ...
    size_t cursor_start_ = 0;  ///< ... the packed offset where that entry starts
    // generic
    const GenericType* generic_ = nullptr;
    void* state_ = nullptr;
};

}  // namespace swy::dt
