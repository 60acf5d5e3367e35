// Whether the processes of the job on this host outnumber its cores: then a peer is often
// descheduled, and a protocol that needs the peer's CPU after the receiver matched (the
// pipeline's fragments, PUT's write, a split GET's tail) waits for that peer's next time
// slice, milliseconds under load. The selector then prefers GET, which the receiver runs
// alone (select.h, SelectOverrides::oversubscribed), and the receiver never splits a GET.
//
// Only many processes per core count (more than SWY_OVERSUBSCRIBED_PER_CORE, default 4): with
// 2-4 per core the scheduler runs a waiting peer soon enough that the idle host's choice
// streams faster. Measured on 2 cores, 4 ranks (2 per core), osu_mbw_mr: 16 KiB 14.8 GB/s as
// eager against 6.7 as GET after one fragment; 1-4 MiB 0.89-1.19x the best of ob1 and pml
// ucx with the split against 0.81-1.04x without. 64 KiB all-to-all: at 8 ranks (4 per core)
// 0.87x the best as eager, 0.93x as GET; at 16 ranks (8 per core) 3.48x as eager, 1.17x as
// GET.
#pragma once

#include <string>

namespace swy::common {
class Config;
}

namespace swy::proto {

/// The answer and where it came from (printed in protocol tables and by swy-info).
struct Oversubscription {
    bool busy = false;
    std::string why;  ///< e.g. "16 local processes on 2 cores", "SWY_OVERSUBSCRIBED=yes"
};

/// Processes of the job on this host: SWY_LOCAL_PROCS, else the launcher's local size
/// (OMPI_COMM_WORLD_LOCAL_SIZE from Open MPI, MPI_LOCALNRANKS from MPICH's Hydra), else 0
/// (unknown).
unsigned local_processes(const common::Config& config);

/// Cores this process's job can use: the CPUs of its affinity mask when it has more than one
/// (a cpuset), else the online CPUs (a process bound to one core shares the host with the
/// ranks bound to the others).
unsigned usable_cores();

/// SWY_OVERSUBSCRIBED: "yes" or "no" as given; "auto": local_processes() > usable_cores()
/// times SWY_OVERSUBSCRIBED_PER_CORE, not oversubscribed when the local count is unknown.
/// One process per core is far from it: each sender has its own core, and a split GET (two
/// cores copying) measured 2.5-9x a plain GET at 4 MiB with 2 processes on 2 cores here;
/// "yes" covers a host loaded by other jobs.
Oversubscription detect_oversubscription(const common::Config& config);

}  // namespace swy::proto
