// The protocol table of non-contiguous data (iov and generic datatypes, switchyard/datatype.h):
// derived from an endpoint's host table, so the thresholds are the same, with what changes
// for data that has no contiguous user buffer:
//  * eager ranges keep their protocol: each packet is packed from the data straight into the
//    lane's cell (tl::Endpoint::am_send_packed); the table splits them where one packet ends
//    and fragments begin (Endpoint::single_packet_max);
//  * every rendezvous range becomes rndv_pipeline: zero-copy GET or PUT would read or write
//    the user's buffer as contiguous bytes, which it is not. The pipeline packs each fragment
//    as it is sent (only as many in flight as the lane has cells) and the receiver unpacks it
//    at its offset, so no side ever holds a copy of the whole message.
// A receive into non-contiguous data answers any rendezvous with the pipeline too
// (rndv/rendezvous.cpp, start_receive).
#pragma once

#include <cstddef>

#include "protocols/proto_table.h"

namespace swy::proto {

/// The table for non-contiguous sends on an endpoint whose host table is @p host, whose
/// single packets carry up to @p single_packet_max bytes and fragments @p fragment_max.
/// Ranges are by packed length. Printed by swy_ep_print_datatype_protocols().
ProtoTable datatype_table(const ProtoTable& host, size_t single_packet_max, size_t fragment_max);

}  // namespace swy::proto
