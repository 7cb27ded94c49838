#include "trace.h"

#include "../support/env.h"
#include "../support/log.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace gcp::trace {

std::atomic<unsigned> g_mode{ 0 };

namespace {

// sets and clears bits of g_mode, and tells every pool whether its calls are observed now; one at
// a time, so that the pools end with what the last change left
void change_mode(unsigned set, unsigned clear) {
    static std::mutex           mutex;
    std::lock_guard<std::mutex> lock(mutex);
    const unsigned              mode = (g_mode.load(std::memory_order_relaxed) | set) & ~clear;
    g_mode.store(mode, std::memory_order_relaxed);
    observed_flag::set_all(mode != 0);
}

// the writer's buffer goes to the file when it holds this much: few writes, bounded memory
constexpr size_t FLUSH_AT = size_t(1) << 20;

// appends one field and its separator: a number (hex: an address), NONE for NO, or a name
void field(std::vector<char> & out, uint64_t v, bool hex = false) {
    char      text[24];
    const int n = v == NO ? snprintf(text, sizeof(text), "%s ", trace_format::NONE) :
                            snprintf(text, sizeof(text), hex ? "0x%llx " : "%llu ", (unsigned long long) v);
    out.insert(out.end(), text, text + n);
}

void field(std::vector<char> & out, const char * name) {
    out.insert(out.end(), name, name + strlen(name));
    out.push_back(' ');
}

// the trace being written: its state is read and written under mutex_
struct tracer {
    static tracer & instance() {
        static tracer t;
        return t;
    }
    ~tracer() { // at exit: whatever is buffered reaches the file
        std::lock_guard<std::mutex> lock(mutex_);
        close_locked();
    }

    // origin: the variable the path came from, or ""
    status start(const char * path, const char * origin) {
        std::unique_lock<std::mutex> lock(mutex_);
        close_locked();
        file_ = fopen(path, "w");
        if (file_ == nullptr) {
            const int err = errno;
            lock.unlock(); // each line is said outside the lock: a log callback may call the module
            GCP_LOG_ERROR("%s%s%s: cannot open the trace file for writing (%s)", origin, *origin ? "=" : "", path,
                          strerror(err));
            return INVALID_ARGUMENT;
        }
        path_ = path;
        buf_.clear();
        buf_.reserve(2 * FLUSH_AT);
        ctxs_.clear();
        pools_.clear();
        next_ctx_ = 1;
        t_start_  = now_ns();
        char head[128];
        int  n = snprintf(head, sizeof(head), "%s %d\n%s\n", trace_format::MAGIC, trace_format::VERSION,
                          trace_format::COLUMNS);
        buf_.insert(buf_.end(), head, head + n);
        change_mode(RECORDING, 0);
        lock.unlock();
        GCP_LOG_INFO("tracing every pool call to %s", path);
        return OK;
    }

    struct tag {
        uint64_t ctx;
        int      slot;
    };

    uint64_t ctx_id(const void * ctx) {
        auto it = ctxs_.find(ctx);
        return it != ctxs_.end() ? it->second : (ctxs_[ctx] = next_ctx_++);
    }

    // the pool's context and slot; a pool created before the trace started is given a context
    // of its own and announced by a get_pool line, so that a reader knows its device and kind
    const tag & tag_of(const pool & p) {
        auto it = pools_.find(&p);
        if (it == pools_.end()) {
            it = pools_.emplace(&p, tag{ next_ctx_++, 0 }).first;
            call made{ op::get_pool, OK, now_ns(), 0, 0 };
            write(it->second.ctx, p.device(), 0, &p, made);
        }
        return it->second;
    }

    // one line (trace-format.h's columns); p: the pool the call concerns, or null for a context's
    void write(uint64_t ctx, int device, int slot, const pool * p, const call & c) {
        field(buf_, c.t0 > t_start_ ? c.t0 - t_start_ : 0);
        field(buf_, ctx);
        field(buf_, device < 0 ? NO : uint64_t(device));
        field(buf_, slot < 0 ? NO : uint64_t(slot));
        field(buf_, p ? uint64_t(reinterpret_cast<uintptr_t>(p->stream())) : NO, true);
        field(buf_, trace_format::op_name(c.o));
        field(buf_, c.size);
        if (c.o == op::get_pool) { // the kind in effect, in the flags column
            field(buf_, p ? kind_name(p->kind()) : trace_format::NONE);
        } else {
            field(buf_, c.flags);
        }
        field(buf_, status_name(c.st));
        field(buf_, c.actual);
        field(buf_, c.ptr, true);
        field(buf_, c.drv);
        field(buf_, p ? uint64_t(p->stats().reserved_bytes) : NO);
        field(buf_, c.ns);
        buf_.back() = '\n';
        if (buf_.size() >= FLUSH_AT) {
            flush_locked();
        }
    }

