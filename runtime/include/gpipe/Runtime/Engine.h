//===- Engine.h - Loading and training compiled pipelines -------*- C++ -*-===//
//
// The training engine behind gpipe-run. A ModelImage is a compiled model: the
// metadata JSON its library carries (Program.h), parsed and validated, the
// initial parameter bytes and one native function per pipeline rank. The
// Engine runs it: one thread per rank, each with one arena allocated once
// (canary-filled so the bytes the program really touched can be measured
// against the plan), ranks exchanging activations and gradients through a
// Transport (Transport.h: rank threads of this process, MPI or NCCL), data
// from a safetensors file or built in, and the optimizer the user picked
// within the state the plan reserved. Where the arenas live and how their
// bytes are reached is the Device's (Device.h): host memory for the CPU, GPU
// memory and streams for CUDA.
// Every wait has a timeout; a failing rank aborts the run, every thread winds
// down and run() returns the first error, never hanging.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_ENGINE_H
#define GPIPE_RUNTIME_ENGINE_H

#include "gpipe/Runtime/Common.h"
#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/Program.h"
#include "gpipe/Runtime/SafeTensors.h"
#include "gpipe/Runtime/Status.h"
#include "gpipe/Runtime/Vocabulary.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpipe::rt {

using OptimizerKind = abi::OptimizerKind;

//===----------------------------------------------------------------------===//
// Model metadata
//===----------------------------------------------------------------------===//

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
enum class ParamInit { Data, Zeros, Ones, Normal, Uniform };

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
  int64_t abiVersion = 0;
  int64_t stages = 0, microbatches = 0, alignment = 1;
  /// Data-parallel replicas D of the K-rank pipeline (K x D workers).
  int64_t dataParallel = 1;
  /// The optimizer whose state the arenas hold.
  OptimizerKind optimizer = OptimizerKind::SGD;
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
};

//===----------------------------------------------------------------------===//
// Model images
//===----------------------------------------------------------------------===//

/// A loaded model: metadata, initial data and the rank functions. Copies
/// share the library, which stays loaded while any copy lives.
class ModelImage {
public:
  /// dlopens the model library at `path` (RTLD_NOW | RTLD_LOCAL), checks
  /// its ABI version, parses its metadata and resolves every rank's symbol.
  static Status load(const std::string &path, ModelImage &image);
  /// An in-process model (tests): `metadataJson`, initial data (`dataSize`
  /// bytes at `data`, may be null when no parameter uses "data") and one
  /// function per rank.
  static Status fromParts(std::string_view metadataJson, const uint8_t *data,
                          size_t dataSize,
                          std::vector<gpipe_model_rank_fn> rankFunctions,
                          ModelImage &image);

  const ModelMetadata &metadata() const { return meta; }
  /// gpipe_model_data(): the bytes "data" parameters start from.
  const uint8_t *data() const { return initialData; }
  gpipe_model_rank_fn rankFunction(int64_t rank) const {
    return functions[size_t(rank)];
  }
  /// The library path ("<in-process>" for fromParts).
  const std::string &path() const { return libraryPath; }

  /// The model library's own gpipe_rt_last_error / gpipe_rt_clear_error
  /// when it carries a copy of the kernels (null otherwise): kernel
  /// messages are read from both copies.
  const char *(*libraryLastError)(void) = nullptr;
  void (*libraryClearError)(void) = nullptr;

private:
  ModelMetadata meta;
  const uint8_t *initialData = nullptr;
  std::vector<gpipe_model_rank_fn> functions;
  std::string libraryPath;
  std::shared_ptr<void> handle;
};

/// Same as ModelImage::load.
Status loadModelLibrary(const std::string &path, ModelImage &image);

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// An optimizer's names are the vocabulary's (Optimizers.def): printed by
/// its canonical name, parsed from that or an alias, one parser for the
/// metadata and the command line.
using abi::getOptimizerName;
using abi::getUnknownOptimizerMessage;
using abi::parseOptimizerKind;

