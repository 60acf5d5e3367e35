// The sections swy-info prints. Each writes to stdout; the top-level ones return a process
// exit status (0 on success) so main.cpp can dispatch flags through one table.
#pragma once

#include <string>

namespace swy::common {
class Config;
}
namespace swy::core {
class Context;
}

namespace swy::tl::verbs {
struct VerbsConfig;
}

namespace swy::info {

struct Args;

// --- Top-level actions (one per flag) ---------------------------------------------------

/// Default report (no arguments): version, transports with the shm attributes, the PIO pool
/// of a freshly created worker, and the host topology. Reads SWY_* from the environment;
/// returns 1 if the configuration does not parse or the context cannot be created.
int print_summary();

/// `-c` / `--config`: every configuration variable with type, default, the value set in the
/// environment (if any) and help text. Returns 1 if an environment value does not parse (the
/// table is printed anyway, so the user sees what is accepted).
int print_config();

/// `--proto [--tls shm|self] [--memtype host]`: the protocol tables an endpoint would get on
/// this host (both lanes when --tls is absent), computed by the library's selector from a
/// context made from the environment, so SWY_PROTO, SWY_RNDV_THRESH, ... show their effect.
/// Returns 2 for a memory type other than host or an unknown --tls, 1 if the configuration
/// or context fails.
int print_proto(const Args& args);

/// `--calibrate [--output PATH] [--force]`: measure this host twice (each round about 5 s of
/// two-process copy, CMA and latency tests), write the better figure of the two rounds to PATH (default SWY_CALIBRATION_FILE, else
/// common::CostFigures::default_path(); written by CostFigures::save(): directory created
/// 0700, file 0600, replaced by rename, a symlink refused), then print the figures and the
/// shm tables they give. Returns 1 if there is no path (HOME unset and neither --output nor
/// SWY_CALIBRATION_FILE), the host is busy (load average above its usable CPUs: checked
/// before measuring) or a figure differs by more than 2x between the rounds (calibrate_guard.h)
/// and --force is not given, the file cannot be written or is not accepted when read back, or
/// the configuration does not parse. Forks; call it before starting threads.
int run_calibrate(const Args& args);

// --- Parts of the summary ---------------------------------------------------------------

/// "Transports": for each known transport whether SWY_TLS enables it (@p context) and whether
/// it works on this host, then the shm attributes derived from @p config.
void print_transports(const common::Config& config, const core::Context& context);

/// "PIO pool": creates a context and worker through the public C API (reading the
/// environment like an application would) and prints the worker's PIO window and policy.
/// Returns 1 if the context or worker cannot be created.
int print_pio_pool(const common::Config& config);

/// "Topology": core::Topology::describe() and the NUMA node of the calling thread.
void print_topology();

// --- Verbs (verbs_section.cpp) ---------------------------------------------------------

/// "yes: rxe0:1", or "no: <why>" for the verbs transport on this host.
std::string verbs_availability(const common::Config& config);
/// The verbs settings SWY_* gives (for probing without a worker): tl::verbs::read_settings(),
/// the worker's own reading; a setting it refuses is reported on stderr.
tl::verbs::VerbsConfig verbs_config_from(const common::Config& config);
/// The RDMA device ports found, which one would be opened, inline limit, device memory and
/// dma-buf support (each probed once).
void print_verbs_ports(const common::Config& config);

}  // namespace swy::info
