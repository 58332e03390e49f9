//===- BenchCommon.h - What the compiled-model benchmarks share -*- C++ -*-===//
//
// The command line every benchmark that compiles models takes
// (`[--steps N] [--quick]`) and the scratch folder its models go to.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_BENCH_BENCHCOMMON_H
#define GPIPE_BENCH_BENCHCOMMON_H

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <unistd.h>

namespace gpipe::bench {

struct Options {
  int steps = 8;
  bool quick = false;
};

/// Parses `[--steps N] [--quick]` (N at least 2; --quick caps it at
/// `quickSteps`); prints the usage of `name` and returns nullopt on
/// anything else.
inline std::optional<Options> parseOptions(int argc, char **argv,
                                           const char *name, int steps,
                                           int quickSteps) {
  Options opts;
  opts.steps = steps;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      opts.quick = true;
    } else if (arg == "--steps" && i + 1 < argc) {
      opts.steps = std::max(2, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--steps N] [--quick]\n", name);
      return std::nullopt;
    }
  }
  if (opts.quick)
    opts.steps = std::min(opts.steps, quickSteps);
  return opts;
}

/// A fresh folder under /tmp named after `prefix` (/tmp if none can be
/// made).
inline std::string makeTempDir(const std::string &prefix) {
  std::string pattern = "/tmp/" + prefix + "-XXXXXX";
  const char *dir = mkdtemp(pattern.data());
  return dir ? std::string(dir) : std::string("/tmp");
}

} // namespace gpipe::bench

#endif // GPIPE_BENCH_BENCHCOMMON_H
