// Send half of the eager protocols: eager_short (PIO: the lane stores header and payload
// straight into memory the receiver or adapter mapped) and eager_bcopy (copied through the
// lane's cells or bounce buffers). Both carry the data with the message: a message that fits
// one packet goes as one (EagerOnly, or EagerSyncOnly for a synchronous send), a larger one
// as a first fragment announcing the total and middle fragments placed by offset. Which of
// the two a lane uses for a packet (PIO or bcopy) is the lane's business: the protocol code
// is the same, and the selector's cost lines tell them apart (src/protocols/select.cpp).
//
// The endpoint's pending queue drives a send that the lane could not take at once: start()
// is called again and resumes where the request's stage says.
#pragma once

#include "common/status.h"
#include "protocols/protocol.h"

namespace swy::core {
struct Request;
}

namespace swy::proto::eager {

/// Where an eager send stands (Request::stage).
enum class SendStage : Stage {
    kNotStarted = 0,  ///< nothing handed to the lane yet
    kFragments = 1,   ///< the first fragment went; middle fragments from Request::offset on
};

/// Hand @p r (an eager send on a wired endpoint) to its lane, as far as the lane takes it.
/// kOk: every byte handed over (a synchronous send then waits for the ack: remote_done);
/// kNoResource: the lane is full, call again from progress; other: failed.
Status start(core::Request* r);

/// Remove @p r from its endpoint's queue, if on one, and complete it with @p why.
void abort(core::Request* r, Status why);

/// The Protocol entry of an eager protocol (eager_short or eager_bcopy).
const Protocol& protocol(ProtoId id);

}  // namespace swy::proto::eager
