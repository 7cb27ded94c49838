#include "trace-read.h"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

namespace replay {

namespace {

namespace fmt = gcp::trace_format;

constexpr int FIELD_T = 0, FIELD_CTX = 1, FIELD_DEV = 2, FIELD_SLOT = 3, FIELD_STREAM = 4, FIELD_OP = 5, FIELD_SIZE = 6,
              FIELD_FLAGS = 7, FIELD_STATUS = 8, FIELD_ACTUAL = 9, FIELD_PTR = 10, FIELD_DRV = 11, FIELD_RESERVED = 12,
              FIELD_NS                      = 13;
const char * const FIELD_NAMES[fmt::FIELDS] = { "t_ns",  "ctx",    "dev",    "slot", "stream", "op",       "size",
                                                "flags", "status", "actual", "ptr",  "drv",    "reserved", "ns" };

const ggml_cpool_status STATUSES[] = { GGML_CPOOL_STATUS_OK, GGML_CPOOL_STATUS_OUT_OF_MEMORY,
                                       GGML_CPOOL_STATUS_INVALID_ARGUMENT, GGML_CPOOL_STATUS_DRIVER_ERROR,
                                       GGML_CPOOL_STATUS_UNSUPPORTED };
const ggml_cpool_kind   KINDS[]    = { GGML_CPOOL_KIND_VMM, GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN,
                                       GGML_CPOOL_KIND_ASYNC };

// one line being read: its fields, and where to say what is wrong with it
class line_reader {
  public:
    line_reader(const std::string & path, size_t number, std::string * error) :
        path_(path),
        number_(number),
        error_(error) {}

    bool split(char * text) {
        int n = 0;
        for (char * tok = strtok(text, " \n\r"); tok != nullptr; tok = strtok(nullptr, " \n\r")) {
            if (n < fmt::FIELDS) {
                fields_[n] = tok;
            }
            n++;
        }
        return n == fmt::FIELDS || fail("expected %d fields (%s), found %d", fmt::FIELDS, fmt::COLUMNS + 2, n);
    }

    // a decimal number, or NONE where the field is "-" and allowed to be
    bool number(int field, uint64_t * out, bool none_ok = true, int base = 10) {
        const char * s = fields_[field];
        if (strcmp(s, fmt::NONE) == 0) {
            *out = NONE;
            return none_ok || fail("field %s: a value is required", FIELD_NAMES[field]);
        }
        char * end = nullptr;
        errno      = 0;
        if (base == 16 && strncmp(s, "0x", 2) != 0) {
            return fail("field %s: not a hexadecimal number: '%s'", FIELD_NAMES[field], s);
        }
        unsigned long long v = strtoull(s, &end, base);
        if (errno != 0 || end == s || *end != '\0' || *s == '-' || v == NONE) {
            return fail("field %s: not a number: '%s'", FIELD_NAMES[field], s);
        }
        *out = v;
        return true;
    }

    bool index(int field, int32_t * out) {
        uint64_t v = 0;
        if (!number(field, &v)) {
            return false;
        }
        if (v != NONE && v >= uint64_t(GGML_CPOOL_MAX_DEVICES) * 64) {
            return fail("field %s: out of range: %llu", FIELD_NAMES[field], (unsigned long long) v);
        }
        *out = v == NONE ? -1 : int32_t(v);
        return true;
    }

    bool name(int field, op * out) {
        for (int i = 0; i < int(op::count); i++) {
            if (strcmp(fields_[field], fmt::OP_NAMES[i]) == 0) {
                *out = op(i);
                return true;
            }
        }
        return fail("unknown op '%s'", fields_[field]);
    }

    bool name(int field, ggml_cpool_status * out) {
        for (ggml_cpool_status st : STATUSES) {
            if (strcmp(fields_[field], ggml_cpool_status_str(st)) == 0) {
                *out = st;
                return true;
            }
        }
        return fail("unknown status '%s'", fields_[field]);
    }

    bool name(int field, ggml_cpool_kind * out) {
        for (ggml_cpool_kind k : KINDS) {
            if (strcmp(fields_[field], ggml_cpool_kind_str(k)) == 0) {
                *out = k;
                return true;
            }
        }
        return fail("unknown pool kind '%s'", fields_[field]);
    }

#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    bool
    fail(const char * why, ...) {
        char    text[512];
        va_list args;
        va_start(args, why);
        vsnprintf(text, sizeof(text), why, args);
        va_end(args);
        *error_ = path_ + ":" + std::to_string(number_) + ": " + text;
        return false;
    }