    // a write that fails ends the trace with one log line; the pools carry on
    void flush_locked() {
        if (file_ == nullptr || buf_.empty()) {
            return;
        }
        if (fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size() || fflush(file_) != 0) {
            GCP_LOG_ERROR("trace %s: write failed (%s); tracing stops", path_.c_str(), strerror(errno));
            fclose(file_);
            file_ = nullptr;
            change_mode(0, RECORDING);
        }
        buf_.clear();
    }

    status close_locked() {
        if (file_ == nullptr) {
            return OK;
        }
        flush_locked();
        if (file_ == nullptr) {
            return DRIVER_ERROR; // the write failed and said so
        }
        change_mode(0, RECORDING);
        status st = fclose(file_) == 0 ? OK : DRIVER_ERROR;
        file_     = nullptr;
        return st;
    }

    std::mutex                                 mutex_;
    FILE *                                     file_ = nullptr;
    std::string                                path_;
    std::vector<char>                          buf_;
    uint64_t                                   t_start_  = 0;
    uint64_t                                   next_ctx_ = 1;
    std::unordered_map<const void *, uint64_t> ctxs_; // handle -> id
    std::unordered_map<const pool *, tag>      pools_;
};

// runs f(the tracer) under its lock while a trace file is open
template <typename F> void if_open(F && f) {
    tracer &                    t = tracer::instance();
    std::lock_guard<std::mutex> lock(t.mutex_);
    if (t.file_ != nullptr) {
        f(t);
    }
}

} // namespace

uint64_t now_ns() {
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

status init_from_env() {
    struct outcome {
        status      st = OK;
        std::string what; // the variable and value refused
    };
    static const outcome once = [] {
        outcome      r;
        option       o      = GGML_CPOOL_OPTION_TIMING;
        bool         timing = false;
        option_value file;
        r.st = env_flag(o, &timing);
        if (timing) {
            set_timing(true);
        }
        if (r.st == OK) {
            o    = GGML_CPOOL_OPTION_TRACE;
            r.st = read_option(o, &file);
        }
        if (r.st == OK && file.set && !recording()) {
            r.st = tracer::instance().start(file.path, option_name(o));
        }
        if (r.st != OK) {
            r.what = std::string(option_name(o)) + "=" + option_text(o);
        }
        return r;
    }();
    static std::atomic<bool> first{ true };
    if (once.st != OK && !first.exchange(false)) {
        // the reading logged why; later creations say it again in one line
        GCP_LOG_ERROR("%s was refused at the first context creation (read once)", once.what.c_str());
    }
    return once.st;
}

status start(const char * path) {
    if (path == nullptr || *path == '\0') {
        GCP_LOG_ERROR("ggml_cpool_trace_start: no path given");
        return INVALID_ARGUMENT;
    }
    return tracer::instance().start(path, "");
}

status stop() {
    tracer &                    t = tracer::instance();
    std::lock_guard<std::mutex> lock(t.mutex_);
    return t.close_locked();
}

void set_timing(bool on) {
    change_mode(on ? TIMING : 0, on ? 0 : TIMING);
}

void record(const pool & p, const call & c) {
    if_open([&](tracer & t) {
        const tracer::tag & g = t.tag_of(p);
        t.write(g.ctx, p.device(), g.slot, &p, c);
    });
}

void record(const void * ctx, const call & c) {
    if_open([&](tracer & t) { t.write(ctx ? t.ctx_id(ctx) : NO, -1, -1, nullptr, c); });
}

void record_get_pool(const void * ctx, int device, int slot, const pool * p, const call & c) {
    if_open([&](tracer & t) {
        const uint64_t id = t.ctx_id(ctx);
        if (p != nullptr) {
            t.pools_[p] = { id, slot };
        }
        t.write(id, device, slot, p, c);
    });
}

uint64_t context_id(const void * ctx) {
    tracer &                    t = tracer::instance();
    std::lock_guard<std::mutex> lock(t.mutex_);
    return t.ctx_id(ctx);
}

void record_ctx_free(uint64_t id, const call & c) {
    if_open([&](tracer & t) {
        t.write(id, -1, -1, nullptr, c);
        for (auto it = t.ctxs_.begin(); it != t.ctxs_.end();) { // forgets the context and its pools
            it = it->second == id ? t.ctxs_.erase(it) : std::next(it);
        }
        for (auto it = t.pools_.begin(); it != t.pools_.end();) {
            it = it->second.ctx == id ? t.pools_.erase(it) : std::next(it);
        }
        t.flush_locked();
    });
}

} // namespace gcp::trace
