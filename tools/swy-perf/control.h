// What the one-sided and active-message tests share: waiting on requests with progress, small
// blocking tag messages on the benchmark's endpoint (remote keys, per-window handshakes), and
// the memory those tests expose (swy_mem_map). Public C API only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <switchyard/switchyard.h>

#include "bootstrap.h"
#include "options.h"
#include "runner.h"
#include "session.h"

namespace swy::perf {

/// Tags of the control messages (exact match). Disjoint from runner.cpp's and the bootstrap's.
constexpr swy_tag_t kCtlTagBase = 0x5357595045524300ull;  // "SWYPERC\0"
constexpr swy_tag_t kCtlTagKey = kCtlTagBase | 0x01;      ///< address, length, packed rkey
constexpr swy_tag_t kCtlTagRequest = kCtlTagBase | 0x02;  ///< client -> server: CtlMessage
constexpr swy_tag_t kCtlTagReply = kCtlTagBase | 0x03;    ///< server -> client: one status byte

/// A client's request to the server during a one-sided or AM test.
struct CtlMessage {
    enum Kind : uint32_t {
        kFill = 1,    ///< get --check: write the pattern of messages [first, first+count)
        kVerify = 2,  ///< put --check: check the pattern of messages [first, first+count)
        kDone = 3     ///< end of a phase; count: operations so far (atomics: final counter)
    };
    uint32_t kind = 0;
    uint32_t reserved = 0;
    uint64_t first = 0;
    uint64_t count = 0;
};
static_assert(sizeof(CtlMessage) == 24);

/// Waiting and control messages on the session's endpoint.
class Control {
public:
    Control(Session& session, Bootstrap& boot) : session_(session), boot_(boot) {}

    /// Settle the return of a non-blocking call: SWY_OK is done, SWY_INPROGRESS is waited for
    /// (progressing) and freed, an error is printed with @p what. Returns true on success.
    bool complete(swy_status_t status, swy_request_h req, const char* what);

    /// Progress until @p req completes; frees it. False (message printed) if the peer died.
    bool wait(swy_request_h req, swy_status_t* status);

    /// Blocking tag send / receive of a small control message.
    bool send(const void* data, size_t length, swy_tag_t tag);
    bool recv(void* data, size_t capacity, swy_tag_t tag, size_t* length);

    /// Client: send @p msg and wait for the server's status byte (false if it reports failure).
    bool request(const CtlMessage& msg);
    /// Server: the next request (blocking).
    bool next_request(CtlMessage* msg);
    /// Server: answer the current request.
    bool reply(bool ok);

    /// One swy_worker_progress(); every 64 Ki calls also checks that the peer is alive.
    bool progress();
    bool peer_gone();

    Session& session() { return session_; }
    Bootstrap& boot() { return boot_; }

private:
    Session& session_;
    Bootstrap& boot_;
    unsigned spins_ = 0;
};

/// Memory a one-sided test exposes or reads from: allocated by swy_mem_map
/// (SWY_MEM_MAP_ALLOCATE) or, with --register, user memory mapped in place. Zeroed and faulted
/// in before timing.
class MappedBuffer {
public:
    MappedBuffer() = default;
    MappedBuffer(const MappedBuffer&) = delete;
    MappedBuffer& operator=(const MappedBuffer&) = delete;
    ~MappedBuffer() { release(); }

    /// Map @p bytes (rounded up to a page). Returns false with a message printed.
    bool map(swy_context_h context, size_t bytes, bool register_in_place);
    void release();

    unsigned char* get() const { return ptr_; }
    size_t length() const { return length_; }
    swy_mem_h memh() const { return memh_; }

private:
    swy_context_h context_ = nullptr;
    swy_mem_h memh_ = nullptr;
    unsigned char* ptr_ = nullptr;
    void* owned_ = nullptr;  ///< --register: the aligned_alloc() block
    size_t length_ = 0;
};

/// The peer's exposed memory as this process names it.
struct RemoteRegion {
    uint64_t address = 0;
    uint64_t length = 0;
    swy_rkey_h rkey = nullptr;
};

/// Pack the key of @p mine, send it with its address and length to the peer, receive the
/// peer's and unpack it on the endpoint (self mode: our own key, on the endpoint to
/// ourselves). Returns false with a message printed.
bool exchange_keys(Control& ctl, const MappedBuffer& mine, RemoteRegion* peer);

/// The Result of a finished size: @p ops operations (or round trips) in @p elapsed_us, and
/// the median time of one (0 for streaming tests).
void fill_result(const Options& opts, size_t size, size_t ops, double elapsed_us,
                 double median_op_us, Result* out);

/// steady_clock in microseconds.
double now_us();

/// A cheap timestamp for per-operation samples: the TSC on x86-64 (about 13 ns here, against
/// 40-160 ns for a kvm-clock read, which would dwarf a 20 ns atomic), steady_clock nanoseconds
/// elsewhere. Convert with a PhaseClock.
uint64_t ticks();

/// Times a phase on both clocks, so that tick differences convert to microseconds.
struct PhaseClock {
    double start_us = 0, end_us = 0;
    uint64_t start_ticks = 0, end_ticks = 0;
    void start() {
        start_us = now_us();
        start_ticks = ticks();
    }
    void stop() {
        end_ticks = ticks();
        end_us = now_us();
    }
    double elapsed_us() const { return end_us - start_us; }
    double us_per_tick() const {
        return end_ticks > start_ticks ? elapsed_us() / static_cast<double>(end_ticks - start_ticks)
                                       : 0;
    }
};

/// Median of @p samples (reorders them); 0 if empty.
double median_of(std::vector<double>& samples);

}  // namespace swy::perf
