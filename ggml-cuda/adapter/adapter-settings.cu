// The adapter's run-time settings (adapter-settings.cuh).

#include "adapter-settings.cuh"

#include "common.cuh"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cpool_adapter {

namespace {

// a bad setting ends the run before a model loads, with its one line and no backtrace: nothing to explain yet
[[noreturn]] void end_run() {
    exit(EXIT_FAILURE);
}

// a row of the options table by the module's reader; a bad value ends the run with the reader's line
ggml_cpool_option_value read(ggml_cpool_option o) {
    ggml_cpool_option_value v;
    if (ggml_cpool_option_read(o, &v) != GGML_CPOOL_STATUS_OK) {
        end_run();
    }
    return v;
}

// a configuration by the word the reader gave: ggml's own pools (ggml, ggml-legacy) or a module kind
choice choice_of(const char * word) {
    choice c;
    c.name  = word;
    c.pools = c.name == "ggml" ? owner::ggml : c.name == "ggml-legacy" ? owner::ggml_legacy : owner::module;
    (void) ggml_cpool_kind_from_str(word, &c.kind); // the row's other words are kind names; ggml's leave AUTO
    return c;
}

settings read_settings() {
    settings                      c;
    const ggml_cpool_option_value pool   = read(GGML_CPOOL_OPTION_POOL);
    const ggml_cpool_option_value rotate = read(GGML_CPOOL_OPTION_ROTATE);
    if (pool.set && rotate.set) {
        // the module reads GGML_CUDA_POOL itself: it would refuse ggml's names and decide auto entries
        const char * pool_name = ggml_cpool_option_name(GGML_CPOOL_OPTION_POOL);
        GGML_LOG_ERROR("ggml-cuda-pool: %s replaces %s; unset %s\n", ggml_cpool_option_name(GGML_CPOOL_OPTION_ROTATE),
                       pool_name, pool_name);
        end_run();
    }
    if (pool.set) {
        c.pools = choice_of(pool.word);
    }
    for (int i = 0; i < rotate.count; i++) {
        c.rotate.push_back(choice_of(ggml_cpool_option_entry(GGML_CPOOL_OPTION_ROTATE, rotate.text, i)));
    }
    const ggml_cpool_option_value kv       = read(GGML_CPOOL_OPTION_KV_F16); // graph (the default), pool, pool-1x
    c.kv_in_pool                           = kv.set && strcmp(kv.word, "graph") != 0;
    c.kv_growing                           = !kv.set || strcmp(kv.word, "pool-1x") != 0;
    const ggml_cpool_option_value captures = read(GGML_CPOOL_OPTION_CAPTURES); // query (the default), declared
    c.captures_declared                    = captures.set && strcmp(captures.word, "declared") == 0;
    const ggml_cpool_option_value oom      = read(GGML_CPOOL_OPTION_ON_OOM); // error (the default) or abort
    c.oom_fails_compute                    = !oom.set || strcmp(oom.word, "abort") != 0;
    const ggml_cpool_option_value wait     = read(GGML_CPOOL_OPTION_WAIT_MS);
    c.wait_ms                              = wait.set ? wait.milliseconds : DEFAULT_WAIT_MS;
    // GGML_CUDA_POOL_STATS: stderr, or the file opened for appending now (the reader has just opened it)
    const ggml_cpool_option_value stats = read(GGML_CPOOL_OPTION_STATS);
    if (stats.on) {
        c.stats     = stats.path ? stats.path : "-";
        c.stats_out = stats.path ? fopen(stats.path, "a") : stderr;
        if (c.stats_out == nullptr) {
            GGML_LOG_ERROR("ggml-cuda-pool: %s=%s: cannot open it for appending (%s)\n",
                           ggml_cpool_option_name(GGML_CPOOL_OPTION_STATS), stats.path, strerror(errno));
            end_run();
        }
    }
    return c;
}

} // namespace

const settings & config() {
    static const settings s = read_settings();
    return s;
}

} // namespace cpool_adapter

void ggml_cuda_cpool_check_settings() {
    cpool_adapter::route_module_log(); // the one line of a bad value goes through ggml's logger (an error)
    if (ggml_cpool_options_check() != GGML_CPOOL_STATUS_OK) {
        cpool_adapter::end_run(); // every row is checked, the module's included: none waits for the first pool
    }
    const cpool_adapter::settings & s      = cpool_adapter::config();
    bool                            module = s.pools.pools == cpool_adapter::owner::module && s.rotate.empty();
    for (const cpool_adapter::choice & c : s.rotate) {
        module = module || c.pools == cpool_adapter::owner::module;
    }
    // before CUDA starts: every kernel loads now, so that no first use needs memory a co-tenant
    // holds (CUDA's own variable, where set, decides)
    if (module && setenv("CUDA_MODULE_LOADING", "EAGER", 0) != 0) {
        GGML_LOG_WARN("ggml-cuda-pool: kernels load at first use: CUDA_MODULE_LOADING not set (%s)\n", strerror(errno));
    }
}
