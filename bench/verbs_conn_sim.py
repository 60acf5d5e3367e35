#!/usr/bin/env python3
"""Connection-scale model of the verbs transport (docs/verbs.md, "Connection scale").

For a job of NODES x RANKS processes that is fully connected (every rank talks to every other
rank: the worst case, which MPI all-to-all and many PGAS codes reach), it computes per node:
queue pairs, host memory of QP send queues, completion queues, shared receive queues and
receive buffers, and the connection set-up messages, for five ways of connecting:

  before    Switchyard per-process RC before issue #18: one QP per direction of a pair
            (each endpoint its own connection), 64 + 1 receive buffers granted per connection
  after     per-process RC after issue #18: one QP per pair (the second endpoint joins the
            first connection), 8 + 1 buffers granted per connection, lent up to 64 + 1 when busy
  xrc       Open MPI's XRC-style sharing: each process sends to a remote node through one XRC
            initiator QP, and the node's processes share the target QPs through one XRC
            domain (buffers in each process's XRC SRQ)
  dc        UCX's Dynamically Connected transport (mlx5 only): a small pool of DC initiators
            per process and one DC target, an address handle per remote process
  node      node-shared RC (the Linux rv module's idea): one RC connection per pair of
            nodes, shared by every process of the node through a per-node agent (rv: the
            kernel), receive buffers per remote node, credits lent between its processes

The unit costs are parameters (defaults: what the code uses and what mlx5 allocates); the
model is arithmetic, not a measurement. Run:  bench/verbs_conn_sim.py [--nodes 1000 10000]
[--ranks 64] [--busy 0.0] [--csv]
"""
import argparse
import math

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


def pow2(n):
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


class Units:
    """Per-object costs. Defaults: Switchyard's settings and mlx5's allocation rules."""

    def __init__(self, a):
        self.seg = a.seg_size  # receive / bounce buffer (SWY_VERBS_SEG_SIZE)
        self.sq_depth = a.sq_depth  # send WRs per QP (SWY_VERBS_SQ_DEPTH)
        self.credits_max = a.rx_credits  # SWY_VERBS_RX_CREDITS
        self.credits_init = 8  # VerbsInterface::kInitialCredits
        self.wqe = a.sq_wqe_bytes  # one send WQE with 256 B inline (mlx5: 5 x 64 B, rounded)
        self.cqe = 64  # bytes per CQE (mlx5)
        self.srq_wqe = 32  # bytes per SRQ WQE with one SGE (mlx5)
        self.qp_ctx = a.qp_context_bytes  # adapter context per QP (ICM, in host memory)
        self.ring_slot = 16  # Switchyard's per-WR bookkeeping (WrSlot)
        self.conn_struct = 512  # Switchyard's Connection object, socket, credit word
        self.ah = 64  # one address handle (DC: per remote process)
        self.busy = a.busy  # fraction of connections that are busy (grants lent to the max)

    def sq_bytes(self, depth):
        return pow2(depth * self.wqe)


def per_connection_rc(u, credits_init, credits_max, cq_per_conn, busy):
    """Host bytes of one per-process RC connection of Switchyard."""
    credits = credits_init + busy * (credits_max - credits_init)
    rx = (credits + 1) * u.seg
    srq = (credits_max + 1) * u.srq_wqe
    cq = cq_per_conn * u.cqe
    return {
        "sq": u.sq_bytes(u.sq_depth) + u.qp_ctx,
        "cq": cq,
        "srq": srq,
        "rx": rx,
        "host": u.sq_depth * u.ring_slot + u.conn_struct,
    }


