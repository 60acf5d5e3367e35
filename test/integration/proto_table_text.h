// The protocol table an endpoint prints (swy_ep_print_protocols), parsed for tests that check
// which protocol carries which sizes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"

namespace swy_itest {

/// One line of a protocol table: sizes lo..hi (SIZE_MAX for "inf") go by proto. The one
/// definition for every test (two structs of this name in one namespace broke the binary).
struct ProtoRow {
    size_t lo;
    size_t hi;
    std::string proto;
    std::string line;  // the whole printed line, reason included
};

/// swy_ep_print_protocols(ep, memtype) parsed: "<lo>..<hi> <protocol>  <reason>" per line; the
/// table must cover 0..inf without gaps. @p text, when given, receives the printed table.
inline std::vector<ProtoRow> proto_table(swy_ep_h ep, swy_memtype_t memtype,
                                         std::string* text = nullptr) {
    std::vector<char> buf(32768);
    ICHECK_OK(swy_ep_print_protocols(ep, memtype, buf.data(), buf.size()));
    std::vector<ProtoRow> rows;
    for (const char* p = buf.data(); *p != '\0';) {
        unsigned long long lo = 0;
        char hi[32] = {0}, proto[64] = {0};
        ICHECK_MSG(sscanf(p, "%llu..%31s %63s", &lo, hi, proto) == 3,
                   "cannot parse the table of memory type %d at:\n%s", (int)memtype, p);
        const char* eol = strchr(p, '\n');
        rows.push_back({lo, strcmp(hi, "inf") == 0 ? SIZE_MAX : strtoull(hi, nullptr, 10), proto,
                        std::string(p, eol != nullptr ? eol : p + strlen(p))});
        if (eol == nullptr) break;
        p = eol + 1;
    }
    ICHECK_MSG(!rows.empty() && rows.front().lo == 0 && rows.back().hi == SIZE_MAX,
               "the table of memory type %d does not cover 0..inf:\n%s", (int)memtype, buf.data());
    for (size_t i = 1; i < rows.size(); ++i)
        ICHECK_MSG(rows[i].lo == rows[i - 1].hi + 1, "the table of memory type %d has a gap:\n%s",
                   (int)memtype, buf.data());
    if (text != nullptr) *text = buf.data();
    return rows;
}

/// The host-memory table; @p text receives it as printed.
inline std::vector<ProtoRow> host_table(swy_ep_h ep, std::string* text) {
    return proto_table(ep, SWY_MEMTYPE_HOST, text);
}

/// The protocol that carries @p size.
inline const std::string& proto_for(const std::vector<ProtoRow>& rows, size_t size) {
    for (const ProtoRow& r : rows)
        if (size <= r.hi) return r.proto;
    return rows.back().proto;
}

/// Whether @p proto is one of the rendezvous protocols.
inline bool is_rndv_proto(const std::string& proto) { return proto.rfind("rndv_", 0) == 0; }

}  // namespace swy_itest
