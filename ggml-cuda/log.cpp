#include "log.h"

#include "env.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace gcp {

namespace {

std::mutex              g_mutex; // guards the callback pair and serializes lines
ggml_cpool_log_callback g_callback  = nullptr;
void *                  g_user_data = nullptr;

void log_stderr(ggml_cpool_log_level level, const char * text) {
    if (level >= env_log_level()) {
        fputs(text, stderr);
        fflush(stderr);
    }
}

} // namespace

void log(ggml_cpool_log_level level, const char * fmt, ...) {
    char    text[1024];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(text, sizeof(text) - 1, fmt, args);
    va_end(args);
    if (n < 0) {
        return;
    }
    size_t len = size_t(n) < sizeof(text) - 2 ? size_t(n) : sizeof(text) - 2;
    text[len]     = '\n';
    text[len + 1] = '\0';

    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_callback) {
        g_callback(level, text, g_user_data);
    } else {
        log_stderr(level, text);
    }
}

void log_set(ggml_cpool_log_callback callback, void * user_data) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_callback  = callback;
    g_user_data = user_data;
}

} // namespace gcp
