#include "datatype/data_view.h"

#include <algorithm>

namespace swy::dt {

Status DataView::init(swy_datatype_t datatype, const void* buffer, size_t count, bool for_pack) {
    finish();
    error_ = Status::kOk;
    if (datatype == SWY_DATATYPE_CONTIG) {
        init_contig(buffer, count);
        return Status::kOk;
    }
    if (datatype == SWY_DATATYPE_IOV) {
        const auto* iov = static_cast<const swy_dt_iov_t*>(buffer);
        if (iov == nullptr && count != 0) return Status::kInvalidParam;
        size_t total = 0;
        for (size_t i = 0; i < count; ++i) {
            if (iov[i].buffer == nullptr && iov[i].length != 0) return Status::kInvalidParam;
            if (iov[i].length > SIZE_MAX - total) return Status::kInvalidParam;
            total += iov[i].length;
        }
        kind_ = Kind::kIov;
        iov_ = iov;
        iov_count_ = count;
        length_ = total;
        cursor_entry_ = 0;
        cursor_start_ = 0;
        return Status::kOk;
    }
    const auto* g = reinterpret_cast<const GenericType*>(static_cast<uintptr_t>(datatype));
    if ((datatype & 7) != 0 || g->magic != kGenericMagic) return Status::kInvalidParam;
    void* state = for_pack ? g->ops.start_pack(g->context, buffer, count)
                           : g->ops.start_unpack(g->context, const_cast<void*>(buffer), count);
    if (state == nullptr) return Status::kInvalidParam;
    kind_ = Kind::kGeneric;
    generic_ = g;
    state_ = state;
    length_ = g->ops.packed_size(state);
    return Status::kOk;
}

void DataView::seek_iov(size_t offset) {
    if (offset < cursor_start_) {  // backwards (out-of-order fragment): restart
        cursor_entry_ = 0;
        cursor_start_ = 0;
    }
    while (cursor_entry_ < iov_count_ && offset >= cursor_start_ + iov_[cursor_entry_].length) {
        cursor_start_ += iov_[cursor_entry_].length;
        ++cursor_entry_;
    }
}

void DataView::copy_iov(size_t offset, uint8_t* bytes, size_t n, bool to_iov) {
    seek_iov(offset);
    size_t done = 0;
    size_t skip = offset - cursor_start_;
    while (cursor_entry_ < iov_count_ && done < n) {
        const swy_dt_iov_t& e = iov_[cursor_entry_];
        const size_t take = std::min(e.length - skip, n - done);
        if (take != 0) {
            auto* entry = static_cast<uint8_t*>(e.buffer) + skip;
            if (to_iov) {
                std::memcpy(entry, bytes + done, take);
            } else {
                std::memcpy(bytes + done, entry, take);
            }
        }
        done += take;
        if (done == n && skip + take < e.length) break;  // the next fragment starts here
        cursor_start_ += e.length;
        ++cursor_entry_;
        skip = 0;
    }
}

size_t DataView::pack(size_t offset, void* dst, size_t max) {
    if (offset >= length_) return 0;
    const size_t n = std::min(max, length_ - offset);
    switch (kind_) {
        case Kind::kContig:
            if (n != 0) std::memcpy(dst, base_ + offset, n);
            return n;
        case Kind::kIov: copy_iov(offset, static_cast<uint8_t*>(dst), n, false); return n;
        case Kind::kGeneric: return generic_->ops.pack(state_, offset, dst, n);
    }
    return 0;
}

Status DataView::unpack(size_t offset, const void* src, size_t length) {
    if (offset >= length_) return Status::kOk;
    const size_t n = std::min(length, length_ - offset);
    switch (kind_) {
        case Kind::kContig:
            if (n != 0) std::memcpy(base_ + offset, src, n);
            return Status::kOk;
        case Kind::kIov:
            copy_iov(offset, static_cast<uint8_t*>(const_cast<void*>(src)), n, true);
            return Status::kOk;
        case Kind::kGeneric: {
            const swy_status_t s = generic_->ops.unpack(state_, offset, src, n);
            if (s == SWY_OK) return Status::kOk;
            Status st = status_from_wire(static_cast<int32_t>(s));
            if (st == Status::kOk || st == Status::kInProgress) st = Status::kIoError;
            if (error_ == Status::kOk) error_ = st;
            return st;
        }
    }
    return Status::kOk;
}

uint8_t* DataView::direct(size_t offset, size_t n) {
    if (n == 0 || offset >= length_ || n > length_ - offset) return nullptr;
    if (kind_ == Kind::kContig) return base_ + offset;
    if (kind_ != Kind::kIov) return nullptr;
    seek_iov(offset);
    const swy_dt_iov_t& e = iov_[cursor_entry_];
    const size_t skip = offset - cursor_start_;
    return n <= e.length - skip ? static_cast<uint8_t*>(e.buffer) + skip : nullptr;
}

void DataView::finish() {
    if (kind_ == Kind::kGeneric && state_ != nullptr) {
        void* state = state_;
        state_ = nullptr;
        generic_->ops.finish(state);
    }
    kind_ = Kind::kContig;
    base_ = nullptr;
    length_ = 0;
    iov_ = nullptr;
    iov_count_ = 0;
    generic_ = nullptr;
}

}  // namespace swy::dt
