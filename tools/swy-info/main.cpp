// swy-info: what Switchyard finds on this host and how it is configured.
//
// Flags are dispatched through one table (kOptions) so that adding one is a single line. An
// action may accept value flags ("--proto --tls shm"); those follow it on the command line.
#include <cstdio>
#include <cstring>
#include <vector>

#include "args.h"
#include "sections.h"

namespace {

using swy::info::Args;

/// One command-line action.
struct Option {
    const char* short_name;       ///< "-c", or nullptr
    const char* long_name;        ///< "--config"
    const char* value_flags[3];   ///< flags taking a value that may follow it; nullptr-ended
    const char* switch_flags[2];  ///< flags without a value that may follow it ("--force")
    const char* synopsis;         ///< value flags as shown in the usage text
    const char* help;             ///< one line for the usage text
    int (*run)(const Args&);      ///< the action; returns the exit status
};

int run_usage(const Args&);

const Option kOptions[] = {
    {"-c",
     "--config",
     {},
     {},
     "",
     "every SWY_* variable: type, default, value set, help",
     [](const Args&) { return swy::info::print_config(); }},
    {nullptr,
     "--proto",
     {"--tls", "--memtype"},
     {},
     " [--tls shm|self|tcp|verbs] [--memtype host]",
     "protocol tables an endpoint would get here, with the reason for every range",
     swy::info::print_proto},
    {nullptr,
     "--calibrate",
     {"--output"},
     {"--force"},
     " [--output PATH] [--force]",
     "measure this host's cost figures and write the calibration file (needs HOME or "
     "--output; refused on a busy host unless --force)",
     swy::info::run_calibrate},
    {"-h", "--help", {}, {}, "", "this text", run_usage},
};

/// Write the usage text to @p out.
void print_usage(std::FILE* out) {
    std::fprintf(out,
                 "Usage: swy-info [option [value flags]]...\n"
                 "Without an option: version, transports, PIO pool and host topology.\n\n");
    for (const Option& opt : kOptions) {
        char names[48];
        std::snprintf(names, sizeof(names), "%s%s%s", opt.short_name ? opt.short_name : "",
                      opt.short_name ? ", " : "    ", opt.long_name);
        std::fprintf(out, "  %-18s %s\n", names, opt.help);
        if (opt.synopsis[0] != '\0')
            std::fprintf(out, "  %-18s %s%s\n", "", opt.long_name, opt.synopsis);
    }
}

/// Action of -h: usage on stdout, success.
int run_usage(const Args&) {
    print_usage(stdout);
    return 0;
}

/// The option named @p arg (short or long form), or nullptr.
const Option* find_option(const char* arg) {
    for (const Option& opt : kOptions) {
        if ((opt.short_name && std::strcmp(arg, opt.short_name) == 0) ||
            std::strcmp(arg, opt.long_name) == 0) {
            return &opt;
        }
    }
    return nullptr;
}

/// Whether @p opt accepts the value flag @p arg.
bool takes_value_flag(const Option& opt, const char* arg) {
    for (const char* flag : opt.value_flags) {
        if (flag != nullptr && std::strcmp(flag, arg) == 0) return true;
    }
    return false;
}

/// Whether @p opt accepts the switch @p arg.
bool takes_switch(const Option& opt, const char* arg) {
    for (const char* flag : opt.switch_flags) {
        if (flag != nullptr && std::strcmp(flag, arg) == 0) return true;
    }
    return false;
}

/// One action to run and the values given to it.
struct Invocation {
    const Option* option;
    Args args;
};

}  // namespace

/// Runs the summary without arguments, else each given action in order (stopping at the
/// first that fails). Everything is parsed before anything runs: an unknown argument, a value
/// flag that does not belong to the action before it, or a missing value prints the usage
/// on stderr and exits 2. -h anywhere prints the usage and runs nothing else (so that
/// "--calibrate --help" explains instead of calibrating).
int main(int argc, char** argv) {
    if (argc < 2) return swy::info::print_summary();
    std::vector<Invocation> todo;
    for (int i = 1; i < argc; ++i) {
        if (const Option* opt = find_option(argv[i])) {
            todo.push_back({opt, {}});
            continue;
        }
        if (!todo.empty() && takes_switch(*todo.back().option, argv[i])) {
            todo.back().args.values.emplace_back(argv[i], "");
            continue;
        }
        if (!todo.empty() && takes_value_flag(*todo.back().option, argv[i])) {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "swy-info: %s needs a value\n", argv[i]);
                return 2;
            }
            todo.back().args.values.emplace_back(argv[i], argv[i + 1]);
            ++i;
            continue;
        }
        std::fprintf(stderr, "swy-info: unknown option '%s'%s\n", argv[i],
                     todo.empty() ? "" : " here (value flags follow the action they modify)");
        print_usage(stderr);
        return 2;
    }
    for (const Invocation& inv : todo) {
        if (inv.option->run == run_usage) return run_usage(inv.args);
    }
    for (const Invocation& inv : todo) {
        int rc = inv.option->run(inv.args);
        if (rc != 0) return rc;
    }
    return 0;
}
