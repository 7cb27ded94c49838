#include "recorded.h"

#include "ledger.h"

#include <map>
#include <unordered_map>

namespace replay {

result recorded(const trace & t, const options & o) {
    result                                                     r;
    ledger                                                     books(t, o);
    std::map<pool_key, std::unordered_map<uint64_t, uint64_t>> live_bufs;
    std::map<pool_key, std::pair<uint64_t, uint64_t>>          state; // live, reserved
    for (const record & rec : t.records) {
        r.driver_calls += rec.drv;
        if (rec.o == op::ctx_free) { // its pools' memory goes back with it
            for (auto & s : state) {
                if (s.first.ctx == rec.ctx) {
                    s.second = { 0, 0 };
                    books.set(s.first, rec.t + rec.ns, 0, 0);
                }
            }
        }
        if (!is_pool_call(rec.o) && rec.o != op::get_pool) {
            continue;
        }
        const pool_key k{ rec.ctx, rec.dev, rec.slot };
        auto &         s = state[k];
        if (is_pool_call(rec.o)) {
            r.calls++;
            r.call_ns += rec.ns;
        }
        if (rec.o == op::alloc && rec.st == GGML_CPOOL_STATUS_OK) {
            r.allocs++;
            r.hits += rec.drv == 0;
            live_bufs[k][rec.ptr] = rec.actual;
            s.first += rec.actual;
        } else if (rec.o == op::alloc && rec.st == GGML_CPOOL_STATUS_OUT_OF_MEMORY) {
            r.oom++;
            books.mark(rec.t, k, "OUT_OF_MEMORY", rec.size);
        } else if (rec.o == op::free && rec.st == GGML_CPOOL_STATUS_OK) {
            auto & bufs = live_bufs[k];
            auto   it   = bufs.find(rec.ptr);
            if (it == bufs.end()) {
                r.unmatched_frees++;
            } else {
                s.first -= it->second;
                bufs.erase(it);
            }
        }
        if (rec.reserved != NONE) {
            s.second = rec.reserved;
        }
        books.set(k, rec.t + rec.ns, s.first, s.second);
    }
    r.driver_allocs = r.driver_frees = r.lru_reclaims = r.flushes = NONE; // a trace does not say
    books.finish(t.duration_ns, &r);
    return r;
}

} // namespace replay
