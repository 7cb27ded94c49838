#pragma once

// ggml-cuda-pool: device-memory pools of a ggml-style CUDA/HIP backend.
// A context (one per ggml backend context) owns one pool per device; a pool hands out scratch buffers and calls
// the driver only on a miss. No call aborts or throws: every failure is a status and a log line.
// What tests and tools use besides (the sim driver's parameters, fault injection, call counters,
// leak checks) is in ggml-cuda-pool-testing.h.

#include "ggml-cuda-pool-options.h"

#include <stddef.h>
#include <stdint.h>

#ifdef GGML_CPOOL_SHARED
#    if defined(_WIN32) && !defined(__MINGW32__)
#        ifdef GGML_CPOOL_BUILD
#            define GGML_CPOOL_API __declspec(dllexport) extern
#        else
#            define GGML_CPOOL_API __declspec(dllimport) extern
#        endif
#    else
#        define GGML_CPOOL_API __attribute__((visibility("default"))) extern
#    endif
#else
#    define GGML_CPOOL_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GGML_CPOOL_MAX_DEVICES 16
// consumer stream slots per device, each with a pool of its own (ggml keeps up to 8 streams a device)
#define GGML_CPOOL_MAX_STREAMS 8

// alloc flag: the caller expects this request to keep growing (flash-attention K/V f16
// conversion buffers grow with the context), so a miss allocates 2x for headroom
#define GGML_CPOOL_ALLOC_OVERALLOCATE 1u

// ggml_cpool_ctx_params.headroom_pct: keep every cached buffer, whatever the pool then holds
#define GGML_CPOOL_HEADROOM_UNLIMITED 0xFFFFFFFFu

// clang-format off
typedef struct ggml_cpool_driver * ggml_cpool_driver_t;
typedef struct ggml_cpool_ctx    * ggml_cpool_ctx_t;
typedef struct ggml_cpool        * ggml_cpool_t;

enum ggml_cpool_status {
    GGML_CPOOL_STATUS_OK               = 0,
    GGML_CPOOL_STATUS_OUT_OF_MEMORY    = 1,
    GGML_CPOOL_STATUS_INVALID_ARGUMENT = 2,
    GGML_CPOOL_STATUS_DRIVER_ERROR     = 3,
    GGML_CPOOL_STATUS_UNSUPPORTED      = 4,
};

enum ggml_cpool_kind {
    GGML_CPOOL_KIND_AUTO   = 0, // VMM where supported and not disabled, else legacy
    GGML_CPOOL_KIND_VMM    = 1, // reserved virtual range, physical memory mapped as it grows
    GGML_CPOOL_KIND_LEGACY = 2, // cached whole buffers, best fit, LRU reclaim on out-of-memory
    GGML_CPOOL_KIND_PLAIN  = 3, // cached whole buffers, flush everything and retry once on out-of-memory
    GGML_CPOOL_KIND_ASYNC  = 4, // the driver's stream-ordered pool, kept warm (CUDA only)
    GGML_CPOOL_KIND_COUNT,      // the number of kinds, not a kind
};

enum ggml_cpool_driver_kind {
    GGML_CPOOL_DRIVER_CUDA = 0, // the real device through the CUDA (or HIP) runtime
    GGML_CPOOL_DRIVER_SIM  = 1, // host memory that behaves like a device (parameters: ggml-cuda-pool-testing.h)
};

// the sim driver's parameters (ggml-cuda-pool-testing.h); NULL where a call takes one: the defaults
struct ggml_cpool_sim_params;

enum ggml_cpool_log_level {
    GGML_CPOOL_LOG_DEBUG = 0,
    GGML_CPOOL_LOG_INFO  = 1,
    GGML_CPOOL_LOG_WARN  = 2,
    GGML_CPOOL_LOG_ERROR = 3,
};

