// The one-sided message path end to end, through the C API (switchyard/rma.h): operations the
// target executes from its progress. SWY_TLS=tcp,self makes every remote operation take it;
// shm with memory registered in place makes atomics take it (put/get there are CMA copies).
// Byte-verified sizes around the lane's packet size up to 64 MiB, 2 and 4 processes; atomics
// from 4 processes on one word; a flush that is caught if it returns early; fence ordering;
// stale keys; a peer killed in the middle of a get.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"

namespace {

using namespace swy_itest;

constexpr int kKeyWords = 64;     // scratch words per rank for its packed key (+ base, length)
constexpr int kSignalWord = 400;  // scratch words from here: the tests' own signalling
constexpr size_t k64MiB = size_t{64} << 20;

NodeOptions options_for(const std::string& lane) {
    NodeOptions o;
    if (lane == "tcp") {
        o.config = {{"TLS", "tcp,self"}, {"NET_DEVICES", "lo"}};
    } else {
        o.config = {{"TLS", "shm,self"}};
    }
    return o;
}

/// Memory this rank exposes: registered in place (user memory), so that on shm only the
/// engine's atomics and CMA reach it, and on tcp only the engine.
struct Window {
    std::vector<unsigned char> bytes;
    swy_mem_h mem = nullptr;
};

void expose(Node& n, Window& w, size_t length, unsigned char fill = 0) {
    w.bytes.assign(length, fill);
    swy_mem_map_params_t p{};
    p.field_mask = SWY_MEM_MAP_FIELD_ADDRESS | SWY_MEM_MAP_FIELD_LENGTH;
    p.address = w.bytes.data();
    p.length = length;
    ICHECK_OK(swy_mem_map(n.context(), &p, &w.mem));
}

/// Publish @p w's key and address in this rank's scratch words.
void publish_key(World& world, Node& n, const Window& w) {
    void* buf = nullptr;
    size_t len = 0;
    ICHECK_OK(swy_rkey_pack(n.context(), w.mem, &buf, &len));
    ICHECK_MSG(len <= (kKeyWords - 3) * 8, "packed key of %zu bytes", len);
    const int base = world.rank() * kKeyWords;
    uint64_t words[kKeyWords] = {};
    std::memcpy(words, buf, len);
    for (int i = 0; i < kKeyWords - 3; ++i)
        world.scratch(base + 3 + i).store(words[i]);
    world.scratch(base + 1).store(reinterpret_cast<uintptr_t>(w.bytes.data()));
    world.scratch(base + 2).store(len);
    world.scratch(base).store(1, std::memory_order_release);
    swy_rkey_buffer_release(buf);
}

/// The key @p rank published, unpacked on the endpoint to it; its base address in @p base.
swy_rkey_h key_of(World& world, Node& n, int rank, uint64_t* base) {
    const int b = rank * kKeyWords;
    world.wait_scratch_at_least(b, 1, n.worker());
    uint64_t words[kKeyWords] = {};
    for (int i = 0; i < kKeyWords - 3; ++i)
        words[i] = world.scratch(b + 3 + i).load();
    *base = world.scratch(b + 1).load();
    swy_rkey_h key = nullptr;
    ICHECK_OK(swy_ep_rkey_unpack(n.ep(rank), words, world.scratch(b + 2).load(), &key));
    return key;
}

/// Wait for a call's result: SWY_INPROGRESS waits for the request; else the status itself.
swy_status_t done(swy_worker_h w, swy_status_t st, swy_request_h req, const char* what) {
    if (st != SWY_INPROGRESS) return st;
    st = wait_request(w, req, what, 60.0);
    swy_request_free(req);
    return st;
}

swy_status_t put(Node& n, int rank, const void* buf, size_t len, uint64_t addr, swy_rkey_h key) {
    swy_request_h req = nullptr;
    return done(n.worker(), swy_put_nb(n.ep(rank), buf, len, addr, key, nullptr, &req), req, "put");
}
swy_status_t get(Node& n, int rank, void* buf, size_t len, uint64_t addr, swy_rkey_h key) {
    swy_request_h req = nullptr;
    return done(n.worker(), swy_get_nb(n.ep(rank), buf, len, addr, key, nullptr, &req), req, "get");
}
swy_status_t flush(Node& n, int rank) {
    swy_request_h req = nullptr;
    return done(n.worker(), swy_ep_flush_nb(n.ep(rank), nullptr, &req), req, "flush");
}
swy_status_t fetch_add(Node& n, int rank, uint64_t addr, swy_rkey_h key, uint64_t v,
                       uint64_t* old) {
    swy_request_h req = nullptr;
    return done(
        n.worker(),
        swy_atomic_nb(n.ep(rank), SWY_ATOMIC_OP_ADD, 8, &v, nullptr, old, addr, key, nullptr, &req),
        req, "atomic");
}

std::vector<size_t> sizes_for(const swy_ep_attr_t& a, bool large) {
    // The put packet carries max_message - 24 bytes; bcopy fragments a few less: cover both.
    std::vector<size_t> s{0, 1, 8};
    for (size_t d : {size_t{0}, size_t{8}, size_t{32}}) {
        const size_t b = a.bcopy_max_size + d;
        s.insert(s.end(), {b - 1, b, b + 1});
    }
    if (large) s.push_back(k64MiB);
    return s;
}

class RmaMsg : public ::testing::TestWithParam<std::string> {};

// Every rank puts a distinct pattern into every other rank's window at every size, flushes,
// and the owner checks each byte; then each reads its pieces back and checks them.
void put_get_sizes(int nranks, const std::string& lane, bool large) {
    ASSERT_TRUE(run_ranks(
        nranks,
        [&](World& w) {
            Node n(w, options_for(lane));
            n.connect_all();
            const std::vector<size_t> sizes = sizes_for(n.query((w.rank() + 1) % w.size()), large);
            size_t slot = 0;
            for (size_t s : sizes)
                slot = std::max(slot, s);
            const size_t per_rank = slot + 64;
            Window win;
            expose(n, win, per_rank * w.size(), 0xEE);
            publish_key(w, n, win);
            std::vector<unsigned char> src(slot), back(slot + 16);
            for (int peer = 0; peer < w.size(); ++peer) {
                if (peer == w.rank()) continue;
                uint64_t base = 0;
                swy_rkey_h key = key_of(w, n, peer, &base);
                const uint64_t mine = base + per_rank * w.rank() + 3;  // unaligned on purpose
                for (size_t s : sizes) {
                    const uint64_t seed = pattern_seed(s, w.rank(), peer);
                    fill_pattern(src.data(), s, seed);
                    ICHECK_OK(put(n, peer, src.data(), s, mine, key));
                    ICHECK_OK(flush(n, peer));
                    std::memset(back.data(), 0x77, back.size());
                    ICHECK_OK(get(n, peer, back.data(), s, mine, key));
                    ICHECK_PATTERN(back.data(), s, seed, "get of %zu bytes from rank %d", s, peer);
                    for (size_t i = s; i < back.size(); ++i)
                        ICHECK_MSG(back[i] == 0x77, "get of %zu wrote past its end", s);
                }
                swy_rkey_destroy(key);
            }
            // What the others left in this window: their last (largest) put.
            w.barrier(n.worker(), 1);
            for (int peer = 0; peer < w.size(); ++peer) {
                if (peer == w.rank()) continue;
                const size_t s = sizes.back();
                const unsigned char* p = win.bytes.data() + per_rank * peer + 3;
                ICHECK_PATTERN(p, s, pattern_seed(s, peer, w.rank()), "window of rank %d", peer);
            }
            w.barrier(n.worker(), 2);
            ICHECK_OK(swy_mem_unmap(n.context(), win.mem));
            n.finish();
        },
        RunOptions{.timeout_s = 240}));
}

TEST_P(RmaMsg, PutGetSizesTwoRanks) { put_get_sizes(2, GetParam(), true); }
TEST_P(RmaMsg, PutGetSizesFourRanks) { put_get_sizes(4, GetParam(), false); }

TEST_P(RmaMsg, AtomicsFromFourRanksOnOneWordAreExact) {
    constexpr uint64_t kPerRank = 500;
    ASSERT_TRUE(run_ranks(4, [&](World& w) {
        Node n(w, options_for(GetParam()));
        n.connect_all();
        Window win;
        if (w.rank() == 0) {
            expose(n, win, 64);
            publish_key(w, n, win);
            // Rank 0 only serves (its progress executes the others' atomics).
            w.wait_scratch_at_least(kSignalWord, 3, n.worker(), 120);
            uint64_t word = 0;
            std::memcpy(&word, win.bytes.data() + 8, 8);
            ICHECK_MSG(word == 3 * kPerRank * (kPerRank + 1) / 2, "word is %llu",
                       (unsigned long long)word);
            uint32_t w32 = 0;
            std::memcpy(&w32, win.bytes.data() + 16, 4);
            ICHECK_MSG(w32 == 3 * kPerRank, "32-bit word is %u", w32);
        } else {
            uint64_t base = 0;
            swy_rkey_h key = key_of(w, n, 0, &base);
            std::vector<bool> seen;  // fetched values are distinct partial sums: none repeats
            for (uint64_t i = 1; i <= kPerRank; ++i) {
                uint64_t old = ~uint64_t{0};
                ICHECK_OK(fetch_add(n, 0, base + 8, key, i, &old));
                ICHECK(old != ~uint64_t{0});
                // Posted 32-bit adds on another word.
                swy_request_h req = nullptr;
                const uint32_t one = 1;
                ICHECK_OK(done(n.worker(),
                               swy_atomic_nb(n.ep(0), SWY_ATOMIC_OP_ADD, 4, &one, nullptr, nullptr,
                                             base + 16, key, nullptr, &req),
                               req, "posted add"));
            }
            // A CSWAP that must fail (the word is never 1) leaves it alone and says so.
            uint64_t expect = 1, value = 99, old = 0;
            swy_request_h req = nullptr;
            ICHECK_OK(done(n.worker(),
                           swy_atomic_nb(n.ep(0), SWY_ATOMIC_OP_CSWAP, 8, &value, &expect, &old,
                                         base + 8, key, nullptr, &req),
                           req, "cswap"));
            ICHECK(old != 1);
            ICHECK_OK(flush(n, 0));
            swy_rkey_destroy(key);
            w.scratch(kSignalWord).fetch_add(1);
        }
        w.barrier(n.worker(), 1);
        if (win.mem != nullptr) ICHECK_OK(swy_mem_unmap(n.context(), win.mem));
        n.finish();
    }));
}

// The target progresses only until the initiator's pipe says "flush returned"; then it stops
// and looks. A flush that returned before the target executed the puts leaves them unseen.
TEST_P(RmaMsg, FlushMeansDoneAtTheTarget) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    constexpr size_t kLen = 4u << 20;
    const bool ok = run_ranks(2, [&](World& w) {
        Node n(w, options_for(GetParam()));
        n.connect_all();
        Window win;
        if (w.rank() == 1) {
            expose(n, win, kLen);
            publish_key(w, n, win);
            pollfd p{fds[0], POLLIN, 0};
            const auto deadline = deadline_in(60);
            while (poll(&p, 1, 0) == 0) {
                swy_worker_progress(n.worker());
                ICHECK(Clock::now() < deadline);
            }
            // No more progress from here: what is not in memory now never was at flush time.
            ICHECK_PATTERN(win.bytes.data(), kLen, pattern_seed(kLen, 0, 1), "after the flush");
            w.scratch(kSignalWord).store(1);
        } else {
            uint64_t base = 0;
            swy_rkey_h key = key_of(w, n, 1, &base);
            std::vector<unsigned char> src(kLen);
            fill_pattern(src.data(), kLen, pattern_seed(kLen, 0, 1));
            // Many packets, then the flush; only the flush is waited for.
            swy_request_h req = nullptr;
            swy_status_t st = swy_put_nb(n.ep(1), src.data(), kLen, base, key, nullptr, &req);
            ICHECK(st == SWY_OK || st == SWY_INPROGRESS);
            ICHECK_OK(flush(n, 1));
            if (st == SWY_INPROGRESS) ICHECK_OK(done(n.worker(), st, req, "put"));
            ICHECK(write(fds[1], "x", 1) == 1);
            swy_rkey_destroy(key);
            w.wait_scratch_at_least(kSignalWord, 1, n.worker());
        }
        w.barrier(n.worker(), 1);
        if (win.mem != nullptr) ICHECK_OK(swy_mem_unmap(n.context(), win.mem));
        n.finish();
    });
    close(fds[0]);
    close(fds[1]);
    ASSERT_TRUE(ok);
}

