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

/// One line of the host-memory table: sizes lo..hi (SIZE_MAX for "inf") go by proto.
struct ProtoRow {
    size_t lo;
    size_t hi;
    std::string proto;
    std::string line;  // the whole printed line, reason included
};

/// swy_ep_print_protocols() for host memory parsed: "<lo>..<hi> <protocol>  <reason>" per
/// line; @p text receives the printed table. The last row must reach "inf".
inline std::vector<ProtoRow> host_table(swy_ep_h ep, std::string* text) {
    std::vector<char> buf(32768);
    ICHECK_OK(swy_ep_print_protocols(ep, SWY_MEMTYPE_HOST, buf.data(), buf.size()));
    *text = buf.data();
    std::vector<ProtoRow> rows;
    for (const char* p = buf.data(); *p != '\0';) {
        unsigned long long lo = 0;
        char hi[32] = {0}, proto[64] = {0};
        ICHECK_MSG(sscanf(p, "%llu..%31s %63s", &lo, hi, proto) == 3, "cannot parse:\n%s", p);
        const char* eol = strchr(p, '\n');
        rows.push_back({lo, strcmp(hi, "inf") == 0 ? SIZE_MAX : strtoull(hi, nullptr, 10), proto,
                        std::string(p, eol != nullptr ? eol : p + strlen(p))});
        if (eol == nullptr) break;
        p = eol + 1;
    }
    ICHECK_MSG(!rows.empty() && rows.back().hi == SIZE_MAX, "table does not reach inf:\n%s",
               text->c_str());
    return rows;
}

}  // namespace swy_itest