struct ggml_cpool_ctx_params {
    enum ggml_cpool_driver_kind          driver_kind;
    const struct ggml_cpool_sim_params * sim;          // optional, when driver_kind is SIM (read at creation)
    ggml_cpool_driver_t                  driver;       // optional: share this driver instead (several contexts on one device)
    enum ggml_cpool_kind                 kind[GGML_CPOOL_MAX_DEVICES]; // AUTO leaves the choice to the environment
    size_t                               vmm_reserve;  // virtual range reserved per VMM pool, bytes
    int                                  vmm_peer_access; // VMM pools also map their memory for every peer device that can reach it
    // optional: the consumer's streams to borrow (cudaStream_t), per device and slot; NULL: the
    // context creates a stream of its own for that slot when it needs one
    void *                               streams[GGML_CPOOL_MAX_DEVICES][GGML_CPOOL_MAX_STREAMS];
    // what a pool may hold beyond the most it has had live at once, in percent (default 25):
    // before a miss takes more from the driver, least-recently-used cached buffers go back to
    // keep within it (legacy, plain and async kinds; a VMM pool holds its stack and no more)
    uint32_t                             headroom_pct;
    // how long a refused allocation waits for the device's memory to come back, polling it, before
    // OUT_OF_MEMORY, in milliseconds (default 0: no wait; the llama.cpp adapter reads
    // GGML_CUDA_POOL_WAIT_MS)
    uint32_t                             wait_ms;
    // 1 (default): the pools give idle memory to the other processes that use the module on their
    // device, and ask theirs when the device is full (docs/neighbours.md); 0: neither.
    // GGML_CUDA_POOL_NEIGHBOURS, where it is set, decides instead
    int                                  neighbours;
};

struct ggml_cpool_stats {
    size_t   live_bytes;         // handed out and not yet freed
    size_t   cached_bytes;       // held for reuse
    size_t   reserved_bytes;     // taken from the driver (== live + cached)
    size_t   peak_live_bytes;
    size_t   peak_reserved_bytes;
    uint64_t allocs;
    uint64_t hits;               // served without asking the driver for memory (allocs - misses)
    uint64_t misses;             // served after asking the driver for memory, refused or not
    uint64_t driver_allocs;      // driver allocations (legacy) or mappings (vmm)
    uint64_t driver_frees;
    uint64_t lru_reclaims;       // out-of-memory recoveries by freeing least-recently-used buffers
    size_t   lru_reclaimed_bytes;
    uint64_t flushes;            // out-of-memory recoveries by freeing everything cached (async: trimming the device pool)
    uint64_t oom_returned;       // OUT_OF_MEMORY statuses returned to the caller
    uint64_t generation;         // moves whenever the pool returns memory to the driver
    uint64_t call_ns;            // time inside this pool's alloc, free and trim calls while timing is on
    uint64_t synchronizes;       // waits for the pool's stream (or device) before memory moved or was retried
    uint64_t waits;              // refused allocations that waited for memory to come back (wait_ms)
    uint64_t waits_served;       // of those, the ones served once memory came back
    uint64_t wait_ns;            // time spent waiting
    uint64_t neighbour_asks;     // refusals that asked the other processes on the device for memory
    size_t   neighbour_received_bytes; // what they gave back to those asks
    uint64_t neighbour_ask_ns;   // time from asking to served, or to refused
    uint64_t neighbour_gives;    // gives of idle memory to another process's ask
    size_t   neighbour_given_bytes;
};
// clang-format on

// a row of the options table as ggml_cpool_option_read reads it (ggml-cuda-pool-options.h: the rule)
struct ggml_cpool_option_value {
    int          set;          // 0: unset or empty, the row's default (and every field below 0 or NULL)
    int          on;           // BOOLEAN: 1 for a true word, 0 for a false one; OUTPUT: 0 for a false word, else 1
    int          count;        // LIST: its entries (ggml_cpool_option_entry gives each one's word)
    const char * word;         // WORD: the word of the row's values that the text names, as the table spells it
    const char * path;         // WRITABLE, PATH: the text; OUTPUT: the file (NULL: stderr, or nowhere)
    const char * text;         // the variable's text, valid while the environment keeps it
    uint32_t     milliseconds; // MILLISECONDS: the count
};

