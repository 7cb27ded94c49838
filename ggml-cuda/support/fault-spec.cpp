#include "fault-spec.h"

#include "log.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <strings.h>

namespace gcp {

namespace {

// a call's name, or any
bool parse_call(const std::string & text, int * kind) {
    ggml_cpool_call c = GGML_CPOOL_CALL_COUNT;
    if (text != "any" && !call_from_name(text.c_str(), &c)) {
        return false;
    }
    *kind = text == "any" ? ANY_CALL : int(c);
    return true;
}

// digits only: strtoull alone would skip spaces and wrap a minus sign around
bool parse_u64(const std::string & text, uint64_t * out) {
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](unsigned char c) { return isdigit(c) != 0; })) {
        return false;
    }
    errno = 0;
    *out  = strtoull(text.c_str(), nullptr, 10);
    return errno == 0;
}

// a decimal number, digits with at most one point (strtod alone would skip spaces and read
// signs, exponents, hexadecimal, inf and nan); *end is where it stops
bool parse_decimal(const char * text, double * value, const char ** end) {
    const char * p      = text;
    bool         digits = false, point = false;
    for (;; p++) {
        if (isdigit((unsigned char) *p)) {
            digits = true;
        } else if (*p == '.' && !point) {
            point = true;
        } else {
            break;
        }
    }
    char * stop = nullptr;
    *value      = digits ? strtod(text, &stop) : 0.0;
    *end        = p;
    return digits && stop == p;
}

// "2.36MiB" -> bytes; false when malformed
bool parse_size(const char * text, size_t * out) {
    // clang-format off
    static const struct {
        const char * suffix;
        double       scale;
    } units[] = {
        { "",    1.0 },          { "b", 1.0 },
        { "k",   1024.0 },       { "kb", 1024.0 },       { "kib", 1024.0 },
        { "m",   1048576.0 },    { "mb", 1048576.0 },    { "mib", 1048576.0 },
        { "g",   1073741824.0 }, { "gb", 1073741824.0 }, { "gib", 1073741824.0 },
    };
    // clang-format on
    const char * end   = nullptr;
    double       value = 0.0;
    if (!parse_decimal(text, &value, &end) || !std::isfinite(value)) {
        return false;
    }
    for (auto & u : units) {
        if (strcasecmp(end, u.suffix) == 0) {
            double bytes = value * u.scale;
            if (bytes > double(MAX_REQUEST)) {
                return false;
            }
            *out = size_t(std::llround(bytes));
            return true;
        }
    }
    return false;
}

// one key=value term
bool parse_term(const std::string & key, const std::string & value, fault_spec * spec) {
    if (key == "oneshot" || key == "oneshot-any") {
        spec->oneshot     = parse_size(value.c_str(), &spec->oneshot_at);
        spec->oneshot_any = key == "oneshot-any";
        return spec->oneshot;
    }
    if (key == "fail") {
        size_t colon = value.find(':');
        if (colon == std::string::npos) {
            return false;
        }
        fault_spec::nth n{};
        std::string     k = value.substr(colon + 1);
        n.and_later       = !k.empty() && k.back() == '+';
        if (n.and_later) {
            k.pop_back();
        }
        if (!parse_call(value.substr(0, colon), &n.kind) || !parse_u64(k, &n.k) || n.k == 0) {
            return false;
        }
        spec->nths.push_back(n);
        return true;
    }
    if (key == "prob") {
        const char * end = nullptr;
        return parse_decimal(value.c_str(), &spec->prob, &end) && *end == '\0' && spec->prob <= 1.0;
    }
    if (key == "on") {
        return parse_call(value, &spec->prob_kind);
    }
    if (key == "seed") {
        return parse_u64(value, &spec->seed);
    }
    if (key == "limit") {
        return parse_u64(value, &spec->limit);
    }
    if (key == "while") {
        spec->window = value;
        return !value.empty();
    }
    return false;
}

} // namespace

bool read_fault_spec(const char * text, fault_spec * out, std::string * bad_term) {
    fault_spec         spec;
    std::istringstream all(text ? text : "");
    for (std::string term; std::getline(all, term, ';');) {
        const size_t eq = term.find('=');
        if (!term.empty() && (eq == std::string::npos || !parse_term(term.substr(0, eq), term.substr(eq + 1), &spec))) {
            *bad_term = term;
            return false;
        }
    }
    *out = spec;
    return true;
}

status parse_fault_spec(const char * text, fault_spec * out, const char * outcome) {
    std::string bad_term;
    if (!read_fault_spec(text, out, &bad_term)) {
        GCP_LOG_ERROR("fault spec '%s': cannot read '%s' (docs/fault-injection.md); %s", text ? text : "",
                      bad_term.c_str(), outcome);
        return INVALID_ARGUMENT;
    }
    return OK;
}

} // namespace gcp
