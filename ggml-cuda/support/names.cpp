#include "names.h"

#include <cstdio>
#include <cstring>
#include <strings.h>

namespace gcp {

namespace {

// indexed by the enums' values, which run from 0 without gaps
constexpr const char * STATUS_NAMES[] = { "OK", "OUT_OF_MEMORY", "INVALID_ARGUMENT", "DRIVER_ERROR", "UNSUPPORTED" };
constexpr const char * KIND_NAMES[]   = { "auto", "vmm", "legacy", "plain", "async" };
constexpr const char * LEVEL_NAMES[]  = { "debug", "info", "warn", "error" };
static_assert(sizeof(KIND_NAMES) / sizeof(KIND_NAMES[0]) == GGML_CPOOL_KIND_COUNT, "one name per kind");
constexpr const char * CALL_NAMES[] = {
#define GCP_CALL(name, spec, takes) spec,
    GGML_CPOOL_CALLS(GCP_CALL)
#undef GCP_CALL
};
static_assert(sizeof(CALL_NAMES) / sizeof(CALL_NAMES[0]) == GGML_CPOOL_CALL_COUNT, "one name per call");

template <size_t N> const char * name_of(const char * const (&names)[N], int value, const char * none) {
    return value >= 0 && size_t(value) < N ? names[value] : none;
}

// *out = the value that text names (any_case: in any case); false for none
template <typename E, size_t N>
bool from_name(const char * const (&names)[N], const char * text, E * out, bool any_case = true) {
    for (size_t i = 0; text != nullptr && i < N; i++) {
        if ((any_case ? strcasecmp(text, names[i]) : strcmp(text, names[i])) == 0) {
            *out = E(i);
            return true;
        }
    }
    return false;
}

} // namespace

const char * status_name(ggml_cpool_status st) {
    return name_of(STATUS_NAMES, int(st), "UNKNOWN_STATUS");
}

const char * kind_name(ggml_cpool_kind kind) {
    return name_of(KIND_NAMES, int(kind), "unknown");
}

bool kind_from_name(const char * text, ggml_cpool_kind * kind) {
    return from_name(KIND_NAMES, text, kind);
}

const char * call_name(ggml_cpool_call call) {
    return name_of(CALL_NAMES, int(call), "any");
}

bool call_from_name(const char * text, ggml_cpool_call * call) {
    return from_name(CALL_NAMES, text, call, false); // fault specs spell calls exactly
}

bool log_level_from_name(const char * text, ggml_cpool_log_level * level) {
    return from_name(LEVEL_NAMES, text, level);
}

void format_pool_label(ggml_cpool_platform platform, int device, char * out, size_t size) {
    snprintf(out, size, "%s pool[%d]", platform == GGML_CPOOL_PLATFORM_HIP ? "HIP" : "CUDA", device);
}

} // namespace gcp
