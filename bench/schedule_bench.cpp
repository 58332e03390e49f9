//===- schedule_bench.cpp - Pipeline schedules side by side -----*- C++ -*-===//
//
// Prints one table per model (the GPT preset and an MLP) with a row per
// generated schedule (gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-h2, zbv,
// dualpipev, zb-auto) and pipeline shape:
//
//   K = 2 and K = 4 ranks, M = 8: compiled and trained in process, one
//     thread per rank (as gpipe-run does); K = 8, M = 8 and 16: compiled
//     only, the numbers are the compiler's.
//   predicted  the bubble of the compiler's Timeline simulation with the cost
//              model's stage durations (metadata predicted.bubble)
//   measured   1 - mean busy fraction over ranks, median over the counted
//              steps (the first step left out)
//   closed     the schedule's own closed form where the literature has one
//              (metadata predicted.schedule_closed_form_bubble; see
//              getClosedFormIdleTime for the sources), "-" where none
//   kept KiB   per rank, the memory plan's kept activations at the rank's
//              peak (metadata ranks[].peak_kept_bytes)
//   vs 1f1b    throughput relative to 1F1B at the same K and M: median
//              samples/s when trained, predicted step time when simulated
//
// Models are compiled by the gpipe-compile next to this build. Usage:
// schedule_bench [--steps N] [--quick] (--quick: the GPT only, 4 steps).
// Both models use remat none: the zero-bubble closed forms leave out
// recomputation, so under remat stage they have none.
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"
#include "gpipe/Runtime/Engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

using namespace gpipe::rt;

namespace {

struct Row {
  std::string schedule;
  int K = 0, M = 0;
  bool simulated = false;
  /// Why there is no row (compile or run failure), else empty.
  std::string error;
  double predicted = std::nan(""), closedForm = std::nan("");
  double predictedStep = std::nan("");
  double measured = std::nan(""), samplesPerSecond = std::nan("");
  std::vector<int64_t> keptBytes;
};

Row measure(const std::string &path, bool train, int steps) {
  Row row;
  ModelImage image;
  Status s = ModelImage::load(path, image);
  if (!s.ok()) {
    row.error = s.message();
    return row;
  }
  const ModelMetadata &meta = image.metadata();
  row.predicted = meta.predictedBubble;
  if (meta.predictedScheduleClosedFormBubble)
    row.closedForm = *meta.predictedScheduleClosedFormBubble;
  row.predictedStep = meta.predictedStepSeconds;
  for (const RankPlan &rank : meta.ranks)
    row.keptBytes.push_back(rank.peakKeptBytes);
  if (!train)
    return row;
  Engine engine(std::move(image));
  RunOptions options;
  options.steps = steps;
  RunResult result;
  s = engine.run(options, result);
  if (!s.ok()) {
    row.error = s.message();
    return row;
  }
  std::vector<double> bubbles, rates;
  for (size_t i = result.steps.size() > 1 ? 1 : 0; i < result.steps.size();
       ++i) {
    const StepMetrics &step = result.steps[i];
    double busy = 0;
    for (double b : step.busyFraction)
      busy += b;
    bubbles.push_back(1.0 - busy / double(step.busyFraction.size()));
    rates.push_back(step.samplesPerSecond);
  }
  row.measured = gpipe::bench::median(bubbles);
  row.samplesPerSecond = gpipe::bench::median(rates);
  return row;
}

std::string number(double v, const char *format = "%.3f") {
  if (std::isnan(v))
    return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

std::string kept(const std::vector<int64_t> &bytes) {
  std::string text;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i)
      text += '/';
    text += bytes[i] < 0 ? std::string("?")
                         : number(double(bytes[i]) / 1024.0, "%.0f");
  }
  return text;
}

const char *const kSchedules[] = {"gpipe",     "1f1b",   "interleaved-1f1b",
                                  "zb-h1",     "zb-h2",  "zbv",
                                  "dualpipev", "zb-auto"};

struct Shape {
  int K, M;
  bool simulated;
};

