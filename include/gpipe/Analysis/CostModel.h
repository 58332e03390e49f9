//===- CostModel.h - Per-layer time from op costs ---------------*- C++ -*-===//
//
// The partitioner's cost model: per-layer forward, backward and recompute
// times of one micro-batch, derived either from the `nn` cost interface (FLOPs
// and bytes of a layer) and a device profile through the roofline model, or
// from measured per-layer times; and the time of sending a boundary
// activation between two stages. Plain C++17 over plain data: the compiler
// passes convert `nn.layer` costs into `OpCostData` records before calling it.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_COSTMODEL_H
#define GPIPE_ANALYSIS_COSTMODEL_H

#include "gpipe/Analysis/GemmChoice.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace mlir::gpipe {

/// A GEMM one op runs: `batch` products op(A)[m, k] x op(B)[k, n], op
/// transposing an operand stored the other way round.
struct GemmWork {
  int64_t batch = 0, m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  /// Whether a batch of products too small to split divides over the
  /// rank's threads whole (a batched matmul), or runs in order (a
  /// convolution's images).
  bool parallelBatch = false;
};

/// The work of one op (one kernel call, or a few) for a calibrated machine
/// (MachineModel): its GEMM, if it runs one, and the bytes it streams
/// besides (an elementwise op's operands and results; a convolution's
/// im2col columns).
struct OpWork {
  std::optional<GemmWork> gemm;
  int64_t streamBytes = 0; ///< bytes read and written outside a GEMM
  int64_t calls = 0;       ///< kernel calls (0: a view, a parameter read)
  /// The op's name without its dialect ("softmax", "conv2d"), whose
  /// measured time per element replaces the streaming estimate where the
  /// machine has one, and the elements it counts (the result's; a
  /// convolution's im2col columns).
  std::string kernel;
  int64_t elements = 0;
  /// The last dimension of that tensor: a row kernel's row length.
  int64_t row = 0;
};

/// The work of one layer for one micro-batch, as the `nn` cost interface
/// reports it (`nn::OpCost` summed over the layer body).
struct OpCostData {
  int64_t flops = 0;        ///< floating point operations
  int64_t bytesRead = 0;    ///< operand bytes, parameters included
  int64_t bytesWritten = 0; ///< result bytes
  /// Bytes of parameters the layer reads. Already part of `bytesRead` (the
  /// consuming op reads them as an operand), so the roofline does not count
  /// them again; kept for memory sizing.
  int64_t paramBytes = 0;
  /// The layer's ops one by one: what a profile with a MachineModel times
  /// (the roofline reads the totals above).
  std::vector<OpWork> ops;
};

/// What gpipe-calibrate measured on one machine (the machine profile,
/// gpipe/Runtime/MachineFile.h): the CPU kernels' rates, which the cost
/// model interpolates at each op's shape and the threads its rank has.
struct MachineModel {
  std::string path;       ///< the file it was read from
  std::string host;       ///< where it was measured
  std::string cpu;        ///< the CPU's model name
  std::string created;    ///< when (UTC, ISO 8601)
  int64_t cores = 1;      ///< the CPUs one process may use
  double callSeconds = 0; ///< one kernel call beyond its work
  struct Stream {
    int64_t bytes = 0, threads = 1;
    double bytesPerSecond = 0;
  };
  std::vector<Stream> stream; ///< an elementwise add's rate by size
  struct Gemm {
    int64_t m = 0, n = 0, k = 0, threads = 1;
    bool transA = false, transB = false;
    double flopsPerSecond = 0;
    /// The implementation measured (gpipe_rt_gemm_impl; "impl", default
    /// openblas).
    int32_t impl = 0;
  };
  std::vector<Gemm> gemm; ///< matmul's rate on a grid of shapes
  /// `gemm` indexed for gemmSeconds: per implementation, layout and thread
  /// count, the dimensions measured and log2 of each shape's rate. Built by
  /// read(); rebuild with indexGemms() after changing `gemm`.
  struct GemmGrid {
    std::vector<int64_t> ms, ns, ks;
    std::map<std::tuple<int64_t, int64_t, int64_t>, double> log2Rate;
  };
  std::map<std::tuple<int32_t, bool, bool, int64_t>, GemmGrid> gemmGrids;
  void indexGemms();
  struct Kernel {
    std::string op;
    int64_t threads = 1;
    int64_t row = 0;    ///< the rows' length it was measured at; 0: any
    double forward = 0; ///< seconds per element
    std::optional<double> backward; ///< seconds per element, if measured
  };
  std::vector<Kernel> kernels; ///< other kernels' time per element
  struct Optimizer {
    std::string name; ///< sgd, momentum, adam
    int64_t threads = 1;
    double secondsPerByte = 0; ///< of parameters
  };
  std::vector<Optimizer> optimizers;         ///< each update's time
  double linkLatency = 0, linkBandwidth = 0; ///< a rank-to-rank handoff

