// Neighbours (docs/neighbours.md) in real processes at a shared sim device: tests/neighbour.cpp is a
// process with a test giver, driven a command a line; it is idle (blocked reading) between commands.
// This process reads the board and the device's free memory as a process of the device too.

#include "../ggml-cuda/neighbours/neighbours.h"
#include "shared-device.h"
#include "harness.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char ** environ;

namespace {

namespace nb = gcp::neighbours;
using harness::MiB;

constexpr size_t CAPACITY_MIB = 64;
constexpr int    REPLY_MS     = 60000; // a sanitized process on a loaded machine answers well within it
constexpr int    LONG_BOUND   = 30000; // an ask that must be served long before its bound passes

// a neighbour process (tests/neighbour.cpp)
class neighbour {
  public:
    // kind: a context's pool of that kind (tests/neighbour.cpp), else a test giver
    explicit neighbour(const std::string & name, const std::string & kind = "") {
        int to[2], from[2];
        EXPECT_EQ(pipe2(to, O_CLOEXEC), 0);
        EXPECT_EQ(pipe2(from, O_CLOEXEC), 0);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, to[0], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&fa, from[1], STDOUT_FILENO);
        std::string capacity = std::to_string(CAPACITY_MIB);
        char *      argv[]   = { const_cast<char *>(NEIGHBOUR_HELPER), const_cast<char *>(name.c_str()),
                                 const_cast<char *>(capacity.c_str()),
                          kind.empty() ? nullptr : const_cast<char *>(kind.c_str()), nullptr };
        EXPECT_EQ(posix_spawn(&pid, NEIGHBOUR_HELPER, &fa, nullptr, argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        close(to[0]);
        close(from[1]);
        in_  = to[1];
        out_ = from[0];
    }
    ~neighbour() {
        close(in_); // end of input: it frees its buffers, leaves and exits
        if (pid > 0 && !reply().empty()) {
            ADD_FAILURE() << "neighbour " << pid << " said more than asked";
        }
        if (pid > 0) {
            ::kill(pid, SIGKILL); // where it did not exit by itself within REPLY_MS
            waitpid(pid, nullptr, 0);
        }
        close(out_);
    }
    neighbour(const neighbour &) = delete;

    // the answer to one command ("" from a neighbour that exited: the write fails, or nothing comes)
    std::string say(const std::string & command) {
        const std::string line = command + "\n";
        return write(in_, line.data(), line.size()) == ssize_t(line.size()) ? reply() : "";
    }
    // its next line ("" at its end, or after REPLY_MS)
    std::string reply() {
        std::string line;
        for (char c = 0; c != '\n';) {
            pollfd p = { out_, POLLIN, 0 };
            if (poll(&p, 1, REPLY_MS) != 1 || read(out_, &c, 1) != 1) {
                return line;
            }
            line += c == '\n' ? "" : std::string(1, c);
        }
        return line;
    }
    // SIGKILL, and waited for: its slots and its use of the device are a dead process's
    void kill() {
        ::kill(pid, SIGKILL);
        EXPECT_EQ(waitpid(pid, nullptr, 0), pid);
        pid = 0;
    }
    // its counters: asks, gives, given bytes, received bytes (and a pool's reserved MiB)
    std::vector<uint64_t> stats() {
        std::istringstream    in(say("stats"));
        std::vector<uint64_t> v(4);
        in >> v[0] >> v[1] >> v[2] >> v[3];
        for (uint64_t more = 0; in >> more;) {
            v.push_back(more);
        }
        return v;
    }

    pid_t pid = 0;

  private:
    int in_ = -1, out_ = -1;
};

// a shared sim device of its own per test, seen from this process too; its segments go at the end
class Neighbours : public ::testing::Test {
  protected:
    void SetUp() override {
        signal(SIGPIPE, SIG_IGN); // a neighbour killed on purpose closes its pipes
        name = "nb-test-" + std::to_string(getpid());
        sim  = shared_device::sim(name.c_str(), CAPACITY_MIB * MiB);
        ASSERT_NE(sim, nullptr);
        gcp::device_uuid id;
        ASSERT_EQ(sim->uuid(0, &id), gcp::OK);
        char board[64];
        nb::board_name(id, board);
        board_path = board;
    }
    void TearDown() override {
        sim.reset();
        shm_unlink(("/ggml-cpool-sim-" + std::to_string(geteuid()) + "-" + name).c_str());
        shm_unlink(board_path.c_str());
    }
    size_t free_mib() {
        size_t free = 0;
        EXPECT_EQ(sim->free_memory(0, &free), gcp::OK);
        return free / MiB;
    }
    // the board, mapped here (nothing is posted or claimed by mapping it)
    nb::board * board() {
        void * at = nullptr;
        EXPECT_EQ(nb::map_segment(board_path.c_str(), sizeof(nb::board), &at), gcp::OK);
        return static_cast<nb::board *>(at);
    }

