//===- CostModel.cpp - Per-layer time from op costs -------------*- C++ -*-===//
//
// Implements the built-in device profiles and the per-layer time model: the
// forward time of a layer is its roofline bound (roofline model, Williams et
// al. 2009: a kernel runs no faster than its arithmetic at peak FLOP/s and no
// faster than its memory traffic at peak bandwidth), the backward time a fixed
// multiple of it, the recompute time under rematerialization the forward time
// again; a boundary costs a latency plus bytes over link bandwidth per send.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/CostModel.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <utility>

namespace mlir::gpipe {

DeviceProfile cpuProfile() {
  DeviceProfile p;
  p.name = "cpu";
  // Two x86 cores with AVX2 FMA sustain roughly 25 GFLOP/s each in OpenBLAS
  // fp32 GEMM; elementwise layers are bound by the ~10 GB/s of DRAM
  // bandwidth two cores draw.
  p.peakFlops = 50e9;
  p.memBandwidth = 10e9;
  // Stages are processes on one host: a send is a copy through shared memory
  // (read + write, so about half the memory bandwidth) plus a few
  // microseconds of synchronization.
  p.linkBandwidth = 5e9;
  p.linkLatency = 2e-6;
  p.backwardFactor = 2.0;
  return p;
}

DeviceProfile h200Profile() {
  DeviceProfile p;
  p.name = "h200";
  // NVIDIA H200 SXM datasheet: 67 TFLOP/s FP32 on the CUDA cores. Tensor
  // cores reach 494 TFLOP/s TF32 and 989 TFLOP/s BF16/FP16 dense (twice that
  // with 2:4 sparsity); the runtime's kernels are fp32, so the model uses the
  // non-tensor number. Measured times (`gpipe-run --profile`) replace it.
  p.peakFlops = 67e12;
  // 141 GB of HBM3e at 4.8 TB/s.
  p.memBandwidth = 4.8e12;
  // NVLink 4: 900 GB/s is the total of both directions over 18 links. A
  // pipeline send moves data one way (activations forward, gradients
  // backward, and the two are never the same message), so one send sees the
  // 450 GB/s of a single direction.
  p.linkBandwidth = 450e9;
  // NCCL point-to-point latency over NVLink is a few microseconds.
  p.linkLatency = 5e-6;
  p.backwardFactor = 2.0;
  return p;
}

DeviceProfile h200Bf16Profile() {
  DeviceProfile p = h200Profile();
  p.name = "h200-bf16";
  // gpipe-compile --precision bf16: GEMMs on the tensor cores, 989 TFLOP/s
  // BF16 dense (H200 SXM datasheet). The other layers are bound by memory
  // bandwidth either way.
  p.peakFlops = 989e12;
  return p;
}

std::vector<std::string> builtinProfileNames() {
  return {"cpu", "h200", "h200-bf16"};
}

DeviceProfile getProfile(ProfileKind kind) {
  switch (kind) {
  case ProfileKind::CPU:
    return cpuProfile();
  case ProfileKind::H200:
    return h200Profile();
  case ProfileKind::H200BF16:
    return h200Bf16Profile();
  }
  return cpuProfile();
}

std::optional<DeviceProfile> lookupProfile(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (lower == "cpu")
    return getProfile(ProfileKind::CPU);
  if (lower == "h200")
    return getProfile(ProfileKind::H200);
  if (lower == "h200-bf16")
    return getProfile(ProfileKind::H200BF16);
  return std::nullopt;
}

static std::string formatNumber(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

std::string verifyProfile(const DeviceProfile &profile) {
  auto positive = [&](double value, const char *field) -> std::string {
    if (std::isfinite(value) && value > 0)
      return "";
    return std::string("expected a positive finite ") + field +
           " in device profile '" + profile.name + "', got " +
           formatNumber(value);
  };
  for (auto [value, field] :
       {std::pair<double, const char *>{profile.peakFlops, "peakFlops"},
        {profile.memBandwidth, "memBandwidth"},
        {profile.linkBandwidth, "linkBandwidth"},
        {profile.backwardFactor, "backwardFactor"}}) {
    std::string error = positive(value, field);
    if (!error.empty())
      return error;
  }
  if (!std::isfinite(profile.linkLatency) || profile.linkLatency < 0)
    return "expected a non-negative finite linkLatency in device profile '" +
           profile.name + "', got " + formatNumber(profile.linkLatency);
  return "";
}

DeviceProfile withMachine(DeviceProfile profile,
                          std::shared_ptr<const MachineModel> machine,
                          int64_t ranks, GemmKind gemm) {
  if (!machine)
    return profile;
  std::string error;
  std::optional<GemmChoice> choice = chooseGemms(gemm, machine.get(), error);
  profile.gemmChoice = std::make_shared<const GemmChoice>(
      choice ? std::move(*choice) : GemmChoice());
  profile.name += " (" + machine->path + ")";
  ranks = std::max<int64_t>(ranks, 1);
  // gpipe-run's automatic threads: a lone rank takes every core, rank
  // threads of one process share the kernel pool one thread each.
  profile.rankThreads = ranks == 1 ? machine->cores : 1;
  profile.oversubscription = std::max(
      1.0, double(ranks) / double(std::max<int64_t>(1, machine->cores)));
  profile.linkLatency = machine->linkLatency;
  profile.linkBandwidth = machine->linkBandwidth;
  profile.machine = std::move(machine);
  return profile;
}

/// Products at most this many multiply-adds (M x N x K) stay on one thread
/// each, a batch of them dividing over the kernel threads whole (the CPU
/// kernels' kSmallProduct).
constexpr int64_t kSmallProduct = int64_t(1) << 18;

/// A GEMM's time on the profile's machine.
static double gemmTime(const GemmWork &g, const DeviceProfile &profile) {
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0)
    return 0;
  const MachineModel &machine = *profile.machine;
  int64_t threads = std::max<int64_t>(profile.rankThreads, 1);
  int32_t impl =
      profile.gemmChoice
          ? profile.gemmChoice->implFor(g.transA, g.transB, g.m, g.n, g.k)
          : GPIPE_RT_GEMM_OPENBLAS;
  if (g.parallelBatch && g.batch > 1 && g.m * g.n * g.k <= kSmallProduct)
    return double(g.batch) *
           machine.gemmSeconds(g.m, g.n, g.k, g.transA, g.transB, 1, impl) /
           double(std::min(threads, g.batch));
  return double(g.batch) *
         machine.gemmSeconds(g.m, g.n, g.k, g.transA, g.transB, threads, impl);
}

std::array<GemmWork, 2> getBackwardGemms(const GemmWork &g) {
  return {GemmWork{g.batch, g.m, g.k, g.n, false, !g.transB, g.parallelBatch},
          GemmWork{g.batch, g.k, g.n, g.m, !g.transA, false, g.parallelBatch}};
}

/// An op's time outside its GEMM on the profile's machine: its kernel's
/// measured time per element where the machine has it, else its streamed
/// bytes; and its calls.
static double sideTime(const OpWork &op, const DeviceProfile &profile,
                       bool backward) {
  const MachineModel &machine = *profile.machine;
  double calls = double(op.calls) * machine.callSeconds;
  if (!op.kernel.empty()) {
    if (std::optional<double> seconds = machine.kernelSeconds(
            op.kernel, op.elements, op.row, profile.rankThreads, backward))
      return (backward ? 2 : 1) * calls + *seconds;
    if (backward)
      if (std::optional<double> forward = machine.kernelSeconds(
              op.kernel, op.elements, op.row, profile.rankThreads, false))
        return profile.backwardFactor * (calls + *forward);
  }
  double stream =
      calls + machine.streamSeconds(op.streamBytes, profile.rankThreads);
  return backward ? profile.backwardFactor * stream : stream;
}

double opForwardTime(const OpWork &op, const DeviceProfile &profile) {
  if (!profile.machine)
    return 0;
  double seconds = sideTime(op, profile, false);
  if (op.gemm)
    seconds += gemmTime(*op.gemm, profile);
  return seconds * profile.oversubscription;
}

double opBackwardTime(const OpWork &op, const DeviceProfile &profile) {
  if (!profile.machine)
    return 0;
  double seconds = sideTime(op, profile, true);
  if (op.gemm) {
    for (const GemmWork &g : getBackwardGemms(*op.gemm))
      seconds += gemmTime(g, profile);
  }
  return seconds * profile.oversubscription;
}

double forwardTime(const OpCostData &cost, const DeviceProfile &profile) {
  if (profile.machine && !cost.ops.empty()) {
    double seconds = 0;
    for (const OpWork &op : cost.ops)
      seconds += opForwardTime(op, profile);
    return seconds;
  }
  // Roofline model, Williams et al. 2009: time is bounded below by compute
  // at peak and by memory traffic at peak bandwidth; take the larger bound.
  double compute = static_cast<double>(cost.flops) / profile.peakFlops;
  double traffic = (static_cast<double>(cost.bytesRead) +
                    static_cast<double>(cost.bytesWritten)) /
                   profile.memBandwidth;
  return std::max(compute, traffic);
}

double backwardTime(const OpCostData &cost, const DeviceProfile &profile) {
  if (profile.machine && !cost.ops.empty()) {
    double seconds = 0;
    for (const OpWork &op : cost.ops)
      seconds += opBackwardTime(op, profile);
    return seconds;
  }
  return profile.backwardFactor * forwardTime(cost, profile);
}

double transferTime(int64_t bytes, const DeviceProfile &profile) {
  return profile.linkLatency +
         static_cast<double>(bytes) / profile.linkBandwidth;
}

double allReduceTime(int64_t bytes, int64_t replicas,
                     const DeviceProfile &profile) {
  if (replicas <= 1)
    return 0.0;
  double d = static_cast<double>(replicas);
  return 2.0 * (d - 1.0) * profile.linkLatency +
         2.0 * (d - 1.0) / d * static_cast<double>(bytes) /
             profile.linkBandwidth;
}

static LayerCosts failure(std::string error) {
  LayerCosts costs;
  costs.error = std::move(error);
  return costs;
}

LayerCosts computeLayerCosts(const CostModelInput &input,
                             const DeviceProfile &profile) {
  std::string profileError = verifyProfile(profile);
  if (!profileError.empty())
    return failure(profileError);

  bool useMeasured = !input.measured.empty();
  size_t numLayers = useMeasured ? input.measured.size() : input.layers.size();
  if (numLayers == 0)
    return failure("expected at least 1 layer, got 0");
  if (useMeasured && !input.layers.empty() &&
      input.layers.size() != input.measured.size())
    return failure("expected " + std::to_string(input.layers.size()) +
                   " measured layer times, one per layer, got " +
                   std::to_string(input.measured.size()));
  if (!input.rematerializeLayer.empty() &&
      input.rematerializeLayer.size() != numLayers)
    return failure("expected " + std::to_string(numLayers) +
                   " per-layer rematerialization flags, got " +
                   std::to_string(input.rematerializeLayer.size()));
  if (input.outputBytes.size() != numLayers - 1 &&
      input.outputBytes.size() != numLayers)
    return failure("expected " + std::to_string(numLayers - 1) +
                   " boundary activation sizes for " +
                   std::to_string(numLayers) + " layers, got " +
                   std::to_string(input.outputBytes.size()));

  LayerCosts costs;
  costs.forward.resize(numLayers);
  costs.backward.resize(numLayers);
  costs.recompute.resize(numLayers);
  costs.total.resize(numLayers);
  for (size_t i = 0; i < numLayers; ++i) {
    double forward, backward;
    if (useMeasured) {
      const MeasuredLayerTime &m = input.measured[i];
      for (auto [value, what] :
           {std::pair<double, const char *>{m.forward, "forward"},
            {m.backward, "backward"}}) {
        if (!std::isfinite(value) || value < 0)
          return failure("expected a non-negative finite measured " +
                         std::string(what) + " time for layer " +
                         std::to_string(i) + ", got " + formatNumber(value));
      }
      if (m.recompute && (!std::isfinite(*m.recompute) || *m.recompute < 0))
        return failure("expected a non-negative finite measured recompute "
                       "time for layer " +
                       std::to_string(i) + ", got " +
                       formatNumber(*m.recompute));
      forward = m.forward;
      backward = m.backward;
    } else {
      const OpCostData &c = input.layers[i];
      for (auto [value, what] :
           {std::pair<int64_t, const char *>{c.flops, "flops"},
            {c.bytesRead, "bytesRead"},
            {c.bytesWritten, "bytesWritten"},
            {c.paramBytes, "paramBytes"}}) {
        if (value < 0)
          return failure("expected non-negative " + std::string(what) +
                         " for layer " + std::to_string(i) + ", got " +
                         std::to_string(value));
      }
      forward = forwardTime(c, profile);
      backward = backwardTime(c, profile);
    }
    costs.forward[i] = forward;
    costs.backward[i] = backward;
    double recompute = forward;
    if (useMeasured && input.measured[i].recompute)
      recompute = *input.measured[i].recompute;
    bool rerun = input.rematerializeLayer.empty()
                     ? input.rematerialize
                     : input.rematerializeLayer[i] != 0;
    costs.recompute[i] = rerun ? recompute : 0.0;
    costs.total[i] = forward + backward + costs.recompute[i];
  }

  costs.boundary.resize(numLayers - 1);
  for (size_t i = 0; i + 1 < numLayers; ++i) {
    int64_t bytes = input.outputBytes[i];
    if (bytes < 0)
      return failure("expected a non-negative activation size after layer " +
                     std::to_string(i) + ", got " + std::to_string(bytes));
    costs.boundary[i] = 2.0 * transferTime(bytes, profile);
  }
  return costs;
}

} // namespace mlir::gpipe
