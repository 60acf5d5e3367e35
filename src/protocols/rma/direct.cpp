#include "protocols/rma/direct.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/unique_fd.h"
#include "core/context.h"
#include "core/endpoint.h"
#include "core/worker.h"
#include "datatype/data_view.h"
#include "transports/zcopy.h"

namespace swy::rma {

namespace {

template <typename T>
T apply(T* p, swy_atomic_op_t op, T operand, T compare) {
    switch (op) {
        case SWY_ATOMIC_OP_ADD: return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_AND: return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_OR: return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_XOR: return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_SWAP: return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
        case SWY_ATOMIC_OP_CSWAP: {
            T expected = compare;
            __atomic_compare_exchange_n(p, &expected, operand, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            return expected;  // the old value, whether or not it was replaced
        }
    }
    return 0;
}

/// CMA moves contiguous bytes between two processes without a copy through cells; lanes whose
/// peers name memory with their own registrations (RDMA) are not a direct path.
tl::ZcopyLane* cma_of(core::Endpoint* ep) {
    tl::Endpoint* lane = ep->lane();
    tl::ZcopyLane* z = lane != nullptr ? lane->zcopy() : nullptr;
    if (z == nullptr) return nullptr;
    const uint32_t caps = z->caps();
    const uint32_t need = tl::cap::kGetZcopy | tl::cap::kPutZcopy;
    return (caps & need) == need && (caps & tl::cap::kRemoteKeys) == 0 ? z : nullptr;
}

}  // namespace

uint64_t cpu_atomic(void* p, swy_atomic_op_t op, size_t size, uint64_t operand, uint64_t compare) {
    if (size == 4) {
        return apply(static_cast<uint32_t*>(p), op, static_cast<uint32_t>(operand),
                     static_cast<uint32_t>(compare));
    }
    return apply(static_cast<uint64_t*>(p), op, operand, compare);
}

DirectPath::~DirectPath() {
    if (segment_ != nullptr) munmap(segment_, segment_bytes_);
}

std::unique_ptr<DirectPath> DirectPath::create(core::Endpoint* ep, const KeyFields& key) {
    tl::Endpoint* lane = ep->lane();
    const int pid = lane != nullptr ? lane->verified_pid() : 0;
    if (pid <= 0) return nullptr;  // a network lane: the target executes everything
    auto path = std::make_unique<DirectPath>();
    path->ep_ = ep;
    path->key_ = key;
    path->pid_ = pid;
    core::Context* context = ep->worker()->context();
    if (pid == getpid() && key.table_id == context->mem_table().table_id()) {
        path->kind_ = DirectKind::kLocal;
        path->context_ = context;
        return path;
    }
    if (context->peer_tables().get(pid, key.table_fd, key.table_id, &path->table_) != Status::kOk) {
        return nullptr;  // not that peer's table, or not reachable: the engine decides
    }
    path->kind_ = key.allocated() ? DirectKind::kMapped : DirectKind::kTable;
    return path;
}

bool DirectPath::moves(const dt::DataView& view) const {
    if (kind_ != DirectKind::kTable) return true;
    return view.contiguous() && cma_of(ep_) != nullptr;
}

Status DirectPath::check(uint64_t address, uint64_t length, uint32_t access) const {
    SlotView unused;
    return check_slot(address, length, access, &unused);
}

Status DirectPath::check_slot(uint64_t address, uint64_t length, uint32_t access,
                              SlotView* out) const {
    if (kind_ == DirectKind::kLocal) {
        uint8_t* unused = nullptr;
        return context_->mem_table().validate(key_.id.slot, key_.id.secret, address, length, access,
                                              &unused);
    }
    if (key_.id.slot >= kKeyTableSlots) return Status::kAccessDenied;
    const KeySlot& slot = table_->slots[key_.id.slot];
    if (__builtin_expect(cached_valid_, 1)) {
        // Still this mapping? (Unmapping clears the secret before anything else changes.)
        if (slot.secret.load(std::memory_order_acquire) != key_.id.secret) {
            cached_valid_ = false;
            return Status::kAccessDenied;
        }
        *out = cached_;
    } else {
        if (!read_slot(slot, key_.id.secret, out) ||
            (kind_ == DirectKind::kMapped && out->segment_fd != key_.segment_fd)) {
            return Status::kAccessDenied;
        }
        cached_ = *out;
        cached_valid_ = true;
    }
    return slot_grants(*out, address, length, access) ? Status::kOk : Status::kAccessDenied;
}

Status DirectPath::map_segment(const SlotView& view) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid_, key_.segment_fd);
    if (!is_memfd(path, "swy-mem")) return Status::kAccessDenied;
    common::UniqueFd file(::open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!file) return Status::kAccessDenied;  // gone since check(): the mapping was unmapped
    const size_t page = page_size();
    // Sized by the owner's table, not by the key: the slot says how long the mapping is.
    const uint64_t data = (view.length + page - 1) / page * page;
    struct stat st {};
    if (fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<uint64_t>(st.st_size) < page + data) {
        return Status::kAccessDenied;
    }
    void* p = mmap(nullptr, page + data, PROT_READ | PROT_WRITE, MAP_SHARED, file.get(), 0);
    if (p == MAP_FAILED) return Status::kNoMemory;
    const auto* header = static_cast<const SegmentCookie*>(p);
    // The owner may have unmapped the mapping and reused the fd number between check() and
    // open(): only the segment whose cookie is this key's secret is the key's memory.
    if (header->magic != kSegmentCookieMagic ||
        header->cookie.load(std::memory_order_acquire) != key_.id.secret || header->length < data) {
        munmap(p, page + data);
        return Status::kAccessDenied;
    }
    segment_ = static_cast<uint8_t*>(p);
    segment_bytes_ = page + data;
    return Status::kOk;
}

