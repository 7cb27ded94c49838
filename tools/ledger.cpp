#include "ledger.h"

#include <algorithm>

namespace replay {

namespace {

constexpr const char * ALL_POOLS = "all pools";

std::string track_name(const pool_key & k) {
    return "ctx " + std::to_string(k.ctx) + " dev " + std::to_string(k.dev) + " slot " + std::to_string(k.slot);
}

} // namespace

sampler::sampler(std::string name, uint64_t interval) : interval_(std::max<uint64_t>(interval, 1)) {
    out_.name = std::move(name);
}

void sampler::add(uint64_t t, uint64_t live, uint64_t reserved) {
    const point    now{ t, live, reserved > live ? reserved - live : 0, reserved };
    const uint64_t bucket = t / interval_;
    if (open_ && bucket > bucket_) {
        close();
    }
    if (!open_) {
        open_   = true;
        bucket_ = bucket;
        max_    = now;
        max_.t  = bucket * interval_;
    } else {
        max_.live     = std::max(max_.live, live);
        max_.cached   = std::max(max_.cached, now.cached);
        max_.reserved = std::max(max_.reserved, reserved);
    }
    last_ = now;
}

track sampler::finish() {
    if (open_) {
        close();
    }
    return std::move(out_);
}

void sampler::close() {
    out_.points.push_back(max_);
    if (last_.live != max_.live || last_.cached != max_.cached || last_.reserved != max_.reserved) {
        out_.points.push_back({ std::max(last_.t, max_.t + 1), last_.live, last_.cached, last_.reserved });
    }
    open_ = false;
}

ledger::ledger(const trace & t, const options & o) :
    timeline_(o.samples > 0),
    per_pool_(t.pools > 1),
    interval_(o.samples > 0 ? t.duration_ns / o.samples + 1 : 1) {
    if (timeline_) {
        samplers_.emplace_back(ALL_POOLS, interval_);
    }
}

void ledger::set(const pool_key & k, uint64_t t, uint64_t live, uint64_t reserved) {
    pool & p = pools_[k];
    if (t > t_) { // the stranded bytes held since the last change
        area_ += double(reserved_ - std::min(live_, reserved_)) * double(t - t_);
        t_ = t;
    }
    live_           = live_ - p.live + live;
    reserved_       = reserved_ - p.reserved + reserved;
    p.live          = live;
    p.reserved      = reserved;
    p.peak_live     = std::max(p.peak_live, live);
    p.peak_reserved = std::max(p.peak_reserved, reserved);
    peak_live_      = std::max(peak_live_, live_);
    peak_reserved_  = std::max(peak_reserved_, reserved_);
    if (!timeline_) {
        return;
    }
    samplers_[0].add(t, live_, reserved_);
    if (per_pool_) {
        if (p.sampler == 0) {
            p.sampler = samplers_.size();
            samplers_.emplace_back(track_name(k), interval_);
        }
        samplers_[p.sampler].add(t, live, reserved);
    }
}

void ledger::mark(uint64_t t, const pool_key & k, const char * name, uint64_t bytes) {
    if (timeline_) {
        events_.push_back({ t, name, per_pool_ ? track_name(k) : ALL_POOLS, bytes });
    }
}

void ledger::finish(uint64_t end, result * r) {
    if (end > t_) {
        area_ += double(reserved_ - std::min(live_, reserved_)) * double(end - t_);
    }
    r->peak_live     = peak_live_;
    r->peak_reserved = peak_reserved_;
    r->stranded_mean = end > 0 ? area_ / double(end) : 0;
    for (const auto & kv : pools_) {
        const pool & p = kv.second;
        if (p.peak_live >= SMALL_POOL) {
            r->worst_pool = std::max(r->worst_pool, double(p.peak_reserved) / double(p.peak_live));
        }
    }
    for (sampler & s : samplers_) {
        r->tracks.push_back(s.finish());
    }
    r->events = std::move(events_);
}

} // namespace replay
