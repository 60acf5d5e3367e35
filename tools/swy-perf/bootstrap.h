// Out-of-band channel between the two swy-perf processes: exchanges worker addresses and
// provides a barrier. Three ways to get one: fork a local peer (pipes made before fork),
// --server PORT or --client HOST:PORT (TCP). Nothing here touches Switchyard.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "options.h"

namespace swy::perf {

enum class Role { kClient, kServer, kSelf };

class Bootstrap {
public:
    /// Set up the channel as @p opts says. Fork mode forks here: call it before creating any
    /// Switchyard object. Returns false (message printed) on failure.
    bool start(const Options& opts);

    Role role() const { return role_; }
    bool forked() const { return child_pid_ > 0; }

    /// Send our address blob and receive the peer's. The client writes first, the server
    /// reads first, so blobs larger than a pipe buffer cannot deadlock.
    bool exchange(const void* mine, size_t length, std::vector<uint8_t>* theirs);

    /// Both sides wait here until the other arrives, calling @p idle (e.g. worker progress)
    /// while they wait: a send that completed locally may still need its sender's progress
    /// to reach the peer, so a barrier that blocks without progress could deadlock.
    bool barrier(const std::function<void()>& idle = {});

    /// Cheap check for use in busy loops: false once the peer's end of the channel hung up.
    bool peer_alive() const;

    /// Forked client: wait for the child and return its exit status (0 = success).
    /// Others: 0. Closes the channel.
    int finish(bool kill_peer);

    ~Bootstrap();

private:
    bool write_all(const void* data, size_t length);
    bool read_all(void* data, size_t length);
    bool send_blob(const void* data, size_t length);
    bool recv_blob(std::vector<uint8_t>* out);

    Role role_ = Role::kSelf;
    int rfd_ = -1;  ///< read end (pipe) or the socket
    int wfd_ = -1;  ///< write end (pipe) or the same socket
    pid_t child_pid_ = -1;
};

} // namespace swy::perf
