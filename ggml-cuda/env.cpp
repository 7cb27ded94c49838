#include "env.h"

#include "log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace gcp {

namespace {

bool parse_bool(const char * text, bool * out) {
    static const char * const yes[] = { "1", "on", "true", "yes" };
    static const char * const no[]  = { "0", "off", "false", "no" };
    for (const char * y : yes) {
        if (strcasecmp(text, y) == 0) {
            *out = true;
            return true;
        }
    }
    for (const char * n : no) {
        if (strcasecmp(text, n) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

// unset leaves *out untouched
status env_bool(const char * name, bool * out) {
    const char * v = getenv(name);
    if (v == nullptr) {
        return OK;
    }
    if (!parse_bool(v, out)) {
        GCP_LOG_ERROR("%s=%s is not a boolean (use 1 or 0)", name, v);
        return INVALID_ARGUMENT;
    }
    return OK;
}

} // namespace

status env_no_vmm(bool * no_vmm) {
    return env_bool(ENV_NO_VMM, no_vmm);
}

status env_timing(bool * on) {
    return env_bool(ENV_TIMING, on);
}

status env_pool_kind(ggml_cpool_kind * kind) {
    const char * v = getenv(ENV_POOL_KIND);
    if (v == nullptr) {
        return OK;
    }
    if (!kind_from_name(v, kind)) {
        GCP_LOG_ERROR("%s=%s is not a pool kind (use %s)", ENV_POOL_KIND, v, KIND_CHOICES);
        return INVALID_ARGUMENT;
    }
    return OK;
}

ggml_cpool_log_level env_log_level() {
    const char *         v     = getenv(ENV_LOG_LEVEL);
    ggml_cpool_log_level level = GGML_CPOOL_LOG_WARN;
    if (v == nullptr || log_level_from_name(v, &level)) {
        return level;
    }
    // said directly: this runs inside the logger
    static std::atomic<bool> warned{ false };
    if (!warned.exchange(true)) {
        fprintf(stderr, "%s=%s is not a log level (use debug, info, warn or error); using warn\n", ENV_LOG_LEVEL, v);
    }
    return GGML_CPOOL_LOG_WARN;
}

} // namespace gcp
