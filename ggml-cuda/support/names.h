#pragma once
// Every name the module prints or reads: statuses, pool kinds, driver calls, log levels, pool labels.

#include "ggml-cuda-pool.h"
#include "ggml-cuda-pool-calls.h"

#include <cstddef>

namespace gcp {

// "OK", "OUT_OF_MEMORY", ...; "UNKNOWN_STATUS" for anything else
const char * status_name(ggml_cpool_status st);
// "auto", "vmm", "legacy", "plain", "async"; "unknown" for anything else
const char * kind_name(ggml_cpool_kind kind);
// the kind a name says (any case); false for no kind
bool         kind_from_name(const char * text, ggml_cpool_kind * kind);
// the fault-spec name of a driver call (GGML_CPOOL_CALLS); "any" past the table
const char * call_name(ggml_cpool_call call);
// the call a fault-spec name says; false for no call
bool         call_from_name(const char * text, ggml_cpool_call * call);
// the log level a name says (any case: debug, info, warn, error); false for no level
bool         log_level_from_name(const char * text, ggml_cpool_log_level * level);

// "CUDA pool[0]" or "HIP pool[1]" into out (24 bytes are enough)
void format_pool_label(ggml_cpool_platform platform, int device, char * out, size_t size);

// the label of one line: GCP_LOG_ERROR("%s: ...", pool_label(platform, device).c_str())
class pool_label {
  public:
    pool_label(ggml_cpool_platform platform, int device) { format_pool_label(platform, device, text_, sizeof(text_)); }
    const char * c_str() const { return text_; }

  private:
    char text_[24];
};

} // namespace gcp
