#include "common/cost_figures.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

#include "common/log.h"
#include "common/unique_fd.h"

namespace swy::common {
namespace {

// The figures every transport may read: a plain memory copy (the unexpected-message copy,
// bounce buffers). Transports declare their own in their folders.
constexpr CostFigureVar kCommonFigures[] = {
    {"memcpy_bw_Bps", 10e9, kFigureBwMin, kFigureBwMax, FigureUnit::kGBps,
     "single-thread memcpy, large out-of-cache buffers"},
};

constexpr size_t kNotDeclared = static_cast<size_t>(-1);

/// Index of @p name in cost_figure_table(), or kNotDeclared.
size_t find_index(std::string_view name) {
    const std::span<const CostFigureVar> table = cost_figure_table();
    for (size_t i = 0; i < table.size(); ++i) {
        if (table[i].name == name) return i;
    }
    return kNotDeclared;
}

/// Index of the declared figure @p name; an undeclared one is a library bug (a misspelt key
/// in a cost function), which must not read as 0 or as some other figure.
size_t declared_index(std::string_view name) {
    const size_t i = find_index(name);
    if (i != kNotDeclared) return i;
    log_printf(LogLevel::kError, "cost figure '%.*s' is not declared",
               static_cast<int>(name.size()), name.data());
    std::abort();
}

/// False for NaN too: every comparison with it fails.
bool in_range(const CostFigureVar& figure, double v) { return v >= figure.min && v <= figure.max; }

/// strerror() as a std::string, for reason strings.
std::string errno_text(int e) { return std::strerror(e); }

/// What kind of non-regular file @p mode is, for the refusal message.
const char* kind_of(mode_t mode) {
    if (S_ISLNK(mode)) return "a symbolic link (not followed)";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/// Why an opened calibration file must not be trusted, or "" if it may be read.
std::string distrust(const std::string& path, const struct stat& st) {
    if (!S_ISREG(st.st_mode)) return path + ": is " + kind_of(st.st_mode) + ", not a regular file";
    const uid_t me = ::geteuid();
    if (st.st_uid != me && st.st_uid != 0) {
        return path + ": owned by uid " + std::to_string(st.st_uid) + ", neither this user (uid " +
               std::to_string(me) + ") nor root";
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return path + ": writable by group or others (mode " + mode + "; chmod go-w to use it)";
    }
    if (st.st_size > static_cast<off_t>(CostFigures::kMaxFileBytes)) {
        return path + ": " + std::to_string(st.st_size) + " bytes, over the limit of " +
               std::to_string(CostFigures::kMaxFileBytes);
    }
    return "";
}

/// Read at most kMaxFileBytes of @p path into @p text, refusing what distrust() names. The
/// lstat() first keeps us from even opening a FIFO or device (opening one can have side
/// effects); the fstat() of the open descriptor is what the decision rests on, so a file
/// swapped in between is caught.
Status read_bounded(const std::string& path, std::string* text, std::string* why) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
        const int e = errno;
        *why = path + ": " + errno_text(e);
        return e == ENOENT ? Status::kNotFound : Status::kIoError;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = distrust(path, st);
        return Status::kInvalidParam;
    }
    common::UniqueFd fd(
        ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (!fd) {
        const int e = errno;
        *why = path + ": " + (e == ELOOP ? "is a symbolic link (not followed)" : errno_text(e));
        return e == ENOENT  ? Status::kNotFound
               : e == ELOOP ? Status::kInvalidParam
                            : Status::kIoError;
    }
    if (::fstat(fd.get(), &st) != 0) {
        *why = path + ": " + errno_text(errno);
        return Status::kIoError;
    }
    *why = distrust(path, st);
    if (!why->empty()) return Status::kInvalidParam;
    // One byte more than the limit tells a file that grew since fstat() from one that fits.
    text->assign(CostFigures::kMaxFileBytes + 1, '\0');
    size_t got = 0;
    while (got < text->size()) {
        const ssize_t n = ::read(fd.get(), text->data() + got, text->size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            *why = path + ": " + errno_text(errno);
            return Status::kIoError;
        }
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    if (got > CostFigures::kMaxFileBytes) {
        *why = path + ": larger than the limit of " + std::to_string(CostFigures::kMaxFileBytes) +
               " bytes";
        return Status::kInvalidParam;
    }
    text->resize(got);
    return Status::kOk;
}

/// @p s without leading and trailing blanks (a CR too: a file edited on Windows still parses).
std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

/// Parse @p text (the contents of @p path) over the defaults already in @p f.
Status parse(const std::string& path, const std::string& text, CostFigures* f, std::string* why) {
    if (text.find('\0') != std::string::npos) {
        *why = path + ": contains a NUL byte (not a text file)";
        return Status::kMalformed;
    }
    size_t start = 0;
    for (int number = 1; start < text.size(); ++number) {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) nl = text.size();
        std::string line = text.substr(start, nl - start);
        start = nl + 1;
        const std::string where = path + ":" + std::to_string(number) + ": ";
        const size_t hash = line.find('#');
        if (hash != std::string::npos) line.resize(hash);
        if (trim(line).empty()) continue;
        const size_t eq = line.find('=');
        const std::string key = eq == std::string::npos ? "" : trim(line.substr(0, eq));
        if (key.empty() || key.find_first_of(" \t") != std::string::npos) {
            *why = where + "expected key = value";
            return Status::kMalformed;
        }
        const CostFigureVar* figure = find_cost_figure(key);
        if (figure == nullptr) {  // a newer version's figure: skip it, value unparsed
            log_printf(LogLevel::kWarn, "%sunknown key '%s' ignored", where.c_str(), key.c_str());
            continue;
        }
        // from_chars, not strtod: the application's locale must not change what we read.
        const std::string value = trim(line.substr(eq + 1));
        double v = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
            *why = where + "'" + key + "' needs a number";
            return Status::kMalformed;
        }
        if (!in_range(*figure, v)) {
            log_printf(LogLevel::kWarn, "%s'%s' = %s is outside [%g, %g]; the built-in %g is used",
                       where.c_str(), key.c_str(), value.c_str(), figure->min, figure->max,
                       f->get(key));
            continue;
        }
        f->set(key, v);
    }
    return Status::kOk;
}

/// The file's contents: a header, then one `key = value` line per figure; a value outside
/// its range is written commented out, so the file stays loadable and shows what was measured.
std::string render(const CostFigures& f) {
    std::string text = "# Switchyard cost figures, measured by swy-info --calibrate\n";
    for (const CostFigureVar& figure : cost_figure_table()) {
        const double v = f.get(figure.name);
        char number[64];
        // to_chars, not printf: the application's locale must not change what we write.
        const auto r =
            std::to_chars(number, number + sizeof(number), v, std::chars_format::general, 6);
        const std::string value(number, r.ptr);
        if (in_range(figure, v)) {
            text += std::string(figure.name) + " = " + value + "\n";
        } else {
            text += "# " + std::string(figure.name) + " = " + value + "  (outside the accepted " +
                    "range: the built-in value applies)\n";
        }
    }
    return text;
}

/// Create @p dir and any missing parent with mode 0700 (mkdir -p; existing ones are kept).
bool make_dirs(const std::string& dir, std::string* why) {
    for (size_t pos = 1; pos <= dir.size(); ++pos) {
        if (pos != dir.size() && dir[pos] != '/') continue;
        const std::string prefix = dir.substr(0, pos);
        if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
            *why = "cannot create directory " + prefix + ": " + errno_text(errno);
            return false;
        }
    }
    return true;
}

