/*
 * Point-to-point semantics of pml swy, each case checked by value: ANY_SOURCE / ANY_TAG,
 * probe family, truncation (no overrun), Ssend (does not complete before the match),
 * Bsend, persistent requests, cancel, derived datatypes, ordering, self sends and
 * communicator isolation. Run with -np 2 or more; exit code 0 only if every check passed.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, nprocs, failures;

static void check(int ok, const char* what) {
    if (!ok) {
        fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
        ++failures;
    }
}

static void fill(int* v, int n, int salt) {
    for (int i = 0; i < n; ++i)
        v[i] = i * 7 + salt;
}

static int verify(const int* v, int n, int salt) {
    for (int i = 0; i < n; ++i)
        if (v[i] != i * 7 + salt) return 0;
    return 1;
}

static void test_any_source(void) {
    if (rank == 0) {
        int seen[64] = {0};
        for (int i = 1; i < nprocs; ++i) {
            int v;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &st);
            check(st.MPI_SOURCE == v && st.MPI_TAG == 11, "ANY_SOURCE status names the sender");
            if (v > 0 && v < 64) seen[v]++;
        }
        for (int i = 1; i < nprocs && i < 64; ++i)
            check(seen[i] == 1, "each sender seen once");
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 11, MPI_COMM_WORLD);
    }
}

static void test_any_tag(void) {
    if (rank == 0) {
        int v;
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        check(v == 500 && st.MPI_TAG == 5, "ANY_TAG first message");
        MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        check(v == 7000000 && st.MPI_TAG == 7000000, "ANY_TAG second message, large tag");
        int *ub, flag;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
        check(flag && *ub == (1 << 23) - 1, "MPI_TAG_UB is 2^23-1");
    } else if (rank == 1) {
        int v = 500;
        MPI_Send(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
        v = 7000000;
        MPI_Send(&v, 1, MPI_INT, 0, 7000000, MPI_COMM_WORLD);
    }
}

static void test_probe(void) {
    enum { N = 1000, BIG = 300000 };
    int* buf = malloc(BIG * sizeof(int));
    if (rank == 1) {
        fill(buf, N, 1);
        MPI_Send(buf, N, MPI_INT, 0, 42, MPI_COMM_WORLD);
        fill(buf, N, 2);
        MPI_Send(buf, N / 2, MPI_INT, 0, 43, MPI_COMM_WORLD);
        fill(buf, BIG, 3);
        MPI_Send(buf, BIG, MPI_INT, 0, 44, MPI_COMM_WORLD);
        fill(buf, N, 4);
        MPI_Send(buf, 17, MPI_INT, 0, 45, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Status st;
        int count, flag = 0;
        MPI_Iprobe(1, 999, MPI_COMM_WORLD, &flag, &st);
        check(!flag, "iprobe for a tag never sent finds nothing");
        MPI_Probe(1, 42, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        check(count == N && st.MPI_SOURCE == 1 && st.MPI_TAG == 42, "probe status");
        MPI_Recv(buf, N, MPI_INT, 1, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(verify(buf, N, 1), "payload after probe");

        do {
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        } while (!flag);
        MPI_Get_count(&st, MPI_INT, &count);
        check(count == N / 2 && st.MPI_TAG == 43, "iprobe ANY/ANY status");
        MPI_Message msg;
        MPI_Mprobe(1, 43, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(buf, N, MPI_INT, &msg, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        check(count == N / 2 && verify(buf, N / 2, 2) && msg == MPI_MESSAGE_NULL, "mprobe+mrecv");

        do {
            MPI_Improbe(1, 44, MPI_COMM_WORLD, &flag, &msg, &st);
        } while (!flag);
        MPI_Get_count(&st, MPI_INT, &count);
        check(count == BIG, "improbe of a large (rendezvous) message");
        MPI_Request r;
        memset(buf, 0, BIG * sizeof(int));
        MPI_Imrecv(buf, BIG, MPI_INT, &msg, &r);
        MPI_Wait(&r, &st);
        check(verify(buf, BIG, 3), "imrecv payload (large)");

        /* a removed message is no longer visible to probe */
        MPI_Mprobe(1, 45, MPI_COMM_WORLD, &msg, &st);
        MPI_Iprobe(1, 45, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        check(!flag, "mprobe'd message is gone from matching");
        MPI_Mrecv(buf, 17, MPI_INT, &msg, MPI_STATUS_IGNORE);
        check(verify(buf, 17, 4), "mrecv after mprobe");
    }
    free(buf);
}

