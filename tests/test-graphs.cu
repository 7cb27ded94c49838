// CUDA-graph safety on a real GPU. Context A captures a graph whose kernels read and write a
// pool buffer allocated during capture and freed after it; the graph carries its state in that
// buffer from one replay to the next (out = scratch + 1, then scratch = 2 * in). Context B
// allocates and frees heavily between replays, its driver failing allocations at random so its
// pool keeps reclaiming. Every replay is checked against a CPU reference. The negative control
// lets B allocate from A's pool, as a shared pool would: B's writes land in A's graph buffer
// and the same check fails.
// The async kind under capture: A's scratch is allocated and freed inside the capture, so it comes
// from A's capture cache, outside the graph (no memory node: the executable graph can be updated
// in place, as ggml does when a graph changes), while B allocates from the device's
// stream-ordered pool and writes concurrently with every replay. Its control takes A's scratch
// from the pool before the capture and frees it after, unpinned: B is handed that block and
// corrupts the replays. B's buffer and the control's scratch are larger than what the async
// pool's reuse cache keeps, so their frees go back to the stream-ordered pool that both share.

#include "cuda-check.h"
#include "harness.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <vector>

using namespace harness;

namespace {

constexpr int    N            = 1 << 16; // elements of the graph's scratch buffer
constexpr size_t BYTES        = N * sizeof(float);
constexpr int    REPLAYS      = 500;
constexpr int    THREADS      = 256;
constexpr size_t SHARED_BYTES = ASYNC_UNCACHED; // beyond the async reuse cache's largest buffer

__global__ void read_scratch(const float * scratch, float * out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = scratch[i] + 1.0f;
    }
}

__global__ void write_scratch(const float * in, float * scratch, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        scratch[i] = 2.0f * in[i];
    }
}

// B's work: overwrite its buffer, `rounds` times over (long enough to overlap A's replay)
__global__ void scribble(float * buf, int n, float value, int rounds = 1) {
    for (int r = 0; r < rounds; r++) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
            buf[i] = value;
        }
    }
}

// holds the stream between A's write and read, so that B's concurrent writes have a window
__global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

// two sessions on the GPU, A's input on the device; each suite picks the kind and B's driver
class TwoSessions : public testing::Test {
  protected:
    // b_faults: a fault spec for B's driver, or null; `scale`, `offset`: A's input pattern
    void open(ggml_cpool_kind kind, const char * b_faults, float scale, float offset) {
        std::string why;
        drv_ = make_cuda_driver(&why);
        if (drv_ == nullptr) {
            GTEST_SKIP() << why;
        }
        if (b_faults != nullptr) {
            ASSERT_EQ(ggml_cpool_driver_fault_create(drv_, b_faults, &faulty_), GGML_CPOOL_STATUS_OK);
        }
        // A keeps every cached buffer (no headroom rule): in the negative control B's allocations
        // then land in A's graph buffer, rather than in memory the rule gave back to the driver
        // under the graph (a read of freed memory, which may still hold the right values)
        ggml_cpool_ctx_params a = ctx_params(drv_, kind);
        a.headroom_pct          = GGML_CPOOL_HEADROOM_UNLIMITED;
        ASSERT_EQ(ggml_cpool_ctx_create(&a, &a_), GGML_CPOOL_STATUS_OK);
        b_ = make_ctx(faulty_ != nullptr ? faulty_ : drv_, kind);
        ASSERT_EQ(ggml_cpool_ctx_stream(a_, 0, &sa_), GGML_CPOOL_STATUS_OK);
        ASSERT_EQ(ggml_cpool_ctx_stream(b_, 0, &sb_), GGML_CPOOL_STATUS_OK);
        CHECK_CUDA(cudaMalloc(&in_, BYTES));
        CHECK_CUDA(cudaMalloc(&out_, BYTES));
        host_in_.resize(N);
        for (int i = 0; i < N; i++) {
            host_in_[i] = float(i % 1000) * scale + offset;
        }
        CHECK_CUDA(cudaMemcpy(in_, host_in_.data(), BYTES, cudaMemcpyHostToDevice));
    }
    void TearDown() override {
        if (drv_ == nullptr) {
            return;
        }
        cudaFree(in_);
        cudaFree(out_);
        ggml_cpool_ctx_free(a_);
        ggml_cpool_ctx_free(b_);
        EXPECT_EQ(ggml_cpool_driver_outstanding(drv_), 0u);
        if (faulty_ != nullptr) {
            ggml_cpool_driver_release(faulty_);
        }
        ggml_cpool_driver_release(drv_);
    }
    // A's output after a replay is 2 * in + 1, element for element
    bool replay_correct(const std::vector<float> & host_out) const {
        for (int i = 0; i < N; i++) {
            if (host_out[i] != 2.0f * host_in_[i] + 1.0f) {
                return false;
            }
        }
        return true;
    }

