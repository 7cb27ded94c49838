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
// room for every kind name and its separator in kind_choices()
constexpr size_t       KIND_CHOICES_BYTES = 64;
constexpr const char * CALL_NAMES[]       = {
#define GCP_CALL(name, spec, takes) spec,
    GGML_CPOOL_CALLS(GCP_CALL)
#undef GCP_CALL
};
static_assert(sizeof(CALL_NAMES) / sizeof(CALL_NAMES[0]) == GGML_CPOOL_CALL_COUNT, "one name per call");

template <size_t N> const char * name_of(const char * const (&names)[N], int value, const char * none) {
    return value >= 0 && size_t(value) < N ? names[value] : none;
}

// the index of text among names (any case), or -1
template <size_t N> int index_of(const char * const (&names)[N], const char * text) {
    for (size_t i = 0; text != nullptr && i < N; i++) {
        if (strcasecmp(text, names[i]) == 0) {
            return int(i);
        }
    }
    return -1;
}

} // namespace

const char * status_name(ggml_cpool_status st) {
    return name_of(STATUS_NAMES, int(st), "UNKNOWN_STATUS");
}

const char * kind_name(ggml_cpool_kind kind) {
    return name_of(KIND_NAMES, int(kind), "unknown");
}

bool kind_from_name(const char * text, ggml_cpool_kind * kind) {
    int i = index_of(KIND_NAMES, text);
    if (i >= 0) {
        *kind = ggml_cpool_kind(i);
    }
    return i >= 0;
}

const char * kind_choices() {
    struct text {
        char chars[KIND_CHOICES_BYTES] = "";
    };
    static const text choices = [] { // no allocation: this answers a malformed GGML_CUDA_POOL
        text   t;
        size_t at = 0;
        for (size_t i = 0; i < size_t(GGML_CPOOL_KIND_COUNT) && at < sizeof(t.chars); i++) {
            const char * separator = i == 0 ? "" : i + 1 == size_t(GGML_CPOOL_KIND_COUNT) ? " or " : ", ";
            at += size_t(snprintf(t.chars + at, sizeof(t.chars) - at, "%s%s", separator, KIND_NAMES[i]));
        }
        return t;
    }();
    return choices.chars;
}

const char * platform_name(ggml_cpool_platform platform) {
    return platform == GGML_CPOOL_PLATFORM_HIP ? "HIP" : "CUDA";
}

const char * call_name(ggml_cpool_call call) {
    return name_of(CALL_NAMES, int(call), "any");
}

bool call_from_name(const char * text, ggml_cpool_call * call) {
    int i = -1;
    for (size_t c = 0; text != nullptr && c < GGML_CPOOL_CALL_COUNT && i < 0; c++) {
        i = strcmp(text, CALL_NAMES[c]) == 0 ? int(c) : -1; // fault specs spell calls exactly
    }
    if (i >= 0) {
        *call = ggml_cpool_call(i);
    }
    return i >= 0;
}

bool log_level_from_name(const char * text, ggml_cpool_log_level * level) {
    int i = index_of(LEVEL_NAMES, text);
    if (i >= 0) {
        *level = ggml_cpool_log_level(i);
    }
    return i >= 0;
}

void format_pool_label(ggml_cpool_platform platform, int device, char * out, size_t size) {
    snprintf(out, size, "%s pool[%d]", platform_name(platform), device);
}

} // namespace gcp
