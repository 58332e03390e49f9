//===- pipeline_bench.cpp - Compiled pipelines on this machine --*- C++ -*-===//
//
// Prints one table about compiled GPipe pipelines on the CPU backend:
//
//   1. Pipeline efficiency for K = 2 and M in {1, 2, 4, 8, 16} on a
//      balanced MLP (every layer a 512 x 512 linear + ReLU, so two stages
//      get the same work): measured busy time over wall time (mean over
//      ranks and steps, the first step left out) next to the ideal
//      M / (M + K - 1), and throughput relative to the same model at K = 1
//      with the same M.
//   2. The step's non-GEMM overhead at K = 1, M = 1: step time over the
//      time spent inside sgemm (gpipe_rt_cpu_set_gemm_timing).
//   3. Compile time (gpipe-compile to a shared library, wall clock) for
//      100-, 1,000- and 10,000-layer MLPs, and for GPT presets of 1,000,
//      2,000, 4,000 and 10,000 blocks (quick: 250, 500, 1,000) with the
//      time per block and the compiler's peak resident memory: linear in
//      depth is the target, 10,000 blocks in under 5 minutes.
//   4. Size against M: the GPT preset at K = 4 with M = 8 and M = 1024
//      (two samples per micro-batch): bytes of the scheduled, planned IR
//      (`--emit scheduled`), bytes of the shared library, and compile time
//      (best of three).
//      Micro-batch loops keep the first two flat in M; the targets are 1.1x
//      for sizes and 1.5x for compile time.
//
// Models are compiled by the gpipe-compile next to this build and trained
// in process by the runtime engine, exactly as gpipe-run does (one thread
// per rank, one BLAS thread each). Usage: pipeline_bench [--steps N]
// [--quick] (--quick: fewer steps, no 10,000-layer compile).
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Engine.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace gpipe::rt;

