#pragma once
// The fault-injection spec (GGML_CUDA_POOL_FAULT or ggml_cpool_driver_fault_create): terms separated
// by ';', each key=value; docs/fault-injection.md gives the grammar.

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
    bool             oneshot_any = false; // oneshot-any: also at the device's first allocation
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

// an empty or NULL text is an empty spec; a malformed one is INVALID_ARGUMENT and a line that says `outcome`
status parse_fault_spec(const char * text, fault_spec * out, const char * outcome = "no faults armed");

// the same with no line: false, and the term it cannot read in *bad_term, for a malformed text
bool read_fault_spec(const char * text, fault_spec * out, std::string * bad_term);

} // namespace gcp
