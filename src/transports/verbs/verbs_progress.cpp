// Verbs transport: the data path — SENDs (inline, from a device-memory cell, or through a
// bounce buffer), credit returns, RDMA READ/WRITE, and completion handling from progress.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "common/log.h"
#include "transports/verbs/verbs_connection.h"

namespace swy::tl::verbs {

using common::log_printf;
using common::LogLevel;

// ------------------------------------------------------------------------------------------
// Posting
// ------------------------------------------------------------------------------------------

bool VerbsInterface::post_send(Connection* c, ibv_send_wr* wr, int32_t bounce, RdmaOp* op,
                               int32_t dm_cell) {
    const uint32_t seq = c->sq_posted;
    // Selective signalling: a completion retires every WR before it. Bounce buffers are a
    // shared pool, so their sends are always signalled (an idle connection must not sit on
    // them); others every 16th, and every one once the queue is half full, so the newest WR of
    // a full queue is always signalled. Device-memory cells are this connection's own: the
    // caller signals the send that leaves half or none of them free (DmCells::Cell::signal).
    if (bounce >= 0 || ++c->since_signal >= 16 || c->sq_used() >= config_.sq_depth / 2) {
        wr->send_flags |= IBV_SEND_SIGNALED;
    }
    if ((wr->send_flags & IBV_SEND_SIGNALED) != 0) c->since_signal = 0;
    wr->wr_id = send_wr_id(c->index, c->generation, seq);
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(c->qp, wr, &bad) != 0) return false;
    c->ring[seq % config_.sq_depth] = {bounce, dm_cell, op};
    ++c->sq_posted;
    return true;
}

Status VerbsInterface::send(Connection* c, AmId id, const void* hdr, size_t hdr_len,
                            const void* payload, size_t length, Endpoint::PackFn pack,
                            void* pack_arg) {
    if (__builtin_expect(c->state != State::kReady || c->closing, 0)) {
        return c->state == State::kFailed || c->closing ? Status::kConnectionReset
                                                        : Status::kNoResource;
    }
    const size_t total = hdr_len + length;
    if (__builtin_expect(total > c->max_message, 0)) return Status::kInvalidParam;
    // Two slots stay free for the goodbye and a credit update.
    if (__builtin_expect(c->sq_used() + 2 >= config_.sq_depth, 0)) return Status::kNoResource;
    if (c->window.available() == 0) {
        // The receiver's word: what it consumed, and what it lends us now.
        const uint64_t word = __atomic_load_n(&credit_words_[c->index], __ATOMIC_ACQUIRE);
        c->window.grow(credit_word_credits(word));
        c->window.update(credit_word_freed(word));
        if (c->window.available() == 0) return Status::kNoResource;
    }
    ibv_send_wr wr{};
    ibv_sge sge[2];
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.sg_list = sge;
    int32_t bounce = -1;
    int32_t dm_cell = -1;
    DmCells::Cell cell;
    if (total <= c->pio_max_message && pack == nullptr) {
        // PIO: the CPU copies header and payload into the WQE; no registration, no buffer.
        int n = 0;
        if (hdr_len != 0) {
            sge[n++] = {reinterpret_cast<uint64_t>(hdr), static_cast<uint32_t>(hdr_len), 0};
        }
        if (length != 0) {
            sge[n++] = {reinterpret_cast<uint64_t>(payload), static_cast<uint32_t>(length), 0};
        }
        wr.num_sge = n;
        wr.send_flags = IBV_SEND_INLINE;
    } else if (c->dm != nullptr && pack == nullptr && total <= c->dm->cell_size() &&
               c->dm->acquire(&cell)) {
        // Device-memory PIO: the CPU stores header and payload into the adapter's memory; the
        // SEND reads them from there (no host memory read across the bus). A cell that is
        // busy sends through a bounce buffer instead, below.
        Status st = c->dm->store(cell.index, hdr, hdr_len, payload, length);
        if (__builtin_expect(st != Status::kOk, 0)) {
            c->dm->cancel(cell.index);  // nothing was posted
            return st;
        }
        dm_cell = static_cast<int32_t>(cell.index);
        sge[0] = {c->dm->sge_address(cell.index), static_cast<uint32_t>(total), c->dm->lkey()};
        wr.num_sge = 1;
        if (cell.signal) wr.send_flags = IBV_SEND_SIGNALED;
    } else {
        if (bounce_free_.empty()) return Status::kNoResource;
        bounce = bounce_free_.back();
        uint8_t* dst = bounce_memory_.get() + static_cast<size_t>(bounce) * config_.seg_size;
        if (hdr_len != 0) std::memcpy(dst, hdr, hdr_len);
        if (pack != nullptr) {
            Status s = pack(pack_arg, dst + hdr_len, length);
            if (s != Status::kOk) return s;
        } else if (length != 0) {
            std::memcpy(dst + hdr_len, payload, length);
        }
        bounce_free_.pop_back();
        sge[0] = {reinterpret_cast<uint64_t>(dst), static_cast<uint32_t>(total), bounce_mr_->lkey};
        wr.num_sge = 1;
    }
    const uint16_t freed = c->credit_return.freed();
    wr.imm_data = htonl(encode_imm(id, freed));
    c->window.take();
    if (__builtin_expect(!post_send(c, &wr, bounce, nullptr, dm_cell), 0)) {
        if (bounce >= 0) bounce_free_.push_back(bounce);
        if (dm_cell >= 0) c->dm->cancel(cell.index);
        fail(c, Status::kIoError, "ibv_post_send failed");
        return Status::kConnectionReset;
    }
    c->credit_return.reported(freed);  // the immediate carried it
    if (dm_cell >= 0) {
        ++stats_.dm_sends;
    } else if (bounce >= 0) {
        ++stats_.bounce_sends;
    } else {
        ++stats_.inline_sends;
    }
    return Status::kOk;
}

