#include "vmm.h"

#include "hit-path.h"
#include "../support/log.h"

#include <algorithm>
#include <iterator>

namespace gcp {

pool_vmm::pool_vmm(driver & drv, int device, stream_t stream, size_t reserve_size, bool peer_access) :
    pool(drv, device, GGML_CPOOL_KIND_VMM, stream, hit_path::vmm),
    peer_access_(peer_access),
    granularity_(drv.vmm_granularity(device)) {
    make_kind_hit<stack_fields>();
    reserve_size_ = round_up(std::min(reserve_size, MAX_REQUEST), granularity_);
}

pool_vmm::~pool_vmm() {
    release_live();
    unmap_above(0); // destruction gives everything back, pinned or not
    if (stack().base != 0 && mapped_ == 0 && release_orphans()) {
        status st = drv_.vmm_unreserve(device_, stack().base, reserve_size_);
        if (st != OK) {
            driver_failed(GGML_CPOOL_LOG_ERROR, "freeing the virtual range failed (%s)", ggml_cpool_status_str(st));
        }
    }
}

status pool_vmm::reserve() {
    status st = drv_.vmm_reserve(device_, reserve_size_, &stack().base);
    if (st != OK) {
        stack().base = 0;
        driver_failed(GGML_CPOOL_LOG_ERROR, "reserving a virtual range of %.2f MiB failed (%s)", to_mib(reserve_size_),
                      ggml_cpool_status_str(st));
    }
    return st;
}

status pool_vmm::grant_access(uintptr_t addr, size_t size) {
    status st = drv_.vmm_access(device_, addr, size, device_);
    for (int peer = 0; peer_access_ && st == OK && peer < drv_.device_count(); peer++) {
        if (drv_.can_access_peer(device_, peer)) {
            st = drv_.vmm_access(device_, addr, size, peer);
        }
    }
    return st;
}

bool pool_vmm::release_orphans() {
    bool any_mapped = false;
    for (size_t i = orphans_.size(); i-- > 0;) {
        orphan & o = orphans_[i];
        if (o.mapped) {
            o.mapped = drv_.vmm_unmap(device_, stack().base + o.offset, o.size) != OK;
        }
        if (!o.mapped && drv_.vmm_release(device_, o.handle) == OK) {
            if (o.reserved) { // its addresses went when it was unmapped
                held_ -= o.size;
                on_released(o.size);
            }
            orphans_.erase(orphans_.begin() + std::ptrdiff_t(i));
            continue;
        }
        any_mapped = any_mapped || o.mapped;
    }
    driver_failed(); // what still fails is retried at the next growth
    return !any_mapped;
}

status pool_vmm::grow(size_t bytes) {
    // the records this growth may need, made before the driver is asked: a chunk it maps, or an
    // orphan it leaves, and room for every chunk to become an orphan later
    reserve_at_least(chunks_, chunks_.size() + 1);
    reserve_at_least(orphans_, orphans_.size() + chunks_.size() + 1);
    // a mapping left over from a failed growth still occupies the range where this one goes;
    // undoing it unmaps, which waits until no graph is being captured
    const bool capture = capturing();
    bool       blocked = false;
    for (const orphan & o : orphans_) {
        blocked = blocked || o.mapped;
    }
    if (blocked && (capture || !release_orphans())) {
        GCP_LOG_ERROR("%s: a failed mapping could not be undone yet; not growing", name());
        return DRIVER_ERROR;
    }
    const size_t size   = round_up(bytes, granularity_);
    const size_t offset = mapped_;
    vmm_handle   handle = 0;
    const char * what   = "creating";
    status       st     = drv_.vmm_create(device_, size, &handle, cached_bytes());
    if (st == OK) {
        what = "mapping";
        st   = drv_.vmm_map(device_, stack().base + offset, size, handle);
        if (st == OK) {
            what = "granting access to";
            st   = grant_access(stack().base + offset, size);
            if (st != OK) {
                orphans_.push_back({ offset, size, handle, true, false });
            }
        } else {
            orphans_.push_back({ offset, size, handle, false, false });
        }
    }
    if (st != OK) {
        // an out-of-memory is retried, and the caller's one line reports it if it persists
        driver_failed(st == OUT_OF_MEMORY ? GGML_CPOOL_LOG_DEBUG : GGML_CPOOL_LOG_ERROR,
                      "%s %.2f MiB of physical memory failed (%s)", what, to_mib(size), ggml_cpool_status_str(st));
        if (!capture) { // an unmap during capture would break it: the next growth outside one retries
            release_orphans();
        }
        return st;
    }
    chunks_.push_back({ offset, size, handle });
    mapped_ += size;
    on_driver_alloc(size);
    return OK;
}

bool pool_vmm::take_hole(size_t bytes, void ** ptr) {
    auto best = blocks_.end();
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
        if (it->freed && it->size >= bytes && (best == blocks_.end() || it->size < best->size)) {
            best = it;
        }
    }
    if (best == blocks_.end()) {
        return false;
    }
    *ptr = reinterpret_cast<void *>(stack().base + best->offset);
    if (best->size == bytes) {
        best->freed = false;
        holes_--;
        return true;
    }
    // the rest of the hole stays one (within the room take made: cannot throw)
    const block taken{ best->offset, bytes, false };
    best->offset += bytes;
    best->size -= bytes;
    blocks_.insert(best, taken);
    return true;
}