/// Why the directory open as @p dfd must not receive the file, or "". Another user who can
/// write there could swap the file after we write it (the reader would then refuse it, but
/// the measurement would be lost) — so we insist on our own, or root's, non-shared directory.
std::string distrust_dir(const std::string& dir, int dfd) {
    struct stat st;
    if (::fstat(dfd, &st) != 0) return "cannot stat " + dir + ": " + errno_text(errno);
    const uid_t me = ::geteuid();
    if (st.st_uid != me && st.st_uid != 0) {
        return "directory " + dir + " is owned by uid " + std::to_string(st.st_uid) +
               ", neither this user nor root";
    }
    if ((st.st_mode & S_IWOTH) != 0) return "directory " + dir + " is writable by others";
    return "";
}

/// Write all of @p text, across short writes; false with errno set on failure.
bool write_all(int fd, const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) {  // no progress and no error: report it as one rather than spin
            errno = EIO;
            return false;
        }
        done += static_cast<size_t>(n);
    }
    return true;
}

/// Create a fresh temporary file next to the target: O_EXCL|O_NOFOLLOW, so a name planted
/// in advance (file or symlink) makes us pick another name rather than write through it.
int create_temp(int dfd, const std::string& base, std::string* name) {
    for (int attempt = 0; attempt < 16; ++attempt) {
        uint64_t r = 0;
        if (::getrandom(&r, sizeof(r), 0) != static_cast<ssize_t>(sizeof(r))) {
            r = (static_cast<uint64_t>(::getpid()) << 20) ^ static_cast<uint64_t>(attempt);
        }
        char suffix[32];
        std::snprintf(suffix, sizeof(suffix), ".tmp.%016llx", static_cast<unsigned long long>(r));
        *name = "." + base + suffix;
        const int fd = ::openat(dfd, name->c_str(),
                                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

}  // namespace

double figure_unit_scale(FigureUnit unit) {
    switch (unit) {
        case FigureUnit::kGBps: return 1e-9;
        case FigureUnit::kMicros: return 1e6;
        case FigureUnit::kNanos: return 1e9;
    }
    return 1;
}

const char* figure_unit_name(FigureUnit unit) {
    switch (unit) {
        case FigureUnit::kGBps: return "GB/s";
        case FigureUnit::kMicros: return "us";
        case FigureUnit::kNanos: return "ns";
    }
    return "";
}

std::span<const CostFigureVar> cost_figure_table() {
    // Built once, never changed: the common figures, then the transports' in registry order.
    static const std::vector<CostFigureVar> table = [] {
        std::vector<CostFigureVar> all(std::begin(kCommonFigures), std::end(kCommonFigures));
        const std::span<const CostFigureVar> transports = transport_cost_figure_table();
        all.insert(all.end(), transports.begin(), transports.end());
        return all;
    }();
    return table;
}

const CostFigureVar* find_cost_figure(std::string_view name) {
    const size_t i = find_index(name);
    return i == kNotDeclared ? nullptr : &cost_figure_table()[i];
}

CostFigures::CostFigures() {
    const std::span<const CostFigureVar> table = cost_figure_table();
    values_.reserve(table.size());
    for (const CostFigureVar& figure : table)
        values_.push_back(figure.default_value);
}

double CostFigures::get(std::string_view name) const { return values_[declared_index(name)]; }

void CostFigures::set(std::string_view name, double value) {
    values_[declared_index(name)] = value;
}

std::string CostFigures::default_path() {
    // secure_getenv: a set-uid program must not read a file its caller chose through HOME.
    const char* home = ::secure_getenv("HOME");
    if (home == nullptr || home[0] != '/') return "";
    return std::string(home) + "/.cache/switchyard/calibration.conf";
}

Status CostFigures::load(const std::string& path, CostFigures* out, std::string* why) {
    std::string text;
    Status s = read_bounded(path, &text, why);
    if (s != Status::kOk) return s;
    CostFigures f;
    s = parse(path, text, &f, why);
    if (s != Status::kOk) return s;
    f.from_file = true;
    f.source = path;
    *out = f;
    return Status::kOk;
}

CostFigures CostFigures::load_configured(const std::string& configured) {
    // Tools that must not pick up a stale file set SWY_CALIBRATION_FILE=/dev/null; a device
    // is otherwise refused, so name it here rather than warn about it.
    if (configured == "/dev/null") return CostFigures{};
    const bool explicit_path = !configured.empty();
    const std::string path = explicit_path ? configured : default_path();
    if (path.empty()) return CostFigures{};
    CostFigures f;
    std::string why;
    const Status s = load(path, &f, &why);
    if (s == Status::kOk) return f;
    // No file at the default place is the normal case of an uncalibrated host.
    if (s == Status::kNotFound && !explicit_path) return CostFigures{};
    log_printf(LogLevel::kWarn, "calibration file not used, built-in cost figures instead: %s",
               why.c_str());
    return CostFigures{};
}

Status CostFigures::save(const std::string& path, std::string* why) const {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path.substr(0, slash);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty() || base == "." || base == "..") {
        *why = "cannot write '" + path + "': not a file name";
        return Status::kInvalidParam;
    }
    if (!make_dirs(dir, why)) return Status::kIoError;
    // Everything below goes through this descriptor, so the directory we checked is the one
    // we write in, whatever happens to the path meanwhile.
    common::UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dfd) {
        *why = "cannot open directory " + dir + ": " + errno_text(errno);
        return Status::kIoError;
    }
    *why = distrust_dir(dir, dfd.get());
    if (!why->empty()) return Status::kInvalidParam;
    struct stat st;
    if (::fstatat(dfd.get(), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISREG(st.st_mode)) {
            *why = "refusing to write " + path + ": it is " + kind_of(st.st_mode) +
                   " (remove it, or pass another path with --output)";
            return Status::kInvalidParam;
        }
    } else if (errno != ENOENT) {
        *why = "cannot stat " + path + ": " + errno_text(errno);
        return Status::kIoError;
    }
    std::string temp;
    common::UniqueFd fd(create_temp(dfd.get(), base, &temp));
    if (!fd) {
        *why = "cannot create a temporary file in " + dir + ": " + errno_text(errno);
        return Status::kIoError;
    }
    // rename() replaces the directory entry: if a symlink appeared at the target since the
    // check above, the link itself is replaced, never the file it points to.
    int err = 0;
    if (!write_all(fd.get(), render(*this)) || ::fsync(fd.get()) != 0) err = errno;
    // A checked close, not the UniqueFd's: a file system may report a failed write only here.
    if (::close(fd.release()) != 0 && err == 0) err = errno;
    if (err == 0 && ::renameat(dfd.get(), temp.c_str(), dfd.get(), base.c_str()) != 0) err = errno;
    if (err != 0) {
        *why = "cannot write " + path + ": " + errno_text(err);
        ::unlinkat(dfd.get(), temp.c_str(), 0);
        return Status::kIoError;
    }
    ::fsync(dfd.get());  // the rename itself survives a crash; best effort
    return Status::kOk;
}

}  // namespace swy::common
