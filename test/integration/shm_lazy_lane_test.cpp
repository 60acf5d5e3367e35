// An shm endpoint costs nothing per peer until its first message (issue #18, "Scale"): no
// mapping of the peer's segment and no descriptor (pidfd) before it; after one message to one
// peer, exactly that peer's segment is mapped and watched. A lazily connected lane still
// delivers every byte at the eager/rendezvous boundaries, its first message being of any size;
// a lane closed before its first message gives its slot (and PIO ring) back to the peer; and a
// peer that dies before the first message is still reported to the endpoint's error callback.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kAttrBase = 0;         // publish_attr words of each rank
constexpr int kInodeBase = 100;      // + rank: the inode of that rank's own segment
constexpr int kConnectedWord = 120;  // rank 0 created its endpoints
constexpr int kClosedWord = 140;     // rank 0 closed its never-used endpoint to rank 4
constexpr int kDoneWord = 141;       // rank 0 finished its checks
constexpr swy_tag_t kTag = 0x1A2E000000000000ull;

/// Inodes of the shm segments mapped in this process (ours and peers').
std::set<unsigned long> mapped_segments() {
    std::set<unsigned long> inodes;
    FILE* f = std::fopen("/proc/self/maps", "r");
    ICHECK(f != nullptr);
    char line[512];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
        if (std::strstr(line, "memfd:swy-shm") == nullptr) continue;
        unsigned long inode = 0;
        char range[64], perms[8], offset[32], dev[16];
        if (std::sscanf(line, "%63s %7s %31s %15s %lu", range, perms, offset, dev, &inode) == 5)
            inodes.insert(inode);
    }
    std::fclose(f);
    return inodes;
}

/// Process descriptors (pidfds) this process holds.
int pidfds() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    ICHECK(d != nullptr);
    while (dirent* e = readdir(d)) {
        char path[300], target[128] = {};
        std::snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        const ssize_t len = readlink(path, target, sizeof(target) - 1);
        if (len <= 0) continue;
        // "anon_inode:[pidfd]" before Linux 6.9, "pidfd:[ino]" since (pidfs).
        if (std::strstr(target, "[pidfd]") != nullptr || std::strncmp(target, "pidfd:", 6) == 0)
            ++n;
    }
    closedir(d);
    return n;
}

unsigned pio_window_free(swy_worker_h worker) {
    swy_worker_attr_t a{};
    a.field_mask = SWY_WORKER_ATTR_FIELD_PIO;
    ICHECK_OK(swy_worker_query(worker, &a));
    return a.pio_window_free;
}

/// Rank 0 sends @p sizes to @p peer on one lane, in order; the first is the lane's first
/// message ever. The receiver checks every byte.
void send_sizes(Node& n, int peer, const std::vector<size_t>& sizes) {
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<unsigned char> buf(sizes[i]);
        fill_pattern(buf.data(), buf.size(), pattern_seed(sizes[i], peer, i));
        send_blocking(n.worker(), n.ep(peer), buf.data(), buf.size(), kTag | i);
    }
}

void receive_sizes(Node& n, int me, const std::vector<size_t>& sizes) {
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<unsigned char> buf(sizes[i] + kGuardBytes, kGuardByte);
        Recv r = post_recv(n.worker(), buf.data(), sizes[i], kTag | i);
        const swy_status_t st = finish_recv(n.worker(), r);
        ICHECK_MSG(st == SWY_OK, "rank %d: receive #%zu (%zu bytes) gave %d (%s)", me, i, sizes[i],
                   (int)st, swy_status_string(st));
        ICHECK_MSG(r.info.length == sizes[i], "rank %d: #%zu: %zu bytes, sent %zu", me, i,
                   r.info.length, sizes[i]);
        ICHECK_PATTERN(buf.data(), sizes[i], pattern_seed(sizes[i], me, i),
                       "rank %d: message #%zu of %zu bytes on a lazily connected lane", me, i,
                       sizes[i]);
        ICHECK(guard_intact(buf.data() + sizes[i]));
    }
}

