#include "protocols/tag/matcher.h"

#include <bit>
#include <cstddef>
#include <type_traits>

namespace swy::proto {

namespace {

constexpr uint64_t kExactMask = ~0ull;

// offsetof-based container_of needs standard layout; keep the entry types plain.
static_assert(std::is_standard_layout_v<PostedReceive>);
static_assert(std::is_standard_layout_v<UnexpectedMessage>);

void list_init(ListHook* head) { head->prev = head->next = head; }

void list_push_back(ListHook* head, ListHook* node) {
    node->prev = head->prev;
    node->next = head;
    head->prev->next = node;
    head->prev = node;
}

// Leaves the node in the "in no list" state, so a second cancel/remove is detectable.
void list_unlink(ListHook* node) {
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = nullptr;
}

bool linked(const ListHook* node) { return node->next != nullptr; }

PostedReceive* posted_of(ListHook* h) {
    return reinterpret_cast<PostedReceive*>(reinterpret_cast<char*>(h) -
                                            offsetof(PostedReceive, hook));
}

UnexpectedMessage* unexpected_of_bucket(ListHook* h) {
    return reinterpret_cast<UnexpectedMessage*>(reinterpret_cast<char*>(h) -
                                                offsetof(UnexpectedMessage, bucket_hook));
}

UnexpectedMessage* unexpected_of_arrival(ListHook* h) {
    return reinterpret_cast<UnexpectedMessage*>(reinterpret_cast<char*>(h) -
                                                offsetof(UnexpectedMessage, arrival_hook));
}

}  // namespace

TagMatcher::Table TagMatcher::make_table(size_t n) {
    Table table(n);
    for (Bucket& b : table)
        list_init(&b.head);
    return table;
}

TagMatcher::TagMatcher(size_t initial_buckets) {
    const size_t n = std::bit_ceil(initial_buckets == 0 ? size_t{1} : initial_buckets);
    posted_buckets_ = make_table(n);
    unexpected_buckets_ = make_table(n);
    list_init(&wildcard_);
    list_init(&arrival_);
}

// ---- receive side ----

PostedReceive* TagMatcher::match_filed(uint64_t tag) {
    // (match_posted() took the lone receive and the empty case inline.)
    // Fast path, no wildcard receive posted: the first receive of this tag in its bucket
    // (usually the bucket's only entry) is the answer.
    if (wildcard_.next == &wildcard_) {
        ListHook* head = &posted_buckets_[bucket_index(tag, posted_buckets_)].head;
        for (ListHook* h = head->next; h != head; h = h->next) {
            PostedReceive* r = posted_of(h);
            if (r->tag == tag) {
                list_unlink(h);
                --posted_exact_count_;
                --posted_count_;
                return r;
            }
        }
        return nullptr;
    }
    // Candidate A: earliest exact receive for this tag. Other tags share the bucket, so skip.
    PostedReceive* best = nullptr;
    ListHook* head = &posted_buckets_[bucket_index(tag, posted_buckets_)].head;
    for (ListHook* h = head->next; h != head; h = h->next) {
        PostedReceive* r = posted_of(h);
        if (r->tag == tag) {
            best = r;
            break;
        }
    }
    // Candidate B: the wildcard list is in post order, so once its entries are younger than
    // A there is nothing earlier to find and the scan stops.
    for (ListHook* h = wildcard_.next; h != &wildcard_; h = h->next) {
        PostedReceive* r = posted_of(h);
        if (best != nullptr && r->post_seq > best->post_seq) break;
        if ((tag & r->mask) == (r->tag & r->mask)) {
            best = r;
            break;
        }
    }
    if (best == nullptr) return nullptr;
    list_unlink(&best->hook);
    if (best->mask == kExactMask) --posted_exact_count_;
    --posted_count_;
    return best;
}

void TagMatcher::add_unexpected(UnexpectedMessage* msg) {
    msg->arrival_seq = next_arrival_seq_++;
    list_push_back(&unexpected_buckets_[bucket_index(msg->tag, unexpected_buckets_)].head,
                   &msg->bucket_hook);
    list_push_back(&arrival_, &msg->arrival_hook);
    if (++unexpected_count_ > unexpected_buckets_.size()) grow_unexpected();
}

// ---- application side ----

UnexpectedMessage* TagMatcher::match_unexpected(uint64_t tag, uint64_t mask, bool remove) {
    UnexpectedMessage* found = nullptr;
    if (mask == kExactMask) {
        ListHook* head = &unexpected_buckets_[bucket_index(tag, unexpected_buckets_)].head;
        for (ListHook* h = head->next; h != head; h = h->next) {
            UnexpectedMessage* m = unexpected_of_bucket(h);
            if (m->tag == tag) {
                found = m;
                break;
            }
        }
    } else {
        const uint64_t want = tag & mask;
        for (ListHook* h = arrival_.next; h != &arrival_; h = h->next) {
            UnexpectedMessage* m = unexpected_of_arrival(h);
            if ((m->tag & mask) == want) {
                found = m;
                break;
            }
        }
    }
    if (found != nullptr && remove) remove_unexpected(found);
    return found;
}

void TagMatcher::remove_unexpected(UnexpectedMessage* msg) {
    if (!linked(&msg->bucket_hook)) return;
    list_unlink(&msg->bucket_hook);
    list_unlink(&msg->arrival_hook);
    --unexpected_count_;
}

void TagMatcher::post_filed(PostedReceive* recv) {
    recv->post_seq = next_post_seq_++;
    if (solo_ != nullptr) {
        PostedReceive* earlier = solo_;
        solo_ = nullptr;
        file_posted(earlier);
    }
    ++posted_count_;
    file_posted(recv);
}

void TagMatcher::file_posted(PostedReceive* recv) {
    if (recv->mask == kExactMask) {
        list_push_back(&posted_buckets_[bucket_index(recv->tag, posted_buckets_)].head,
                       &recv->hook);
        if (++posted_exact_count_ > posted_buckets_.size()) grow_posted();
    } else {
        list_push_back(&wildcard_, &recv->hook);
    }
}

bool TagMatcher::cancel(PostedReceive* recv) {
    if (recv == solo_) {
        solo_ = nullptr;
        recv->hook = {};
        posted_count_ = 0;
        return true;
    }
    if (!linked(&recv->hook)) return false;
    list_unlink(&recv->hook);
    if (recv->mask == kExactMask) --posted_exact_count_;
    --posted_count_;
    return true;
}

// ---- growth (allocates; amortised over the posts/arrivals that filled the table) ----
//
// All entries with one tag live in one old bucket in order; walking each old bucket front to
// back and appending to the new bucket keeps that order. Entries of different tags may
// interleave differently afterwards, which is harmless: a lookup takes the first *equal* tag.

void TagMatcher::grow_posted() {
    Table next = make_table(posted_buckets_.size() * 2);
    for (Bucket& old : posted_buckets_) {
        ListHook* h = old.head.next;
        while (h != &old.head) {
            ListHook* following = h->next;
            list_push_back(&next[bucket_index(posted_of(h)->tag, next)].head, h);
            h = following;
        }
    }
    posted_buckets_.swap(next);  // swap moves buffers, so sentinel addresses stay valid
}

void TagMatcher::grow_unexpected() {
    Table next = make_table(unexpected_buckets_.size() * 2);
    for (Bucket& old : unexpected_buckets_) {
        ListHook* h = old.head.next;
        while (h != &old.head) {
            ListHook* following = h->next;
            list_push_back(&next[bucket_index(unexpected_of_bucket(h)->tag, next)].head, h);
            h = following;
        }
    }
    unexpected_buckets_.swap(next);
}

}  // namespace swy::proto
