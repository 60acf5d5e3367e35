#include "memtypes/registry.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#if SWY_HAVE_CUDA_PLUGIN
#include "memtypes/cuda/cuda_plugin.h"
#endif
#include "memtypes/dmabuf/dmabuf_plugin.h"
#include "memtypes/host/host_plugin.h"
#include "memtypes/simdev/simdev_plugin.h"

namespace swy::mem {
namespace {

constexpr int kTokenTypeShift = 56;
constexpr uint64_t kTokenMask = (uint64_t{1} << kTokenTypeShift) - 1;
constexpr size_t kBounceSize = 256 * 1024;  // device↔device staging chunk

size_t index_of(MemType t) { return static_cast<size_t>(t); }

MemRange host_range(const void* ptr, size_t length) {
    return MemRange{MemType::kHost, true, -1, reinterpret_cast<uintptr_t>(ptr), length};
}

}  // namespace

Status MemTypeRegistry::create(const std::vector<std::string>& names, const common::Config& config,
                               std::unique_ptr<MemTypeRegistry>* out, std::string* why) {
    std::string dummy;
    if (why == nullptr) why = &dummy;
    static const char* kKnown[] = {"host", "simdev", "dmabuf", "cuda"};
    for (const auto& n : names) {
        if (std::find_if(std::begin(kKnown), std::end(kKnown),
                         [&](const char* k) { return n == k; }) == std::end(kKnown)) {
            *why =
                "SWY_MEMTYPES: unknown memory type '" + n + "' (known: host, simdev, dmabuf, cuda)";
            return Status::kInvalidParam;
        }
    }
    auto wanted = [&](const char* name) {
        return std::find(names.begin(), names.end(), name) != names.end();
    };

    std::unique_ptr<MemTypeRegistry> reg(new (std::nothrow) MemTypeRegistry());
    if (!reg) return Status::kNoMemory;

    MemTypePlugin table{};
    create_host_plugin(&table);
    Status added = reg->add_plugin(table, why);
    if (added != Status::kOk) return added;

    // Fixed detection order: cheapest and most common first; cuda (a driver call) last.
    if (wanted("simdev")) {
        SimdevOptions opt;
        opt.bandwidth_Bps = config.get_double("SIMDEV_BW");
        opt.latency_s = static_cast<double>(config.get_time_ns("SIMDEV_LATENCY")) * 1e-9;
        opt.throttle = config.get_bool("SIMDEV_THROTTLE");
        Status s = create_simdev_plugin(opt, &table, why);
        if (s == Status::kOk) s = reg->add_plugin(table, why);
        if (s != Status::kOk) return s;
    }
    if (wanted("dmabuf")) {
        Status s = create_dmabuf_plugin(&table, why);
        if (s == Status::kOk) s = reg->add_plugin(table, why);
        if (s != Status::kOk) return s;
    }
    if (wanted("cuda")) {
        std::string reason;
#if SWY_HAVE_CUDA_PLUGIN
        Status s = create_cuda_plugin(kCudaDriverLibrary, &table, &reason);
#else
        Status s = Status::kUnsupported;
        reason = "cuda: this build has no CUDA plugin (configured with -DSWY_WITH_CUDA=OFF)";
#endif
        if (s == Status::kOk) {
            s = reg->add_plugin(table, why);
            if (s != Status::kOk) return s;
        } else if (s == Status::kUnsupported) {
            // No driver means no CUDA memory in this process: continuing without the plugin
            // cannot misdetect anything, and one SWY_MEMTYPES works across mixed clusters.
            common::log_printf(common::LogLevel::kWarn,
                               "SWY_MEMTYPES: %s; continuing without CUDA memory support",
                               reason.c_str());
            reg->cuda_unavailable_ = reason;
        } else {
            *why = reason;
            return s;
        }
    }
    *out = std::move(reg);
    return Status::kOk;
}

bool MemTypeRegistry::abi_compatible(const MemTypePlugin& table, std::string* why) {
    if (table.abi_version == kPluginAbiVersion) return true;
    *why = std::string("memory-type plugin '") + (table.name != nullptr ? table.name : "?") +
           "' was built for plugin ABI version " + std::to_string(table.abi_version) +
           ", but this library speaks version " + std::to_string(kPluginAbiVersion) +
           "; rebuild the plugin against this library's memtype.h";
    return false;
}

Status MemTypeRegistry::add_plugin(const MemTypePlugin& table, std::string* why) {
    // Nothing of a refused table is called, destroy included: its layout is not ours to trust
    // (its state leaks, which is the lesser harm).
    if (!abi_compatible(table, why)) return Status::kUnsupported;
    const size_t i = index_of(table.type);
    plugins_[i] = table;
    if (table.query != nullptr) table.query(table.state, &attrs_[i]);
    if (table.type != MemType::kHost) device_[device_count_++] = &plugins_[i];
    return Status::kOk;
}

MemTypeRegistry::~MemTypeRegistry() {
    for (auto& p : plugins_) {
        if (p.abi_version != 0 && p.destroy != nullptr) p.destroy(p.state);
    }
    for (void* p : host_allocs_)
        plugins_[index_of(MemType::kHost)].release(nullptr, p);
}

bool MemTypeRegistry::loaded(MemType type) const {
    const size_t i = index_of(type);
    return i < kMemTypeCount && type != MemType::kUnknown && plugins_[i].abi_version != 0;
}

const MemTypePlugin* MemTypeRegistry::plugin(MemType type) const {
    return loaded(type) ? &plugins_[index_of(type)] : nullptr;
}

MemTypeAttr MemTypeRegistry::attr(MemType type) const {
    if (!loaded(type)) {
        MemTypeAttr a;
        a.cpu_accessible = false;
        return a;
    }
    return attrs_[index_of(type)];
}

Status MemTypeRegistry::ask_plugins(const void* ptr, size_t length, MemRange* out) const {
    bool definitive = true;
    for (size_t i = 0; i < device_count_; ++i) {
        const MemTypePlugin* p = device_[i];
        MemRange r;
        const Status s = p->detect(p->state, ptr, length, &r);
        if (s == Status::kOk) {
            *out = r;
            return Status::kOk;
        }
        if (s != Status::kNotFound) definitive = false;
    }
    if (definitive) {
        *out = host_range(ptr, length);
        return Status::kNotFound;
    }
    *out = MemRange{MemType::kUnknown, false, -1, reinterpret_cast<uintptr_t>(ptr), length};
    return Status::kBusy;
}

MemType MemTypeRegistry::detect_device(const void* ptr, size_t length, MemRange* out) const {
    MemRange r;
    if (cache_.lookup(reinterpret_cast<uintptr_t>(ptr), length, &r)) {
        if (out != nullptr) *out = r;
        return r.type;
    }
    std::shared_lock churn(churn_lock_);
    const uint64_t generation = cache_.generation();
    const Status s = ask_plugins(ptr, length, &r);
    if (s == Status::kOk) cache_.insert_if_unchanged(r, generation);
    if (out != nullptr) *out = r;
    return r.type;
}

const MemTypePlugin* MemTypeRegistry::copy_plugin(MemType* type, const void* device_ptr,
                                                  size_t length) const {
    if (*type == MemType::kUnknown) *type = detect(device_ptr, length);
    return plugin(*type);
}

Status MemTypeRegistry::copy_to_host(MemType src_type, void* host_dst, const void* src,
                                     size_t length) const {
    const MemTypePlugin* p = copy_plugin(&src_type, src, length);
    if (p == nullptr) return Status::kInvalidParam;
    if (p->copy_to_host == nullptr) return Status::kUnsupported;
    return p->copy_to_host(p->state, host_dst, src, length);
}

Status MemTypeRegistry::copy_from_host(MemType dst_type, void* dst, const void* host_src,
                                       size_t length) const {
    const MemTypePlugin* p = copy_plugin(&dst_type, dst, length);
    if (p == nullptr) return Status::kInvalidParam;
    if (p->copy_from_host == nullptr) return Status::kUnsupported;
    return p->copy_from_host(p->state, dst, host_src, length);
}

Status MemTypeRegistry::copy(void* dst, MemType dst_type, const void* src, MemType src_type,
                             size_t length) const {
    if (dst_type == MemType::kUnknown) dst_type = detect(dst, length);
    if (src_type == MemType::kUnknown) src_type = detect(src, length);
    if (dst_type == MemType::kUnknown || src_type == MemType::kUnknown) {
        return Status::kInvalidParam;
    }
    if (length == 0) return Status::kOk;
    if (dst_type == MemType::kHost && src_type == MemType::kHost) {
        std::memmove(dst, src, length);
        return Status::kOk;
    }
    if (dst_type == MemType::kHost) return copy_to_host(src_type, dst, src, length);
    if (src_type == MemType::kHost) return copy_from_host(dst_type, dst, src, length);
    // Device to device: stage through host memory, chunk by chunk.
    std::unique_ptr<char[]> bounce(new (std::nothrow) char[std::min(length, kBounceSize)]);
    if (!bounce) return Status::kNoMemory;
    for (size_t done = 0; done < length;) {
        const size_t n = std::min(length - done, kBounceSize);
        Status s = copy_to_host(src_type, bounce.get(), static_cast<const char*>(src) + done, n);
        if (s != Status::kOk) return s;
        s = copy_from_host(dst_type, static_cast<char*>(dst) + done, bounce.get(), n);
        if (s != Status::kOk) return s;
        done += n;
    }
    return Status::kOk;
}

Status MemTypeRegistry::copy_to_host_async(MemType src_type, void* host_dst, const void* src,
                                           size_t length, uint64_t* token) const {
    *token = 0;
    const MemTypePlugin* p = copy_plugin(&src_type, src, length);
    if (p == nullptr) return Status::kInvalidParam;
    if (p->copy_to_host_async == nullptr) return Status::kUnsupported;
    uint64_t t = 0;
    const Status s = p->copy_to_host_async(p->state, host_dst, src, length, &t);
    if (s == Status::kInProgress) *token = (static_cast<uint64_t>(src_type) << kTokenTypeShift) | t;
    return s;
}

Status MemTypeRegistry::copy_from_host_async(MemType dst_type, void* dst, const void* host_src,
                                             size_t length, uint64_t* token) const {
    *token = 0;
    const MemTypePlugin* p = copy_plugin(&dst_type, dst, length);
    if (p == nullptr) return Status::kInvalidParam;
    if (p->copy_from_host_async == nullptr) return Status::kUnsupported;
    uint64_t t = 0;
    const Status s = p->copy_from_host_async(p->state, dst, host_src, length, &t);
    if (s == Status::kInProgress) *token = (static_cast<uint64_t>(dst_type) << kTokenTypeShift) | t;
    return s;
}

Status MemTypeRegistry::test(uint64_t token) const {
    if (token == 0) return Status::kOk;
    const auto type = static_cast<MemType>(token >> kTokenTypeShift);
    const MemTypePlugin* p = plugin(type);
    if (p == nullptr || p->test == nullptr) return Status::kInvalidParam;
    return p->test(p->state, token & kTokenMask);
}

Status MemTypeRegistry::allocate(MemType type, size_t length, void** out) {
    if (length == 0 || out == nullptr) return Status::kInvalidParam;
    const MemTypePlugin* p = plugin(type);
    if (p == nullptr || p->allocate == nullptr) return Status::kUnsupported;
    Status s = p->allocate(p->state, length, out);
    if (s != Status::kOk) return s;
    if (type == MemType::kHost) {
        std::lock_guard guard(host_lock_);
        host_allocs_.insert(*out);
        return Status::kOk;
    }
    // Cache the new range now: this also drops a stale range of memory freed behind our back
    // at the same address.
    MemRange r;
    if (p->detect != nullptr && p->detect(p->state, *out, length, &r) == Status::kOk) {
        cache_.insert(r);
    }
    return Status::kOk;
}

Status MemTypeRegistry::release(void* ptr) {
    if (ptr == nullptr) return Status::kInvalidParam;
    {
        std::lock_guard guard(host_lock_);
        if (host_allocs_.erase(ptr) != 0) {
            const MemTypePlugin& h = plugins_[index_of(MemType::kHost)];
            return h.release(h.state, ptr);
        }
    }
    std::unique_lock churn(churn_lock_);
    MemRange r;
    if (ask_plugins(ptr, 1, &r) != Status::kOk) return Status::kInvalidParam;
    const MemTypePlugin* p = plugin(r.type);
    if (p == nullptr || p->release == nullptr || r.base != reinterpret_cast<uintptr_t>(ptr)) {
        return Status::kInvalidParam;
    }
    // Erase before releasing: from here on a detect on another thread misses the cache and
    // waits on churn_lock_ until the plugin has forgotten the range.
    cache_.erase(r.base);
    return p->release(p->state, ptr);
}

Status MemTypeRegistry::map_dmabuf(int fd, uint64_t offset, size_t length, void** address) {
    if (address == nullptr) return Status::kInvalidParam;
    const MemTypePlugin* p = plugin(MemType::kDmabuf);
    if (p == nullptr) return Status::kUnsupported;
    Status s = dmabuf_map(p->state, fd, offset, length, address);
    if (s != Status::kOk) return s;
    MemRange r;
    if (p->detect(p->state, *address, length, &r) == Status::kOk) cache_.insert(r);
    return Status::kOk;
}

Status MemTypeRegistry::unmap(void* address) {
    const MemTypePlugin* p = plugin(MemType::kDmabuf);
    if (p == nullptr || address == nullptr) return Status::kInvalidParam;
    std::unique_lock churn(churn_lock_);
    cache_.erase(reinterpret_cast<uintptr_t>(address));
    return dmabuf_unmap(p->state, address);
}

Status MemTypeRegistry::export_dmabuf(const void* ptr, size_t length, int* fd,
                                      uint64_t* offset) const {
    if (fd == nullptr || offset == nullptr) return Status::kInvalidParam;
    const MemType type = detect(ptr, length);
    if (type == MemType::kUnknown) return Status::kInvalidParam;
    const MemTypePlugin* p = plugin(type);
    if (p == nullptr || p->export_dmabuf == nullptr) return Status::kUnsupported;
    return p->export_dmabuf(p->state, ptr, length, fd, offset);
}

void MemTypeRegistry::invalidate(const void* ptr, size_t length) {
    if (device_count_ == 0) return;
    std::unique_lock churn(churn_lock_);
    cache_.invalidate(reinterpret_cast<uintptr_t>(ptr), length);
}

}  // namespace swy::mem
