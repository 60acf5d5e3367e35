// One RC connection of the verbs interface (private to src/transports/verbs/).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "common/socket.h"
#include "common/unique_fd.h"
#include "transports/verbs/verbs_iface.h"

namespace swy::tl::verbs {

/// A multi-WR RDMA READ or WRITE: fragmented into chunks of at most max_rdma_chunk_ bytes,
/// posted as the send queue allows; its callback runs once every chunk completed.
struct RdmaOp {
    bool read = false;
    uint16_t conn = 0;
    uint32_t generation = 0;
    uint32_t lkey = 0;
    uint64_t local_address = 0;
    uint64_t remote_address = 0;
    uint32_t rkey = 0;
    size_t length = 0;
    size_t posted = 0;         ///< bytes handed to the send queue
    uint32_t outstanding = 0;  ///< WRs posted and not yet retired
    Status status = Status::kOk;
    ZcopyCallback cb = nullptr;
    ZcopyCallback posted_cb = nullptr;  ///< WRITE: runs once the last chunk is posted
    void* arg = nullptr;
    uint64_t cookie = 0;
};

struct VerbsInterface::Connection {
    State state = State::kConnecting;
    uint16_t index = 0;
    uint32_t generation = 0;
    uint64_t peer_uid = 0;
    ibv_qp* qp = nullptr;
    uint32_t psn = 0;
    common::UniqueFd cm_fd;  ///< the handshake socket
    uint8_t cm_in[sizeof(CmMessage)] = {};
    uint8_t cm_nonce[sizeof(CmMessage::nonce)] = {};  ///< connector: our request's nonce
    size_t cm_in_len = 0;
    bool bye_received = false;  ///< the peer's goodbye came through the QP
    bool bye_sent = false;      ///< our endpoint went away and said goodbye
    bool closing = false;       ///< goodbye posted and nobody holds the connection any more:
                                ///< no more sends; close once it completed
    bool reported = false;      ///< failure already queued for the sink
    bool accepted = false;      ///< the peer connected (we answered its request)
    bool remote_owner = false;  ///< the peer holds an endpoint on it (it connected, or
                                ///< joined), and has not said goodbye
    bool join_pending = false;  ///< one of our connects asked to join it (not answered yet)
    bool joining = false;       ///< a connect that asked to join join_index (below)
    uint16_t join_index = 0;    ///< a joining connect: the connection it asked to join
    uint32_t join_generation = 0;

    /// Crossing connects, the losing side (verbs_crossing.cpp): the peer answered our request
    /// with a redirect; our QP is gone and the endpoint waits (state kConnecting, no socket)
    /// for the connection the peer made to us, whose QP on its side is redirect_qpn, until
    /// redirect_deadline_ns (coarse clock).
    bool redirected = false;
    uint32_t redirect_qpn = 0;
    uint64_t redirect_deadline_ns = 0;

    uint16_t group = 0;  ///< completion group (CQ + SRQ)
    bool in_group = false;
    uint32_t credits = 0;            ///< receive buffers granted to the peer's sends now
    uint32_t credits_announced = 0;  ///< the grant the peer has been told of
    uint32_t since_lent = 0;         ///< messages consumed since the grant last grew
    uint32_t granted = 0;            ///< buffers held in the group's pool: credits + goodbye
    uint32_t peer_qpn = 0;           ///< the peer's QP of this connection
    /// Connecting: the GID in the peer's address; once connected: its QP's.
    uint8_t peer_gid[16] = {};
    size_t peer_max_message = 0;  ///< the peer's receive buffer size (for a reply lane)
    size_t max_message = 0;       ///< largest SEND the peer's buffers take (and our bounce)
    size_t pio_max_message = 0;   ///< largest inline SEND
    std::unique_ptr<DmCells> dm;  ///< device-memory PIO slot (null: inline only); its cells
                                  ///< are given back as the SENDs from them retire
    CreditWindow window;          ///< our sends into the peer's buffers
    CreditReturn credit_return;   ///< the peer's sends into ours
    bool credit_due = false;      ///< on credit_due_
    uint64_t remote_credit_addr = 0;
    uint32_t remote_credit_rkey = 0;
    uint64_t credit_value = 0;  ///< source of the credit RDMA WRITE (sent inline)
    // Send queue: WRs are numbered; a signaled completion retires every WR up to it.
    uint32_t sq_posted = 0;
    uint32_t sq_retired = 0;
    uint32_t since_signal = 0;
    std::vector<WrSlot> ring;
    std::vector<std::unique_ptr<RdmaOp>> ops;  // live RDMA operations
    VerbsEndpoint* owner_ep = nullptr;
    std::unique_ptr<VerbsEndpoint> reply_ep;

    uint32_t sq_used() const { return sq_posted - sq_retired; }
};

/// epoll tags of the interface's own descriptors. Connections use cm_tag(): their slot and
/// generation, so an event of a closed connection never reaches the slot's next one.
inline constexpr uint64_t kListenTag = ~uint64_t{0};
inline constexpr uint64_t kChannelTag = ~uint64_t{0} - 1;
inline uint64_t cm_tag(uint16_t conn, uint32_t generation) {
    return (uint64_t{generation} << 16) | conn;
}

/// Connection generations keep to 15 bits: they travel in send work request ids.
inline constexpr uint32_t kWrGenerationMask = 0x7FFF;

/// The handshake listener: on the GID's own address where it has one (an IPv4-mapped GID:
/// that IPv4 address; a global IPv6 GID of RoCE v2: that IPv6 address), else on every
/// address (IPv6 and IPv4), advertised as loopback (peers on this host; across hosts an
/// InfiniBand port needs IPoIB or an IP GID, docs/verbs.md). @p advertised: the address
/// peers are given. kIoError with @p why.
Status listen_for_handshakes(const std::array<uint8_t, 16>& gid, common::UniqueFd* out,
                             common::SocketAddress* advertised, std::string* why);

/// wr_id of a send WR: bit 63 set (receive wr_ids are buffer addresses), connection index,
/// low 15 bits of its generation, and the WR's sequence number.
inline uint64_t send_wr_id(uint16_t conn, uint32_t generation, uint32_t seq) {
    return (uint64_t{1} << 63) | (uint64_t{generation & kWrGenerationMask} << 48) |
           (uint64_t{conn} << 32) | seq;
}
inline bool is_send_wr_id(uint64_t id) { return (id >> 63) != 0; }
inline uint16_t wr_conn(uint64_t id) { return static_cast<uint16_t>(id >> 32); }
inline uint32_t wr_generation(uint64_t id) {
    return static_cast<uint32_t>((id >> 48) & kWrGenerationMask);
}
inline uint32_t wr_seq(uint64_t id) { return static_cast<uint32_t>(id); }

}  // namespace swy::tl::verbs
