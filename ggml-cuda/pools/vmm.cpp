#include "vmm.h"

#include "recovery.h"

#include <algorithm>
#include <iterator>

namespace gcp {

pool_vmm::pool_vmm(driver & drv, int device, stream_t stream, size_t range_size, bool peer_access) :
    pool(drv, device, GGML_CPOOL_KIND_VMM, stream),
    peer_access_(peer_access),
    granularity_(drv.vmm_granularity(device)),
    range_size_(round_up(std::min(range_size, MAX_REQUEST), granularity_)) {}

pool_vmm::~pool_vmm() {
    free_live();
    unmap_above(0); // destruction gives everything back, pinned or not
    if (s_.base != 0 && s_.mapped == 0 && release_orphans()) {
        status st = drv_.vmm_unreserve(device_, s_.base, range_size_);
        if (st != OK) {
            say(GGML_CPOOL_LOG_ERROR, "freeing the virtual range failed (%s)", ggml_cpool_status_str(st));
        }
    }
}

status pool_vmm::do_alloc(const request & r, void ** ptr, size_t * actual) {
    const size_t bytes = miss_bytes(r, 0, ALIGNMENT);
    if (GCP_LIKELY(s_.holes == 0 && s_.used + bytes <= s_.mapped)) {
        push(bytes, ptr, actual);
        return OK;
    }
    return alloc_beyond_top(r, bytes, ptr, actual);
}

void pool_vmm::push(size_t bytes, void ** ptr, size_t * actual) {
    // room for the top this lists and the new one, which a free may list later
    ensure_capacity(s_.blocks, s_.blocks.size() + 2);
    list_top();
    s_.top_size = bytes;
    *ptr        = reinterpret_cast<void *>(s_.base + s_.used);
    *actual     = bytes;
    s_.used += bytes;
}

void pool_vmm::list_top() noexcept {
    if (s_.top_size != 0) {
        s_.blocks.push_back({ s_.used - s_.top_size, s_.top_size, false });
        s_.top_size = 0;
    }
}

bool pool_vmm::release_orphans() {
    for (size_t i = orphans_.size(); i-- > 0;) {
        orphan & o = orphans_[i];
        if (o.mapped) {
            o.mapped = drv_.vmm_unmap(device_, s_.base + o.offset, o.size) != OK;
        }
        if (!o.mapped && drv_.vmm_release(device_, o.handle) == OK) {
            if (o.counted) { // its addresses went when it was unmapped
                on_released(o.size);
            }
            orphans_.erase(orphans_.begin() + std::ptrdiff_t(i));
        }
    }
    // one still mapped is retried at the next growth
    return std::none_of(orphans_.begin(), orphans_.end(), [](const orphan & o) { return o.mapped; });
}

status pool_vmm::grow(size_t bytes) {
    // the records it may need, before the driver is asked: a chunk or an orphan, and every chunk's orphan
    ensure_capacity(chunks_, chunks_.size() + 1);
    ensure_capacity(orphans_, orphans_.size() + chunks_.size() + 1);
    // a mapping a failed growth left occupies the range here; undoing it waits for any capture to end
    const bool capture = capturing();
    const bool blocked = std::any_of(orphans_.begin(), orphans_.end(), [](const orphan & o) { return o.mapped; });
    if (blocked && (capture || !release_orphans())) {
        GCP_LOG_ERROR("%s: a failed mapping could not be undone yet; not growing", name());
        return DRIVER_ERROR;
    }
    chunk        c{ s_.mapped, round_up(bytes, granularity_), 0 };
    const char * what = "creating";
    status       st   = drv_.vmm_create(device_, c.size, &c.handle);
    if (st == OK) {
        what              = "mapping";
        st                = drv_.vmm_map(device_, s_.base + c.offset, c.size, c.handle);
        const bool mapped = st == OK;
        if (mapped) {
            what = "granting access to"; // this device, and peers when asked
            st   = drv_.vmm_access(device_, s_.base + c.offset, c.size, device_);
            for (int peer = 0; peer_access_ && st == OK && peer < drv_.device_count(); peer++) {
                if (drv_.can_access_peer(device_, peer)) {
                    st = drv_.vmm_access(device_, s_.base + c.offset, c.size, peer);
                }
            }
        }
        if (st != OK) {
            orphans_.push_back({ c, mapped, false });
        }
    }
    if (st != OK) {
        // an out-of-memory is retried, and the caller's one line reports it if it persists
        say(st == OUT_OF_MEMORY ? GGML_CPOOL_LOG_DEBUG : GGML_CPOOL_LOG_ERROR,
            "%s %.2f MiB of physical memory failed (%s)", what, to_mib(c.size), ggml_cpool_status_str(st));
        if (!capture) { // an unmap during capture would break it: the next growth outside one retries
            release_orphans();
        }
        return st;
    }
    chunks_.push_back(c);
    s_.mapped += c.size;
    on_driver_alloc(c.size);
    return OK;
}

bool pool_vmm::reclaim(ladder & l) {
    // one retry once the stream's work, and other streams' frees, landed
    GCP_LOG_DEBUG("%s: growth by %.2f MiB failed; retrying once after a synchronize", name(), to_mib(l.bytes));
    if (synchronize() != OK) {
        return false; // the failed growth is what the report says
    }
    const bool ended = l.ask();
    GCP_LOG_DEBUG("%s: retry %s", name(), l.st == OK ? "succeeded" : "failed");
    return ended;
}

status pool_vmm::alloc_beyond_top(const request & r, size_t bytes, void ** ptr, size_t * actual) {
    // the list's room for a split hole, before anything is mapped for the block (may throw)
    ensure_capacity(s_.blocks, s_.blocks.size() + 2);
    // the smallest hole that holds it, split when larger
    auto hole = s_.holes == 0 ? s_.blocks.end() :
                                smallest_holding(s_.blocks.begin(), s_.blocks.end(), bytes,
                                                 [](const block & b) { return b.freed; });
    if (hole != s_.blocks.end()) {
        *ptr    = reinterpret_cast<void *>(s_.base + hole->offset);
        *actual = bytes;
        if (hole->size == bytes) {
            hole->freed = false;
            s_.holes--;
        } else { // the rest of the hole stays one (within the room made above: cannot throw)
            hole->offset += bytes;
            hole->size -= bytes;
            s_.blocks.insert(hole, { hole->offset - bytes, bytes, false });
        }
        return OK;
    }
    if (s_.base == 0) {
        status st = drv_.vmm_reserve(device_, range_size_, &s_.base);
        if (st != OK) {
            s_.base = 0;
            say(GGML_CPOOL_LOG_ERROR, "reserving a virtual range of %.2f MiB failed (%s)", to_mib(range_size_),
                ggml_cpool_status_str(st));
            return st;
        }
    }
    // a growing request whose doubling is refused takes its own size, before the retries that only wait
    const bool doubled = round_up(r.size, ALIGNMENT) < bytes;
    const auto alone = [&] { return fell_back(do_alloc(request{ r.size, 0, 0 }, ptr, actual), bytes, r.size, actual); };
    if (bytes > range_size_ - s_.used) {
        if (doubled) {
            return alone();
        }
        GCP_LOG_WARN("%s: alloc of %.2f MiB exceeds the virtual range (%.2f of %.2f MiB in use)", name(), to_mib(bytes),
                     to_mib(s_.used), to_mib(range_size_));
        return OUT_OF_MEMORY;
    }
    if (s_.used + bytes > s_.mapped) {
        asking();
        ladder l(*this, round_up(s_.used + bytes - s_.mapped, granularity_), nullptr,
                 [](pool & p, ladder & at) { return static_cast<pool_vmm &>(p).grow(at.bytes); });
        if (!l.ask() && doubled) {
            return alone();
        }
        if (l.st == OUT_OF_MEMORY && capturing()) {
            l.wait() || l.refused_in_capture();
        } else if (l.st == OUT_OF_MEMORY && !(reclaim(l) || l.retry_transient() || l.wait())) {
            GCP_LOG_WARN("%s: alloc of %.2f MiB failed: growing by %.2f MiB is refused, out of memory (%.2f MiB "
                         "mapped, %.2f MiB live), also after a synchronize and %d retries after a pause",
                         name(), to_mib(bytes), to_mib(l.bytes), to_mib(s_.mapped), to_mib(hot_.live_bytes),
                         TRANSIENT_RETRIES);
        }
        if (l.st != OK) {
            return l.st; // a failure other than a refusal: grow's line said why
        }
    }
    push(bytes, ptr, actual);
    return OK;
}

std::vector<pool_vmm::block>::iterator pool_vmm::live_block(const void * ptr) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(ptr);
    if (s_.blocks.empty() || addr < s_.base) {
        return s_.blocks.end();
    }
    const size_t offset = addr - s_.base;
    auto         it     = std::lower_bound(s_.blocks.begin(), s_.blocks.end(), offset,
                                           [](const block & b, size_t off) { return b.offset < off; });
    return it != s_.blocks.end() && it->offset == offset && !it->freed ? it : s_.blocks.end();
}

