// Verbs transport: completion groups (one CQ + one SRQ per kGroupConnections connections) and
// the receive buffers their SRQs hold, granted to connections as credits and lent to busy ones.
//
// Why groups: one CQ for every connection of a worker overflows once enough busy connections
// have completions outstanding (an overflow is a CQ error that takes down every QP on it), and
// one SRQ of fixed size caps the connections (63 with the old 64 × 64 buffers). A group's CQ
// holds, for each member, every send-queue slot (a QP error flushes each posted WR as a
// completion, signalled or not) and every receive buffer the member may ever be granted
// (SWY_VERBS_RX_CREDITS + its goodbye buffer): nothing can be outstanding beyond that, so no
// overflow, by construction. A new group is made when the others are full; each costs its
// CQ's and SRQ's rings, so groups stay small.
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "transports/verbs/verbs_connection.h"

namespace swy::tl::verbs {

using common::log_printf;
using common::LogLevel;

namespace {

/// Receive buffers registered at once: at least this many, so a block is one registration for
/// several connections' grants rather than one per connection.
constexpr uint32_t kRxBlockBuffers = 16;

uint64_t rx_wr_id(uint32_t block, uint32_t buffer) { return (uint64_t{block} << 32) | buffer; }
uint32_t rx_block(uint64_t wr_id) { return static_cast<uint32_t>(wr_id >> 32); }
uint32_t rx_index(uint64_t wr_id) { return static_cast<uint32_t>(wr_id); }

}  // namespace

Status VerbsInterface::create_group(std::string* why) {
    if (groups_.size() >= 0xFFFF) {
        *why = "verbs: too many completion groups";
        return Status::kNoResource;
    }
    const ibv_device_attr& da = dev_.device_attr;
    const uint32_t per_member_rx = config_.rx_credits + 1;
    const uint32_t per_member_cqe = config_.sq_depth + per_member_rx;
    // Members per group: as many as the device's CQ and SRQ limits allow, at most
    // kGroupConnections (at least one: open() checked that one member fits).
    uint32_t members = kGroupConnections;
    members = std::min(members, static_cast<uint32_t>(std::max(da.max_cqe, 1)) / per_member_cqe);
    members = std::min(members, static_cast<uint32_t>(std::max(da.max_srq_wr, 1)) / per_member_rx);
    if (members == 0) {
        *why = "verbs: the device's CQ (" + std::to_string(da.max_cqe) + " entries) or SRQ (" +
               std::to_string(da.max_srq_wr) +
               " work requests) cannot hold one connection's SWY_VERBS_SQ_DEPTH + "
               "SWY_VERBS_RX_CREDITS + 1";
        return Status::kInvalidParam;
    }
    Group g;
    g.cq_entries = members * per_member_cqe;
    g.srq_capacity = members * per_member_rx;
    g.cq = ibv_create_cq(dev_.context, static_cast<int>(g.cq_entries), this, channel_, 0);
    if (g.cq == nullptr) {
        *why = std::string("verbs: ibv_create_cq: ") + std::strerror(errno);
        return Status::kIoError;
    }
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = g.srq_capacity;
    sa.attr.max_sge = 1;
    g.srq = ibv_create_srq(pd_, &sa);
    if (g.srq == nullptr) {
        *why = std::string("verbs: ibv_create_srq: ") + std::strerror(errno);
        ibv_destroy_cq(g.cq);
        return Status::kIoError;
    }
    groups_.push_back(g);
    // A blocking wait must wake for this CQ too: ask for its next completion if the others
    // were asked (arm() asks every group; a group made while armed would otherwise sleep).
    ibv_req_notify_cq(g.cq, 0);
    log_printf(LogLevel::kDebug, "verbs: completion group %zu: CQ %u entries, SRQ %u, %u members",
               groups_.size() - 1, g.cq_entries, g.srq_capacity, members);
    return Status::kOk;
}

Status VerbsInterface::join_group(Connection* c, std::string* why) {
    const uint32_t per_member_rx = config_.rx_credits + 1;
    for (size_t i = 0; i < groups_.size(); ++i) {
        Group& g = groups_[i];
        if ((g.members + 1) * per_member_rx <= g.srq_capacity) {
            ++g.members;
            c->group = static_cast<uint16_t>(i);
            c->in_group = true;
            return Status::kOk;
        }
    }
    Status s = create_group(why);
    if (s != Status::kOk) return s;
    ++groups_.back().members;
    c->group = static_cast<uint16_t>(groups_.size() - 1);
    c->in_group = true;
    return Status::kOk;
}

void VerbsInterface::leave_group(Connection* c) {
    if (!c->in_group) return;
    Group& g = groups_[c->group];
    // The buffers stay posted in the SRQ; a later member is granted them again.
    g.rx_granted -= c->granted;
    c->granted = 0;
    // Completions of the destroyed QP may still sit in the CQ: the member's room is given back
    // once the CQ was polled empty (poll_groups). A QP that never connected (a join that
    // needed no QP after all, a failed handshake) has none.
    if (c->peer_qpn == 0) {
        --g.members;
    } else {
        ++g.leaving;
    }
    c->in_group = false;
}

Status VerbsInterface::grow_receive_pool(Group& g, uint16_t group, uint32_t buffers,
                                         std::string* why) {
    const uint32_t room = g.srq_capacity - g.rx_posted;
    if (buffers > room) {
        *why = "verbs: shared receive queue full (" + std::to_string(g.srq_capacity) + " buffers)";
        return Status::kNoResource;
    }
    buffers = std::min(room, std::max(buffers, kRxBlockBuffers));
    RxBlock block;
    const size_t bytes = config_.seg_size * buffers;
    block.memory.reset(new (std::nothrow) uint8_t[bytes]);
    if (!block.memory) {
        *why = "verbs: no memory for " + std::to_string(buffers) + " receive buffers";
        return Status::kNoMemory;
    }
    block.mr = ibv_reg_mr(pd_, block.memory.get(), bytes, IBV_ACCESS_LOCAL_WRITE);
    if (block.mr == nullptr) {
        *why = std::string("verbs: registering receive buffers: ") + std::strerror(errno);
        return errno == ENOMEM ? Status::kNoMemory : Status::kIoError;
    }
    block.group = group;
    block.buffers = buffers;
    rx_blocks_.push_back(std::move(block));
    const auto index = static_cast<uint32_t>(rx_blocks_.size() - 1);
    for (uint32_t i = 0; i < buffers; ++i) {
        if (post_receive(rx_wr_id(index, i)) != Status::kOk) {
            *why = "verbs: ibv_post_srq_recv failed";
            return Status::kIoError;
        }
        ++g.rx_posted;
    }
    return Status::kOk;
}

Status VerbsInterface::post_receive(uint64_t wr_id) {
    const uint32_t block = rx_block(wr_id);
    if (block >= rx_blocks_.size() || rx_index(wr_id) >= rx_blocks_[block].buffers) {
        return Status::kInvalidParam;
    }
    const RxBlock& b = rx_blocks_[block];
    ibv_sge sge{reinterpret_cast<uint64_t>(receive_buffer(wr_id)),
                static_cast<uint32_t>(config_.seg_size), b.mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_srq_recv(groups_[b.group].srq, &wr, &bad) == 0 ? Status::kOk : Status::kIoError;
}

uint8_t* VerbsInterface::receive_buffer(uint64_t wr_id) const {
    return rx_blocks_[rx_block(wr_id)].memory.get() + size_t{rx_index(wr_id)} * config_.seg_size;
}

Status VerbsInterface::grant_receives(Connection* c, uint32_t credits, std::string* why) {
    Group& g = groups_[c->group];
    // On top of the credits, the goodbye's buffer (verbs_wire.h), granted with the first ones.
    const uint32_t need = credits - c->credits + (c->granted == 0 ? 1 : 0);
    if (g.rx_posted < g.rx_granted + need) {
        Status s = grow_receive_pool(g, c->group, g.rx_granted + need - g.rx_posted, why);
        if (s != Status::kOk) return s;
    }
    // The first grant travels in the handshake; later ones in the credit word.
    if (c->granted == 0) c->credits_announced = credits;
    g.rx_granted += need;
    c->granted += need;
    c->credits = credits;
    return Status::kOk;
}

void VerbsInterface::lend_credits(Connection* c) {
    // The sender went through its whole window since the grant last grew: it is busy, lend it
    // twice as many buffers (posted before the peer hears of them: no RNR).
    c->since_lent = 0;
    const uint32_t more = std::min(c->credits * 2, config_.rx_credits);
    if (more <= c->credits) return;
    std::string why;
    if (grant_receives(c, more, &why) != Status::kOk) {
        log_printf(LogLevel::kDebug, "verbs: not lending credits: %s", why.c_str());
        return;
    }
    if (!c->credit_due) {
        c->credit_due = true;
        credit_due_.push_back(c->index);
    }
}

unsigned VerbsInterface::poll_groups() {
    unsigned n = 0;
    ibv_wc wc[16];
    for (size_t i = 0; i < groups_.size(); ++i) {
        int k = ibv_poll_cq(groups_[i].cq, 16, wc);
        for (int j = 0; j < k; ++j)
            handle_wc(wc[j]);
        if (k > 0) n += static_cast<unsigned>(k);
        if (__builtin_expect(groups_[i].leaving != 0, 0) && k < 16) {
            // Polled empty: whatever a closed member left in the CQ is gone.
            Group& g = groups_[i];
            g.members -= g.leaving;
            g.leaving = 0;
        }
    }
    return n;
}

}  // namespace swy::tl::verbs
