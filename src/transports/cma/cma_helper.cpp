#include "transports/cma/cma_helper.h"

#include "transports/cma/cma.h"

namespace swy::tl::cma {
namespace {

Status check_config(const common::Config& config, std::string* why) {
    CmaMode mode;
    return configured_mode(config, true, &mode, why);
}

}  // namespace

const HelperEntry kHelper{
    .name = kTlsName,
    .check_config = check_config,
};

}  // namespace swy::tl::cma
