/* The user guide's complete two-process example (docs/user-guide.md, "A complete two-process
 * example"): two processes connected by two pipes that carry the worker addresses. Process 1
 * sends a string with tag 42; process 0 receives it. Both create their own context and worker
 * after fork(). Keep this file and the guide's listing the same.
 *
 *   cc pingpong.c $(pkg-config --cflags --libs switchyard)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <switchyard/switchyard.h>

#define CHECK(call)                                                    \
    do {                                                               \
        swy_status_t s_ = (call);                                      \
        if (s_ < 0) {                                                  \
            fprintf(stderr, "%s: %s\n", #call, swy_status_string(s_)); \
            exit(1);                                                   \
        }                                                              \
    } while (0)

static void write_all(int fd, const void* p, size_t n) {
    const char* c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n);
        if (k <= 0) {
            perror("write");
            exit(1);
        }
        c += k;
        n -= (size_t)k;
    }
}

static void read_all(int fd, void* p, size_t n) {
    char* c = p;
    while (n > 0) {
        ssize_t k = read(fd, c, n);
        if (k <= 0) {
            perror("read");
            exit(1);
        }
        c += k;
        n -= (size_t)k;
    }
}

/* Finish an operation started by a *_nb call, whichever way it went. Call it only after the
 * *_nb call returned (a separate statement): req is filled by that call. */
static swy_status_t finish(swy_worker_h worker, swy_status_t status, swy_request_h req) {
    if (status == SWY_INPROGRESS) {
        status = swy_request_wait(worker, req);
        swy_request_free(req);
    }
    return status;
}

static int run(int rank, int to_peer, int from_peer) {
    swy_context_h context;
    swy_worker_h worker;
    CHECK(swy_context_create(NULL, &context));        /* reads SWY_* from the environment */
    CHECK(swy_worker_create(context, NULL, &worker)); /* single-threaded */

    /* Exchange addresses: length, then bytes. */
    void* address;
    size_t length;
    CHECK(swy_worker_get_address(worker, &address, &length));
    write_all(to_peer, &length, sizeof(length));
    write_all(to_peer, address, length);
    swy_worker_release_address(worker, address);

    size_t peer_length;
    read_all(from_peer, &peer_length, sizeof(peer_length));
    void* peer_address = malloc(peer_length);
    read_all(from_peer, peer_address, peer_length);

    swy_ep_params_t ep_params;
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.remote_address = peer_address;
    ep_params.remote_address_length = peer_length;
    swy_ep_h ep;
    CHECK(swy_ep_create(worker, &ep_params, &ep));
    free(peer_address); /* the endpoint keeps what it needs */

    const swy_tag_t tag = 42;
    if (rank == 1) {
        const char msg[] = "hello from rank 1";
        swy_request_h req;
        swy_status_t s = swy_tag_send_nb(ep, msg, sizeof(msg), tag, NULL, &req);
        CHECK(finish(worker, s, req));
    } else {
        char buf[64];
        swy_tag_recv_info_t info;
        swy_request_params_t rp;
        memset(&rp, 0, sizeof(rp));
        rp.field_mask = SWY_REQ_PARAM_FIELD_RECV_INFO;
        rp.recv_info = &info; /* filled if the receive completes immediately */
        swy_request_h req;
        swy_status_t s = swy_tag_recv_nb(worker, buf, sizeof(buf), tag, ~(swy_tag_t)0, &rp, &req);
        if (s == SWY_INPROGRESS) {
            s = swy_request_wait(worker, req);
            if (s >= 0) swy_request_recv_info(req, &info);
            swy_request_free(req);
        }
        CHECK(s);
        printf("rank 0 got %zu bytes with tag %llu: %s\n", info.length,
               (unsigned long long)info.sender_tag, buf);
        if (info.length != sizeof("hello from rank 1") || strcmp(buf, "hello from rank 1") != 0)
            return 1;
    }

    /* Both sides are done with each other's memory: meet, then disconnect. */
    char token = 0;
    write_all(to_peer, &token, 1);
    read_all(from_peer, &token, 1);

    swy_request_h close_req;
    swy_status_t s = swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &close_req);
    CHECK(finish(worker, s, close_req));
    swy_worker_destroy(worker);
    swy_context_destroy(context);
    return 0;
}

int main(void) {
    int to_child[2], to_parent[2];
    if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
        perror("pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) return run(1, to_parent[1], to_child[0]);
    int rc = run(0, to_child[1], to_parent[0]);
    int status;
    waitpid(pid, &status, 0);
    return rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}
