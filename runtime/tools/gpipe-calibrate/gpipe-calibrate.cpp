//===- gpipe-calibrate.cpp - Measure this machine for the cost model ------===//
//
// Measures what the compiler's cost model needs to predict a step on this
// machine without a per-model profile, through the runtime's own kernel
// entry points (so their argument checks, thread splitting and per-call cost
// are in every number):
//
//   gemm     matmul_f32's rate (FLOP/s) over a grid of shapes M x N x K,
//            each of NN, NT and TN, on one kernel thread and on every core,
//            per GEMM implementation (OpenBLAS, and libxsmm in NN and TN
//            where the runtime has it);
//   stream   binary_f32 add's rate (bytes moved per second) over operand
//            sizes from cache-resident to DRAM, on one thread and on every
//            core;
//   kernels  the time per element of the kernels a step spends its other
//            time in (softmax, layer norm and cross entropy at two row
//            lengths, GELU and the other unary ops, transposes, batch norm,
//            pooling, a convolution's im2col), their forward and backward,
//            on one thread and on every core;
//   optimizers  each optimizer's update per parameter byte, on blocks out
//            of the caches;
//   call     the time of one call that does (almost) nothing;
//   link     a rank-to-rank handoff between two threads (latency) and a
//            large copy (bandwidth).
//
// Every number is the fastest of a few repeats, each long enough to time
// (the machine's speed drifts; the fastest is what the kernel can do). The
// result is a JSON machine profile (MachineFile.h; fields in docs/Tuning.md)
// written atomically, by default where gpipe-compile looks for it.
//
//   gpipe-calibrate [-o FILE] [--quick] [--threads N]
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Engine.h"
#include "gpipe/Runtime/MachineFile.h"
#include "gpipe/Runtime/Optimizer.h"

#include "IO/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <sched.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string output;
  bool quick = false;
  int threads = 0; // 0: the CPUs this process may use
};

void printUsage(FILE *to) {
  std::fprintf(
      to, "usage: gpipe-calibrate [-o FILE] [--quick] [--threads N]\n"
          "\n"
          "Measures this machine's kernels (GEMM rate by shape and thread "
          "count,\nstreaming rate by size, the time per element of softmax, "
          "layer norm,\nGELU and the other kernels, the optimizers' updates, "
          "the cost of a\nkernel call, the rank-to-rank link) and writes the "
          "machine profile\ngpipe-compile's cost model reads when it has no "
          "--profile-file (about\n10 s; --quick: under a second, coarser).\n"
          "\n"
          "  -o FILE       where to write it (default: $GPIPE_MACHINE_FILE, "
          "else\n"
          "                $XDG_CACHE_HOME/gpipe/machine.json, else\n"
          "                ~/.cache/gpipe/machine.json: where gpipe-compile "
          "looks)\n"
          "  --quick       a coarse grid (for tests; predictions are rougher)\n"
          "  --threads N   the cores a rank may use (default: the CPUs this\n"
          "                process may run on)\n");
}

int usageError(const std::string &message) {
  std::fprintf(stderr, "gpipe-calibrate: error: %s\n", message.c_str());
  std::fprintf(stderr, "run 'gpipe-calibrate --help' for usage\n");
  return 2;
}

int availableCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    return std::max(1, CPU_COUNT(&allowed));
  return int(std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string hostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0)
    return "";
  return name;
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

/// Seconds per call of `call`: the fastest of `repeats` batches, each of
/// as many calls as fill `batchSeconds` (at least one), after one call to
/// warm up. Returns a negative number when a call fails.
double secondsPerCall(const std::function<gpipe_rt_status()> &call,
                      double batchSeconds, int repeats) {
  auto once = [&] { return call() == GPIPE_RT_SUCCESS; };
  auto start = Clock::now();
  if (!once())
    return -1;
  double first = std::chrono::duration<double>(Clock::now() - start).count();
  int64_t calls =
      std::max<int64_t>(1, int64_t(batchSeconds / std::max(first, 1e-9)));
  calls = std::min<int64_t>(calls, 100000);
  double best = first;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < calls; ++i)
      if (!once())
        return -1;
    double s = std::chrono::duration<double>(Clock::now() - t0).count() /
               double(calls);
    best = std::min(best, s);
  }
  return best;
}

