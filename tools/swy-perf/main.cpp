// swy-perf: two-process latency / bandwidth / message-rate benchmark over the public C API.
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "am_runner.h"
#include "bootstrap.h"
#include "options.h"
#include "report.h"
#include "rma_runner.h"
#include "runner.h"
#include "session.h"

namespace {

using namespace swy::perf;

bool pin(int cpu) {
    if (cpu < 0) return true;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        std::fprintf(stderr, "swy-perf: cannot pin to cpu %d: ", cpu);
        std::perror(nullptr);
        return false;
    }
    return true;
}

// Everything after the bootstrap; returns the process exit status.
int run(const Options& opts, Bootstrap& boot) {
    Role role = boot.role();
    if (!pin(opts.cpus[role == Role::kServer ? 1 : 0])) return 1;

    Session session;
    if (!session.open(opts, boot)) return 1;
    bool reporting = role != Role::kServer;
    std::unique_ptr<Reporter> reporter;
    if (reporting) {
        reporter = std::make_unique<Reporter>(opts, session.protocol_table());
        reporter->begin(session.describe());
    }
    auto run_sizes = [&](auto& runner) {
        for (size_t size : opts.sizes) {
            Result result;
            if (!runner.run_size(size, &result)) return false;
            if (reporting) reporter->row(result);
        }
        return true;
    };
    bool ran;
    if (opts.is_one_sided()) {
        RmaRunner runner(opts, session, boot);
        ran = run_sizes(runner);
    } else if (opts.is_am()) {
        AmRunner runner(opts, session, boot);
        ran = run_sizes(runner);
    } else {
        Runner runner(opts, session, boot);
        ran = run_sizes(runner);
    }
    if (!ran) return 1;
    // Teardown in step with the peer: nobody closes its endpoint while the peer may still be
    // sending to it, and nobody destroys its worker while the peer's close may still need it.
    auto progress = [&session] { session.progress(); };
    if (!boot.barrier(progress)) {
        std::fprintf(stderr, "swy-perf: the peer went away at the end\n");
        return 1;
    }
    bool closed = session.close_endpoint();
    if (!boot.barrier(progress)) {
        std::fprintf(stderr, "swy-perf: the peer went away while closing\n");
        return 1;
    }
    session.close();
    return closed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    Options opts = parse_options(argc, argv);
    Bootstrap boot;  // forks here when no --server/--client: before any Switchyard object
    if (!boot.start(opts)) return 1;
    int rc = run(opts, boot);
    // Forked child: leave without running the parent's atexit handlers or flushing its stdio
    // buffers twice.
    if (boot.role() == Role::kServer && opts.server_port < 0 && !boot.launched()) {
        boot.finish(false);
        std::fflush(nullptr);
        _exit(rc);
    }
    int child_rc = boot.finish(rc != 0);
    if (rc == 0 && child_rc != 0) {
        std::fprintf(stderr, "swy-perf: server process failed (exit status %d)\n", child_rc);
        rc = 1;
    }
    return rc;
}