class pool_vmm::steps final : public recovery_steps {
  public:
    steps(pool_vmm & p, size_t bytes) : p_(p), bytes_(bytes), growth_(p.stack().used + bytes - p.mapped_) {}

    status retry() override { return p_.grow(growth_); }
    // one retry once the stream's work (and other streams' frees) has landed, for a failure that
    // has passed by then
    status give_back() override {
        GCP_LOG_DEBUG("%s: growth by %.2f MiB failed; retrying once after a synchronize", p_.name(), to_mib(growth_));
        status st = p_.synchronize();
        if (st != OK) {
            p_.driver_failed(); // the failed growth is what the report says
            return OUT_OF_MEMORY;
        }
        st = p_.grow(growth_);
        GCP_LOG_DEBUG("%s: retry %s", p_.name(), st == OK ? "succeeded" : "failed");
        return st;
    }
    void refuse_in_capture() override {
        GCP_LOG_WARN("%s: alloc of %.2f MiB failed during graph capture: growing by %.2f MiB is refused, out of "
                     "memory, and no retry is legal there",
                     p_.name(), to_mib(bytes_), to_mib(growth_));
    }
    void report(status st) override {
        if (st != OUT_OF_MEMORY) {
            return; // grow's line said why
        }
        GCP_LOG_WARN("%s: alloc of %.2f MiB failed: growing by %.2f MiB is refused, out of memory (%.2f MiB "
                     "mapped, %.2f MiB live), also after a synchronize and %d retries after a pause",
                     p_.name(), to_mib(bytes_), to_mib(growth_), to_mib(p_.mapped_), to_mib(p_.hit_.counts.live_bytes),
                     TRANSIENT_RETRIES);
    }

  private:
    pool_vmm &   p_;
    const size_t bytes_;
    const size_t growth_; // what the top needs mapped beyond what is
};

bool pool_vmm::serve_hit(size_t size, void ** ptr, size_t * actual) {
    // no hole to search, the top's mapped memory holds it, and the block list has room for the top
    // it lists and the new top it will list later (SPARE_BLOCKS): the hit end says all three
    const size_t bytes = round_up(size, ALIGNMENT);
    if (GCP_UNLIKELY(stack().used + bytes > stack().hit_end)) {
        return false;
    }
    push(bytes, ptr, actual);
    return true;
}

status pool_vmm::do_alloc(const request & r, void ** ptr, size_t * actual) {
    if (!r.growing() && serve_hit(r.size, ptr, actual)) {
        hit_.counts.hits++;
        return OK;
    }
    status st = take(r, miss_bytes(r, 0, ALIGNMENT), ptr, actual);
    refresh_hit_end();
    return st;
}

void pool_vmm::push(size_t bytes, void ** ptr, size_t * actual) {
    stack_fields & s = stack();
    if (s.top_size != 0) { // a nested request: the list takes the top
        list_top();
        if (!list_has_room()) {
            s.hit_end = 0; // the next push makes room first (take)
        }
    }
    s.top_size = bytes; // listed by the next push or a free that is not the top's
    *ptr       = reinterpret_cast<void *>(s.base + s.used);
    *actual    = bytes;
    s.used += bytes;
}

status pool_vmm::take(const request & r, size_t bytes, void ** ptr, size_t * actual) {
    reserve_at_least(blocks_, blocks_.size() + SPARE_BLOCKS); // before anything is mapped for the block
    if (holes_ > 0 && take_hole(bytes, ptr)) {
        hit_.counts.hits++;
        *actual = bytes;
        return OK;
    }
    if (stack().base == 0) {
        status st = reserve();
        if (st != OK) {
            return st;
        }
    }
    // a growing request whose doubling the range or the device refuses is served as one that does
    // not grow (a hole, the top, a growth): nothing is cached to give back for the doubling, so
    // before the retries that only wait
    const bool doubled = fallback_bytes(r, bytes, 0, ALIGNMENT) != 0;
    const auto alone   = [&] {
        status st = do_alloc(request{ r.size, 0, 0 }, ptr, actual);
        if (st == OK) {
            log_fallback(bytes, *actual, r.size);
        }
        return st;
    };
    if (doubled && bytes > reserve_size_ - stack().used) {
        return alone();
    }
    if (bytes > reserve_size_ - stack().used) {
        GCP_LOG_WARN("%s: alloc of %.2f MiB exceeds the virtual range (%.2f of %.2f MiB in use)", name(), to_mib(bytes),
                     to_mib(stack().used), to_mib(reserve_size_));
        return OUT_OF_MEMORY;
    }
    if (stack().used + bytes <= mapped_) {
        hit_.counts.hits++;
    } else {
        stats_.misses++;
        status st = grow(stack().used + bytes - mapped_);
        if (st == OUT_OF_MEMORY && doubled) {
            stats_.misses--; // counted again as the request alone
            return alone();
        }
        if (st == OUT_OF_MEMORY) {
            steps ladder(*this, bytes);
            st = climb(ladder);
        }
        if (st != OK) {
            return st;
        }
    }
    push(bytes, ptr, actual);
    return OK;
}

