// What the docs and the sources promise that no other test reaches, read from the files
// themselves: the calls docs/fault-injection.md says a one-shot fault fires on are the ones it
// fires on, and no log line hard-codes the platform (a HIP build says "HIP pool[N]", wherever the
// line is made).

#include "harness.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace harness;

namespace {

std::string read(const std::filesystem::path & path) {
    std::ifstream     in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// the device allocations a fault spec names
const std::pair<ggml_cpool_call, const char *> ALLOCATING_CALLS[] = {
    { GGML_CPOOL_CALL_MALLOC, "malloc" },       { GGML_CPOOL_CALL_VMM_RESERVE, "reserve" },
    { GGML_CPOOL_CALL_VMM_CREATE, "create" },   { GGML_CPOOL_CALL_VMM_MAP, "map" },
    { GGML_CPOOL_CALL_MALLOC_ASYNC, "malloc_async" },
};

TEST(Docs, AOneShotFaultFiresOnTheCallsTheDocsName) {
    std::smatch row;
    std::string doc = read(std::filesystem::path(GCP_SOURCE_DIR) / "docs" / "fault-injection.md");
    ASSERT_TRUE(std::regex_search(doc, row, std::regex("\\| `oneshot=<size>` \\|([^\n]*)")));
    std::set<std::string> named;
    std::string           cells = row[1];
    const std::regex      call_name("`([a-z_]+)`");
    for (std::sregex_iterator it(cells.begin(), cells.end(), call_name), end; it != end; ++it) {
        named.insert((*it)[1]);
    }

    // every pool kind's device allocation, each under a one-shot fault: the call that fired is
    // the one the fault driver saw and the driver below it did not
    sim_device            device(sim_params(64 * MiB));
    std::set<std::string> fired;
    for (ggml_cpool_kind kind : { GGML_CPOOL_KIND_LEGACY, GGML_CPOOL_KIND_VMM, GGML_CPOOL_KIND_ASYNC }) {
        uint64_t below[GGML_CPOOL_CALL_COUNT];
        for (auto [call, name] : ALLOCATING_CALLS) {
            below[call] = ggml_cpool_driver_calls(device.drv, call);
        }
        ggml_cpool_driver_t fault = nullptr;
        // a fresh pool holds nothing to give back, which oneshot= waits for and oneshot-any= does not
        ASSERT_EQ(ggml_cpool_driver_fault_create(device.drv, "oneshot-any=1MiB", &fault), GGML_CPOOL_STATUS_OK);
        ggml_cpool_ctx_t ctx    = make_ctx(fault, kind);
        ggml_cpool_t     pool   = pool_of(ctx);
        void *           ptr    = nullptr;
        size_t           actual = 0;
        ggml_cpool_alloc(pool, 4 * MiB, 0, &ptr, &actual); // the async kind recovers and serves it
        if (ptr != nullptr) {
            release(pool, { ptr, actual });
        }
        EXPECT_EQ(ggml_cpool_driver_faults_fired(fault), 1u) << ggml_cpool_kind_str(kind);
        for (auto [call, name] : ALLOCATING_CALLS) {
            if (ggml_cpool_driver_calls(fault, call) > ggml_cpool_driver_calls(device.drv, call) - below[call]) {
                fired.insert(name);
            }
        }
        ggml_cpool_ctx_free(ctx);
        ggml_cpool_driver_release(fault);
    }
    EXPECT_EQ(named, fired) << "docs/fault-injection.md's oneshot row: " << row[0];
}

TEST(Sources, LogLinesTakeThePlatformFromTheDriver) {
    const std::regex hard_coded("\"(CUDA|HIP) pool\\[%");
    int              files = 0;
    for (auto & entry : std::filesystem::directory_iterator(std::filesystem::path(GCP_SOURCE_DIR) / "ggml-cuda")) {
        if (!entry.is_regular_file()) {
            continue;
        }
        std::string text = read(entry.path());
        files++;
        std::istringstream lines(text);
        std::string        line;
        for (int n = 1; std::getline(lines, line); n++) {
            EXPECT_FALSE(std::regex_search(line, hard_coded))
                << entry.path().filename().string() << ":" << n << " names the platform itself: " << line;
        }
    }
    EXPECT_GT(files, 10);
}

} // namespace
