// Probe whether cross-memory attach (process_vm_readv) works on this host, for swy-info.
#pragma once

#include <string>

namespace swy::info {

/// Outcome of probe_cma().
struct CmaProbe {
    bool works = false;  ///< both directions read the expected bytes
    std::string why;     ///< when !works: errno text and the likely cause
};

/// Fork a child and try process_vm_readv both ways: the parent reads a buffer of the child,
/// and the child reads a buffer of the parent. The second direction matters because Yama
/// ptrace_scope=1 lets a process read its descendants only, while real peers (launched by
/// mpirun, srun, ...) are not descendants of each other; reporting "yes" on the first
/// direction alone would promise more than the library will get.
/// Blocks until the child has exited (milliseconds). Not thread-safe with respect to other
/// fork()s in the process; call it before starting threads.
CmaProbe probe_cma();

}  // namespace swy::info