/// Sizes rank 0 sends to @p peer; the first differs per peer, so that some lane's first
/// message is at each boundary (PIO, one cell, two cells, rendezvous).
std::vector<size_t> sizes_for(int peer, const swy_ep_attr_t& a) {
    const size_t bc = a.bcopy_max_size;
    std::vector<size_t> boundaries{0,          8,      bc - 1,     bc,      bc + 1,
                                   2 * bc - 1, 2 * bc, 2 * bc + 1, 1u << 20};
    if (a.pio_max_size > 0) {
        boundaries.push_back(a.pio_max_size - 1);
        boundaries.push_back(a.pio_max_size);
        boundaries.push_back(a.pio_max_size + 1);
    }
    std::vector<size_t> out;
    if (peer == 1) out.push_back(8);
    if (peer == 2) out.push_back((1u << 20) + 3);  // rendezvous first
    if (peer == 3) out.push_back(bc + 1);          // two cells first
    out.insert(out.end(), boundaries.begin(), boundaries.end());
    return out;
}

/// A node watching its peers in @p mode (SWY_SHM_PEER_WATCH).
NodeOptions watch_mode(const char* mode) {
    NodeOptions o;
    o.config = {{"TLS", "shm"}, {"SHM_PEER_WATCH", mode}, {"KEEPALIVE_INTERVAL", "50ms"}};
    return o;
}

void origin(World& w, const char* mode) {
    Node n(w, watch_mode(mode));
    // pidfd mode: one descriptor per peer messaged; poll mode: none.
    const int per_peer = std::strcmp(mode, "pidfd") == 0 ? 1 : 0;
    n.publish();
    const std::set<unsigned long> own = mapped_segments();
    ICHECK_MSG(own.size() == 1, "%zu swy-shm segments mapped before any endpoint", own.size());
    const int pidfds_before = pidfds();
    n.connect(1);
    n.connect(2);                      // default flags: a PIO ring, announced on first use
    n.connect(3, SWY_EP_FLAG_NO_PIO);  // the shared FIFO only
    n.connect(4);                      // never used
    ICHECK_MSG(mapped_segments() == own,
               "endpoints to 4 peers mapped %zu peer segments before any message",
               mapped_segments().size() - 1);
    ICHECK_MSG(pidfds() == pidfds_before,
               "endpoints to 4 peers opened %d pidfds before any message",
               pidfds() - pidfds_before);
    for (int peer = 1; peer <= 4; ++peer) {  // each peer reads the sizes of our lane to it
        const swy_ep_attr_t a = n.query(peer);
        w.scratch(kAttrBase + 4 * peer + 0).store(a.pio_max_size);
        w.scratch(kAttrBase + 4 * peer + 1).store(a.bcopy_max_size);
        w.scratch(kAttrBase + 4 * peer + 3).store(1, std::memory_order_release);
    }
    w.scratch(kConnectedWord).store(1, std::memory_order_release);

    // One message to rank 1: exactly its segment is mapped, exactly one pidfd more.
    send_sizes(n, 1, {8});
    std::set<unsigned long> now = mapped_segments();
    w.wait_scratch_at_least(kInodeBase + 1, 1);
    const unsigned long rank1 = w.scratch(kInodeBase + 1).load();
    ICHECK_MSG(now.size() == 2 && now.count(rank1) == 1,
               "after one message to rank 1: %zu segments mapped, rank 1's %s", now.size(),
               now.count(rank1) ? "among them" : "not among them");
    ICHECK_MSG(pidfds() == pidfds_before + per_peer,
               "after one message to rank 1 (%s): %d pidfds more", mode, pidfds() - pidfds_before);

    // Every boundary, starting at a different one on each lane.
    const swy_ep_attr_t a2 = n.query(2), a3 = n.query(3);
    ICHECK(a2.bcopy_max_size > 0 && a3.bcopy_max_size > 0);
    send_sizes(n, 2, sizes_for(2, a2));
    send_sizes(n, 3, sizes_for(3, a3));
    now = mapped_segments();
    ICHECK_MSG(now.size() == 4, "after messages to ranks 1-3: %zu segments mapped, not 4",
               now.size());
    ICHECK_MSG(pidfds() == pidfds_before + 3 * per_peer,
               "after messages to ranks 1-3 (%s): %d pidfds more", mode, pidfds() - pidfds_before);

    // The lane to rank 4 never sent: closing it gives its slot and PIO ring back.
    n.close(4);
    w.scratch(kClosedWord).store(1, std::memory_order_release);
    w.wait_scratch_at_least(kDoneWord, 1, n.worker());
    n.finish();
}

