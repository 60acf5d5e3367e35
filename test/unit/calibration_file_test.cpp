// The calibration file is read by every context and written by `swy-info --calibrate`; its
// path may be in a place another user can reach (security issue #12, item 5). These tests
// plant what such a user could — garbage, a FIFO, a symlink to /dev/zero, a huge file, absurd
// values, a writable file, a symlink to a file we must not overwrite — and check that a
// context still comes up promptly with the built-in figures, and that save() never writes
// through a link.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "common/cost_figures.h"
#include "common/log.h"
#include "core/context.h"
#include "transports/registry.h"
#include "transports/tcp/tcp_costs.h"

namespace swy::proto {
namespace {

namespace fs = std::filesystem;
using common::CostFigures;

/// Every figure equal (from_file and source are not figures).
bool same_figures(const CostFigures& a, const CostFigures& b) { return a.same_values(b); }

bool is_default(const CostFigures& f) { return same_figures(f, CostFigures{}) && !f.from_file; }

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// Save and restore one environment variable around a test.
class EnvGuard {
public:
    explicit EnvGuard(const char* name) : name_(name) {
        const char* v = std::getenv(name);
        had_ = v != nullptr;
        if (had_) value_ = v;
    }
    ~EnvGuard() {
        if (had_) {
            ::setenv(name_, value_.c_str(), 1);
        } else {
            ::unsetenv(name_);
        }
    }

private:
    const char* name_;
    bool had_ = false;
    std::string value_;
};

class CalibrationFile : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = (fs::temp_directory_path() / "swy-cal-XXXXXX").string();
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        dir_ = templ;
        common::set_log_level(common::LogLevel::kWarn);  // the warnings are part of the spec
    }
    void TearDown() override {
        std::error_code ec;
        fs::permissions(dir_, fs::perms::owner_all, ec);
        fs::remove_all(dir_, ec);  // does not follow the symlinks the tests plant
    }

    std::string path(const std::string& name) const { return dir_ + "/" + name; }

    /// Write @p text to @p name with exactly @p mode; returns the path.
    std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) {
        const std::string p = path(name);
        {
            std::ofstream out(p, std::ios::binary);
            out << text;
        }
        EXPECT_EQ(::chmod(p.c_str(), mode), 0);
        return p;
    }

    /// The figures of a context created through the public API with SWY_CALIBRATION_FILE =
    /// @p file; the creation must succeed.
    static CostFigures context_figures(const std::string& file) {
        swy_config_h cfg = nullptr;
        EXPECT_EQ(swy_config_read(&cfg), SWY_OK);
        EXPECT_EQ(swy_config_set(cfg, "TLS", "self"), SWY_OK);
        EXPECT_EQ(swy_config_set(cfg, "CALIBRATION_FILE", file.c_str()), SWY_OK);
        swy_context_params_t params{};
        params.field_mask = SWY_CONTEXT_PARAM_FIELD_CONFIG;
        params.config = cfg;
        swy_context_h ctx = nullptr;
        EXPECT_EQ(swy_context_create(&params, &ctx), SWY_OK);
        swy_config_release(cfg);
        CostFigures f;
        f.from_file = true;  // so a failed creation cannot pass for "defaults"
        if (ctx != nullptr) {
            f = reinterpret_cast<const core::Context*>(ctx)->costs();
            swy_context_destroy(ctx);
        }
        return f;
    }

    std::string dir_;
};

constexpr const char* kGood =
    "# measured\n"
    "memcpy_bw_Bps = 7.5e9\n"
    "cma_call_s = 2.5e-06   # trailing comment\n"
    "verbs_bw_Bps=3e9\n";

