//===- BenchCommon.h - What the compiled-model benchmarks share -*- C++ -*-===//
//
// The command line every benchmark that compiles models takes
// (`[--steps N] [--quick]`), the scratch folder its models go to, running
// the gpipe-compile next to the build (GPIPE_COMPILE) and medians.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_BENCH_BENCHCOMMON_H
#define GPIPE_BENCH_BENCHCOMMON_H

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

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

/// The benchmark's command line as typed, for the first line of its output
/// ("$ build/bench/... --steps 8").
inline std::string commandLine(int argc, char **argv) {
  std::string line;
  for (int i = 0; i < argc; ++i)
    line += (i ? " " : "") + std::string(argv[i]);
  return line;
}

/// A fresh folder under /tmp named after `prefix` (/tmp if none can be
/// made).
inline std::string makeTempDir(const std::string &prefix) {
  std::string pattern = "/tmp/" + prefix + "-XXXXXX";
  const char *dir = mkdtemp(pattern.data());
  return dir ? std::string(dir) : std::string("/tmp");
}

#ifdef GPIPE_COMPILE
/// Runs gpipe-compile with `args` (quiet, output to `output`, its messages
/// to `log`); "" on success, else its last output line.
inline std::string compile(const std::string &args, const std::string &output,
                           const std::string &log) {
  std::string command = std::string(GPIPE_COMPILE) + " " + args +
                        " --quiet -o " + output + " > " + log + " 2>&1";
  if (std::system(command.c_str()) == 0)
    return "";
  std::string last;
  if (FILE *f = std::fopen(log.c_str(), "r")) {
    char line[1024];
    while (std::fgets(line, sizeof line, f))
      if (line[0] != '\n')
        last = line;
    std::fclose(f);
  }
  while (!last.empty() && (last.back() == '\n' || last.back() == '\r'))
    last.pop_back();
  return last.empty() ? "gpipe-compile failed" : last;
}
#endif

/// The median (NaN for none).
inline double median(std::vector<double> values) {
  if (values.empty())
    return std::nan("");
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace gpipe::bench

#endif // GPIPE_BENCH_BENCHCOMMON_H
