// Address exchange through a directory that every rank can read (a stand-in for PMIx when the
// "hosts" are network namespaces of one machine: they still share the file system).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swy::netns {

/// Writes @p blob to DIR/<rank>.addr atomically (a temporary file, then rename), so a reader
/// never sees half an address. Returns false and prints why on failure.
bool publish_address(const std::string& dir, int rank, const void* blob, size_t length);

/// Polls DIR until every rank's address is there or @p timeout_s passes. Fills
/// @p addresses[r] for every rank r (its own included). Returns false and prints which ranks
/// are missing on timeout.
bool collect_addresses(const std::string& dir, int size, unsigned timeout_s,
                       std::vector<std::vector<uint8_t>>* addresses);

}  // namespace swy::netns
