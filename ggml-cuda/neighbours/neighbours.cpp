#include "neighbours.h"

#include "../support/env.h"
#include "../support/log.h"

#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace gcp::neighbours {

namespace {

constexpr uint64_t MS = 1000000; // ns
// an ask looks at free memory and at who lives at least this often: a neighbour that died answers
// nothing, and what a process outside the module frees comes without a word
constexpr uint64_t FIRST_LOOK_NS = 1 * MS, LONGEST_LOOK_NS = 64 * MS;

struct registry {
    std::mutex                                         mutex;
    std::map<std::string, std::unique_ptr<membership>> boards; // by name
} & here = *new registry;                                      // never destroyed: a pool may leave during the exit

} // namespace

// this process at one board: its slot, its seats there, and the responder that gives from them
struct membership {
    ~membership() {
        if (responder.joinable()) {
            stop = true;
            b->ring();
            responder.join();
        }
        if (slot >= 0) {
            b->withdraw(slot);
            b->members[slot].pid = 0; // the slot is free
        }
        if (b != nullptr && munmap(b, sizeof(board)) != 0) {
            GCP_LOG_ERROR("neighbours: unmapping a board failed (%s)", strerror(errno));
        }
    }

    void serve() { // the responder
        for (uint32_t bell = b->bell; !stop; bell = b->bell) {
            for (int s = 0; s < int(MAX_MEMBERS); s++) {
                demand d;
                if (s != slot && b->read(s, &d) && d.number != answered[s]) {
                    respond(s, d);
                }
            }
            if (futex_wait(b->bell, bell, NO_BOUND, true) != OK) {
                return; // said; this process gives nothing from now on
            }
        }
    }

    void respond(int s, const demand & d) { // at most one give per interval to one asker
        const uint64_t now  = now_ns();
        size_t         gave = 0;
        answered[s]         = d.number;
        if (gave_to[s] != d.asker || now - gave_at[s] >= GIVE_INTERVAL_MS * MS) {
            std::lock_guard<std::mutex> lock(mutex);
            for (size_t i = 0; i < seats.size() && gave < d.want; i++) {
                seat & st = *seats[i];
                if (st.turn_.try_take()) { // an owner inside a call keeps its pool for now
                    const size_t n = st.giver_.give_idle(d.want - gave);
                    st.counts_.neighbour_gives += n > 0;
                    st.counts_.neighbour_given_bytes += n;
                    st.turn_.give_back();
                    gave += n;
                }
            }
        }
        if (gave > 0) {
            gave_to[s] = d.asker;
            gave_at[s] = now;
            b->members[slot].given += gave;
            b->members[slot].gives++;
        }
        b->answer(s, d.number, gave);
    }

    std::string         name; // the board's
    board *             b    = nullptr;
    int                 slot = -1;
    pid_t               pid  = getpid(); // a child forked after enlisting is no member
    std::mutex          mutex;           // guards seats: a leave waits for a give in progress
    std::vector<seat *> seats;
    std::atomic<bool>   stop{ false };
    std::thread         responder;
    // the responder's, per slot: the demand it answered last, whom it gave to last and when
    uint32_t            answered[MAX_MEMBERS] = {};
    pid_t               gave_to[MAX_MEMBERS]  = {};
    uint64_t            gave_at[MAX_MEMBERS]  = {};
};

void turn::wait_out() {
    for (uint32_t seen = FREE; !state_.compare_exchange_strong(seen, OWNER, std::memory_order_acquire); seen = FREE) {
        if (seen == OWNER) {
            std::this_thread::yield(); // another thread is inside the pool: its owner's misuse
        } else if (seen == GIVING_WAITED || state_.compare_exchange_strong(seen, GIVING_WAITED)) {
            (void) futex_wait(state_, GIVING_WAITED, NO_BOUND, false); // the giver wakes it; a failure is said
        }
    }
}
seat::~seat() {
    leave(*this);
}
status wanted(int param, bool * on) {
    *on = param != 0;
    return env_flag(GGML_CPOOL_OPTION_NEIGHBOURS, on);
}

