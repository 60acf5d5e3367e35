// gen_seeds TARGET DIR: write the seed inputs of a fuzz target (seeds.cpp) into DIR as
// seed-N files, for libFuzzer to start from (test/fuzz/run.sh).
#include <cstdio>
#include <string>

#include "targets.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: gen_seeds TARGET DIR\n");
        return 2;
    }
    const auto inputs = swy::fuzz::seeds(argv[1]);
    if (inputs.empty()) {
        std::fprintf(stderr, "gen_seeds: unknown target '%s'\n", argv[1]);
        return 2;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string path = std::string(argv[2]) + "/seed-" + std::to_string(i);
        FILE* f = std::fopen(path.c_str(), "wb");
        bool ok = f != nullptr &&
                  std::fwrite(inputs[i].data(), 1, inputs[i].size(), f) == inputs[i].size();
        if (f != nullptr && std::fclose(f) != 0) ok = false;
        if (!ok) {
            std::perror(path.c_str());
            return 1;
        }
    }
    return 0;
}