typedef void (*ggml_cpool_log_callback)(enum ggml_cpool_log_level level, const char * text, void * user_data);

// clang-format off
// drivers: reference counted; a context keeps the driver it uses alive (sim: optional, for the SIM kind)
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_create (enum ggml_cpool_driver_kind kind, const struct ggml_cpool_sim_params * sim, ggml_cpool_driver_t * out);
GGML_CPOOL_API void                         ggml_cpool_driver_release(ggml_cpool_driver_t driver);
GGML_CPOOL_API int                          ggml_cpool_driver_device_count(ggml_cpool_driver_t driver);

// contexts: one per ggml backend context; pools are created lazily per device and belong to the context alone
GGML_CPOOL_API struct ggml_cpool_ctx_params ggml_cpool_ctx_default_params(void);
// INVALID_ARGUMENT, with its line, where a row of ggml-cuda-pool-options.h has a bad value, whichever component reads it
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_ctx_create (const struct ggml_cpool_ctx_params * params, ggml_cpool_ctx_t * out);
GGML_CPOOL_API void                         ggml_cpool_ctx_free   (ggml_cpool_ctx_t ctx); // releases every device's memory
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_ctx_get_pool(ggml_cpool_ctx_t ctx, int device, ggml_cpool_t * out);
GGML_CPOOL_API ggml_cpool_driver_t          ggml_cpool_ctx_driver (ggml_cpool_ctx_t ctx); // borrowed
// consumer streams: the pool of (device, slot) synchronizes, checks capture and orders its
// stream-ordered calls on that slot's stream, the one the consumer launches its kernels on.
// set_stream borrows a consumer's stream (never destroyed by the module; NULL gives the slot a
// stream of the context's own); a slot whose pool already exists switches after its previous
// stream is synchronized. Destroying the context synchronizes every stream before memory goes back.
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_ctx_set_stream   (ggml_cpool_ctx_t ctx, int device, int slot, void * stream);
// the pool of (device, slot), created on first use; ggml_cpool_ctx_get_pool is slot 0
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_ctx_get_slot_pool(ggml_cpool_ctx_t ctx, int device, int slot, ggml_cpool_t * out);
// the stream of (device, 0): the borrowed one, or the context's own, created on first use
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_ctx_stream (ggml_cpool_ctx_t ctx, int device, void ** stream);

// CUDA graphs: a graph captured on the context's stream keeps using the scratch buffers it was
// captured with. The generation moves whenever a pool of the context returns memory to the
// driver: recapture when it moved. Pin mode keeps a graph's buffers from reclaim and trim:
// buffers handed out between pin_begin and pin_end belong to the returned graph until
// pin_release (call it when the graph is destroyed).
GGML_CPOOL_API uint64_t                     ggml_cpool_ctx_generation (ggml_cpool_ctx_t ctx);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_ctx_pin_begin  (ggml_cpool_ctx_t ctx, uint64_t * graph);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_ctx_pin_end    (ggml_cpool_ctx_t ctx);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_ctx_pin_release(ggml_cpool_ctx_t ctx, uint64_t graph);
// declared captures: a consumer that says when the pool's stream begins (1, just before
// cudaStreamBeginCapture) and ends a capture (0, once it ended) spares the pool's hit path a
// capture query at every call (the async kind's); what may synchronize or free at once (recovery,
// trim, a stream switch) still asks the driver. -1 goes back to asking at every call. A capture
// left undeclared is then served as eager work and breaks: declare every capture of the stream, or none
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_declare_capture(ggml_cpool_t pool, int capturing);
// a stream of the driver's device, for a consumer that has none (any driver, the sim one included)
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_stream_create (ggml_cpool_driver_t driver, int device, void ** stream);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_driver_stream_destroy(ggml_cpool_driver_t driver, int device, void * stream);

