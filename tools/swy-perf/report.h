// Output of swy-perf: an aligned table printed row by row as sizes finish, or CSV.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "options.h"
#include "runner.h"

namespace swy::perf {

/// The protocol the endpoint uses for @p size, from swy_ep_print_protocols() text: the first
/// line of the form "<lo>..<hi> <protocol> ..." (hi may be "inf") whose range holds @p size.
/// "?" when no line does (or the table is empty).
std::string protocol_for(std::string_view table, size_t size);

class Reporter {
public:
    Reporter(const Options& opts, std::string protocol_table)
        : opts_(opts), table_(std::move(protocol_table)) {}

    /// Before the first row: the endpoint description (non-CSV) and the column header.
    void begin(const std::string& endpoint_description);

    /// One finished size; flushed at once so long runs show progress.
    void row(const Result& result);

private:
    const Options& opts_;
    std::string table_;
};

}  // namespace swy::perf