// put A; fence; put B to the same place: B is what stays.
TEST_P(RmaMsg, FenceOrdersPutsToOnePlace) {
    ASSERT_TRUE(run_ranks(2, [&](World& w) {
        Node n(w, options_for(GetParam()));
        n.connect_all();
        Window win;
        constexpr size_t kLen = 200000;
        if (w.rank() == 1) {
            expose(n, win, kLen);
            publish_key(w, n, win);
            w.wait_scratch_at_least(kSignalWord, 1, n.worker());
            ICHECK_PATTERN(win.bytes.data(), kLen, 0xB, "B must win");
        } else {
            uint64_t base = 0;
            swy_rkey_h key = key_of(w, n, 1, &base);
            std::vector<unsigned char> a(kLen), b(kLen);
            fill_pattern(a.data(), kLen, 0xA);
            fill_pattern(b.data(), kLen, 0xB);
            for (int round = 0; round < 20; ++round) {
                swy_request_h ra = nullptr, rb = nullptr;
                swy_status_t sa = swy_put_nb(n.ep(1), a.data(), kLen, base, key, nullptr, &ra);
                ICHECK_OK(swy_worker_fence(n.worker()));
                swy_status_t sb = swy_put_nb(n.ep(1), b.data(), kLen, base, key, nullptr, &rb);
                ICHECK_OK(done(n.worker(), sa, ra, "put A"));
                ICHECK_OK(done(n.worker(), sb, rb, "put B"));
            }
            ICHECK_OK(flush(n, 1));
            swy_rkey_destroy(key);
            w.scratch(kSignalWord).store(1);
        }
        w.barrier(n.worker(), 1);
        if (win.mem != nullptr) ICHECK_OK(swy_mem_unmap(n.context(), win.mem));
        n.finish();
    }));
}

