#pragma once
// Logging through the host program's callback (ggml_log_set style); stderr by default.

#include "ggml-cuda-pool.h"

namespace gcp {

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void log(ggml_cpool_log_level level, const char * fmt, ...);

void log_set(ggml_cpool_log_callback callback, void * user_data);

// the calling thread's last warning or error line, without its newline
const char * last_error();

} // namespace gcp

#define GCP_LOG_DEBUG(...) ::gcp::log(GGML_CPOOL_LOG_DEBUG, __VA_ARGS__)
#define GCP_LOG_INFO(...)  ::gcp::log(GGML_CPOOL_LOG_INFO,  __VA_ARGS__)
#define GCP_LOG_WARN(...)  ::gcp::log(GGML_CPOOL_LOG_WARN,  __VA_ARGS__)
#define GCP_LOG_ERROR(...) ::gcp::log(GGML_CPOOL_LOG_ERROR, __VA_ARGS__)
