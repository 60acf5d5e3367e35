#include "core/context.h"

#include "common/auth.h"
#include "core/topology.h"
#include "transports/registry.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace swy::core {

Status Context::create(const common::Config& config, Context** out, std::string* why) {
    auto* ctx = new (std::nothrow) Context(config);
    if (ctx == nullptr) return Status::kNoMemory;
    ctx->host_ = HostIdentity::local();
    // A calibration file only tunes thresholds: a missing, refused or malformed one logs a
    // warning and leaves the built-in figures, it never fails the context (issue #12).
    ctx->costs_ = common::CostFigures::load_configured(config.get_string("CALIBRATION_FILE"));
    std::vector<std::string> tls = config.get_list("TLS");
    ctx->tls_all_ = tls.empty() || (tls.size() == 1 && tls[0] == "all");
    if (!ctx->tls_all_) {
        if (!tls.empty() && !tls[0].empty() && tls[0][0] == '^') {
            ctx->tls_exclude_ = true;
            tls[0] = tls[0].substr(1);
        }
        // Every registered transport, and the helpers transports use (tl::tls_helpers()).
        for (const auto& t : tls) {
            if (!tl::tls_name_known(t)) {
                *why =
                    "SWY_TLS: unknown transport '" + t + "' (known: " + tl::tls_names_text() + ")";
                delete ctx;
                return Status::kInvalidParam;
            }
        }
        ctx->tls_ = tls;
    }
    // Every transport setting, and the rules that tie several together, now rather than at
    // the first worker: a context never holds settings its workers would refuse (issue #18).
    const auto enabled = [ctx](std::string_view name) {
        return ctx->transport_enabled(std::string(name).c_str());
    };
    if (Status s = tl::check_settings(config, enabled, why); s != Status::kOk) {
        delete ctx;
        return s;
    }
    // One atomicity mode per context (switchyard/rma.h): adapter atomics are not coherent
    // with CPU atomics, so mixing them on one word would lose updates.
    if (const std::string mode = config.get_string("ATOMIC_MODE"); mode != "cpu") {
        *why = "SWY_ATOMIC_MODE: '" + mode +
               "' is not a known atomicity mode (the only one is \"cpu\": every atomic is a CPU "
               "atomic, by the initiator on memory it maps or by the target's progress)";
        delete ctx;
        return Status::kInvalidParam;
    }
    // SWY_AUTH_KEY now, not at the first worker (issue #18): a key that cannot be used is a
    // mistake worth stopping for, whichever transports are enabled.
    if (const std::string hex = config.get_string("AUTH_KEY"); !hex.empty()) {
        common::AuthKey key;
        std::string key_why;
        if (common::AuthKey::from_hex(hex, &key, &key_why) != Status::kOk) {
            *why = "SWY_AUTH_KEY: " + key_why;
            delete ctx;
            return Status::kInvalidParam;
        }
    }
    Status ms =
        mem::MemTypeRegistry::create(config.get_list("MEMTYPES"), config, &ctx->memtypes_, why);
    if (ms != Status::kOk) {
        delete ctx;
        return ms;
    }
    *out = ctx;
    return Status::kOk;
}

bool Context::transport_enabled(const char* name) const {
    if (tls_all_) return true;
    bool listed = std::find(tls_.begin(), tls_.end(), name) != tls_.end();
    return tls_exclude_ ? !listed : listed;
}

Context::~Context() = default;

const Topology* Context::topology() {
    std::lock_guard<std::mutex> guard(topology_lock_);
    if (!topology_tried_) {
        topology_tried_ = true;
        auto t = std::make_unique<Topology>();
        if (Topology::load(t.get()) == Status::kOk) topology_ = std::move(t);
    }
    return topology_.get();
}

uint64_t Context::new_worker_uid() {
    uint64_t uid = 0;
    while (uid == 0) {
        if (getrandom(&uid, sizeof(uid), 0) != sizeof(uid)) {
            uid =
                static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                (static_cast<uint64_t>(getpid()) << 40);
        }
    }
    return uid;
}

}  // namespace swy::core