  private:
    const std::string & path_;
    size_t              number_;
    std::string *       error_;
    const char *        fields_[fmt::FIELDS] = {};
};

bool parse(line_reader & in, char * text, record * r) {
    if (!in.split(text) || !in.number(FIELD_T, &r->t, false) || !in.number(FIELD_CTX, &r->ctx) ||
        !in.index(FIELD_DEV, &r->dev) || !in.index(FIELD_SLOT, &r->slot) ||
        !in.number(FIELD_STREAM, &r->stream, true, 16) || !in.name(FIELD_OP, &r->o) || !in.name(FIELD_STATUS, &r->st) ||
        !in.number(FIELD_SIZE, &r->size) || !in.number(FIELD_ACTUAL, &r->actual) ||
        !in.number(FIELD_PTR, &r->ptr, true, 16) || !in.number(FIELD_DRV, &r->drv, false) ||
        !in.number(FIELD_RESERVED, &r->reserved) || !in.number(FIELD_NS, &r->ns, false)) {
        return false;
    }
    r->kind  = GGML_CPOOL_KIND_AUTO;
    r->flags = NONE;
    if (r->o == op::get_pool && r->st == GGML_CPOOL_STATUS_OK) {
        if (!in.name(FIELD_FLAGS, &r->kind)) {
            return false;
        }
    } else if (!in.number(FIELD_FLAGS, &r->flags)) {
        return false;
    }
    // what a replay needs of each call must be there
    const bool ok      = r->st == GGML_CPOOL_STATUS_OK;
    const bool pool_op = r->o == op::get_pool || r->o == op::alloc || r->o == op::free || r->o == op::trim;
    if (r->o != op::ctx_create && r->ctx == NONE) {
        return in.fail("%s without a context", fmt::op_name(r->o));
    }
    if (pool_op && (r->dev < 0 || r->slot < 0)) {
        return in.fail("%s without a device and slot", fmt::op_name(r->o));
    }
    if (r->o == op::alloc && (r->size == NONE || r->flags == NONE || (ok && (r->actual == NONE || r->ptr == NONE)))) {
        return in.fail("alloc without its size, flags, or (returning OK) its actual size and pointer");
    }
    if (r->o == op::free && (r->size == NONE || r->ptr == NONE)) {
        return in.fail("free without its pointer and size");
    }
    if ((r->o == op::pin_begin && ok && r->actual == NONE) || (r->o == op::pin_release && r->size == NONE)) {
        return in.fail("%s without its graph", fmt::op_name(r->o));
    }
    return true;
}

// the busiest device's peak of requested live bytes
class requested_peak {
  public:
    void on(const record & r) {
        if (r.st != GGML_CPOOL_STATUS_OK || (r.o != op::alloc && r.o != op::free)) {
            return;
        }
        auto & live = live_[{ r.ctx, r.dev, r.slot }];
        auto & dev  = device_[r.dev];
        if (r.o == op::alloc) {
            live[r.ptr] = r.size;
            dev += r.size;
            peak_ = std::max(peak_, dev);
        } else {
            auto it = live.find(r.ptr);
            if (it != live.end()) { // a buffer allocated before the trace started is not counted
                dev -= it->second;
                live.erase(it);
            }
        }
    }
    uint64_t peak() const { return peak_; }

  private:
    std::map<pool_key, std::unordered_map<uint64_t, uint64_t>> live_;
    std::map<int32_t, uint64_t>                                device_;
    uint64_t                                                   peak_ = 0;
};

} // namespace

bool read_trace(const std::string & path, trace * out, std::string * error) {
    FILE * f = fopen(path.c_str(), "r");
    if (f == nullptr) {
        *error = path + ": cannot open (" + strerror(errno) + ")";
        return false;
    }
    *out                          = trace{};
    out->path                     = path;
    char *                   text = nullptr;
    size_t                   cap  = 0;
    size_t                   n    = 0;
    bool                     ok   = true;
    requested_peak           peak;
    std::map<pool_key, bool> pools;
    std::map<uint64_t, bool> ctxs;
    char                     magic[64];
    snprintf(magic, sizeof(magic), "%s %d", fmt::MAGIC, fmt::VERSION);
    while (ok && getline(&text, &cap, f) > 0) {
        n++;
        line_reader in(path, n, error);
        if (n == 1) {
            text[strcspn(text, "\r\n")] = '\0';
            ok                          = strcmp(text, magic) == 0 ||
                 in.fail("not a ggml-cuda-pool trace of version %d (the first line must be '%s')", fmt::VERSION, magic);
            continue;
        }
        if (text[0] == '#' || text[strspn(text, " \r\n")] == '\0') {
            continue; // the column line, a comment, an empty line
        }
        record r{};
        ok = parse(in, text, &r);
        if (ok) {
            out->records.push_back(r);
            out->duration_ns = std::max(out->duration_ns, r.t + r.ns);
            out->devices     = std::max(out->devices, r.dev + 1);
            if (r.ctx != NONE) {
                ctxs[r.ctx] = true;
            }
            if (r.dev >= 0 && r.slot >= 0) {
                pools[{ r.ctx, r.dev, r.slot }] = true;
            }
            peak.on(r);
        }
    }
    if (ok && n == 0) {
        ok     = false;
        *error = path + ": empty file, not a trace";
    }
    if (ok && ferror(f)) {
        ok     = false;
        *error = path + ": read error (" + strerror(errno) + ")";
    }
    free(text);
    fclose(f);
    out->contexts       = ctxs.size();
    out->pools          = pools.size();
    out->peak_requested = peak.peak();
    return ok;
}

} // namespace replay
