#include "datatype/data_view.h"

#include <algorithm>

namespace swy::dt {

Status DataView::init(swy_datatype_t datatype, const void* buffer, size_t count, bool for_pack) {
    finish();
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

size_t DataView::pack(size_t offset, void* dst, size_t max) {
    if (offset >= length_) return 0;
    const size_t n = std::min(max, length_ - offset);
    switch (kind_) {
        case Kind::kContig:
            if (n != 0) std::memcpy(dst, base_ + offset, n);
            return n;
        case Kind::kIov: {
            seek_iov(offset);
            auto* out = static_cast<uint8_t*>(dst);
            size_t done = 0;
            size_t entry_skip = offset - cursor_start_;
            for (size_t e = cursor_entry_; e < iov_count_ && done < n; ++e) {
                const size_t avail = iov_[e].length - entry_skip;
                const size_t take = std::min(avail, n - done);
                if (take != 0) {
                    std::memcpy(out + done,
                                static_cast<const uint8_t*>(iov_[e].buffer) + entry_skip, take);
                }
                done += take;
                entry_skip = 0;
            }
            return done;
        }
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
        case Kind::kIov: {
            seek_iov(offset);
            const auto* in = static_cast<const uint8_t*>(src);
            size_t done = 0;
            size_t entry_skip = offset - cursor_start_;
            for (size_t e = cursor_entry_; e < iov_count_ && done < n; ++e) {
                const size_t avail = iov_[e].length - entry_skip;
                const size_t take = std::min(avail, n - done);
                if (take != 0) {
                    std::memcpy(static_cast<uint8_t*>(iov_[e].buffer) + entry_skip, in + done,
                                take);
                }
                done += take;
                entry_skip = 0;
            }
            return Status::kOk;
        }
        case Kind::kGeneric: {
            const swy_status_t s = generic_->ops.unpack(state_, offset, src, n);
            return s == SWY_OK ? Status::kOk : status_from_wire(static_cast<int32_t>(s));
        }
    }
    return Status::kOk;
}

void DataView::finish() {
    if (kind_ == Kind::kGeneric && state_ != nullptr) {
        generic_->ops.finish(state_);
        state_ = nullptr;
    }
}

}  // namespace swy::dt
