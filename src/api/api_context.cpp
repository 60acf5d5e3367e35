// C API: version, status strings, configuration, context.
#include <switchyard/switchyard.h>

#include <cstring>
#include <new>
#include <string>

#include "api/api_guard.h"
#include "api/api_params.h"
#include "common/config.h"
#include "core/context.h"

using namespace swy;

extern "C" {

const char* swy_version_string(void) { return SWY_VERSION_STRING; }

const char* swy_status_string(swy_status_t status) {
    return status_text(static_cast<Status>(status));
}

swy_status_t swy_config_read(swy_config_h* config) {
    if (config == nullptr) return api::invalid(__func__, "config is NULL");
    auto* c = new (std::nothrow) common::Config();
    if (c == nullptr) return SWY_ERR_NO_MEMORY;
    std::string error;
    Status s = common::Config::from_environment(c, &error);
    if (s != Status::kOk) {
        common::log_printf(common::LogLevel::kError, "configuration: %s", error.c_str());
        delete c;
        return api::to_c(s);
    }
    *config = reinterpret_cast<swy_config_h>(c);
    return SWY_OK;
}

swy_status_t swy_config_set(swy_config_h config, const char* name, const char* value) {
    if (config == nullptr || name == nullptr || value == nullptr) {
        return api::invalid(__func__, "config, name and value must not be NULL");
    }
    std::string error;
    Status s = reinterpret_cast<common::Config*>(config)->set(name, value, &error);
    if (s != Status::kOk) {
        common::log_printf(common::LogLevel::kError, "swy_config_set: %s", error.c_str());
    }
    return api::to_c(s);
}

swy_status_t swy_config_get(swy_config_h config, const char* name, char* buf, size_t buflen) {
    if (config == nullptr || name == nullptr || buf == nullptr) {
        return api::invalid(__func__, "config, name and buf must not be NULL");
    }
    std::string value;
    Status s = reinterpret_cast<common::Config*>(config)->get_text(name, &value);
    if (s != Status::kOk) return api::to_c(s);
    if (buflen == 0) return SWY_ERR_NO_RESOURCE;
    std::strncpy(buf, value.c_str(), buflen - 1);
    buf[buflen - 1] = '\0';
    return value.size() < buflen ? SWY_OK : SWY_ERR_NO_RESOURCE;
}

void swy_config_release(swy_config_h config) { delete reinterpret_cast<common::Config*>(config); }

swy_status_t swy_context_create(const swy_context_params_t* params, swy_context_h* context) {
    if (context == nullptr) return api::invalid(__func__, "context is NULL");
    const uint64_t fields = params != nullptr ? params->field_mask : 0;
    if (swy_status_t c =
            api::check_fields(__func__, "swy_context_params_t", fields, api::kContextParamFields);
        c != SWY_OK) {
        return c;
    }
    common::Config config;
    if ((fields & SWY_CONTEXT_PARAM_FIELD_CONFIG) != 0 && params->config != nullptr) {
        config = *reinterpret_cast<common::Config*>(params->config);
    } else {
        std::string error;
        Status s = common::Config::from_environment(&config, &error);
        if (s != Status::kOk) {
            common::log_printf(common::LogLevel::kError, "configuration: %s", error.c_str());
            return api::to_c(s);
        }
    }
    core::Context* ctx = nullptr;
    std::string why;
    Status s = core::Context::create(config, &ctx, &why);
    if (s != Status::kOk) {
        common::log_printf(common::LogLevel::kError, "swy_context_create: %s", why.c_str());
        return api::to_c(s);
    }
    *context = reinterpret_cast<swy_context_h>(ctx);
    return SWY_OK;
}

void swy_context_destroy(swy_context_h context) {
    auto* ctx = reinterpret_cast<core::Context*>(context);
    if (ctx == nullptr) return;
    if (ctx->live_workers.load() != 0) {
        common::log_printf(common::LogLevel::kError,
                           "swy_context_destroy: %d worker(s) still alive; destroy them first",
                           ctx->live_workers.load());
    }
    delete ctx;
}

}  // extern "C"
