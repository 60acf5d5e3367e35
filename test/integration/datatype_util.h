// Helpers for the datatype integration tests: one message's data laid out contiguously, as an
// iov with many (and zero-length) entries, or as a generic datatype of strided 7-byte elements
// (so fragment boundaries fall inside elements at odd offsets), with guard bytes in every gap,
// and counters that prove a generic type's finish runs once per started operation.
// Header-only because test/CMakeLists.txt globs only *_test.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest::dt {

enum class Layout { kContig, kIov, kGeneric };

inline const char* layout_name(Layout l) {
    return l == Layout::kContig ? "contig" : l == Layout::kIov ? "iov" : "generic";
}

/// Per-process counts of a generic type's callbacks (the generic type's context).
struct Counters {
    uint64_t starts = 0;
    uint64_t finishes = 0;
};

/// What a generic datatype's buffer argument points to: packed bytes [0, length) laid out as
/// elements of `elem` bytes, each followed by `gap` guard bytes (the last may be short).
struct Strided {
    uint8_t* base = nullptr;
    size_t length = 0;
    size_t elem = 7;
    size_t gap = 5;
    Counters* counters = nullptr;
    swy_status_t unpack_status = SWY_OK;  ///< what unpack returns (failure injection)
    bool started = false;
    size_t span() const { return (length + elem - 1) / elem * (elem + gap); }
    /// Copy packed bytes [offset, offset + n) to or from @p bytes.
    void copy(size_t offset, uint8_t* bytes, size_t n, bool to_layout) {
        size_t done = 0;
        while (done < n) {
            const size_t i = (offset + done) / elem;
            const size_t within = (offset + done) % elem;
            const size_t take = std::min(elem - within, n - done);
            uint8_t* p = base + i * (elem + gap) + within;
            if (to_layout) {
                std::memcpy(p, bytes + done, take);
            } else {
                std::memcpy(bytes + done, p, take);
            }
            done += take;
        }
    }
};

inline void* strided_start(void* context, const void* buffer, size_t count) {
    auto* s = static_cast<Strided*>(const_cast<void*>(buffer));
    ICHECK_MSG(count == s->length, "generic start got count %zu for a %zu-byte layout", count,
               s->length);
    ICHECK_MSG(!s->started, "generic start called twice for one operation");
    s->started = true;
    ++static_cast<Counters*>(context)->starts;
    return s;
}
inline void* strided_start_unpack(void* context, void* buffer, size_t count) {
    return strided_start(context, buffer, count);
}
inline size_t strided_packed_size(void* state) { return static_cast<Strided*>(state)->length; }
inline size_t strided_pack(void* state, size_t offset, void* dest, size_t max) {
    auto* s = static_cast<Strided*>(state);
    ICHECK_MSG(offset <= s->length, "pack at offset %zu of a %zu-byte type", offset, s->length);
    const size_t n = std::min(max, s->length - offset);
    s->copy(offset, static_cast<uint8_t*>(dest), n, false);
    return n;
}
inline swy_status_t strided_unpack(void* state, size_t offset, const void* src, size_t length) {
    auto* s = static_cast<Strided*>(state);
    // Truncation: nothing past the receive's packed length may ever be unpacked.
    ICHECK_MSG(offset + length <= s->length, "unpack of [%zu, %zu) into a %zu-byte type", offset,
               offset + length, s->length);
    s->copy(offset, static_cast<uint8_t*>(const_cast<void*>(src)), length, true);
    return s->unpack_status;
}
inline void strided_finish(void* state) {
    auto* s = static_cast<Strided*>(state);
    ICHECK_MSG(s->started, "generic finish without a start (or twice)");
    s->started = false;
    ++s->counters->finishes;
}

/// The process's generic datatype over Strided layouts, counting into @p counters.
inline swy_datatype_t make_strided_type(Counters* counters) {
    swy_dt_generic_ops_t ops{strided_start, strided_start_unpack, strided_packed_size,
                             strided_pack,  strided_unpack,       strided_finish};
    swy_datatype_t t = 0;
    ICHECK_OK(swy_dt_create_generic(&ops, counters, &t));
    return t;
}

/// One message's data in one layout, with guard bytes around everything it owns.
class Data {
public:
    /// @p generic: the process's strided type; @p counters: its counters.
    /// @p iov_entries: about how many entries an iov layout of large data gets.
    Data(Layout layout, size_t length, swy_datatype_t generic, Counters* counters,
         size_t iov_entries = 1200)
        : layout_(layout), length_(length), generic_(generic), iov_entries_(iov_entries) {
        switch (layout) {
            case Layout::kContig: backing_.assign(length + kGuardBytes, kGuardByte); break;
            case Layout::kIov: build_iov(); break;
            case Layout::kGeneric:
                strided_.length = length;
                strided_.counters = counters;
                backing_.assign(strided_.span() + kGuardBytes, kGuardByte);
                strided_.base = backing_.data();
                break;
        }
    }
    Data(const Data&) = delete;
    Data& operator=(const Data&) = delete;

