// Cost figures of this machine: measured by `swy-info --calibrate` and read from a small
// key = value file at context creation; sensible defaults when no file exists. Nothing reads
// them directly to choose a protocol: each transport turns them into its lanes' costs
// (tl::LaneAttr::costs, by transports/<name>/<name>_costs.h), and the selector reads those.
//
// Which figures exist is declared, like the SWY_* variables: the common ones here
// (cost_figures.cpp: memcpy_bw_Bps), each transport's in its own folder (CostFigureVar
// arrays in transports/<name>/<name>_costs.h, listed by its registry entry). CostFigures holds
// one value per declared figure; the file's keys are the declared names.
//
// The file is read by every context and written by a tool, so both sides treat its path as
// possibly hostile (security issue #12): the reader never blocks, never follows a final
// symlink, reads a bounded amount and falls back to the defaults with a warning; the writer
// never writes through a symlink. Each declaration carries its figure's accepted range.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace swy::common {

/// How a figure is shown (swy-info): its value in the file is always in SI base units
/// (seconds, bytes per second); this only picks the scale a human reads it in.
enum class FigureUnit {
    kGBps,    ///< a rate in bytes per second, shown in GB/s
    kMicros,  ///< a time in seconds, shown in microseconds
    kNanos,   ///< a time in seconds, shown in nanoseconds
};

/// The factor from the stored value to the shown one (1e-9 for GB/s, 1e6 for us, 1e9 for ns).
double figure_unit_scale(FigureUnit unit);

/// The shown unit's name ("GB/s", "us", "ns").
const char* figure_unit_name(FigureUnit unit);

// Accepted ranges. Wide enough for any real host (a 1 MB/s link to 10 TB/s memory, 0.1 ns
// to 1 s per call); narrow enough that a figure outside is a broken measurement or a broken
// file, which would otherwise push the selector to absurd thresholds.
inline constexpr double kFigureBwMin = 1e6;      ///< bytes per second
inline constexpr double kFigureBwMax = 1e13;     ///< bytes per second
inline constexpr double kFigureTimeMin = 1e-10;  ///< seconds
inline constexpr double kFigureTimeMax = 1.0;    ///< seconds

/// One declared figure: its key in the calibration file, built-in value, accepted range
/// [min, max] (a value outside, NaN included, is ignored on load) and what it measures.
struct CostFigureVar {
    std::string_view name;  ///< the file key; a new one starts with its transport's name
    double default_value;   ///< in SI base units; must lie in [min, max]
    double min;
    double max;
    FigureUnit unit;        ///< how swy-info shows it
    std::string_view help;  ///< one line: what is measured, and how
};

/// Every declared figure, in a stable order: the common ones (cost_figures.cpp), then each
/// transport's, in registry order. This order is the order of the calibration file.
std::span<const CostFigureVar> cost_figure_table();

/// The figures the transports declare, in registry order. Defined by the transport registry
/// (transports/registry.cpp), so that common/ names no transport.
std::span<const CostFigureVar> transport_cost_figure_table();

/// The declaration of @p name, or null if there is none.
const CostFigureVar* find_cost_figure(std::string_view name);

/// One value per declared figure; built-in values unless set or loaded. Copyable.
class CostFigures {
public:
    /// Every declared figure at its default value.
    CostFigures();

    /// The value of the declared figure @p name. An undeclared name is a library bug: it is
    /// logged and the process aborts in every build (never a silent 0), as Config does.
    double get(std::string_view name) const;

    /// Set the declared figure @p name (aborts like get() if undeclared). Any value is
    /// stored, even one outside the figure's range: save() writes such a value commented
    /// out, so a broken measurement stays visible without being used.
    void set(std::string_view name, double value);

    /// True when every figure has the same value in both (from_file and source are not
    /// figures).
    bool same_values(const CostFigures& other) const { return values_ == other.values_; }

    bool from_file = false;                    ///< true when loaded from a calibration file
    std::string source = "built-in defaults";  ///< the file's path, or "built-in defaults"

    /// Largest calibration file read (a real one is under 1 KiB); a larger file is refused.
    static constexpr size_t kMaxFileBytes = 64 * 1024;

    /// Read the calibration file at @p path into @p out, without following a symbolic link
    /// in its last component and without blocking. Refused (kInvalidParam, reason in @p why):
    /// anything but a regular file (FIFO, device, directory, symlink), a file over
    /// kMaxFileBytes, a file owned by neither the effective uid nor root, a file writable by
    /// group or others. kNotFound if it does not exist, kIoError if it cannot be opened or
    /// read, kMalformed for a line that is not `key = number` (a NUL byte, text after the
    /// number). A declared key whose value lies outside its declared range is ignored (the
    /// built-in value stays) and an undeclared key is skipped (forward compatibility); both
    /// log a warning naming the file. @p out is written only on kOk. Thread-safe.
    static Status load(const std::string& path, CostFigures* out, std::string* why);

    /// The figures a context uses: the file @p configured (SWY_CALIBRATION_FILE) when it is
    /// not empty, else default_path() when that is not empty and the file exists. A file that
    /// cannot be used — missing when named explicitly, refused or malformed — logs a warning
    /// naming it and the reason, and the built-in defaults are returned: a bad file never
    /// fails or blocks context creation. "/dev/null" means "no file" and is silent.
    static CostFigures load_configured(const std::string& configured);

    /// Write as key = value lines to @p path, atomically and without following symlinks:
    /// missing directories are created with mode 0700; the parent directory must be owned by
    /// the effective uid or root and not writable by others; the figures go to a new file
    /// created with O_EXCL|O_NOFOLLOW and mode 0600 in that directory, are fsync'ed, and the
    /// file is rename()d over @p path. A @p path that is a symbolic link or not a regular file
    /// is refused (kInvalidParam), never written through nor replaced. A value outside its
    /// figure's range is written commented out (the reader would ignore it). kIoError with
    /// @p why if a system call fails; nothing is left behind then.
    Status save(const std::string& path, std::string* why) const;

    /// The path used when SWY_CALIBRATION_FILE is empty: $HOME/.cache/switchyard/
    /// calibration.conf, or "" (no default file) when HOME is unset or not an absolute path —
    /// never a shared directory such as /tmp, where another user could plant the file.
    static std::string default_path();

private:
    std::vector<double> values_;  // index = position in cost_figure_table()
};

}  // namespace swy::common