    ggml_cpool_driver_t drv_ = nullptr, faulty_ = nullptr;
    ggml_cpool_ctx_t    a_ = nullptr, b_ = nullptr;
    void *              sa_ = nullptr, *sb_ = nullptr;
    float *             in_ = nullptr, *out_ = nullptr;
    std::vector<float>  host_in_;
};

class Graphs : public TwoSessions {
  protected:
    // B's allocations fail at random: its pool reclaims and flushes all along
    void SetUp() override { open(GGML_CPOOL_KIND_LEGACY, "prob=0.5;on=malloc;seed=7", 0.5f, -7.0f); }

    // captures A's graph with its scratch from `pool`; returns the number of correct replays
    int run(ggml_cpool_t b_pool, bool pin) {
        cudaStream_t sa = static_cast<cudaStream_t>(sa_), sb = static_cast<cudaStream_t>(sb_);
        ggml_cpool_t a_pool = pool_of(a_);
        const int    blocks = (N + THREADS - 1) / THREADS;
        // warm-up outside capture: the pool holds the buffer before capture (no driver call in capture)
        buf          warm = alloc(a_pool, BYTES);
        write_scratch<<<blocks, THREADS, 0, sa>>>(in_, static_cast<float *>(warm.ptr), N);
        cudaStreamSynchronize(sa);
        release(a_pool, warm);

        uint64_t graph_id = 0;
        if (pin) {
            EXPECT_EQ(ggml_cpool_ctx_pin_begin(a_, &graph_id), GGML_CPOOL_STATUS_OK);
        }
        cudaGraph_t graph = nullptr;
        EXPECT_EQ(cudaStreamBeginCapture(sa, cudaStreamCaptureModeRelaxed), cudaSuccess);
        buf scratch = alloc(a_pool, BYTES);
        EXPECT_EQ(scratch.ptr, warm.ptr) << "served from the cache during capture";
        read_scratch<<<blocks, THREADS, 0, sa>>>(static_cast<float *>(scratch.ptr), out_, N);
        write_scratch<<<blocks, THREADS, 0, sa>>>(in_, static_cast<float *>(scratch.ptr), N);
        EXPECT_EQ(cudaStreamEndCapture(sa, &graph), cudaSuccess);
        if (pin) {
            EXPECT_EQ(ggml_cpool_ctx_pin_end(a_), GGML_CPOOL_STATUS_OK);
        }
        release(a_pool, scratch); // freed after capture: every replay still uses it
        cudaGraphExec_t exec = nullptr;
        EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);

