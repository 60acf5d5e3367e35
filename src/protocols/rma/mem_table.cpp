#include "protocols/rma/mem_table.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "core/context.h"
#include "protocols/rma/rma.h"

namespace swy::rma {

namespace {

uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

}  // namespace

size_t page_size() {
    static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

uint64_t random_nonzero64() {
    uint64_t v = 0;
    while (v == 0) {
        if (getrandom(&v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) v = 0;
    }
    return v;
}

bool read_slot(const KeySlot& slot, uint64_t secret, SlotView* out) {
    if (secret == 0 || slot.secret.load(std::memory_order_acquire) != secret) return false;
    // Acquire loads keep the second read of the secret after the fields (a seqlock reader;
    // acquire loads rather than a fence, which ThreadSanitizer cannot model). The fields
    // belong to this mapping only if the secret is still there after reading them: the owner
    // clears it before it rewrites anything.
    out->base = slot.base.load(std::memory_order_acquire);
    out->length = slot.length.load(std::memory_order_acquire);
    out->access = slot.access.load(std::memory_order_acquire);
    out->segment_fd = slot.segment_fd.load(std::memory_order_acquire);
    return slot.secret.load(std::memory_order_relaxed) == secret;
}

bool slot_grants(const SlotView& view, uint64_t address, uint64_t length, uint32_t access) {
    if ((view.access & access) != access) return false;
    if (address < view.base) return false;
    const uint64_t offset = address - view.base;
    return offset <= view.length && length <= view.length - offset;
}

MemTable::~MemTable() {
    for (Mapping* m : live_) {
        if (m != nullptr) unmap(m);
    }
    if (table_ != nullptr) munmap(table_, kKeyTableBytes);
}

Status MemTable::ensure_table(std::string* why) {
    if (table_ != nullptr) return Status::kOk;
    common::UniqueFd fd(memfd_create("swy-keys", MFD_CLOEXEC));
    if (!fd || ftruncate(fd.get(), static_cast<off_t>(kKeyTableBytes)) != 0) {
        *why = std::string("key table memfd: ") + std::strerror(errno);
        return Status::kIoError;
    }
    void* p = mmap(nullptr, kKeyTableBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) {
        *why = std::string("key table mmap: ") + std::strerror(errno);
        return Status::kIoError;
    }
    auto* h = static_cast<KeyTableHeader*>(p);
    table_id_ = random_nonzero64();
    h->magic = kKeyTableMagic;
    h->version = kKeyTableVersion;
    h->slots = kKeyTableSlots;
    h->owner_pid = static_cast<int32_t>(getpid());
    h->table_id = table_id_;
    table_ = static_cast<uint8_t*>(p);
    auto* slots = reinterpret_cast<KeySlot*>(table_ + sizeof(KeyTableHeader));
    for (uint32_t i = 0; i < kKeyTableSlots; ++i)
        slots[i].segment_fd.store(-1);
    live_.assign(kKeyTableSlots, nullptr);
    free_slots_.reserve(kKeyTableSlots);
    for (uint32_t i = kKeyTableSlots; i > 0; --i)
        free_slots_.push_back(i - 1);
    table_fd_ = std::move(fd);
    slots_.store(slots, std::memory_order_release);
    return Status::kOk;
}

Status MemTable::allocate(void* address, size_t length, uint32_t flags, Mapping* m,
                          std::string* why) {
    const size_t page = page_size();
    const size_t data = round_up(length, page);
    if (data < length) return Status::kInvalidParam;
    common::UniqueFd fd(memfd_create("swy-mem", MFD_CLOEXEC));
    if (!fd || ftruncate(fd.get(), static_cast<off_t>(page + data)) != 0) {
        *why = std::string("memory segment memfd: ") + std::strerror(errno);
        return errno == ENOMEM || errno == ENOSPC || errno == EFBIG ? Status::kNoMemory
                                                                    : Status::kIoError;
    }
    const bool fixed = (flags & SWY_MEM_MAP_FIXED) != 0;
    void* p =
        mmap(address, data, PROT_READ | PROT_WRITE, MAP_SHARED | (fixed ? MAP_FIXED_NOREPLACE : 0),
             fd.get(), static_cast<off_t>(page));
    // Kernels before 4.17 take MAP_FIXED_NOREPLACE as a hint: a different address is a refusal.
    if (p != MAP_FAILED && fixed && p != address) {
        munmap(p, data);
        p = MAP_FAILED;
        errno = EEXIST;
    }
    if (p == MAP_FAILED) {
        const int err = errno;
        *why = std::string("memory segment mmap: ") + std::strerror(err);
        if (fixed && err == EEXIST) {
            *why = "SWY_MEM_MAP_FIXED: the address range is already mapped";
            return Status::kNoResource;
        }
        return err == ENOMEM ? Status::kNoMemory : Status::kIoError;
    }
    // The header page after the data: mapped first, it could land in the very range a FIXED
    // caller asked for.
    void* header = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (header == MAP_FAILED) {
        *why = std::string("memory segment header mmap: ") + std::strerror(errno);
        munmap(p, data);
        return Status::kIoError;
    }
    m->header = static_cast<SegmentCookie*>(header);
    m->header->magic = kSegmentCookieMagic;
    m->header->length = data;
    m->address = static_cast<uint8_t*>(p);
    m->mapped_length = data;
    m->memfd = std::move(fd);
    m->allocated = true;
    return Status::kOk;
}

Status MemTable::map(void* address, size_t length, uint32_t flags, uint32_t access,
                     swy_memtype_t memtype, Mapping** out, std::string* why) {
    auto m = std::unique_ptr<Mapping>(new (std::nothrow) Mapping);
    if (!m) return Status::kNoMemory;
    std::lock_guard<std::mutex> guard(lock_);
    Status s = ensure_table(why);
    if (s != Status::kOk) return s;
    if (free_slots_.empty()) {
        *why = "the key table is full (" + std::to_string(kKeyTableSlots) + " mappings)";
        return Status::kNoResource;
    }
    m->length = length;
    m->access = access;
    m->memtype = memtype;
    if ((flags & SWY_MEM_MAP_ALLOCATE) != 0) {
        s = allocate((flags & SWY_MEM_MAP_FIXED) != 0 ? address : nullptr, length, flags, m.get(),
                     why);
        if (s != Status::kOk) return s;
    } else {
        m->address = static_cast<uint8_t*>(address);
    }
    m->slot = free_slots_.back();
    free_slots_.pop_back();
    m->secret = random_nonzero64();
    if (m->header != nullptr) m->header->cookie.store(m->secret, std::memory_order_release);
    KeySlot& slot = slots_.load(std::memory_order_relaxed)[m->slot];
    slot.base.store(reinterpret_cast<uint64_t>(m->address), std::memory_order_relaxed);
    slot.length.store(length, std::memory_order_relaxed);
    slot.access.store(access, std::memory_order_relaxed);
    slot.segment_fd.store(m->allocated ? m->memfd.get() : -1, std::memory_order_relaxed);
    slot.secret.store(m->secret, std::memory_order_release);  // publishes the fields above
    m->magic = kMappingMagic;
    live_[m->slot] = m.get();
    *out = m.release();
    return Status::kOk;
}

Status MemTable::unmap(Mapping* m) {
    std::lock_guard<std::mutex> guard(lock_);
    KeySlot* slots = slots_.load(std::memory_order_relaxed);
    // Look the handle up before reading through it: an unmapped (freed) or bogus handle is
    // refused without being dereferenced.
    if (m == nullptr || slots == nullptr ||
        std::find(live_.begin(), live_.end(), m) == live_.end()) {
        return Status::kInvalidParam;
    }
    // From this store on no check passes: peers read the secret before and after the fields.
    slots[m->slot].secret.store(0, std::memory_order_release);
    if (m->header != nullptr) m->header->cookie.store(0, std::memory_order_release);
    slots[m->slot].segment_fd.store(-1, std::memory_order_relaxed);
    if (m->allocated) {
        munmap(m->address, m->mapped_length);
        munmap(m->header, page_size());
    }
    live_[m->slot] = nullptr;
    free_slots_.push_back(m->slot);
    m->magic = 0;
    delete m;
    return Status::kOk;
}

Status MemTable::validate(uint32_t slot, uint64_t secret, uint64_t address, size_t length,
                          uint32_t access, uint8_t** local) const {
    SlotView view;
    const KeySlot* slots = slots_.load(std::memory_order_acquire);
    if (slots == nullptr || slot >= kKeyTableSlots || !read_slot(slots[slot], secret, &view) ||
        !slot_grants(view, address, length, access)) {
        return Status::kAccessDenied;
    }
    // The owner's addresses are this process's: the key names them directly.
    *local = reinterpret_cast<uint8_t*>(address);
    return Status::kOk;
}

Status validate_access(core::Context* context, uint32_t slot, uint64_t secret, uint64_t address,
                       size_t length, uint32_t access, uint8_t** local) {
    return context->mem_table().validate(slot, secret, address, length, access, local);
}

}  // namespace swy::rma
