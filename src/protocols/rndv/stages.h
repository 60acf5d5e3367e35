// The stages of the rendezvous protocols. A request in rendezvous holds its protocol in
// Request::proto and its stage, one of these enums, in Request::stage; the protocol's code
// (get.cpp, put.cpp, pipeline.cpp) is the only place that moves it from one to the next.
// Stage 0 is always "not started".
#pragma once

#include <cstdint>

namespace swy::proto::rndv {

/// rndv_get_cma and rndv_get_zcopy: the receiver reads the sender's buffer (get_zcopy).
/// A split GET (synchronous lanes without remote keys, from SWY_RNDV_SPLIT_MIN) has both
/// processes copy at once: the receiver pulls the head, the sender puts the tail.
enum class GetStage : uint8_t {
    kIdle = 0,
    // Sender.
    kWaitAts,       ///< RTS out: the receiver pulls; its ATS ends the send
    kSplitPushing,  ///< a split RTR came: we put the tail with put_zcopy
    kSplitFin,      ///< the tail is put (or that failed): the FIN waits for room on the lane
    kSplitWaitAts,  ///< FIN out: the ATS, sent after the receiver's own pull, ends the send
    // Receiver.
    kProbe,         ///< pull one page first: proves the lane before asking for a split
    kPull,          ///< pulling the whole range, chunk by chunk
    kReading,       ///< one get_zcopy in flight (asynchronous lane): its callback ends it
    kPullSplit,     ///< pulling the head while the sender puts the tail; no FIN yet
    kPullSplitFin,  ///< pulling the head; the sender's FIN already came
    kWaitFin,       ///< the head is pulled; the sender's FIN ends the receive
};

/// rndv_put_cma and rndv_put_zcopy: the sender writes the receiver's buffer (put_zcopy),
/// then a FIN that arrives after the data.
enum class PutStage : uint8_t {
    kIdle = 0,
    // Sender.
    kWaitRtr,            ///< RTS out: waiting for the RTR (the receiver's buffer and key)
    kPushing,            ///< putting chunk by chunk (synchronous lane)
    kWriting,            ///< one put_zcopy in flight, not every part posted yet
    kFinPendingWriting,  ///< all posted; the FIN waits for room; the put still runs
    kFinPending,         ///< the data is moved (or that failed): the FIN waits for room
    kFinSentWriting,     ///< FIN out; the put's completion (our buffer no longer read) ends it
    // Receiver.
    kWaitFin,  ///< RTR out: the sender puts; its FIN ends the receive
};

/// rndv_pipeline: the data goes through the lane in fragments, which every lane carries and
/// which touch only the two processes' own buffers.
enum class PipelineStage : uint8_t {
    kIdle = 0,
    kWaitRtr,   ///< sender: RTS out, waiting for the RTR
    kSending,   ///< sender: fragments through the lane
    kWaitData,  ///< receiver: RTR out, fragments arrive
};

}  // namespace swy::proto::rndv
