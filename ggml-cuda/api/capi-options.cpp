// The C ABI of the options table (ggml-cuda-pool.h), for the integrations, which see only the public headers.

#include "capi.h"
#include "../support/env.h"

namespace {

using namespace gcp::capi;

// an option past the table is refused with a line, as any bad argument is
bool known(const char * fn, ggml_cpool_option option) {
    const int o = gcp::raw_enum(option);
    if (o < 0 || o >= GGML_CPOOL_OPTION_COUNT) {
        GCP_LOG_ERROR("%s: unknown option %d", fn, o);
        return false;
    }
    return true;
}

ggml_cpool_status read_row(const char * fn, ggml_cpool_option option, ggml_cpool_option_value * value,
                           gcp::reading how) {
    if (value == nullptr) {
        return null_arg(fn, "value");
    }
    *value = {};
    if (!known(fn, option)) {
        return GGML_CPOOL_STATUS_INVALID_ARGUMENT;
    }
    return walled(fn, [&] { return gcp::read_option(option, value, how); });
}

} // namespace

extern "C" {

ggml_cpool_status ggml_cpool_option_read(ggml_cpool_option option, ggml_cpool_option_value * value) {
    return read_row(__func__, option, value, gcp::reading::report);
}

ggml_cpool_status ggml_cpool_option_peek(ggml_cpool_option option, ggml_cpool_option_value * value) {
    return read_row(__func__, option, value, gcp::reading::quiet);
}

const char * ggml_cpool_option_entry(ggml_cpool_option option, const char * text, int index) {
    return known(__func__, option) ? gcp::option_entry(option, text, index) : nullptr;
}

ggml_cpool_status ggml_cpool_options_check(void) {
    return walled(__func__, [] { return gcp::check_options(); });
}

} // extern "C"
