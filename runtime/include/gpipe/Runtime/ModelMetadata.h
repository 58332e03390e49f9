//===- ModelMetadata.h - What a compiled model says of itself ---*- C++ -*-===//
//
// The metadata JSON a model library carries (Program.h), parsed and
// validated once when the model is loaded: the tensors the data provides,
// the parameters and how they start, each rank's plan (its stages'
// parameter, gradient and optimizer-state blocks in its arena, the slots of
// the parameters inside them) and its program of actions, and the
// compiler's predictions. Everything else in the runtime -- the data and
// checkpoint readers (IO), the transports, the engine -- reads a model
// through ModelMetadata. Library GPipeRuntimeModel; it needs neither the
// engine nor a model library (ModelImage.h loads those).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_MODELMETADATA_H
#define GPIPE_RUNTIME_MODELMETADATA_H

#include "gpipe/Runtime/Common.h"
#include "gpipe/Runtime/Status.h"
#include "gpipe/Runtime/Vocabulary.h"

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpipe::rt {

/// What an action of a rank's program does, and which way a transfer goes:
/// the vocabulary the compiler writes the metadata with (Vocabulary.h). The
/// metadata's strings become these once, when the model is loaded.
using ActionKind = abi::ActionKind;
using Direction = abi::Direction;

/// The metadata's spelling ("forward", "backward_input", "send", ...).
const char *actionKindName(ActionKind kind);
/// Whether the action is compute (counted as busy time): forward, backward,
/// backward_input, backward_weight, recompute and step.
bool isComputeAction(ActionKind kind);

/// The optimizer whose state a model's arenas reserve (Optimizer.h's
/// OptimizerConfig::kind).
using OptimizerKind = abi::OptimizerKind;

/// An optimizer's names are the vocabulary's (Optimizers.def): printed by
/// its canonical name, parsed from that or an alias, one parser for the
/// metadata and the command line.
using abi::getOptimizerName;
using abi::getUnknownOptimizerMessage;
using abi::parseOptimizerKind;

/// One of a model's several inputs (an ONNX graph input: input_ids,
/// attention_mask, ...), packed with the others into ModelMetadata::input
/// [B, S]: it occupies elements [offset, offset + sampleElements()) of each
/// sample's row, in the row-major order of its per-sample shape, with the
/// input's dtype. The data file holds it under its name.
struct InputPart {
  std::string name;
  /// The whole mini-batch's shape (dim 0 = B).
  std::vector<int64_t> shape;
  /// Elements from the start of a sample's packed row.
  int64_t offset = 0;

  /// Elements of one sample (the product of the dims after dim 0).
  int64_t sampleElements() const;
};

/// A tensor the data provides: the whole mini-batch's shape (dim 0 = B).
struct TensorSpec {
  std::vector<int64_t> shape;
  gpipe_rt_dtype dtype = GPIPE_RT_F32;
  /// Labels only: the number of classes of integer labels (0 otherwise).
  int64_t classes = 0;
  /// Input only: the model's inputs packed into this one, in order, tiling
  /// each sample's row (shape [B, S]); empty for a model with one input.
  std::vector<InputPart> parts;
  /// Input only, a model with one input: its name in the model (the ONNX
  /// input name), which a data file may use instead of `input`; empty if
  /// unknown.
  std::string name;

  /// Elements of one sample (the product of the dims after dim 0).
  int64_t sampleElements() const;
  /// Bytes of one sample.
  int64_t sampleBytes() const;
};

/// How a parameter's initial value is made.
/// Shared: an evaluation pipeline's parameter, the training pipeline's
/// value in the arena both use (ModelMetadata::eval only).
enum class ParamInit { Data, Zeros, Ones, Normal, Uniform, Shared };

struct ParameterSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  ParamInit init = ParamInit::Zeros;
  /// Init::Data: offset into gpipe_model_data().
  int64_t dataOffset = 0;
  /// Init::Normal (standard deviation) and Init::Uniform (half-width).
  double scale = 0.0;
  /// A batch norm's running statistic: updated at the step from batch sums,
  /// not by the optimizer, and without a gradient of its own.
  bool runningStatistic = false;
};