std::vector<float> filled(int64_t n, float seed) {
  std::vector<float> v(size_t(std::max<int64_t>(n, 1)));
  uint32_t state = uint32_t(seed * 1000) + 1;
  for (float &x : v) {
    state = state * 1664525u + 1013904223u;
    x = float(int32_t(state >> 8) - (1 << 23)) / float(1 << 23);
  }
  return v;
}

struct Measurer {
  const Options &options;
  double batchSeconds;
  int repeats;

  /// One GEMM: matmul_f32 of [m, k] x [k, n] (each operand transposed in
  /// memory when asked), FLOP/s.
  double gemmRate(int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
    // The operands stay in the caches from call to call. Taking B from
    // outside them (a ring of copies past the L2, or past the last-level
    // cache) was tried: it moved the predictions of the benchmark models
    // less than this machine's run-to-run noise, one way for some and the
    // other way for others (docs/Tuning.md).
    static std::vector<float> a, b, c;
    a.assign(size_t(m * k), 0.5f);
    b.assign(size_t(k * n), 0.25f);
    c.resize(size_t(m * n));
    int64_t aShape[2] = {ta ? k : m, ta ? m : k};
    int64_t bShape[2] = {tb ? n : k, tb ? k : n};
    int64_t cShape[2] = {m, n};
    double s = secondsPerCall(
        [&] {
          return gpipe_rt_cpu_matmul_f32(a.data(), aShape, 2, b.data(), bShape,
                                         2, ta, tb, c.data(), cShape, 2);
        },
        batchSeconds, repeats);
    return s > 0 ? 2.0 * double(m) * double(n) * double(k) / s : -1;
  }

  /// out = lhs + rhs over `n` floats: bytes moved (12 n) per second, the
  /// cost of the call (`call` seconds, counted apart) taken out.
  double streamRate(int64_t n, double call) {
    std::vector<float> lhs = filled(n, 1), rhs = filled(n, 2);
    std::vector<float> out(lhs.size());
    int64_t shape[1] = {n};
    double s = secondsPerCall(
        [&] {
          return gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, lhs.data(), shape, 1,
                                         rhs.data(), shape, 1, out.data(),
                                         shape, 1);
        },
        batchSeconds, repeats);
    return s > 0 ? 12.0 * double(n) / std::max(s - call, s / 2) : -1;
  }

  /// A one-element add: what a kernel call costs beyond its work.
  double callSeconds() {
    float lhs = 1, rhs = 2, out = 0;
    int64_t shape[1] = {1};
    return secondsPerCall(
        [&] {
          return gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, &lhs, shape, 1, &rhs,
                                         shape, 1, &out, shape, 1);
        },
        batchSeconds, repeats);
  }
};

/// A kernel whose time per element the cost model reads for the ops named
/// `op`: its forward and (where the op has its own) backward, on one
/// representative shape; `gemmSeconds` is the part of each that its GEMMs
/// take (a convolution's), subtracted so the rest is per im2col element.
struct KernelCase {
  const char *op;
  int64_t elements; ///< its largest operand's or result's
  int64_t row;      ///< the length of the rows it works on; 0: any
  std::function<gpipe_rt_status()> forward, backward;
  std::function<double()> forwardGemm, backwardGemm;
};