static void test_truncation(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    size_t sizes[] = {100, 1 << 20};
    for (int k = 0; k < 2; ++k) {
        size_t big = sizes[k], small = big / 2;
        unsigned char* buf = malloc(big + 64);
        if (rank == 1) {
            memset(buf, 0x5a, big);
            int rc1 = MPI_Send(buf, (int)big, MPI_BYTE, 0, 50, MPI_COMM_WORLD);
            MPI_Request r;
            MPI_Isend(buf, (int)big, MPI_BYTE, 0, 51, MPI_COMM_WORLD, &r);
            int rc2 = MPI_Wait(&r, MPI_STATUS_IGNORE);
            check(rc1 == MPI_SUCCESS && rc2 == MPI_SUCCESS,
                  "the sender of a message the receiver truncates succeeds");
        } else if (rank == 0) {
            MPI_Status st;
            memset(buf, 0, big + 64);
            int rc = MPI_Recv(buf, (int)small, MPI_BYTE, 1, 50, MPI_COMM_WORLD, &st);
            int cls;
            MPI_Error_class(rc, &cls);
            check(cls == MPI_ERR_TRUNCATE, "blocking recv reports MPI_ERR_TRUNCATE");
            int over = 0;
            for (size_t i = small; i < big + 64; ++i)
                over |= buf[i];
            check(!over, "no byte written past a truncated receive buffer");
            MPI_Request r;
            memset(buf, 0, big + 64);
            MPI_Irecv(buf, (int)small, MPI_BYTE, 1, 51, MPI_COMM_WORLD, &r);
            rc = MPI_Wait(&r, &st);
            MPI_Error_class(rc, &cls);
            check(cls == MPI_ERR_TRUNCATE, "irecv+wait reports MPI_ERR_TRUNCATE");
            over = 0;
            for (size_t i = small; i < big + 64; ++i)
                over |= buf[i];
            check(!over, "no overrun (irecv)");
            check(buf[0] == 0x5a && buf[small - 1] == 0x5a, "truncated receive keeps what fit");
        }
        free(buf);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void test_ssend(void) {
    size_t sizes[] = {8, 1 << 20};
    for (int k = 0; k < 2; ++k) {
        int n = (int)(sizes[k] / sizeof(int));
        int* buf = malloc(sizes[k]);
        if (rank == 1) {
            MPI_Request r;
            int done = 0;
            fill(buf, n, 9);
            MPI_Issend(buf, n, MPI_INT, 0, 60, MPI_COMM_WORLD, &r);
            double t0 = MPI_Wtime();
            while (MPI_Wtime() - t0 < 0.2 && !done)
                MPI_Test(&r, &done, MPI_STATUS_IGNORE);
            check(!done, "Issend did not complete before the receive was posted");
            int go = 1;
            MPI_Send(&go, 1, MPI_INT, 0, 61, MPI_COMM_WORLD);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Ssend(buf, n, MPI_INT, 0, 62, MPI_COMM_WORLD); /* blocking form */
        } else if (rank == 0) {
            int go;
            MPI_Recv(&go, 1, MPI_INT, 1, 61, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(buf, n, MPI_INT, 1, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(verify(buf, n, 9), "ssend payload");
            memset(buf, 0, sizes[k]);
            MPI_Recv(buf, n, MPI_INT, 1, 62, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(verify(buf, n, 9), "blocking ssend payload");
        }
        free(buf);
    }
}

static void test_bsend(void) {
    enum { N1 = 10, N2 = 100000 };
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 1) {
        int* a = malloc(N2 * sizeof(int));
        int rc = MPI_Bsend(a, N1, MPI_INT, 0, 70, MPI_COMM_WORLD);
        int cls;
        MPI_Error_class(rc, &cls);
        check(cls == MPI_ERR_BUFFER, "Bsend without an attached buffer fails with MPI_ERR_BUFFER");
        int size = 2 * (N2 + N1) * (int)sizeof(int) + 4 * MPI_BSEND_OVERHEAD;
        void* pool = malloc(size);
        MPI_Buffer_attach(pool, size);
        fill(a, N1, 10);
        MPI_Bsend(a, N1, MPI_INT, 0, 71, MPI_COMM_WORLD);
        fill(a, N1, 0); /* the copy went out, not the user buffer */
        fill(a, N2, 11);
        MPI_Request r;
        MPI_Ibsend(a, N2, MPI_INT, 0, 72, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        fill(a, N2, 0);
        int token = 1;
        MPI_Send(&token, 1, MPI_INT, 0, 73, MPI_COMM_WORLD); /* receiver starts only now */
        void* p;
        MPI_Buffer_detach(&p, &size); /* waits until buffered messages left */
        free(pool);
        free(a);
    } else if (rank == 0) {
        int *a = malloc(N2 * sizeof(int)), token;
        MPI_Recv(&token, 1, MPI_INT, 1, 73, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(a, N1, MPI_INT, 1, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(verify(a, N1, 10), "bsend payload (small)");
        MPI_Recv(a, N2, MPI_INT, 1, 72, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(verify(a, N2, 11), "ibsend payload (large)");
        free(a);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void test_persistent(void) {
    int sizes[] = {4, 300000};
    for (int k = 0; k < 2; ++k) {
        int n = sizes[k];
        int* buf = malloc(n * sizeof(int));
        MPI_Request r;
        if (rank == 1) {
            MPI_Send_init(buf, n, MPI_INT, 0, 80, MPI_COMM_WORLD, &r);
            for (int it = 0; it < 10; ++it) {
                fill(buf, n, 100 + it);
                MPI_Start(&r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
            MPI_Request_free(&r);
            check(r == MPI_REQUEST_NULL, "persistent send freed");
        } else if (rank == 0) {
            MPI_Recv_init(buf, n, MPI_INT, 1, 80, MPI_COMM_WORLD, &r);
            MPI_Status st;
            MPI_Wait(&r, &st); /* inactive persistent request: returns at once */
            for (int it = 0; it < 10; ++it) {
                memset(buf, 0, n * sizeof(int));
                MPI_Start(&r);
                MPI_Wait(&r, &st);
                int count;
                MPI_Get_count(&st, MPI_INT, &count);
                check(count == n && st.MPI_SOURCE == 1 && verify(buf, n, 100 + it),
                      "persistent receive payload");
            }
            MPI_Request_free(&r);
        }
        free(buf);
    }
    /* Startall with a send and a receive in one call (pairs 0<->1) */
    if (rank < 2) {
        int out[3] = {rank, 2, 3}, in[3] = {0};
        MPI_Request rs[2];
        MPI_Recv_init(in, 3, MPI_INT, 1 - rank, 81, MPI_COMM_WORLD, &rs[0]);
        MPI_Send_init(out, 3, MPI_INT, 1 - rank, 81, MPI_COMM_WORLD, &rs[1]);
        for (int it = 0; it < 5; ++it) {
            out[2] = it;
            MPI_Startall(2, rs);
            MPI_Waitall(2, rs, MPI_STATUSES_IGNORE);
            check(in[0] == 1 - rank && in[2] == it, "startall exchange");
        }
        MPI_Request_free(&rs[0]);
        MPI_Request_free(&rs[1]);
    }
}

static void test_cancel(void) {
    if (rank == 0) {
        int v = 0, flag = 0;
        MPI_Request r;
        MPI_Status st;
        MPI_Irecv(&v, 1, MPI_INT, 1, 777, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        check(flag, "an unmatched receive is cancelled");
        /* a cancelled receive must not eat the message meant for the next one */
        MPI_Irecv(&v, 1, MPI_INT, 1, 778, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Barrier(MPI_COMM_WORLD); /* only now does rank 1 send 778 */
        MPI_Recv(&v, 1, MPI_INT, 1, 778, MPI_COMM_WORLD, &st);
        check(v == 4242, "message after a cancelled receive goes to the next receive");
        MPI_Recv(&v, 1, MPI_INT, 1, 779, MPI_COMM_WORLD, &st);
        check(v == 4343, "send-side cancel leaves the message delivered");
    } else if (rank == 1) {
        int v = 4242;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Send(&v, 1, MPI_INT, 0, 778, MPI_COMM_WORLD);
        int w = 4343, flag = 1;
        MPI_Request r;
        MPI_Status st;
        MPI_Isend(&w, 1, MPI_INT, 0, 779, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &flag);
        check(!flag, "sends are not cancelled");
    }
    if (rank > 1) MPI_Barrier(MPI_COMM_WORLD);
}

static void test_request_free_active(void) {
    /* MPI_Request_free on sends still in flight (eager and rendezvous): the messages must
     * still arrive intact, and the requests must be released when they finish. */
    enum { N = 300000, ROUNDS = 50 };
    int* buf = malloc(N * sizeof(int));
    for (int round = 0; round < ROUNDS; ++round) {
        int n = round % 2 ? N : 3;
        if (rank == 1) {
            MPI_Request r;
            fill(buf, n, round);
            MPI_Isend(buf, n, MPI_INT, 0, 110, MPI_COMM_WORLD, &r);
            MPI_Request_free(&r);
            check(r == MPI_REQUEST_NULL, "request_free sets MPI_REQUEST_NULL");
            int ack;
            MPI_Recv(&ack, 1, MPI_INT, 0, 111, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 0) {
            MPI_Recv(buf, n, MPI_INT, 1, 110, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(verify(buf, n, round), "message of a freed active send arrives intact");
            MPI_Send(&round, 1, MPI_INT, 1, 111, MPI_COMM_WORLD);
        }
    }
    free(buf);
}

static void test_datatypes(void) {
    /* vector of 3 ints every 5: non-contiguous on both sides, small and large */
    int counts[] = {100, 200000};
    for (int k = 0; k < 2; ++k) {
        int n = counts[k];
        MPI_Datatype vec;
        MPI_Type_vector(n, 3, 5, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int* v = malloc((size_t)n * 5 * sizeof(int));
        int* c = malloc((size_t)n * 3 * sizeof(int));
        if (rank == 1) {
            for (int i = 0; i < n * 5; ++i)
                v[i] = (i % 5) < 3 ? i : -1;
            MPI_Send(v, 1, vec, 0, 90, MPI_COMM_WORLD);
            MPI_Send(v, 1, vec, 0, 91, MPI_COMM_WORLD);
            MPI_Request r;
            MPI_Isend(v, 1, vec, 0, 92, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else if (rank == 0) {
            /* vector -> contiguous */
            MPI_Status st;
            MPI_Recv(c, n * 3, MPI_INT, 1, 90, MPI_COMM_WORLD, &st);
            int ok = 1, count;
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < 3; ++j)
                    ok &= c[i * 3 + j] == i * 5 + j;
            MPI_Get_count(&st, MPI_INT, &count);
            check(ok && count == n * 3, "vector sent, contiguous received");
            /* vector -> vector: the gaps must stay untouched */
            for (int i = 0; i < n * 5; ++i)
                v[i] = -7;
            MPI_Recv(v, 1, vec, 1, 91, MPI_COMM_WORLD, &st);
            ok = 1;
            for (int i = 0; i < n * 5; ++i)
                ok &= v[i] == ((i % 5) < 3 ? i : -7);
            MPI_Get_count(&st, vec, &count);
            check(ok && count == 1, "vector received into vector, gaps untouched");
            /* nonblocking vector receive, with the type freed while in flight */
            MPI_Datatype vec2;
            MPI_Type_dup(vec, &vec2);
            for (int i = 0; i < n * 5; ++i)
                v[i] = -7;
            MPI_Request r;
            MPI_Irecv(v, 1, vec2, 1, 92, MPI_COMM_WORLD, &r);
            MPI_Type_free(&vec2);
            MPI_Wait(&r, &st);
            ok = 1;
            for (int i = 0; i < n * 5; ++i)
                ok &= v[i] == ((i % 5) < 3 ? i : -7);
            check(ok, "irecv into a vector type freed while the receive was pending");
        }
        MPI_Type_free(&vec);
        free(v);
        free(c);
    }
    /* a contiguous type with a non-zero lower bound (struct with offset) */
    {
        MPI_Datatype shifted;
        int bl = 4;
        MPI_Aint disp = 2 * sizeof(int);
        MPI_Datatype t = MPI_INT;
        MPI_Type_create_struct(1, &bl, &disp, &t, &shifted);
        MPI_Type_commit(&shifted);
        int a[8];
        if (rank == 1) {
            for (int i = 0; i < 8; ++i)
                a[i] = 100 + i;
            MPI_Send(a, 1, shifted, 0, 93, MPI_COMM_WORLD);
        } else if (rank == 0) {
            for (int i = 0; i < 8; ++i)
                a[i] = 0;
            MPI_Recv(a, 1, shifted, 1, 93, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check(a[0] == 0 && a[1] == 0 && a[2] == 102 && a[5] == 105 && a[6] == 0,
                  "contiguous type with a lower bound offset");
        }
        MPI_Type_free(&shifted);
    }
}

static void test_ordering_and_self(void) {
    enum { M = 500 };
    if (rank == 1) {
        int* big = malloc(100000 * sizeof(int));
        MPI_Request rq[M];
        for (int i = 0; i < M; ++i) {
            big[i] = i; /* first element carries the sequence number */
            int n = (i % 50 == 0) ? 100000 : 1 + i % 7;
            if (i % 50 == 0) {
                MPI_Send(&i, 1, MPI_INT, 0, 100, MPI_COMM_WORLD);
                rq[i] = MPI_REQUEST_NULL;
                (void)n;
            } else {
                MPI_Isend(&big[i], 1, MPI_INT, 0, 100, MPI_COMM_WORLD, &rq[i]);
            }
        }
        MPI_Waitall(M, rq, MPI_STATUSES_IGNORE);
        free(big);
    } else if (rank == 0) {
        int ok = 1;
        for (int i = 0; i < M; ++i) {
            int v = -1;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 100, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ok &= v == i;
        }
        check(ok, "messages from one sender match in send order");
    }
    /* self: Isend to myself, then receive it */
    int out[64], in[64];
    fill(out, 64, rank);
    MPI_Request r;
    MPI_Isend(out, 64, MPI_INT, rank, 101, MPI_COMM_WORLD, &r);
    MPI_Recv(in, 64, MPI_INT, rank, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    check(verify(in, 64, rank), "send to self");
    /* synchronous send to self: completes only once the receive below matched it */
    int done = 0;
    MPI_Issend(out, 64, MPI_INT, rank, 102, MPI_COMM_WORLD, &r);
    for (int i = 0; i < 1000; ++i)
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    check(!done, "Issend to self waits for the receive");
    memset(in, 0, sizeof(in));
    MPI_Recv(in, 64, MPI_INT, rank, 102, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    check(verify(in, 64, rank), "Issend to self payload");
}

static void test_comms(void) {
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (rank == 1) {
        int a = 1, b = 2;
        MPI_Send(&b, 1, MPI_INT, 0, 3, dup);
        MPI_Send(&a, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
    } else if (rank == 0) {
        int v;
        MPI_Recv(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check(v == 1, "world receive does not match a message sent on a dup");
        MPI_Recv(&v, 1, MPI_INT, 1, 3, dup, MPI_STATUS_IGNORE);
        check(v == 2, "dup receive gets its own message");
    }
    /* split in reverse order: ranks differ from world ranks */
    MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - rank, &half);
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    int token = hr, got = -1;
    MPI_Status st;
    MPI_Sendrecv(&token, 1, MPI_INT, (hr + 1) % hs, 4, &got, 1, MPI_INT, MPI_ANY_SOURCE, 4, half,
                 &st);
    check(got == (hr + hs - 1) % hs && st.MPI_SOURCE == got, "ring on a split communicator");
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);

    /* intercommunicator: even and odd world ranks; each rank of the even group sends its
     * group rank to remote rank 0 of the odd group, which receives with ANY_SOURCE */
    MPI_Comm local, inter;
    int color = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 5, &inter);
    int lr, remote;
    MPI_Comm_rank(local, &lr);
    MPI_Comm_remote_size(inter, &remote);
    if (color == 0) {
        MPI_Send(&lr, 1, MPI_INT, 0, 6, inter);
    } else if (lr == 0) {
        int seen = 0;
        for (int i = 0; i < remote; ++i) {
            int v = -1;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 6, inter, &st);
            check(st.MPI_SOURCE == v && v >= 0 && v < remote,
                  "intercomm source is the remote rank");
            seen |= 1 << v;
        }
        check(seen == (1 << remote) - 1, "intercomm: every remote rank seen");
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2) {
        fprintf(stderr, "run with -np 2 or more\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    struct {
        const char* name;
        void (*fn)(void);
    } tests[] = {
        {"any_source", test_any_source},
        {"any_tag", test_any_tag},
        {"probe", test_probe},
        {"truncation", test_truncation},
        {"ssend", test_ssend},
        {"bsend", test_bsend},
        {"persistent", test_persistent},
        {"cancel", test_cancel},
        {"request_free", test_request_free_active},
        {"datatypes", test_datatypes},
        {"ordering_self", test_ordering_and_self},
        {"comms", test_comms},
    };
    int total_fail = 0;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); ++i) {
        int before = failures, all;
        tests[i].fn();
        int mine = failures - before;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0) printf("%-14s %s\n", tests[i].name, all ? "FAIL" : "PASS");
        total_fail += all;
    }
    if (rank == 0) printf("features: %s\n", total_fail ? "FAIL" : "PASS");
    MPI_Finalize();
    return total_fail ? 1 : 0;
}
