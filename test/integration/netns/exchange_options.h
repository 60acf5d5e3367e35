// Command line of swy_exchange: which rank this process is, who its peers are, what to send.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace swy::netns {

enum class Pattern { kRing, kAllToAll };

struct ExchangeOptions {
    int rank = -1;
    int size = 0;     // number of ranks
    std::string dir;  // shared directory for <rank>.addr files
    Pattern pattern = Pattern::kAllToAll;
    std::vector<size_t> sizes{0, 1, 4096, 65536, 1u << 20};
    unsigned iters = 10;
    bool tolerate_failures = false;  // carry on with the live ranks when a peer fails
    unsigned timeout_s = 30;         // longest wait for addresses, or for one round
    unsigned progress_every = 1;     // print a line every this many iterations
    unsigned window = 0;             // all-to-all peers in flight at once (0: all)
    std::string wait_for;            // start the rounds only once this file exists
};

/// Parses argv; prints usage and exits with status 2 on a bad command line.
ExchangeOptions parse_exchange_options(int argc, char** argv);

const char* pattern_name(Pattern p);

}  // namespace swy::netns
