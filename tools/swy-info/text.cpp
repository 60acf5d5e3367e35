#include "text.h"

#include <cstdio>
#include <iterator>

namespace swy::info {

std::string wrap_text(std::string_view text, size_t width, size_t indent) {
    std::string out;
    size_t line_len = 0;  // columns used on the current line, indent excluded
    size_t pos = 0;
    while (pos < text.size()) {
        size_t start = text.find_first_not_of(' ', pos);
        if (start == std::string_view::npos) break;
        size_t end = text.find(' ', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view word = text.substr(start, end - start);
        if (line_len > 0 && indent + line_len + 1 + word.size() > width) {
            out += '\n';
            line_len = 0;
        }
        if (line_len == 0) {
            out.append(indent, ' ');
        } else {
            out += ' ';
            ++line_len;
        }
        out += word;
        line_len += word.size();
        pos = end;
    }
    if (line_len > 0) out += '\n';
    return out;
}

std::string format_bytes(uint64_t bytes) {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t unit = 0;
    uint64_t scale = 1;
    while (unit + 1 < std::size(kUnits) && bytes >= scale * 1024) {
        scale *= 1024;
        ++unit;
    }
    char buf[48];
    if (bytes % scale == 0) {
        std::snprintf(buf, sizeof(buf), "%llu %s", static_cast<unsigned long long>(bytes / scale),
                      kUnits[unit]);
    } else {
        std::snprintf(buf, sizeof(buf), "%.1f %s",
                      static_cast<double>(bytes) / static_cast<double>(scale), kUnits[unit]);
    }
    return buf;
}

}  // namespace swy::info