bool pool_vmm::do_free(void * ptr, size_t actual) noexcept {
    // ggml's free, of the top block with no hole below it: on this line, without a search
    if (GCP_LIKELY(s_.top_size != 0 && actual == s_.top_size && s_.holes == 0 &&
                   reinterpret_cast<uintptr_t>(ptr) == s_.base + s_.used - actual)) {
        s_.used -= actual;
        s_.top_size = 0; // the new top, if any, is the list's last
        return true;
    }
    return free_block(ptr, actual);
}

bool pool_vmm::free_block(void * ptr, size_t actual) noexcept {
    list_top(); // every block in the list, for the search and the merges below
    auto it = live_block(ptr);
    if (it == s_.blocks.end() || it->size != actual) {
        return false;
    }
    it->freed = true;
    s_.holes++;
    // one hole with its freed neighbours (erasing needs no memory)
    if (std::next(it) != s_.blocks.end() && std::next(it)->freed) {
        it->size += std::next(it)->size;
        s_.blocks.erase(std::next(it));
        s_.holes--;
    }
    if (it != s_.blocks.begin() && std::prev(it)->freed) {
        std::prev(it)->size += it->size;
        s_.blocks.erase(it);
        s_.holes--;
    }
    while (!s_.blocks.empty() && s_.blocks.back().freed) {
        s_.used = s_.blocks.back().offset;
        s_.blocks.pop_back();
        s_.holes--;
    }
    return true;
}