    Layout layout() const { return layout_; }
    size_t length() const { return length_; }
    size_t iov_entries() const { return iov_.size(); }
    Strided& strided() { return strided_; }

    /// (buffer, count) to pass with datatype().
    void* buffer() {
        switch (layout_) {
            case Layout::kContig: return length_ != 0 ? backing_.data() : nullptr;
            case Layout::kIov: return iov_.data();
            case Layout::kGeneric: return &strided_;
        }
        return nullptr;
    }
    size_t count() const { return layout_ == Layout::kIov ? iov_.size() : length_; }
    swy_datatype_t datatype() const {
        if (layout_ == Layout::kContig) return SWY_DATATYPE_CONTIG;
        return layout_ == Layout::kIov ? swy_datatype_t{SWY_DATATYPE_IOV} : generic_;
    }
    /// Request params naming the datatype (contig: the field is set too, with CONTIG).
    swy_request_params_t params() const {
        swy_request_params_t p{};
        p.field_mask = SWY_REQ_PARAM_FIELD_DATATYPE;
        p.datatype = datatype();
        return p;
    }

    /// Write the logical bytes pattern(seed).
    void fill(uint64_t seed) {
        std::vector<uint8_t> bytes(length_);
        fill_pattern(bytes.data(), length_, seed);
        scatter(bytes);
    }
    /// The logical bytes [0, length).
    std::vector<uint8_t> gather() {
        std::vector<uint8_t> bytes(length_);
        switch (layout_) {
            case Layout::kContig:
                if (length_ != 0) std::memcpy(bytes.data(), backing_.data(), length_);
                break;
            case Layout::kIov: {
                size_t at = 0;
                for (const swy_dt_iov_t& e : iov_) {
                    if (e.length != 0) std::memcpy(bytes.data() + at, e.buffer, e.length);
                    at += e.length;
                }
                break;
            }
            case Layout::kGeneric: strided_.copy(0, bytes.data(), length_, false); break;
        }
        return bytes;
    }
    /// Every byte the layout does not own (gaps between entries or elements, the tail) still
    /// holds the guard byte.
    bool guards_intact() {
        std::vector<uint8_t> owned(backing_.size(), 0);
        switch (layout_) {
            case Layout::kContig: std::fill_n(owned.begin(), length_, 1); break;
            case Layout::kIov:
                for (const swy_dt_iov_t& e : iov_) {
                    if (e.length == 0) continue;
                    const size_t at = static_cast<uint8_t*>(e.buffer) - backing_.data();
                    std::fill_n(owned.begin() + static_cast<long>(at), e.length, 1);
                }
                break;
            case Layout::kGeneric:
                for (size_t o = 0; o < length_; ++o) {
                    owned[o / strided_.elem * (strided_.elem + strided_.gap) + o % strided_.elem] =
                        1;
                }
                break;
        }
        for (size_t i = 0; i < backing_.size(); ++i) {
            if (!owned[i] && backing_[i] != kGuardByte) return false;
        }
        return true;
    }

private:
    void scatter(const std::vector<uint8_t>& bytes) {
        switch (layout_) {
            case Layout::kContig:
                if (length_ != 0) std::memcpy(backing_.data(), bytes.data(), length_);
                break;
            case Layout::kIov: {
                size_t at = 0;
                for (const swy_dt_iov_t& e : iov_) {
                    if (e.length != 0) std::memcpy(e.buffer, bytes.data() + at, e.length);
                    at += e.length;
                }
                break;
            }
            case Layout::kGeneric:
                strided_.copy(0, const_cast<uint8_t*>(bytes.data()), length_, true);
                break;
        }
    }
    /// Entries of varied sizes (every fifth empty, one empty at each end), about
    /// iov_entries_ of them for large data, each followed by 3 guard bytes in the backing
    /// buffer.
    void build_iov() {
        const size_t base = std::max<size_t>(1, length_ / iov_entries_);
        std::vector<size_t> sizes{0};
        size_t total = 0;
        for (size_t k = 1; total < length_; ++k) {
            size_t n = k % 5 == 0 ? 0 : base + (k * 7) % 13;
            n = std::min(n, length_ - total);
            sizes.push_back(n);
            total += n;
        }
        sizes.push_back(0);
        size_t span = 0;
        for (size_t n : sizes)
            span += n + 3;
        backing_.assign(span + kGuardBytes, kGuardByte);
        size_t at = 0;
        for (size_t n : sizes) {
            // Empty entries alternate between a NULL and a real pointer (both allowed).
            void* p = n == 0 && (iov_.size() % 2 == 0) ? nullptr : backing_.data() + at;
            iov_.push_back({p, n});
            at += n + 3;
        }
    }

