/* The user guide's listener (docs/user-guide.md, "Connecting through a sockaddr"): a server
 * that listens on 127.0.0.1 (port 0: the kernel picks one, written to the file given as the
 * first argument), accepts one client from on_connect, answers its "ping" with "pong" and
 * exits once the client said "bye". Run listener_client with the port.
 *
 *   cc listener_server.c $(pkg-config --cflags --libs switchyard)
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <switchyard/switchyard.h>

#define CHECK(call)                                                    \
    do {                                                               \
        swy_status_t s_ = (call);                                      \
        if (s_ < 0) {                                                  \
            fprintf(stderr, "%s: %s\n", #call, swy_status_string(s_)); \
            exit(1);                                                   \
        }                                                              \
    } while (0)

struct server {
    swy_worker_h worker;
    swy_listener_h listener;
    swy_ep_h eps[1];
    int count;
};

static void on_connect(swy_conn_request_h req, void* arg) {
    struct server* s = arg;
    if (s->count == 1) { /* this example serves one client */
        swy_listener_reject(s->listener, req);
        return;
    }
    swy_ep_params_t p = {0};
    p.field_mask = SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_CONN_REQUEST;
    p.flags = SWY_EP_FLAG_CONN_REQUEST;
    p.conn_request = req; /* consumed by the call */
    if (swy_ep_create(s->worker, &p, &s->eps[s->count]) == SWY_OK) s->count++;
}

/* Finish an operation started by a *_nb call (req is filled by that call: a separate step). */
static swy_status_t finish(swy_worker_h worker, swy_status_t status, swy_request_h req) {
    if (status == SWY_INPROGRESS) {
        status = swy_request_wait(worker, req);
        swy_request_free(req);
    }
    return status;
}

static void receive(swy_worker_h worker, char* buf, size_t len, swy_tag_t tag) {
    swy_request_h req;
    swy_status_t s = swy_tag_recv_nb(worker, buf, len, tag, ~(swy_tag_t)0, NULL, &req);
    CHECK(finish(worker, s, req));
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PORT_FILE\n", argv[0]);
        return 2;
    }
    swy_context_h context;
    struct server server = {0};
    CHECK(swy_context_create(NULL, &context));
    CHECK(swy_worker_create(context, NULL, &server.worker));
    swy_worker_h worker = server.worker;

    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(0); /* the kernel picks one: swy_listener_query() */
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    swy_listener_params_t lp = {0};
    lp.field_mask = SWY_LISTENER_PARAM_FIELD_SOCKADDR | SWY_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.sockaddr = (struct sockaddr*)&sa;
    lp.sockaddr_length = sizeof(sa);
    lp.on_connect = on_connect;
    lp.arg = &server;
    swy_listener_h listener;
    CHECK(swy_listener_create(worker, &lp, &listener));
    server.listener = listener;

    swy_listener_attr_t attr = {0};
    attr.field_mask = SWY_LISTENER_ATTR_FIELD_SOCKADDR;
    CHECK(swy_listener_query(listener, &attr));
    FILE* f = fopen(argv[1], "w");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    fprintf(f, "%u\n", (unsigned)attr.port);
    fclose(f);

    while (server.count == 0)
        swy_worker_progress(worker); /* or swy_worker_wait(): it wakes up too */

    char buf[16] = {0};
    receive(worker, buf, sizeof(buf), 1);
    if (strcmp(buf, "ping") != 0) {
        fprintf(stderr, "got '%s', not ping\n", buf);
        return 1;
    }
    swy_request_h req;
    swy_status_t s = swy_tag_send_nb(server.eps[0], "pong", 5, 2, NULL, &req);
    CHECK(finish(worker, s, req));
    memset(buf, 0, sizeof(buf));
    receive(worker, buf, sizeof(buf), 3);
    if (strcmp(buf, "bye") != 0) {
        fprintf(stderr, "got '%s', not bye\n", buf);
        return 1;
    }
    printf("server: ping, pong, bye\n");

    s = swy_ep_close_nb(server.eps[0], SWY_EP_CLOSE_FLUSH, &req);
    CHECK(finish(worker, s, req));
    swy_listener_destroy(listener);
    swy_worker_destroy(worker);
    swy_context_destroy(context);
    return 0;
}