    std::string                          name, board_path;
    std::shared_ptr<gcp::sim_primitives> sim;
};

// a reply "served RECEIVED": the memory may be free before the giver's report of it, with which the
// asker need not wait, so RECEIVED is what was reported by then: `given`, or 0
::testing::AssertionResult served(const std::string & reply, size_t given) {
    if (reply == "served " + std::to_string(given) || reply == "served 0") {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "'" << reply << "', not served with " << given
                                         << " bytes given (or 0 reported yet)";
}

int threads() {
    int   n = 0;
    DIR * d = opendir("/proc/self/task");
    for (dirent * e = d ? readdir(d) : nullptr; e != nullptr; e = readdir(d)) {
        n += e->d_name[0] != '.';
    }
    if (d != nullptr) {
        closedir(d);
    }
    return n;
}

} // namespace

TEST_F(Neighbours, ProcessesShareTheSimDeviceAndADeadOnesUseComesBack) {
    neighbour a(name);
    EXPECT_EQ(a.say("cache 48 live"), "ok");
    EXPECT_EQ(free_mib(), CAPACITY_MIB - 48);
    void * p = nullptr;
    EXPECT_EQ(sim->malloc(0, 32 * MiB, &p), gcp::OUT_OF_MEMORY) << "16 MiB are free";
    a.kill();
    EXPECT_EQ(free_mib(), CAPACITY_MIB);
    ASSERT_EQ(sim->malloc(0, 32 * MiB, &p), gcp::OK);
    EXPECT_EQ(sim->free(0, p), gcp::OK);
}

TEST_F(Neighbours, AnIdleNeighbourGivesItsCache) {
    neighbour b(name), a(name);
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(b.say("cache 16 idle"), "ok");
    }
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(served(a.say("alloc 32 " + std::to_string(LONG_BOUND)), 32 * MiB));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(LONG_BOUND / 2));
    EXPECT_EQ(b.stats(), (std::vector<uint64_t>{ 0, 1, 32 * MiB, 0 })) << "one give of two idle buffers";
    EXPECT_EQ(a.stats()[0], 1u);
    EXPECT_EQ(free_mib(), CAPACITY_MIB - 16 - 32) << "b keeps 16 MiB, a holds 32";
}

TEST_F(Neighbours, LiveMemoryIsNeverGiven) {
    neighbour b(name), a(name);
    ASSERT_EQ(b.say("cache 32 live"), "ok");
    ASSERT_EQ(b.say("cache 16 idle"), "ok");
    // b gives its 16 idle MiB, and answers: a is refused without waiting for the bound
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(a.say("alloc 40 " + std::to_string(LONG_BOUND)), "refused " + std::to_string(16 * MiB));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(LONG_BOUND / 2));
    EXPECT_EQ(free_mib(), CAPACITY_MIB - 32) << "b's live 32 MiB stay";
}

TEST_F(Neighbours, TwoBusyProcessesDoNotThrash) {
    neighbour a(name), b(name);
    ASSERT_EQ(a.say("cache 32 idle"), "ok");
    ASSERT_EQ(b.say("cache 32 idle"), "ok");
    const auto start  = std::chrono::steady_clock::now();
    int        served = 0;
    for (int round = 0; round < 4; round++) { // each asks for what the other holds idle, in turn
        served += a.say("alloc 32 " + std::to_string(LONG_BOUND)).rfind("served", 0) == 0;
        served += b.say("alloc 32 " + std::to_string(LONG_BOUND)).rfind("served", 0) == 0;
    }
    const auto     elapsed   = std::chrono::steady_clock::now() - start;
    const uint64_t intervals = uint64_t(elapsed / std::chrono::milliseconds(nb::GIVE_INTERVAL_MS)) + 1;
    EXPECT_GE(served, 2) << "each is served once from the other's cache";
    EXPECT_LE(a.stats()[1], intervals) << "at most one give to one asker per interval";
    EXPECT_LE(b.stats()[1], intervals);
    EXPECT_GE(a.stats()[1], 1u);
    EXPECT_GE(b.stats()[1], 1u);
}

