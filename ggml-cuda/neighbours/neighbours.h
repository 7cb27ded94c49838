#pragma once
// Neighbours: the processes that use the module on one device. A pool the driver refuses asks them;
// each gives back idle memory on a responder thread, and the asker retries once enough came back. No
// daemon, no setting: a board per device and user (board.h), a responder per process and board from
// the first seat enlisted there to the last. A pool is a giver (its rung) with a turn and a seat.

#include "../drivers/driver.h"
#include "board.h"

namespace gcp::neighbours {

// one give per asker a second bounds a thrash of two busy processes to one refill of the giver's
// cache a second: a few driver allocations (0.1 to 1 ms each), under 0.1% of its time
constexpr uint32_t GIVE_INTERVAL_MS = 1000;
// the most a pool's ask waits, where GGML_CUDA_POOL_WAIT_MS is 0 too: a neighbour's synchronize
// behind a queued batch (tens to hundreds of ms) and its frees
constexpr uint32_t ASK_BOUND_MS = 500;

// A pool is used by one thread at a time, and the responder takes it only between that thread's
// calls: the owner pays an uncontended compare-exchange and a release store a call; the responder
// passes a pool in use by, and an owner that finds the responder giving sleeps till it is done.
class turn {
  public:
    void owner_enter() { // at the start of each of the owner's calls (not reentrant)
        uint32_t seen = FREE;
        if (GCP_UNLIKELY(!state_.compare_exchange_strong(seen, OWNER, std::memory_order_acquire))) {
            wait_out();
        }
    }
    void owner_leave() { state_.store(FREE, std::memory_order_release); }
    bool try_take() { // the responder's; false while the owner is inside a call
        uint32_t seen = FREE;
        return state_.compare_exchange_strong(seen, GIVING, std::memory_order_acquire);
    }
    void give_back() {
        if (state_.exchange(FREE, std::memory_order_release) == GIVING_WAITED) {
            futex_wake(state_, false);
        }
    }

  private:
    static constexpr uint32_t FREE = 0, OWNER = 1, GIVING = 2, GIVING_WAITED = 3; // WAITED: an owner sleeps
    GCP_COLD void             wait_out();
    word                      state_{ FREE };
};

struct owner_call { // the owner's turn for one call
    explicit owner_call(turn & t) : t_(t) { t.owner_enter(); }
    ~owner_call() { t_.owner_leave(); }
    owner_call(const owner_call &) = delete;
    turn & t_;
};

// a pool kind's rung: returns idle memory to the driver (cached; no live buffer, queued work or
// captured graph uses it), `want` bytes, more where buffers are whole, less where it holds less: the
// bytes returned. Runs on the responder thread, which holds the pool's turn
struct giver {
    virtual ~giver()                               = default;
    virtual size_t give_idle(size_t want) noexcept = 0;
};

// a pool's place at its device's board. Its neighbour_* statistics are counted into `counts`: an ask's
// in the owner's call, a give's while the responder holds the turn
struct seat {
    seat(giver & g, turn & t, ggml_cpool_stats & counts) : giver_(g), turn_(t), counts_(counts) {}
    ~seat(); // leaves
    seat(const seat &) = delete;

    giver &             giver_;
    turn &              turn_;
    ggml_cpool_stats &  counts_;
    driver *            drv_    = nullptr;
    int                 device_ = 0;
    struct membership * home_   = nullptr; // the board it sits at; nullptr: none
};

// whether a context's pools sit with their neighbours: GGML_CUDA_POOL_NEIGHBOURS where it is set,
// else `param` (ggml_cpool_ctx_params.neighbours); INVALID_ARGUMENT, with its line, for a bad value
status wanted(int param, bool * on);
// seats s at the board of device's UUID (the first seat there starts this process's responder), from
// the owner's thread once the pool can give. UNSUPPORTED where the device has no UUID (a sim device
// of its own) or no board can be used (a line): the pool works alone
status enlist(seat & s, driver & drv, int device);
// takes s from its board: the last seat there joins the responder. Nothing where s sits nowhere
void   leave(seat & s);
// asks the other processes at s's board for `bytes`: waits till the givers gave them, the device's free
// memory grew by them, every neighbour answered or bound_ms passed; not at all where nobody else is
// there. OK: something came back, worth a retry; OUT_OF_MEMORY: nothing; UNSUPPORTED: s sits nowhere.
// Received: what givers reported by then (memory freed may be seen before its report, not awaited)
status ask(seat & s, size_t bytes, uint32_t bound_ms);

} // namespace gcp::neighbours