void VerbsInterface::return_credits(Connection* c) {
    c->credit_due = false;
    if (c->state != State::kReady || c->closing) return;
    if (c->credit_return.unreported() == 0 && c->credits_announced == c->credits) return;
    if (c->sq_used() + 1 >= config_.sq_depth) {
        c->credit_due = true;  // try again once sends retired
        credit_due_.push_back(c->index);
        return;
    }
    // An inline RDMA WRITE into the peer's credit word: consumes no receive buffer there, so
    // returning credits can never itself run out of credits.
    c->credit_value =
        encode_credit_word(c->credit_return.freed(), static_cast<uint16_t>(c->credits));
    ibv_sge sge{reinterpret_cast<uint64_t>(&c->credit_value), sizeof(c->credit_value), 0};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_INLINE;
    wr.wr.rdma.remote_addr = c->remote_credit_addr;
    wr.wr.rdma.rkey = c->remote_credit_rkey;
    if (post_send(c, &wr, -1, nullptr)) {
        c->credit_return.reported(credit_word_freed(c->credit_value));
        c->credits_announced = c->credits;
    } else {
        fail(c, Status::kIoError, "posting a credit update failed");
    }
}

// ------------------------------------------------------------------------------------------
// RDMA
// ------------------------------------------------------------------------------------------

Status VerbsInterface::start_rdma(Connection* c, bool read, const MemoryRegistration& local,
                                  size_t local_offset, uint64_t remote_address, uint32_t rkey,
                                  size_t length, ZcopyCallback cb, ZcopyCallback posted, void* arg,
                                  uint64_t cookie) {
    if (c->state != State::kReady || c->closing) return Status::kConnectionReset;
    if (length == 0 || local_offset > local.length() || length > local.length() - local_offset) {
        return Status::kInvalidParam;
    }
    auto op = std::make_unique<RdmaOp>();
    op->read = read;
    op->conn = c->index;
    op->generation = c->generation;
    op->lkey = local.lkey();
    op->local_address = local.address() + local_offset;
    op->remote_address = remote_address;
    op->rkey = rkey;
    op->length = length;
    op->cb = cb;
    op->posted_cb = posted;
    op->arg = arg;
    op->cookie = cookie;
    RdmaOp* raw = op.get();
    c->ops.push_back(std::move(op));
    if (!post_rdma(c, raw) && c->state == State::kReady) rdma_backlog_.push_back(raw);
    return Status::kOk;
}

