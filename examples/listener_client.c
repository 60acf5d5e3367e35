/* The client of listener_server (docs/user-guide.md, "Connecting through a sockaddr"): creates
 * its endpoint from the server's sockaddr (127.0.0.1 and the port given as the argument),
 * posts "ping" at once (it waits for the handshake), receives "pong" and says "bye".
 *
 *   cc listener_client.c $(pkg-config --cflags --libs switchyard)
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

static void on_error(void* arg, swy_ep_h ep, swy_status_t status) {
    (void)arg;
    (void)ep;
    fprintf(stderr, "client: endpoint failed: %s\n", swy_status_string(status));
}

/* Finish an operation started by a *_nb call (req is filled by that call: a separate step). */
static swy_status_t finish(swy_worker_h worker, swy_status_t status, swy_request_h req) {
    if (status == SWY_INPROGRESS) {
        status = swy_request_wait(worker, req);
        swy_request_free(req);
    }
    return status;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    swy_context_h context;
    swy_worker_h worker;
    CHECK(swy_context_create(NULL, &context));
    CHECK(swy_worker_create(context, NULL, &worker));

    struct sockaddr_in server_sa = {0};
    server_sa.sin_family = AF_INET;
    server_sa.sin_port = htons((uint16_t)atoi(argv[1]));
    server_sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    swy_ep_params_t p = {0};
    p.field_mask =
        SWY_EP_PARAM_FIELD_FLAGS | SWY_EP_PARAM_FIELD_SOCKADDR | SWY_EP_PARAM_FIELD_ERR_HANDLER;
    p.flags = SWY_EP_FLAG_SOCKADDR;
    p.sockaddr = (struct sockaddr*)&server_sa; /* copied */
    p.sockaddr_length = sizeof(server_sa);
    p.err_cb = on_error; /* refused, rejected, timed out */
    swy_ep_h ep;
    CHECK(swy_ep_create(worker, &p, &ep));

    swy_request_h req;
    swy_status_t s = swy_tag_send_nb(ep, "ping", 5, 1, NULL, &req); /* posted right away */
    CHECK(finish(worker, s, req));
    char buf[16] = {0};
    s = swy_tag_recv_nb(worker, buf, sizeof(buf), 2, ~(swy_tag_t)0, NULL, &req);
    CHECK(finish(worker, s, req));
    if (strcmp(buf, "pong") != 0) {
        fprintf(stderr, "got '%s', not pong\n", buf);
        return 1;
    }
    s = swy_tag_send_nb(ep, "bye", 4, 3, NULL, &req);
    CHECK(finish(worker, s, req));

    swy_ep_attr_t attr = {0};
    attr.field_mask = SWY_EP_ATTR_FIELD_LANE;
    CHECK(swy_ep_query(ep, &attr));
    printf("client: ping, pong, bye over %s\n", attr.transport);

    s = swy_ep_close_nb(ep, SWY_EP_CLOSE_FLUSH, &req);
    CHECK(finish(worker, s, req));
    swy_worker_destroy(worker);
    swy_context_destroy(context);
    return 0;
}
