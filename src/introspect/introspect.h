// Introspection: the one header through which tools (swy-info) look inside the library,
// beyond the public API in <switchyard/switchyard.h>. Tools include this and public headers
// only, so what they depend on is listed here, in one place, and they use the library's own
// code instead of copies of it (a copied table drifts).
//
// What it exposes, and what for:
//   - common::Config, config_table(), ConfigReader: the SWY_* table (swy-info -c) and
//     parsed values;
//   - core::Context: a context built from a configuration (cost figures, enabled transports,
//     host identity);
//   - core::Topology: the host's NUMA layout;
//   - tl::transports(), TransportEntry: every transport, its variables, address section,
//     priority and availability on this host (the Transports section);
//   - tl::shm::read_settings (into ShmConfig), the shm segment layout and ring headers: shm
//     attributes derived from the configuration;
//   - tl::verbs::read_settings, probe(), measure_registration(), rcache_page_identity(): the
//     RDMA ports start-up would see, with the same settings a worker reads;
//   - common::CostFigures and cost_figure_table(): every declared calibration figure;
//   - proto wire headers, lane_caps()/table_for() and the selector: header
//     sizes and the tables an endpoint builds, through the library's own code;
//   - each transport's lane_attr() and cost function (self, shm, tcp, verbs): the lane
//     attributes an endpoint would get, for tables printed without a peer;
//   - tl::cma::parse_cma_mode: swy-info --proto reads SWY_CMA the way a worker does, to show
//     whether the CPU-copy zero-copy rows are in the table;
//   - tl::tcp wire constants (kMaxFrameBody): --calibrate splits loopback tcp time into
//     per-fragment overhead and wire time with the frame size the transport really uses;
//   - proto::detect_oversubscription: swy-info --proto says whether the selector treats the
//     host as oversubscribed (GET without a split), with the same detection a worker runs.
//
// Everything here is internal and may change between versions; applications use the public
// API only. Additive: a tool that needs more adds it here, with a line above saying why.
#pragma once

#include "common/config.h"
#include "common/config_reader.h"
#include "common/cost_figures.h"
#include "core/context.h"
#include "core/topology.h"
#include "protocols/lane_caps.h"
#include "protocols/oversubscription.h"
#include "protocols/select.h"
#include "protocols/wire.h"
#include "transports/cma/cma.h"
#include "transports/registry.h"
#include "transports/self/self_costs.h"
#include "transports/self/self_iface.h"
#include "transports/shm/ring.h"
#include "transports/shm/segment_layout.h"
#include "transports/shm/shm_costs.h"
#include "transports/shm/shm_iface.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_costs.h"
#include "transports/tcp/tcp_iface.h"
#include "transports/tcp/tcp_wire.h"
#include "transports/verbs/lane_attr.h"
#include "transports/verbs/lane_costs.h"
#include "transports/verbs/verbs_open.h"
#include "transports/verbs/verbs_transport.h"
