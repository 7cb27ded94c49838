#include "env.h"

#include "fault-spec.h"
#include "log.h"

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

namespace gcp {

namespace {

constexpr const char * TRUE_WORDS[]  = { "1", "on", "true", "yes" };
constexpr const char * FALSE_WORDS[] = { "0", "off", "false", "no" };
constexpr size_t       MAX_WORDS     = 8;    // the most words a row's values name
constexpr size_t       WORD_BYTES    = 16;   // the longest word, with its terminator
constexpr size_t       WHY_BYTES     = 160;  // a refusal's reason
constexpr mode_t       NEW_FILE_MODE = 0666; // a file the reading makes, as fopen's "a" makes it (the umask applies)

struct row {
    ggml_cpool_option_takes takes;
    const char *            values;
};

constexpr row ROWS[] = {
#define GCP_OPTION_ROW(id, name, readers, takes, values, effect) { GGML_CPOOL_TAKES_##takes, values },
    GGML_CPOOL_OPTIONS(GCP_OPTION_ROW)
#undef GCP_OPTION_ROW
};
static_assert(sizeof(ROWS) / sizeof(ROWS[0]) == GGML_CPOOL_OPTION_COUNT, "one row per option");

// the words a WORD or LIST row takes: the first word of each '|'-separated alternative of its values
struct words {
    char   word[MAX_WORDS][WORD_BYTES] = {};
    size_t count                       = 0;
};

const words & words_of(option o) {
    static const std::array<words, GGML_CPOOL_OPTION_COUNT> all = [] { // fixed arrays: a reading allocates nothing
        std::array<words, GGML_CPOOL_OPTION_COUNT> t{};
        for (size_t i = 0; i < GGML_CPOOL_OPTION_COUNT; i++) {
            const bool worded = ROWS[i].takes == GGML_CPOOL_TAKES_WORD || ROWS[i].takes == GGML_CPOOL_TAKES_LIST;
            for (const char * at = ROWS[i].values; worded && *at != '\0' && t[i].count < MAX_WORDS;) {
                at += strspn(at, " ");
                size_t n = 0;
                while ((isalnum((unsigned char) at[n]) || at[n] == '-' || at[n] == '_') && n + 1 < WORD_BYTES) {
                    n++;
                }
                memcpy(t[i].word[t[i].count++], at, n);
                const char * bar = strchr(at, '|');
                at               = bar ? bar + 1 : at + strlen(at);
            }
        }
        return t;
    }();
    return all[o];
}

// the word of o's row that the `length` bytes at `text` name, in any case; nullptr for none
const char * word_for(option o, const char * text, size_t length) {
    const words & w = words_of(o);
    for (size_t i = 0; i < w.count; i++) {
        if (strlen(w.word[i]) == length && strncasecmp(w.word[i], text, length) == 0) {
            return w.word[i];
        }
    }
    return nullptr;
}

// 1 for a true word, 0 for a false one, -1 for neither
int boolean_of(const char * text) {
    for (size_t i = 0; i < sizeof(TRUE_WORDS) / sizeof(TRUE_WORDS[0]); i++) {
        if (strcasecmp(text, TRUE_WORDS[i]) == 0 || strcasecmp(text, FALSE_WORDS[i]) == 0) {
            return strcasecmp(text, TRUE_WORDS[i]) == 0;
        }
    }
    return -1;
}

// why a value is refused
struct refusal {
    char why[WHY_BYTES] = "not one of its values";
};

bool parse_list(option o, const char * text, option_value * v, refusal * r) {
    for (const char * at = text; at != nullptr; v->count++) {
        const char * comma = strchr(at, ',');
        const size_t n     = comma ? size_t(comma - at) : strlen(at);
        if (word_for(o, at, n) == nullptr) {
            snprintf(r->why, sizeof(r->why), "'%.*s' is not one of its values", int(n), at);
            return false;
        }
        at = comma ? comma + 1 : nullptr;
    }
    return true;
}

// `text` as o's row reads it; false, and why, for a value the row does not take
bool parse(option o, const char * text, option_value * v, refusal * r) {
    *v = {};
    if (text == nullptr || *text == '\0') {
        return true; // the row's default
    }
    v->set  = 1;
    v->text = text;
    switch (ROWS[o].takes) {
        case GGML_CPOOL_TAKES_BOOLEAN:
            v->on = boolean_of(text);
            return v->on >= 0;
        case GGML_CPOOL_TAKES_WORD:
            v->word = word_for(o, text, strlen(text));
            return v->word != nullptr;
        case GGML_CPOOL_TAKES_LIST:
            return parse_list(o, text, v, r);
        case GGML_CPOOL_TAKES_OUTPUT:
            v->on   = boolean_of(text) != 0;
            v->path = boolean_of(text) < 0 ? text : nullptr;
            return true;
        case GGML_CPOOL_TAKES_MILLISECONDS: {
            char *                   end = nullptr;
            const unsigned long long ms  = isdigit((unsigned char) *text) ? strtoull(text, &end, 10) : 0;
            v->milliseconds              = uint32_t(ms);
            return end != nullptr && *end == '\0' && ms <= UINT32_MAX; // too many digits: ULLONG_MAX
        }
        case GGML_CPOOL_TAKES_WRITABLE:
        case GGML_CPOOL_TAKES_PATH:
            v->path = text;
            return true;
        case GGML_CPOOL_TAKES_FAULT_SPEC: {
            fault_spec  spec;
            std::string term;
            if (!read_fault_spec(text, &spec, &term)) {
                snprintf(r->why, sizeof(r->why), "cannot read '%s'", term.c_str());
                return false;
            }
            return true;
        }
    }
    return false;
}

// a file the value names, opened for appending and closed again, so that one that cannot be written
// is refused when the settings are read; `keep`: false removes a file the opening made
bool writable(const char * path, bool keep, refusal * r) {
    const int made = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL, NEW_FILE_MODE);
    const int fd   = made >= 0 || errno != EEXIST ? made : open(path, O_WRONLY | O_APPEND);
    if (fd < 0 || close(fd) != 0) {
        snprintf(r->why, sizeof(r->why), "cannot open it for appending (%s)", strerror(errno));
        return false;
    }
    if (made >= 0 && !keep) {
        unlink(path);
    }
    return true;
}

} // namespace