TEST_F(CalibrationFile, GoodFileLoads) {
    const std::string p = write("good.conf", kGood);
    CostFigures f;
    std::string why;
    ASSERT_EQ(CostFigures::load(p, &f, &why), Status::kOk) << why;
    EXPECT_EQ(f.get("memcpy_bw_Bps"), 7.5e9);
    EXPECT_EQ(f.get("cma_call_s"), 2.5e-6);
    EXPECT_EQ(f.get("verbs_bw_Bps"), 3e9);
    EXPECT_EQ(f.get("shm_copy_bw_Bps"), CostFigures{}.get("shm_copy_bw_Bps"));
    EXPECT_TRUE(f.from_file);
    EXPECT_EQ(f.source, p);
    const CostFigures c = context_figures(p);
    EXPECT_TRUE(c.from_file);
    EXPECT_EQ(c.get("memcpy_bw_Bps"), 7.5e9);
}

TEST_F(CalibrationFile, GarbageGivesDefaultsAndAWarningNotAFailedContext) {
    const std::string p = write("garbage.conf",
                                "\x7f"
                                "ELF\x02\x01 not key value\n\xff\xfe\n");
    CostFigures f;
    std::string why;
    EXPECT_EQ(CostFigures::load(p, &f, &why), Status::kMalformed);
    EXPECT_NE(why.find(p), std::string::npos) << why;
    ::testing::internal::CaptureStderr();
    const CostFigures c = context_figures(p);
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(is_default(c));
    EXPECT_NE(log.find("WARN"), std::string::npos) << log;
    EXPECT_NE(log.find(p), std::string::npos) << log;
}

TEST_F(CalibrationFile, NulByteOrTextAfterTheNumberIsMalformed) {
    CostFigures f;
    std::string why;
    const std::string nul("memcpy_bw_Bps = 1e9\n\0\n", 22);
    EXPECT_EQ(CostFigures::load(write("nul.conf", nul), &f, &why), Status::kMalformed);
    EXPECT_EQ(CostFigures::load(write("junk.conf", "memcpy_bw_Bps = 1e9 GB/s\n"), &f, &why),
              Status::kMalformed);
    EXPECT_EQ(CostFigures::load(write("empty.conf", "memcpy_bw_Bps =\n"), &f, &why),
              Status::kMalformed);
    EXPECT_TRUE(is_default(f));  // untouched on failure
}

TEST_F(CalibrationFile, FifoIsRefusedPromptlyWithoutAWriter) {
    const std::string p = path("fifo.conf");
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    auto pending = std::async(std::launch::async, [&] { return context_figures(p); });
    if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        // Unblock a reader stuck in open() so the test can end, then fail.
        const int w = ::open(p.c_str(), O_WRONLY | O_NONBLOCK);
        if (w >= 0) ::close(w);
        ADD_FAILURE() << "context creation blocked on a FIFO";
    }
    EXPECT_TRUE(is_default(pending.get()));
    CostFigures f;
    std::string why;
    EXPECT_EQ(CostFigures::load(p, &f, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("FIFO"), std::string::npos) << why;
}

