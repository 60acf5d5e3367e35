// swy_exchange: one rank of a ring or all-to-all exchange between processes that may sit on
// different hosts (network namespaces in the netns tests). Public C API only. Exit status:
// 0 when every message from a live peer arrived intact (and, without --tolerate-failures, no
// endpoint failed), 1 otherwise, 2 for a bad command line.
#include <cstdio>

#include "exchange.h"
#include "exchange_options.h"

int main(int argc, char** argv) {
    const swy::netns::ExchangeOptions opts = swy::netns::parse_exchange_options(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // the test scripts follow progress line by line
    swy::netns::Exchange ex(opts);
    bool ok = ex.setup();
    ok = ok && ex.run_rounds();
    ok = ok && ex.finish();
    // Close even after a failure, so that live peers see an orderly goodbye where possible.
    ok = ex.close_endpoints() && ok;
    ex.print_summary(ok);
    return ok ? 0 : 1;
}
