//===- MachineModel.cpp - Kernel rates gpipe-calibrate measured -*- C++ -*-===//
//
// Reads the machine profile (gpipe/Runtime/MachineFile.h, written by
// gpipe-calibrate) and interpolates its measured rates at the shapes, sizes
// and thread counts the cost model asks about.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/CostModel.h"

#include "gpipe/Runtime/GemmChoice.h"
#include "gpipe/Runtime/MachineFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include <sys/stat.h>

namespace mlir::gpipe {

using Json = nlohmann::json;

namespace {

/// Reads typed fields of the machine profile, keeping the first error.
struct FieldReader {
  const std::string &path;
  std::string &error;

  bool fail(const std::string &what) {
    if (error.empty())
      error = "machine profile '" + path + "': " + what +
              " (measure it again with gpipe-calibrate)";
    return false;
  }
  std::optional<double> positive(const Json &object, const std::string &where,
                                 const char *key, bool zeroOk = false) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_number()) {
      fail(where + "expected a number '" + key + "'");
      return std::nullopt;
    }
    double value = it->get<double>();
    if (!std::isfinite(value) || value < 0 || (!zeroOk && value == 0)) {
      fail(where + "expected a " + (zeroOk ? "non-negative" : "positive") +
           " finite '" + key + "', got " + it->dump());
      return std::nullopt;
    }
    return value;
  }
  std::optional<int64_t> count(const Json &object, const std::string &where,
                               const char *key) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer() ||
        it->get<int64_t>() < 1) {
      fail(where + "expected a positive integer '" + key + "'" +
           (it == object.end() ? "" : ", got " + it->dump()));
      return std::nullopt;
    }
    return it->get<int64_t>();
  }
  std::optional<bool> flag(const Json &object, const std::string &where,
                           const char *key) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_boolean()) {
      fail(where + "expected true or false for '" + key + "'");
      return std::nullopt;
    }
    return it->get<bool>();
  }
  std::string text(const Json &object, const char *key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>()
                                                 : std::string();
  }
};

/// Linear interpolation of `y` over ascending `x`, clamped at the ends.
double interpolate(const std::vector<std::pair<double, double>> &points,
                   double x) {
  if (points.empty())
    return 0;
  if (x <= points.front().first)
    return points.front().second;
  if (x >= points.back().first)
    return points.back().second;
  for (size_t i = 1; i < points.size(); ++i)
    if (x <= points[i].first) {
      auto [x0, y0] = points[i - 1];
      auto [x1, y1] = points[i];
      return x1 == x0 ? y1 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    }
  return points.back().second;
}

/// The value at `t` threads from the values at 1 and at `cores` threads.
double byThreads(double one, double all, int64_t t, int64_t cores) {
  if (cores <= 1 || t <= 1)
    return one;
  double f = double(std::min(t, cores) - 1) / double(cores - 1);
  return one + (all - one) * f;
}

/// The rate at `t` threads from `rateAt` (a rate per measured thread count,
/// 0 where none was measured) at 1 and at `cores` threads, either standing
/// in for the other when it is missing.
template <typename RateAt>
double rateByThreads(RateAt rateAt, int64_t t, int64_t cores) {
  double one = rateAt(int64_t(1));
  double all = cores > 1 ? rateAt(cores) : one;
  if (one <= 0)
    one = all;
  if (all <= 0)
    all = one;
  return byThreads(one, all, t, cores);
}

} // namespace

