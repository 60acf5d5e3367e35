// PIO lanes are a limited resource: a receiver whose window has fewer PIO slots than it has
// senders grants some of them a lane and tells the others so (pio=0, a fallback protocol).
// Every sender's messages must still arrive intact, whichever path they took.
#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {
namespace {

constexpr int kAttrBase = 0;         // 4 words per rank: pio_max, bcopy, pio, ready
constexpr int kConnectedWord = 100;  // senders connect one after another, in rank order
constexpr int kSlotsWord = 101;      // receiver's pio_window_slots
constexpr unsigned kSlots = 2;
constexpr swy_tag_t kTag = 0x9100000000000000ull;

swy_tag_t tag_of(int sender, uint64_t i) { return kTag | ((uint64_t)sender << 32) | i; }

void check_attr_is_honest(const swy_ep_attr_t& a, const char* who) {
    if (a.pio) {
        ICHECK_MSG(a.pio_max_size > 0, "%s: pio=1 but pio_max_size 0", who);
    } else {
        ICHECK_MSG(a.pio_max_size == 0, "%s: pio=0 but pio_max_size %zu", who, a.pio_max_size);
        ICHECK_MSG(a.fallback_protocol != nullptr && a.fallback_protocol[0] != '\0',
                   "%s: pio=0 but no fallback_protocol", who);
        ICHECK_MSG(
            a.small_protocol != nullptr && strcmp(a.small_protocol, a.fallback_protocol) == 0,
            "%s: pio=0 but small sends use '%s', not the fallback '%s'", who,
            a.small_protocol ? a.small_protocol : "(null)", a.fallback_protocol);
    }
    ICHECK_MSG(a.bcopy_max_size > 0, "%s: bcopy_max_size 0", who);
    ICHECK_MSG(a.connected == 1, "%s: connected=%d", who, a.connected);
}

// Receiver side: receive every size from every sender (sizes derived from that sender's own
// endpoint attributes), all receives posted before the senders start.
void receive_from_senders(World& w, Node& n, const std::vector<int>& senders) {
    struct Pending {
        int sender;
        uint64_t index;
        size_t size;
        std::vector<unsigned char> buf;
        Recv r;
    };
    std::vector<Pending> pending;
    for (int s : senders) {
        std::vector<size_t> sizes = boundary_sizes({read_attr(w, kAttrBase, s)}, 256u << 10);
        for (size_t i = 0; i < sizes.size(); ++i)
            pending.push_back(
                Pending{s,
                        i,
                        sizes[i],
                        std::vector<unsigned char>(sizes[i] + kGuardBytes, kGuardByte),
                        {}});
    }
    for (auto& p : pending)
        p.r = post_recv(n.worker(), p.buf.data(), p.size, tag_of(p.sender, p.index));
    w.barrier(n.worker());  // senders start now
    for (auto& p : pending) {
        swy_status_t st = finish_recv(n.worker(), p.r);
        ICHECK_MSG(st == SWY_OK, "receive of %zu bytes from rank %d completed with %d (%s)", p.size,
                   p.sender, (int)st, swy_status_string(st));
        ICHECK_MSG(p.r.info.length == p.size, "from rank %d: length %zu, sent %zu", p.sender,
                   p.r.info.length, p.size);
        ICHECK_PATTERN(p.buf.data(), p.size, pattern_seed(p.size, p.sender, p.index),
                       "%zu bytes from rank %d", p.size, p.sender);
        ICHECK_MSG(guard_intact(p.buf.data() + p.size), "wrote past a %zu-byte buffer", p.size);
    }
}

void send_to_receiver(World& w, Node& n, const swy_ep_attr_t& mine) {
    std::vector<size_t> sizes = boundary_sizes({mine}, 256u << 10);
    w.barrier(n.worker());  // receives are posted
    std::vector<std::vector<unsigned char>> bufs(sizes.size());
    std::vector<Send> sends(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
        bufs[i].resize(sizes[i]);
        fill_pattern(bufs[i].data(), sizes[i], pattern_seed(sizes[i], w.rank(), i));
        sends[i] =
            post_send(n.ep(0), sizes[i] ? bufs[i].data() : nullptr, sizes[i], tag_of(w.rank(), i));
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
        swy_status_t st = finish_send(n.worker(), sends[i]);
        ICHECK_MSG(st == SWY_OK, "send of %zu bytes (pio=%d) completed with %d (%s)", sizes[i],
                   mine.pio, (int)st, swy_status_string(st));
    }
}

TEST(ShmPioLanes, ReceiverWithTwoSlotsGrantsSomeSendersPioAndAllMessagesArrive) {
    constexpr int kRanks = 5;  // rank 0 receives, ranks 1..4 send
    EXPECT_TRUE(run_ranks(kRanks, [](World& w) {
        if (w.rank() == 0) {
            NodeOptions opts;
            opts.config.push_back({"SHM_PIO_SLOTS", std::to_string(kSlots)});
            Node n(w, opts);
            n.publish();
            swy_worker_attr_t before{};
            before.field_mask = SWY_WORKER_ATTR_FIELD_PIO;
            ICHECK_OK(swy_worker_query(n.worker(), &before));
            ICHECK_MSG(before.pio_window_slots == kSlots,
                       "SHM_PIO_SLOTS=%u but the worker offers %u PIO slots", kSlots,
                       before.pio_window_slots);
            w.scratch(kSlotsWord).store(before.pio_window_slots);
            w.barrier(n.worker());  // every sender connected and published its attributes
            std::vector<int> senders;
            int with_pio = 0, without_pio = 0;
            for (int s = 1; s < w.size(); ++s) {
                senders.push_back(s);
                (read_attr(w, kAttrBase, s).pio ? with_pio : without_pio)++;
            }
            swy_worker_attr_t after{};
            after.field_mask = SWY_WORKER_ATTR_FIELD_PIO;
            ICHECK_OK(swy_worker_query(n.worker(), &after));
            fprintf(stderr, "[rank 0] %d senders with PIO, %d without; window %u slots, %u free\n",
                    with_pio, without_pio, after.pio_window_slots, after.pio_window_free);
            ICHECK_MSG(with_pio >= 1, "no sender got a PIO lane");
            ICHECK_MSG(without_pio >= 1, "%d senders all got a PIO lane from %u slots", kRanks - 1,
                       kSlots);
            ICHECK_MSG((unsigned)with_pio <= after.pio_window_slots,
                       "%d senders hold PIO lanes but the window has %u slots", with_pio,
                       after.pio_window_slots);
            ICHECK_MSG(after.pio_window_free + with_pio <= after.pio_window_slots,
                       "window reports %u free slots with %d taken of %u", after.pio_window_free,
                       with_pio, after.pio_window_slots);
            receive_from_senders(w, n, senders);
            n.finish();
        } else {
            Node n(w);
            n.publish();
            // Connect in rank order so "first come" is deterministic.
            w.wait_scratch_at_least(kConnectedWord, (uint64_t)(w.rank() - 1), n.worker());
            n.connect(0);
            w.scratch(kConnectedWord).fetch_add(1);
            w.wait_scratch_at_least(kConnectedWord, (uint64_t)(w.size() - 1), n.worker());
            swy_ep_attr_t a = n.query(0);
            std::string who = "sender rank " + std::to_string(w.rank());
            check_attr_is_honest(a, who.c_str());
            swy_worker_attr_t wa{};
            wa.field_mask = SWY_WORKER_ATTR_FIELD_PIO;
            ICHECK_OK(swy_worker_query(n.worker(), &wa));
            ICHECK_MSG(wa.pio_endpoints_granted == (unsigned)a.pio,
                       "%s: endpoint pio=%d but worker counts %u PIO endpoints", who.c_str(), a.pio,
                       wa.pio_endpoints_granted);
            fprintf(stderr, "[rank %d] pio=%d pio_max_size=%zu credits=%u small=%s fallback=%s\n",
                    w.rank(), a.pio, a.pio_max_size, a.credits,
                    a.small_protocol ? a.small_protocol : "(null)",
                    a.fallback_protocol ? a.fallback_protocol : "(null)");
            publish_attr(w, kAttrBase, a);
            w.barrier(n.worker());
            send_to_receiver(w, n, a);
            n.finish();
        }
    }));
}

TEST(ShmPioLanes, EndpointCreatedWithNoPioFlagReportsNoPioAndStillDelivers) {
    EXPECT_TRUE(run_ranks(2, [](World& w) {
        Node n(w);
        n.publish();
        if (w.rank() == 1) {
            n.connect(0, SWY_EP_FLAG_NO_PIO);
            swy_ep_attr_t a = n.query(0);
            ICHECK_MSG(a.pio == 0, "SWY_EP_FLAG_NO_PIO endpoint reports pio=%d", a.pio);
            check_attr_is_honest(a, "NO_PIO endpoint");
            swy_worker_attr_t wa{};
            wa.field_mask = SWY_WORKER_ATTR_FIELD_PIO;
            ICHECK_OK(swy_worker_query(n.worker(), &wa));
            ICHECK_MSG(wa.pio_endpoints_granted == 0, "worker counts %u PIO endpoints",
                       wa.pio_endpoints_granted);
            publish_attr(w, kAttrBase, a);
            w.barrier(n.worker());
            send_to_receiver(w, n, a);
        } else {
            w.barrier(n.worker());
            receive_from_senders(w, n, {1});
        }
        n.finish();
    }));
}

}  // namespace
}  // namespace swy_itest
