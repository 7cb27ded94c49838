#pragma once

// ggml-cuda-pool: every environment variable the module and its integrations read, in one table,
// and how each one's value is read. docs/design.md (Options) says what each does.
//
// Every row is read by one rule, the module's (ggml_cpool_option_read in ggml-cuda-pool.h), which
// the llama.cpp adapter and the PyTorch library call too, so that the grammar of the values lives
// here and in one reader:
//   - unset or empty is the row's default;
//   - words (kinds, booleans, levels, placements, rotation entries) are taken in any case;
//   - a file is opened for appending when read, so one that cannot be written is refused then;
//   - a value the row does not take is INVALID_ARGUMENT and one line naming the variable, the value
//     and the row's `values` text;
//   - ggml_cpool_ctx_create checks every row, whoever reads it: a bad value refuses the context
//     (a file its check makes is removed again).
// The words a WORD or LIST row takes are the first word of each '|'-separated alternative of its
// `values` (a note in parentheses or after a comma follows the word); the boolean words are
// 1, on, true, yes and 0, off, false, no. The PyTorch library's Python helper cannot include a
// header; tests/test-docs.cpp reads every variable read under ggml-cuda/, integrations/ and
// tools/ and fails on one that is not here.

// how a row's value is read (the `takes` column)
enum ggml_cpool_option_takes {
    GGML_CPOOL_TAKES_BOOLEAN,      // a boolean word
    GGML_CPOOL_TAKES_WORD,         // one of the row's words
    GGML_CPOOL_TAKES_LIST,         // the row's words, comma-separated
    GGML_CPOOL_TAKES_OUTPUT,       // a boolean word (true: stderr, false: nowhere) or a file, opened for appending
    GGML_CPOOL_TAKES_WRITABLE,     // a file the module writes, opened for appending when read
    GGML_CPOOL_TAKES_FAULT_SPEC,   // a fault spec (docs/fault-injection.md)
    GGML_CPOOL_TAKES_PATH,         // a path, taken as it is (its reader says when nothing is there)
    GGML_CPOOL_TAKES_MILLISECONDS, // a plain decimal count of milliseconds, at most UINT32_MAX
};

// X(id, name, readers, takes, values, effect)
#define GGML_CPOOL_OPTIONS(X)                                                                            \
    X(NO_VMM, "GGML_CUDA_NO_VMM", "module", BOOLEAN, "1 | 0 (or on | off, true | false, yes | no)",      \
      "the legacy pool instead of VMM where the kind is auto")                                           \
    X(POOL, "GGML_CUDA_POOL", "module, llama.cpp adapter, PyTorch library", WORD,                        \
      "auto | vmm | legacy | plain | async | ggml | ggml-legacy "                                        \
      "(ggml's own pools: the llama.cpp adapter only)",                                                  \
      "the pool kind; the PyTorch library asks for legacy where it is unset")                            \
    X(LOG, "GGML_CUDA_POOL_LOG", "module", WORD, "debug | info | warn (default) | error",                \
      "the default logger's threshold")                                                                  \
    X(FAULT, "GGML_CUDA_POOL_FAULT", "module", FAULT_SPEC, "a fault spec (docs/fault-injection.md)",     \
      "every context's driver fails on command")                                                         \
    X(TRACE, "GGML_CUDA_POOL_TRACE", "module", WRITABLE, "a file (written)",                             \
      "every call into the module is traced to it")                                                      \
    X(TIMING, "GGML_CUDA_POOL_TIMING", "module", BOOLEAN, "1 | 0 (or on | off, true | false, yes | no)", \
      "the time inside each pool's calls into its stats")                                                \
    X(STATS, "GGML_CUDA_POOL_STATS", "llama.cpp adapter, PyTorch library", OUTPUT,                       \
      "1 (stderr) | 0 (none) | a file (appended); 1 and 0 also on | off, true | false, yes | no",        \
      "a statistics line per pool (the adapter: also on SIGUSR1)")                                       \
    X(KV_F16, "GGML_CUDA_POOL_KV_F16", "llama.cpp adapter", WORD, "graph (default) | pool | pool-1x",    \
      "where the flash-attention K/V f16 conversions live")                                              \
    X(ON_OOM, "GGML_CUDA_POOL_ON_OOM", "llama.cpp adapter", WORD, "error (default) | abort",             \
      "what an allocation the module's pools cannot serve inside a compute does: the compute returns "   \
      "GGML_STATUS_ALLOC_FAILED (llama.cpp drops the batch), or the process ends")                       \
    X(CAPTURES, "GGML_CUDA_POOL_CAPTURES", "llama.cpp adapter", WORD, "query (default) | declared",      \
      "how the module's pools learn that ggml captures a CUDA graph: they ask the driver (the async "    \
      "kind at every allocation), or the adapter declares each capture (ggml_cpool_declare_capture)")    \
    X(WAIT_MS, "GGML_CUDA_POOL_WAIT_MS", "llama.cpp adapter, PyTorch library", MILLISECONDS,             \
      "0 to 4294967295 (milliseconds, a plain decimal)",                                                 \
      "how long an allocation the device refused waits for memory to come back before it fails (unset: " \
      "the adapter's DEFAULT_WAIT_MS, the PyTorch library none)")                                        \
    X(ROTATE, "GGML_CUDA_POOL_ROTATE", "llama.cpp adapter", LIST,                                        \
      "ggml | ggml-legacy | auto | vmm | legacy | plain | async, comma-separated",                       \
      "configurations taken in turn by the backend contexts instead of GGML_CUDA_POOL")                  \
    X(TORCH_LIBRARY, "GGML_CUDA_POOL_TORCH_LIBRARY", "PyTorch library's Python helper", PATH, "a path",  \
      "where libggml-cuda-pool-torch.so is")                                                             \
    X(NEIGHBOURS, "GGML_CUDA_POOL_NEIGHBOURS", "module", BOOLEAN, "on | off (any boolean word)",         \
      "the pools give idle memory to the other processes using the module on their device, and ask "     \
      "theirs when it is full (unset: ggml_cpool_ctx_params.neighbours, on by default)")

// clang-format 14 indents the enumerator after the table's expansion as its continuation
// clang-format off
enum ggml_cpool_option {
#define GGML_CPOOL_OPTION_ENUM(id, name, readers, takes, values, effect) GGML_CPOOL_OPTION_##id,
    GGML_CPOOL_OPTIONS(GGML_CPOOL_OPTION_ENUM)
#undef GGML_CPOOL_OPTION_ENUM
    GGML_CPOOL_OPTION_COUNT,
};
// clang-format on

// the variable's name ("GGML_CUDA_POOL", ...); "" past the table
static inline const char * ggml_cpool_option_name(enum ggml_cpool_option option) {
#define GGML_CPOOL_OPTION_NAME(id, name, readers, takes, values, effect) name,
    static const char * const names[] = { GGML_CPOOL_OPTIONS(GGML_CPOOL_OPTION_NAME) };
#undef GGML_CPOOL_OPTION_NAME
    return (unsigned) option < (unsigned) GGML_CPOOL_OPTION_COUNT ? names[option] : "";
}