void target(World& w, const char* mode) {
    Node n(w, watch_mode(mode));
    // Counted before rank 0 can know our address (it may connect the moment we publish).
    const std::set<unsigned long> own = mapped_segments();
    ICHECK(own.size() == 1);
    const unsigned window = pio_window_free(n.worker());
    const int pidfds_before = pidfds();
    w.scratch(kInodeBase + w.rank()).store(*own.begin(), std::memory_order_release);
    n.publish();
    w.wait_scratch_at_least(kConnectedWord, 1, n.worker());
    if (w.rank() == 4) {
        // Rank 0's endpoint holds a ring of our window, though it never sent.
        ICHECK_MSG(pio_window_free(n.worker()) + 1 == window,
                   "rank 0's unused endpoint: window free %u, was %u", pio_window_free(n.worker()),
                   window);
        ICHECK_MSG(mapped_segments() == own && pidfds() == pidfds_before,
                   "rank 4 mapped or watched rank 0 though nothing was sent");
        w.wait_scratch_at_least(kClosedWord, 1, n.worker());
        const auto deadline = deadline_in(10);
        while (pio_window_free(n.worker()) != window) {
            swy_worker_progress(n.worker());
            ICHECK_MSG(Clock::now() < deadline,
                       "rank 0 closed its unused endpoint; our window has %u free, was %u",
                       pio_window_free(n.worker()), window);
        }
        w.scratch(kDoneWord).store(1, std::memory_order_release);
    } else {
        // Sizes come from rank 0's view of its lane to us.
        const swy_ep_attr_t lane = read_attr(w, kAttrBase, w.rank());
        receive_sizes(n, w.rank(),
                      w.rank() == 1 ? std::vector<size_t>{8} : sizes_for(w.rank(), lane));
    }
    n.finish();
}

TEST(ShmLazyLane, NothingPerPeerUntilTheFirstMessage) {
    EXPECT_TRUE(
        run_ranks(5, [](World& w) { w.rank() == 0 ? origin(w, "pidfd") : target(w, "pidfd"); }));
}

TEST(ShmLazyLane, PollWatchHoldsNoDescriptorPerPeer) {
    EXPECT_TRUE(
        run_ranks(5, [](World& w) { w.rank() == 0 ? origin(w, "poll") : target(w, "poll"); }));
}

// ---- a peer that dies before, or after, the first message ----

void on_error(void* arg, swy_ep_h, swy_status_t status) {
    *static_cast<swy_status_t*>(arg) = status;
}

bool is_peer_failure(swy_status_t st) {
    return st == SWY_ERR_CONNECTION_RESET || st == SWY_ERR_ENDPOINT_CLOSED;
}