/// Fully resolved hyper-parameters.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::SGD;
  double lr = 0.01;
  /// SGD with momentum (PyTorch semantics, no dampening, no Nesterov).
  double momentum = 0.0;
  /// SGD: added to the gradient (g + wd * p); Adam: decoupled (AdamW).
  double weightDecay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;

  /// Optimizer-state blocks the update needs: 0 for plain SGD, 1 for SGD
  /// with momentum > 0, 2 for Adam.
  int64_t stateMultiple() const;
  /// The optimizer whose state the update keeps: adam, momentum for SGD
  /// with momentum > 0 (whichever name asked for it), else sgd. A
  /// checkpoint's state is named by it.
  OptimizerKind stateKind() const;
};

/// What the user asked for; unset fields take defaults that depend on the
/// optimizer (and the optimizer defaults to the one the model reserved).
struct OptimizerOptions {
  std::optional<OptimizerKind> kind;
  std::optional<double> lr, momentum, weightDecay;
};

/// Resolves `options` against the model: default optimizer = the
/// metadata's; lr 0.01 (sgd, momentum) or 0.001 (adam); momentum 0.9 for
/// "momentum", else 0; weight decay 0 (sgd, momentum) or 0.01 (AdamW, as
/// torch.optim.AdamW). Fails when the result needs more optimizer state than
/// the model reserves, or a value is out of range.
Status resolveOptimizer(const ModelMetadata &metadata,
                        const OptimizerOptions &options,
                        OptimizerConfig &config);

/// One optimizer step over `count` parameters in place. `step` counts this
/// parameter block's steps from 1 (Adam's bias correction, momentum's first
/// step). `state` holds config.stateMultiple() * count floats (momentum
/// buffer; Adam's m then v) and may be null when that is 0. Plain SGD
/// without weight decay is exactly gpipe_rt_cpu_sgd_update_f32.
Status applyOptimizer(const OptimizerConfig &config, int64_t step,
                      float *params, const float *grads, float *state,
                      int64_t count);

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

/// Samples for the model's input and labels. Sample indices are taken
/// modulo numSamples().
class Dataset {
public:
  virtual ~Dataset();
  /// For the run's header, e.g. "data.safetensors (1000 samples)".
  virtual std::string describe() const = 0;
  virtual int64_t numSamples() const = 0;
  /// Writes sample `sample`'s input (metadata.input.sampleBytes() bytes).
  virtual void copyInput(int64_t sample, uint8_t *out) const = 0;
  /// Writes sample `sample`'s labels (metadata.labels->sampleBytes()).
  virtual void copyLabels(int64_t sample, uint8_t *out) const = 0;
};

/// Reads `input` (and `labels` when the model has labels) from a safetensors
/// file, checking names, shapes, dtypes and value ranges against
/// `metadata`. A model with several inputs (TensorSpec::parts) reads each by
/// its name and packs them into the input's rows, or reads them already
/// packed as `input` [N, S].
Status loadDataset(const std::string &path, const ModelMetadata &metadata,
                   std::unique_ptr<Dataset> &dataset);
/// Same, from a file already in memory.
Status datasetFromSafeTensors(const SafeTensorsFile &file,
                              const ModelMetadata &metadata,
                              std::unique_ptr<Dataset> &dataset);
/// The built-in data the metadata's data_hint names ("text-char",
/// "classification" or "images"), generated from `seed`. A model with
/// several inputs has none.
Status makeBuiltinDataset(const ModelMetadata &metadata, uint64_t seed,
                          std::unique_ptr<Dataset> &dataset);

/// The built-in English text of "text-char" data.
std::string_view defaultText();
/// The 65 symbols of "text-char" data, id = position.
std::string_view textAlphabet();
/// `c`'s id in textAlphabet(); characters outside it map to ' '.
int64_t textCharId(char c);

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

/// A rank that stops silently, as if it died, when it reaches action
/// `action` of step `step` (counted from 1): its peers then time out.
struct FaultInjection {
  int64_t rank = 0;
  int64_t step = 1;
  int64_t action = 0;
  /// What happens at that action.
  enum class Mode {
    Stop,  ///< the rank stops silently (its thread returns)
    Stall, ///< the rank hangs (until the run is aborted)
    Kill,  ///< the process dies (SIGKILL): for the MPI transport
  } mode = Mode::Stop;
  /// The data-parallel replica the rank belongs to.
  int64_t replica = 0;
};

/// Parses "rank=R[,replica=D][,step=S][,action=A][,mode=stop|stall|kill]".
Status parseFaultInjection(std::string_view spec, FaultInjection &fault);