// A key whose memory was unmapped: get and atomic fail with ACCESS_DENIED, a put is reported
// by the next flush, and the memory (still the owner's) is untouched.
TEST_P(RmaMsg, StaleKeyIsDeniedAndTouchesNothing) {
    ASSERT_TRUE(run_ranks(2, [&](World& w) {
        Node n(w, options_for(GetParam()));
        n.connect_all();
        Window win;
        if (w.rank() == 1) {
            expose(n, win, 4096, 0x3C);
            publish_key(w, n, win);
            ICHECK_OK(swy_mem_unmap(n.context(), win.mem));
            win.mem = nullptr;
            w.scratch(kSignalWord + 1).store(1);
            w.wait_scratch_at_least(kSignalWord, 1, n.worker());
            for (unsigned char c : win.bytes)
                ICHECK_MSG(c == 0x3C, "a stale key changed the memory");
        } else {
            uint64_t base = 0;
            swy_rkey_h key = key_of(w, n, 1, &base);
            w.wait_scratch_at_least(kSignalWord + 1, 1, n.worker());
            std::vector<unsigned char> buf(100, 0x55);
            ICHECK_STATUS(get(n, 1, buf.data(), buf.size(), base, key), SWY_ERR_ACCESS_DENIED);
            for (unsigned char c : buf)
                ICHECK(c == 0x55);
            uint64_t old = 7;
            ICHECK_STATUS(fetch_add(n, 1, base, key, 1, &old), SWY_ERR_ACCESS_DENIED);
            ICHECK(old == 7);
            ICHECK_OK(put(n, 1, buf.data(), buf.size(), base, key));
            ICHECK_STATUS(flush(n, 1), SWY_ERR_ACCESS_DENIED);
            ICHECK_OK(flush(n, 1));
            swy_rkey_destroy(key);
            w.scratch(kSignalWord).store(1);
        }
        w.barrier(n.worker(), 1);
        n.finish();
    }));
}