bool VerbsInterface::post_rdma(Connection* c, RdmaOp* op) {
    while (op->posted < op->length) {
        if (c->sq_used() + 3 >= config_.sq_depth) return false;
        const size_t chunk = std::min(max_rdma_chunk_, op->length - op->posted);
        ibv_sge sge{op->local_address + op->posted, static_cast<uint32_t>(chunk), op->lkey};
        ibv_send_wr wr{};
        wr.opcode = op->read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.wr.rdma.remote_addr = op->remote_address + op->posted;
        wr.wr.rdma.rkey = op->rkey;
        // The last chunk is signalled: its completion retires the others (RC completes in order).
        if (op->posted + chunk == op->length) wr.send_flags = IBV_SEND_SIGNALED;
        if (!post_send(c, &wr, -1, op)) {
            fail(c, Status::kIoError, "posting an RDMA operation failed");
            return true;
        }
        ++op->outstanding;
        op->posted += chunk;
    }
    // Every chunk is in the send queue: whatever the caller posts on this QP from now on is
    // executed by the peer after them. Only ever called once per op (posted == length stops
    // the loop above, and a backlogged op leaves the backlog here).
    if (op->posted_cb != nullptr && op->status == Status::kOk && c->state == State::kReady &&
        !quiet_) {
        const ZcopyCallback posted = op->posted_cb;
        op->posted_cb = nullptr;
        posted(op->arg, op->cookie, Status::kOk);
    }
    return true;
}

void VerbsInterface::progress_rdma_backlog() {
    std::vector<RdmaOp*> list;
    list.swap(rdma_backlog_);
    for (RdmaOp* op : list) {
        Connection* c = lookup(op->conn, op->generation);
        if (c == nullptr || c->state != State::kReady) continue;
        if (!post_rdma(c, op)) rdma_backlog_.push_back(op);
    }
}

// ------------------------------------------------------------------------------------------
// Completions
// ------------------------------------------------------------------------------------------

void VerbsInterface::retire_sends(Connection* c, uint32_t through, Status status) {
    // Stale (already retired) or from before a reuse of this slot: nothing to do.
    if (static_cast<uint32_t>(through - c->sq_retired) >= c->sq_used()) return;
    std::vector<RdmaOp*> finished;
    while (c->sq_retired != through + 1) {
        WrSlot& slot = c->ring[c->sq_retired % config_.sq_depth];
        if (slot.bounce >= 0) bounce_free_.push_back(slot.bounce);
        // The adapter has read the cell (the SEND completed, or was flushed): reusable now.
        if (slot.dm_cell >= 0 && c->dm != nullptr) {
            c->dm->release(static_cast<uint32_t>(slot.dm_cell));
        }
        if (slot.op != nullptr) {
            RdmaOp* op = slot.op;
            --op->outstanding;
            if (status != Status::kOk && op->status == Status::kOk) op->status = status;
            if (op->outstanding == 0 && op->posted == op->length) finished.push_back(op);
        }
        slot = {};
        ++c->sq_retired;
    }
    if (finished.empty()) return;
    // Take the operations out before calling back: a callback may start new ones on this
    // connection, or close it.
    struct Done {
        ZcopyCallback cb;
        void* arg;
        uint64_t cookie;
        Status status;
    };
    std::vector<Done> done;
    for (RdmaOp* op : finished) {
        done.push_back({op->cb, op->arg, op->cookie, op->status});
        std::erase(rdma_backlog_, op);
        std::erase_if(c->ops, [op](const std::unique_ptr<RdmaOp>& p) { return p.get() == op; });
    }
    if (quiet_) return;
    for (const Done& d : done)
        d.cb(d.arg, d.cookie, d.status);
}

void VerbsInterface::handle_wc(const ibv_wc& wc) {
    if (!is_send_wr_id(wc.wr_id)) {
        handle_receive(wc);
        return;
    }
    const uint16_t index = wr_conn(wc.wr_id);
    const uint32_t generation = wr_generation(wc.wr_id);
    Connection* c = lookup(index, generation);
    if (c == nullptr) return;
    const bool ok = wc.status == IBV_WC_SUCCESS;
    retire_sends(c, wr_seq(wc.wr_id), ok ? Status::kOk : Status::kConnectionReset);
    c = lookup(index, generation);
    if (c == nullptr) return;
    if (!ok && wc.status != IBV_WC_WR_FLUSH_ERR) {
        fail(c, Status::kConnectionReset, ibv_wc_status_str(wc.status));
        return;
    }
    if (c->closing && c->sq_used() == 0) finish_close(c);
}

