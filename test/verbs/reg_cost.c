/* Cost of one memory registration (ibv_reg_mr + ibv_dereg_mr) by size on the first RDMA
 * device: the price of Switchyard's per-transfer registration (docs/verbs.md). Prints one
 * line per size: bytes, microseconds per register+deregister pair (best of 5 runs). */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void) {
    int n = 0;
    struct ibv_device** list = ibv_get_device_list(&n);
    if (list == NULL || n == 0) {
        fprintf(stderr, "reg_cost: no RDMA device\n");
        return 77;
    }
    struct ibv_context* ctx = ibv_open_device(list[0]);
    struct ibv_pd* pd = ctx != NULL ? ibv_alloc_pd(ctx) : NULL;
    if (pd == NULL) {
        fprintf(stderr, "reg_cost: cannot open %s\n", ibv_get_device_name(list[0]));
        return 1;
    }
    printf("# %s: ibv_reg_mr + ibv_dereg_mr, fresh pages each time (best of 5)\n",
           ibv_get_device_name(list[0]));
    printf("%12s %12s %10s\n", "bytes", "us", "GB/s");
    for (size_t size = 4096; size <= (64u << 20); size *= 4) {
        double best = 1e30;
        for (int run = 0; run < 5; ++run) {
            char* buf = malloc(size);
            memset(buf, run, size); /* touched, as a send buffer would be */
            double t0 = now_us();
            struct ibv_mr* mr =
                ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
            if (mr == NULL) {
                perror("ibv_reg_mr");
                return 1;
            }
            ibv_dereg_mr(mr);
            double t = now_us() - t0;
            if (t < best) best = t;
            free(buf);
        }
        printf("%12zu %12.1f %10.2f\n", size, best, size / best / 1e3);
    }
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
