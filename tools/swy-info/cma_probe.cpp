#include "cma_probe.h"

#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace swy::info {
namespace {

constexpr size_t kProbeBytes = 64;

/// Read kProbeBytes at @p remote in @p pid into @p local. 0 on success, else an errno value
/// (EIO for a short read).
int read_remote(pid_t pid, void* remote, unsigned char* local) {
    iovec liov{local, kProbeBytes};
    iovec riov{remote, kProbeBytes};
    ssize_t n = process_vm_readv(pid, &liov, 1, &riov, 1, 0);
    if (n < 0) return errno;
    return n == static_cast<ssize_t>(kProbeBytes) ? 0 : EIO;
}

/// Fill @p buf with a pattern that depends on @p seed, so that a read of the wrong buffer
/// (or of zeroes) is caught.
void fill_pattern(unsigned char* buf, unsigned seed) {
    for (size_t i = 0; i < kProbeBytes; ++i)
        buf[i] = static_cast<unsigned char>(seed + i * 7);
}

/// Current Yama ptrace_scope, or -1 when the kernel has no Yama.
int yama_ptrace_scope() {
    std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
    int scope = -1;
    if (!(in >> scope)) return -1;
    return scope;
}

/// errno text plus the usual cause of that errno for process_vm_readv.
std::string explain(int err, const char* direction) {
    std::string text = std::strerror(err);
    if (err == EPERM) {
        int scope = yama_ptrace_scope();
        text += ", ptrace policy";
        if (scope >= 0) text += " (kernel.yama.ptrace_scope=" + std::to_string(scope) + ")";
    } else if (err == ENOSYS) {
        text += ", kernel or seccomp filter lacks process_vm_readv";
    } else if (err == EIO) {
        text = "short read";
    }
    return text + "; " + direction;
}

/// Write all of @p len bytes to @p fd (EINTR-safe); async-signal-safe for use in the child.
bool write_all(int fd, const void* data, size_t len) {
    const char* p = static_cast<const char*>(data);
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

}  // namespace

CmaProbe probe_cma() {
    CmaProbe result;
    // Both buffers exist in both processes at the same addresses (fork copies the address
    // space); each side fills its own copy with a different pattern after the fork.
    alignas(64) static unsigned char parent_buf[kProbeBytes];
    alignas(64) static unsigned char child_buf[kProbeBytes];
    fill_pattern(parent_buf, 11);

    int to_parent[2];  // child -> parent: its errno for the child-reads-parent direction
    int to_child[2];   // parent -> child: closed by the parent when the child may exit
    if (pipe(to_parent) != 0) {
        result.why = std::string("pipe: ") + std::strerror(errno);
        return result;
    }
    if (pipe(to_child) != 0) {
        result.why = std::string("pipe: ") + std::strerror(errno);
        close(to_parent[0]);
        close(to_parent[1]);
        return result;
    }
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        result.why = std::string("fork: ") + std::strerror(errno);
        for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]})
            close(fd);
        return result;
    }
    if (child == 0) {
        // Child: only async-signal-safe calls from here to _exit.
        close(to_parent[0]);
        close(to_child[1]);
        fill_pattern(child_buf, 23);
        unsigned char got[kProbeBytes];
        int err = read_remote(parent, parent_buf, got);
        if (err == 0) {
            unsigned char want[kProbeBytes];
            fill_pattern(want, 11);
            if (std::memcmp(got, want, kProbeBytes) != 0) err = EIO;
        }
        write_all(to_parent[1], &err, sizeof(err));
        char c;
        for (;;) {  // wait for EOF: the parent has finished reading child_buf
            ssize_t r = read(to_child[0], &c, 1);
            if (r < 0 && errno == EINTR) continue;
            break;
        }
        _exit(0);
    }
    close(to_parent[1]);
    close(to_child[0]);

    // The child has filled child_buf and finished its own read once it reports.
    int child_err = EIO;
    ssize_t n;
    do {
        n = read(to_parent[0], &child_err, sizeof(child_err));
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof(child_err))) child_err = EIO;

    unsigned char got[kProbeBytes];
    int parent_err = read_remote(child, child_buf, got);
    if (parent_err == 0) {
        unsigned char want[kProbeBytes];
        fill_pattern(want, 23);
        if (std::memcmp(got, want, kProbeBytes) != 0) parent_err = EIO;
    }

    close(to_child[1]);  // lets the child exit
    close(to_parent[0]);
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {}

    if (parent_err != 0) {
        result.why = explain(parent_err, "even a parent cannot read its child");
    } else if (child_err != 0) {
        result.why = explain(child_err,
                             "a parent may read its child, but unrelated peers "
                             "cannot read each other");
    } else {
        result.works = true;
    }
    return result;
}

}  // namespace swy::info
