#include "board.h"

#include "../support/log.h"

#include <cerrno>
#include <climits>
#include <ctime>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gcp::neighbours {

constexpr mode_t OWNER_ONLY = 0600; // another user can neither open a segment nor read it

// why the segment open at fd is not this user's to use (nullptr: it is); one not yet sized is sized here
static const char * refusal(int fd, size_t size) {
    struct stat st = {};
    if (fstat(fd, &st) != 0) {
        return strerror(errno);
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != OWNER_ONLY) {
        return "another user owns it, or its mode is not 0600";
    }
    if (st.st_size == 0 && ftruncate(fd, off_t(size)) != 0) {
        return strerror(errno);
    }
    return st.st_size == 0 || size_t(st.st_size) == size ? nullptr : "it has another layout's size";
}

status map_segment(const char * name, size_t size, void ** out) {
    int          fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, OWNER_ONLY);
    // one made here is 0600 whatever the umask; one already there is opened, then judged
    const char * why = fd >= 0 && fchmod(fd, OWNER_ONLY) != 0 ? strerror(errno) : nullptr;
    if (fd < 0 && errno == EEXIST) {
        fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    }
    why       = why ? why : fd < 0 ? strerror(errno) : refusal(fd, size);
    void * at = why ? MAP_FAILED : mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    why       = why ? why : at == MAP_FAILED ? strerror(errno) : nullptr;
    if (fd >= 0 && close(fd) != 0) {
        GCP_LOG_WARN("neighbours: closing shared memory %s failed (%s)", name, strerror(errno)); // the map stays
    }
    if (why != nullptr) {
        GCP_LOG_WARN("neighbours: shared memory %s refused (%s): this process shares nothing through it", name, why);
        return UNSUPPORTED;
    }
    *out = at;
    return OK;
}

status futex_wait(word & w, uint32_t expected, uint64_t timeout_ns, bool shared) {
    const timespec t = { time_t(timeout_ns / 1000000000), long(timeout_ns % 1000000000) };
    if (syscall(SYS_futex, &w, shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, expected,
                timeout_ns == NO_BOUND ? nullptr : &t, nullptr, 0) != 0 &&
        errno != EAGAIN && errno != EINTR && errno != ETIMEDOUT) {
        GCP_LOG_ERROR("neighbours: futex wait failed (%s)", strerror(errno));
        return DRIVER_ERROR;
    }
    return OK;
}
void futex_wake(word & w, bool shared) {
    if (syscall(SYS_futex, &w, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0) < 0) {
        GCP_LOG_ERROR("neighbours: futex wake failed (%s)", strerror(errno));
    }
}

bool alive(pid_t pid) {
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); // EPERM: alive, as another user
}
uint64_t now_ns() {
    timespec t = {};
    return clock_gettime(CLOCK_MONOTONIC, &t) == 0 ? uint64_t(t.tv_sec) * 1000000000 + uint64_t(t.tv_nsec) : 0;
}

} // namespace gcp::neighbours
