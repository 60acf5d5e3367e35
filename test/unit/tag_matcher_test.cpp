// Specification of swy::proto::TagMatcher (MPI 4.0 §3.5 matching order).
#include "protocols/tag/matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace swy::proto {
namespace {

constexpr uint64_t kExact = ~0ull;

// MPI-style packing: context (16 bits) | source rank (16 bits) | user tag (32 bits).
constexpr uint64_t pack(uint64_t ctx, uint64_t rank, uint64_t user) {
    return (ctx << 48) | (rank << 32) | user;
}
constexpr uint64_t kAnyTag = 0xffffffff00000000ull;     // keeps ctx|rank, ignores the user tag
constexpr uint64_t kAnySource = 0xffff0000ffffffffull;  // keeps ctx|tag, ignores the rank

PostedReceive recv(uint64_t tag, uint64_t mask = kExact) {
    PostedReceive r;
    r.tag = tag;
    r.mask = mask;
    return r;
}

UnexpectedMessage msg(uint64_t tag) {
    UnexpectedMessage m;
    m.tag = tag;
    return m;
}

TEST(TagMatcher, EmptyMatcherMatchesNothing) {
    TagMatcher m;
    EXPECT_EQ(m.match_posted(pack(1, 2, 3)), nullptr);
    EXPECT_EQ(m.match_unexpected(pack(1, 2, 3), kExact, true), nullptr);
    EXPECT_EQ(m.match_unexpected(0, 0, true), nullptr);
    EXPECT_EQ(m.posted_count(), 0u);
    EXPECT_EQ(m.unexpected_count(), 0u);
}

TEST(TagMatcher, ExactReceiveMatchesOnlyItsTag) {
    TagMatcher m;
    PostedReceive r = recv(pack(1, 2, 7));
    m.post(&r);
    EXPECT_EQ(m.match_posted(pack(1, 2, 8)), nullptr);  // other user tag
    EXPECT_EQ(m.match_posted(pack(1, 3, 7)), nullptr);  // other rank
    EXPECT_EQ(m.match_posted(pack(2, 2, 7)), nullptr);  // other context
    EXPECT_EQ(m.posted_count(), 1u);
    EXPECT_EQ(m.match_posted(pack(1, 2, 7)), &r);
    EXPECT_EQ(m.posted_count(), 0u);
    EXPECT_EQ(m.match_posted(pack(1, 2, 7)), nullptr);  // consumed
}

TEST(TagMatcher, ExactReceivesWithOneTagMatchInPostOrder) {
    TagMatcher m;
    PostedReceive a = recv(5), b = recv(5), c = recv(5);
    m.post(&a);
    m.post(&b);
    m.post(&c);
    EXPECT_EQ(m.match_posted(5), &a);
    EXPECT_EQ(m.match_posted(5), &b);
    EXPECT_EQ(m.match_posted(5), &c);
}

TEST(TagMatcher, WildcardReceiveKeepsPostOrder) {
    TagMatcher m;
    const uint64_t t = pack(1, 4, 9);
    PostedReceive exact1 = recv(t);
    PostedReceive any1 = recv(pack(1, 4, 0), kAnyTag);
    PostedReceive exact2 = recv(t);
    PostedReceive any2 = recv(pack(1, 0, 9), kAnySource);
    m.post(&exact1);
    m.post(&any1);
    m.post(&exact2);
    m.post(&any2);
    EXPECT_EQ(m.match_posted(t), &exact1);
    EXPECT_EQ(m.match_posted(t), &any1);
    EXPECT_EQ(m.match_posted(t), &exact2);
    EXPECT_EQ(m.match_posted(t), &any2);
    EXPECT_EQ(m.match_posted(t), nullptr);
}

TEST(TagMatcher, WildcardPostedFirstBeatsLaterExact) {
    TagMatcher m;
    PostedReceive any = recv(0, 0);  // mask 0 accepts everything
    PostedReceive exact = recv(42);
    m.post(&any);
    m.post(&exact);
    EXPECT_LT(any.post_seq, exact.post_seq);
    EXPECT_EQ(m.match_posted(42), &any);
    EXPECT_EQ(m.match_posted(42), &exact);
}

TEST(TagMatcher, WildcardThatDoesNotAcceptIsSkipped) {
    TagMatcher m;
    PostedReceive other_rank = recv(pack(1, 3, 0), kAnyTag);
    PostedReceive mine = recv(pack(1, 4, 0), kAnyTag);
    m.post(&other_rank);
    m.post(&mine);
    EXPECT_EQ(m.match_posted(pack(1, 4, 77)), &mine);
    EXPECT_EQ(m.match_posted(pack(1, 4, 77)), nullptr);
    EXPECT_EQ(m.posted_count(), 1u);
}

TEST(TagMatcher, MaskIgnoringLowBitsMatchesAnyUserTag) {
    TagMatcher m;
    PostedReceive r = recv(pack(3, 5, 0xdead), kAnyTag);  // the receive's own low bits don't matter
    m.post(&r);
    EXPECT_EQ(m.match_posted(pack(3, 6, 1)), nullptr);
    EXPECT_EQ(m.match_posted(pack(4, 5, 1)), nullptr);
    EXPECT_EQ(m.match_posted(pack(3, 5, 123456)), &r);

    UnexpectedMessage a = msg(pack(3, 6, 1)), b = msg(pack(3, 5, 2)), c = msg(pack(3, 5, 1));
    m.add_unexpected(&a);
    m.add_unexpected(&b);
    m.add_unexpected(&c);
    EXPECT_EQ(m.match_unexpected(pack(3, 5, 0), kAnyTag, true), &b);
    EXPECT_EQ(m.match_unexpected(pack(3, 5, 0), kAnyTag, true), &c);
    EXPECT_EQ(m.match_unexpected(pack(3, 5, 0), kAnyTag, true), nullptr);
}

TEST(TagMatcher, MaskIgnoringHighBitsMatchesAnySource) {
    TagMatcher m;
    PostedReceive r = recv(pack(3, 0, 11), kAnySource);
    m.post(&r);
    EXPECT_EQ(m.match_posted(pack(3, 9, 12)), nullptr);
    EXPECT_EQ(m.match_posted(pack(2, 9, 11)), nullptr);
    EXPECT_EQ(m.match_posted(pack(3, 9, 11)), &r);

    // A mask that drops the whole top half (context and rank).
    UnexpectedMessage a = msg(pack(7, 1, 5)), b = msg(pack(8, 2, 11));
    m.add_unexpected(&a);
    m.add_unexpected(&b);
    EXPECT_EQ(m.match_unexpected(11, 0x00000000ffffffffull, false), &b);
    EXPECT_EQ(m.match_unexpected(5, 0x00000000ffffffffull, false), &a);
}

TEST(TagMatcher, UnexpectedMatchedInArrivalOrder) {
    TagMatcher m;
    UnexpectedMessage a = msg(pack(1, 1, 1)), b = msg(pack(1, 2, 1)), c = msg(pack(1, 1, 1)),
                      d = msg(pack(1, 1, 2));
    for (UnexpectedMessage* p : {&a, &b, &c, &d})
        m.add_unexpected(p);
    EXPECT_LT(a.arrival_seq, b.arrival_seq);
    EXPECT_EQ(m.unexpected_count(), 4u);
    // Exact lookup: first arrival with that tag.
    EXPECT_EQ(m.match_unexpected(pack(1, 1, 1), kExact, true), &a);
    EXPECT_EQ(m.match_unexpected(pack(1, 1, 1), kExact, true), &c);
    EXPECT_EQ(m.match_unexpected(pack(1, 1, 1), kExact, true), nullptr);
    // Wildcard lookup: first arrival overall among those it accepts.
    EXPECT_EQ(m.match_unexpected(0, 0, true), &b);
    EXPECT_EQ(m.match_unexpected(0, 0, true), &d);
    EXPECT_EQ(m.unexpected_count(), 0u);
}

TEST(TagMatcher, ProbeDoesNotRemove) {
    TagMatcher m;
    UnexpectedMessage a = msg(10);
    m.add_unexpected(&a);
    EXPECT_EQ(m.match_unexpected(10, kExact, false), &a);
    EXPECT_EQ(m.match_unexpected(10, kExact, false), &a);
    EXPECT_EQ(m.match_unexpected(0, 0, false), &a);
    EXPECT_EQ(m.unexpected_count(), 1u);
}

TEST(TagMatcher, RemoveTakesItOut) {
    TagMatcher m;
    UnexpectedMessage a = msg(10), b = msg(10);
    m.add_unexpected(&a);
    m.add_unexpected(&b);
    EXPECT_EQ(m.match_unexpected(10, kExact, true), &a);
    EXPECT_EQ(m.unexpected_count(), 1u);
    EXPECT_EQ(m.match_unexpected(0, 0, false), &b);  // gone from the arrival list too
    EXPECT_EQ(m.match_unexpected(10, kExact, false), &b);
}

TEST(TagMatcher, RemoveUnexpectedOfOneMessage) {
    TagMatcher m;
    UnexpectedMessage a = msg(1), b = msg(2), c = msg(1);
    m.add_unexpected(&a);
    m.add_unexpected(&b);
    m.add_unexpected(&c);
    m.remove_unexpected(&a);
    EXPECT_EQ(m.unexpected_count(), 2u);
    m.remove_unexpected(&a);  // not queued: no-op
    EXPECT_EQ(m.unexpected_count(), 2u);
    EXPECT_EQ(m.match_unexpected(1, kExact, false), &c);
    EXPECT_EQ(m.match_unexpected(0, 0, false), &b);
}

TEST(TagMatcher, CancelOfUnmatchedReceive) {
    TagMatcher m;
    PostedReceive exact = recv(3), any = recv(0, 0), later = recv(3);
    m.post(&exact);
    m.post(&any);
    m.post(&later);
    EXPECT_TRUE(m.cancel(&exact));
    EXPECT_TRUE(m.cancel(&any));
    EXPECT_EQ(m.posted_count(), 1u);
    EXPECT_EQ(m.match_posted(3), &later);
    EXPECT_EQ(m.posted_count(), 0u);
}

TEST(TagMatcher, CancelAfterMatchReturnsFalse) {
    TagMatcher m;
    PostedReceive exact = recv(3), any = recv(0, 0);
    m.post(&exact);
    m.post(&any);
    EXPECT_EQ(m.match_posted(3), &exact);
    EXPECT_EQ(m.match_posted(3), &any);
    EXPECT_FALSE(m.cancel(&exact));
    EXPECT_FALSE(m.cancel(&any));
    EXPECT_TRUE(m.cancel(&exact) == false && m.posted_count() == 0u);
}

TEST(TagMatcher, CancelTwiceReturnsFalseTheSecondTime) {
    TagMatcher m;
    PostedReceive r = recv(3);
    m.post(&r);
    EXPECT_TRUE(m.cancel(&r));
    EXPECT_FALSE(m.cancel(&r));
    EXPECT_EQ(m.posted_count(), 0u);
}

// A receive posted into an empty queue is held alone (no bucket); every rule still holds
// across the moves into and out of that state: a wildcard alone, a second post filing the
// first ahead of it, a cancel of the lone one, and a cancel once it was filed.
TEST(TagMatcher, LoneReceiveKeepsOrderCancelAndWildcards) {
    TagMatcher m;
    PostedReceive any = recv(pack(1, 0, 0), kAnySource & kAnyTag);
    m.post(&any);
    EXPECT_EQ(m.match_posted(pack(2, 5, 9)), nullptr);  // other context: stays posted
    EXPECT_EQ(m.posted_count(), 1u);
    EXPECT_EQ(m.match_posted(pack(1, 5, 9)), &any);
    EXPECT_EQ(m.posted_count(), 0u);
    EXPECT_FALSE(m.cancel(&any));  // matched: no longer queued

    // Lone wildcard first, then an exact one: the earlier wildcard wins, then the exact.
    PostedReceive first = recv(pack(1, 0, 0), kAnySource & kAnyTag), exact = recv(pack(1, 2, 3));
    m.post(&first);
    m.post(&exact);
    EXPECT_EQ(m.posted_count(), 2u);
    EXPECT_EQ(m.match_posted(pack(1, 2, 3)), &first);
    EXPECT_EQ(m.match_posted(pack(1, 2, 3)), &exact);
    EXPECT_EQ(m.match_posted(pack(1, 2, 3)), nullptr);

    // Cancel of the lone receive, then of one that was filed by a second post.
    PostedReceive a = recv(7), b = recv(7);
    m.post(&a);
    EXPECT_TRUE(m.cancel(&a));
    EXPECT_FALSE(m.cancel(&a));
    EXPECT_EQ(m.posted_count(), 0u);
    EXPECT_EQ(m.match_posted(7), nullptr);
    m.post(&a);
    m.post(&b);
    EXPECT_TRUE(m.cancel(&a));
    EXPECT_EQ(m.posted_count(), 1u);
    EXPECT_EQ(m.match_posted(7), &b);
    EXPECT_FALSE(m.cancel(&b));

    // One left in its list after a match, then a new post: order stays by post time.
    PostedReceive c = recv(4), d = recv(4), e = recv(4);
    m.post(&c);
    m.post(&d);
    EXPECT_EQ(m.match_posted(4), &c);
    m.post(&e);
    EXPECT_EQ(m.match_posted(4), &d);
    EXPECT_EQ(m.match_posted(4), &e);
    EXPECT_EQ(m.posted_count(), 0u);
}

TEST(TagMatcher, NonPowerOfTwoInitialBucketsWorks) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{1000}}) {
        TagMatcher m(n);
        PostedReceive r = recv(7);
        m.post(&r);
        EXPECT_EQ(m.match_posted(7), &r);
    }
}