// quarantine: a context destroyed while a captured graph still pins some of its memory, or while
// a stream's synchronize fails, keeps that memory here instead of freeing it (one log line says
// why). quarantine_release synchronizes each device and frees what is held (call it once the
// graphs are gone); what still fails to synchronize stays.
GGML_CPOOL_API void                         ggml_cpool_quarantine_stats  (size_t * bytes, size_t * pools);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_quarantine_release(void);

// pools
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_alloc     (ggml_cpool_t pool, size_t size, uint32_t flags, void ** ptr, size_t * actual_size);
// a growing request (OVERALLOCATE) whose buffer never needs more than `limit` bytes (0: no bound):
// a miss takes min(2 x size, limit), and at least size
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_alloc_growing(ggml_cpool_t pool, size_t size, size_t limit, void ** ptr, size_t * actual_size);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_free      (ggml_cpool_t pool, void * ptr, size_t actual_size);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_get_stats (ggml_cpool_t pool, struct ggml_cpool_stats * out);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_trim      (ggml_cpool_t pool); // return cached memory to the driver
GGML_CPOOL_API uint64_t                     ggml_cpool_generation(ggml_cpool_t pool);
GGML_CPOOL_API enum ggml_cpool_kind         ggml_cpool_get_kind  (ggml_cpool_t pool); // the kind in effect
GGML_CPOOL_API int                          ggml_cpool_get_device(ggml_cpool_t pool);

// tracing (docs/trace-and-replay.md): every later call into the module, one line each, to `path`;
// GGML_CUDA_POOL_TRACE=<file> starts it at the first context creation. stop flushes and closes
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_trace_start(const char * path);
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_trace_stop (void);
// timing: the time spent inside each pool's calls goes to ggml_cpool_stats.call_ns (also while a
// trace records); GGML_CUDA_POOL_TIMING=1 turns it on at the first context creation
GGML_CPOOL_API void                         ggml_cpool_timing_set (int on);

// logging: every line goes to the callback; the default prints GGML_CUDA_POOL_LOG level and above to stderr
GGML_CPOOL_API void                         ggml_cpool_log_set   (ggml_cpool_log_callback callback, void * user_data);
// the level GGML_CUDA_POOL_LOG asks for (warn by default): what a forwarding callback should pass on
GGML_CPOOL_API enum ggml_cpool_log_level    ggml_cpool_log_threshold(void);
// the calling thread's last warning or error line, without its newline ("" when there is none)
GGML_CPOOL_API const char *                 ggml_cpool_last_error(void);
GGML_CPOOL_API const char *                 ggml_cpool_status_str(enum ggml_cpool_status status);
GGML_CPOOL_API const char *                 ggml_cpool_kind_str  (enum ggml_cpool_kind kind);
// the kind a name says, in any case: the names ggml_cpool_kind_str gives, which GGML_CUDA_POOL
// takes. Any other name: INVALID_ARGUMENT and *kind untouched, with no log line (the caller names
// what it was reading); a NULL argument: INVALID_ARGUMENT and a line
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_kind_from_str(const char * name, enum ggml_cpool_kind * kind);

// the environment: every row of ggml-cuda-pool-options.h by its one rule, for the module and its
// integrations alike; a bad value is INVALID_ARGUMENT and leaves *value as unset.
// the row now; a bad value says one line; a file the value names is opened for appending (and closed): refused now if it cannot be
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_option_read (enum ggml_cpool_option option, struct ggml_cpool_option_value * value);
// the row now, with no line and no file opened: for a choice made before the reading that reports
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_option_peek (enum ggml_cpool_option option, struct ggml_cpool_option_value * value);
// the word of entry `index` of a LIST row's text, as the table spells it; NULL past the last entry
GGML_CPOOL_API const char *                 ggml_cpool_option_entry(enum ggml_cpool_option option, const char * text, int index);
// every row read now (ggml_cpool_option_read), one line per bad value: INVALID_ARGUMENT when there was one
GGML_CPOOL_API enum ggml_cpool_status       ggml_cpool_options_check(void);
// clang-format on

#ifdef __cplusplus
}
#endif
