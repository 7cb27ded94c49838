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
// With a KIND (neighbour NAME CAPACITY_MIB KIND), its pool is a context's pool of that kind, which the
// context enlists, and which asks in its ladder:
//   alloc MIB             a buffer, held live                   -> served | refused
//   free                  every live buffer back to the pool, which caches it: idle -> ok
//   graph MIB             a buffer a captured graph pins (pin_begin .. pin_end), then freed -> served
//   capture 1|0           ggml_cpool_declare_capture            -> ok
//   stats                 -> ASKS GIVES GIVEN_BYTES RECEIVED_BYTES RESERVED_MIB

#include "../ggml-cuda/context/context.h"
#include "../ggml-cuda/neighbours/neighbours.h"
#include "shared-device.h"

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

// the process with a context's pool of `kind`
int pool_process(std::shared_ptr<gcp::sim_primitives> prims, const std::string & kind) {
    ggml_cpool_ctx_params         p = ggml_cpool_ctx_default_params();
    std::unique_ptr<gcp::context> ctx;
    gcp::pool *                   pool = nullptr;
    p.kind[0]                          = kind == "vmm"   ? GGML_CPOOL_KIND_VMM :
                                         kind == "async" ? GGML_CPOOL_KIND_ASYNC :
                                         kind == "plain" ? GGML_CPOOL_KIND_PLAIN :
                                                           GGML_CPOOL_KIND_LEGACY;
    if (gcp::context::create(p, std::make_shared<gcp::driver>(prims), &ctx) != gcp::OK ||
        ctx->get_pool(0, 0, &pool) != gcp::OK) {
        return 3;
    }
    std::vector<buffer> live;
    for (std::string line; std::getline(std::cin, line);) {
        std::istringstream in(line);
        std::string        cmd;
        size_t             n = 0;
        in >> cmd >> n;
        std::string out = "ok";
        buffer      b{};
        if (cmd == "alloc" || cmd == "graph") {
            uint64_t graph = 0;
            if (cmd == "graph") {
                ctx->pin_begin(&graph);
            }
            const bool served = pool->alloc(n * MiB, 0, &b.ptr, &b.size) == gcp::OK;
            out               = served ? "served" : "refused";
            if (served && cmd == "alloc") {
                live.push_back(b);
            }
            if (cmd == "graph") {
                ctx->pin_end();
                pool->free(b.ptr, b.size);
            }
        } else if (cmd == "free") {
            for (buffer & l : live) {
                pool->free(l.ptr, l.size);
            }
            live.clear();
        } else if (cmd == "capture") {
            pool->declare_capture(int(n));
        } else if (cmd == "stats") {
            const ggml_cpool_stats st = pool->stats();
            out = std::to_string(st.neighbour_asks) + " " + std::to_string(st.neighbour_gives) + " " +
                  std::to_string(st.neighbour_given_bytes) + " " + std::to_string(st.neighbour_received_bytes) + " " +
                  std::to_string(st.reserved_bytes / MiB);
        }
        std::cout << out << std::endl;
    }
    for (buffer & l : live) {
        pool->free(l.ptr, l.size);
    }
    return 0;
}

} // namespace

int main(int argc, char ** argv) {
    auto prims = argc == 3 || argc == 4 ? shared_device::sim(argv[1], size_t(std::stoull(argv[2])) * MiB) : nullptr;
    if (argc == 4 && prims) {
        return pool_process(prims, argv[3]);
    }
    if (argc != 3 || !prims) {
        fprintf(stderr, "usage: neighbour NAME CAPACITY_MIB [legacy|plain|vmm|async]\n");
        return 2;
    }
    gcp::driver      drv(prims);
    test_giver       pool(drv);
    turn             t;
    ggml_cpool_stats counts = {};
    seat             s(pool, t, counts);
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
            const size_t before = counts.neighbour_received_bytes;
            bool         served = drv.malloc(0, mib * MiB, &ptr) == gcp::OK;
            if (!served && gcp::neighbours::ask(s, mib * MiB, uint32_t(std::stoul(arg))) == gcp::OK) {
                served = drv.malloc(0, mib * MiB, &ptr) == gcp::OK;
            }
            if (served) {
                pool.idle.push_back({ ptr, mib * MiB });
            }
            out = (served ? "served " : "refused ") + std::to_string(counts.neighbour_received_bytes - before);
        } else if (cmd == "hang") {
            pool.hang = true;
        } else if (cmd == "stats") {
            out = std::to_string(counts.neighbour_asks) + " " + std::to_string(counts.neighbour_gives) + " " +
                  std::to_string(counts.neighbour_given_bytes) + " " + std::to_string(counts.neighbour_received_bytes);
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