std::optional<MachineModel> MachineModel::read(const std::string &path,
                                               std::string &error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read machine profile '" + path +
            "' (write one with gpipe-calibrate -o " + path + ")";
    return std::nullopt;
  }
  Json root = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  FieldReader r{path, error};
  if (root.is_discarded() || !root.is_object()) {
    r.fail("not JSON");
    return std::nullopt;
  }
  if (r.text(root, "format") != ::gpipe::abi::kMachineFormat) {
    r.fail(std::string("expected format '") + ::gpipe::abi::kMachineFormat +
           "'");
    return std::nullopt;
  }
  auto version = root.find("version");
  if (version == root.end() || !version->is_number_integer() ||
      version->get<int64_t>() != ::gpipe::abi::kMachineVersion) {
    r.fail("expected version " + std::to_string(::gpipe::abi::kMachineVersion) +
           (version == root.end() ? "" : ", got " + version->dump()));
    return std::nullopt;
  }
  MachineModel m;
  m.path = path;
  m.host = r.text(root, "host");
  m.cpu = r.text(root, "cpu");
  m.created = r.text(root, "created");
  std::optional<int64_t> cores = r.count(root, "", "cores");
  std::optional<double> call = r.positive(root, "", "call_seconds", true);
  if (!cores || !call)
    return std::nullopt;
  m.cores = *cores;
  m.callSeconds = *call;

  // Each entry of the array at `key` (absent: none, unless `required`),
  // an object whose `name` field (when given) is a non-empty string,
  // handed to `read` with its place for messages; false on the first
  // failure.
  auto eachEntry = [&](const char *key, bool required, const char *name,
                       auto read) {
    auto it = root.find(key);
    if (it == root.end() && !required)
      return true;
    if (it == root.end() || !it->is_array() || (required && it->empty()))
      return r.fail(std::string("expected a") +
                    (required ? " non-empty" : "n") + " array '" + key + "'");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json &entry = (*it)[i];
      std::string where = std::string(key) + "[" + std::to_string(i) + "]: ";
      if (!entry.is_object() || (name && r.text(entry, name).empty()))
        return r.fail(where + "expected an object" +
                      (name ? std::string(" with an '") + name + "'" : ""));
      if (!read(entry, where))
        return false;
    }
    return true;
  };
  bool ok =
      eachEntry("stream", true, nullptr,
                [&](const Json &s, const std::string &where) {
                  std::optional<int64_t> bytes = r.count(s, where, "bytes"),
                                         threads = r.count(s, where, "threads");
                  std::optional<double> rate =
                      r.positive(s, where, "bytes_per_s");
                  if (!bytes || !threads || !rate)
                    return false;
                  m.stream.push_back({*bytes, *threads, *rate});
                  return true;
                }) &&
      eachEntry(
          "gemm", true, nullptr,
          [&](const Json &g, const std::string &where) {
            std::optional<int64_t> gm = r.count(g, where, "m"),
                                   gn = r.count(g, where, "n"),
                                   gk = r.count(g, where, "k"),
                                   threads = r.count(g, where, "threads");
            std::optional<bool> ta = r.flag(g, where, "trans_a"),
                                tb = r.flag(g, where, "trans_b");
            std::optional<double> rate = r.positive(g, where, "flops_per_s");
            if (!gm || !gn || !gk || !threads || !ta || !tb || !rate)
              return false;
            int32_t impl = GPIPE_RT_GEMM_OPENBLAS;
            if (auto it = g.find("impl"); it != g.end()) {
              std::string name =
                  it->is_string() ? it->get<std::string>() : std::string();
              impl = name == "libxsmm" ? GPIPE_RT_GEMM_LIBXSMM
                                       : GPIPE_RT_GEMM_OPENBLAS;
              if (name != "openblas" && name != "libxsmm")
                return r.fail(where +
                              "expected 'impl' openblas or libxsmm, "
                              "got " +
                              it->dump());
            }
            m.gemm.push_back({*gm, *gn, *gk, *threads, *ta, *tb, *rate, impl});
            return true;
          }) &&
      eachEntry("kernels", false, "op",
                [&](const Json &k, const std::string &where) {
                  std::optional<int64_t> threads = r.count(k, where, "threads");
                  std::optional<double> forward =
                      r.positive(k, where, "forward_s_per_element", true);
                  if (!threads || !forward)
                    return false;
                  Kernel kernel{r.text(k, "op"), *threads, 0, *forward,
                                std::nullopt};
                  if (k.contains("row")) {
                    std::optional<int64_t> row = r.count(k, where, "row");
                    if (!row)
                      return false;
                    kernel.row = *row;
                  }
                  if (k.contains("backward_s_per_element")) {
                    kernel.backward =
                        r.positive(k, where, "backward_s_per_element", true);
                    if (!kernel.backward)
                      return false;
                  }
                  m.kernels.push_back(kernel);
                  return true;
                }) &&
      eachEntry("optimizers", false, "optimizer",
                [&](const Json &o, const std::string &where) {
                  std::optional<int64_t> threads = r.count(o, where, "threads");
                  std::optional<double> rate =
                      r.positive(o, where, "seconds_per_byte");
                  if (!threads || !rate)
                    return false;
                  m.optimizers.push_back(
                      {r.text(o, "optimizer"), *threads, *rate});
                  return true;
                });
  if (!ok)
    return std::nullopt;
  m.indexGemms();
  auto link = root.find("link");
  if (link == root.end() || !link->is_object()) {
    r.fail("expected an object 'link'");
    return std::nullopt;
  }
  std::optional<double> latency =
      r.positive(*link, "link: ", "latency_s", true);
  std::optional<double> bandwidth = r.positive(*link, "link: ", "bytes_per_s");
  if (!latency || !bandwidth)
    return std::nullopt;
  m.linkLatency = *latency;
  m.linkBandwidth = *bandwidth;
  return m;
}

