#include "env.h"

#include "log.h"

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

// reads o through parse; unset leaves *out untouched, a value parse refuses is one line
template <typename T, typename P>
status env_read(option o, T * out, P && parse, const char * what, const char * choices) {
    const char * v = option_text(o);
    if (v == nullptr) {
        return OK;
    }
    if (!parse(v, out)) {
        GCP_LOG_ERROR("%s=%s is not %s (use %s)", option_name(o), v, what, choices);
        return INVALID_ARGUMENT;
    }
    return OK;
}

} // namespace

status env_no_vmm(bool * no_vmm) {
    return env_read(GGML_CPOOL_OPTION_NO_VMM, no_vmm, parse_bool, "a boolean", "1 or 0");
}

status env_timing(bool * on) {
    return env_read(GGML_CPOOL_OPTION_TIMING, on, parse_bool, "a boolean", "1 or 0");
}

status env_pool_kind(ggml_cpool_kind * kind) {
    return env_read(GGML_CPOOL_OPTION_POOL, kind, kind_from_name, "a pool kind", kind_choices());
}

} // namespace gcp