  /// Reads the machine profile at `path`; on failure std::nullopt and
  /// `error` names the file and the field.
  static std::optional<MachineModel> read(const std::string &path,
                                          std::string &error);
  /// read(), shared: the model of `path` read once per process and kept
  /// while the file's size and modification time stay the same (an
  /// autotuned compile partitions once per candidate); null on failure.
  static std::shared_ptr<const MachineModel> load(const std::string &path,
                                                  std::string &error);

  /// Seconds of one GEMM of `shape` (batch 1) on `threads` kernel threads,
  /// interpolated over the measured grid (log-linear in each dimension,
  /// clamped at its edges; linear in the thread count between 1 and the
  /// cores).
  /// `impl`'s rates where the profile measured them in this layout,
  /// OpenBLAS's otherwise.
  double gemmSeconds(int64_t m, int64_t n, int64_t k, bool transA, bool transB,
                     int64_t threads, int32_t impl = 0) const;
  /// Seconds of the kernel of ops named `op` over `elements` in rows of
  /// `row` on `threads` kernel threads, its forward or its backward
  /// (log-linear in the row length between the lengths measured);
  /// std::nullopt when it was not measured.
  std::optional<double> kernelSeconds(const std::string &op, int64_t elements,
                                      int64_t row, int64_t threads,
                                      bool backward) const;
  /// Seconds of optimizer `name`'s update of `bytes` of parameters on
  /// `threads` kernel threads; std::nullopt when it was not measured.
  std::optional<double> optimizerSeconds(const std::string &name, int64_t bytes,
                                         int64_t threads) const;
  /// Seconds of streaming `bytes` through an elementwise kernel on
  /// `threads` kernel threads (the rate interpolated by size).
  double streamSeconds(int64_t bytes, int64_t threads) const;
};

/// What the cost model knows about a device and the link between two
/// neighbouring pipeline stages. Rates are per second, times in seconds.
struct DeviceProfile {
  std::string name;
  double peakFlops = 0;      ///< FLOP/s the layers' arithmetic reaches
  double memBandwidth = 0;   ///< bytes/s of device memory
  double linkBandwidth = 0;  ///< bytes/s of one stage-to-stage send
  double linkLatency = 0;    ///< seconds of a zero-byte send
  double backwardFactor = 2; ///< backward time / forward time
  /// Measured kernel rates replacing peakFlops and memBandwidth for ops
  /// whose OpCostData lists them (the link's too); null: the roofline.
  std::shared_ptr<const MachineModel> machine;
  /// The kernel threads each rank runs on (with `machine`).
  int64_t rankThreads = 1;
  /// Ranks per core beyond one (with `machine`): ranks that share a core
  /// take turns, so each op's time stretches by this factor.
  double oversubscription = 1;
  /// Which implementation each GEMM shape runs on (with `machine`): its
  /// rates time the GEMM.
  std::shared_ptr<const GemmChoice> gemmChoice;
};

/// `profile` with `machine`'s measured rates, for `ranks` ranks of one
/// process (gpipe-run's rank threads: a lone rank runs its kernels on every
/// core, several run one thread each).
/// GEMMs take the implementations `gemm` chooses (OpenBLAS where the
/// choice fails: the compile reports that error itself).
DeviceProfile withMachine(DeviceProfile profile,
                          std::shared_ptr<const MachineModel> machine,
                          int64_t ranks, GemmKind gemm = GemmKind::Auto);

/// The two GEMMs of C = op(A) op(B)'s backward: dop(A) [m, k] = dC op(B)^T
/// and dop(B) [k, n] = op(A)^T dC, dC read as stored.
std::array<GemmWork, 2> getBackwardGemms(const GemmWork &forward);

/// A 2-core x86 CPU running the layers with OpenBLAS; stages are processes on
/// one host, so the "link" is a shared-memory copy.
DeviceProfile cpuProfile();

/// One NVIDIA H200 SXM per stage, neighbours joined by NVLink.
DeviceProfile h200Profile();
/// The same with bf16 GEMMs on the tensor cores (--precision bf16).
DeviceProfile h200Bf16Profile();

/// The built-in profiles, as the `profile` options name them.
enum class ProfileKind {
  CPU,      ///< "cpu": cpuProfile()
  H200,     ///< "h200": h200Profile()
  H200BF16, ///< "h200-bf16": h200Bf16Profile()
};
DeviceProfile getProfile(ProfileKind kind);

