// Tag matching with MPI semantics: posted-receive queue and unexpected-message queue.
//
// Rules (MPI 4.0 §3.5):
//  - an incoming message matches the earliest-posted receive whose (tag & mask) equals
//    (message tag & mask);
//  - a newly posted receive (or probe) matches the earliest-arrived unexpected message it
//    accepts; messages from one sender are delivered to the matcher in send order, so this
//    keeps the non-overtaking rule;
//  - exact-tag receives (mask == ~0) are hashed by tag, wildcard receives live in their own
//    list; both carry a post sequence number and the earlier one wins, so order holds.
//  - unexpected messages are hashed by tag and also kept in one arrival-order list, for
//    wildcard receives and probes.
//
// Entries are intrusive (the caller owns their memory, typically the request object): the
// matcher never allocates on the hot path. Bucket tables grow (rehash) at setup-like moments
// when their load factor passes 1; growth is amortised and does not reorder entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace swy::proto {

/// Intrusive doubly-linked hook. An entry that is in no list has prev == next == nullptr.
struct ListHook {
    ListHook* prev = nullptr;
    ListHook* next = nullptr;
};

/// A posted receive, embedded in the receive request.
struct PostedReceive {
    uint64_t tag = 0;
    uint64_t mask = 0;
    uint64_t post_seq = 0;  ///< set by TagMatcher::post()
    ListHook hook;          ///< bucket list (exact) or wildcard list
};

/// An unexpected message, embedded in the descriptor that holds its data or RTS.
struct UnexpectedMessage {
    uint64_t tag = 0;
    uint64_t arrival_seq = 0;  ///< set by TagMatcher::add_unexpected()
    ListHook bucket_hook;      ///< per-tag bucket list
    ListHook arrival_hook;     ///< global arrival-order list
};

/// Posted and unexpected queues for one worker. Not thread-safe (the worker serialises).
class TagMatcher {
public:
    /// @param initial_buckets power of two; the tables grow as entries are added.
    explicit TagMatcher(size_t initial_buckets = 1024);
    TagMatcher(const TagMatcher&) = delete;
    TagMatcher& operator=(const TagMatcher&) = delete;

    // ---- receive side: a message arrived ----

    /// Find the earliest-posted receive that accepts @p tag, remove it and return it;
    /// nullptr if none (the caller then calls add_unexpected()).
    /// Inline for the lone posted receive (a latency loop's case); the lists out of line.
    PostedReceive* match_posted(uint64_t tag) {
        if (PostedReceive* r = solo_; r != nullptr) {
            // The one posted receive, in no list: accept it or nothing.
            if ((tag & r->mask) != (r->tag & r->mask)) return nullptr;
            solo_ = nullptr;
            r->hook = {};
            posted_count_ = 0;
            return r;
        }
        return posted_count_ == 0 ? nullptr : match_filed(tag);
    }

    /// True when exactly one receive is posted and it is held alone (see solo_): then
    /// match_solo() answers what match_posted() would, without the lists.
    bool has_solo() const { return solo_ != nullptr; }
    /// match_posted() when has_solo(): the lone receive if it accepts @p tag (taken), else
    /// nullptr. For a caller's fast path that must make no call (the lists are out of line).
    PostedReceive* match_solo(uint64_t tag) {
        PostedReceive* r = solo_;
        if ((tag & r->mask) != (r->tag & r->mask)) return nullptr;
        solo_ = nullptr;
        r->hook = {};
        posted_count_ = 0;
        return r;
    }

    /// Queue an unexpected message (arrival order is the call order).
    void add_unexpected(UnexpectedMessage* msg);

    // ---- application side: a receive or probe is posted ----

    /// Find the earliest-arrived unexpected message that (tag, mask) accepts; if @p remove,
    /// take it out of both lists. nullptr if none.
    UnexpectedMessage* match_unexpected(uint64_t tag, uint64_t mask, bool remove);

    /// Remove a specific unexpected message (e.g. its sender failed). No-op if not queued.
    void remove_unexpected(UnexpectedMessage* msg);

    /// Queue a receive that found no unexpected message. Assigns post_seq.
    /// Inline when nothing else is posted (the receive is held alone, in no list).
    void post(PostedReceive* recv) {
        if (posted_count_ == 0) {
            recv->post_seq = next_post_seq_++;
            solo_ = recv;
            recv->hook.prev = recv->hook.next = &solo_mark_;
            posted_count_ = 1;
            return;
        }
        post_filed(recv);
    }

    /// post() when posted_count() is 0 (the caller checked): no call.
    void post_alone(PostedReceive* recv) {
        recv->post_seq = next_post_seq_++;
        solo_ = recv;
        recv->hook.prev = recv->hook.next = &solo_mark_;
        posted_count_ = 1;
    }

    /// Remove a posted receive (cancel). @return false if it was not queued (already matched).
    bool cancel(PostedReceive* recv);

    /// Number of queued posted receives / unexpected messages.
    size_t posted_count() const { return posted_count_; }
    size_t unexpected_count() const { return unexpected_count_; }

private:
    struct Bucket {
        ListHook head;  // sentinel of a circular list
    };
    // A bucket table is allocated once per size and never resized in place: the sentinels'
    // addresses are stored in the lists, so growth builds a new table and relinks into it.
    using Table = std::vector<Bucket>;

    static Table make_table(size_t n);
    // MPI-style tags pack context|rank|tag, so the low bits alone distribute poorly (e.g. many
    // ranks, one user tag). The murmur3 finaliser mixes every input bit into every output
    // bit. Inline: every post and every arrival hashes once.
    static size_t bucket_index(uint64_t tag, const Table& table) {
        uint64_t x = tag;
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ull;
        x ^= x >> 33;
        return static_cast<size_t>(x) & (table.size() - 1);
    }
    void grow_posted();
    void grow_unexpected();
    /// Link @p recv into its bucket (exact) or the wildcard list, after every entry there.
    void file_posted(PostedReceive* recv);
    /// match_posted() when the receives are in the lists (no lone receive).
    PostedReceive* match_filed(uint64_t tag);
    /// post() when another receive is already posted.
    void post_filed(PostedReceive* recv);

    // The only posted receive, when exactly one is posted and it was posted into an empty
    // queue (a ping-pong's case): held outside the lists, so posting and matching it hash
    // nothing and link nothing. A second post files it first (it is the earlier one, and
    // the lists are empty then), so order is kept. Its hook points at solo_mark_, so it reads
    // as queued (cancel) while in no list.
    PostedReceive* solo_ = nullptr;
    ListHook solo_mark_;

    Table posted_buckets_;      // exact-tag receives, post order within a bucket
    Table unexpected_buckets_;  // unexpected messages by tag, arrival order within a bucket
    ListHook wildcard_;         // sentinel: wildcard receives in post order
    ListHook arrival_;          // sentinel: every unexpected message in arrival order
    uint64_t next_post_seq_ = 1;
    uint64_t next_arrival_seq_ = 1;
    size_t posted_exact_count_ = 0;  // load of posted_buckets_ (wildcards are not hashed)
    size_t posted_count_ = 0;
    size_t unexpected_count_ = 0;
};

}  // namespace swy::proto
