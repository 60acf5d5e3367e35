// Internal status type: a C++ mirror of swy_status_t so the core never includes the C API.
#pragma once

#include <cstdint>

namespace swy {

/// Result of an internal operation; values equal the public swy_status_t codes.
enum class Status : int8_t {
    kOk = 0,
    kInProgress = 1,
    kNoMemory = -1,
    kInvalidParam = -2,
    kNoResource = -3,
    kMessageTruncated = -4,
    kCanceled = -5,
    kUnreachable = -6,
    kConnectionReset = -7,
    kTimedOut = -8,
    kUnsupported = -9,
    kNoMessage = -10,
    kIoError = -11,
    kBusy = -12,
    kMalformed = -13,
    kEndpointClosed = -14,
    kNotFound = -15,
    kAccessDenied = -16,
};

/// True for kOk and kInProgress.
constexpr bool is_ok_or_pending(Status s) { return static_cast<int>(s) >= 0; }
/// True for error codes.
constexpr bool is_error(Status s) { return static_cast<int>(s) < 0; }

/// A status carried in a wire packet (int32): the value when it names a final Status (kOk or
/// an error), otherwise kMalformed. Never static_cast a peer's number: Status is 8 bits wide, so an unchecked
/// -65536 would read as kOk.
constexpr Status status_from_wire(int32_t value) {
    return value <= 0 && value >= static_cast<int>(Status::kAccessDenied)
               ? static_cast<Status>(value)
               : Status::kMalformed;
}

/// Static text for a status (same strings as swy_status_string()).
const char* status_text(Status s);

}  // namespace swy