/// Metrics of one training step.
struct StepMetrics {
  /// Counted from 1.
  int64_t step = 0;
  /// Mean of the micro-batch losses (NaN when the model reports none).
  double loss = 0.0;
  double seconds = 0.0;
  double samplesPerSecond = 0.0;
  /// Per worker (rank): compute time over the step's wall time.
  std::vector<double> busyFraction;
};

struct TrainingState;

/// What a non-finite loss, activation or gradient does to the run.
enum class NonFinitePolicy {
  /// The run stops with an error naming where the value appeared.
  Stop,
  /// The step's optimizer updates are all skipped (they are applied only
  /// after every rank finished the step cleanly) and training goes on.
  Skip,
};

/// Test hook: in step `step` (from 1), the first element of the float
/// activation `rank` receives (or, on stage 0, loads) for micro-batch `mb`
/// becomes NaN: the stage then computes with it.
struct NanInjection {
  int64_t rank = 0, step = 1, mb = 0;
};

/// How ranks exchange activations and gradients.
enum class TransportKind {
  /// One thread per rank in this process.
  Local,
  /// One process per rank under mpirun (MPI rank = pipeline rank); process
  /// 0 gathers metrics, gradients and parameters for printing and saving.
  Mpi,
  /// As Mpi, but activations and gradients travel device to device through
  /// NCCL (CUDA models; one GPU per process).
  Nccl,
};

struct RunOptions {
  TransportKind transport = TransportKind::Local;
  /// Where the arenas live and the kernels run; null: the device of the
  /// model's target (makeDevice(target, 0)). Must match the target.
  std::shared_ptr<Device> device;
  /// The step to train up to (counted from 1): with `resume` at step s,
  /// steps s+1..steps run.
  int64_t steps = 10;
  /// Continue from this state (a checkpoint): its parameters and optimizer
  /// state replace the initial ones, by name, whatever the stage count it
  /// was written with.
  const TrainingState *resume = nullptr;
  /// After every `checkpointEvery` steps (and after the last), between
  /// steps, `checkpoint` receives the training state; an error stops the
  /// run.
  int64_t checkpointEvery = 0;
  std::function<Status(const TrainingState &)> checkpoint;
  OptimizerOptions optimizer;
  uint64_t seed = 0;
  /// Data: `dataset` if set, else the file at `dataPath` if not empty, else
  /// the built-in data the metadata's data_hint names.
  std::shared_ptr<const Dataset> dataset;
  std::string dataPath;
  /// Every wait (send, receive, step barrier) gives up after this long.
  double timeoutSeconds = 60.0;
  std::optional<FaultInjection> fault;
  NonFinitePolicy onNonFinite = NonFinitePolicy::Stop;
  std::optional<NanInjection> injectNan;
  /// Keep every action's begin and end for a trace.
  bool recordTrace = false;
  /// Time every compute action per layer (the library's gpipe_rt_layer
  /// marks; host-timed devices only) into RunResult::layerTimes; implies
  /// recordTrace.
  bool profileLayers = false;
  /// Time the CPU kernels by class (gpipe_rt_cpu_set_kernel_timing) in the
  /// steady-state steps into RunResult::kernelSeconds.
  bool timeKernels = false;
  /// BLAS threads per rank (cpu target): the threads a GEMM splits over,
  /// which the other CPU kernels split their work over too
  /// (gpipe_rt_cpu_set_blas_threads); 0: automatic. The kernels keep one
  /// thread pool per process, so with more than one rank thread in the
  /// process every rank runs its GEMMs on 1 thread (more is an error).
  /// Automatic: with one rank in the process, the CPUs the process may use
  /// (taskset, cgroups, mpirun's binding) divided among the processes
  /// mpirun started on this node; 1 under a finite address-space limit
  /// (ulimit -v), where OpenBLAS on a thread that cannot map its buffer
  /// retries forever. A GEMM splits into blocks of rows that keep each
  /// output element's tile and order: the same bits for every count.
  int64_t blasThreads = 0;
  /// Inference (a model whose metadata says "inference"): run the forward
  /// over all of the data, mini-batch by mini-batch (`steps` is ignored:
  /// ceil(N / B) steps for N samples; the last, partial mini-batch is
  /// padded with the data's first samples and their outputs dropped), and
  /// keep every output. Needs `dataset` or `dataPath`.
  bool predict = false;
  /// Training: keep the first step's outputs (the logits the loss reads,
  /// RunResult::outputs).
  bool keepOutputs = false;
  /// Called on the calling thread after each step.
  std::function<void(const StepMetrics &)> onStep;
  /// Called once before the first step, when data and optimizer are known.
  std::function<void(const OptimizerConfig &, const Dataset &)> onStart;
  /// Called on the calling thread when, after the run failed, rank threads
  /// have not ended within the timeout (a thread stuck inside a library
  /// call, such as OpenBLAS looping on a buffer it cannot map under a
  /// memory limit, can be neither stopped nor joined): `message` names the
  /// run's error and where each stuck rank is. It must end the process;
  /// null: the message goes to stderr and the process exits with status 1.
  std::function<void(const std::string &message)> onStuck;
};

