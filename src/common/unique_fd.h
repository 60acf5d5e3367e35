// An owned file descriptor: closed when its owner goes, so no error path can leak one and no
// descriptor is closed twice. Move-only, one int wide, no virtual calls: free to embed in hot
// structures (the descriptor itself is read with get()).
#pragma once

#include <unistd.h>

#include <utility>

namespace swy::common {

class UniqueFd {
public:
    UniqueFd() = default;
    /// Takes ownership of @p fd (-1: owns nothing).
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    /// The descriptor (-1 when none); still owned by this object.
    int get() const { return fd_; }
    /// Whether a descriptor is owned.
    bool valid() const { return fd_ >= 0; }
    explicit operator bool() const { return valid(); }

    /// Gives the descriptor up without closing it; the caller owns it from now on.
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
    /// Closes the descriptor owned so far (if any) and takes ownership of @p fd. The close's
    /// result is ignored: on Linux the descriptor is gone even when close() reports an error,
    /// and retrying could close a descriptor another thread just opened.
    void reset(int fd = -1) noexcept {
        const int old = std::exchange(fd_, fd);
        if (old >= 0) ::close(old);
    }

private:
    int fd_ = -1;
};

}  // namespace swy::common
