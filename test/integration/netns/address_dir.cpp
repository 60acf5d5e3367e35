#include "address_dir.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace swy::netns {
namespace {

std::string address_path(const std::string& dir, int rank) {
    return dir + "/" + std::to_string(rank) + ".addr";
}

bool read_file(const std::string& path, std::vector<uint8_t>* out) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return false;
    std::vector<uint8_t> data;
    uint8_t buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
        data.insert(data.end(), buf, buf + n);
    const bool ok = std::ferror(f) == 0;
    std::fclose(f);
    if (!ok || data.empty()) return false;
    *out = std::move(data);
    return true;
}

}  // namespace

bool publish_address(const std::string& dir, int rank, const void* blob, size_t length) {
    const std::string final_path = address_path(dir, rank);
    // The pid keeps a restarted rank from writing into a temporary file a dead one left.
    const std::string tmp = final_path + ".tmp." + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) {
        std::fprintf(stderr, "rank %d: cannot create %s: %s\n", rank, tmp.c_str(),
                     std::strerror(errno));
        return false;
    }
    bool ok = std::fwrite(blob, 1, length, f) == length;
    ok = (std::fflush(f) == 0) && ok;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), final_path.c_str()) != 0) {
        std::fprintf(stderr, "rank %d: cannot publish %s: %s\n", rank, final_path.c_str(),
                     std::strerror(errno));
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

bool collect_addresses(const std::string& dir, int size, unsigned timeout_s,
                       std::vector<std::vector<uint8_t>>* addresses) {
    addresses->assign(static_cast<size_t>(size), {});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    for (;;) {
        int missing = 0;
        for (int r = 0; r < size; ++r) {
            auto& a = (*addresses)[static_cast<size_t>(r)];
            if (a.empty() && !read_file(address_path(dir, r), &a)) ++missing;
        }
        if (missing == 0) return true;
        if (std::chrono::steady_clock::now() > deadline) {
            std::string list;
            for (int r = 0; r < size; ++r) {
                if ((*addresses)[static_cast<size_t>(r)].empty())
                    list.append(" ").append(std::to_string(r));
            }
            std::fprintf(stderr,
                         "timed out after %u s waiting for the addresses of ranks%s in %s\n",
                         timeout_s, list.c_str(), dir.c_str());
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace swy::netns
