// Text helpers shared by the swy-info sections: word wrapping and byte counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace swy::info {

/// Greedy word wrap of @p text into lines of at most @p width columns (a single word longer
/// than that gets a line of its own). Every line, the first included, starts with @p indent
/// spaces and ends with '\n'; an empty @p text gives an empty string.
std::string wrap_text(std::string_view text, size_t width, size_t indent);

/// A byte count for people: "8 KiB", "1.5 MiB", "4072 B". Exact multiples of a unit print
/// without decimals; other values >= 1 KiB with one decimal.
std::string format_bytes(uint64_t bytes);

/// "yes" or "no".
inline const char* yes_no(bool value) { return value ? "yes" : "no"; }

}  // namespace swy::info