/// The kernels a network step spends its non-GEMM time in, at shapes of the
/// size of a small model's activations (about 1 MiB).
std::vector<KernelCase> kernelCases(Measurer &measure) {
  static std::vector<float> x = filled(1 << 18, 1), g = filled(1 << 18, 2),
                            y(size_t(1) << 18), z(size_t(1) << 18),
                            col(size_t(1) << 20);
  static std::vector<float> scale(1024, 1.0f), bias(1024, 0.0f),
      stats1(1 << 13), stats2(1 << 13), shift(1024, 0.0f);
  const int64_t n = int64_t(1) << 18;
  std::vector<KernelCase> cases;
  auto unary = [&](const char *op, gpipe_rt_unary_op kind) {
    cases.push_back(
        {op,
         n,
         0,
         [=] { return gpipe_rt_cpu_unary_f32(kind, x.data(), y.data(), n); },
         {},
         {},
         {}});
  };
  unary("exp", GPIPE_RT_EXP);
  unary("erf", GPIPE_RT_ERF);
  unary("tanh", GPIPE_RT_TANH);
  unary("sigmoid", GPIPE_RT_SIGMOID);
  unary("relu", GPIPE_RT_RELU);
  cases.push_back(
      {"gelu",
       n,
       0,
       [=] {
         return gpipe_rt_cpu_unary_f32(GPIPE_RT_GELU, x.data(), y.data(), n);
       },
       [=] {
         return gpipe_rt_cpu_gelu_grad_f32(x.data(), g.data(), y.data(), n);
       },
       {},
       {}});
  // Row kernels at two row lengths: a row's fixed work counts at short
  // rows (attention over 32 tokens) and not at long ones.
  static const int64_t shapes[2][2] = {{n / 32, 32}, {n / 256, 256}};
  static const std::vector<int64_t> labels(size_t(n / 32), 3);
  for (const int64_t *shape : shapes) {
    int64_t row = shape[1];
    cases.push_back({"softmax",
                     n,
                     row,
                     [=] {
                       return gpipe_rt_cpu_softmax_f32(x.data(), shape, 2, 1,
                                                       y.data());
                     },
                     [=] {
                       return gpipe_rt_cpu_softmax_grad_f32(
                           x.data(), g.data(), shape, 2, 1, y.data());
                     },
                     {},
                     {}});
    cases.push_back({"layer_norm",
                     n,
                     row,
                     [=] {
                       return gpipe_rt_cpu_layer_norm_f32(
                           x.data(), shape, 2, 1, scale.data(), bias.data(),
                           1e-5f, y.data(), stats1.data(), stats2.data());
                     },
                     [=] {
                       return gpipe_rt_cpu_layer_norm_grad_f32(
                           x.data(), shape, 2, 1, scale.data(), g.data(), 1e-5f,
                           y.data(), z.data(), z.data() + row);
                     },
                     {},
                     {}});
    cases.push_back(
        {"cross_entropy",
         n,
         row,
         [=] {
           return gpipe_rt_cpu_cross_entropy_f32(
               x.data(), shape, 2, GPIPE_RT_I64, labels.data(), y.data());
         },
         [=] {
           return gpipe_rt_cpu_cross_entropy_grad_f32(
               x.data(), shape, 2, GPIPE_RT_I64, labels.data(), 1.0f, y.data());
         },
         {},
         {}});
  }
  static const int64_t heads[4] = {8, 32, 16, 64}, perm[4] = {0, 2, 1, 3};
  cases.push_back({"transpose",
                   n,
                   0,
                   [=] {
                     return gpipe_rt_cpu_transpose(GPIPE_RT_F32, x.data(),
                                                   heads, 4, perm, y.data());
                   },
                   {},
                   {},
                   {}});
  static const int64_t image[4] = {8, 32, 32, 32};
  cases.push_back(
      {"batch_norm",
       n,
       0,
       [=] {
         return gpipe_rt_cpu_batch_norm_f32(x.data(), image, 4, scale.data(),
                                            bias.data(), 1e-5f, y.data());
       },
       [=] {
         return gpipe_rt_cpu_batch_norm_grad_f32(
             x.data(), image, 4, scale.data(), g.data(), 1e-5f, shift.data(),
             y.data(), z.data(), z.data() + 32, stats1.data(), stats2.data());
       },
       {},
       {}});
  static const int64_t poolOut[4] = {8, 32, 16, 16}, window[2] = {3, 3},
                       two[2] = {2, 2}, ones[2] = {1, 1},
                       pads[4] = {1, 1, 1, 1};
  cases.push_back({"max_pool2d",
                   n,
                   0,
                   [=] {
                     return gpipe_rt_cpu_max_pool2d_f32(x.data(), image, window,
                                                        two, pads, ones,
                                                        y.data(), poolOut);
                   },
                   [=] {
                     return gpipe_rt_cpu_max_pool2d_grad_f32(
                         x.data(), image, g.data(), poolOut, window, two, pads,
                         ones, y.data());
                   },
                   {},
                   {}});
  // A 3x3 convolution of 16 channels on 32x32 images: per image one GEMM
  // [16, 144] x [144, 1024] over 144 x 1024 im2col elements.
  static const int64_t convIn[4] = {8, 16, 32, 32}, convW[4] = {16, 16, 3, 3};
  const int64_t images = 8, out = 16, depth = 144, positions = 1024;
  cases.push_back(
      {"conv2d", images * depth * positions, 0,
       [=] {
         return gpipe_rt_cpu_conv2d_f32(x.data(), convIn, g.data(), convW,
                                        bias.data(), ones, pads, ones, 1,
                                        y.data(), convIn);
       },
       [=] {
         return gpipe_rt_cpu_conv2d_grad_f32(
             x.data(), convIn, g.data(), convW, y.data(), convIn, ones, pads,
             ones, 1, z.data(), col.data(), stats1.data());
       },
       // A GEMM that fails leaves the whole call's time (its failure is
       // the conv's too, reported there).
       [=, &measure] {
         double rate = measure.gemmRate(out, positions, depth, false, false);
         return rate > 0 ? double(images) * 2.0 * out * positions * depth / rate
                         : 0.0;
       },
       [=, &measure] {
         double dw = measure.gemmRate(out, depth, positions, false, true);
         double dcol = measure.gemmRate(depth, positions, out, true, false);
         double flops = 2.0 * out * positions * depth;
         return dw > 0 && dcol > 0
                    ? double(images) * (flops / dw + flops / dcol)
                    : 0.0;
       }});
  return cases;
}