    Layout layout_;
    size_t length_;
    swy_datatype_t generic_;
    size_t iov_entries_;
    std::vector<uint8_t> backing_;
    std::vector<swy_dt_iov_t> iov_;
    Strided strided_;
};

/// One row of swy_ep_print_datatype_protocols().
struct DtRow {
    size_t lo, hi;
    std::string proto;
    std::string reason;
};

/// The endpoint's non-contiguous protocol table, checked to cover 0..inf without gaps.
inline std::vector<DtRow> datatype_table(swy_ep_h ep, std::string* text = nullptr) {
    std::vector<char> buf(16384);
    ICHECK_OK(swy_ep_print_datatype_protocols(ep, buf.data(), buf.size()));
    std::vector<DtRow> rows;
    const char* p = buf.data();
    while (*p != '\0') {
        const char* eol = strchr(p, '\n');
        std::string line(p, eol != nullptr ? (size_t)(eol - p) : strlen(p));
        unsigned long long lo = 0;
        char hi[32] = {0}, proto[64] = {0};
        int used = 0;
        ICHECK_MSG(sscanf(line.c_str(), "%llu..%31s %63s %n", &lo, hi, proto, &used) >= 3,
                   "cannot parse datatype table line '%s'", line.c_str());
        rows.push_back({(size_t)lo,
                        strcmp(hi, "inf") == 0 ? SIZE_MAX : (size_t)strtoull(hi, nullptr, 10),
                        proto, line.substr((size_t)used)});
        if (eol == nullptr) break;
        p = eol + 1;
    }
    ICHECK_MSG(!rows.empty() && rows.front().lo == 0 && rows.back().hi == SIZE_MAX,
               "datatype table does not cover 0..inf:\n%s", buf.data());
    for (size_t i = 1; i < rows.size(); ++i)
        ICHECK_MSG(rows[i].lo == rows[i - 1].hi + 1, "datatype table has a gap:\n%s", buf.data());
    if (text != nullptr) *text = buf.data();
    return rows;
}

/// Thresholds read from the datatype table: the largest single packet and the first size
/// sent by rendezvous (SIZE_MAX when nothing is).
struct Thresholds {
    size_t single_packet_max = 0;
    size_t rndv_min = SIZE_MAX;
};

inline Thresholds thresholds_of(const std::vector<DtRow>& rows, const std::string& text) {
    Thresholds t;
    ICHECK_MSG(
        rows[0].reason.find("one packet") != std::string::npos || rows[0].proto == "rndv_pipeline",
        "first datatype range is neither a single packet nor the pipeline:\n%s", text.c_str());
    for (const DtRow& r : rows) {
        if (r.reason.find("one packet") != std::string::npos) t.single_packet_max = r.hi;
        if (r.proto.rfind("rndv_", 0) == 0 && t.rndv_min == SIZE_MAX) t.rndv_min = r.lo;
    }
    return t;
}

/// Sizes that matter for non-contiguous data: 0, 1, 8, one packet -1/0/+1, rendezvous
/// threshold -1/0/+1, and @p large.
inline std::vector<size_t> datatype_sizes(const Thresholds& t, size_t large) {
    std::set<size_t> s{0, 1, 8, large};
    for (size_t v : {t.single_packet_max, t.rndv_min}) {
        if (v == 0 || v == SIZE_MAX || v > (64u << 20)) continue;
        s.insert(v - 1);
        s.insert(v);
        s.insert(v + 1);
    }
    return {s.begin(), s.end()};
}

/// Post a send of @p d (its datatype in the params).
inline Send post_send_data(swy_ep_h ep, Data& d, swy_tag_t tag) {
    swy_request_params_t p = d.params();
    Send s;
    s.status = swy_tag_send_nb(ep, d.buffer(), d.count(), tag, &p, &s.req);
    ICHECK_MSG(s.status == SWY_OK || s.status == SWY_INPROGRESS,
               "swy_tag_send_nb(%s, %zu bytes) returned %d (%s)", layout_name(d.layout()),
               d.length(), (int)s.status, swy_status_string(s.status));
    s.done = s.status != SWY_INPROGRESS;
    return s;
}

/// Post a receive into @p d.
inline Recv post_recv_data(swy_worker_h worker, Data& d, swy_tag_t tag) {
    swy_request_params_t p = d.params();
    swy_tag_recv_info_t info{};
    p.field_mask |= SWY_REQ_PARAM_FIELD_RECV_INFO;
    p.recv_info = &info;
    Recv r;
    swy_status_t st =
        swy_tag_recv_nb(worker, d.buffer(), d.count(), tag, ~(swy_tag_t)0, &p, &r.req);
    adopt_recv_result(r, st, &info, "swy_tag_recv_nb (datatype)");
    return r;
}

}  // namespace swy_itest::dt