TEST_F(CalibrationFile, SymlinkToDevZeroIsRefused) {
    const std::string p = path("zero.conf");
    ASSERT_EQ(::symlink("/dev/zero", p.c_str()), 0);
    const auto t0 = std::chrono::steady_clock::now();
    CostFigures f;
    std::string why;
    EXPECT_EQ(CostFigures::load(p, &f, &why), Status::kInvalidParam);
    EXPECT_TRUE(is_default(context_figures(p)));
    // The device itself, named directly, is refused before anything is read.
    EXPECT_EQ(CostFigures::load("/dev/zero", &f, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("device"), std::string::npos) << why;
    EXPECT_TRUE(is_default(context_figures("/dev/zero")));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(CalibrationFile, SymlinkToAGoodFileIsNotFollowed) {
    const std::string target = write("real.conf", kGood);
    const std::string p = path("link.conf");
    ASSERT_EQ(::symlink(target.c_str(), p.c_str()), 0);
    CostFigures f;
    std::string why;
    EXPECT_EQ(CostFigures::load(p, &f, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
}

TEST_F(CalibrationFile, DirectoryIsRefused) {
    CostFigures f;
    std::string why;
    EXPECT_EQ(CostFigures::load(dir_, &f, &why), Status::kInvalidParam);
    EXPECT_TRUE(is_default(context_figures(dir_)));
}

TEST_F(CalibrationFile, OversizedFileIsRefused) {
    std::string text = "memcpy_bw_Bps = 7e9\n";
    text.resize(CostFigures::kMaxFileBytes, '#');  // one long comment line: parses fine
    text.back() = '\n';
    CostFigures f;
    std::string why;
    EXPECT_EQ(CostFigures::load(write("limit.conf", text), &f, &why), Status::kOk) << why;
    EXPECT_EQ(f.get("memcpy_bw_Bps"), 7e9);
    text += "\n";
    const std::string big = write("big.conf", text);
    EXPECT_EQ(CostFigures::load(big, &f, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("limit"), std::string::npos) << why;
    EXPECT_TRUE(is_default(context_figures(big)));
}

TEST_F(CalibrationFile, OutOfRangeValuesAreIgnoredOthersKept) {
    const std::string p = write("range.conf",
                                "memcpy_bw_Bps = 1e20\n"  // over 10 TB/s
                                "shm_copy_bw_Bps = 0\n"
                                "cma_bw_Bps = -5e9\n"
                                "cma_call_s = 5\n"          // over 1 s
                                "fifo_latency_s = 1e-12\n"  // under 0.1 ns
                                "cell_overhead_s = nan\n"
                                "pio_overhead_s = inf\n"
                                "verbs_bw_Bps = 5e9\n");  // the one good figure
    CostFigures f;
    std::string why;
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(CostFigures::load(p, &f, &why), Status::kOk) << why;
    const std::string log = ::testing::internal::GetCapturedStderr();
    const CostFigures d;
    EXPECT_EQ(f.get("memcpy_bw_Bps"), d.get("memcpy_bw_Bps"));
    EXPECT_EQ(f.get("shm_copy_bw_Bps"), d.get("shm_copy_bw_Bps"));
    EXPECT_EQ(f.get("cma_bw_Bps"), d.get("cma_bw_Bps"));
    EXPECT_EQ(f.get("cma_call_s"), d.get("cma_call_s"));
    EXPECT_EQ(f.get("fifo_latency_s"), d.get("fifo_latency_s"));
    EXPECT_EQ(f.get("cell_overhead_s"), d.get("cell_overhead_s"));
    EXPECT_EQ(f.get("pio_overhead_s"), d.get("pio_overhead_s"));
    EXPECT_EQ(f.get("verbs_bw_Bps"), 5e9);
    EXPECT_NE(log.find("memcpy_bw_Bps"), std::string::npos) << log;
    EXPECT_NE(log.find("outside"), std::string::npos) << log;
}

// The tcp figures have ranges like the others: a broken measurement keeps the built-in value.
TEST_F(CalibrationFile, TcpFiguresOutsideTheirRangesAreIgnored) {
    const std::string p = write("tcp.conf",
                                "tcp_latency_s = 2\n"  // over 1 s
                                "tcp_overhead_s = -1e-6\n"
                                "tcp_bw_Bps = 1e3\n"       // under 1 MB/s
                                "memcpy_bw_Bps = 8e9\n");  // the one good figure
    CostFigures f;
    std::string why;
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(CostFigures::load(p, &f, &why), Status::kOk) << why;
    const std::string log = ::testing::internal::GetCapturedStderr();
    const CostFigures d;
    EXPECT_EQ(f.get("tcp_latency_s"), d.get("tcp_latency_s"));
    EXPECT_EQ(f.get("tcp_overhead_s"), d.get("tcp_overhead_s"));
    EXPECT_EQ(f.get("tcp_bw_Bps"), d.get("tcp_bw_Bps"));
    EXPECT_EQ(f.get("memcpy_bw_Bps"), 8e9);
    EXPECT_NE(log.find("tcp_latency_s"), std::string::npos) << log;
    EXPECT_NE(log.find("tcp_bw_Bps"), std::string::npos) << log;
}

TEST_F(CalibrationFile, UnknownKeyIsWarnedAndSkipped) {
    const std::string p = write("newer.conf", "future_figure = whatever\nverbs_bw_Bps = 4e9\n");
    CostFigures f;
    std::string why;
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(CostFigures::load(p, &f, &why), Status::kOk) << why;
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(f.get("verbs_bw_Bps"), 4e9);
    EXPECT_NE(log.find("future_figure"), std::string::npos) << log;
}

TEST_F(CalibrationFile, WritableByGroupOrOthersIsRefused) {
    CostFigures f;
    std::string why;
    const std::string world = write("world.conf", kGood, 0666);
    EXPECT_EQ(CostFigures::load(world, &f, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("writable"), std::string::npos) << why;
    EXPECT_TRUE(is_default(context_figures(world)));
    EXPECT_EQ(CostFigures::load(write("group.conf", kGood, 0620), &f, &why), Status::kInvalidParam);
    EXPECT_EQ(CostFigures::load(write("readable.conf", kGood, 0644), &f, &why), Status::kOk);
}

TEST_F(CalibrationFile, FileOfAnotherUserIsRefused) {
    const std::string p = write("theirs.conf", kGood);
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root to give a file to another user";
    }
    ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0);
    CostFigures f;
    std::string why;
    EXPECT_EQ(CostFigures::load(p, &f, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("owned by uid 65534"), std::string::npos) << why;
    EXPECT_TRUE(is_default(context_figures(p)));
}

TEST_F(CalibrationFile, MissingExplicitFileGivesDefaults) {
    EXPECT_TRUE(is_default(context_figures(path("absent.conf"))));
}

TEST_F(CalibrationFile, DevNullMeansNoFileSilently) {
    ::testing::internal::CaptureStderr();
    const CostFigures c = context_figures("/dev/null");
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(is_default(c));
    EXPECT_EQ(log.find("calibration"), std::string::npos) << log;
}

TEST_F(CalibrationFile, DefaultPathNeedsAnAbsoluteHome) {
    EnvGuard home("HOME");
    ::setenv("HOME", dir_.c_str(), 1);
    EXPECT_EQ(CostFigures::default_path(), dir_ + "/.cache/switchyard/calibration.conf");
    ::setenv("HOME", "relative/home", 1);
    EXPECT_EQ(CostFigures::default_path(), "");
    ::setenv("HOME", "", 1);
    EXPECT_EQ(CostFigures::default_path(), "");
    ::unsetenv("HOME");
    EXPECT_EQ(CostFigures::default_path(), "");
}

TEST_F(CalibrationFile, DefaultFileUnderHomeIsRead) {
    EnvGuard home("HOME");
    ::setenv("HOME", dir_.c_str(), 1);
    CostFigures f;
    f.set("verbs_bw_Bps", 6e9);
    std::string why;
    ASSERT_EQ(f.save(CostFigures::default_path(), &why), Status::kOk) << why;
    const CostFigures c = context_figures("");
    EXPECT_TRUE(c.from_file);
    EXPECT_EQ(c.get("verbs_bw_Bps"), 6e9);
}

TEST_F(CalibrationFile, WithoutHomeTheTmpFileIsNotRead) {
    // What the old fallback read. Plant a valid file there (only if nothing is there yet, and
    // removed afterwards): were it read, the context would report from_file.
    const fs::path planted = "/tmp/.cache/switchyard/calibration.conf";
    std::error_code ec;
    const bool had_cache = fs::exists("/tmp/.cache", ec);
    const bool had_dir = fs::exists(planted.parent_path(), ec);
    const bool had_file = fs::symlink_status(planted, ec).type() != fs::file_type::not_found;
    if (!had_file) {
        fs::create_directories(planted.parent_path(), ec);
        ASSERT_FALSE(ec) << ec.message();
        std::ofstream(planted) << kGood;
        ::chmod(planted.c_str(), 0600);
    }
    CostFigures c;
    {
        EnvGuard home("HOME");
        ::unsetenv("HOME");
        EXPECT_EQ(CostFigures::default_path(), "");
        c = context_figures("");
    }
    if (!had_file) fs::remove(planted, ec);
    if (!had_dir) fs::remove(planted.parent_path(), ec);
    if (!had_cache) fs::remove("/tmp/.cache", ec);
    EXPECT_TRUE(is_default(c));
}

TEST_F(CalibrationFile, SaveLoadRoundTrip) {
    CostFigures f;
    f.set("memcpy_bw_Bps", 12.5e9);
    f.set("cma_call_s", 1.75e-6);
    f.set("verbs_reg_hit_Bps", 1.5e18);  // a near-free cache hit: a huge but accepted rate
    f.set("tcp_latency_s", 7.25e-6);
    f.set("tcp_overhead_s", 2.5e-6);
    f.set("tcp_bw_Bps", 1.125e9);
    const std::string p = path("round.conf");
    std::string why;
    ASSERT_EQ(f.save(p, &why), Status::kOk) << why;
    CostFigures g;
    ASSERT_EQ(CostFigures::load(p, &g, &why), Status::kOk) << why;
    EXPECT_TRUE(same_figures(f, g));
    EXPECT_TRUE(g.from_file);
}

TEST_F(CalibrationFile, SaveCreatesPrivateDirectoriesAndFile) {
    const mode_t old_umask = ::umask(022);
    const std::string p = path("a/b/calibration.conf");
    std::string why;
    const Status s = CostFigures{}.save(p, &why);
    ::umask(old_umask);
    ASSERT_EQ(s, Status::kOk) << why;
    struct stat st;
    ASSERT_EQ(::stat(path("a").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    ASSERT_EQ(::stat(path("a/b").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    ASSERT_EQ(::lstat(p.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    int entries = 0;  // no temporary file left behind
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(path("a/b")))
        ++entries;
    EXPECT_EQ(entries, 1);
}

TEST_F(CalibrationFile, SaveReplacesAnExistingFile) {
    const std::string p = write("old.conf", "memcpy_bw_Bps = 1e9\n", 0644);
    CostFigures f;
    f.set("memcpy_bw_Bps", 2e9);
    std::string why;
    ASSERT_EQ(f.save(p, &why), Status::kOk) << why;
    CostFigures g;
    ASSERT_EQ(CostFigures::load(p, &g, &why), Status::kOk) << why;
    EXPECT_EQ(g.get("memcpy_bw_Bps"), 2e9);
    struct stat st;
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(CalibrationFile, SaveDoesNotWriteThroughASymlink) {
    const std::string victim = write("victim", "precious\n", 0600);
    const std::string link = path("link.conf");
    ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
    std::string why;
    EXPECT_EQ(CostFigures{}.save(link, &why), Status::kInvalidParam);
    EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
    EXPECT_EQ(read_all(victim), "precious\n");
    struct stat st;
    ASSERT_EQ(::lstat(link.c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    // A dangling link (to a file not yet there) must not create its target either.
    const std::string dangling = path("dangling.conf");
    ASSERT_EQ(::symlink(path("created-through-link").c_str(), dangling.c_str()), 0);
    EXPECT_EQ(CostFigures{}.save(dangling, &why), Status::kInvalidParam);
    EXPECT_FALSE(fs::exists(path("created-through-link")));
}

TEST_F(CalibrationFile, SaveRefusesAFifoOrDirectoryTarget) {
    const std::string fifo = path("fifo.conf");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string why;
    EXPECT_EQ(CostFigures{}.save(fifo, &why), Status::kInvalidParam);
    ASSERT_EQ(::mkdir(path("dir.conf").c_str(), 0700), 0);
    EXPECT_EQ(CostFigures{}.save(path("dir.conf"), &why), Status::kInvalidParam);
}

TEST_F(CalibrationFile, SaveRefusesADirectoryWritableByOthers) {
    const std::string shared = path("shared");
    ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);  // like /tmp
    std::string why;
    EXPECT_EQ(CostFigures{}.save(shared + "/calibration.conf", &why), Status::kInvalidParam);
    EXPECT_NE(why.find("writable by others"), std::string::npos) << why;
    EXPECT_TRUE(fs::is_empty(shared));
}

TEST_F(CalibrationFile, SaveCommentsOutAFigureOutsideItsRange) {
    CostFigures f;
    f.set("cma_call_s", 30);  // a broken measurement
    const std::string p = path("broken.conf");
    std::string why;
    ASSERT_EQ(f.save(p, &why), Status::kOk) << why;
    EXPECT_NE(read_all(p).find("# cma_call_s = 30"), std::string::npos) << read_all(p);
    CostFigures g;
    ASSERT_EQ(CostFigures::load(p, &g, &why), Status::kOk) << why;
    EXPECT_EQ(g.get("cma_call_s"), CostFigures{}.get("cma_call_s"));
}

// ---- Keys declared by the transports (issue #13): the file format is unchanged ----

// What `swy-info --calibrate` wrote before the figures were declared by the transports: the
// built-in figures, every key in this order. A file users already have must keep loading, and
// the tool must keep writing the same keys. (The shm and CMA values are today's built-in
// figures, re-measured for issue 17; the keys and their order are the previous format's.)
constexpr const char* kPreviousFormatDefaults =
    "# Switchyard cost figures, measured by swy-info --calibrate\n"
    "memcpy_bw_Bps = 1e+10\n"
    "shm_copy_bw_Bps = 2.1e+10\n"
    "cma_bw_Bps = 2e+10\n"
    "cma_call_s = 2.8e-06\n"
    "fifo_latency_s = 3e-07\n"
    "cell_overhead_s = 6e-08\n"
    "pio_overhead_s = 2e-08\n"
    "bcopy_overhead_s = 5e-08\n"
    "tcp_latency_s = 6e-06\n"
    "tcp_overhead_s = 4e-06\n"
    "tcp_bw_Bps = 7.5e+08\n"
    "verbs_latency_s = 2e-06\n"
    "verbs_overhead_s = 3e-07\n"
    "verbs_bw_Bps = 1.25e+09\n"
    "verbs_rdma_overhead_s = 5e-07\n"
    "verbs_rdma_bw_Bps = 1.25e+09\n"
    "verbs_reg_s = 5e-06\n"
    "verbs_reg_Bps = 2e+10\n"
    "verbs_reg_hit_s = 1e-06\n"
    "verbs_reg_hit_Bps = 2e+11\n";

TEST_F(CalibrationFile, SaveWritesThePreviousFormatByteForByte) {
    const std::string p = path("defaults.conf");
    std::string why;
    ASSERT_EQ(CostFigures{}.save(p, &why), Status::kOk) << why;
    EXPECT_EQ(read_all(p), kPreviousFormatDefaults);
}

TEST_F(CalibrationFile, AFileOfThePreviousFormatLoadsEveryKeySilently) {
    // Every key of the previous format, each with a value other than the built-in one.
    std::string text = "# Switchyard cost figures, measured by swy-info --calibrate\n";
    std::istringstream lines(kPreviousFormatDefaults);
    std::vector<std::string> keys;
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line[0] == '#') continue;
        keys.push_back(line.substr(0, line.find(' ')));
        std::ostringstream value;
        value.precision(17);
        value << 1.5 * CostFigures{}.get(keys.back());
        text += keys.back() + " = " + value.str() + "\n";
    }
    ASSERT_EQ(keys.size(), 20u);
    CostFigures f;
    std::string why;
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(CostFigures::load(write("previous.conf", text), &f, &why), Status::kOk) << why;
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // no key unknown, none refused
    for (const std::string& key : keys) {
        EXPECT_EQ(f.get(key), 1.5 * CostFigures{}.get(key)) << key;
    }
}

TEST_F(CalibrationFile, ATransportDeclaredKeyLoadsAndReachesItsCostFunction) {
    const common::CostFigureVar* latency = common::find_cost_figure("tcp_latency_s");
    ASSERT_NE(latency, nullptr);  // declared by tcp (tcp_costs.h), listed by the registry
    EXPECT_EQ(latency, &common::cost_figure_table()[1 + 7]);  // after memcpy and shm's 7
    const std::string p = write("tcp.conf", "tcp_latency_s = 42e-6\n");
    const CostFigures c = context_figures(p);
    EXPECT_TRUE(c.from_file);
    EXPECT_EQ(c.get("tcp_latency_s"), 42e-6);
    EXPECT_EQ(tl::tcp::tcp_lane_costs(c).latency_s, 42e-6);
}

TEST_F(CalibrationFile, ATransportDeclaredKeyOutOfItsDeclaredRangeIsIgnored) {
    // verbs_reg_hit_Bps has the wider range verbs declares (to 1e20), verbs_reg_s the time range.
    const std::string p = write("verbs.conf",
                                "verbs_reg_hit_Bps = 1e19\n"  // in verbs' range, over kFigureBwMax
                                "verbs_reg_hit_Bps = 1e21\n"  // over it: ignored, 1e19 stays
                                "verbs_reg_s = 3\n");         // over 1 s
    CostFigures f;
    std::string why;
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(CostFigures::load(p, &f, &why), Status::kOk) << why;
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(f.get("verbs_reg_hit_Bps"), 1e19);
    EXPECT_EQ(f.get("verbs_reg_s"), CostFigures{}.get("verbs_reg_s"));
    EXPECT_NE(log.find("'verbs_reg_hit_Bps' = 1e21 is outside"), std::string::npos) << log;
    EXPECT_NE(log.find("'verbs_reg_s' = 3 is outside"), std::string::npos) << log;
}

TEST_F(CalibrationFile, AnUndeclaredTransportLikeKeyIsSkipped) {
    // A figure of a transport this build does not have (or a misspelt one): warned, skipped,
    // and the figures after it still load.
    const std::string p = write("other.conf", "ucx_latency_s = 1e-6\ntcp_bw_Bps = 2e9\n");
    CostFigures f;
    std::string why;
    ::testing::internal::CaptureStderr();
    ASSERT_EQ(CostFigures::load(p, &f, &why), Status::kOk) << why;
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(common::find_cost_figure("ucx_latency_s"), nullptr);
    EXPECT_EQ(f.get("tcp_bw_Bps"), 2e9);
    EXPECT_NE(log.find("unknown key 'ucx_latency_s' ignored"), std::string::npos) << log;
}

// Every declaration is usable: a unique name, a default inside its own range (the file would
// otherwise comment out a built-in value), and the table is what the registry lists.
TEST(CostFigureTable, DeclarationsAreUniqueAndTheirDefaultsInRange) {
    const std::span<const common::CostFigureVar> table = common::cost_figure_table();
    EXPECT_EQ(table.size(), 20u);
    for (size_t i = 0; i < table.size(); ++i) {
        EXPECT_LE(table[i].min, table[i].default_value) << table[i].name;
        EXPECT_LE(table[i].default_value, table[i].max) << table[i].name;
        EXPECT_FALSE(table[i].help.empty()) << table[i].name;
        for (size_t j = 0; j < i; ++j)
            EXPECT_NE(table[i].name, table[j].name);
    }
    // The common figure, then each transport's own, in registry order (the file's order).
    size_t at = 0;
    EXPECT_EQ(table[at++].name, "memcpy_bw_Bps");
    for (const tl::TransportEntry* t : tl::transports()) {
        for (const common::CostFigureVar& figure : t->cost_figures) {
            ASSERT_LT(at, table.size());
            EXPECT_EQ(table[at++].name, figure.name) << "declared by " << t->name;
        }
    }
    EXPECT_EQ(at, table.size());
}

TEST(CostFigureTable, AnUndeclaredNameAborts) {
    const CostFigures f;
    EXPECT_DEATH(f.get("tcp_latency"), "cost figure 'tcp_latency' is not declared");
    CostFigures g;
    EXPECT_DEATH(g.set("no_such_figure_s", 1.0), "not declared");
}

}  // namespace
}  // namespace swy::proto
