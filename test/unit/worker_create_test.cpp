// Worker creation that fails half-way leaves the context's count of live workers as it was:
// a failed swy_worker_create must not make the context believe a worker is (or minus one
// worker is) still alive.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include "core/context.h"
#include "test_context.h"

namespace swy::core {
namespace {

/// A context with SWY_TLS=self; null on failure.
swy_context_h self_context() { return test::make_context({{"TLS", "self"}}); }

TEST(WorkerCreate, FailureHalfWayLeavesTheLiveWorkerCountAlone) {
    // A network interface that does not exist is found out when tcp opens, after the worker
    // object exists (settings that cannot mean anything already fail context creation).
    swy_context_h ctx = test::make_context({{"TLS", "tcp"}, {"NET_DEVICES", "swy-no-such-if0"}});
    ASSERT_NE(ctx, nullptr);
    const auto* context = reinterpret_cast<const Context*>(ctx);
    swy_worker_h worker = nullptr;
    EXPECT_NE(swy_worker_create(ctx, nullptr, &worker), SWY_OK);
    EXPECT_EQ(worker, nullptr);
    EXPECT_EQ(context->live_workers.load(), 0);
    swy_context_destroy(ctx);
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
