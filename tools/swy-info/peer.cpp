#include "peer.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace swy::info {

CpuPair pick_cpus() {
    CpuPair pair;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return pair;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &set)) continue;
        if (pair.self < 0) {
            pair.self = cpu;
        } else {
            pair.peer = cpu;
            break;
        }
    }
    return pair;
}

PinGuard::PinGuard(int cpu) {
    if (cpu < 0 || sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    restore_ = sched_setaffinity(0, sizeof(one), &one) == 0;
}

PinGuard::~PinGuard() {
    if (restore_) sched_setaffinity(0, sizeof(saved_), &saved_);
}

SharedMap::SharedMap(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : p;
}

SharedMap::~SharedMap() {
    if (data_ != nullptr) munmap(data_, bytes_);
}

pid_t start_peer(int cpu, int (*body)(void*), void* arg) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    if (cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        sched_setaffinity(0, sizeof(one), &one);
    }
    _exit(body(arg));
}

bool finish_peer(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return false;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace swy::info
