/**
 * @file contrib/ucp/ucp_shim_internal.h
 * @brief Functions private to the core half of the shim (between its own files).
 */
#ifndef UCP_SHIM_INTERNAL_H
#define UCP_SHIM_INTERNAL_H

#include "ucp_shim.h"

/** Runs the queued completions (ucp_worker_progress). @return how many ran. */
unsigned ucp_shim_deliver_completions(struct ucp_worker* w);

/** Frees every pooled request (request_cleanup once each) at worker destroy. */
void ucp_shim_requests_destroy(struct ucp_worker* w);

/** Closes @p ep at once (force or flush without waiting) and frees it: worker destroy. */
void ucp_shim_ep_drop(struct ucp_ep* ep, int force);

/** Polls the endpoint closes Switchyard still runs; completes the finished ones. */
unsigned ucp_shim_closes_progress(struct ucp_worker* w);

/** Drops the pending closes at worker destroy (their requests are not completed). */
void ucp_shim_closes_drop(struct ucp_worker* w);

#endif