/// One-way latency of a handoff between two threads spinning on a flag
/// (what the local transport does when every rank has a core), half the
/// fastest round trip.
double handoffLatency(int rounds) {
  std::atomic<int> flag{0};
  std::thread peer([&] {
    for (int i = 0; i < rounds; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1)
        std::this_thread::yield();
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  double best = 1;
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    flag.store(2 * i + 1, std::memory_order_release);
    while (flag.load(std::memory_order_acquire) != 2 * i + 2)
      std::this_thread::yield();
    best = std::min(
        best, std::chrono::duration<double>(Clock::now() - t0).count() / 2);
  }
  peer.join();
  return best;
}

/// Bytes per second of one memcpy of `bytes` (a send between rank threads
/// is one copy).
double copyRate(int64_t bytes, int repeats) {
  std::vector<char> from(static_cast<size_t>(bytes), 1);
  std::vector<char> to(from.size());
  double best = 1e9;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    std::memcpy(to.data(), from.data(), size_t(bytes));
    best = std::min(best,
                    std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return double(bytes) / best;
}

int parseOptions(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      printUsage(stdout);
      return 0;
    }
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "-o" || arg == "--output") {
      if (i + 1 >= argc)
        return usageError(arg + " needs a file name");
      options.output = argv[++i];
      if (options.output.empty())
        return usageError(arg + " needs a file name, got an empty one");
    } else if (arg == "--threads") {
      if (i + 1 >= argc)
        return usageError("--threads needs a count");
      std::string text = argv[++i];
      char *end = nullptr;
      long n = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != 0 || n < 1 || n > 1024)
        return usageError("--threads needs a count from 1 to 1024, got '" +
                          text + "'");
      options.threads = int(n);
    } else {
      return usageError("unknown argument '" + arg + "'");
    }
  }
  return -1;
}