        std::vector<float> host_out(N);
        int                correct = 0;
        for (int r = 0; r < REPLAYS; r++) {
            // B: a burst of scratch work of its own, sizes cycling so its pool misses and reclaims
            for (int j = 0; j < 4; j++) {
                size_t size = j == 0 ? BYTES : size_t(1 + (r * 7 + j * 13) % 64) * 64 * 1024;
                void * p    = nullptr;
                size_t got  = 0;
                if (ggml_cpool_alloc(b_pool, size, 0, &p, &got) == GGML_CPOOL_STATUS_OK) {
                    scribble<<<64, THREADS, 0, sb>>>(static_cast<float *>(p), int(got / sizeof(float)), -1.0e6f);
                    cudaStreamSynchronize(sb);
                    ggml_cpool_free(b_pool, p, got);
                }
            }
            if (r % 32 == 31 && b_pool != a_pool) {
                ggml_cpool_trim(b_pool); // (never in the control: freeing A's graph buffer would fault the GPU)
            }
            // A: replay, check every element against the reference
            EXPECT_EQ(cudaGraphLaunch(exec, sa), cudaSuccess);
            EXPECT_EQ(cudaMemcpyAsync(host_out.data(), out_, BYTES, cudaMemcpyDeviceToHost, sa), cudaSuccess);
            EXPECT_EQ(cudaStreamSynchronize(sa), cudaSuccess);
            correct += replay_correct(host_out);
        }
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        if (pin) {
            EXPECT_EQ(ggml_cpool_ctx_pin_release(a_, graph_id), GGML_CPOOL_STATUS_OK);
        }
        EXPECT_EQ(cudaGetLastError(), cudaSuccess);
        return correct;
    }
};

TEST_F(Graphs, EveryReplayIsCorrectWhileAnotherSessionReclaims) {
    int              correct = run(pool_of(b_), false);
    ggml_cpool_stats s       = stats_of(pool_of(b_));
    printf("graph replays: %d of %d correct; session B: %llu allocs, %llu LRU reclaims, %llu flushes, %llu "
           "OUT_OF_MEMORY, %llu faults injected\n",
           correct, REPLAYS, (unsigned long long) s.allocs, (unsigned long long) s.lru_reclaims,
           (unsigned long long) s.flushes, (unsigned long long) s.oom_returned,
           (unsigned long long) ggml_cpool_driver_faults_fired(faulty_));
    EXPECT_EQ(correct, REPLAYS);
    EXPECT_GT(s.lru_reclaims + s.flushes, 0u) << "B was driven into out-of-memory reclaim";
}

TEST_F(Graphs, EveryReplayIsCorrectWithTheGraphsBuffersPinned) {
    int correct = run(pool_of(b_), true);
    printf("graph replays (pinned): %d of %d correct\n", correct, REPLAYS);
    EXPECT_EQ(correct, REPLAYS);
}

TEST_F(Graphs, NegativeControlSharingOnePoolCorruptsTheReplays) {
    int correct = run(pool_of(a_), false); // B allocates from A's pool: what isolation prevents
    printf("negative control (one shared pool): %d of %d correct\n", correct, REPLAYS);
    EXPECT_LT(correct, REPLAYS) << "the control must fail the check, or the test proves nothing";
}

class AsyncGraphs : public TwoSessions {
  protected:
    static constexpr long long SPIN_CYCLES = 200000; // ~0.1 ms: B's writes get a window inside each replay
    static constexpr int       ROUNDS      = 64;     // B's scribble outlasts the window

    void SetUp() override { open(GGML_CPOOL_KIND_ASYNC, nullptr, 0.25f, -3.0f); }

    static size_t graph_mem(cudaGraphMemAttributeType what) {
        size_t value = 0;
        EXPECT_EQ(cudaDeviceGetGraphMemAttribute(0, what, &value), cudaSuccess);
        return value;
    }

    // A's graph: scratch = 2 * in, a pause, out = scratch + 1. `in_capture`: the scratch is
    // allocated and freed inside the capture; else taken before it and freed after it (the
    // control).
    cudaGraph_t capture(bool in_capture, buf * outside) {
        cudaStream_t sa     = static_cast<cudaStream_t>(sa_);
        ggml_cpool_t a_pool = pool_of(a_);
        const int    blocks = (N + THREADS - 1) / THREADS;
        if (!in_capture) {
            *outside = alloc(a_pool, SHARED_BYTES);
        }
        cudaGraph_t graph = nullptr;
        EXPECT_EQ(cudaStreamBeginCapture(sa, cudaStreamCaptureModeRelaxed), cudaSuccess);
        buf scratch = in_capture ? alloc(a_pool, BYTES) : *outside;
        write_scratch<<<blocks, THREADS, 0, sa>>>(in_, static_cast<float *>(scratch.ptr), N);
        spin<<<1, 1, 0, sa>>>(SPIN_CYCLES);
        read_scratch<<<blocks, THREADS, 0, sa>>>(static_cast<float *>(scratch.ptr), out_, N);
        if (in_capture) {
            release(a_pool, scratch); // back to the capture cache
        }
        EXPECT_EQ(cudaStreamEndCapture(sa, &graph), cudaSuccess);
        if (!in_capture) {
            release(a_pool, *outside); // back to the device pool while the graph still uses it
        }
        return graph;
    }