Status DirectPath::resolve(uint64_t address, uint64_t length, uint32_t access, uint8_t** out) {
    SlotView view;
    Status s = check_slot(address, length, access, &view);
    if (s != Status::kOk) return s;
    if (kind_ == DirectKind::kLocal) {
        *out = reinterpret_cast<uint8_t*>(address);
        return Status::kOk;
    }
    if (kind_ != DirectKind::kMapped) return Status::kUnreachable;
    if (segment_ == nullptr && (s = map_segment(view)) != Status::kOk) return s;
    // check_slot() put [address, address + length) inside the slot's range; the segment maps
    // at least that range (checked again: the table, not the key, sized it).
    const uint64_t offset = address - view.base;
    if (offset + length > segment_bytes_ - page_size()) return Status::kAccessDenied;
    *out = segment_ + page_size() + offset;
    return Status::kOk;
}

Status DirectPath::cma_move(uint64_t address, dt::DataView& view, bool write) {
    const size_t length = view.length();
    Status s = check(address, length, write ? kAccessWrite : kAccessRead);
    if (s != Status::kOk) return s;
    tl::ZcopyLane* cma = cma_of(ep_);
    if (cma == nullptr) return Status::kUnreachable;
    const size_t chunk = std::max<size_t>(cma->max_zcopy(), 1);
    for (size_t done = 0; done < length;) {
        const size_t n = std::min(chunk, length - done);
        const tl::RemoteKey remote{address + done, 0};
        s = write ? cma->put_zcopy(view.data() + done, nullptr, remote, n, {})
                  : cma->get_zcopy(view.data() + done, nullptr, remote, n, {});
        if (s != Status::kOk) return s == Status::kInProgress ? Status::kUnsupported : s;
        done += n;
    }
    return Status::kOk;
}

Status DirectPath::put(uint64_t address, dt::DataView& view) {
    if (kind_ == DirectKind::kTable) return cma_move(address, view, true);
    const size_t length = view.length();
    uint8_t* dst = nullptr;
    Status s = resolve(address, length, kAccessWrite, &dst);
    if (s != Status::kOk) return s;
    if (length != 0) view.pack(0, dst, length);
    return Status::kOk;
}

Status DirectPath::get(uint64_t address, dt::DataView& view) {
    if (kind_ == DirectKind::kTable) return cma_move(address, view, false);
    const size_t length = view.length();
    uint8_t* src = nullptr;
    Status s = resolve(address, length, kAccessRead, &src);
    if (s != Status::kOk) return s;
    return length != 0 ? view.unpack(0, src, length) : Status::kOk;
}

Status DirectPath::atomic(uint64_t address, swy_atomic_op_t op, size_t size, uint64_t operand,
                          uint64_t compare, uint64_t* old) {
    uint8_t* word = nullptr;
    Status s = resolve(address, size, kAccessAtomic, &word);
    if (s != Status::kOk) return s;
    *old = cpu_atomic(word, op, size, operand, compare);
    return Status::kOk;
}

Status DirectPath::pointer(uint64_t address, void** out) {
    if (kind_ == DirectKind::kTable) return Status::kUnreachable;
    uint8_t* p = nullptr;
    Status s = resolve(address, 0, 0, &p);
    if (s == Status::kOk) *out = p;
    return s;
}

}  // namespace swy::rma