/// One rank's arena: what the plan said, what the program touched.
struct ArenaReport {
  /// The worker (the rank, without data parallelism).
  int64_t rank = 0;
  int64_t plannedBytes = 0, peakBytes = 0;
  /// (Offset of the highest byte that lost its canary + 1) rounded up to
  /// the alignment.
  int64_t measuredBytes = 0;
};

/// One action as it ran (microseconds since the run started).
struct TraceEvent {
  /// `rank` is the worker (ModelMetadata::numWorkers).
  int64_t rank = 0, step = 0, action = 0;
  double beginUs = 0.0, endUs = 0.0;
};

/// Part of one compute action spent in one layer: `mark` as
/// gpipe_rt_layer received it (2 x layer + recomputing), or -1 for the time
/// before the action's first mark.
struct LayerTime {
  int64_t rank = 0, step = 0, action = 0, mark = -1;
  double seconds = 0.0;
};

struct RunResult {
  OptimizerConfig optimizer;
  /// Device::describe() of the device the run used.
  std::string deviceDescription;
  std::string dataDescription;
  std::vector<StepMetrics> steps;
  /// 1 - mean over ranks of compute time over wall time, over all steps
  /// but the first when there is more than one.
  double measuredBubble = 0.0;
  /// Per worker (rank), its compute seconds per step, averaged over the
  /// same steps as the bubble.
  std::vector<double> busySeconds;
  double totalSeconds = 0.0;
  /// The first step's gradients and the parameters after the last step,
  /// by parameter name.
  std::map<std::string, std::vector<float>> firstGradients, finalParameters;
  std::vector<ArenaReport> arenas;
  /// Filled when RunOptions::recordTrace is set.
  std::vector<TraceEvent> trace;
  /// Filled when RunOptions::profileLayers is set: per worker, step and
  /// compute action, the time spent in each layer.
  std::vector<LayerTime> layerTimes;
  /// NonFinitePolicy::Skip: one line per step whose update was skipped.
  std::vector<std::string> skippedSteps;
  /// When the run failed: per rank, its last few actions and what it was
  /// doing (the flight recorder).
  std::vector<std::string> flightRecorder;
  /// With RunOptions::predict, the outputs of every sample (`outputSamples`
  /// rows of ModelMetadata::output's sample, in data order); with
  /// keepOutputs, the first step's mini-batch. Row-major bytes of the
  /// output's dtype.
  std::vector<uint8_t> outputs;
  int64_t outputSamples = 0;
  /// Steady state (every step after the first two of this run): how many
  /// steps, and the operator-new allocations the rank threads of this
  /// process made in them (kernels, callbacks, transports, devices).
  int64_t steadySteps = 0;
  /// -1 in a sanitizer build (its allocator is not replaced, so nothing is
  /// counted).
  int64_t steadyHeapAllocations = 0;
  /// With RunOptions::timeKernels: per gpipe_rt_kernel_class, the seconds
  /// the rank threads of this process spent in kernels of that class in
  /// the steady-state steps, summed over ranks and steps; and their busy
  /// (compute action) seconds in the same steps.
  std::vector<double> kernelSeconds;
  double steadyBusySeconds = 0.0;
  /// The threads each rank ran its GEMMs on (RunOptions::
  /// blasThreads resolved; 0 for a device without CPU kernels), and why
  /// that many.
  int64_t blasThreads = 0;
  std::string blasThreadsReason;
};

