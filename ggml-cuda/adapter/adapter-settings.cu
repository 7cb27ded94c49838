// The adapter's run-time settings (adapter-settings.cuh), read from the environment once.

#include "adapter-settings.cuh"

#include "common.cuh"

#include <cstdlib>
#include <cstring>

namespace cpool_adapter {

namespace {

constexpr const char * ENV_POOL   = "GGML_CUDA_POOL";       // ggml | ggml-legacy | a module kind
constexpr const char * ENV_STATS  = "GGML_CUDA_POOL_STATS"; // 1: a stats line per pool at exit on stderr; a path: appended there
constexpr const char * ENV_KV_F16 = "GGML_CUDA_POOL_KV_F16"; // graph (default) | pool | pool-1x: where the FA K/V f16 conversions live
constexpr const char * ENV_ROTATE = "GGML_CUDA_POOL_ROTATE"; // configurations, comma-separated: backend contexts take turns

// ggml's own pools by name; any other name is a module kind's, which the module reads (and refuses, if malformed)
choice choice_of(const char * name) {
    choice c;
    c.name  = name;
    c.pools = c.name == "ggml" ? owner::ggml : c.name == "ggml-legacy" ? owner::ggml_legacy : owner::module;
    return c;
}

// a rotation's entry is named by the adapter, not read from the environment by the module: its kind
// is resolved here, and an unknown name ends the process as a malformed GGML_CUDA_POOL does
choice rotation_entry(const std::string & name) {
    choice c = choice_of(name.c_str());
    if (c.pools != owner::module) {
        return c;
    }
    std::string kinds; // the names the module gives its kinds
    for (ggml_cpool_kind k : { GGML_CPOOL_KIND_AUTO, GGML_CPOOL_KIND_VMM, GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_PLAIN,
                               GGML_CPOOL_KIND_ASYNC }) {
        if (name == ggml_cpool_kind_str(k)) {
            c.kind = k;
            return c;
        }
        kinds += std::string(kinds.empty() ? "" : ", ") + ggml_cpool_kind_str(k);
    }
    GGML_ABORT("ggml-cuda-pool: %s names '%s', which is neither ggml, ggml-legacy nor a pool kind (%s)", ENV_ROTATE,
               name.c_str(), kinds.c_str());
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
    const char * kv = getenv(ENV_KV_F16);
    if (kv != nullptr && (strcmp(kv, "pool") == 0 || strcmp(kv, "pool-1x") == 0)) {
        c->kv_in_pool = true;
        c->kv_growing = strcmp(kv, "pool") == 0;
    } else if (kv != nullptr && *kv != '\0' && strcmp(kv, "graph") != 0) {
        GGML_LOG_WARN("ggml-cuda-pool: %s=%s is neither graph, pool nor pool-1x; the conversions stay in the graph "
                      "allocator's buffer\n", ENV_KV_F16, kv);
    }
}

settings read_settings() {
    settings     c;
    const char * pool = getenv(ENV_POOL);
    if (pool != nullptr) {
        c.pools = choice_of(pool);
    }
    const char * rotate = getenv(ENV_ROTATE);
    if (rotate != nullptr && *rotate != '\0' && pool != nullptr) {
        // the module reads GGML_CUDA_POOL itself: it would refuse ggml's names and decide auto entries
        GGML_ABORT("ggml-cuda-pool: %s replaces %s; unset %s", ENV_ROTATE, ENV_POOL, ENV_POOL);
    }
    c.rotate = rotation(rotate);
    read_kv_f16(&c);
    const char * stats = getenv(ENV_STATS);
    if (stats != nullptr && *stats != '\0' && strcmp(stats, "0") != 0) {
        c.stats = strcmp(stats, "1") == 0 ? "-" : stats;
    }
    return c;
}

} // namespace

const settings & config() {
    static const settings s = read_settings();
    return s;
}

} // namespace cpool_adapter
