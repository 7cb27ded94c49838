#pragma once
// Logging through the host program's callback (ggml_log_set style); stderr by default. No lock
// of the module is held while a line is sent: a callback may call back into the library.

#include "ggml-cuda-pool.h"

#include <cstddef>

#define GCP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args))) // as common.h's attributes

namespace gcp {

void log(ggml_cpool_log_level level, const char * fmt, ...) GCP_PRINTF(2, 3);

// after it returns, no other thread is still sending a line to the previous callback
void log_set(ggml_cpool_log_callback callback, void * user_data);

// the level GGML_CUDA_POOL_LOG asks for (warn when unset or malformed), read at each call; the
// default stderr logger reads it once, at the first line it prints
ggml_cpool_log_level log_threshold();

// the calling thread's last warning or error line, without its newline
const char * last_error();

// Holds this thread's log lines while it lives (a few, no allocation) and sends them when the
// outermost hold ends. Declare one before a lock guard: a log callback may wait on that lock.
class log_hold {
  public:
    log_hold();
    ~log_hold();
    log_hold(const log_hold &)             = delete;
    log_hold & operator=(const log_hold &) = delete;

    // a line said while this is the outermost hold
    void keep(ggml_cpool_log_level level, const char * text);

  private:
    static constexpr size_t LINES      = 8;   // more than any one locked section says
    static constexpr size_t LINE_BYTES = 256; // every line the module says under a lock is shorter

    struct line {
        ggml_cpool_log_level level;
        char                 text[LINE_BYTES];
    };
    log_hold * outer_; // the hold already in place on this thread, if any
    line       lines_[LINES];
    size_t     count_   = 0;
    size_t     dropped_ = 0;
};

} // namespace gcp

#define GCP_LOG_DEBUG(...) ::gcp::log(GGML_CPOOL_LOG_DEBUG, __VA_ARGS__)
#define GCP_LOG_INFO(...)  ::gcp::log(GGML_CPOOL_LOG_INFO, __VA_ARGS__)
#define GCP_LOG_WARN(...)  ::gcp::log(GGML_CPOOL_LOG_WARN, __VA_ARGS__)
#define GCP_LOG_ERROR(...) ::gcp::log(GGML_CPOOL_LOG_ERROR, __VA_ARGS__)