/// Where one parameter lives inside a stage's parameter block.
struct ParamSlot {
  /// The parameter's name (a tied copy's is its first parameter's: what
  /// checkpoints and saved parameters call it).
  std::string name;
  /// Bytes from the stage's params_offset (and grads_offset).
  int64_t offset = 0;
  int64_t elements = 0;
  /// Index into ModelMetadata::parameters (a tied copy: its first
  /// parameter's).
  size_t parameter = 0;
  /// Which copy of a tied parameter this is: 0 for the parameter itself,
  /// k for its k-th `tied_to` copy.
  int64_t copy = 0;
};

/// A tied parameter: every slot holding one of its copies, in copy order.
/// SUM_TIED makes each copy's gradient the sum of all of them in this order.
struct TiedGroup {
  size_t parameter = 0;
  struct Member {
    int64_t rank = 0;
    /// Index into the rank's RankPlan::stages.
    size_t stage = 0;
    /// Index into that stage's params.
    size_t slot = 0;
  };
  std::vector<Member> members;
};

/// A batch norm's running statistics inside a stage's parameter block. Their
/// gradient slots hold the step's sums of x - mean and (x - mean)^2 (over
/// `count` values per channel); the step turns them into the new statistics
/// (gpipe_rt_cpu_running_stats_update_f32) instead of the optimizer.
struct RunningStatsSlot {
  /// Bytes from the stage's params_offset (and grads_offset).
  int64_t meanOffset = 0, varOffset = 0;
  int64_t channels = 0;
  int64_t count = 0;
  double momentum = 0.0;
};

/// One stage a rank holds: its parameter, gradient and optimizer-state
/// blocks in the rank's arena.
struct StagePlan {
  int64_t stage = 0;
  int64_t paramsOffset = 0, gradsOffset = 0, stateOffset = -1;
  int64_t paramBytes = 0;
  /// The optimizer updates bytes [0, trainableBytes) of the block; the
  /// running statistics lie after them.
  int64_t trainableBytes = 0;
  std::vector<ParamSlot> params;
  std::vector<RunningStatsSlot> runningStats;
};

/// One action of a rank's program. A transfer's kind carries its direction
/// (SendF, RecvF, SendB, RecvB).
struct ActionSpec {
  ActionKind kind = ActionKind::Forward;
  int64_t stage = 0;
  /// Micro-batch; -1 for step and reduce_grad.
  int64_t mb = -1;
  /// Transfers only.
  int64_t peer = -1;
  int64_t tag = -1;
  int64_t bytes = 0;
  /// The payload's element type; none when the library does not say.
  std::optional<gpipe_rt_dtype> payload;

  bool isSend() const { return abi::isSendKind(kind); }
  bool isRecv() const { return abi::isRecvKind(kind); }
  bool isTransfer() const { return abi::isTransferKind(kind); }
  /// A transfer's direction (Forward for activations).
  Direction direction() const { return abi::getDirection(kind); }
};

struct RankPlan {
  int64_t rank = 0;
  std::string symbol;
  int64_t arenaBytes = 0, peakBytes = 0;
  /// Of peakBytes, the kept activations (peak_kept_bytes); -1 when the
  /// metadata does not say.
  int64_t peakKeptBytes = -1;
  std::vector<StagePlan> stages;
  std::vector<ActionSpec> actions;

  /// The stage plan of `stage`, or null if this rank does not hold it.
  const StagePlan *findStage(int64_t stage) const;
};

struct StageInfo {
  int64_t index = 0, rank = 0;
  std::string name;
  std::vector<std::string> layers;
};

struct KernelSite {
  std::string op, loc, function;
};