    // Returns the number of correct replays while B writes concurrently; *graph_reserved: graph
    // memory while the graph lives; *update: what updating the executable graph from a second
    // capture of the same work gave (in_capture only)
    int run(bool in_capture, size_t * graph_reserved, cudaError_t * update = nullptr) {
        cudaStream_t    sa = static_cast<cudaStream_t>(sa_), sb = static_cast<cudaStream_t>(sb_);
        ggml_cpool_t    b_pool = pool_of(b_);
        buf             outside;
        cudaGraph_t     graph = capture(in_capture, &outside);
        cudaGraphExec_t exec  = nullptr;
        EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);

        std::vector<float> host_out(N);
        int                correct = 0;
        for (int r = 0; r < REPLAYS; r++) {
            // B: a buffer from the device pool, written while A replays (no synchronize between)
            void * p   = nullptr;
            size_t got = 0;
            EXPECT_EQ(ggml_cpool_alloc(b_pool, SHARED_BYTES, 0, &p, &got), GGML_CPOOL_STATUS_OK);
            scribble<<<64, THREADS, 0, sb>>>(static_cast<float *>(p), int(got / sizeof(float)), -1.0e6f, ROUNDS);
            EXPECT_EQ(cudaGraphLaunch(exec, sa), cudaSuccess);
            EXPECT_EQ(ggml_cpool_free(b_pool, p, got), GGML_CPOOL_STATUS_OK);
            EXPECT_EQ(cudaMemcpyAsync(host_out.data(), out_, BYTES, cudaMemcpyDeviceToHost, sa), cudaSuccess);
            EXPECT_EQ(cudaStreamSynchronize(sa), cudaSuccess);
            EXPECT_EQ(cudaStreamSynchronize(sb), cudaSuccess); // lets B be handed what was freed
            correct += replay_correct(host_out);
        }
        *graph_reserved = graph_mem(cudaGraphMemAttrReservedMemCurrent); // while the graph lives
        if (update != nullptr) {
            cudaGraph_t                   again = capture(true, &outside);
            cudaGraphExecUpdateResultInfo info{};
            *update = cudaGraphExecUpdate(exec, again, &info);
            (void) cudaGetLastError();
            EXPECT_EQ(cudaGraphDestroy(again), cudaSuccess);
        }
        EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
        EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
        EXPECT_EQ(cudaGetLastError(), cudaSuccess);
        return correct;
    }
};

TEST_F(AsyncGraphs, TheCaptureCacheKeepsEveryReplayCorrectAndTheGraphUpdatable) {
    size_t      alive   = 0;
    cudaError_t update  = cudaErrorUnknown;
    int         correct = run(true, &alive, &update);
    printf("async graph replays: %d of %d correct; graph memory reserved %zu bytes while the graph lived; "
           "update in place from a second capture: %s\n",
           correct, REPLAYS, alive, cudaGetErrorName(update));
    EXPECT_EQ(correct, REPLAYS);
    EXPECT_EQ(alive, 0u) << "no memory node: the scratch came from the capture cache";
    EXPECT_EQ(update, cudaSuccess) << "a graph without memory nodes updates in place";
}

TEST_F(AsyncGraphs, NegativeControlPoolMemoryFreedUnderALiveGraphCorruptsTheReplays) {
    size_t alive   = 0;
    int    correct = run(false, &alive);
    printf("async negative control (scratch from the pool, freed under the graph): %d of %d correct\n", correct,
           REPLAYS);
    EXPECT_LT(correct, REPLAYS) << "the control must fail the check, or the test proves nothing";
}

} // namespace