status read_option(option o, option_value * v, reading how) {
    const char * text = option_text(o);
    refusal      r;
    const bool   opens = how != reading::quiet && ROWS[o].takes != GGML_CPOOL_TAKES_PATH;
    if (parse(o, text, v, &r) && (!opens || v->path == nullptr || writable(v->path, how == reading::report, &r))) {
        return OK;
    }
    *v = {};
    if (how != reading::quiet) {
        GCP_LOG_ERROR("%s=%s: %s; it takes %s", option_name(o), text, r.why, ROWS[o].values);
    }
    return INVALID_ARGUMENT;
}

const char * option_entry(option o, const char * text, int index) {
    for (const char * at = text; at != nullptr && *at != '\0' && index >= 0; index--) {
        const char * comma = strchr(at, ',');
        if (index == 0) {
            return word_for(o, at, comma ? size_t(comma - at) : strlen(at));
        }
        at = comma ? comma + 1 : nullptr;
    }
    return nullptr;
}

status check_options(reading how) {
    status st = OK;
    for (int o = 0; o < GGML_CPOOL_OPTION_COUNT; o++) {
        option_value v;
        st = read_option(option(o), &v, how) == OK ? st : INVALID_ARGUMENT;
    }
    return st;
}

status env_flag(option o, bool * on) {
    option_value v;
    status       st = read_option(o, &v);
    if (st == OK && v.set) {
        *on = v.on != 0;
    }
    return st;
}

status env_pool_kind(ggml_cpool_kind * kind) {
    option_value v;
    status       st = read_option(GGML_CPOOL_OPTION_POOL, &v);
    if (st != OK || !v.set || kind_from_name(v.word, kind)) {
        return st;
    }
    GCP_LOG_ERROR("%s=%s: ggml's own pools, which only the llama.cpp adapter serves; the module takes auto, vmm, "
                  "legacy, plain or async",
                  option_name(GGML_CPOOL_OPTION_POOL), v.text);
    return INVALID_ARGUMENT;
}

} // namespace gcp
