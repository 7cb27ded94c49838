// The leak ledger (testing/ledger.h): the record, and the decorators over a device's primitives,
// its virtual memory and its stream-ordered pool that keep it.

#include "ledger.h"

#include "../support/log.h"

namespace gcp {

void ledger::track(kind k, uintptr_t key, int device, size_t size, ggml_cpool_platform platform) noexcept {
    log_hold                    hold; // the line goes out once the lock is released
    std::lock_guard<std::mutex> lock(mutex_);
    try {
        held_[k][key] = { device, size };
    } catch (...) {
        GCP_LOG_ERROR("%s: no host memory to record an allocation for the leak check",
                      pool_label(platform, device).c_str());
    }
}

void ledger::untrack(kind k, uintptr_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_[k].erase(key);
}

size_t ledger::pieces() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t                      n = 0;
    for (auto & map : held_) {
        n += map.size();
    }
    return n;
}

size_t ledger::bytes(int device) const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t                      n = 0;
    for (auto & map : held_) {
        for (auto & p : map) {
            n += p.second.device == device ? p.second.size : 0; // a range counts 0: no memory behind it
        }
    }
    return n;
}

namespace {

// the books of one set of primitives, and what their decorators record a piece with
struct books {
    device_primitives & below;
    ledger              held;

    void track(ledger::kind k, uintptr_t key, int device, size_t size) noexcept {
        held.track(k, key, device, size, below.platform());
    }
};

// the virtual memory of the primitives below (asked per call: a device's may differ)
class ledger_vmm final : public vmm_primitives {
  public:
    explicit ledger_vmm(books & b) : b_(b) {}

    size_t granularity(int device) const override { return b_.below.vmm(device)->granularity(device); }
    status reserve(int device, size_t size, uintptr_t * addr) override {
        status st = b_.below.vmm(device)->reserve(device, size, addr);
        if (st == OK) {
            b_.track(ledger::RANGES, *addr, device, 0);
        }
        return st;
    }
    status unreserve(int device, uintptr_t addr, size_t size) override {
        status st = b_.below.vmm(device)->unreserve(device, addr, size);
        if (st == OK) {
            b_.held.untrack(ledger::RANGES, addr);
        }
        return st;
    }
    status create(int device, size_t size, vmm_handle * handle) override {
        status st = b_.below.vmm(device)->create(device, size, handle);
        if (st == OK) {
            b_.track(ledger::HANDLES, uintptr_t(*handle), device, size);
        }
        return st;
    }
    status release(int device, vmm_handle handle) override {
        status st = b_.below.vmm(device)->release(device, handle);
        if (st == OK) {
            b_.held.untrack(ledger::HANDLES, uintptr_t(handle));
        }
        return st;
    }
    status map(int device, uintptr_t addr, size_t size, vmm_handle handle) override {
        return b_.below.vmm(device)->map(device, addr, size, handle);
    }
    status unmap(int device, uintptr_t addr, size_t size) override {
        return b_.below.vmm(device)->unmap(device, addr, size);
    }
    status access(int device, uintptr_t addr, size_t size, int accessor) override {
        return b_.below.vmm(device)->access(device, addr, size, accessor);
    }

  private:
    books & b_;
};

// the stream-ordered pool of the primitives below
class ledger_mempool final : public mempool_primitives {
  public:
    explicit ledger_mempool(books & b) : b_(b) {}

    status malloc_async(int device, size_t size, stream_t stream, void ** ptr) override {
        status st = b_.below.mempool(device)->malloc_async(device, size, stream, ptr);
        if (st == OK) {
            b_.track(ledger::ASYNC_ALLOCATIONS, reinterpret_cast<uintptr_t>(*ptr), device, size);
        }
        return st;
    }
    status free_async(int device, void * ptr, stream_t stream) override {
        status st = b_.below.mempool(device)->free_async(device, ptr, stream);
        if (st == OK) {
            b_.held.untrack(ledger::ASYNC_ALLOCATIONS, reinterpret_cast<uintptr_t>(ptr));
        }
        return st;
    }
    status get_attr(int device, mempool_attr attr, uint64_t * value) override {
        return b_.below.mempool(device)->get_attr(device, attr, value);
    }
    status set_attr(int device, mempool_attr attr, uint64_t value) override {
        return b_.below.mempool(device)->set_attr(device, attr, value);
    }
    status trim(int device, size_t keep) override { return b_.below.mempool(device)->trim(device, keep); }

  private:
    books & b_;
};

class ledger_primitives final : public device_primitives {
  public:
    explicit ledger_primitives(std::shared_ptr<device_primitives> below) :
        below_(std::move(below)),
        books_{ *below_, {} },
        vmm_(books_),
        mempool_(books_) {}

    ggml_cpool_platform platform() const override { return below_->platform(); }
    int                 device_count() const override { return below_->device_count(); }

    status malloc(int device, size_t size, void ** ptr) override {
        status st = below_->malloc(device, size, ptr);
        if (st == OK) {
            books_.track(ledger::ALLOCATIONS, reinterpret_cast<uintptr_t>(*ptr), device, size);
        }
        return st;
    }
    status free(int device, void * ptr) override {
        status st = below_->free(device, ptr);
        if (st == OK) {
            books_.held.untrack(ledger::ALLOCATIONS, reinterpret_cast<uintptr_t>(ptr));
        }
        return st;
    }
    status synchronize(int device) override { return below_->synchronize(device); }

    status stream_create(int device, stream_t * stream) override { return below_->stream_create(device, stream); }
    status stream_destroy(int device, stream_t stream) override { return below_->stream_destroy(device, stream); }
    status stream_synchronize(int device, stream_t stream) override {
        return below_->stream_synchronize(device, stream);
    }
    status stream_capturing(int device, stream_t stream, bool * capturing) override {
        return below_->stream_capturing(device, stream, capturing);
    }
    bool can_access_peer(int device, int peer) const override { return below_->can_access_peer(device, peer); }

    vmm_primitives *     vmm(int device) override { return below_->vmm(device) ? &vmm_ : nullptr; }
    mempool_primitives * mempool(int device) override { return below_->mempool(device) ? &mempool_ : nullptr; }

    size_t outstanding() const override { return books_.held.pieces(); }
    size_t used(int device) const override { return books_.held.bytes(device); }

    bool         error_latched() const override { return below_->error_latched(); }
    void         clear_error() override { below_->clear_error(); }
    const void * identity() const override { return below_->identity(); }
    uint32_t     transient_pause_us() const override { return below_->transient_pause_us(); }
    status       free_memory(int device, size_t * free) override { return below_->free_memory(device, free); }

  private:
    std::shared_ptr<device_primitives> below_;
    books                              books_;
    ledger_vmm                         vmm_;
    ledger_mempool                     mempool_;
};

} // namespace

std::shared_ptr<device_primitives> make_ledger_primitives(std::shared_ptr<device_primitives> prims) {
    return std::make_shared<ledger_primitives>(std::move(prims));
}

} // namespace gcp
