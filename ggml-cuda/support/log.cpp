#include "log.h"

#include "env.h"
#include "names.h"

#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace gcp {

namespace {

constexpr size_t LINE_BYTES = 1024; // one formatted line; longer ones are cut

std::mutex              g_mutex; // guards the callback pair and the count below, never held during a callback
std::condition_variable g_idle;  // a line has been sent
ggml_cpool_log_callback g_callback  = nullptr;
void *                  g_user_data = nullptr;
size_t                  g_sending   = 0;       // lines being sent to a callback, on every thread
thread_local size_t     t_sending   = 0;       // of those, this thread's (a callback that logs or sets the logger)
thread_local log_hold * t_hold      = nullptr; // the outermost hold on this thread
// a failing call's reason, for a consumer that reports it where it gives up (an abort message)
thread_local char       t_last_error[LINE_BYTES] = "";

// counts a line as being sent for as long as it lives
struct sending {
    sending() { t_sending++; }
    ~sending() {
        t_sending--;
        {
            std::lock_guard<std::mutex> lock(g_mutex);
            g_sending--;
        }
        g_idle.notify_all();
    }
};

void send(ggml_cpool_log_level level, const char * text) {
    ggml_cpool_log_callback callback;
    void *                  user_data;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        callback  = g_callback;
        user_data = g_user_data;
        g_sending += callback != nullptr;
    }
    if (callback == nullptr) { // stderr, at the level read at the first line it prints
        static const ggml_cpool_log_level threshold = log_threshold();
        if (level >= threshold) {
            fputs(text, stderr); // one call: stdio keeps the line whole
            fflush(stderr);
        }
        return;
    }
    sending s;
    callback(level, text, user_data);
}

} // namespace

void log(ggml_cpool_log_level level, const char * fmt, ...) {
    char    text[LINE_BYTES];
    va_list args;
    va_start(args, fmt);
    const int n = vsnprintf(text, sizeof(text) - 1, fmt, args);
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
    if (t_hold != nullptr) {
        t_hold->keep(level, text);
    } else {
        send(level, text);
    }
}

ggml_cpool_log_level log_threshold() {
    // quiet: the logger may be asking; a malformed level is warn here, refused at context creation
    option_value         v;
    ggml_cpool_log_level level = GGML_CPOOL_LOG_WARN;
    if (read_option(GGML_CPOOL_OPTION_LOG, &v, reading::quiet) == OK && v.set) {
        (void) log_level_from_name(v.word, &level);
    }
    return level;
}

const char * last_error() {
    return t_last_error;
}

void log_set(ggml_cpool_log_callback callback, void * user_data) {
    std::unique_lock<std::mutex> lock(g_mutex);
    g_callback  = callback;
    g_user_data = user_data;
    // the caller may free what the previous callback uses once this returns: wait for the lines
    // other threads are sending (not for this thread's own, when a callback sets the logger)
    g_idle.wait(lock, [] { return g_sending == t_sending; });
}

log_hold::log_hold() : outer_(t_hold) {
    if (outer_ == nullptr) {
        t_hold = this;
    }
}

log_hold::~log_hold() {
    if (outer_ != nullptr) {
        return; // the outermost hold sends them
    }
    t_hold = nullptr;
    for (size_t i = 0; i < count_; i++) {
        send(lines_[i].level, lines_[i].text);
    }
    if (dropped_ > 0) {
        log(GGML_CPOOL_LOG_WARN, "(%zu more log lines dropped)", dropped_);
    }
}

void log_hold::keep(ggml_cpool_log_level level, const char * text) {
    if (count_ == LINES) {
        dropped_++;
        return;
    }
    line & l       = lines_[count_++];
    l.level        = level;
    const size_t n = strnlen(text, sizeof(l.text) - 1); // a longer line is cut
    memcpy(l.text, text, n);
    l.text[n] = '\0';
}

} // namespace gcp
