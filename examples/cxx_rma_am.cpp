// The user guide's C++ example (docs/user-guide.md, "C++: one-sided, active messages and iov
// views"), made whole: one worker with an endpoint to itself (the self transport stands for
// the peer, so one thread drives both sides). Maps memory, puts, flushes, gets it back, adds
// atomically, sends an active message and an iov message, and checks every result.
//
//   c++ -std=c++17 cxx_rma_am.cpp $(pkg-config --cflags --libs switchyard)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <switchyard/switchyard.hpp>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "cxx_rma_am: %s\n", what);
        ++failures;
    }
}

}  // namespace

int main() try {
    swy::Context ctx({{"TLS", "shm,self"}});
    swy::Worker worker(ctx);
    swy::Endpoint ep(worker, worker.address());  // the "peer" is this very worker

    // Owner: map memory and hand its packed key to the peer (any channel; here, itself).
    swy::MemoryRegion region = swy::MemoryRegion::allocate(ctx, 1 << 20);  // or register_memory
    std::vector<uint8_t> packed = region.pack();
    const uint64_t remote_address = region.remote_address();

    // Peer: unpack the key on its endpoint to the owner, then put/get/atomics.
    swy::RemoteKey key = ep.unpack(packed);  // destroy before closing ep
    std::vector<uint8_t> buf(4096), back(4096);
    for (size_t i = 0; i < buf.size(); ++i)
        buf[i] = static_cast<uint8_t>(i * 7 + 1);
    expect(ep.put(buf.data(), buf.size(), remote_address, key).wait() == SWY_OK, "put");
    expect(ep.flush().wait() == SWY_OK, "flush");  // done at the target
    expect(ep.get(back.data(), back.size(), remote_address, key).wait() == SWY_OK, "get");
    expect(back == buf, "get returned other bytes than put wrote");
    uint64_t old = 0;
    for (int i = 0; i < 3; ++i) {
        expect(ep.atomic<uint64_t>(SWY_ATOMIC_OP_ADD, 1, remote_address + 64, key, &old).wait() ==
                   SWY_OK,
               "atomic add");
    }
    uint64_t word = 0;
    std::memcpy(&word, buf.data() + 64, sizeof(word));
    expect(old == word + 2, "the third fetching add did not see the first two");

    // Active messages: the Worker keeps the std::function alive (as long as its C worker).
    std::string got_header, got_data;
    worker.set_am_handler(7, [&](const swy::AmMessage& m) {
        got_header.assign(static_cast<const char*>(m.header), m.header_length);
        if (!m.rendezvous()) got_data.assign(static_cast<const char*>(m.data), m.data_length);
        return SWY_OK;
    });
    const char hdr[] = "hdr";
    const char data[] = "active message data";
    expect(ep.am_send(7, hdr, sizeof(hdr), data, sizeof(data)).wait() == SWY_OK, "am_send");
    while (got_header.empty())
        worker.progress();
    expect(got_header == std::string(hdr, sizeof(hdr)), "active message header");
    expect(got_data == std::string(data, sizeof(data)), "active message data");

    // iov: one message from (or into) several pieces.
    char a[] = "first piece, ", b[] = "second piece";
    char in_a[sizeof(a)] = {}, in_b[sizeof(b)] = {};
    swy::IovView iov{{a, sizeof(a)}, {b, sizeof(b)}};
    swy::IovView into{{in_a, sizeof(in_a)}, {in_b, sizeof(in_b)}};
    const swy_tag_t tag = 0x1234;
    swy::Request recv = worker.recv(into, tag);
    expect(ep.send(iov, tag).wait() == SWY_OK, "iov send");
    expect(recv.wait() == SWY_OK, "iov receive");
    expect(std::memcmp(a, in_a, sizeof(a)) == 0 && std::memcmp(b, in_b, sizeof(b)) == 0,
           "iov message arrived different");

    key.destroy();
    expect(ep.close() == SWY_OK, "close");
    std::printf("cxx_rma_am: put/get %zu B, 3 atomic adds, active message, iov message: %s\n",
                buf.size(), failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
} catch (const swy::StatusError& e) {
    std::fprintf(stderr, "cxx_rma_am: %s\n", e.what());
    return 1;
}
