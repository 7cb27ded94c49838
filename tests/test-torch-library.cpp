// libggml-cuda-pool-torch.so as PyTorch loads it (dlopen, its exported functions), with neither
// torch nor a GPU: a request it cannot serve is an exception, which PyTorch's bindings raise in
// Python (torch-raise.h), never a NULL that PyTorch would hand to its first kernel; the check its
// Python helper runs names a bad setting with the module's line; an empty GGML_CUDA_POOL is
// legacy, not an error.

#include "harness.h"

#include <dlfcn.h>

using namespace harness;

namespace {

constexpr size_t LINE = 1024;

// the library's exported functions, resolved as PyTorch and the Python helper resolve them
struct torch_library {
    torch_library() {
        handle = dlopen(GCP_TORCH_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (handle != nullptr) {
            alloc = reinterpret_cast<decltype(alloc)>(dlsym(handle, "ggml_cuda_pool_torch_alloc"));
            check = reinterpret_cast<decltype(check)>(dlsym(handle, "ggml_cuda_pool_torch_check"));
        }
    }
    ~torch_library() {
        if (handle != nullptr) {
            dlclose(handle);
        }
    }
    torch_library(const torch_library &)             = delete;
    torch_library & operator=(const torch_library &) = delete;

    void * handle                                           = nullptr;
    void * (*alloc)(size_t size, int device, void * stream) = nullptr;
    int (*check)(char * line, size_t size)                  = nullptr;
};

TEST(TorchLibrary, ExportsTheTimingSwitch) {
    torch_library lib;
    ASSERT_NE(lib.handle, nullptr) << dlerror();
    EXPECT_NE(dlsym(lib.handle, "ggml_cuda_pool_torch_timing"), nullptr) << "what timing() in the helper calls";
}

bool starts_with(const std::string & text, const std::string & prefix) {
    return text.rfind(prefix, 0) == 0;
}

TEST(TorchLibrary, TheCheckNamesABadSettingWithTheModulesLine) {
    clean_env     env;
    torch_library lib;
    ASSERT_NE(lib.check, nullptr) << dlerror();
    char line[LINE] = "";
    {
        scoped_env pool("GGML_CUDA_POOL", "fastest");
        EXPECT_EQ(lib.check(line, sizeof(line)), -1);
        EXPECT_TRUE(starts_with(line, "GGML_CUDA_POOL=fastest: not one of its values; it takes auto")) << line;
    }
    {
        scoped_env stats("GGML_CUDA_POOL_STATS", "/nonexistent-dir/stats");
        EXPECT_EQ(lib.check(line, sizeof(line)), -1);
        EXPECT_TRUE(starts_with(line, "GGML_CUDA_POOL_STATS=/nonexistent-dir/stats: cannot open it")) << line;
    }
    for (const char * fine : { "", "LEGACY", "vmm" }) {
        scoped_env pool("GGML_CUDA_POOL", fine);
        EXPECT_EQ(lib.check(line, sizeof(line)), 0) << "GGML_CUDA_POOL=" << fine << ": " << line;
    }
}

// refused before any device is touched, so the same on every machine; the first allocation of
// this process's copy of the library, which keeps the reason for every later one
TEST(TorchLibrary, ARefusedAllocationThrowsInsteadOfReturningNull) {
    clean_env     env;
    scoped_env    pool("GGML_CUDA_POOL", "fastest");
    torch_library lib;
    ASSERT_NE(lib.alloc, nullptr) << dlerror();
    for (int attempt = 0; attempt < 2; attempt++) {
        try {
            void * p = lib.alloc(size_t(1) << 20, 0, nullptr);
            ADD_FAILURE() << "attempt " << attempt << " returned " << p << " instead of throwing";
        } catch (const std::exception & e) {
            EXPECT_NE(std::string(e.what()).find("GGML_CUDA_POOL=fastest: not one of its values"), std::string::npos)
                << e.what();
        }
    }
    EXPECT_EQ(lib.alloc(0, 0, nullptr), nullptr) << "0 bytes: NULL, as PyTorch's own allocator, and no throw";
}

} // namespace
