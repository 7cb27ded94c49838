#include "replay.h"

#include "cost-model.h"
#include "ggml-cuda-pool-testing.h"
#include "ledger.h"
#include "recorded.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace replay {

namespace {

// a replay of the trace against one configuration
class player {
  public:
    player(const trace & t, const config & c, const options & o) : trace_(t), config_(c), books_(t, o) {
        ggml_cpool_sim_params sim = ggml_cpool_sim_default_params();
        sim.capacity              = o.capacity;
        sim.device_count          = std::max(1, t.devices);
        if (ggml_cpool_driver_create(GGML_CPOOL_DRIVER_SIM, &sim, &sim_) != GGML_CPOOL_STATUS_OK) {
            result_.unavailable = "the sim driver refused its parameters";
            return;
        }
        drv_ = sim_;
        if (!o.faults.empty() &&
            ggml_cpool_driver_fault_create(sim_, o.faults.c_str(), &drv_) != GGML_CPOOL_STATUS_OK) {
            drv_                = nullptr;
            result_.unavailable = "malformed fault spec '" + o.faults + "'";
        }
    }

    ~player() {
        if (drv_ != sim_) {
            ggml_cpool_driver_release(drv_);
        }
        ggml_cpool_driver_release(sim_);
    }

    result run() {
        result_.config      = config_.name;
        result_.replayed    = true;
        result_.modelled_us = 0;
        for (size_t i = 0; i < trace_.records.size() && drv_ != nullptr && result_.unavailable.empty(); i++) {
            step(trace_.records[i]);
        }
        close_all(trace_.duration_ns);
        books_.finish(trace_.duration_ns, &result_);
        return std::move(result_);
    }

  private:
    struct buffer {
        void * ptr;
        size_t size;
    };
    struct pool_state {
        ggml_cpool_t                         pool = nullptr;
        ggml_cpool_stats                     last{};
        std::unordered_map<uint64_t, buffer> live; // the trace's pointer -> the replay's buffer
    };
    using ctx_key = std::pair<uint64_t, int32_t>; // (context, slot)

    // a call that the traced run carried out (not one it refused before doing anything)
    static bool ran(ggml_cpool_status st) {
        return st == GGML_CPOOL_STATUS_OK || st == GGML_CPOOL_STATUS_OUT_OF_MEMORY ||
               st == GGML_CPOOL_STATUS_DRIVER_ERROR;
    }

    void step(const record & r) {
        if (is_pool_call(r.o)) {
            result_.calls++;
        }
        switch (r.o) {
            case op::get_pool:
                if (r.st == GGML_CPOOL_STATUS_OK) {
                    pool_for(r);
                }
                break;
            case op::alloc:
                alloc(r);
                break;
            case op::free:
                release(r);
                break;
            case op::trim:
                if (ran(r.st)) {
                    if (pool_state * ps = pool_for(r)) {
                        ggml_cpool_trim(ps->pool);
                        observe(*ps, { r.ctx, r.dev, r.slot }, r.t + r.ns, 0);
                    }
                }
                break;
            case op::pin_begin:
            case op::pin_end:
            case op::pin_release:
                pin(r);
                break;
            case op::ctx_free:
                close_ctx(r.ctx, r.t + r.ns);
                break;
            case op::ctx_create:
            case op::count:
                break;
        }
    }

    ggml_cpool_ctx_t ctx_for(uint64_t ctx, int32_t slot) {
        auto it = ctxs_.find({ ctx, slot });
        if (it != ctxs_.end()) {
            return it->second;
        }
        ggml_cpool_ctx_params p = ggml_cpool_ctx_default_params();
        p.driver                = drv_;
        for (ggml_cpool_kind & k : p.kind) {
            k = config_.kind;
        }
        if (config_.tune != nullptr) {
            config_.tune(&p);
        }
        ggml_cpool_ctx_t c = nullptr;
        if (ggml_cpool_ctx_create(&p, &c) != GGML_CPOOL_STATUS_OK) {
            result_.unavailable = "context creation refused";
            return nullptr;
        }
        return ctxs_[{ ctx, slot }] = c;
    }