void VerbsInterface::handle_receive(const ibv_wc& wc) {
    const uint8_t* buffer = receive_buffer(wc.wr_id);
    Connection* c = by_qpn(wc.qp_num);
    if (wc.status != IBV_WC_SUCCESS || c == nullptr || (wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
        (void)post_receive(wc.wr_id);
        if (c != nullptr && wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR) {
            fail(c, Status::kConnectionReset, ibv_wc_status_str(wc.status));
        }
        return;
    }
    const uint32_t imm = ntohl(wc.imm_data);
    const uint16_t index = c->index;
    const uint32_t generation = c->generation;
    c->window.update(imm_freed(imm));
    const uint8_t id = imm_am_id(imm);
    if (id == kAmBye) {
        // Everything the peer sent before the goodbye has been delivered (RC order).
        (void)post_receive(wc.wr_id);
        if (c->bye_received) return;  // one goodbye per side: a second one is noise
        c->bye_received = true;
        c->remote_owner = false;
        if (!quiet_) sink_->on_sender_released({index_, index});
        if ((c = lookup(index, generation)) == nullptr) return;
        // Our endpoint on it (or one about to join it, or redirected to it) keeps it open, as
        // the lane it sends on; otherwise nobody holds it any more.
        const bool held = c->owner_ep != nullptr && !c->bye_sent;
        if (held || c->join_pending || awaited_by_redirect(c)) return;
        if (c->bye_sent && c->sq_used() != 0) {
            c->closing = true;  // our own goodbye first: close once it completed
            return;
        }
        close_connection(c);
        return;
    }
    if (c->state == State::kReady && !quiet_) {
        sink_->on_am(id, {index_, index}, buffer, wc.byte_len);
    }
    // Re-post before returning the credit: the buffer must be back before the peer reuses it.
    (void)post_receive(wc.wr_id);
    c = lookup(index, generation);
    if (c == nullptr) return;
    c->credit_return.consumed();
    if (++c->since_lent >= c->credits && c->credits < config_.rx_credits) lend_credits(c);
    const uint32_t threshold = std::max<uint32_t>(1, c->credits / 2);
    if (!c->credit_due && c->credit_return.unreported() >= threshold) {
        c->credit_due = true;
        credit_due_.push_back(index);
    }
}

void VerbsInterface::drain_cq() {
    while (poll_groups() != 0) {}
}

unsigned VerbsInterface::progress() {
    if (in_progress_) return 0;
    in_progress_ = true;
    unsigned n = 0;
    if (__builtin_expect(!stash_.empty(), 0)) {
        std::vector<ibv_wc> list;
        list.swap(stash_);
        for (const ibv_wc& wc : list)
            handle_wc(wc);
        n += static_cast<unsigned>(list.size());
    }
    n += poll_groups();
    if (handshakes_ > 0) {
        poll_cm();
    } else if (__builtin_expect((++tick_ & (kCmPollEvery - 1)) == 0, 0)) {
        // epoll_wait every 64 calls was several system calls per 8-byte round trip on rxe,
        // as many as the two posts themselves: look only once the coarse clock moved on.
        const uint64_t now = common::monotonic_coarse_ns();
        if (now - cm_polled_ns_ >= kCmPollIntervalNs) {
            cm_polled_ns_ = now;
            poll_cm();
        }
    }
    if (__builtin_expect(!rdma_backlog_.empty(), 0)) progress_rdma_backlog();
    if (!credit_due_.empty()) {
        std::vector<uint16_t> due;
        due.swap(credit_due_);
        for (uint16_t index : due) {
            if (index < conns_.size() && conns_[index]) return_credits(conns_[index].get());
        }
    }
    if (__builtin_expect(!to_report_.empty(), 0)) {
        // Failed connections: retire whatever the flush did not (unsignalled WRs), so every
        // RDMA callback runs and every bounce buffer comes back, then tell the worker.
        const std::vector<uint16_t> failed = to_report_;
        for (uint16_t index : failed) {
            if (index >= conns_.size() || !conns_[index]) continue;
            Connection* c = conns_[index].get();
            if (c->sq_used() != 0) retire_sends(c, c->sq_posted - 1, Status::kConnectionReset);
            if (index < conns_.size() && conns_[index]) {
                c = conns_[index].get();
                std::vector<RdmaOp*> unposted;
                for (auto& op : c->ops) {
                    if (op->outstanding == 0) unposted.push_back(op.get());
                }
                for (RdmaOp* op : unposted) {
                    const ZcopyCallback cb = op->cb;
                    void* arg = op->arg;
                    const uint64_t cookie = op->cookie;
                    std::erase_if(c->ops,
                                  [op](const std::unique_ptr<RdmaOp>& p) { return p.get() == op; });
                    cb(arg, cookie, Status::kConnectionReset);
                    if (index >= conns_.size() || !conns_[index]) break;
                }
            }
        }
        report_failures();
    }
    in_progress_ = false;
    return n;
}

}  // namespace swy::tl::verbs