std::shared_ptr<const MachineModel> MachineModel::load(const std::string &path,
                                                       std::string &error) {
  struct Entry {
    int64_t size = -1;
    struct timespec mtime = {};
    std::shared_ptr<const MachineModel> model;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> cache;
  struct stat st;
  bool known = ::stat(path.c_str(), &st) == 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (known) {
    auto it = cache.find(path);
    if (it != cache.end() && it->second.size == int64_t(st.st_size) &&
        it->second.mtime.tv_sec == st.st_mtim.tv_sec &&
        it->second.mtime.tv_nsec == st.st_mtim.tv_nsec)
      return it->second.model;
  }
  std::optional<MachineModel> model = read(path, error);
  if (!model)
    return nullptr;
  auto shared = std::make_shared<const MachineModel>(std::move(*model));
  if (known)
    cache[path] = {int64_t(st.st_size), st.st_mtim, shared};
  return shared;
}

void MachineModel::indexGemms() {
  gemmGrids.clear();
  for (const Gemm &g : gemm) {
    GemmGrid &grid = gemmGrids[{g.impl, g.transA, g.transB, g.threads}];
    grid.log2Rate[{g.m, g.n, g.k}] = std::log2(g.flopsPerSecond);
    grid.ms.push_back(g.m);
    grid.ns.push_back(g.n);
    grid.ks.push_back(g.k);
  }
  for (auto &entry : gemmGrids)
    for (std::vector<int64_t> *dims :
         {&entry.second.ms, &entry.second.ns, &entry.second.ks}) {
      std::sort(dims->begin(), dims->end());
      dims->erase(std::unique(dims->begin(), dims->end()), dims->end());
    }
}

double MachineModel::gemmSeconds(int64_t m, int64_t n, int64_t k, bool transA,
                                 bool transB, int64_t threads,
                                 int32_t impl) const {
  if (m <= 0 || n <= 0 || k <= 0)
    return 0;
  double flops = 2.0 * double(m) * double(n) * double(k);
  // The measured layout closest to the one asked for: the same, else NN;
  // of `impl`, else of OpenBLAS.
  auto hasLayout = [&](int32_t i, bool ta, bool tb) {
    auto it = gemmGrids.lower_bound({i, ta, tb, 0});
    return it != gemmGrids.end() && std::get<0>(it->first) == i &&
           std::get<1>(it->first) == ta && std::get<2>(it->first) == tb;
  };
  if (!hasLayout(impl, transA, transB))
    impl = GPIPE_RT_GEMM_OPENBLAS;
  if (!hasLayout(impl, transA, transB)) {
    transA = transB = false;
    if (!hasLayout(impl, false, false) && !gemmGrids.empty()) {
      impl = std::get<0>(gemmGrids.begin()->first);
      transA = std::get<1>(gemmGrids.begin()->first);
      transB = std::get<2>(gemmGrids.begin()->first);
    }
  }
  // log2 of the rate, trilinear in log2 of each dimension over the grid
  // (clamped at its edges); nearest measured shape where a corner is
  // missing.
  auto rateAt = [&](int64_t t) {
    auto found = gemmGrids.find({impl, transA, transB, t});
    if (found == gemmGrids.end())
      return 0.0;
    const GemmGrid &g = found->second;
    const auto &grid = g.log2Rate;
    auto bracket = [](const std::vector<int64_t> &dims, int64_t x) {
      double lx = std::log2(double(x));
      if (x <= dims.front())
        return std::tuple<int64_t, int64_t, double>(dims.front(), dims.front(),
                                                    0.0);
      if (x >= dims.back())
        return std::tuple<int64_t, int64_t, double>(dims.back(), dims.back(),
                                                    0.0);
      auto hi = std::lower_bound(dims.begin(), dims.end(), x);
      int64_t b = *hi, a = *(hi - 1);
      double la = std::log2(double(a)), lb = std::log2(double(b));
      return std::tuple<int64_t, int64_t, double>(a, b, (lx - la) / (lb - la));
    };
    const std::vector<int64_t> &ms = g.ms, &ns = g.ns, &ks = g.ks;
    auto [m0, m1, fm] = bracket(ms, m);
    auto [n0, n1, fn] = bracket(ns, n);
    auto [k0, k1, fk] = bracket(ks, k);
    double sum = 0;
    for (int c = 0; c < 8; ++c) {
      int64_t cm = c & 1 ? m1 : m0, cn = c & 2 ? n1 : n0, ck = c & 4 ? k1 : k0;
      auto it = grid.find({cm, cn, ck});
      if (it == grid.end()) {
        // An incomplete grid: the nearest measured shape.
        double best = 1e300, rate = 0;
        for (auto &[shape, value] : grid) {
          auto [gm, gn, gk] = shape;
          double d = std::pow(std::log2(double(gm) / double(m)), 2) +
                     std::pow(std::log2(double(gn) / double(n)), 2) +
                     std::pow(std::log2(double(gk) / double(k)), 2);
          if (d < best) {
            best = d;
            rate = value;
          }
        }
        return std::exp2(rate);
      }
      double w =
          (c & 1 ? fm : 1 - fm) * (c & 2 ? fn : 1 - fn) * (c & 4 ? fk : 1 - fk);
      sum += w * it->second;
    }
    return std::exp2(sum);
  };
  int64_t most = 1;
  for (const auto &entry : gemmGrids)
    most = std::max(most, std::get<3>(entry.first));
  double rate = rateByThreads(rateAt, threads, most);
  double seconds = rate > 0 ? flops / rate : 0;
  // A GEMM below the grid costs no less than a call.
  return std::max(seconds, callSeconds);
}

std::optional<double> MachineModel::kernelSeconds(const std::string &op,
                                                  int64_t elements, int64_t row,
                                                  int64_t threads,
                                                  bool backward) const {
  // Per thread count measured: seconds per element by log2 of the row.
  std::map<int64_t, std::vector<std::pair<double, double>>> byCount;
  for (const Kernel &k : kernels) {
    std::optional<double> perElement = backward ? k.backward : k.forward;
    if (k.op == op && perElement)
      byCount[k.threads].push_back(
          {k.row > 0 ? std::log2(double(k.row)) : 0.0, *perElement});
  }
  if (byCount.empty())
    return std::nullopt;
  double at = row > 0 ? std::log2(double(row)) : 0.0;
  auto perElementAt = [&](std::vector<std::pair<double, double>> &points) {
    std::sort(points.begin(), points.end());
    return interpolate(points, at);
  };
  int64_t most = byCount.rbegin()->first;
  double all = perElementAt(byCount.rbegin()->second);
  double one = byCount.count(1) ? perElementAt(byCount[1]) : all;
  // The kernels split nothing below twice their grain (the runtime's
  // cpu::kParallelGrain elements, or rows of as many): such a call runs on
  // the calling thread alone.
  constexpr int64_t kParallelGrain = 4096;
  if (elements < 2 * kParallelGrain)
    threads = 1;
  return double(std::max<int64_t>(elements, 0)) *
         byThreads(one, all, threads, most);
}

std::optional<double> MachineModel::optimizerSeconds(const std::string &name,
                                                     int64_t bytes,
                                                     int64_t threads) const {
  std::optional<double> one, all;
  int64_t most = 0;
  for (const Optimizer &o : optimizers) {
    if (o.name != name)
      continue;
    if (o.threads == 1)
      one = o.secondsPerByte;
    if (o.threads > most) {
      most = o.threads;
      all = o.secondsPerByte;
    }
  }
  if (!all)
    return std::nullopt;
  return double(std::max<int64_t>(bytes, 0)) *
         byThreads(one ? *one : *all, *all, threads, most);
}

double MachineModel::streamSeconds(int64_t bytes, int64_t threads) const {
  if (bytes <= 0)
    return 0;
  int64_t most = 1;
  for (const Stream &s : stream)
    most = std::max(most, s.threads);
  auto rateAt = [&](int64_t t) {
    std::vector<std::pair<double, double>> points;
    for (const Stream &s : stream)
      if (s.threads == t)
        points.push_back(
            {std::log2(double(s.bytes)), std::log2(s.bytesPerSecond)});
    std::sort(points.begin(), points.end());
    return points.empty()
               ? 0.0
               : std::exp2(interpolate(points, std::log2(double(bytes))));
  };
  double rate = rateByThreads(rateAt, threads, most);
  return rate > 0 ? double(bytes) / rate : 0;
}

} // namespace mlir::gpipe