/// Rank 0 holds an endpoint to rank 1, which dies (SIGKILL) before rank 0 sent anything, or
/// after one message; rank 0 must get the error callback within 10 s, and a send must fail.
/// After the first message rank 0 sleeps in swy_worker_wait(): the death (pidfd) or the
/// liveness timer (poll) must wake it.
void survivor(World& w, const char* mode, bool after_first_message) {
    Node n(w, watch_mode(mode));
    n.publish();
    swy_status_t seen = SWY_OK;
    n.connect(1, 0, on_error, &seen);
    const int pidfds_before = pidfds();
    if (after_first_message) {
        unsigned char byte = 1;
        send_blocking(n.worker(), n.ep(1), &byte, 1, kTag);
    }
    w.scratch(kConnectedWord).store(1, std::memory_order_release);
    const auto deadline = deadline_in(10);
    while (seen == SWY_OK) {
        if (after_first_message) {
            const swy_status_t st = swy_worker_wait(n.worker(), 20000);
            ICHECK_MSG(st == SWY_OK, "swy_worker_wait gave %d (%s): nothing woke it", (int)st,
                       swy_status_string(st));
        }
        swy_worker_progress(n.worker());
        ICHECK_MSG(Clock::now() < deadline,
                   "10 s after rank 1 died (%s, %s the first message): "
                   "no error callback",
                   mode, after_first_message ? "after" : "before");
    }
    ICHECK_MSG(is_peer_failure(seen), "error callback with %d (%s)", (int)seen,
               swy_status_string(seen));
    if (!after_first_message)
        ICHECK_MSG(pidfds() == pidfds_before, "a pidfd was opened for a peer never sent to");
    unsigned char byte = 7;
    Send s = post_send(n.ep(1), &byte, 1, kTag);
    const swy_status_t st = finish_send(n.worker(), s, 10);
    ICHECK_MSG(is_peer_failure(st), "send to dead rank 1 gave %d (%s)", (int)st,
               swy_status_string(st));
    swy_request_h req = nullptr;
    swy_status_t cst = swy_ep_close_nb(n.ep(1), SWY_EP_CLOSE_FORCE, &req);
    n.forget(1);
    if (cst == SWY_INPROGRESS) {
        cst = wait_request(n.worker(), req, "force close", 5);
        swy_request_free(req);
    }
}

::testing::AssertionResult run_death(const char* mode, bool after_first_message) {
    RunOptions opts;
    opts.expected_signal[1] = SIGKILL;
    return run_ranks(
        2,
        [=](World& w) {
            if (w.rank() == 0) {
                survivor(w, mode, after_first_message);
                return;
            }
            Node n(w, watch_mode(mode));
            n.publish();
            if (after_first_message) {
                unsigned char byte = 0;
                Recv r = post_recv(n.worker(), &byte, 1, kTag);
                ICHECK_OK(finish_recv(n.worker(), r));
            }
            w.wait_scratch_at_least(kConnectedWord, 1, n.worker());
            raise(SIGKILL);
        },
        opts);
}

TEST(ShmLazyLane, PeerDeadBeforeTheFirstMessageIsReported) {
    EXPECT_TRUE(run_death("pidfd", false));
    EXPECT_TRUE(run_death("poll", false));
}

TEST(ShmLazyLane, PeerDeadAfterTheFirstMessageWakesABlockedWait) {
    EXPECT_TRUE(run_death("pidfd", true));
    EXPECT_TRUE(run_death("poll", true));
}

// ---- the first message of a PIO lane while the peer's FIFO is full ----

constexpr int kFloodedWord = 150;  // rank 2 filled rank 1's FIFO
constexpr int kDrainWord = 151;    // rank 0 saw its first send wait; rank 1 may receive now
constexpr swy_tag_t kFromOrigin = 0x1A2F000000000000ull;
constexpr swy_tag_t kFromFlooder = 0x1A30000000000000ull;
constexpr int kFloodMessages = 8;

/// The ring of a lazily attached PIO lane is announced through the shared FIFO with its first
/// message: with the FIFO full, that first send waits (it may not go on the ring before the
/// announcement), and once the receiver drains, every message arrives in order, intact.
void announce_origin(World& w) {
    Node n(w);
    n.publish();
    n.connect(1);
    const swy_ep_attr_t a = n.query(1);
    ICHECK_MSG(a.pio == 1, "the lane to rank 1 got no PIO ring (pio=%d)", a.pio);
    w.wait_scratch_at_least(kFloodedWord, 1, n.worker());
    std::vector<size_t> sizes{
        8, 0, 1, 64, a.pio_max_size - 1, a.pio_max_size, a.pio_max_size + 1, a.bcopy_max_size + 1};
    std::vector<std::vector<unsigned char>> bufs;
    std::vector<Send> sends;
    for (size_t i = 0; i < sizes.size(); ++i) {
        bufs.emplace_back(sizes[i]);
        fill_pattern(bufs[i].data(), sizes[i], pattern_seed(sizes[i], 0, i));
        sends.push_back(post_send(n.ep(1), bufs[i].data(), sizes[i], kFromOrigin | i));
    }
    const auto until = Clock::now() + std::chrono::milliseconds(50);
    while (Clock::now() < until)
        swy_worker_progress(n.worker());
    ICHECK_MSG(!sends[0].done && swy_request_test(sends[0].req) == SWY_INPROGRESS,
               "the first send on the PIO lane completed while the peer's FIFO was full: its ring "
               "cannot have been announced");
    w.scratch(kDrainWord).store(1, std::memory_order_release);
    for (auto& s : sends)
        ICHECK_OK(finish_send(n.worker(), s));
    w.scratch(kAttrBase + 0).store(a.pio_max_size);
    w.scratch(kAttrBase + 1).store(a.bcopy_max_size);
    w.scratch(kAttrBase + 3).store(1, std::memory_order_release);
    n.finish();
}

