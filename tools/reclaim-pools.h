#pragma once
// reclaim-sim's pools under test, over one sim driver: a pool of this module (legacy or plain) or
// the ggml-style pool (ggml-style-pool.h) on the same device through the testing API, each
// counting what a run needs: recoveries, driver allocations, modelled driver time (cost-model.h),
// OUT_OF_MEMORY.

#include "cost-model.h"
#include "ggml-cuda-pool-testing.h"
#include "ggml-style-pool.h"

#include <memory>

namespace reclaim {

// what a run counted
struct tally {
    // LRU reclaims: all; those whose retry succeeded with buffers still cached (the ones that
    // differed from a flush); those a flush had to follow
    uint64_t lru = 0, kept = 0, lru_flushed = 0, flushes = 0;
    uint64_t syncs = 0, driver_allocs = 0, oom = 0, refused = 0; // refused: the tenant's allocations
    double   modelled_us = 0;
    double   free_sum = 0, largest_sum = 0; // MiB, over the probes
    int      probes      = 0;
    size_t   outstanding = 0; // driver allocations left once the run is over (a leak)
};

// the sim device as ggml-style-pool.h's memory: cudaMalloc and cudaFree through the testing API
struct sim_memory {
    ggml_cpool_driver_t drv   = nullptr;
    tally *             books = nullptr;

    void * alloc(size_t size) {
        void * p = nullptr;
        if (ggml_cpool_driver_malloc(drv, 0, size, &p) != GGML_CPOOL_STATUS_OK) {
            return nullptr;
        }
        books->driver_allocs++;
        books->modelled_us += replay::modelled_us(replay::cost::malloc_pair, size);
        return p;
    }
    void free(void * ptr) { ggml_cpool_driver_free(drv, 0, ptr); }
    void synchronize() { ggml_cpool_driver_synchronize(drv, 0); }
};

// a pool under test: a workload's get and put, and its counters into the tally at the end
class subject {
  public:
    virtual ~subject()                                                          = default;
    virtual bool get(size_t size, uint32_t flags, void ** ptr, size_t * actual) = 0;
    virtual void put(void * ptr, size_t actual)                                 = 0;
    virtual void count(tally * t)                                               = 0;
};

class module_pool final : public subject {
  public:
    module_pool(ggml_cpool_driver_t drv, ggml_cpool_kind kind, tally * books) : books_(books) {
        ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
        p.driver                = drv;
        p.kind[0]               = kind;
        if (ggml_cpool_ctx_create(&p, &ctx_) != GGML_CPOOL_STATUS_OK ||
            ggml_cpool_ctx_get_pool(ctx_, 0, &pool_) != GGML_CPOOL_STATUS_OK) {
            pool_ = nullptr;
        }
    }
    ~module_pool() override { ggml_cpool_ctx_free(ctx_); }
    module_pool(const module_pool &)             = delete;
    module_pool & operator=(const module_pool &) = delete;

    bool get(size_t size, uint32_t flags, void ** ptr, size_t * actual) override {
        const ggml_cpool_stats before = stats();
        const bool ok = pool_ != nullptr && ggml_cpool_alloc(pool_, size, flags, ptr, actual) == GGML_CPOOL_STATUS_OK;
        const ggml_cpool_stats after = stats();
        if (after.lru_reclaims > before.lru_reclaims) {
            books_->lru_flushed += after.flushes > before.flushes;
            books_->kept += ok && after.flushes == before.flushes && after.cached_bytes > 0;
        }
        if (ok) {
            books_->modelled_us += double(after.driver_allocs - before.driver_allocs) *
                                   replay::modelled_us(replay::cost::malloc_pair, *actual);
        }
        return ok;
    }
    void put(void * ptr, size_t actual) override { ggml_cpool_free(pool_, ptr, actual); }
    void count(tally * t) override {
        const ggml_cpool_stats s = stats();
        t->lru                   = s.lru_reclaims;
        t->flushes               = s.flushes;
        t->driver_allocs         = s.driver_allocs;
        t->oom                   = s.oom_returned;
    }

  private:
    ggml_cpool_stats stats() const {
        ggml_cpool_stats s{};
        ggml_cpool_get_stats(pool_, &s);
        return s;
    }
    tally *          books_;
    ggml_cpool_ctx_t ctx_  = nullptr;
    ggml_cpool_t     pool_ = nullptr;
};

class ggml_pool final : public subject {
  public:
    ggml_pool(ggml_cpool_driver_t drv, tally * books) : pool_(sim_memory{ drv, books }), books_(books) {}
    // ggml's pool knows no OVERALLOCATE: every request is a plain one. Where ggml aborts (the
    // retry after the flush failed too), an OUT_OF_MEMORY
    bool get(size_t size, uint32_t /*flags*/, void ** ptr, size_t * actual) override {
        *ptr = pool_.alloc(size, actual);
        books_->oom += *ptr == nullptr;
        return *ptr != nullptr;
    }
    void put(void * ptr, size_t actual) override { pool_.free(ptr, actual); }
    void count(tally * t) override { t->flushes = pool_.flushes(); }

  private:
    ggml_style_pool_on<sim_memory> pool_;
    tally *                        books_;
};

enum class pool_choice { legacy, plain, ggml_style };
constexpr pool_choice POOL_CHOICES[] = { pool_choice::legacy, pool_choice::plain, pool_choice::ggml_style };

inline const char * pool_name(pool_choice c) {
    return c == pool_choice::legacy ? "legacy" : c == pool_choice::plain ? "plain" : "ggml-style";
}

inline std::unique_ptr<subject> make_subject(pool_choice c, ggml_cpool_driver_t drv, tally * books) {
    if (c == pool_choice::ggml_style) {
        return std::make_unique<ggml_pool>(drv, books);
    }
    return std::make_unique<module_pool>(drv, c == pool_choice::legacy ? GGML_CPOOL_KIND_LEGACY : GGML_CPOOL_KIND_PLAIN,
                                         books);
}

} // namespace reclaim
