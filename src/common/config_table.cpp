// The declaration of every SWY_* variable that is not one transport's own (those are declared
// in the transport's folder, <name>_transport.cpp, and appended here in registry order).
// `swy-info -c` prints the whole table and docs/configuration.md mirrors it: change both
// together. Help texts are user documentation;
// keep them to one to three sentences and list the accepted values of enumerated strings.
#include "common/config.h"

#include <iterator>
#include <vector>

namespace swy::common {
namespace {

using enum ConfigType;

constexpr ConfigVar kTable[] = {
    // --- Component selection -----------------------------------------------------------------
    {"TLS", kList, "all",
     "Transports to use: self, shm, cma, tcp, verbs. \"all\" uses every transport found on "
     "this host; a leading \"^\" excludes the listed ones instead (\"^tcp,verbs\")."},
    {"MEMTYPES", kList, "host", "Memory-type plugins to load: host, simdev, dmabuf, cuda."},
    {"PROTO", kList, "all",
     "Allow-list of protocols the selector may choose from: eager_short, eager_bcopy, "
     "rndv_get_cma, rndv_put_cma, rndv_get_zcopy, rndv_put_zcopy (verbs RDMA READ/WRITE), "
     "rndv_pipeline. \"all\" allows every protocol.",
     "all|eager_short|eager_bcopy|rndv_get_cma|rndv_put_cma|rndv_get_zcopy|rndv_put_zcopy|rndv_"
     "pipeline"},
    {"LOG_LEVEL", kString, "warn",
     "Messages printed to stderr: error|warn|info|debug|trace (each level includes the ones "
     "before it).",
     "error|warn|info|debug|trace"},

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
     "through shared segments; \"auto\": cheapest by the cost model. A forced scheme is used "
     "for every message from the rendezvous threshold up (\"get\" never splits).",
     "auto|get|put|pipeline"},
    {"RNDV_FRAG_SIZE",
     kSize,
     "512K",
     "Segment size of pipelined or segmented rendezvous transfers.",
     {},
     4096},
    {"RNDV_SPLIT_MIN",
     kSize,
     "128K",
     "Rendezvous GET transfers at least this large are split between both processes: the "
     "receiver pulls the first half while the sender pushes the second (two cores copy at "
     "once). \"inf\" disables splitting.",
     {},
     8192},
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

    // --- PIO lanes and segment placement (shm, verbs) ------------------------------------------
    {"PIO_MAX_EPS", kUnsigned, "16",
     "Most endpoints of one worker that hold a PIO lane at the same time; further endpoints "
     "send through the shared FIFO."},
    {"PIO_RESERVED", kUnsigned, "4",
     "Of SWY_PIO_MAX_EPS, lanes kept for endpoints created with SWY_EP_FLAG_PIO_FIRST; other "
     "endpoints may take only the rest."},
    {"NUMA_PLACEMENT", kBool, "y",
     "Place shared receive segments on the NUMA node of the receiving worker."},

    // --- Cross-memory attach and connection management ---------------------------------------
    {"CMA", kString, "auto",
     "Use cross-memory attach (process_vm_readv/writev) for rendezvous: auto|y|n. \"auto\" "
     "probes whether it works (ptrace scope and containers can forbid it).",
     "auto|y|yes|on|1|n|no|off|0|simulate-eperm"},
    {"KEEPALIVE_INTERVAL", kTime, "200ms",
     "How often an idle endpoint checks that its peer is still alive."},

    // --- One-sided communication --------------------------------------------------------------
    {"ATOMIC_MODE", kString, "cpu",
     "How remote atomics are made atomic, one mode per context: \"cpu\" (the only one): every "
     "atomic is a CPU atomic instruction, the initiator's on memory it has mapped (same host, "
     "allocated by swy_mem_map) or the target's from its progress, so atomics on one word are "
     "atomic with each other whichever lane carries them. Anything else is refused."},
    {"UCP_MEM_MAP", kBool, "y",
     "UCP compatibility library (contrib/ucp) only: \"n\" makes ucp_mem_map refuse all memory "
     "with UCS_ERR_UNSUPPORTED, so that MPICH runs MPI one-sided communication over active "
     "messages instead of ucp_put/ucp_get (docs/ucp-compat.md)."},

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