    pool_state * pool_for(const record & r) {
        const pool_key k{ r.ctx, r.dev, r.slot };
        auto           it = pools_.find(k);
        if (it != pools_.end()) {
            return &it->second;
        }
        ggml_cpool_ctx_t ctx  = ctx_for(r.ctx, r.slot);
        ggml_cpool_t     pool = nullptr;
        if (ctx == nullptr) {
            return nullptr;
        }
        ggml_cpool_status st = ggml_cpool_ctx_get_pool(ctx, r.dev, &pool);
        if (st != GGML_CPOOL_STATUS_OK) {
            result_.unavailable =
                std::string("no ") + config_.name + " pool on the sim driver (" + ggml_cpool_status_str(st) + ")";
            return nullptr;
        }
        pool_state & ps = pools_[k];
        ps.pool         = pool;
        ggml_cpool_get_stats(pool, &ps.last);
        books_.set(k, r.t + r.ns, ps.last.live_bytes, ps.last.reserved_bytes);
        return &ps;
    }

    void alloc(const record & r) {
        if (!ran(r.st)) {
            return;
        }
        pool_state * ps = pool_for(r);
        if (ps == nullptr) {
            return;
        }
        const pool_key    k{ r.ctx, r.dev, r.slot };
        const uint64_t    async0 = ggml_cpool_driver_calls(drv_, GGML_CPOOL_CALL_MALLOC_ASYNC);
        buffer            b{};
        ggml_cpool_status st =
            ggml_cpool_alloc(ps->pool, size_t(r.size), uint32_t(r.flags) & ~config_.drop_flags, &b.ptr, &b.size);
        const ggml_cpool_stats before = ps->last;
        observe(*ps, k, r.t + r.ns, r.size);
        result_.modelled_us += modelled(before, ps->last, st == GGML_CPOOL_STATUS_OK ? b.size : 0,
                                        ggml_cpool_driver_calls(drv_, GGML_CPOOL_CALL_MALLOC_ASYNC) - async0);
        if (st != GGML_CPOOL_STATUS_OK) {
            return;
        }
        if (r.st == GGML_CPOOL_STATUS_OK) {
            ps->live[r.ptr] = b;
        } else { // the traced run got no buffer, so nothing used this one
            ggml_cpool_free(ps->pool, b.ptr, b.size);
            observe(*ps, k, r.t + r.ns, 0);
        }
    }

    void release(const record & r) {
        if (r.st != GGML_CPOOL_STATUS_OK) {
            return;
        }
        pool_state * ps = pool_for(r);
        if (ps == nullptr) {
            return;
        }
        auto it = ps->live.find(r.ptr);
        if (it == ps->live.end()) {
            result_.unmatched_frees++;
            return;
        }
        ggml_cpool_free(ps->pool, it->second.ptr, it->second.size);
        ps->live.erase(it);
        observe(*ps, { r.ctx, r.dev, r.slot }, r.t + r.ns, 0);
    }

    // pins are a context's: every replay context of the traced one (each slot) takes part
    void pin(const record & r) {
        if (r.st != GGML_CPOOL_STATUS_OK) {
            return;
        }
        if (r.o == op::pin_begin) {
            ctx_for(r.ctx, 0); // so that its pools, created later, are pinned as well
        }
        auto & graphs = graphs_[{ r.ctx, r.o == op::pin_begin ? r.actual : r.size }];
        for (auto & c : ctxs_) {
            if (c.first.first != r.ctx) {
                continue;
            }
            if (r.o == op::pin_begin) {
                uint64_t g = 0;
                if (ggml_cpool_ctx_pin_begin(c.second, &g) == GGML_CPOOL_STATUS_OK) {
                    graphs.push_back({ c.second, g });
                }
            } else if (r.o == op::pin_end) {
                ggml_cpool_ctx_pin_end(c.second);
            }
        }
        if (r.o == op::pin_release) {
            for (auto & g : graphs) {
                ggml_cpool_ctx_pin_release(g.first, g.second);
            }
            graphs_.erase({ r.ctx, r.size });
            for (auto & p : pools_) { // a release may let deferred frees go
                if (p.first.ctx == r.ctx) {
                    observe(p.second, p.first, r.t + r.ns, 0);
                }
            }
        }
    }