TEST_F(Neighbours, AnOwnerInsideACallKeepsItsPool) {
    neighbour b(name), a(name);
    ASSERT_EQ(b.say("cache 32 idle"), "ok");
    ASSERT_EQ(b.say("hold"), "ok"); // as a call in progress: the responder passes the pool by
    EXPECT_EQ(a.say("alloc 64 " + std::to_string(LONG_BOUND)), "refused 0");
    ASSERT_EQ(b.say("release"), "ok");
    EXPECT_TRUE(served(a.say("alloc 64 " + std::to_string(LONG_BOUND)), 32 * MiB));
}

TEST_F(Neighbours, AGiverKilledMidGiveBlocksNobody) {
    neighbour b(name), a(name);
    ASSERT_EQ(b.say("cache 48 idle"), "ok");
    ASSERT_EQ(b.say("hang"), "ok");
    std::string asked;
    std::thread asker([&] { asked = a.say("alloc 32 " + std::to_string(LONG_BOUND)); });
    EXPECT_EQ(b.reply(), "giving");
    b.kill(); // in its give: its memory comes back to the device, where a sees it free
    asker.join();
    EXPECT_EQ(asked, "served 0");
    neighbour c(name); // and the board goes on: a third process is given a's cache
    EXPECT_TRUE(served(c.say("alloc 48 " + std::to_string(LONG_BOUND)), 32 * MiB));
}

TEST_F(Neighbours, AnAskerKilledWhileAskingBlocksNobody) {
    nb::board * bd   = board();
    const int   mine = bd->claim(); // a member that never answers: a's ask stays open
    ASSERT_GE(mine, 0);
    int         slot = -1;
    nb::demand  d{};
    std::string asked;
    neighbour   a(name);
    std::thread asker([&] { asked = a.say("alloc 80 " + std::to_string(LONG_BOUND)); });
    while (slot < 0) { // till a's demand is on the board: every post rings the bell
        const uint32_t bell = bd->bell;
        for (int s = 0; s < int(nb::MAX_MEMBERS); s++) {
            slot = bd->members[s].pid == a.pid && bd->read(s, &d) ? s : slot;
        }
        if (slot < 0) {
            nb::futex_wait(bd->bell, bell, nb::NO_BOUND, true);
        }
    }
    a.kill();
    asker.join();
    EXPECT_EQ(asked, "");
    EXPECT_GT(bd->members[slot].deadline, nb::now_ns()) << "its demand is still posted, unexpired";
    EXPECT_FALSE(bd->read(slot, &d)) << "and void: its asker is dead";
    neighbour b(name), c(name); // the board goes on: c is given b's cache
    ASSERT_EQ(b.say("cache 32 idle"), "ok");
    EXPECT_TRUE(served(c.say("alloc 48 " + std::to_string(LONG_BOUND)), 32 * MiB));
    EXPECT_EQ(b.stats()[1], 1u);
    bd->members[mine].pid = 0;
    munmap(bd, sizeof(nb::board));
}