/// Trains a model.
class Engine {
public:
  explicit Engine(ModelImage image) : model(std::move(image)) {}

  const ModelImage &image() const { return model; }

  /// Runs `options.steps` training steps. On failure the result holds the
  /// steps that completed.
  Status run(const RunOptions &options, RunResult &result);

private:
  ModelImage model;
};

/// Writes `tensors` (by parameter name) as an F32 safetensors file in the
/// parameters' shapes; `extra` joins the file's metadata (next to the
/// model's source).
Status
writeParameterTensors(const std::string &path, const ModelMetadata &metadata,
                      const std::map<std::string, std::vector<float>> &tensors,
                      const std::map<std::string, std::string> &extra = {});

/// Writes `result.outputs` as a safetensors file holding one tensor,
/// `output`, of shape [result.outputSamples, ...] (the sample shape of
/// `metadata.output`); `extra` joins the file's metadata.
Status writeOutputTensor(const std::string &path, const ModelMetadata &metadata,
                         const RunResult &result,
                         const std::map<std::string, std::string> &extra = {});

/// Reads the parameters a training run saved (`gpipe-run --save-params`)
/// from the safetensors file at `path`, by name: exactly the model's
/// parameters, each F32 in its shape. A missing, extra, mis-typed or
/// mis-shaped tensor is an error naming it.
Status readParameterTensors(const std::string &path,
                            const ModelMetadata &metadata,
                            std::map<std::string, std::vector<float>> &out);

/// Writes `result.trace` as Chrome trace JSON (chrome://tracing, Perfetto):
/// one thread per rank.
Status writeChromeTrace(const std::string &path, const ModelMetadata &metadata,
                        const RunResult &result);

/// Writes one step of the run as a standalone SVG picture: the compiler's
/// predicted timeline (the metadata's predicted.timeline) above the
/// measured steady-state step (the median by duration of the steps after
/// the first), one row per rank on one time scale, each rank's busy time
/// beside it. Needs RunOptions::recordTrace.
Status writeTimelineSVG(const std::string &path, const ModelMetadata &metadata,
                        const RunResult &result);

/// Writes the measured profile of a run made with RunOptions::profileLayers
/// (`gpipe-run --profile`) to `path` for `gpipe-compile --profile-file`:
/// per layer the median seconds of one micro-batch's forward, backward (and
/// halves) and recompute, per compute action the time outside the layers,
/// the link's latency and bandwidth, the optimizer's seconds per byte, and
/// the machine. An existing profile of the same model, target and precision
/// keeps its measurements of other micro-batch sizes; any other file there
/// is an error and left as it is.
Status writeProfile(const std::string &path, const ModelMetadata &metadata,
                    const RunResult &result);

/// OpenBLAS sizes its thread pool when it is loaded, before main: the
/// pool's idle threads spin and steal the cores the rank threads need, and
/// openblas_set_num_threads(1) later does not stop them. Programs that run
/// pipelines call this first thing in main: unless OPENBLAS_NUM_THREADS=1 is
/// already in the environment, it sets it and re-executes the program with
/// the same arguments (OpenBLAS then runs on its callers' threads; the
/// kernels split GEMMs over threads themselves). Returns only when the
/// environment is right or re-execution is impossible.
void ensureSingleThreadedBlas(char **argv);

/// The MPI session of a process started by mpirun: initializes MPI (with
/// the thread support the engine needs) once; rank and size of the world.
Status initializeMpi(int *argc, char ***argv);
int mpiRank();
int mpiSize();
/// Ends MPI normally (after a successful run).
void finalizeMpi();
/// After a failure in an MPI run: tells the other processes (unless
/// `announce` is false: the failure came from one of them), gives them a
/// moment to print their flight recorders, and ends the whole job with
/// exit code 1. Does not return.
[[noreturn]] void abortMpiJob(const std::string &message, bool announce);
/// Under MPI: fails unless every process passes the same `value` (what the
/// error calls `what`), e.g. the checkpoint each resumes from. Succeeds at
/// once without MPI.
Status checkSameOnEveryProcess(const std::string &value,
                               const std::string &what, double timeoutSeconds);

/// Whether `message` (a run's error) reports another process's failure
/// rather than this one's.
bool isRemoteFailure(const std::string &message);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_ENGINE_H