// Rank 1 dies while rank 0 waits for a 64 MiB get from it; rank 0's get from rank 2 (and the
// endpoint to it) are unaffected.
TEST_P(RmaMsg, PeerKilledMidGetFailsOnlyItsEndpoint) {
    // On shm a get from registered memory is a CMA copy the dying peer takes no part in.
    if (GetParam() != "tcp") GTEST_SKIP() << "the get takes the message path only over tcp";
    RunOptions opts;
    opts.expected_signal[1] = SIGKILL;
    opts.timeout_s = 120;
    ASSERT_TRUE(run_ranks(
        3,
        [&](World& w) {
            Node n(w, options_for(GetParam()));
            n.connect_all();
            Window win;
            if (w.rank() != 0) {
                expose(n, win, k64MiB, static_cast<unsigned char>(w.rank()));
                publish_key(w, n, win);
                if (w.rank() == 1) {
                    // Never progress again: the get stays unanswered; then die.
                    w.wait_scratch_at_least(kSignalWord, 1, nullptr, 60);
                    raise(SIGKILL);
                }
                w.wait_scratch_at_least(kSignalWord + 1, 1, n.worker(), 100);
            } else {
                uint64_t b1 = 0, b2 = 0;
                swy_rkey_h k1 = key_of(w, n, 1, &b1);
                swy_rkey_h k2 = key_of(w, n, 2, &b2);
                std::vector<unsigned char> from1(k64MiB), from2(k64MiB);
                swy_request_h r1 = nullptr, r2 = nullptr;
                swy_status_t s1 = swy_get_nb(n.ep(1), from1.data(), k64MiB, b1, k1, nullptr, &r1);
                ICHECK(s1 == SWY_INPROGRESS);
                w.scratch(kSignalWord).store(1);
                swy_status_t s2 = swy_get_nb(n.ep(2), from2.data(), k64MiB, b2, k2, nullptr, &r2);
                ICHECK_OK(done(n.worker(), s2, r2, "get from the live peer"));
                for (unsigned char c : from2)
                    ICHECK(c == 2);
                s1 = wait_request(n.worker(), r1, "get from the dead peer", 90);
                swy_request_free(r1);
                ICHECK_MSG(s1 != SWY_OK && s1 != SWY_INPROGRESS, "get from the dead peer: %s",
                           swy_status_string(s1));
                ICHECK_OK(get(n, 2, from2.data(), 8, b2, k2));  // still fine
                swy_rkey_destroy(k1);
                swy_rkey_destroy(k2);
                n.forget(1);
                w.scratch(kSignalWord + 1).store(1);
            }
            if (win.mem != nullptr) ICHECK_OK(swy_mem_unmap(n.context(), win.mem));
            n.finish(2, 1);
        },
        opts));
}

INSTANTIATE_TEST_SUITE_P(Lanes, RmaMsg, ::testing::Values("tcp", "shm"),
                         [](const auto& info) { return info.param; });

}  // namespace