status enlist(seat & st, driver & drv, int device) {
    device_uuid id;
    char        name[64];
    if (st.home_ != nullptr || drv.uuid(device, &id) != OK) {
        return st.home_ != nullptr ? OK : UNSUPPORTED;
    }
    board_name(id, name);
    std::lock_guard<std::mutex> lock(here.mutex);
    try {
        auto it = here.boards.find(name);
        if (it == here.boards.end()) {
            auto made = std::make_unique<membership>(); // destroyed, its responder joined, on any way out but the last
            made->seats.push_back(&st);
            made->name = name;
            if (map_segment(name, sizeof(board), reinterpret_cast<void **>(&made->b)) != OK ||
                (made->slot = made->b->claim()) < 0) {
                GCP_LOG_WARN("neighbours: %s: this process works alone", made->b ? "the board is full" : "no board");
                return UNSUPPORTED;
            }
            membership * h  = made.get(); // a lambda: a thread of a module type would export its typeinfo
            made->responder = std::thread([h] { h->serve(); });
            it              = here.boards.emplace(name, std::move(made)).first;
        } else if (it->second->pid != getpid()) {
            return UNSUPPORTED; // a child forked after its parent enlisted: alone
        } else {
            std::lock_guard<std::mutex> seats(it->second->mutex);
            it->second->seats.push_back(&st);
        }
        st.home_ = it->second.get();
    } catch (const std::exception & e) { // no memory, or no thread
        GCP_LOG_WARN("neighbours: %s: this process works alone", e.what());
        return UNSUPPORTED;
    }
    st.drv_    = &drv;
    st.device_ = device;
    return OK;
}

void leave(seat & st) {
    membership * h = st.home_;
    st.home_       = nullptr;
    if (h == nullptr || h->pid != getpid()) {
        return;
    }
    std::unique_ptr<membership> last; // destroyed after the locks: it joins the responder
    std::lock_guard<std::mutex> lock(here.mutex), seats(h->mutex);
    h->seats.erase(std::find(h->seats.begin(), h->seats.end(), &st));
    if (h->seats.empty()) {
        last = std::move(here.boards[h->name]);
        here.boards.erase(h->name);
    }
}

status ask(seat & st, size_t bytes, uint32_t bound_ms) {
    membership * h = st.home_;
    if (h == nullptr || h->pid != getpid()) {
        return UNSUPPORTED;
    }
    member &       me    = h->b->members[h->slot];
    const uint64_t start = now_ns(), deadline = start + uint64_t(bound_ms) * MS, base = me.received;
    // free memory the refused request saw did not serve it (fragments, the driver's granularity): a
    // growth of the free memory by `bytes` ends the ask, as memory a dead neighbour or another program frees
    size_t         before = 0, free = 0;
    bool           grown = false;
    if (h->b->others(h->slot) == 0 || st.drv_->free_memory(st.device_, &before) != OK) {
        return OUT_OF_MEMORY; // nobody to ask, or a device whose free memory cannot be read
    }
    st.counts_.neighbour_asks++;
    h->b->post(h->slot, bytes, deadline);
    for (uint64_t look = FIRST_LOOK_NS;; look = std::min(2 * look, LONGEST_LOOK_NS)) {
        const uint32_t bell = me.doorbell;
        const uint64_t now  = now_ns();
        grown               = st.drv_->free_memory(st.device_, &free) == OK && free >= before + bytes;
        // else it waits till every neighbour answered, the bound passed, or a futex failed
        if (grown || me.received - base >= bytes || uint32_t(me.replies) >= h->b->others(h->slot) || now >= deadline ||
            futex_wait(me.doorbell, bell, std::min(look, deadline - now), true) != OK) {
            break;
        }
    }
    h->b->withdraw(h->slot);
    st.counts_.neighbour_received_bytes += size_t(me.received - base);
    st.counts_.neighbour_ask_ns += now_ns() - start;
    return grown || me.received > base ? OK : OUT_OF_MEMORY; // OK: something came back, worth a retry
}

} // namespace gcp::neighbours