TEST_F(Neighbours, TheBoardIsTheUsersAlone) {
    neighbour a(name); // it made the board
    ASSERT_EQ(a.say("stats"), "0 0 0 0");
    struct stat st = {};
    ASSERT_EQ(stat(("/dev/shm" + board_path).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << "another user can neither open it nor read it";
    EXPECT_EQ(st.st_uid, geteuid());
    EXPECT_NE(board_path.find("-" + std::to_string(geteuid()) + "-"), std::string::npos) << "named with the uid";

    // a segment others may open, or another user's, is refused
    const std::string other = "/nb-test-other-" + std::to_string(getpid());
    const int         fd    = shm_open(other.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fchmod(fd, 0644), 0);
    void * at = nullptr;
    EXPECT_EQ(nb::map_segment(other.c_str(), sizeof(nb::board), &at), gcp::UNSUPPORTED);
    ASSERT_EQ(fchmod(fd, 0600), 0);
    if (geteuid() == 0) { // root can make it another user's; others test the mode alone
        ASSERT_EQ(fchown(fd, 65534, 65534), 0);
        EXPECT_EQ(nb::map_segment(other.c_str(), sizeof(nb::board), &at), gcp::UNSUPPORTED);
    }
    close(fd);
    shm_unlink(other.c_str());
    if (geteuid() == 0) { // the board made another user's: a process refuses it, and works alone
        const int board_fd = shm_open(board_path.c_str(), O_RDWR, 0);
        ASSERT_GE(board_fd, 0);
        ASSERT_EQ(fchown(board_fd, 65534, 65534), 0);
        close(board_fd);
        neighbour b(name);
        EXPECT_EQ(b.say("stats"), "") << "it did not enlist (tests/neighbour.cpp exits then)";
    }
}

// the in-process side: one responder per board, none for a device of its own, the options' rule
struct idle_giver final : nb::giver {
    size_t give_idle(size_t) noexcept override { return 0; }
};

TEST_F(Neighbours, OneResponderPerProcessAndBoardAndAnAskAloneReturnsAtOnce) {
    gcp::driver      drv(sim);
    idle_giver       g1, g2;
    nb::turn         t1, t2;
    ggml_cpool_stats counts1 = {}, counts2 = {};
    nb::seat         s1(g1, t1, counts1), s2(g2, t2, counts2);
    ASSERT_EQ(nb::enlist(s1, drv, 0), gcp::OK);
    const int with = threads(); // counted once the responder runs: a sanitizer may start a thread of its own with it
    ASSERT_EQ(nb::enlist(s2, drv, 0), gcp::OK);
    EXPECT_EQ(threads(), with) << "one responder per process and board";
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(nb::ask(s1, 128 * MiB, LONG_BOUND), gcp::OUT_OF_MEMORY);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(LONG_BOUND / 2));
    EXPECT_EQ(counts1.neighbour_received_bytes, 0u);
    nb::leave(s1);
    EXPECT_EQ(threads(), with);
    nb::leave(s2);
    EXPECT_EQ(threads(), with - 1) << "the last to leave joins the responder";
}

// a refusal with free memory left (fragments, a driver's granularity): what was free when it asked cannot
// serve it, so the ask waits for its neighbours' gives rather than returning at once
TEST_F(Neighbours, FreeMemoryTheRefusalSawDoesNotEndTheAsk) {
    neighbour a(name);
    ASSERT_EQ(a.say("cache 16 idle"), "ok");
    gcp::driver      drv(sim);
    idle_giver       g;
    nb::turn         t;
    ggml_cpool_stats counts = {};
    nb::seat         s(g, t, counts);
    ASSERT_EQ(nb::enlist(s, drv, 0), gcp::OK);
    ASSERT_GE(free_mib(), 8u);
    EXPECT_EQ(nb::ask(s, 8 * MiB, LONG_BOUND), gcp::OK);
    nb::leave(s);
    EXPECT_EQ(a.stats()[1], 1u) << "served by a's give";
    EXPECT_TRUE(counts.neighbour_received_bytes == 16 * MiB || counts.neighbour_received_bytes == 0)
        << "what a reported by then: its 16 MiB, or nothing yet";
}

TEST_F(Neighbours, OffOrAloneNothingChanges) {
    harness::scoped_env env("GGML_CUDA_POOL_NEIGHBOURS", nullptr);
    bool                on = false;
    EXPECT_EQ(nb::wanted(1, &on), gcp::OK);
    EXPECT_TRUE(on);
    EXPECT_EQ(nb::wanted(0, &on), gcp::OK);
    EXPECT_FALSE(on);
    {
        harness::scoped_env off("GGML_CUDA_POOL_NEIGHBOURS", "off");
        EXPECT_EQ(nb::wanted(1, &on), gcp::OK);
        EXPECT_FALSE(on);
    }
    {
        harness::scoped_env bad("GGML_CUDA_POOL_NEIGHBOURS", "sometimes");
        EXPECT_EQ(nb::wanted(1, &on), gcp::INVALID_ARGUMENT);
    }
    // a sim device of its own has no UUID: no board, no thread, and an ask is refused at once
    auto             own = std::make_shared<gcp::sim_primitives>(gcp::sim_primitives::defaults());
    gcp::driver      drv(own);
    idle_giver       g;
    nb::turn         t;
    ggml_cpool_stats counts = {};
    nb::seat         s(g, t, counts);
    const int        before = threads();
    EXPECT_EQ(nb::enlist(s, drv, 0), gcp::UNSUPPORTED);
    EXPECT_EQ(threads(), before);
    EXPECT_EQ(s.home_, nullptr);
    EXPECT_EQ(nb::ask(s, MiB, LONG_BOUND), gcp::UNSUPPORTED);
}

// the pools themselves: a process of each kind beside a starved legacy one, both idle between commands
class NeighbourPools : public Neighbours, public ::testing::WithParamInterface<const char *> {};

TEST_P(NeighbourPools, AStarvedPoolIsServedFromAnIdlePoolsCacheAndTheGiverGrowsAgain) {
    neighbour a(name, GetParam()), b(name, "legacy");
    ASSERT_EQ(a.say("alloc 40"), "served");
    ASSERT_EQ(a.say("free"), "ok"); // cached: idle, and a makes no call from now on
    EXPECT_EQ(b.say("alloc 40"), "served") << "the device has 24 MiB free and a holds 40 idle";
    const std::vector<uint64_t> sa = a.stats(), sb = b.stats();
    EXPECT_EQ(sb[0], 1u) << "b asked once";
    EXPECT_EQ(sa[1], 1u) << "a gave once";
    EXPECT_GE(sa[2], 40 * MiB);
    EXPECT_EQ(sa[4], 0u) << "a holds nothing now";
    ASSERT_EQ(b.say("free"), "ok");
    EXPECT_EQ(a.say("alloc 40"), "served") << "a grows again, from b's cache in turn";
    EXPECT_EQ(a.stats()[0], 1u);
}

TEST_P(NeighbourPools, LivePinnedAndCapturingMemoryIsNeverGiven) {
    neighbour a(name, GetParam()), b(name, "legacy");
    ASSERT_EQ(a.say("alloc 16"), "served"); // live
    ASSERT_EQ(a.say("graph 16"), "served"); // cached, but a captured graph pins it
    EXPECT_EQ(b.say("alloc 40"), "refused");
    EXPECT_EQ(a.stats()[1], 0u) << "nothing idle to give";
    ASSERT_EQ(a.say("free"), "ok");
    ASSERT_EQ(a.say("capture 1"), "ok"); // idle now, but its stream captures
    EXPECT_EQ(b.say("alloc 40"), "refused");
    EXPECT_EQ(a.stats()[1], 0u) << "no synchronize or free while capturing";
    ASSERT_EQ(a.say("capture 0"), "ok");
    // a VMM pool unmaps above the pinned top alone: the graph pins the whole stack below it
    const bool vmm = GetParam() == std::string("vmm");
    EXPECT_EQ(b.say("alloc 40"), vmm ? "refused" : "served") << "what the graph does not pin went back";
    EXPECT_EQ(a.stats()[1], vmm ? 0u : 1u);
}

TEST_P(NeighbourPools, OffNothingIsAskedOrGiven) {
    harness::scoped_env off("GGML_CUDA_POOL_NEIGHBOURS", "off");
    neighbour           a(name, GetParam()), b(name, "legacy");
    ASSERT_EQ(a.say("alloc 40"), "served");
    ASSERT_EQ(a.say("free"), "ok");
    EXPECT_EQ(b.say("alloc 40"), "refused");
    EXPECT_EQ(b.stats()[0], 0u);
    EXPECT_EQ(a.stats()[4], 40u + 2u * (GetParam() == std::string("legacy") || GetParam() == std::string("plain")))
        << "a keeps its cache";
}

INSTANTIATE_TEST_SUITE_P(Kinds, NeighbourPools, ::testing::Values("legacy", "plain", "vmm", "async"));

TEST(NeighboursTurn, AnOwnerWaitsOutAGive) {
    nb::turn          t;
    std::atomic<bool> given{ false }, entered{ false };
    ASSERT_TRUE(t.try_take());
    std::thread owner([&] {
        t.owner_enter(); // sleeps till the give is over
        EXPECT_TRUE(given.load());
        entered = true;
        t.owner_leave();
    });
    given = true;
    t.give_back();
    owner.join();
    EXPECT_TRUE(entered.load());
    {
        nb::owner_call call(t);
        EXPECT_FALSE(t.try_take()) << "the responder passes a pool whose owner is inside a call";
    }
    EXPECT_TRUE(t.try_take());
    t.give_back();
}
