// The adapter's run-time settings (adapter-settings.cuh), read from the environment once.

#include "adapter-settings.cuh"

#include "common.cuh"
#include "ggml-cuda-pool-options.h"

#include <cstdlib>
#include <cstring>

namespace cpool_adapter {

namespace {

// the variables are rows of the module's options table (ggml-cuda-pool-options.h), which says what each one takes
const char * env_name(ggml_cpool_option o) {
    return ggml_cpool_option_name(o);
}

const char * env_text(ggml_cpool_option o) {
    return getenv(env_name(o));
}

// a configuration by its name: ggml's own pools (ggml, ggml-legacy) or a module kind, named as
// GGML_CUDA_POOL names it (the module's kind names, ggml_cpool_kind_from_str); false for neither
bool choice_of(const char * name, choice * c) {
    c->name  = name;
    c->pools = c->name == "ggml" ? owner::ggml : c->name == "ggml-legacy" ? owner::ggml_legacy : owner::module;
    return c->pools != owner::module || ggml_cpool_kind_from_str(name, &c->kind) == GGML_CPOOL_STATUS_OK;
}

// a rotation's entry is named by the adapter, not read from the environment by the module: an
// unknown name ends the process as a malformed GGML_CUDA_POOL does
choice rotation_entry(const std::string & name) {
    choice c;
    if (choice_of(name.c_str(), &c)) {
        return c;
    }
    std::string kinds; // the names the module gives its kinds
    for (int k = 0; k < GGML_CPOOL_KIND_COUNT; k++) {
        kinds += std::string(kinds.empty() ? "" : ", ") + ggml_cpool_kind_str(ggml_cpool_kind(k));
    }
    GGML_ABORT("ggml-cuda-pool: %s names '%s', which is neither ggml, ggml-legacy nor a pool kind (%s)",
               env_name(GGML_CPOOL_OPTION_ROTATE), name.c_str(), kinds.c_str());
}

// GGML_CUDA_POOL_ROTATE's entries, comma-separated
std::vector<choice> rotation(const char * rotate) {
    std::vector<choice> entries;
    for (const char * at = rotate; at != nullptr && *at != '\0';) {
        const char * end = strchr(at, ',');
        entries.push_back(rotation_entry(end ? std::string(at, end) : std::string(at)));
        at = end ? end + 1 : nullptr;
    }
    return entries;
}

// GGML_CUDA_POOL_KV_F16: graph (the default), pool or pool-1x; anything else keeps the default, with a warning
void read_kv_f16(settings * c) {
    const char * kv = env_text(GGML_CPOOL_OPTION_KV_F16);
    if (kv != nullptr && (strcmp(kv, "pool") == 0 || strcmp(kv, "pool-1x") == 0)) {
        c->kv_in_pool = true;
        c->kv_growing = strcmp(kv, "pool") == 0;
    } else if (kv != nullptr && *kv != '\0' && strcmp(kv, "graph") != 0) {
        GGML_LOG_WARN("ggml-cuda-pool: %s=%s is neither graph, pool nor pool-1x; the conversions stay in the graph "
                      "allocator's buffer\n",
                      env_name(GGML_CPOOL_OPTION_KV_F16), kv);
    }
}

// GGML_CUDA_POOL_ON_OOM: error (the default) or abort
void read_on_oom(settings * c) {
    const char * v = env_text(GGML_CPOOL_OPTION_ON_OOM);
    if (v == nullptr || strcmp(v, "error") == 0) {
        return;
    }
    if (strcmp(v, "abort") != 0) {
        GGML_ABORT("ggml-cuda-pool: %s=%s is neither error nor abort", env_name(GGML_CPOOL_OPTION_ON_OOM), v);
    }
    c->oom_fails_compute = false;
}

settings read_settings() {
    settings     c;
    const char * pool = env_text(GGML_CPOOL_OPTION_POOL);
    if (pool != nullptr) {
        // a name that is no configuration leaves the kind AUTO: the module reads GGML_CUDA_POOL
        // itself and refuses it, with its reason
        (void) choice_of(pool, &c.pools);
    }
    const char * rotate = env_text(GGML_CPOOL_OPTION_ROTATE);
    if (rotate != nullptr && *rotate != '\0' && pool != nullptr) {
        // the module reads GGML_CUDA_POOL itself: it would refuse ggml's names and decide auto entries
        const char * pool_name = env_name(GGML_CPOOL_OPTION_POOL);
        GGML_ABORT("ggml-cuda-pool: %s replaces %s; unset %s", env_name(GGML_CPOOL_OPTION_ROTATE), pool_name,
                   pool_name);
    }
    c.rotate = rotation(rotate);
    read_kv_f16(&c);
    read_on_oom(&c);
    c.stats = stats_target();
    return c;
}

} // namespace

std::string stats_target() {
    const char * stats = env_text(GGML_CPOOL_OPTION_STATS);
    if (stats == nullptr || *stats == '\0' || strcmp(stats, "0") == 0) {
        return "";
    }
    return strcmp(stats, "1") == 0 ? "-" : stats;
}

const settings & config() {
    static const settings s = read_settings();
    return s;
}

} // namespace cpool_adapter

void ggml_cuda_cpool_check_settings() {
    (void) cpool_adapter::config();
}