    // a pool's statistics after a call: the ledger, the events, the counters
    void observe(pool_state & ps, const pool_key & k, uint64_t t, uint64_t requested) {
        ggml_cpool_stats s{};
        ggml_cpool_get_stats(ps.pool, &s);
        const ggml_cpool_stats & p = ps.last;
        if (s.lru_reclaims > p.lru_reclaims) {
            books_.mark(t, k, "LRU reclaim", s.lru_reclaimed_bytes - p.lru_reclaimed_bytes);
        }
        if (s.flushes > p.flushes) {
            books_.mark(t, k, "flush", 0);
        }
        if (s.oom_returned > p.oom_returned) {
            books_.mark(t, k, "OUT_OF_MEMORY", requested);
        }
        if (drv_ != sim_) {
            const uint64_t fired = ggml_cpool_driver_faults_fired(drv_);
            if (fired > result_.faults) {
                books_.mark(t, k, "fault", requested);
                result_.faults = fired;
            }
        }
        books_.set(k, t, s.live_bytes, s.reserved_bytes);
        ps.last = s;
    }

    // modelled driver time of one allocation: each driver allocation is charged its pair (the
    // allocation and its release, which comes at the latest when the context goes)
    double modelled(const ggml_cpool_stats & before, const ggml_cpool_stats & after, size_t actual,
                    uint64_t async_calls) const {
        const uint64_t allocs = after.driver_allocs - before.driver_allocs;
        const size_t   grown =
            after.reserved_bytes > before.reserved_bytes ? after.reserved_bytes - before.reserved_bytes : 0;
        switch (config_.kind) {
            case GGML_CPOOL_KIND_LEGACY:
            case GGML_CPOOL_KIND_PLAIN:
                return double(allocs) * modelled_us(cost::malloc_pair, actual);
            case GGML_CPOOL_KIND_VMM:
                return allocs > 0 ? modelled_us(cost::vmm_pair, grown) : 0;
            case GGML_CPOOL_KIND_ASYNC:
                return double(async_calls) * modelled_us(cost::async_warm, actual) +
                       (grown > 0 ? modelled_us(cost::async_cold, grown) - modelled_us(cost::async_warm, grown) : 0);
            default:
                return 0;
        }
    }

    // the context's pools give their counters to the result, then the context goes
    void close_ctx(uint64_t ctx, uint64_t t) {
        for (auto it = pools_.begin(); it != pools_.end();) {
            if (it->first.ctx != ctx) {
                ++it;
                continue;
            }
            observe(it->second, it->first, t, 0);
            const ggml_cpool_stats & s = it->second.last;
            result_.allocs += s.allocs;
            result_.hits += s.hits;
            result_.driver_allocs += s.driver_allocs;
            result_.driver_frees += s.driver_frees;
            result_.oom += s.oom_returned;
            result_.lru_reclaims += s.lru_reclaims;
            result_.flushes += s.flushes;
            books_.set(it->first, t, 0, 0); // its memory goes back to the driver with the context
            it = pools_.erase(it);
        }
        for (auto it = ctxs_.begin(); it != ctxs_.end();) {
            if (it->first.first == ctx) {
                ggml_cpool_ctx_free(it->second);
                it = ctxs_.erase(it);
            } else {
                ++it;
            }
        }
    }

    void close_all(uint64_t t) {
        while (!ctxs_.empty()) {
            close_ctx(ctxs_.begin()->first.first, t);
        }
    }

    const trace &                       trace_;
    const config &                      config_;
    ledger                              books_;
    result                              result_;
    ggml_cpool_driver_t                 sim_ = nullptr;
    ggml_cpool_driver_t                 drv_ = nullptr; // sim_, or a fault driver over it
    std::map<ctx_key, ggml_cpool_ctx_t> ctxs_;
    std::map<pool_key, pool_state>      pools_;
    // (context, the trace's graph) -> the replay contexts' graphs
    std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<ggml_cpool_ctx_t, uint64_t>>> graphs_;
};

} // namespace

result play(const trace & t, const config & c, const options & o) {
    if (c.kind == GGML_CPOOL_KIND_AUTO) {
        result r = recorded(t, o);
        r.config = c.name;
        return r;
    }
    player p(t, c, o);
    return p.run();
}

size_t capacity_for_fraction(const trace & t, double fraction) {
    return size_t(std::ceil(double(t.peak_requested) / fraction));
}

} // namespace replay