// Tables start at 1 bucket, so posting 5000 entries doubles them a dozen times; 50 tags mean
// every tag has 100 entries whose relative order must survive each rehash.
TEST(TagMatcher, GrowthKeepsOrder) {
    constexpr int kEntries = 5000;
    constexpr int kTags = 50;
    auto tag_of = [](int i) { return pack(1, static_cast<uint64_t>(i % kTags), 99); };
    TagMatcher m(1);
    std::vector<PostedReceive> posted(kEntries);
    std::vector<UnexpectedMessage> unexpected(kEntries);
    for (int i = 0; i < kEntries; ++i) {
        // Every 7th receive is a wildcard on its rank, so both queues are in play.
        posted[i] = i % 7 == 0 ? recv(tag_of(i), kAnyTag) : recv(tag_of(i));
        m.post(&posted[i]);
        unexpected[i] = msg(tag_of(i));
        m.add_unexpected(&unexpected[i]);
    }
    ASSERT_EQ(m.posted_count(), static_cast<size_t>(kEntries));
    ASSERT_EQ(m.unexpected_count(), static_cast<size_t>(kEntries));
    // Match tags in a scrambled order; within one tag, post/arrival order must hold.
    for (int round = 0; round < kEntries / kTags; ++round) {
        for (int t = 0; t < kTags; ++t) {
            const int tag_index = (t * 17) % kTags;
            const int expected = round * kTags + tag_index;
            ASSERT_EQ(m.match_posted(tag_of(tag_index)), &posted[expected])
                << "round " << round << " tag " << tag_index;
            ASSERT_EQ(m.match_unexpected(tag_of(tag_index), kExact, true), &unexpected[expected])
                << "round " << round << " tag " << tag_index;
        }
    }
    EXPECT_EQ(m.posted_count(), 0u);
    EXPECT_EQ(m.unexpected_count(), 0u);
}

