// Built without libibverbs: the verbs transport reports that it is not there (see
// verbs_open.h); src/CMakeLists.txt compiles this file instead of the verbs_*.cpp ones.
#include "transports/verbs/verbs_open.h"

namespace swy::tl::verbs {

std::vector<PortInfo> probe(const VerbsConfig& /*config*/, std::string* why) {
    if (why != nullptr) *why = "built without libibverbs (SWY_WITH_VERBS=OFF or not found)";
    return {};
}

Status measure_registration(const VerbsConfig& /*config*/, RegistrationFigures* /*out*/,
                            std::string* why) {
    *why = "built without libibverbs";
    return Status::kUnsupported;
}

Status open(const VerbsConfig& /*config*/, uint64_t /*worker_uid*/, uint16_t /*iface_index*/,
            AmSink* /*sink*/, std::unique_ptr<Interface>* /*out*/, std::string* why) {
    *why = "verbs: built without libibverbs";
    return Status::kUnsupported;
}

SendStats send_stats(const Interface* /*verbs*/) { return {}; }

void set_auth_key(Interface* /*verbs*/, const common::AuthKey& /*key*/) {}

Status connect(Interface* /*verbs*/, uint64_t /*remote_uid*/, const uint8_t* /*section*/,
               size_t /*length*/, bool /*want_pio*/, bool /*pio_first*/,
               std::unique_ptr<Endpoint>* /*out*/, std::string* why) {
    *why = "verbs: built without libibverbs";
    return Status::kUnsupported;
}

bool reg_cache_report(const Interface* /*iface*/, RegCacheReport* /*out*/) { return false; }

bool scale_report(const Interface* /*iface*/, ScaleReport* /*out*/) { return false; }

std::unique_ptr<PageIdentity> rcache_page_identity(const VerbsConfig& /*config*/,
                                                   std::string* why) {
    *why = "built without libibverbs";
    return nullptr;
}

}  // namespace swy::tl::verbs
