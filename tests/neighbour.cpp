// A process at a shared sim device, driven by tests/test-neighbours.cpp: one command a line on stdin,
// one answer a line on stdout. Between commands it blocks reading stdin: idle, in no call of its own,
// so whatever it gives is given by its responder thread. Its pool is a test giver: buffers of the
// device held live or idle (the cache it gives back from).
//   neighbour NAME CAPACITY_MIB
//   cache MIB idle|live   a buffer of the device, held          -> ok | oom
//   alloc MIB BOUND_MS    a buffer, asking the neighbours where the device refuses it, then cached
//                         idle (a busy process's scratch)      -> served|refused RECEIVED_BYTES
//   hold | release        the owner's turn kept across commands, as a call in progress -> ok
//   hang                  the next give writes "giving" and never returns                 -> ok
//   stats                 -> ASKS GIVES GIVEN_BYTES RECEIVED_BYTES

#include "../ggml-cuda/neighbours/neighbours.h"
#include "../ggml-cuda/testing/sim.h"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using gcp::neighbours::seat;
using gcp::neighbours::turn;

constexpr size_t MiB = size_t(1) << 20;

struct buffer {
    void * ptr;
    size_t size;
};

struct test_giver final : gcp::neighbours::giver {
    explicit test_giver(gcp::driver & d) : drv(d) {}

    size_t give_idle(size_t want) noexcept override {
        if (hang) {
            const char line[] = "giving\n";
            (void) !write(STDOUT_FILENO, line, sizeof(line) - 1);
            for (;;) {
                pause(); // killed here
            }
        }
        size_t given = 0;
        while (given < want && !idle.empty()) { // live buffers are never given
            given += drv.free(0, idle.back().ptr) == gcp::OK ? idle.back().size : 0;
            idle.pop_back();
        }
        return given;
    }

    gcp::driver &       drv;
    std::vector<buffer> idle, live;
    bool                hang = false;
};

} // namespace

int main(int argc, char ** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: neighbour NAME CAPACITY_MIB\n");
        return 2;
    }
    ggml_cpool_sim_params p = gcp::sim_primitives::defaults();
    p.capacity              = size_t(std::stoull(argv[2])) * MiB;
    p.shared                = argv[1];
    auto prims              = std::make_shared<gcp::sim_primitives>(p);
    if (prims->share() != gcp::OK) {
        return 3;
    }
    gcp::driver drv(prims);
    test_giver  pool(drv);
    turn        t;
    seat        s(pool, t);
    if (gcp::neighbours::enlist(s, drv, 0) != gcp::OK) {
        return 4;
    }
    bool held = false;
    for (std::string line; std::getline(std::cin, line);) {
        std::istringstream in(line);
        std::string        cmd, arg;
        size_t             mib = 0;
        in >> cmd >> mib >> arg;
        if (!held) {
            t.owner_enter(); // every command is a call of the pool's owner
        }
        std::string out = "ok";
        void *      ptr = nullptr;
        if (cmd == "cache") {
            out = drv.malloc(0, mib * MiB, &ptr) == gcp::OK ? "ok" : "oom";
            if (ptr != nullptr) {
                (arg == "live" ? pool.live : pool.idle).push_back({ ptr, mib * MiB });
            }
        } else if (cmd == "alloc") {
            size_t received = 0;
            bool   served   = drv.malloc(0, mib * MiB, &ptr) == gcp::OK;
            if (!served && gcp::neighbours::ask(s, mib * MiB, uint32_t(std::stoul(arg)), &received) == gcp::OK) {
                served = drv.malloc(0, mib * MiB, &ptr) == gcp::OK;
            }
            if (served) {
                pool.idle.push_back({ ptr, mib * MiB });
            }
            out = (served ? "served " : "refused ") + std::to_string(received);
        } else if (cmd == "hang") {
            pool.hang = true;
        } else if (cmd == "stats") {
            out = std::to_string(s.asks) + " " + std::to_string(s.gives) + " " + std::to_string(s.given_bytes) + " " +
                  std::to_string(s.received_bytes);
        }
        held = cmd == "hold" || (held && cmd != "release");
        if (!held) {
            t.owner_leave();
        }
        std::cout << out << std::endl;
    }
    gcp::neighbours::leave(s); // first: the responder gives from the pool no more
    for (auto * list : { &pool.idle, &pool.live }) {
        for (buffer & b : *list) {
            drv.free(0, b.ptr);
        }
    }
    return 0;
}