bool pool_vmm::live_buffer(const void * ptr, held_buffer * out) const {
    if (ptr == nullptr) { // any one: the top block, live since holes never stay on top
        out->size = s_.top_size != 0 || s_.blocks.empty() ? s_.top_size : s_.blocks.back().size;
        out->ptr  = reinterpret_cast<void *>(s_.base + s_.used - out->size);
        return out->size != 0;
    }
    const bool top = s_.top_size != 0 && reinterpret_cast<uintptr_t>(ptr) == s_.base + s_.used - s_.top_size;
    auto       it  = const_cast<pool_vmm *>(this)->live_block(ptr);
    *out           = { const_cast<void *>(ptr), top ? s_.top_size : it != s_.blocks.end() ? it->size : 0 };
    return out->size != 0;
}

status pool_vmm::do_trim() {
    // nothing a captured graph still uses is unmapped, even below the stack top
    uintptr_t top = pinned_top();
    return unmap_above(std::max(s_.used, top > s_.base ? size_t(top - s_.base) : size_t(0)));
}

status pool_vmm::unmap_above(size_t floor) {
    release_orphans();
    while (!chunks_.empty() && chunks_.back().offset >= floor) {
        const chunk c  = chunks_.back();
        status      st = drv_.vmm_unmap(device_, s_.base + c.offset, c.size);
        if (st != OK) {
            say(GGML_CPOOL_LOG_ERROR, "unmapping %.2f MiB failed (%s); kept mapped", to_mib(c.size),
                ggml_cpool_status_str(st));
            return DRIVER_ERROR;
        }
        chunks_.pop_back();
        s_.mapped -= c.size;
        on_addresses_gone(); // whether or not the release below succeeds, the addresses fault now
        if (drv_.vmm_release(device_, c.handle) != OK) {
            // still the driver's memory held for this pool: reserved until the retry releases it
            say(GGML_CPOOL_LOG_ERROR, "releasing %.2f MiB of physical memory failed; will retry", to_mib(c.size));
            orphans_.push_back({ c, false, true }); // within the room grow made
        } else {
            on_released(c.size);
        }
    }
    return orphans_.empty() ? OK : DRIVER_ERROR;
}

} // namespace gcp
