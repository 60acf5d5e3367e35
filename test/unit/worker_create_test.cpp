// Worker creation that fails half-way leaves the context's count of live workers as it was:
// a failed swy_worker_create must not make the context believe a worker is (or minus one
// worker is) still alive.
#include <gtest/gtest.h>
#include <switchyard/switchyard.h>

#include "core/context.h"

namespace swy::core {
namespace {

/// A context with SWY_TLS=self and, when @p cma is given, SWY_CMA=@p cma; null on failure.
swy_context_h self_context(const char* cma = nullptr) {
    swy_config_h cfg = nullptr;
    EXPECT_EQ(swy_config_read(&cfg), SWY_OK);
    if (cfg == nullptr) return nullptr;
    EXPECT_EQ(swy_config_set(cfg, "TLS", "self"), SWY_OK);
    if (cma != nullptr) {
        EXPECT_EQ(swy_config_set(cfg, "CMA", cma), SWY_OK);
    }
    swy_context_params_t cp{};
    cp.config = cfg;
    swy_context_h ctx = nullptr;
    EXPECT_EQ(swy_context_create(&cp, &ctx), SWY_OK);
    swy_config_release(cfg);
    return ctx;
}

TEST(WorkerCreate, FailureHalfWayLeavesTheLiveWorkerCountAlone) {
    // SWY_CMA is read only by worker creation, after the worker object exists.
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