/// Creates the directories above `path` (as mkdir -p), for the default
/// location under ~/.cache.
void makeParents(const std::string &path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1))
    ::mkdir(path.substr(0, slash).c_str(), 0755);
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  if (int rc = parseOptions(argc, argv, options); rc >= 0)
    return rc;
  bool defaultPath = options.output.empty();
  if (defaultPath) {
    options.output = gpipe::abi::getDefaultMachineFile();
    if (options.output.empty())
      return usageError("no default place for the machine profile "
                        "($GPIPE_MACHINE_FILE is 'none', or neither "
                        "$XDG_CACHE_HOME nor $HOME is set): give -o FILE");
  }
  // Where it goes must be writable before ten seconds of measuring.
  if (defaultPath)
    makeParents(options.output);
  {
    struct stat st;
    bool isDir =
        ::stat(options.output.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    std::string dir = gpipe::rt::parentDirectory(options.output);
    if (isDir || ::access(dir.c_str(), W_OK) != 0) {
      std::fprintf(stderr, "gpipe-calibrate: error: cannot write '%s': %s\n",
                   options.output.c_str(),
                   isDir ? "it is a directory" : std::strerror(errno));
      return 1;
    }
  }
  int cores = options.threads ? options.threads : availableCpus();
  Measurer measure{options, options.quick ? 2e-4 : 5e-4, options.quick ? 2 : 3};

  std::printf("calibrating %s (%d %s) for gpipe-compile's cost model\n",
              gpipe::rt::getCpuName().c_str(), cores,
              cores == 1 ? "core" : "cores");
  std::fflush(stdout);
  auto started = Clock::now();

  std::vector<int> threadCounts = {1};
  if (cores > 1)
    threadCounts.push_back(cores);

  Json machine;
  machine["format"] = gpipe::abi::kMachineFormat;
  machine["version"] = gpipe::abi::kMachineVersion;
  machine["host"] = hostName();
  machine["cpu"] = gpipe::rt::getCpuName();
  machine["created"] = utcNow();
  machine["cores"] = cores;
  machine["quick"] = options.quick;

  gpipe_rt_cpu_set_blas_threads(1);
  double call = measure.callSeconds();
  if (call <= 0) {
    std::fprintf(stderr, "gpipe-calibrate: error: a kernel call failed: %s\n",
                 gpipe_rt_last_error());
    return 1;
  }
  machine["call_seconds"] = call;

  // Streaming: from a few KiB (cache-resident) to well past the last-level
  // cache.
  std::vector<int64_t> streamSizes =
      options.quick
          ? std::vector<int64_t>{4096, 1 << 20}
          : std::vector<int64_t>{1024, 8192, 65536, 524288, 4194304, 16777216};
  Json stream = Json::array();
  for (int threads : threadCounts) {
    gpipe_rt_cpu_set_blas_threads(threads);
    for (int64_t n : streamSizes) {
      double rate = measure.streamRate(n, call);
      if (rate <= 0) {
        std::fprintf(stderr,
                     "gpipe-calibrate: error: add of %lld floats "
                     "failed: %s\n",
                     (long long)n, gpipe_rt_last_error());
        return 1;
      }
      stream.push_back(
          {{"bytes", 12 * n}, {"threads", threads}, {"bytes_per_s", rate}});
    }
  }
  machine["stream"] = stream;

  // GEMMs: every dim over powers of two, in the three layouts the models'
  // forward and backward use (NN, NT: a linear layer's weight; TN: its
  // weight gradient).
  std::vector<int64_t> dims =
      options.quick
          ? std::vector<int64_t>{4, 32, 256}
          : std::vector<int64_t>{2, 8, 16, 32, 64, 128, 256, 512, 1024};
  const std::pair<bool, bool> layouts[] = {
      {false, false}, {false, true}, {true, false}};
  // Each implementation this runtime has: what gpipe-compile --gemm auto
  // chooses between, cell by cell.
  std::vector<int32_t> impls = {GPIPE_RT_GEMM_OPENBLAS};
  if (gpipe_rt_cpu_gemm_impl_available(GPIPE_RT_GEMM_LIBXSMM))
    impls.push_back(GPIPE_RT_GEMM_LIBXSMM);
  Json gemm = Json::array();
  double best = 0;
  for (int threads : threadCounts) {
    gpipe_rt_cpu_set_blas_threads(threads);
    for (int32_t impl : impls) {
      if (gpipe_rt_cpu_set_gemm_choice(impl, nullptr, 0, nullptr) !=
          GPIPE_RT_SUCCESS) {
        std::fprintf(stderr, "gpipe-calibrate: error: %s\n",
                     gpipe_rt_last_error());
        return 1;
      }
      for (auto [ta, tb] : layouts)
        // libxsmm reads a transposed B through a transposed copy of it,
        // which loses to OpenBLAS wherever B is larger than A (8 x 256 x
        // 256: 2.7x slower with its operands in cache, 3.4x out of it):
        // its NT rates are not measured, so --gemm auto keeps NT on
        // OpenBLAS.
        if (impl == GPIPE_RT_GEMM_OPENBLAS || !tb)
          for (int64_t m : dims)
            for (int64_t n : dims)
              for (int64_t k : dims) {
                double rate = measure.gemmRate(m, n, k, ta, tb);
                if (rate <= 0) {
                  std::fprintf(stderr,
                               "gpipe-calibrate: error: a %lldx%lldx%lld GEMM "
                               "failed: %s\n",
                               (long long)m, (long long)n, (long long)k,
                               gpipe_rt_last_error());
                  return 1;
                }
                if (threads == 1)
                  best = std::max(best, rate);
                gemm.push_back({{"m", m},
                                {"n", n},
                                {"k", k},
                                {"trans_a", ta},
                                {"trans_b", tb},
                                {"threads", threads},
                                {"impl", gpipe_rt_gemm_impl_name(impl)},
                                {"flops_per_s", rate}});
              }
    }
    gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_OPENBLAS, nullptr, 0, nullptr);
    std::printf("  GEMMs on %d %s measured\n", threads,
                threads == 1 ? "thread" : "threads");
    std::fflush(stdout);
  }
  gpipe_rt_cpu_set_blas_threads(1);
  machine["gemm"] = gemm;

  // The other kernels: seconds per element of their forward and backward.
  Json kernels = Json::array();
  // A kernel whose GEMMs are subtracted (a convolution's) is the difference
  // of two timings, each of them noisy: both are taken longer and more
  // often (measured here: the convolution's rest per element ranged over
  // 0.8-2.1 ns on 2 threads across runs with the usual settings).
  Measurer steady{options, 4 * measure.batchSeconds, 3 * measure.repeats};
  for (int threads : threadCounts) {
    gpipe_rt_cpu_set_blas_threads(threads);
    for (const KernelCase &c : kernelCases(steady)) {
      const Measurer &m = c.forwardGemm ? steady : measure;
      double forward = secondsPerCall(c.forward, m.batchSeconds, m.repeats);
      double backward =
          c.backward ? secondsPerCall(c.backward, m.batchSeconds, m.repeats)
                     : 0;
      if (forward <= 0 || backward < 0) {
        std::fprintf(stderr,
                     "gpipe-calibrate: error: the %s kernel failed: "
                     "%s\n",
                     c.op, gpipe_rt_last_error());
        return 1;
      }
      if (c.forwardGemm)
        forward = std::max(forward - c.forwardGemm(), 0.0);
      if (c.backwardGemm)
        backward = std::max(backward - c.backwardGemm(), 0.0);
      Json entry = {{"op", c.op},
                    {"threads", threads},
                    {"forward_s_per_element", forward / double(c.elements)}};
      if (c.row)
        entry["row"] = c.row;
      if (c.backward)
        entry["backward_s_per_element"] = backward / double(c.elements);
      kernels.push_back(entry);
    }
  }
  gpipe_rt_cpu_set_blas_threads(1);
  machine["kernels"] = kernels;

  // The optimizers' update of one block of parameters, per parameter byte.
  // A step updates each stage's block once, long after its backward wrote
  // the gradients: the blocks rotate through 64 MiB of parameters, so each
  // call finds its own out of the caches.
  Json optimizers = Json::array();
  {
    const int64_t count = int64_t(1) << 18, blocks = 64;
    std::vector<float> params = filled(count * blocks, 3),
                       grads = filled(count * blocks, 4),
                       state(size_t(2 * count * blocks), 0.0f);
    for (int threads : threadCounts) {
      gpipe_rt_cpu_set_blas_threads(threads);
      for (gpipe::abi::OptimizerKind kind :
           {gpipe::abi::OptimizerKind::SGD, gpipe::abi::OptimizerKind::Momentum,
            gpipe::abi::OptimizerKind::Adam}) {
        gpipe::rt::OptimizerConfig config;
        config.kind = kind;
        config.lr = 1e-6;
        if (kind == gpipe::abi::OptimizerKind::Momentum)
          config.momentum = 0.9;
        int64_t step = 0;
        double seconds = secondsPerCall(
            [&] {
              int64_t b = step % blocks;
              return gpipe::rt::applyOptimizer(
                         config, ++step, params.data() + b * count,
                         grads.data() + b * count, state.data() + 2 * b * count,
                         count)
                             .ok()
                         ? GPIPE_RT_SUCCESS
                         : GPIPE_RT_INVALID_ARGUMENT;
            },
            measure.batchSeconds, measure.repeats);
        if (seconds <= 0) {
          std::fprintf(stderr, "gpipe-calibrate: error: the %s update failed\n",
                       gpipe::abi::getOptimizerName(kind));
          return 1;
        }
        optimizers.push_back(
            {{"optimizer", gpipe::abi::getOptimizerName(kind)},
             {"threads", threads},
             {"seconds_per_byte", seconds / double(4 * count)}});
      }
    }
    gpipe_rt_cpu_set_blas_threads(1);
  }
  machine["optimizers"] = optimizers;

  double latency = handoffLatency(options.quick ? 200 : 2000);
  double copy = copyRate(int64_t(8) << 20, options.quick ? 3 : 10);
  machine["link"] = {{"latency_s", latency}, {"bytes_per_s", copy}};

  std::string text = machine.dump(1) + "\n";
  gpipe::rt::Status written = gpipe::rt::replaceFile(
      options.output, std::vector<uint8_t>(text.begin(), text.end()));
  if (!written.ok()) {
    std::fprintf(stderr, "gpipe-calibrate: error: cannot write '%s': %s\n",
                 options.output.c_str(), written.message().c_str());
    return 1;
  }

  auto rateOf = [&](int threads, int64_t bytes) {
    for (const Json &s : stream)
      if (s["threads"] == threads && s["bytes"] == bytes)
        return s["bytes_per_s"].get<double>();
    return 0.0;
  };
  std::printf("  kernel call            %8.2f us\n", call * 1e6);
  std::printf("  sgemm, best shape      %8.1f GFLOP/s per thread\n",
              best / 1e9);
  for (int threads : threadCounts)
    std::printf("  stream, %2d %-7s     %8.1f GB/s (cache) %6.1f GB/s "
                "(memory)\n",
                threads, threads == 1 ? "thread" : "threads",
                rateOf(threads, 12 * streamSizes.front()) / 1e9,
                rateOf(threads, 12 * streamSizes.back()) / 1e9);
  std::printf("  rank handoff           %8.2f us, copy %.1f GB/s\n",
              latency * 1e6, copy / 1e9);
  std::printf("wrote %s (%.1f s)\n", options.output.c_str(),
              std::chrono::duration<double>(Clock::now() - started).count());
  return 0;
}
