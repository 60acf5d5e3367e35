// Send half of user active messages (switchyard/am.h). A message whose user header and data
// fit one packet of the endpoint's lane goes eager (kAmUserEager: one am_send, the data packed
// straight into the lane's cell when it is not contiguous); a larger one goes by the tag
// rendezvous protocols, whose RTS is replaced by kAmUserRts (the RTS plus the AM id and the
// user header). AM sends share the endpoint's pending queue with tag sends, so the messages of
// one endpoint leave, and reach the peer, in the order they were posted.
#pragma once

#include <switchyard/switchyard.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "protocols/wire.h"

namespace swy::core {
class Endpoint;
struct Request;
}  // namespace swy::core

namespace swy::proto::am {

/// Largest user header + data of an eager active message on @p ep (its single-packet size);
/// 0 before the endpoint is wired.
size_t eager_max(const core::Endpoint& ep);

/// swy_am_send_nb on @p ep: kOk (sent, nothing to wait for), kInProgress (*out set), or an
/// error (nothing sent): kInvalidParam (forced eager that does not fit, both forcing flags,
/// a header too long for the lane), kUnsupported (device memory, a non-contiguous
/// rendezvous, a non-contiguous send on an endpoint not yet wired), the endpoint's failure.
Status send(core::Endpoint* ep, uint16_t id, const void* header, size_t header_length,
            const void* data, size_t count, const swy_request_params_t* params,
            core::Request** out);

/// Choose eager or rendezvous for AM send @p r (Endpoint::choose_protocol, on a wired
/// endpoint: at the call, or when a sockaddr endpoint is wired).
void choose(core::Endpoint* ep, core::Request* r);

/// Hand AM send @p r to the lane (Endpoint::push): as Protocol::start, kOk / kNoResource /
/// error. A forced-eager message that turned out not to fit once its endpoint was wired
/// completes with kInvalidParam from the next progress.
Status start(core::Request* r);

/// Send the RTS of rendezvous AM send @p r as kAmUserRts (Rendezvous::send_rts: @p rts is
/// what it would have sent for a tag message).
Status send_rts(core::Request* r, const RtsHeader& rts);

}  // namespace swy::proto::am
