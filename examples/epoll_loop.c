/* The user guide's event loop (docs/user-guide.md, "Blocking waits and the event fd"): a
 * receiver that sleeps in epoll_wait() on the worker's event fd and another fd of its own,
 * instead of polling. Process 1 sends kMessages messages, 20 ms apart, then writes one byte
 * on a pipe; process 0 receives them through callbacks from inside its loop and stops once it
 * has every message and the byte.
 *
 *   cc epoll_loop.c $(pkg-config --cflags --libs switchyard)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
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

enum { kMessages = 12, kWaitMs = 10000 };

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

/* Context, worker and an endpoint to the peer whose address comes through the pipes. */
static swy_ep_h connect_peer(swy_context_h* context, swy_worker_h* worker, int to_peer,
                             int from_peer) {
    CHECK(swy_context_create(NULL, context));
    CHECK(swy_worker_create(*context, NULL, worker));
    void* address;
    size_t length;
    CHECK(swy_worker_get_address(*worker, &address, &length));
    write_all(to_peer, &length, sizeof(length));
    write_all(to_peer, address, length);
    swy_worker_release_address(*worker, address);
    size_t peer_length;
    read_all(from_peer, &peer_length, sizeof(peer_length));
    void* peer_address = malloc(peer_length);
    read_all(from_peer, peer_address, peer_length);
    swy_ep_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = SWY_EP_PARAM_FIELD_REMOTE_ADDRESS;
    p.remote_address = peer_address;
    p.remote_address_length = peer_length;
    swy_ep_h ep;
    CHECK(swy_ep_create(*worker, &p, &ep));
    free(peer_address);
    return ep;
}

struct receiver {
    int received; /* messages delivered with the right contents */
    int bad;      /* messages delivered wrong */
    uint64_t values[kMessages];
};

static void on_received(swy_request_h req, swy_status_t status, const swy_tag_recv_info_t* info,
                        void* user_data) {
    struct receiver* r = user_data;
    const int i = (int)info->sender_tag;
    if (status == SWY_OK && i >= 0 && i < kMessages && r->values[i] == 1000u + (unsigned)i)
        r->received++;
    else
        r->bad++;
    swy_request_free(req);
}

static void sender(int to_peer, int from_peer, int done_fd) {
    swy_context_h context;
    swy_worker_h worker;
    swy_ep_h ep = connect_peer(&context, &worker, to_peer, from_peer);
    char token;
    read_all(from_peer, &token, 1); /* the receives are posted */
    for (int i = 0; i < kMessages; ++i) {
        uint64_t value = 1000u + (unsigned)i;
        swy_request_h req;
        swy_status_t s = swy_tag_send_nb(ep, &value, sizeof(value), (swy_tag_t)i, NULL, &req);
        if (s == SWY_INPROGRESS) {
            s = swy_request_wait(worker, req);
            swy_request_free(req);
        }
        CHECK(s);
        struct timespec gap = {0, 20 * 1000 * 1000};
        nanosleep(&gap, NULL);
    }
    write_all(done_fd, "x", 1);
    read_all(from_peer, &token, 1); /* the receiver has everything: disconnect */
    swy_request_h close_req;
    swy_status_t s = swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &close_req);
    if (s == SWY_INPROGRESS) {
        s = swy_request_wait(worker, close_req);
        swy_request_free(close_req);
    }
    CHECK(s);
    swy_worker_destroy(worker);
    swy_context_destroy(context);
}

static int receiver(int to_peer, int from_peer, int done_fd) {
    swy_context_h context;
    swy_worker_h worker;
    swy_ep_h ep = connect_peer(&context, &worker, to_peer, from_peer);
    struct receiver r;
    memset(&r, 0, sizeof(r));
    for (int i = 0; i < kMessages; ++i) {
        swy_request_params_t p;
        memset(&p, 0, sizeof(p));
        p.field_mask = SWY_REQ_PARAM_FIELD_CALLBACK | SWY_REQ_PARAM_FIELD_USER_DATA |
                       SWY_REQ_PARAM_FIELD_FLAGS;
        p.flags = SWY_REQ_FLAG_NO_IMM_COMPLETE; /* every completion through the callback */
        p.recv_cb = on_received;
        p.user_data = &r;
        swy_request_h req;
        CHECK(swy_tag_recv_nb(worker, &r.values[i], sizeof(r.values[i]), (swy_tag_t)i,
                              ~(swy_tag_t)0, &p, &req));
    }
    write_all(to_peer, "r", 1);

    /* One epoll set: the worker's event fd and the application's own fd. */
    int efd;
    CHECK(swy_worker_get_efd(worker, &efd));
    int epfd = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.fd = efd;
    epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev);
    ev.data.fd = done_fd;
    epoll_ctl(epfd, EPOLL_CTL_ADD, done_fd, &ev);

    int sender_done = 0, wakeups = 0;
    for (;;) {
        while (swy_worker_progress(worker) > 0)
            ; /* drain everything that is ready */
        if (r.received + r.bad == kMessages && sender_done) break;
        swy_status_t s = swy_worker_arm(worker);
        if (s == SWY_ERR_BUSY) continue; /* events arrived meanwhile: progress again */
        CHECK(s);
        struct epoll_event events[2];
        int n = epoll_wait(epfd, events, 2, kWaitMs); /* safe to block: armed */
        if (n == 0) {
            fprintf(stderr, "no event for %d ms: %d of %d messages\n", kWaitMs, r.received,
                    kMessages);
            return 1;
        }
        ++wakeups;
        for (int i = 0; i < n; ++i) {
            if (events[i].data.fd == done_fd) {
                char byte;
                read_all(done_fd, &byte, 1);
                sender_done = 1;
                epoll_ctl(epfd, EPOLL_CTL_DEL, done_fd, NULL);
            }
        }
    }
    close(epfd);
    printf("epoll loop: %d of %d messages, %d bad, %d wake-ups\n", r.received, kMessages, r.bad,
           wakeups);
    write_all(to_peer, "d", 1);
    swy_request_h close_req;
    swy_status_t s = swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &close_req);
    if (s == SWY_INPROGRESS) {
        s = swy_request_wait(worker, close_req);
        swy_request_free(close_req);
    }
    CHECK(s);
    swy_worker_destroy(worker);
    swy_context_destroy(context);
    return r.received == kMessages && r.bad == 0 ? 0 : 1;
}

int main(void) {
    int to_child[2], to_parent[2], done[2];
    if (pipe(to_child) != 0 || pipe(to_parent) != 0 || pipe(done) != 0) {
        perror("pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        sender(to_parent[1], to_child[0], done[1]);
        return 0;
    }
    int rc = receiver(to_child[1], to_parent[0], done[0]);
    int status;
    waitpid(pid, &status, 0);
    return rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}
