#pragma once
// The fault-injection spec (GGML_CUDA_POOL_FAULT or ggml_cpool_driver_fault_create), terms
// separated by ';':
//   oneshot=<size>        the first call that takes device memory (GGML_CPOOL_CALLS: MEMORY), of
//                         at least size, made while its pool holds memory it could free (cached
//                         buffers, unused mapped or pooled memory: driver.h's reclaim_scope), fails
//                         once, so the recovery it tests has something to recover
//   oneshot-any=<size>    the same at the first such call, whatever the pool holds
//   fail=<call>:<k>       the k-th call of that kind fails; <k>+ fails it and every later one
//   prob=<p>              each call fails with probability p ...
//   on=<call>             ... of this kind only (default: any)
//   seed=<n>              ... drawn from this seed (default 1)
//   limit=<n>             at most n faults fire in all
//   while=<path>          a window opened and closed from outside: the terms above fire only
//                         while the file <path> exists; alone, every call that takes device
//                         memory fails while it exists (a server's fault window, opened by
//                         creating the file and closed by removing it)
// <call> is a name from GGML_CPOOL_CALLS (ggml-cuda-pool-calls.h) or any; numbers are plain
// decimals (no sign, no space); <size> is a number with an optional unit B, KiB, MiB, GiB (or K,
// M, G; KB, MB, GB as powers of 2).

#include "common.h"

#include <string>
#include <vector>

namespace gcp {

constexpr int ANY_CALL = -1;

struct fault_spec {
    struct nth {
        int      kind; // a call, or ANY_CALL
        uint64_t k;    // 1-based
        bool     and_later;
    };

    bool             oneshot     = false;
    bool             oneshot_any = false; // oneshot-any: also when the pool has nothing to give back
    size_t           oneshot_at  = 0;
    std::vector<nth> nths;
    double           prob      = 0.0;
    int              prob_kind = ANY_CALL;
    uint64_t         seed      = 1;
    uint64_t         limit     = UINT64_MAX;
    std::string      window; // while=: the file whose existence opens the window

    // the terms that choose calls (while= only gates them)
    bool chooses() const { return oneshot || !nths.empty() || prob > 0.0; }
    bool empty() const { return !chooses() && window.empty(); }
};

// an empty or NULL text is an empty spec; a malformed one is INVALID_ARGUMENT and one log line
// that names where the text came from and what follows from the refusal
status parse_fault_spec(const char * text, fault_spec * out, const char * source = "fault spec",
                        const char * outcome = "no faults armed");

// the same with no line: false, and the term it cannot read in *bad_term, for a malformed text
bool read_fault_spec(const char * text, fault_spec * out, std::string * bad_term);

// "2.36MiB" -> bytes; false when malformed
bool parse_size(const char * text, size_t * out);

} // namespace gcp
