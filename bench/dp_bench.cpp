//===- dp_bench.cpp - Pipelines inside data-parallel replicas --*- C++ -*-===//
//
// Two tables for PP x DP (K ranks x D replicas):
//
//   simulated  The GPT preset at (K, D) = (4, 1), (4, 2), (4, 4) under the
//              H200 profile (NVLink between every pair of GPUs), weak
//              scaling: each replica keeps a batch of 32 in M = 8
//              micro-batches, so the global batch is 32 D. The step time is
//              the compiler's (metadata predicted.step_seconds: the Timeline
//              simulation of every rank's program with the cost model's
//              stage and all-reduce times); samples/s = global batch / step
//              time, next to the ideal D x (samples/s at D = 1).
//   measured   This machine's CPU, threads: a small GPT at (K, D) = (1, 1),
//              (1, 2), (2, 1) with the same global batch and M x D = 4
//              micro-batches, trained for --steps steps; the median
//              samples/s over all steps but the first. (With as many cores
//              as workers, D = 2 and K = 2 both use two.)
//
// Usage: dp_bench [--steps N] [--quick] (--quick: 4 steps).
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"
#include "gpipe/Runtime/Engine.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

using namespace gpipe::rt;

namespace {

struct Result {
  std::string error;
  double predictedStep = std::nan("");
  double samplesPerSecond = std::nan("");
  int64_t batch = 0;
};

/// Compiles `args` and reads its prediction; with `steps` > 0 also trains
/// it on threads and measures samples/s.
Result run(const std::string &args, const std::string &dir,
           const std::string &name, int steps) {
  Result r;
  std::string path = dir + "/" + name + ".so";
  r.error = gpipe::bench::compile(args, path, dir + "/" + name + ".log");
  if (!r.error.empty())
    return r;
  ModelImage image;
  if (Status s = ModelImage::load(path, image); !s.ok()) {
    r.error = s.message();
    return r;
  }
  r.predictedStep = image.metadata().predictedStepSeconds;
  r.batch = image.metadata().batchSize();
  if (steps <= 0)
    return r;
  Engine engine(std::move(image));
  RunOptions options;
  options.steps = steps;
  RunResult result;
  if (Status s = engine.run(options, result); !s.ok()) {
    r.error = s.message();
    return r;
  }
  std::vector<double> rates;
  for (size_t i = result.steps.size() > 1 ? 1 : 0; i < result.steps.size(); ++i)
    rates.push_back(result.steps[i].samplesPerSecond);
  r.samplesPerSecond = gpipe::bench::median(rates);
  return r;
}

} // namespace

int main(int argc, char **argv) {
  ensureSingleThreadedBlas(argv);
  std::optional<gpipe::bench::Options> parsed =
      gpipe::bench::parseOptions(argc, argv, "dp_bench", 12, 4);
  if (!parsed)
    return 2;
  const gpipe::bench::Options &opts = *parsed;
  std::printf("$ %s\n", gpipe::bench::commandLine(argc, argv).c_str());
  std::string dir = gpipe::bench::makeTempDir("gpipe-dp-bench");
  auto start = std::chrono::steady_clock::now();

  // Simulated: the GPT preset on H200s, weak scaling in D.
  const char *gpt = "--preset gpt --depth 16 --width 1024 --heads 16 "
                    "--seq-len 512 --vocab 32000 --profile h200";
  std::printf("simulated: GPT preset (16 blocks, width 1024, 16 heads, "
              "sequence 512, vocabulary 32000), H200 profile with NVLink "
              "between GPUs, K=4 ranks, M=8 micro-batches of 4 per replica, "
              "1F1B\n");
  std::printf("%4s %4s %8s %14s %12s %12s %11s\n", "K", "D", "batch",
              "step (pred.)", "samples/s", "ideal", "efficiency");
  double base = std::nan("");
  for (int d : {1, 2, 4}) {
    std::string args = std::string(gpt) +
                       " --stages 4 --microbatches 8 "
                       "--schedule 1f1b --batch " +
                       std::to_string(32 * d) + " --data-parallel " +
                       std::to_string(d);
    Result r = run(args, dir, "sim-d" + std::to_string(d), 0);
    if (!r.error.empty()) {
      std::printf("%4d %4d  error: %s\n", 4, d, r.error.c_str());
      continue;
    }
    double rate = double(r.batch) / r.predictedStep;
    if (d == 1)
      base = rate;
    double ideal = base * d;
    std::printf("%4d %4d %8lld %12.3f ms %12.0f %12.0f %10.1f%%\n", 4, d,
                (long long)r.batch, r.predictedStep * 1e3, rate, ideal,
                100.0 * rate / ideal);
  }

  // Measured: this machine, threads.
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("\nmeasured: small GPT (2 blocks, width 64, sequence 32), "
              "batch 16, M x D = 4, this CPU (%ld cores), one thread per "
              "worker, %d steps, median samples/s over all but the first\n",
              cores, opts.steps);
  std::printf("%4s %4s %4s %12s %10s\n", "K", "D", "M", "samples/s",
              "vs K=1 D=1");
  const char *small = "--preset gpt --depth 2 --width 64 --heads 4 "
                      "--seq-len 32 --batch 16";
  double single = std::nan("");
  struct Shape {
    int k, d, m;
  };
  for (Shape shape : {Shape{1, 1, 4}, Shape{1, 2, 2}, Shape{2, 1, 4}}) {
    std::string args = std::string(small) + " --stages " +
                       std::to_string(shape.k) + " --microbatches " +
                       std::to_string(shape.m) + " --data-parallel " +
                       std::to_string(shape.d);
    Result r =
        run(args, dir,
            "run-k" + std::to_string(shape.k) + "d" + std::to_string(shape.d),
            opts.steps);
    if (!r.error.empty()) {
      std::printf("%4d %4d %4d  error: %s\n", shape.k, shape.d, shape.m,
                  r.error.c_str());
      continue;
    }
    if (shape.k == 1 && shape.d == 1)
      single = r.samplesPerSecond;
    std::printf("%4d %4d %4d %12.0f %9.2fx\n", shape.k, shape.d, shape.m,
                r.samplesPerSecond, r.samplesPerSecond / single);
  }
  std::printf("total %.0f s\n", std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
  std::string cleanup = "rm -rf " + dir;
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