def model(nodes, ranks, u):
    P = nodes * ranks
    peers = P - 1
    remote_nodes = nodes - 1
    out = {}

    # before: two connections per pair (one per endpoint), 64 + 1 buffers each, one CQ of
    # 64 x 64 + 8 x 256 + 64 entries for at most 63 connections (it never went further).
    c = per_connection_rc(u, u.credits_max, u.credits_max, 0, 0)
    conns = 2 * peers
    cq_total = 64 * u.credits_max + 8 * u.sq_depth + 64
    out["before"] = {
        "qps_node": ranks * conns,
        "sq": ranks * conns * c["sq"],
        "cq": ranks * cq_total * u.cqe,
        "srq": ranks * 64 * u.credits_max * u.srq_wqe,
        "rx": ranks * conns * c["rx"],
        "host": ranks * conns * c["host"],
        # every endpoint makes its own connection: ranks x peers handshakes started per node,
        # as many answered; 2 messages each (request, reply; the TCP connect not counted)
        "setup_msgs_node": 2 * ranks * peers,
        "works": peers <= 63,
    }

    # after: one connection per pair, 8 + 1 buffers (up to 64 + 1 when busy), CQ entries
    # reserved per connection: its send queue + its largest grant + goodbye.
    c = per_connection_rc(u, u.credits_init, u.credits_max, u.sq_depth + u.credits_max + 1, u.busy)
    conns = peers
    out["after"] = {
        "qps_node": ranks * conns,
        "sq": ranks * conns * c["sq"],
        "cq": ranks * conns * c["cq"],
        "srq": ranks * conns * c["srq"],
        "rx": ranks * conns * c["rx"],
        "host": ranks * conns * c["host"],
        # the first endpoint of a pair makes the connection, the second joins it: still one
        # exchange per endpoint (the join saves the QP and its buffers, not the messages)
        "setup_msgs_node": 2 * ranks * peers,
        "works": True,
    }

    # xrc: per process, one initiator QP per remote node; per node, one target QP per remote
    # initiator (P - ranks of them); each process one XRC SRQ whose buffers every remote sender
    # shares (credits per remote node instead of per remote process).
    ini = ranks * remote_nodes
    tgt = ranks * remote_nodes  # one TGT per remote INI that talks to this node
    rx_credits_per_node = u.credits_init * 4  # a remote node's 64 ranks share them
    out["xrc"] = {
        "qps_node": ini + tgt,
        "sq": ini * (u.sq_bytes(u.sq_depth) + u.qp_ctx) + tgt * u.qp_ctx,
        "cq": ranks * (remote_nodes * u.sq_depth + remote_nodes * rx_credits_per_node) * u.cqe,
        "srq": ranks * remote_nodes * rx_credits_per_node * u.srq_wqe,
        "rx": ranks * remote_nodes * rx_credits_per_node * u.seg,
        "host": ini * (u.sq_depth * u.ring_slot + u.conn_struct) + ranks * peers * u.ah // 2,
        # one exchange per initiator QP; SRQ numbers travel in the worker addresses
        "setup_msgs_node": 2 * ini,
        "works": True,
    }

    # dc: per process 16 DC initiators + 1 DC target; an address handle per remote process
    dci = 16
    out["dc"] = {
        "qps_node": ranks * (dci + 1),
        "sq": ranks * dci * (u.sq_bytes(u.sq_depth) + u.qp_ctx) + ranks * u.qp_ctx,
        "cq": ranks * (dci * u.sq_depth + 4096) * u.cqe,
        "srq": ranks * 4096 * u.srq_wqe,
        "rx": ranks * 4096 * u.seg,  # one shared pool per process; RNR-based flow control
        "host": ranks * peers * u.ah,
        "setup_msgs_node": 0,  # connectionless: the DCT number travels in the address
        "works": True,
    }

    # node: one RC connection per pair of nodes, shared by the node's processes through a
    # per-node agent; a deeper send queue (its ranks share it) and receive buffers per remote
    # node (credits per node, lent among the node's ranks).
    sq_shared = min(u.sq_depth * 16, 16384)
    rx_node = u.credits_init * 16
    out["node"] = {
        "qps_node": remote_nodes,
        "sq": remote_nodes * (u.sq_bytes(sq_shared) + u.qp_ctx),
        "cq": remote_nodes * (sq_shared + rx_node) * u.cqe,
        "srq": remote_nodes * rx_node * u.srq_wqe,
        "rx": remote_nodes * rx_node * u.seg,
        "host": remote_nodes * (sq_shared * u.ring_slot + u.conn_struct) + ranks * P * 8,
        # one exchange per pair of nodes, by the node agents; a process joins its agent locally
        "setup_msgs_node": remote_nodes,
        "works": True,
    }
    for v in out.values():
        v["mem_node"] = v["sq"] + v["cq"] + v["srq"] + v["rx"] + v["host"]
    return out


def human(n):
    for unit, size in (("TiB", 1024 * GiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--busy", type=float, default=0.0,
                    help="fraction of connections whose grant was lent up to the maximum")
    ap.add_argument("--seg-size", type=int, default=8192)
    ap.add_argument("--sq-depth", type=int, default=256)
    ap.add_argument("--rx-credits", type=int, default=64)
    ap.add_argument("--sq-wqe-bytes", type=int, default=320)
    ap.add_argument("--qp-context-bytes", type=int, default=512)
    ap.add_argument("--csv", action="store_true")
    a = ap.parse_args()
    u = Units(a)
    cols = ["qps_node", "sq", "cq", "srq", "rx", "host", "mem_node", "setup_msgs_node"]
    if a.csv:
        print("nodes,ranks,scheme," + ",".join(cols) + ",works")
    for n in a.nodes:
        m = model(n, a.ranks, u)
        if a.csv:
            for k, v in m.items():
                print(f"{n},{a.ranks},{k}," + ",".join(str(int(v[c])) for c in cols) + f",{v['works']}")
            continue
        P = n * a.ranks
        print(f"\n{n} nodes x {a.ranks} ranks = {P} processes, fully connected, busy {a.busy:.0%}"
              " (per node; per rank = / ranks)")
        print(f"{'scheme':8} {'QPs/node':>12} {'QPs/rank':>10} {'send queues':>12} {'CQs':>10}"
              f" {'SRQs':>10} {'rx buffers':>11} {'other':>10} {'total/node':>11}"
              f" {'per rank':>10} {'set-up msgs/node':>17}")
        for k, v in m.items():
            note = "" if v["works"] else "  (refused past 63 peers)"
            print(f"{k:8} {v['qps_node']:>12,} {v['qps_node'] / a.ranks:>10,.0f} {human(v['sq']):>12}"
                  f" {human(v['cq']):>10} {human(v['srq']):>10} {human(v['rx']):>11}"
                  f" {human(v['host']):>10} {human(v['mem_node']):>11}"
                  f" {human(v['mem_node'] / a.ranks):>10} {v['setup_msgs_node']:>17,}{note}")
        b, af, nd = m["before"], m["after"], m["node"]
        print(f"QPs: after/before {af['qps_node'] / b['qps_node']:.2f}, node/after"
              f" {nd['qps_node'] / af['qps_node']:.5f}; memory: after/before"
              f" {af['mem_node'] / b['mem_node']:.3f}, node/after {nd['mem_node'] / af['mem_node']:.5f}")


if __name__ == "__main__":
    main()