void runModel(const std::string &title, const std::string &model,
              const gpipe::bench::Options &opts, const std::string &dir) {
  std::printf("%s\n  gpipe-compile %s --stages K --microbatches M "
              "--schedule S\n",
              title.c_str(), model.c_str());
  std::printf("  %-17s %2s %3s %-4s %9s %9s %7s %8s  %s\n", "schedule", "K",
              "M", "", "predicted", "measured", "closed", "vs 1f1b",
              "kept KiB per rank at peak");
  const Shape shapes[] = {
      {2, 8, false}, {4, 8, false}, {8, 8, true}, {8, 16, true}};
  for (const Shape &shape : shapes) {
    std::vector<Row> rows;
    for (const char *schedule : kSchedules) {
      std::string path = dir + "/model.so", log = dir + "/compile.log";
      std::string args = model + " --stages " + std::to_string(shape.K) +
                         " --microbatches " + std::to_string(shape.M) +
                         " --schedule " + schedule;
      Row row;
      std::string error = gpipe::bench::compile(args, path, log);
      if (error.empty())
        row = measure(path, !shape.simulated, opts.steps);
      else
        row.error = error;
      unlink(path.c_str());
      row.schedule = schedule;
      row.K = shape.K;
      row.M = shape.M;
      row.simulated = shape.simulated;
      rows.push_back(row);
    }
    const Row *base = nullptr;
    for (const Row &row : rows)
      if (row.schedule == "1f1b" && row.error.empty())
        base = &row;
    for (const Row &row : rows) {
      std::printf("  %-17s %2d %3d %-4s ", row.schedule.c_str(), row.K, row.M,
                  row.simulated ? "sim" : "run");
      if (!row.error.empty()) {
        std::string why = row.error;
        if (why.size() > 90)
          why = why.substr(0, 87) + "...";
        std::printf("n/a: %s\n", why.c_str());
        continue;
      }
      double relative = std::nan("");
      if (base && row.simulated)
        relative = base->predictedStep / row.predictedStep;
      else if (base)
        relative = row.samplesPerSecond / base->samplesPerSecond;
      std::printf("%9s %9s %7s %8s  %s\n", number(row.predicted).c_str(),
                  number(row.measured).c_str(), number(row.closedForm).c_str(),
                  (number(relative, "%.2f") + "x").c_str(),
                  kept(row.keptBytes).c_str());
    }
    std::fflush(stdout);
  }
  std::printf("\n");
}

} // namespace

int main(int argc, char **argv) {
  ensureSingleThreadedBlas(argv);
  std::optional<gpipe::bench::Options> parsed =
      gpipe::bench::parseOptions(argc, argv, "schedule_bench", 20, 4);
  if (!parsed)
    return 2;
  const gpipe::bench::Options &opts = *parsed;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("$ %s\n", gpipe::bench::commandLine(argc, argv).c_str());
  std::printf("gpipe schedule benchmark (CPU backend, %ld cores; one thread "
              "per rank, one BLAS thread each)\n",
              cores);
  std::printf("run: K ranks trained in process, %d steps, medians over all "
              "but the first%s\n",
              opts.steps,
              cores < 4 ? "; K=4 oversubscribes this machine's cores, so its "
                          "measured bubbles include waiting for a core"
                        : "");
  std::printf("sim: compiled only; predicted numbers (Timeline with the cost "
              "model), vs 1f1b from predicted step times\n");
  std::printf("closed: the schedule's own closed form, '-' where the "
              "literature has none for the shape and durations\n\n");
  auto start = std::chrono::steady_clock::now();
  std::string dir = gpipe::bench::makeTempDir("gpipe-schedule-bench");
  // remat none: the zero-bubble closed forms leave out recomputation.
  runModel("GPT preset, 14 blocks (17 layers, so that K=8 x V=2 gets 16 "
           "stages), remat none, SGD",
           "--preset gpt --depth 14 --width 64 --heads 4 --seq-len 32 "
           "--batch 16 --remat none",
           opts, dir);
  if (!opts.quick)
    runModel("MLP, 16 linear+ReLU layers 512 x 512, batch 256, remat none, SGD",
             "--preset mlp --depth 15 --width 512 --in-features 512 "
             "--classes 512 --batch 256 --remat none",
             opts, dir);
  std::printf("total %.0f s\n", std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
  std::string cleanup = "rm -rf " + dir;
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
