/**
 * @file switchyard/status.h
 * @brief Status codes returned by every Switchyard call.
 *
 * Zero is success, a positive value means "still in progress", negative values are errors.
 * The C++ core mirrors this set in `swy::Status` (src/common/status.h).
 */
#ifndef SWITCHYARD_STATUS_H
#define SWITCHYARD_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/** Result of a Switchyard operation. */
typedef enum swy_status {
    SWY_OK = 0,                     /**< Completed successfully. */
    SWY_INPROGRESS = 1,             /**< Started; completion is reported later. */
    SWY_ERR_NO_MEMORY = -1,         /**< An allocation failed. */
    SWY_ERR_INVALID_PARAM = -2,     /**< An argument was invalid (the message says which). */
    SWY_ERR_NO_RESOURCE = -3,       /**< A queue or pool is full; retry after progress. */
    SWY_ERR_MESSAGE_TRUNCATED = -4, /**< The message was larger than the receive buffer. */
    SWY_ERR_CANCELED = -5,          /**< The request was canceled. */
    SWY_ERR_UNREACHABLE = -6,       /**< No transport reaches the peer. */
    SWY_ERR_CONNECTION_RESET = -7,  /**< The peer died or the connection was lost. */
    SWY_ERR_TIMED_OUT = -8,         /**< A wait ran out of time. */
    SWY_ERR_UNSUPPORTED = -9,       /**< The operation is not supported here. */
    SWY_ERR_NO_MESSAGE = -10,       /**< A probe found no matching message. */
    SWY_ERR_IO = -11,               /**< A system call failed (see the log). */
    SWY_ERR_BUSY = -12,             /**< The object is busy (e.g. events pending on arm). */
    SWY_ERR_MALFORMED = -13,        /**< A wire packet or address failed validation. */
    SWY_ERR_ENDPOINT_CLOSED = -14,  /**< The endpoint was closed before completion. */
    SWY_ERR_NOT_FOUND = -15,        /**< A named item (config variable, device) is unknown. */
    SWY_ERR_ACCESS_DENIED = -16     /**< A remote key is stale, forged or lacks the right. */
} swy_status_t;

/**
 * @brief Human-readable text for a status code.
 * @return A static, NUL-terminated string; never NULL (unknown codes give "unknown status").
 * Thread safety: safe from any thread.
 */
const char* swy_status_string(swy_status_t status);

#ifdef __cplusplus
}
#endif

#endif
