#include "log.h"

#include "env.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace gcp {

namespace {

std::mutex              g_mutex; // guards the callback pair and serializes lines
ggml_cpool_log_callback g_callback  = nullptr;
void *                  g_user_data = nullptr;

constexpr size_t LINE_MAX_BYTES = 1024;
// a failing call's reason, for a consumer that reports it where it gives up (an abort message)
thread_local char t_last_error[LINE_MAX_BYTES] = "";

void log_stderr(ggml_cpool_log_level level, const char * text) {
    if (level >= env_log_level()) {
        fputs(text, stderr);
        fflush(stderr);
    }
}

} // namespace

void log(ggml_cpool_log_level level, const char * fmt, ...) {
    char    text[LINE_MAX_BYTES];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(text, sizeof(text) - 1, fmt, args);
    va_end(args);
    if (n < 0) {
        return;
    }
    size_t len = size_t(n) < sizeof(text) - 2 ? size_t(n) : sizeof(text) - 2;
    if (level >= GGML_CPOOL_LOG_WARN) {
        memcpy(t_last_error, text, len);
        t_last_error[len] = '\0';
    }
    text[len]     = '\n';
    text[len + 1] = '\0';

    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_callback) {
        g_callback(level, text, g_user_data);
    } else {
        log_stderr(level, text);
    }
}

const char * last_error() {
    return t_last_error;
}

void log_set(ggml_cpool_log_callback callback, void * user_data) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_callback  = callback;
    g_user_data = user_data;
}

} // namespace gcp