TEST(TagMatcher, GrowthKeepsArrivalOrderForWildcards) {
    TagMatcher m(2);
    std::vector<UnexpectedMessage> u(3000);
    for (size_t i = 0; i < u.size(); ++i) {
        u[i] = msg(pack(0, i % 13, i % 5));
        m.add_unexpected(&u[i]);
    }
    for (size_t i = 0; i < u.size(); ++i)
        ASSERT_EQ(m.match_unexpected(0, 0, true), &u[i]);
}

// ---- randomized differential test against an obviously-correct reference ----

// Scans plain vectors in order: the definition of MPI matching, with no cleverness.
class ReferenceMatcher {
public:
    PostedReceive* match_posted(uint64_t tag) {
        for (auto it = posted_.begin(); it != posted_.end(); ++it) {
            if ((tag & (*it)->mask) == ((*it)->tag & (*it)->mask)) {
                PostedReceive* r = *it;
                posted_.erase(it);
                return r;
            }
        }
        return nullptr;
    }
    void add_unexpected(UnexpectedMessage* m) { unexpected_.push_back(m); }
    UnexpectedMessage* match_unexpected(uint64_t tag, uint64_t mask, bool remove) {
        for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
            if (((*it)->tag & mask) == (tag & mask)) {
                UnexpectedMessage* m = *it;
                if (remove) unexpected_.erase(it);
                return m;
            }
        }
        return nullptr;
    }
    void remove_unexpected(UnexpectedMessage* m) {
        auto it = std::find(unexpected_.begin(), unexpected_.end(), m);
        if (it != unexpected_.end()) unexpected_.erase(it);
    }
    void post(PostedReceive* r) { posted_.push_back(r); }
    bool cancel(PostedReceive* r) {
        auto it = std::find(posted_.begin(), posted_.end(), r);
        if (it == posted_.end()) return false;
        posted_.erase(it);
        return true;
    }
    size_t posted_count() const { return posted_.size(); }
    size_t unexpected_count() const { return unexpected_.size(); }