std::vector<pool_vmm::block>::iterator pool_vmm::live_block(const void * ptr) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(ptr);
    if (blocks_.empty() || addr < stack().base) {
        return blocks_.end();
    }
    const size_t offset = addr - stack().base;
    // ggml frees in the reverse order it allocates: the top block (never a hole), without a search
    if (blocks_.back().offset == offset) {
        return blocks_.end() - 1;
    }
    auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset,
                               [](const block & b, size_t off) { return b.offset < off; });
    return it != blocks_.end() && it->offset == offset && !it->freed ? it : blocks_.end();
}

bool pool_vmm::serve_free(void * ptr, size_t actual) noexcept {
    // no hole below the top to unwind (a hit end says there is none; where it is 0 for want of
    // list room, release serves the free as well). The top block ends at the stack top, so its size
    // names it: the unlisted top's on the hit line, else the list's last
    stack_fields & s      = stack();
    const size_t   offset = reinterpret_cast<uintptr_t>(ptr) - s.base;
    if (GCP_UNLIKELY(s.hit_end == 0 || actual == 0 || offset != s.used - actual)) {
        return false;
    }
    if (GCP_LIKELY(actual == s.top_size)) { // the pair's: laid first
        s.used     = offset;
        s.top_size = 0; // the new top, if any, is the list's last
        return true;
    }
    if (s.top_size == 0 && !blocks_.empty() && blocks_.back().size == actual) {
        s.used = offset;
        blocks_.pop_back();
        return true;
    }
    return false;
}

size_t pool_vmm::do_free(void * ptr, size_t actual) noexcept {
    return serve_free(ptr, actual) ? actual : release(ptr, actual);
}

size_t pool_vmm::release(void * ptr, size_t actual) noexcept {
    list_top();        // every block in the list, for the search and the merges below
    refresh_hit_end(); // the list took the top: a refused free returns below
    auto it = live_block(ptr);
    if (it == blocks_.end() || it->size != actual) {
        return it == blocks_.end() ? NOT_LIVE : it->size;
    }
    it->freed = true;
    holes_++;
    // one hole with its freed neighbours (erasing needs no memory)
    if (std::next(it) != blocks_.end() && std::next(it)->freed) {
        it->size += std::next(it)->size;
        blocks_.erase(std::next(it));
        holes_--;
    }
    if (it != blocks_.begin() && std::prev(it)->freed) {
        std::prev(it)->size += it->size;
        blocks_.erase(it);
        holes_--;
    }
    while (!blocks_.empty() && blocks_.back().freed) {
        stack().used = blocks_.back().offset;
        blocks_.pop_back();
        holes_--;
    }
    refresh_hit_end();
    return actual;
}

bool pool_vmm::any_live(void ** ptr, size_t * size) const {
    if (stack().top_size != 0) {
        *ptr  = reinterpret_cast<void *>(stack().base + stack().used - stack().top_size);
        *size = stack().top_size;
        return true;
    }
    if (blocks_.empty()) {
        return false;
    }
    *ptr  = reinterpret_cast<void *>(stack().base + blocks_.back().offset);
    *size = blocks_.back().size;
    return true;
}

bool pool_vmm::unmap_last_chunk() {
    chunk  c  = chunks_.back();
    status st = drv_.vmm_unmap(device_, stack().base + c.offset, c.size);
    if (st != OK) {
        driver_failed(GGML_CPOOL_LOG_ERROR, "unmapping %.2f MiB failed (%s); kept mapped", to_mib(c.size),
                      ggml_cpool_status_str(st));
        return false;
    }
    chunks_.pop_back();
    mapped_ -= c.size;
    refresh_hit_end();
    on_addresses_gone(); // whether or not the release below succeeds, the addresses fault now
    if (drv_.vmm_release(device_, c.handle) != OK) {
        // still the driver's memory held for this pool: reserved until the retry releases it
        driver_failed(GGML_CPOOL_LOG_ERROR, "releasing %.2f MiB of physical memory failed; will retry", to_mib(c.size));
        orphans_.push_back({ c.offset, c.size, c.handle, false, true }); // within the room grow made
        held_ += c.size;
        return true;
    }
    on_released(c.size);
    return true;
}

status pool_vmm::trim() {
    if (capturing()) {
        log_capture_refusal("trim refused");
        return UNSUPPORTED;
    }
    // nothing a captured graph still uses is unmapped, even below the stack top
    uintptr_t top = pinned_top();
    return unmap_above(std::max(stack().used, top > stack().base ? size_t(top - stack().base) : size_t(0)));
}

status pool_vmm::unmap_above(size_t floor) {
    release_orphans();
    while (!chunks_.empty() && chunks_.back().offset >= floor) {
        if (!unmap_last_chunk()) {
            return DRIVER_ERROR;
        }
    }
    return orphans_.empty() ? OK : DRIVER_ERROR;
}

GCP_HIT_PATH_OF(pool_vmm);

} // namespace gcp