/// The metadata of a compiled model (Program.h), validated.
struct ModelMetadata {
  std::string producer, source, schedule, remat, loss;
  /// The kernel library the code calls: "cpu" or "cuda" (Device.h).
  std::string target = "cpu";
  /// GEMM arithmetic: "fp32", or "bf16" (bf16 operands, fp32 accumulation).
  std::string precision = "fp32";
  /// Which implementation each GEMM shape runs on (the metadata's `gemm`;
  /// gpipe_rt_cpu_set_gemm_choice installs it): `impl` for every shape, or,
  /// with a `grid`, the implementation each cell of `cells` names ('0' +
  /// gpipe_rt_gemm_impl, per layout "NN", "NT", "TN", "TT" at index 2 trans_a +
  /// trans_b; empty: OpenBLAS). OpenBLAS for every shape when the metadata has
  /// no `gemm`.
  struct GemmChoice {
    std::string impl = "openblas";
    std::vector<int64_t> grid;
    std::array<std::string, 4> cells;
  };
  GemmChoice gemm;
  int64_t abiVersion = 0;
  int64_t stages = 0, microbatches = 0, alignment = 1;
  /// Data-parallel replicas D of the K-rank pipeline (K x D workers).
  int64_t dataParallel = 1;
  /// The optimizer whose state the arenas hold.
  OptimizerKind optimizer = OptimizerKind::SGD;
  /// The gradient-norm bound the library was compiled with (0: none).
  double clipGradNorm = 0.0;
  /// Whether the programs clip their gradients (CLIP_GRAD actions).
  bool clipsGradients() const;
  /// A forward-only (inference) model: no labels, loss, backward, step,
  /// gradients or optimizer state (the metadata's mode "inference").
  bool inference = false;
  TensorSpec input;
  std::optional<TensorSpec> labels;
  /// The last stage's prediction over the mini-batch (dim 0 = B): the
  /// inference output, or the logits the loss reads in training; what
  /// gpipe_rt_report_output reports per micro-batch. Unset for models
  /// compiled before it existed.
  std::optional<TensorSpec> output;
  /// Token-embedding rows when the input is token ids (0 if none).
  int64_t vocab = 0;
  std::string dataHint;
  /// The compiler's predictions (NaN when absent).
  double predictedBubble = std::numeric_limits<double>::quiet_NaN();
  /// GPipe's closed form (K-1)/(M+K-1), whatever the schedule.
  double predictedClosedFormBubble = std::numeric_limits<double>::quiet_NaN();
  /// The schedule's own closed form (schedule_closed_form_bubble): NaN when
  /// the schedule has none, unset when the metadata predates the key.
  std::optional<double> predictedScheduleClosedFormBubble;
  double predictedStepSeconds = std::numeric_limits<double>::quiet_NaN();
  /// Per rank, the predicted compute time of one step (empty when the
  /// metadata does not say).
  std::vector<double> predictedBusySeconds;
  /// Per rank, the predicted [start, end] of each action of one step in
  /// microseconds (empty when the metadata does not say).
  std::vector<std::vector<std::pair<double, double>>> predictedTimeline;
  std::vector<ParameterSpec> parameters;
  /// The `tied_to` copies: their names, with their first parameters' index
  /// and copy number (not in `parameters`: they are the same parameter).
  std::map<std::string, std::pair<size_t, int64_t>, std::less<>> tiedCopies;
  /// The tied parameters held by more than one slot, by parameter index,
  /// and the most copies of any (what SUM_TIED's message tags count in).
  std::vector<TiedGroup> tiedGroups;
  int64_t maxTiedCopies = 0;
  std::vector<StageInfo> stageInfo;
  std::vector<RankPlan> ranks;
  std::vector<KernelSite> sites;
  /// A training library with evaluation programs (gpipe-compile --eval):
  /// their metadata, a forward-only pipeline on the same ranks with the
  /// same input, micro-batches and parameter slots, its rank symbols
  /// gpipe_model_eval_rank_<r>. It runs in the training arenas between
  /// steps; each rank's arenaBytes here is already the larger of the two
  /// plans'. Null otherwise.
  std::shared_ptr<const ModelMetadata> eval;

  /// Parses and validates `json`. `dataSize`, when known, bounds the
  /// parameters' data offsets. Errors start with "metadata: ".
  static Status parse(std::string_view json, ModelMetadata &out,
                      std::optional<size_t> dataSize = std::nullopt);

  /// The whole mini-batch B, over every replica.
  int64_t batchSize() const { return input.shape.empty() ? 0 : input.shape[0]; }
  /// One replica's share of it, B/D.
  int64_t replicaBatchSize() const { return batchSize() / dataParallel; }
  int64_t microBatchSize() const {
    return batchSize() / (microbatches * dataParallel);
  }
  /// Pipeline ranks K (of one replica).
  int64_t numRanks() const { return int64_t(ranks.size()); }
  /// Workers K x D: worker w is rank w mod K of replica w / K (the process
  /// of an MPI run).
  int64_t numWorkers() const { return numRanks() * dataParallel; }
  /// Optimizer-state blocks (each the size of the parameters) the arenas
  /// reserve: 0 for sgd, 1 for momentum, 2 for adam.
  int64_t stateMultiple() const;
  /// The parameter called `name`, or null.
  const ParameterSpec *findParameter(std::string_view name) const;
  /// abi::getModelFingerprint of the parameters and the input: what a
  /// profile of this model records and is checked against.
  std::string fingerprint() const;
};

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_MODELMETADATA_H
