// Starting inputs for the fuzz targets, made with the library's own encoders so that the
// fuzzer begins from inputs that pass validation and mutates inward from there.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "core/address.h"
#include "core/conn_wire.h"
#include "protocols/rma/rma_wire.h"
#include "protocols/am/am_wire.h"
#include "protocols/wire.h"
#include "targets.h"
#include "transports/self/self_transport.h"
#include "transports/shm/shm_address.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/tcp/tcp_wire.h"

namespace swy::fuzz {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes with_mode(uint8_t mode, const Bytes& body) {
    // Sized first, then filled: GCC 12 at -O3 flags insert() into a one-byte vector with a
    // false -Warray-bounds.
    Bytes out(body.size() + 1);
    out[0] = mode;
    std::copy(body.begin(), body.end(), out.begin() + 1);
    return out;
}

Bytes tcp_section() {
    tl::tcp::TcpAddressEntry v4{}, v6{};
    v4.family = 4;
    v4.port = 40000;
    v4.ip[0] = 10, v4.ip[3] = 7;
    v6.family = 6;
    v6.port = 40001;
    v6.ip[15] = 1;
    return tl::tcp::encode_tcp_address({v4, v6});
}

Bytes shm_section() {
    tl::shm::ShmAddress a{};
    a.pid = 4242;
    a.memfd = 5;
    a.segment_size = 1 << 20;
    a.wake_fd = 6;
    return tl::shm::encode_shm_address(a);
}

std::vector<Bytes> address_seeds() {
    core::WorkerAddress a;
    a.worker_uid = 0x0123456789abcdef;
    a.host.boot_id[0] = 0xb0;
    a.host.netns_inode = 4026531840;
    std::vector<Bytes> out{with_mode(0, core::encode_address(a))};
    a.sections.push_back({tl::self::kAddressSection, {}});
    a.sections.push_back({tl::shm::kAddressSection, shm_section()});
    a.sections.push_back({tl::tcp::kAddressSection, tcp_section()});
    out.push_back(with_mode(0, core::encode_address(a)));
    out.push_back(with_mode(1, tcp_section()));
    out.push_back(with_mode(2, shm_section()));
    return out;
}

void frame(Bytes* out, tl::AmId id, const Bytes& body) {
    uint8_t header[tl::tcp::kFrameHeaderSize];
    tl::tcp::encode_frame_header(header, id, static_cast<uint32_t>(body.size()));
    out->insert(out->end(), header, header + sizeof header);
    out->insert(out->end(), body.begin(), body.end());
}

Bytes hello() {
    Bytes body(tl::tcp::kHelloSize);
    const uint8_t nonce[tl::tcp::kNonceSize] = {1, 2, 3};
    tl::tcp::encode_hello(body.data(), 0xfeedface, nonce);
    Bytes out;
    frame(&out, tl::tcp::kTcpControlAm, body);
    return out;
}

std::vector<Bytes> tcp_stream_seeds() {
    std::vector<Bytes> out{hello()};
    Bytes messages = hello();
    frame(&messages, proto::kAmEagerOnly, Bytes(8 + 5, 0x41));
    frame(&messages, proto::kAmEagerOnly, Bytes(8, 0));
    frame(&messages, proto::kAmRndvRts, Bytes(sizeof(proto::RtsHeader), 0));
    out.push_back(messages);
    Bytes goodbye = messages;
    frame(&goodbye, tl::tcp::kTcpControlAm, {static_cast<uint8_t>(tl::tcp::TcpControl::kGoodbye)});
    out.push_back(goodbye);
    Bytes cut = messages, last;
    frame(&last, proto::kAmEagerOnly, Bytes(300, 0x42));
    cut.insert(cut.end(), last.begin(), last.begin() + 200);  // EOF inside a frame
    out.push_back(cut);
    Bytes early;
    frame(&early, proto::kAmEagerOnly, Bytes(8, 1));  // a message before hello
    out.push_back(early);
    return out;
}

template <typename Header>
void packet(Bytes* out, proto::AmIdValue id, const Header& h, size_t payload, uint8_t fill) {
    const size_t len = sizeof h + payload;
    out->push_back(static_cast<uint8_t>(id));
    out->push_back(static_cast<uint8_t>(len));
    out->push_back(static_cast<uint8_t>(len >> 8));
    const auto* p = reinterpret_cast<const uint8_t*>(&h);
    out->insert(out->end(), p, p + sizeof h);
    out->insert(out->end(), payload, fill);
}

std::vector<Bytes> worker_am_seeds() {
    std::vector<Bytes> out;
    Bytes b;
    packet(&b, proto::kAmEagerOnly, proto::EagerOnlyHeader{0x11}, 10, 0x61);
    out.push_back(b);
    b.clear();
    packet(&b, proto::kAmEagerSyncOnly, proto::EagerSyncHeader{0x22, 7}, 100, 0x62);
    out.push_back(b);
    b.clear();
    proto::EagerFirstHeader first{0x33, 2000, 0, 1, 0};
    packet(&b, proto::kAmEagerFirst, first, 1000, 0x63);
    packet(&b, proto::kAmEagerMiddle, proto::EagerMiddleHeader{1000, 1, 0}, 1000, 0x64);
    out.push_back(b);
    b.clear();
    first.tag = 0x11;  // into the 64-byte receive: truncated
    packet(&b, proto::kAmEagerFirst, first, 1000, 0x65);
    packet(&b, proto::kAmEagerMiddle, proto::EagerMiddleHeader{1000, 1, 0}, 1000, 0x66);
    out.push_back(b);
    for (uint32_t scheme = 0; scheme < 3; ++scheme) {
        b.clear();
        proto::RtsHeader rts{0x44, 9, 4000, 0x1000, 1, scheme, 0, 0};
        packet(&b, proto::kAmRndvRts, rts, 0, 0);
        packet(&b, proto::kAmRndvData, proto::RndvDataHeader{1, 0}, 500, 0x67);
        out.push_back(b);
    }
    b.clear();
    packet(&b, proto::kAmSyncAck, proto::AckHeader{1, 0, 0}, 0, 0);
    packet(&b, proto::kAmRndvAts, proto::AckHeader{1, 0, 0}, 0, 0);
    packet(&b, proto::kAmRndvFin, proto::AckHeader{1, 0, 0}, 0, 0);
    proto::RtrHeader rtr{};
    rtr.sender_request = 1;
    rtr.length = 100;
    packet(&b, proto::kAmRndvRtr, rtr, 0, 0);
    out.push_back(b);
    // One-sided requests (protocols/rma/rma_wire.h) with keys no table issued, then a flush
    // whose ack reports their error, and replies naming no request.
    b.clear();
    const uint8_t v = rma::kRmaWireVersion;
    packet(&b, proto::kAmRmaPut, rma::PutHeader{7, 0x1000, 1, v, {}}, 64, 0x68);
    packet(&b, proto::kAmRmaGet, rma::GetHeader{7, 0x1000, 4000, 5, 1, v, {}}, 0, 0);
    packet(&b, proto::kAmRmaAtomic,
           rma::AtomicHeader{7, 0x1000, 1, 0, 6, 1, v, SWY_ATOMIC_OP_CSWAP, 8, 0}, 0, 0);
    packet(&b, proto::kAmRmaAtomic,
           rma::AtomicHeader{7, 0x1004, 1, 0, 0, 1, v, SWY_ATOMIC_OP_ADD, 4, 0}, 0, 0);
    packet(&b, proto::kAmRmaFlush, rma::FlushHeader{9, v, {}}, 0, 0);
    out.push_back(b);
    b.clear();
    packet(&b, proto::kAmRmaGetReply, rma::GetReplyHeader{5, 0, 0, 0}, 100, 0x69);
    packet(&b, proto::kAmRmaAtomicReply, rma::AtomicReplyHeader{6, 1, 0, 0}, 0, 0);
    packet(&b, proto::kAmRmaFlushAck, rma::FlushAckHeader{9, -1, 0}, 0, 0);
    out.push_back(b);
    // Active messages (fuzz_worker_am.cpp sets handlers 0x10 plain, 0x11 keeping, 0x12 for
    // rendezvous): eager with and without a user header, kept, for an unknown id, a header
    // longer than the packet; RTSs pulled, kept and dropped, with a fragment after them.
    using proto::am::AmEagerHeader;
    using proto::am::AmRtsHeader;
    using proto::am::kAmWireVersion;
    b.clear();
    packet(&b, proto::kAmUserEager, AmEagerHeader{kAmWireVersion, 0, 0x10, 4}, 4 + 10, 0x70);
    packet(&b, proto::kAmUserEager, AmEagerHeader{kAmWireVersion, 0, 0x10, 0}, 0, 0);
    packet(&b, proto::kAmUserEager, AmEagerHeader{kAmWireVersion, 0, 0x11, 8}, 8 + 100, 0x71);
    packet(&b, proto::kAmUserEager, AmEagerHeader{kAmWireVersion, 0, 0x99, 0}, 5, 0x72);
    packet(&b, proto::kAmUserEager, AmEagerHeader{kAmWireVersion, 0, 0x10, 40}, 20, 0x73);
    out.push_back(b);
    for (uint32_t scheme = 0; scheme < 3; ++scheme) {
        b.clear();
        for (uint32_t k = 0; k < 3; ++k) {
            AmRtsHeader rts{};
            rts.rts = proto::RtsHeader{0, 9 + k, 4000 + k, 0x1000, 0, scheme, 0, 0};
            rts.version = kAmWireVersion;
            rts.am_id = 0x12;
            rts.header_length = 4;
            packet(&b, proto::kAmUserRts, rts, 4, static_cast<uint8_t>(k));
        }
        packet(&b, proto::kAmRndvData, proto::RndvDataHeader{1, 0}, 500, 0x74);
        out.push_back(b);
    }
    return out;
}

/// The handshake as each reader sees it (fuzz_conn_wire.cpp): mode 0 a client, 1 an unkeyed
/// listener, 2 a keyed one.
std::vector<Bytes> conn_wire_seeds() {
    core::WorkerAddress a;
    a.worker_uid = 0x0123456789abcdef;
    a.sections.push_back({tl::shm::kAddressSection, shm_section()});
    const Bytes address = core::encode_address(a);
    const uint8_t nonce[core::kConnNonceSize] = {1, 2, 3};
    uint8_t proof[core::kConnProofSize] = {9, 8, 7};
    auto cat = [](std::vector<Bytes> parts) {
        Bytes out;
        for (const Bytes& p : parts)
            out.insert(out.end(), p.begin(), p.end());
        return out;
    };
    core::ConnChallenge c;
    const Bytes unkeyed = core::encode_challenge(c);
    c.keyed = true;
    const Bytes keyed = core::encode_challenge(c);
    const Bytes hello = core::encode_conn_frame(core::ConnFrameType::kHello, nonce, sizeof nonce);
    return {
        with_mode(0, cat({unkeyed, core::encode_conn_frame(core::ConnFrameType::kAccept,
                                                           address.data(), address.size())})),
        with_mode(0,
                  cat({keyed, core::encode_conn_frame(core::ConnFrameType::kReject, nullptr, 0)})),
        with_mode(1, cat({hello, core::encode_client_address(nullptr, address)})),
        with_mode(2, cat({hello, core::encode_client_address(proof, address)})),
    };
}

}  // namespace

std::vector<std::vector<uint8_t>> seeds(std::string_view target) {
    if (target == "address") return address_seeds();
    if (target == "tcp_stream") return tcp_stream_seeds();
    if (target == "worker_am") return worker_am_seeds();
    if (target == "conn_wire") return conn_wire_seeds();
    return {};
}

}  // namespace swy::fuzz