    // --- Network devices (tcp, verbs) ----------------------------------------------------------
    {"NET_DEVICES", kList, "all",
     "Network interfaces the tcp transport listens on and publishes (\"eth0,ib0\"), and RDMA "
     "device ports the verbs transport may use (\"rxe0:1\" or \"mlx5_0\": the first ACTIVE "
     "one listed is opened). Each transport ignores the entries it does not know. \"all\": "
     "every interface that is up, and the first RDMA port that is ACTIVE."},

    // --- Security (docs/security-tcp.md) ------------------------------------------------------
    {"AUTH_KEY", kString, "",
     "Shared secret, in hex (16 to 256 bytes): every tcp connection and verbs handshake is "
     "then authenticated both ways with HMAC-SHA256 proofs, and peers without the key are "
     "refused. Empty: no authentication (a PMIx bootstrap installs a per-job key itself). "
     "An invalid value fails context creation."},

    // --- Oversubscription (docs/protocols.md, "When the peer's CPU is busy") -----------------
    {"OVERSUBSCRIBED", kString, "auto",
     "Whether this host runs many more processes of the job than it has cores, so a "
     "peer is often descheduled: then rendezvous uses GET without a split (the receiver "
     "copies alone; no protocol waits for the sender's CPU), from the first size of two "
     "eager fragments. \"auto\": LOCAL_PROCS (or the launcher's local rank count) > usable "
     "cores x OVERSUBSCRIBED_PER_CORE. SWY_RNDV_SCHEME still overrides.",
     "auto|yes|no"},
    {"LOCAL_PROCS",
     kUnsigned,
     "0",
     "Processes of the job on this host, for OVERSUBSCRIBED=auto. 0: the launcher's "
     "OMPI_COMM_WORLD_LOCAL_SIZE or MPI_LOCALNRANKS, else unknown (not oversubscribed).",
     {},
     0,
     1u << 20},
    {"OVERSUBSCRIBED_PER_CORE",
     kUnsigned,
     "4",
     "With OVERSUBSCRIBED=auto, the host is oversubscribed when it runs more local processes "
     "than this many per usable core (with fewer, a waiting peer is scheduled soon enough "
     "that the idle host's protocols stream faster). From 1 to 1024.",
     {},
     1,
     1024},

    // --- Client-server connection set-up (listeners, endpoints from a sockaddr) -------------
    {"SOCKADDR_CONNECT_TIMEOUT",
     kTime,
     "30s",
     "An endpoint created from a sockaddr whose handshake with the listener (connect "
     "included) has not ended in an accept or a reject within this long fails with "
     "SWY_ERR_TIMED_OUT. From 10 ms to 1 hour.",
     {},
     10'000'000,
     3600'000'000'000},
    {"LISTENER_HELLO_TIMEOUT",
     kTime,
     "10s",
     "A listener closes a connection whose client has not sent its hello, proof and address "
     "within this long (a client that connects and says nothing holds nothing for ever). From "
     "10 ms to 1 hour.",
     {},
     10'000'000,
     3600'000'000'000},
    {"LISTENER_LINGER_TIMEOUT",
     kTime,
     "5s",
     "After its verdict (accept or reject) a listener waits this long for the client to close "
     "the handshake connection before closing it itself. From 10 ms to 1 hour.",
     {},
     10'000'000,
     3600'000'000'000},

    // --- UCP compatibility library (contrib/ucp, docs/ucp-compat.md) -----------------------
    {"UCP_VERBOSE", kBool, "n",
     "libucp.so.0 on Switchyard (swy-ucx-run): print one line per process saying that it runs "
     "on Switchyard, with its pid, host and transports."},

};

}  // namespace

std::span<const ConfigVar> config_table() {
    // Built once and never changed: the common variables, then each transport's.
    static const std::vector<ConfigVar> table = [] {
        std::vector<ConfigVar> all(std::begin(kTable), std::end(kTable));
        const std::span<const ConfigVar> tl = transport_config_table();
        all.insert(all.end(), tl.begin(), tl.end());
        return all;
    }();
    return table;
}

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
