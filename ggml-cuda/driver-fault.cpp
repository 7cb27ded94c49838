#include "driver-fault.h"

#include "log.h"

namespace gcp {

void fault_driver::arm(const fault_spec & spec) {
    fault_spec                  copy = spec; // may throw: the armed spec stays whole until here
    std::lock_guard<std::mutex> lock(mutex_);
    spec_ = std::move(copy);
    rng_.seed(spec.seed);
    std::fill(std::begin(seen_), std::end(seen_), 0);
    seen_any_     = 0;
    fired_        = 0;
    oneshot_done_ = false;
}

uint64_t fault_driver::fired() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fired_;
}

status fault_driver::inject(call c, int device, size_t size) {
    log_hold                    hold; // lines said under the lock go out once it is released
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t              nth     = ++seen_[size_t(c)];
    const uint64_t              nth_any = ++seen_any_;
    if (spec_.empty() || fired_ >= spec_.limit) {
        return OK;
    }
    const status fail = call_takes(c) != takes::NOTHING ? OUT_OF_MEMORY : DRIVER_ERROR;
    const pool_label name(inner_->platform(), device);

    if (spec_.oneshot && !oneshot_done_ && call_takes(c) == takes::MEMORY && size >= spec_.oneshot_at) {
        oneshot_done_ = true;
        fired_++;
        GCP_LOG_INFO("%s: injected one-shot reclaim test at %.2f MiB", name.c_str(), to_mib(size));
        return fail;
    }
    for (const fault_spec::nth & n : spec_.nths) {
        uint64_t count = n.kind == ANY_CALL ? nth_any : nth;
        if ((n.kind == ANY_CALL || n.kind == int(c)) && (count == n.k || (n.and_later && count > n.k))) {
            fired_++;
            GCP_LOG_INFO("%s: injected fault: %s call %llu fails (%s)", name.c_str(), call_name(ggml_cpool_call(c)),
                         (unsigned long long) nth, status_name(fail));
            return fail;
        }
    }
    if (spec_.prob > 0.0 && (spec_.prob_kind == ANY_CALL || spec_.prob_kind == int(c)) &&
        std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < spec_.prob) {
        fired_++;
        GCP_LOG_INFO("%s: injected fault: %s call %llu fails with probability %g (seed %llu, %s)", name.c_str(),
                     call_name(ggml_cpool_call(c)), (unsigned long long) nth, spec_.prob, (unsigned long long) spec_.seed,
                     status_name(fail));
        return fail;
    }
    return OK;
}

status fault_driver::do_malloc(int device, size_t size, void ** ptr) {
    return through(call::MALLOC, device, size, [&] { return inner_->malloc(device, size, ptr); });
}

status fault_driver::do_free(int device, void * ptr) {
    return through(call::FREE, device, 0, [&] { return inner_->free(device, ptr); });
}

status fault_driver::do_synchronize(int device) {
    return through(call::SYNCHRONIZE, device, 0, [&] { return inner_->synchronize(device); });
}

status fault_driver::do_vmm_reserve(int device, size_t size, uintptr_t * addr) {
    return through(call::VMM_RESERVE, device, 0, [&] { return inner_->vmm_reserve(device, size, addr); });
}

status fault_driver::do_vmm_unreserve(int device, uintptr_t addr, size_t size) {
    return through(call::VMM_UNRESERVE, device, 0, [&] { return inner_->vmm_unreserve(device, addr, size); });
}

status fault_driver::do_vmm_create(int device, size_t size, vmm_handle * handle) {
    return through(call::VMM_CREATE, device, size, [&] { return inner_->vmm_create(device, size, handle); });
}

status fault_driver::do_vmm_release(int device, vmm_handle handle) {
    return through(call::VMM_RELEASE, device, 0, [&] { return inner_->vmm_release(device, handle); });
}

status fault_driver::do_vmm_map(int device, uintptr_t addr, size_t size, vmm_handle handle) {
    return through(call::VMM_MAP, device, 0, [&] { return inner_->vmm_map(device, addr, size, handle); });
}

status fault_driver::do_vmm_unmap(int device, uintptr_t addr, size_t size) {
    return through(call::VMM_UNMAP, device, 0, [&] { return inner_->vmm_unmap(device, addr, size); });
}

status fault_driver::do_vmm_access(int device, uintptr_t addr, size_t size, int accessor) {
    return through(call::VMM_ACCESS, device, 0, [&] { return inner_->vmm_access(device, addr, size, accessor); });
}

status fault_driver::do_stream_create(int device, stream_t * stream) {
    return through(call::STREAM, device, 0, [&] { return inner_->stream_create(device, stream); });
}

status fault_driver::do_stream_destroy(int device, stream_t stream) {
    return through(call::STREAM, device, 0, [&] { return inner_->stream_destroy(device, stream); });
}

status fault_driver::do_malloc_async(int device, size_t size, stream_t stream, void ** ptr) {
    return through(call::MALLOC_ASYNC, device, size, [&] { return inner_->malloc_async(device, size, stream, ptr); });
}

status fault_driver::do_free_async(int device, void * ptr, stream_t stream) {
    return through(call::FREE_ASYNC, device, 0, [&] { return inner_->free_async(device, ptr, stream); });
}

status fault_driver::do_stream_synchronize(int device, stream_t stream) {
    return through(call::STREAM_SYNC, device, 0, [&] { return inner_->stream_synchronize(device, stream); });
}

status fault_driver::do_pool_threshold(int device, uint64_t * threshold) {
    return through(call::POOL_ATTR, device, 0, [&] { return inner_->pool_threshold(device, threshold); });
}

status fault_driver::do_pool_set_threshold(int device, uint64_t threshold) {
    return through(call::POOL_ATTR, device, 0, [&] { return inner_->pool_set_threshold(device, threshold); });
}

status fault_driver::do_pool_reuse(int device, uint32_t * policies) {
    return through(call::POOL_ATTR, device, 0, [&] { return inner_->pool_reuse(device, policies); });
}

status fault_driver::do_pool_set_reuse(int device, uint32_t policies) {
    return through(call::POOL_ATTR, device, 0, [&] { return inner_->pool_set_reuse(device, policies); });
}

status fault_driver::do_pool_usage(int device, size_t * reserved, size_t * used) {
    return through(call::POOL_ATTR, device, 0, [&] { return inner_->pool_usage(device, reserved, used); });
}

status fault_driver::do_pool_trim(int device, size_t keep) {
    return through(call::POOL_TRIM, device, 0, [&] { return inner_->pool_trim(device, keep); });
}

} // namespace gcp
