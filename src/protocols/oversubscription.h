// Whether the processes of the job on this host outnumber its cores: then a peer is often
// descheduled, and a protocol that needs the peer's CPU after the receiver matched (the
// pipeline's fragments, PUT's write, a split GET's tail) waits for that peer's next time
// slice, milliseconds under load. The selector then prefers GET, which the receiver runs
// alone (select.h, SelectOverrides::oversubscribed), and the receiver never splits a GET.
//
// Crowded, with many processes per core, even an eager message of several fragments waits:
// for the descheduled receiver to free ring cells, once per ring-full, with every sender of
// the host sharing that ring. Then GET starts at the first size that needs a second fragment
// (SelectOverrides::crowded). With 2-4 processes per core the scheduler runs the receiver
// soon enough that eager streams faster: 4 ranks on 2 cores, osu_mbw_mr at 16 KiB read
// 14.8 GB/s as eager and 6.7 as GET; 64 KiB all-to-all at 8 ranks 0.87x the best of ob1 and
// pml ucx as eager, 0.93x as GET; at 16 ranks 3.48x as eager, 1.17x as GET.
#pragma once

#include <string>

namespace swy::common {
class Config;
}

namespace swy::proto {

/// The answer and where it came from (printed in protocol tables and by swy-info).
struct Oversubscription {
    bool busy = false;
    bool crowded = false;  ///< more than SWY_CROWDED_PROCS_PER_CORE processes per core
    std::string why;       ///< e.g. "16 local processes on 2 cores", "SWY_OVERSUBSCRIBED=yes"
};

/// Processes of the job on this host: SWY_LOCAL_PROCS, else the launcher's local size
/// (OMPI_COMM_WORLD_LOCAL_SIZE from Open MPI, MPI_LOCALNRANKS from MPICH's Hydra), else 0
/// (unknown).
unsigned local_processes(const common::Config& config);

/// Cores this process's job can use: the CPUs of its affinity mask when it has more than one
/// (a cpuset), else the online CPUs (a process bound to one core shares the host with the
/// ranks bound to the others).
unsigned usable_cores();

/// SWY_OVERSUBSCRIBED: "yes" (busy and crowded) or "no" (neither) as given; "auto": busy when
/// local_processes() > usable_cores(), crowded when local_processes() > usable_cores() times
/// SWY_CROWDED_PROCS_PER_CORE; neither when the local count is unknown. One process per core is not: each
/// sender has its own core, and a split GET (two cores copying) measured 2.5-9x a plain GET
/// at 4 MiB with 2 processes on 2 cores here; "yes" covers a host loaded by other jobs.
Oversubscription detect_oversubscription(const common::Config& config);

}  // namespace swy::proto
