// Worker creation that fails half-way leaves the context's count of live workers as it was:
// a failed swy_worker_create must not make the context believe a worker is (or minus one
// worker is) still alive.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include "core/context.h"
#include "test_context.h"

namespace swy::core {
namespace {

/// A context with SWY_TLS=self; null on failure.
swy_context_h self_context() { return test::make_context({{"TLS", "self"}}); }

TEST(WorkerCreate, FailureHalfWayLeavesTheLiveWorkerCountAlone) {
    // Out of descriptors, the worker's event fds cannot be made: found out after the worker
    // object exists (settings that cannot mean anything, a missing network interface
    // included, already fail context creation). In a child: the limit is process-wide.
#if defined(__SANITIZE_ADDRESS__)
    // UBSan's vptr check tests whether memory is readable through a pipe: with every
    // descriptor taken it reports a false "invalid vptr" for the worker. The Release run
    // checks this.
    GTEST_SKIP() << "needs free descriptors under UBSan (its vptr check opens a pipe)";
#endif
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        swy_context_h ctx = test::make_context({{"TLS", "tcp"}, {"NET_DEVICES", "lo"}});
        if (ctx == nullptr) _exit(10);
        const auto* context = reinterpret_cast<const Context*>(ctx);
        int highest = 0;
        for (int fd = 0; fd < 65536; ++fd) {
            if (fcntl(fd, F_GETFD) >= 0) highest = fd;
        }
        rlimit rl{};
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = static_cast<rlim_t>(highest + 1);
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(11);
        while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0) {}
        swy_worker_h worker = nullptr;
        if (swy_worker_create(ctx, nullptr, &worker) == SWY_OK) _exit(12);
        if (worker != nullptr) _exit(13);
        _exit(context->live_workers.load() == 0 ? 0 : 14);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "12: created anyway, 14: count changed";
}

TEST(WorkerCreate, LiveWorkersAreCountedUntilDestroyed) {
    swy_context_h ctx = self_context();
    ASSERT_NE(ctx, nullptr);
    const auto* context = reinterpret_cast<const Context*>(ctx);
    swy_worker_h a = nullptr, b = nullptr;
    ASSERT_EQ(swy_worker_create(ctx, nullptr, &a), SWY_OK);
    ASSERT_EQ(swy_worker_create(ctx, nullptr, &b), SWY_OK);
    EXPECT_EQ(context->live_workers.load(), 2);
    swy_worker_destroy(a);
    EXPECT_EQ(context->live_workers.load(), 1);
    swy_worker_destroy(b);
    EXPECT_EQ(context->live_workers.load(), 0);
    swy_context_destroy(ctx);
}

}  // namespace
}  // namespace swy::core