namespace {

/// Runs gpipe-compile with `args` (words separated by spaces) and its
/// output on /dev/null; returns wall seconds, or -1 on failure. `peakBytes`,
/// when given, gets the compiler's peak resident memory.
double compile(const std::string &args, const std::string &output,
               double *peakBytes = nullptr) {
  std::vector<std::string> words = {GPIPE_COMPILE};
  std::string line = args + " --quiet -o " + output;
  for (size_t at = 0; at < line.size();) {
    size_t end = line.find(' ', at);
    if (end == std::string::npos)
      end = line.size();
    if (end > at)
      words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  std::vector<char *> argv;
  for (std::string &word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      dup2(null, STDOUT_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  bool waited = pid > 0 && wait4(pid, &status, 0, &usage) == pid;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!waited || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "pipeline_bench: failed: %s\n", line.c_str());
    return -1;
  }
  if (peakBytes)
    *peakBytes = double(usage.ru_maxrss) * 1024.0;
  return seconds;
}

struct Measurement {
  bool ok = false;
  double efficiency = 0, stepSeconds = 0, samplesPerSecond = 0;
  /// Time inside sgemm per counted step (when timing is on).
  double gemmSeconds = 0;
};

Measurement train(const std::string &path, int steps) {
  Measurement m;
  ModelImage image;
  Status s = ModelImage::load(path, image);
  if (!s.ok()) {
    std::fprintf(stderr, "pipeline_bench: %s\n", s.message().c_str());
    return m;
  }
  Engine engine(std::move(image));
  RunOptions options;
  options.steps = steps;
  RunResult result;
  // GEMM time of the counted steps: from the end of the first step on.
  uint64_t gemmAfterFirst = 0;
  options.onStep = [&](const StepMetrics &step) {
    if (step.step == 1)
      gemmAfterFirst = gpipe_rt_cpu_gemm_nanoseconds();
  };
  s = engine.run(options, result);
  if (!s.ok()) {
    std::fprintf(stderr, "pipeline_bench: %s\n", s.message().c_str());
    return m;
  }
  // Leave out the first step (page faults, caches, thread start-up).
  double busy = 0, seconds = 0, samples = 0;
  int counted = 0;
  for (size_t i = result.steps.size() > 1 ? 1 : 0; i < result.steps.size();
       ++i) {
    const StepMetrics &step = result.steps[i];
    double mean = 0;
    for (double b : step.busyFraction)
      mean += b;
    busy += mean / double(step.busyFraction.size());
    seconds += step.seconds;
    samples += step.samplesPerSecond * step.seconds;
    ++counted;
  }
  m.ok = counted > 0;
  m.efficiency = busy / counted;
  m.stepSeconds = seconds / counted;
  m.samplesPerSecond = samples / seconds;
  m.gemmSeconds =
      double(gpipe_rt_cpu_gemm_nanoseconds() - gemmAfterFirst) * 1e-9 / counted;
  return m;
}

} // namespace

int main(int argc, char **argv) {
  ensureSingleThreadedBlas(argv);
  std::optional<gpipe::bench::Options> parsed =
      gpipe::bench::parseOptions(argc, argv, "pipeline_bench", 8, 3);
  if (!parsed)
    return 2;
  const gpipe::bench::Options &opts = *parsed;
  std::string dir = gpipe::bench::makeTempDir("gpipe-bench");
  const std::string model = "--preset mlp --depth 7 --width 512 "
                            "--in-features 512 --classes 512 --batch 512";

  std::printf("gpipe pipeline benchmark (CPU backend, %ld cores)\n",
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("model: MLP of 8 linear+ReLU layers 512 x 512, batch 512, "
              "GPipe schedule, remat stage, SGD; %d steps, first left out\n\n",
              opts.steps);
  std::printf("  K   M  efficiency  ideal M/(M+K-1)  ratio  step (s)  "
              "samples/s  vs K=1\n");
  const int K = 2;
  bool targetMet = true;
  for (int M : {1, 2, 4, 8, 16}) {
    std::string one = dir + "/k1.so", two = dir + "/k2.so";
    std::string mb = " --microbatches " + std::to_string(M);
    if (compile(model + " --stages 1" + mb, one) < 0 ||
        compile(model + " --stages 2" + mb, two) < 0)
      return 1;
    Measurement base = train(one, opts.steps);
    Measurement pipe = train(two, opts.steps);
    if (!base.ok || !pipe.ok)
      return 1;
    double ideal = double(M) / double(M + K - 1);
    std::printf("  %d  %2d  %10.3f  %15.3f  %5.2f  %8.4f  %9.1f  %5.2fx\n", K,
                M, pipe.efficiency, ideal, pipe.efficiency / ideal,
                pipe.stepSeconds, pipe.samplesPerSecond,
                pipe.samplesPerSecond / base.samplesPerSecond);
    if (M == 8 && pipe.efficiency < 0.9 * ideal)
      targetMet = false;
  }
  std::printf("  target K=2, M=8: efficiency >= 0.9 x 8/9 = 0.800: %s\n\n",
              targetMet ? "met" : "NOT met");

  {
    std::string one = dir + "/gemm.so";
    if (compile(model + " --stages 1 --microbatches 1", one) < 0)
      return 1;
    gpipe_rt_cpu_set_gemm_timing(1);
    Measurement m = train(one, opts.steps);
    gpipe_rt_cpu_set_gemm_timing(0);
    if (!m.ok)
      return 1;
    double gemmPerStep = m.gemmSeconds;
    std::printf("non-GEMM overhead (K=1, M=1): step %.4f s, GEMM %.4f s "
                "per step, step / GEMM = %.3f\n\n",
                m.stepSeconds, gemmPerStep, m.stepSeconds / gemmPerStep);
  }

  std::printf("compile time (gpipe-compile to model.so; MLP width 16, "
              "K=8, M=8):\n");
  std::printf("  layers  seconds\n");
  std::vector<int> depths = {100, 1000};
  if (!opts.quick)
    depths.push_back(10000);
  for (int depth : depths) {
    std::string args = "--preset mlp --depth " + std::to_string(depth - 1) +
                       " --width 16 --in-features 16 --classes 16 --batch 8 "
                       "--stages 8 --microbatches 8";
    double seconds = compile(args, dir + "/deep.so");
    if (seconds < 0)
      return 1;
    std::printf("  %6d  %7.2f\n", depth, seconds);
  }

  std::printf("\ncompile time against depth (GPT preset, width 16, K=4, "
              "M=4):\n");
  std::printf("  blocks  seconds  ms/block  peak RSS (MiB)\n");
  std::vector<int> blocks = opts.quick
                                ? std::vector<int>{250, 500, 1000}
                                : std::vector<int>{1000, 2000, 4000, 10000};
  double firstPerBlock = 0, lastPerBlock = 0, lastSeconds = 0;
  for (int depth : blocks) {
    std::string args = "--preset gpt --depth " + std::to_string(depth) +
                       " --width 16 --stages 4 --microbatches 4";
    double peak = 0;
    double seconds = compile(args, dir + "/deep-gpt.so", &peak);
    if (seconds < 0)
      return 1;
    double perBlock = 1e3 * seconds / depth;
    if (firstPerBlock == 0)
      firstPerBlock = perBlock;
    lastPerBlock = perBlock;
    lastSeconds = seconds;
    std::printf("  %6d  %7.1f  %8.2f  %14.0f\n", depth, seconds, perBlock,
                peak / (1024.0 * 1024.0));
  }
  std::printf("  per block, deepest / shallowest: %.2fx (linear: about 1x)",
              lastPerBlock / firstPerBlock);
  if (!opts.quick)
    std::printf("; 10,000 blocks in %.0f s (target < 300 s: %s)", lastSeconds,
                lastSeconds < 300 ? "met" : "NOT met");
  std::printf("\n");

  std::printf("\nsize against M (GPT preset, K=4, 2 samples per "
              "micro-batch, GPipe):\n");
  std::printf("     M  IR bytes  library bytes  compile (s)\n");
  struct SizeRow {
    long ir = 0, library = 0;
    double seconds = 0;
  };
  auto fileSize = [](const std::string &path) -> long {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? long(st.st_size) : -1;
  };
  std::vector<SizeRow> rows;
  for (int M : {8, 1024}) {
    std::string args = "--preset gpt --stages 4 --microbatches " +
                       std::to_string(M) + " --batch " + std::to_string(2 * M);
    SizeRow row;
    if (compile(args + " --emit scheduled", dir + "/gpt.mlir") < 0)
      return 1;
    // Best of three: the compile takes a tenth of a second, of which
    // process start-up is most, and one run is noisy.
    row.seconds = -1;
    for (int run = 0; run < 3; ++run) {
      double seconds = compile(args, dir + "/gpt.so");
      if (seconds < 0)
        return 1;
      if (row.seconds < 0 || seconds < row.seconds)
        row.seconds = seconds;
    }
    row.ir = fileSize(dir + "/gpt.mlir");
    row.library = fileSize(dir + "/gpt.so");
    rows.push_back(row);
    std::printf("  %4d  %8ld  %13ld  %11.2f\n", M, row.ir, row.library,
                row.seconds);
  }
  double irRatio = double(rows[1].ir) / double(rows[0].ir);
  double libRatio = double(rows[1].library) / double(rows[0].library);
  double timeRatio = rows[1].seconds / rows[0].seconds;
  std::printf("  M=1024 / M=8: IR %.3fx, library %.3fx (target <= 1.1x: "
              "%s), compile %.2fx (target <= 1.5x: %s)\n",
              irRatio, libRatio,
              irRatio <= 1.1 && libRatio <= 1.1 ? "met" : "NOT met", timeRatio,
              timeRatio <= 1.5 ? "met" : "NOT met");
  std::string cleanup = "rm -rf " + dir;
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
