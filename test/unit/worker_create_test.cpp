// Worker creation that fails half-way leaves the context's count of live workers as it was:
// a failed swy_worker_create must not make the context believe a worker is (or minus one
// worker is) still alive.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include "core/context.h"
#include "test_context.h"

namespace swy::core {
namespace {

/// A context with SWY_TLS=self and, when @p cma is given, SWY_CMA=@p cma; null on failure.
swy_context_h self_context(const char* cma = nullptr) {
    test::Settings settings{{"TLS", "self"}};
    if (cma != nullptr) settings.emplace_back("CMA", cma);
    return test::make_context(settings);
}

TEST(WorkerCreate, FailureHalfWayLeavesTheLiveWorkerCountAlone) {
    // SWY_CMA is checked by worker creation (whichever transports open), after the worker
    // object exists.
    swy_context_h ctx = self_context("sometimes");
    ASSERT_NE(ctx, nullptr);
    const auto* context = reinterpret_cast<const Context*>(ctx);
    swy_worker_h worker = nullptr;
    EXPECT_EQ(swy_worker_create(ctx, nullptr, &worker), SWY_ERR_INVALID_PARAM);
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
