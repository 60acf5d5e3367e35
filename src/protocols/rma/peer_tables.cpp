#include "protocols/rma/peer_tables.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdio>

#include "common/unique_fd.h"

namespace swy::rma {

PeerTable::~PeerTable() {
    if (base != nullptr) munmap(const_cast<uint8_t*>(base), kKeyTableBytes);
}

Status PeerTables::get(int pid, int fd, uint64_t table_id, std::shared_ptr<PeerTable>* out) {
    if (pid <= 0 || fd < 0) return Status::kUnreachable;
    std::lock_guard<std::mutex> guard(lock_);
    const auto key = std::make_pair(pid, table_id);
    if (auto it = tables_.find(key); it != tables_.end()) {
        if (auto existing = it->second.lock()) {
            *out = std::move(existing);
            return Status::kOk;
        }
        tables_.erase(it);
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
    // Read-only: a peer's table is only ever read here.
    common::UniqueFd file(::open(path, O_RDONLY | O_CLOEXEC));
    if (!file) return Status::kUnreachable;
    struct stat st {};
    if (fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<uint64_t>(st.st_size) != kKeyTableBytes) {
        return Status::kMalformed;
    }
    void* p = mmap(nullptr, kKeyTableBytes, PROT_READ, MAP_SHARED, file.get(), 0);
    if (p == MAP_FAILED) return Status::kUnreachable;
    auto table = std::make_shared<PeerTable>();
    table->base = static_cast<const uint8_t*>(p);
    const auto* h = static_cast<const KeyTableHeader*>(p);
    // The kernel vouches that the file is one of process `pid`'s; the header must also say it
    // is that process's table with the id the key named (an fd number the owner reused for
    // something else, or a key naming another table, stops here).
    if (h->magic != kKeyTableMagic || h->version != kKeyTableVersion ||
        h->slots != kKeyTableSlots || h->owner_pid != pid || h->table_id != table_id) {
        return Status::kMalformed;
    }
    table->pid = pid;
    table->table_id = table_id;
    table->slots = reinterpret_cast<const KeySlot*>(table->base + sizeof(KeyTableHeader));
    tables_[key] = table;
    *out = std::move(table);
    return Status::kOk;
}

}  // namespace swy::rma