/// The built-in profile called `name` (case-insensitive: "cpu", "h200",
/// "h200-bf16"), or std::nullopt.
std::optional<DeviceProfile> lookupProfile(std::string_view name);

/// Names `lookupProfile` accepts, for diagnostics ("cpu, h200, h200-bf16").
std::vector<std::string> builtinProfileNames();

/// An empty string if every rate of `profile` is positive and finite, the
/// latency non-negative and finite; else what is wrong, naming the field.
std::string verifyProfile(const DeviceProfile &profile);

/// Forward time of one execution: with the profile's machine and the ops
/// listed, the sum of their measured-rate times (opForwardTime); else the
/// roofline bound max(flops / peakFlops, (bytesRead + bytesWritten) /
/// memBandwidth).
double forwardTime(const OpCostData &cost, const DeviceProfile &profile);

/// Backward time: with the machine, the ops' backward times
/// (opBackwardTime); else backwardFactor x forward time.
double backwardTime(const OpCostData &cost, const DeviceProfile &profile);

/// One op's forward on `profile`'s machine: its GEMM at the measured rate
/// of its shape (a batch of products too small to split divides over the
/// rank's threads whole), its streamed bytes at the measured rate of their
/// size, and its calls.
double opForwardTime(const OpWork &op, const DeviceProfile &profile);
/// Its backward: a GEMM C = A B's two products dA = dC B^T and dB = A^T
/// dC, and backwardFactor x the rest.
double opBackwardTime(const OpWork &op, const DeviceProfile &profile);

/// Time of one point-to-point send of `bytes`: linkLatency + bytes /
/// linkBandwidth.
double transferTime(int64_t bytes, const DeviceProfile &profile);

/// Time of an all-reduce (sum) of `bytes` over `replicas` processes that
/// reach each other over the profile's link, bandwidth-optimal (a ring, or
/// the reduce-scatter and all-gather the CPU runtime uses): each process
/// sends and receives 2(D-1)/D of the data in 2(D-1) messages,
/// 2(D-1) * linkLatency + 2(D-1)/D * bytes / linkBandwidth (Thakur,
/// Rabenseifner and Gropp, "Optimization of Collective Communication
/// Operations in MPICH", 2005). 0 for one replica.
double allReduceTime(int64_t bytes, int64_t replicas,
                     const DeviceProfile &profile);

/// A measured time of one layer for one micro-batch (`gpipe-run --profile`).
struct MeasuredLayerTime {
  double forward = 0;  ///< seconds
  double backward = 0; ///< seconds
  /// Seconds of recomputing the forward in the backward; absent: the
  /// forward's.
  std::optional<double> recompute;
};

/// Per-layer costs for the partitioner and the timeline simulator. All times
/// are seconds per micro-batch.
struct LayerCosts {
  std::vector<double> forward;   ///< L entries
  std::vector<double> backward;  ///< L entries
  std::vector<double> recompute; ///< L entries; 0 unless rematerializing
  /// L entries: forward + backward + recompute, the partitioner's layerTime.
  std::vector<double> total;
  /// L-1 entries: the cost of cutting after layer i, one forward send of its
  /// output activation plus one backward send of the gradient of the same
  /// size, i.e. 2 x transferTime(outputBytes[i]). Both neighbouring stages
  /// take part in both sends, so the partitioner charges it to both.
  std::vector<double> boundary;
  std::string error; ///< non-empty on failure; the vectors are then empty
  bool ok() const { return error.empty(); }
};

/// What the cost model needs about a model with L layers.
struct CostModelInput {
  /// L entries, used unless `measured` is given.
  std::vector<OpCostData> layers;
  /// L-1 (or L; the last is ignored) entries: bytes of layer i's output
  /// activation for one micro-batch, what crosses a cut after layer i.
  std::vector<int64_t> outputBytes;
  /// Empty, or L measured times that replace the roofline estimate.
  std::vector<MeasuredLayerTime> measured;
  /// Activation rematerialization: the backward pass first reruns the
  /// forward, so every layer pays its forward time once more.
  bool rematerialize = false;
  /// Empty, or L entries: which layers the backward reruns (per-layer
  /// rematerialization); replaces `rematerialize`.
  std::vector<char> rematerializeLayer;
};

/// Per-layer and per-boundary costs of `input` on `profile`. Errors (negative
/// or non-finite inputs, mismatched sizes, a bad profile) come back in
/// `LayerCosts::error`, naming the layer.
LayerCosts computeLayerCosts(const CostModelInput &input,
                             const DeviceProfile &profile);

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_COSTMODEL_H
