// Out-of-band channel between the two swy-perf processes: exchanges worker addresses and
// provides a barrier. Four ways to get one: fork a local peer (pipes made before fork),
// --server PORT or --client HOST:PORT (Switchyard's listener API exchanges the addresses and
// barriers are messages on the endpoint; sockaddr_mode.cpp), or a PMIx launcher (mpirun -np 2;
// launcher.cpp, through switchyard/bootstrap.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <switchyard/bootstrap.h>

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

    /// Started by a PMIx launcher with neither --server nor --client: rank 0 is the server,
    /// rank 1 the client, and the launcher's PMIx server carries addresses and barriers.
    bool launched() const { return launched_; }
    /// Launched mode, once the worker exists: join the job (publishing @p worker's address)
    /// and connect to the other rank. False with a message printed.
    bool connect_launched(swy_worker_h worker, const swy_ep_params_t& ep_template, swy_ep_h* ep);
    /// Launched mode: close the endpoint connect_launched() made (progressing the worker).
    bool close_launched(bool force);
    /// Launched mode: leave the job. Call before the worker is destroyed.
    void leave_launched();

    /// --server PORT / --client HOST:PORT: the endpoint comes from the listener API.
    bool sockaddr_mode() const { return sockaddr_mode_; }
    /// Sockaddr mode, once the worker exists: the server listens on PORT and accepts one
    /// client; the client connects (retrying for 30 s while the server is not up yet).
    /// ep_template's err_cb hears only about the endpoint that got through.
    bool connect_sockaddr(swy_worker_h worker, const swy_ep_params_t& ep_template, swy_ep_h* ep);
    /// Sockaddr mode: meet the peer once more, then close the endpoint.
    bool close_sockaddr(bool force);

private:
    static bool launched_by_pmix();
    bool start_launched();
    bool barrier_launched();
    bool barrier_sockaddr(const std::function<void()>& idle);
    bool peer_alive_sockaddr() const;
    static void forward_error(void* arg, swy_ep_h ep, swy_status_t status);
    bool write_all(const void* data, size_t length);
    bool read_all(void* data, size_t length);
    bool send_blob(const void* data, size_t length);
    bool recv_blob(std::vector<uint8_t>* out);

    Role role_ = Role::kSelf;
    int rfd_ = -1;  ///< read end (pipe) or the socket
    int wfd_ = -1;  ///< write end (pipe) or the same socket
    pid_t child_pid_ = -1;
    bool launched_ = false;
    swy_bootstrap_h pmix_ = nullptr;  ///< launched mode, between connect and leave
    bool sockaddr_mode_ = false;
    std::string host_;               ///< sockaddr mode: the client's server host
    int port_ = -1;                  ///< sockaddr mode: PORT
    swy_worker_h worker_ = nullptr;  ///< sockaddr mode, between connect and close
    swy_ep_h ep_ = nullptr;
    swy_ep_error_cb_t user_err_cb_ = nullptr;
    void* user_err_arg_ = nullptr;
    bool err_armed_ = false;
};

}  // namespace swy::perf