private:
    std::vector<PostedReceive*> posted_;
    std::vector<UnexpectedMessage*> unexpected_;
};

void run_differential(uint32_t seed, int ops) {
    std::mt19937_64 rng(seed);
    auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
    // Small alphabet (2 contexts x 3 ranks x 3 user tags) so tags collide constantly.
    auto random_tag = [&] { return pack(1 + pick(2), pick(3), pick(3)); };
    const uint64_t masks[] = {0, kAnyTag, kAnySource, 0xffff000000000000ull};
    auto random_mask = [&] { return masks[pick(std::size(masks))]; };

    TagMatcher real(2);  // tiny table: growth happens mid-run
    ReferenceMatcher ref;
    // deque: stable addresses, entries are reused after they leave the matcher.
    std::deque<PostedReceive> recvs;
    std::deque<UnexpectedMessage> msgs;
    std::vector<PostedReceive*> free_recvs, all_recvs;
    std::vector<UnexpectedMessage*> free_msgs, all_msgs;
    auto new_recv = [&]() -> PostedReceive* {
        if (!free_recvs.empty() && pick(4) != 0) {
            const size_t i = pick(free_recvs.size());
            PostedReceive* r = free_recvs[i];
            free_recvs.erase(free_recvs.begin() + static_cast<std::ptrdiff_t>(i));
            return r;
        }
        all_recvs.push_back(&recvs.emplace_back());
        return all_recvs.back();
    };
    auto new_msg = [&]() -> UnexpectedMessage* {
        if (!free_msgs.empty() && pick(4) != 0) {
            const size_t i = pick(free_msgs.size());
            UnexpectedMessage* m = free_msgs[i];
            free_msgs.erase(free_msgs.begin() + static_cast<std::ptrdiff_t>(i));
            return m;
        }
        all_msgs.push_back(&msgs.emplace_back());
        return all_msgs.back();
    };

    for (int step = 0; step < ops; ++step) {
        SCOPED_TRACE(testing::Message() << "seed " << seed << " step " << step);
        switch (pick(8)) {
            case 0:    // post an exact receive
            case 1: {  // post a wildcard receive
                PostedReceive* r = new_recv();
                r->tag = random_tag();
                r->mask = pick(2) == 0 ? kExact : random_mask();
                real.post(r);
                ref.post(r);
                break;
            }
            case 2: {  // message arrives: match a posted receive, else queue it as unexpected
                const uint64_t tag = random_tag();
                PostedReceive* got = real.match_posted(tag);
                ASSERT_EQ(got, ref.match_posted(tag)) << "match_posted tag " << std::hex << tag;
                if (got != nullptr) {
                    ASSERT_EQ((got->tag & got->mask), (tag & got->mask));
                    free_recvs.push_back(got);
                } else {
                    UnexpectedMessage* m = new_msg();
                    m->tag = tag;
                    real.add_unexpected(m);
                    ref.add_unexpected(m);
                }
                break;
            }
            case 3: {  // message arrives straight into the unexpected queue
                UnexpectedMessage* m = new_msg();
                m->tag = random_tag();
                real.add_unexpected(m);
                ref.add_unexpected(m);
                break;
            }
            case 4:    // probe
            case 5: {  // receive: match an unexpected message, else post
                const bool remove = pick(2) == 0;
                const uint64_t tag = random_tag();
                const uint64_t mask = pick(2) == 0 ? kExact : random_mask();
                UnexpectedMessage* got = real.match_unexpected(tag, mask, remove);
                ASSERT_EQ(got, ref.match_unexpected(tag, mask, remove))
                    << "match_unexpected tag " << std::hex << tag << " mask " << mask;
                if (got != nullptr && remove) free_msgs.push_back(got);
                if (got == nullptr && remove) {
                    PostedReceive* r = new_recv();
                    r->tag = tag;
                    r->mask = mask;
                    real.post(r);
                    ref.post(r);
                }
                break;
            }
            case 6: {  // cancel any receive ever created (queued or not)
                if (all_recvs.empty()) break;
                PostedReceive* r = all_recvs[pick(all_recvs.size())];
                const bool cancelled = real.cancel(r);
                ASSERT_EQ(cancelled, ref.cancel(r));
                if (cancelled) free_recvs.push_back(r);
                break;
            }
            case 7: {  // remove any message ever created (queued or not)
                if (all_msgs.empty()) break;
                UnexpectedMessage* m = all_msgs[pick(all_msgs.size())];
                const size_t before = ref.unexpected_count();
                real.remove_unexpected(m);
                ref.remove_unexpected(m);
                if (ref.unexpected_count() != before &&
                    std::find(free_msgs.begin(), free_msgs.end(), m) == free_msgs.end()) {
                    free_msgs.push_back(m);
                }
                break;
            }
        }
        ASSERT_EQ(real.posted_count(), ref.posted_count());
        ASSERT_EQ(real.unexpected_count(), ref.unexpected_count());
    }
    // Drain: everything left must come out in the same order.
    while (ref.unexpected_count() > 0) {
        ASSERT_EQ(real.match_unexpected(0, 0, true), ref.match_unexpected(0, 0, true));
    }
    for (uint64_t c = 1; c <= 2; ++c)
        for (uint64_t r = 0; r < 3; ++r)
            for (uint64_t t = 0; t < 3; ++t)
                while (PostedReceive* got = ref.match_posted(pack(c, r, t)))
                    ASSERT_EQ(real.match_posted(pack(c, r, t)), got);
    EXPECT_EQ(real.posted_count(), ref.posted_count());
    EXPECT_EQ(real.match_posted(pack(1, 0, 0)), nullptr);
}

TEST(TagMatcher, RandomOperationsAgreeWithReference) {
    for (uint32_t seed = 1; seed <= 200; ++seed) {
        run_differential(seed, 2000);
        if (testing::Test::HasFatalFailure()) return;
    }
}

}  // namespace
}  // namespace swy::proto