void announce_receiver(World& w) {
    NodeOptions o;
    o.config = {{"TLS", "shm"}, {"SHM_FIFO_CELLS", "2"}};
    Node n(w, o);
    n.publish();
    w.wait_scratch_at_least(kDrainWord, 1);  // no progress until then: the FIFO stays full
    std::vector<std::vector<unsigned char>> fbufs(kFloodMessages, std::vector<unsigned char>(8));
    std::vector<Recv> frecvs;
    for (int i = 0; i < kFloodMessages; ++i)
        frecvs.push_back(post_recv(n.worker(), fbufs[i].data(), 8, kFromFlooder | i));
    for (int i = 0; i < kFloodMessages; ++i) {
        ICHECK_OK(finish_recv(n.worker(), frecvs[i]));
        ICHECK_PATTERN(fbufs[i].data(), 8, pattern_seed(8, 2, i), "flood message %d", i);
    }
    const swy_ep_attr_t a = read_attr(w, kAttrBase, 0);
    const std::vector<size_t> sizes{
        8, 0, 1, 64, a.pio_max_size - 1, a.pio_max_size, a.pio_max_size + 1, a.bcopy_max_size + 1};
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<unsigned char> buf(sizes[i] + kGuardBytes, kGuardByte);
        Recv r = post_recv(n.worker(), buf.data(), sizes[i], kFromOrigin | i);
        ICHECK_OK(finish_recv(n.worker(), r));
        ICHECK_MSG(r.info.length == sizes[i], "message %zu: %zu bytes, sent %zu", i, r.info.length,
                   sizes[i]);
        ICHECK_PATTERN(buf.data(), sizes[i], pattern_seed(sizes[i], 0, i),
                       "message %zu (%zu bytes) of a lane announced behind a full FIFO", i,
                       sizes[i]);
        ICHECK(guard_intact(buf.data() + sizes[i]));
    }
    n.finish();
}

void announce_flooder(World& w) {
    Node n(w);
    n.publish();
    n.connect(1, SWY_EP_FLAG_NO_PIO);
    std::vector<std::vector<unsigned char>> bufs(kFloodMessages, std::vector<unsigned char>(8));
    std::vector<Send> sends;
    for (int i = 0; i < kFloodMessages; ++i) {
        fill_pattern(bufs[i].data(), 8, pattern_seed(8, 2, i));
        sends.push_back(post_send(n.ep(1), bufs[i].data(), 8, kFromFlooder | i));
    }
    // Two cells: the third send onwards waits for the receiver.
    ICHECK_MSG(!sends.back().done, "%d sends into a FIFO of 2 cells all completed", kFloodMessages);
    w.scratch(kFloodedWord).store(1, std::memory_order_release);
    for (auto& s : sends)
        ICHECK_OK(finish_send(n.worker(), s));
    n.finish();
}

TEST(ShmLazyLane, FirstMessageBehindAFullFifoWaitsForTheRingAnnouncement) {
    EXPECT_TRUE(run_ranks(3, [](World& w) {
        if (w.rank() == 0) announce_origin(w);
        if (w.rank() == 1) announce_receiver(w);
        if (w.rank() == 2) announce_flooder(w);
    }));
}

}  // namespace
}  // namespace swy_itest
