// The one declaration of every SWY_* variable. `swy-info -c` prints this table and
// docs/configuration.md mirrors it: change both together. Help texts are user documentation;
// keep them to one to three sentences and list the accepted values of enumerated strings.
#include "common/config.h"

#include <array>

namespace swy::common {
namespace {

using enum ConfigType;

constexpr ConfigVar kTable[] = {
    // --- Component selection -----------------------------------------------------------------
    {"TLS", kList, "all",
     "Transports to use: self, shm, cma, tcp, verbs. \"all\" uses every transport found on "
     "this host; a leading \"^\" excludes the listed ones instead (\"^tcp,verbs\")."},
    {"MEMTYPES", kList, "host",
     "Memory-type plugins to load: host, simdev, dmabuf, cuda."},
    {"PROTO", kList, "all",
     "Allow-list of protocols the selector may choose from: eager_short, eager_bcopy, "
     "rndv_get_cma, rndv_put_cma, rndv_get_zcopy, rndv_put_zcopy (verbs RDMA READ/WRITE), "
     "rndv_pipeline. \"all\" allows every protocol."},
    {"LOG_LEVEL", kString, "warn",
     "Messages printed to stderr: error|warn|info|debug|trace (each level includes the ones "
     "before it)."},

    // --- Protocol selection ------------------------------------------------------------------
    {"PIO_MAX", kSize, "auto",
     "Largest message sent by eager PIO (programmed I/O into the receiver's ring). \"auto\" "
     "takes the smaller of the lane's limit and the size where the cost model prefers "
     "another protocol."},
    {"RNDV_THRESH", kSize, "auto",
     "Message size from which the rendezvous protocol is used. \"auto\" picks the crossover "
     "point from the transports' cost models; \"inf\" disables rendezvous."},
    {"ZCOPY_THRESH", kSize, "auto",
     "Message size from which zero-copy sends are used instead of copying into bounce "
     "buffers. \"auto\" picks it from the cost models; \"inf\" disables zero-copy."},
    {"RNDV_SCHEME", kString, "auto",
     "Rendezvous flavour: auto|get|put|pipeline. \"get\": the receiver reads the sender's "
     "buffer; \"put\": the sender writes into the receiver's buffer; \"pipeline\": staged "
     "through shared segments; \"auto\": cheapest by the cost model."},
    {"RNDV_FRAG_SIZE", kSize, "512K",
     "Segment size of pipelined or segmented rendezvous transfers."},
    {"RNDV_SPLIT_MIN", kSize, "128K",
     "Rendezvous GET transfers at least this large are split between both processes: the "
     "receiver pulls the first half while the sender pushes the second (two cores copy at "
     "once). \"inf\" disables splitting."},
    {"PROTO_INFO", kBool, "n",
     "Print each endpoint's protocol table (the protocol chosen for every size range, and "
     "why) when it connects."},
    {"CALIBRATION_FILE", kString, "",
     "Cost figures measured by `swy-info --calibrate`, used instead of the built-in "
     "estimates. Empty: ~/.cache/switchyard/calibration.conf if it exists; none if HOME is "
     "unset or relative. Read only if a regular file (not a symlink) of at most 64 KiB, "
     "owned by this user or root, not writable by group or others. A bad file or an "
     "out-of-range value: a warning and the built-in figures. /dev/null: no file."},

    // --- Resource bounds (what a peer can make us hold) ---------------------------------------
    {"UNEXPECTED_MAX", kSize, "1G",
     "Most bytes one worker buffers for messages that arrived before their receive was "
     "posted. A message that would pass it is dropped, and the receive that matches it fails "
     "with SWY_ERR_NO_RESOURCE (a synchronous sender's send fails too); \"inf\": no limit."},
    {"UNEXPECTED_PEER_MAX", kSize, "256M",
     "The same limit for the messages of one sender lane (a connection on network transports, "
     "a sender's lane into our segment on shm), so that one peer cannot take the whole "
     "worker's allowance; \"inf\": no limit."},

    // --- Shared-memory transport -------------------------------------------------------------
    {"PIO_MAX_EPS", kUnsigned, "16",
     "Most endpoints of one worker that hold a PIO lane at the same time; further endpoints "
     "send through the shared FIFO."},
    {"PIO_RESERVED", kUnsigned, "4",
     "Of SWY_PIO_MAX_EPS, lanes kept for endpoints created with SWY_EP_FLAG_PIO_FIRST; other "
     "endpoints may take only the rest."},
    {"SHM_FIFO_CELLS", kUnsigned, "256",
     "Cells in the shared multi-producer receive FIFO of each worker."},
    {"SHM_CELL_SIZE", kSize, "8K",
     "Bytes per receive-FIFO cell, header included. Bounds the fragment size of eager "
     "bcopy sends."},
    {"SHM_PIO_SLOTS", kUnsigned, "8",
     "Dedicated PIO rings that a worker's receive window offers to senders."},
    {"SHM_PIO_CREDITS", kUnsigned, "64",
     "Size of each dedicated PIO ring, in units of SHM_PIO_CELL_SIZE (the ring holds "
     "SHM_PIO_CREDITS x SHM_PIO_CELL_SIZE bytes of packed, cache-line aligned records)."},
    {"SHM_PIO_CELL_SIZE", kSize, "4K",
     "Largest record of a dedicated PIO ring, its 16-byte header included: bounds the "
     "largest PIO message and the fragment size of endpoints that hold a PIO ring."},
    {"NUMA_PLACEMENT", kBool, "y",
     "Place shared receive segments on the NUMA node of the receiving worker."},

    // --- Cross-memory attach and connection management ---------------------------------------
    {"CMA", kString, "auto",
     "Use cross-memory attach (process_vm_readv/writev) for rendezvous: auto|y|n. \"auto\" "
     "probes whether it works (ptrace scope and containers can forbid it)."},
    {"KEEPALIVE_INTERVAL", kTime, "200ms",
     "How often an idle endpoint checks that its peer is still alive."},

    // --- Memory types ------------------------------------------------------------------------
    {"SIMDEV_BW", kDouble, "5e9",
     "Copy bandwidth of simulated device memory (simdev) to and from host, in bytes/s: "
     "reported to the protocol selector, and enforced on copies when SWY_SIMDEV_THROTTLE=y."},
    {"SIMDEV_LATENCY", kTime, "2us",
     "Fixed cost of one simdev copy: reported to the protocol selector, and enforced on "
     "copies when SWY_SIMDEV_THROTTLE=y."},
    {"SIMDEV_THROTTLE", kBool, "n",
     "Make simdev copies take as long as SWY_SIMDEV_BW and SWY_SIMDEV_LATENCY say (busy-wait), "
     "to emulate a slow device link in tests and benchmarks."},

    // --- TCP transport -----------------------------------------------------------------------
    {"NET_DEVICES", kList, "all",
     "Network interfaces the tcp transport listens on and publishes (\"eth0,ib0\"), and RDMA "
     "device ports the verbs transport may use (\"rxe0:1\" or \"mlx5_0\": the first ACTIVE "
     "one listed is opened). Each transport ignores the entries it does not know. \"all\": "
     "every interface that is up, and the first RDMA port that is ACTIVE."},
    {"TCP_SNDBUF_LIMIT", kSize, "4M",
     "Bytes one tcp connection may hold queued beyond what the kernel accepted; further sends "
     "are retried from progress. Also sets the lane's credits (this / 256K)."},
    {"TCP_KEEPALIVE", kTime, "2s",
     "Idle time before TCP keepalive probes start on tcp connections; a peer that vanished "
     "without closing its connections is reported failed after about 3x this."},
    {"TCP_CONNECT_TIMEOUT", kTime, "10s",
     "Total time the tcp transport spends connecting to one peer, over all of its addresses "
     "(each attempt gets a share of it). Connecting never blocks the worker; when every "
     "address failed or this passed, the endpoint fails (SWY_ERR_UNREACHABLE or "
     "SWY_ERR_TIMED_OUT)."},

    // --- Security (docs/security-tcp.md) ------------------------------------------------------
    {"AUTH_KEY", kString, "",
     "Shared secret, in hex (16 to 256 bytes): every tcp connection and verbs handshake is "
     "then authenticated both ways with HMAC-SHA256 proofs, and peers without the key are "
     "refused. Empty: no authentication (a PMIx bootstrap installs a per-job key itself). "
     "An invalid value fails worker creation."},

    // --- Verbs transport (docs/verbs.md) -----------------------------------------------------
    {"VERBS_SEG_SIZE", kSize, "8K",
     "Size of each registered receive and send bounce buffer of the verbs transport: the "
     "largest message sent in one SEND (larger ones are fragmented or use rendezvous)."},
    {"VERBS_RX_CREDITS", kUnsigned, "64",
     "Receive buffers the verbs transport posts (in its shared receive queue) for each "
     "connection; a sender never has more messages in flight, so no receiver-not-ready occurs."},
    {"VERBS_MAX_INLINE", kSize, "256",
     "Largest header+payload the verbs transport asks a QP to send inline (the CPU writes it "
     "into the work request: PIO); the device may grant less. 0 disables inline sends."},
    {"VERBS_SQ_DEPTH", kUnsigned, "256",
     "Send queue depth (work requests) of each verbs queue pair, at least 16. RDMA chunks "
     "that find it full wait in a backlog and are posted from progress."},
    {"VERBS_GID_INDEX", kString, "auto",
     "GID table index of the verbs port. \"auto\": a RoCE v2 GID with an IPv4-mapped "
     "address first, then any RoCE v2, RoCE v1 or InfiniBand GID."},
    {"VERBS_DM_CELL_SIZE", kSize, "2K",
     "Device-memory PIO of the verbs transport: size of one message cell (a multiple of 64 B, "
     "at most SWY_VERBS_SEG_SIZE). An endpoint holding a slot stores messages above the inline "
     "limit and up to this size into device memory; a slot has 4 cells."},
    {"VERBS_DM_SLOTS", kUnsigned, "16",
     "Device-memory PIO of the verbs transport: endpoints that get a slot of the adapter's "
     "memory (first come first served; SWY_PIO_RESERVED of them only for endpoints created "
     "with SWY_EP_FLAG_PIO_FIRST). Fewer if the device has less memory."},
    {"VERBS_DM_EMULATE", kBool, "n",
     "Testing aid, not for production: where the device has no device memory (rxe), host "
     "memory registered like a bounce buffer stands in for it, so the device-memory send path "
     "runs (all but ibv_memcpy_to_dm). swy-info and swy_ep_query say \"emulated\"."},
    {"VERBS_RCACHE", kString, "auto",
     "Registration cache of the verbs transport: \"auto\" caches registrations and checks "
     "on every reuse, in /proc/self/pagemap, that the same physical pages still back the "
     "buffer (needs CAP_SYS_ADMIN to see them; without it, as with \"off\", every rendezvous "
     "registers its buffer per transfer)."},
    {"VERBS_RCACHE_MAX", kSize, "256M",
     "Bytes the verbs registration cache may keep pinned; unused registrations are evicted "
     "least recently used first, and a transfer that does not fit is registered on its own."},
    {"VERBS_RCACHE_ENTRIES", kUnsigned, "128",
     "Registrations the verbs registration cache may keep, at most (evicted as for "
     "SWY_VERBS_RCACHE_MAX)."},
};

}  // namespace

std::span<const ConfigVar> config_table() { return kTable; }

std::string_view config_type_name(ConfigType type) {
    switch (type) {
    case kBool: return "bool";
    case kUnsigned: return "unsigned";
    case kSize: return "size";
    case kDouble: return "double";
    case kString: return "string";
    case kList: return "list";
    case kTime: return "time";
    }
    return "?";
}

}  // namespace swy::common
