#include "common/status.h"

namespace swy {

const char* status_text(Status s) {
    switch (s) {
        case Status::kOk: return "success";
        case Status::kInProgress: return "operation in progress";
        case Status::kNoMemory: return "out of memory";
        case Status::kInvalidParam: return "invalid parameter";
        case Status::kNoResource: return "no resource available (queue or pool full)";
        case Status::kMessageTruncated: return "message truncated (receive buffer too small)";
        case Status::kCanceled: return "request canceled";
        case Status::kUnreachable: return "destination unreachable";
        case Status::kConnectionReset: return "connection reset (peer failed)";
        case Status::kTimedOut: return "timed out";
        case Status::kUnsupported: return "operation not supported";
        case Status::kNoMessage: return "no matching message";
        case Status::kIoError: return "input/output error";
        case Status::kBusy: return "busy";
        case Status::kMalformed: return "malformed packet or address";
        case Status::kEndpointClosed: return "endpoint closed";
        case Status::kNotFound: return "not found";
        case Status::kAccessDenied:
            return "access denied (stale, forged or insufficient remote key)";
    }
    return "unknown status";
}

}  // namespace swy
