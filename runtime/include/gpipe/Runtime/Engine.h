//===- Engine.h - Training compiled pipelines -------------------*- C++ -*-===//
//
// The training engine behind gpipe-run. It runs a ModelImage (ModelImage.h):
// one thread per rank, each with one arena allocated once (canary-filled so
// the bytes the program really touched can be measured against the plan),
// ranks exchanging activations and gradients through a Transport
// (Transport.h: rank threads of this process, MPI or NCCL), data from a
// Dataset (Dataset.h: a safetensors file or built in), and the optimizer
// the user picked (Optimizer.h) within the state the plan reserved. Where
// the arenas live and how their bytes are reached is the Device's
// (Device.h): host memory for the CPU, GPU memory and streams for CUDA.
// Every wait has a timeout; a failing rank aborts the run, every thread winds
// down and run() returns the first error, never hanging.
//
// This header is the run API: what a run is asked to do (RunOptions), what
// it reports (RunResult), and the files made from a run's parameters and
// outputs. Checkpoints (TrainingState) are Checkpoint.h's, traces and
// profiles Trace.h's.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_ENGINE_H
#define GPIPE_RUNTIME_ENGINE_H

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/ModelImage.h"
#include "gpipe/Runtime/Optimizer.h"
#include "gpipe/Runtime/Status.h"
#include "gpipe/Runtime/Trace.h"
#include "gpipe/Runtime/Transport.h"

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

class Dataset;
class Device;
struct TrainingState;

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

struct RunOptions;

/// RunOptions::evalDataPath naming the built-in data's evaluation split,
/// and its size in mini-batches.
inline constexpr const char *kBuiltinEvalData = "builtin";
inline constexpr int64_t kBuiltinEvalBatches = 8;

/// With `options.epochs` > 0: sets `options.steps` to epochs x floor(N / B)
/// for the run's data (a file's is read and kept in `options.dataset`).
/// Engine::run does it too; a caller that needs the step count first (to
/// compare it with a checkpoint's) calls it before.
Status resolveEpochs(const ModelMetadata &meta, RunOptions &options);

/// Parses "rank=R[,replica=D][,step=S][,action=A][,mode=stop|stall|kill]".
Status parseFaultInjection(std::string_view spec, FaultInjection &fault);

/// Metrics of one training step.
struct StepMetrics {
  /// Counted from 1.
  int64_t step = 0;
  /// With RunOptions::epochs or shuffle, the epoch (from 1), else 0.
  int64_t epoch = 0;
  /// Mean of the micro-batch losses (NaN when the model reports none).
  double loss = 0.0;
  /// The learning rate of the step's updates.
  double lr = 0.0;
  /// The global gradient norm before clipping (NaN when the model does not
  /// clip).
  double gradNorm = std::numeric_limits<double>::quiet_NaN();
  double seconds = 0.0;
  double samplesPerSecond = 0.0;
  /// Per worker (rank): compute time over the step's wall time.
  std::vector<double> busyFraction;
};

/// One evaluation of the model on the evaluation data (RunOptions::
/// evalDataPath): the training loss over every sample, from the logits the
/// evaluation programs compute with the parameters after step `step`.
struct EvalMetrics {
  /// The training step it follows (counted from 1).
  int64_t step = 0;
  /// Cross-entropy: the mean over every position's -log softmax of its
  /// label (each sample's rows); mse: the mean squared error over every
  /// element. Summed in double in sample order.
  double loss = 0.0;
  /// Cross-entropy: the fraction of positions whose largest logit (the
  /// first, on ties) is the label; NaN for mse.
  double accuracy = std::numeric_limits<double>::quiet_NaN();
  /// Samples evaluated (the whole evaluation data; the padding of its last
  /// mini-batch is left out).
  int64_t samples = 0;
  double seconds = 0.0;
};

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

struct RunOptions {
  TransportKind transport = TransportKind::Local;
  /// Where the arenas live and the kernels run; null: the device of the
  /// model's target (makeDevice(target, 0)). Must match the target.
  std::shared_ptr<Device> device;
  /// The step to train up to (counted from 1): with `resume` at step s,
  /// steps s+1..steps run.
  int64_t steps = 10;
  /// Epochs over the data instead of `steps`: steps = epochs x
  /// floor(N / B) for N samples and mini-batch B (with `resume`, the step
  /// to train up to is that). 0: train `steps` steps.
  int64_t epochs = 0;
  /// Each epoch takes the samples in a permutation drawn from the seed and
  /// the epoch (the same on every process, K and schedule). With `epochs`
  /// or `shuffle` a run goes epoch by epoch: an epoch is floor(N / B)
  /// whole mini-batches and its last N mod B samples (in its order) are
  /// left out; otherwise steps take the samples in file order and wrap
  /// around.
  bool shuffle = false;
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
  /// Evaluation (a library compiled with --eval): the data at
  /// `evalDataPath` (or `evalDataset`), evaluated after every `evalEvery`
  /// steps (0: only after the last) and after the last step, mini-batch by
  /// mini-batch (the last padded with the data's first samples, their
  /// outputs left out). It runs the evaluation programs in the training
  /// arenas between steps and changes nothing training computes.
  /// kBuiltinEvalData ("builtin"): the built-in data's evaluation split
  /// (makeBuiltinDataset), kBuiltinEvalBatches mini-batches of it.
  std::shared_ptr<const Dataset> evalDataset;
  std::string evalDataPath;
  int64_t evalEvery = 0;
  /// Called on the calling thread (process 0) after each evaluation.
  std::function<void(const EvalMetrics &)> onEval;
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

struct RunResult {
  OptimizerConfig optimizer;
  /// Device::describe() of the device the run used.
  std::string deviceDescription;
  std::string dataDescription;
  std::vector<StepMetrics> steps;
  /// The evaluations, in order (RunOptions::evalDataPath; process 0).
  std::vector<EvalMetrics> evals;
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
  /// With RunOptions::timeKernels: the sgemm calls and time by shape over
  /// the same ranks and steps (the rank threads'); incomplete when a rank
  /// ran more shapes than it keeps (GPIPE_RT_GEMM_SHAPES).
  std::vector<gpipe_rt_gemm_shape_time> gemmShapes;
  bool gemmShapesIncomplete = false;
  /// The threads each rank ran its GEMMs on (RunOptions::
  /// blasThreads resolved; 0 for a device without CPU kernels), and why
  /// that many.
  int64_t blasThreads = 0;
  std::string blasThreadsReason;
  /// The GEMM implementations the model's choice runs (empty for a device
  /// without CPU kernels).
  std::string gemm;
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

/// OpenBLAS sizes its thread pool when it is loaded, before main: the
/// pool's idle threads spin and steal the cores the rank threads need, and
/// openblas_set_num_threads(1) later does not stop them. Programs that run
/// pipelines call this first thing in main: unless OPENBLAS_NUM_THREADS=1 is
/// already in the environment, it sets it and re-executes the program with
/// the same arguments (OpenBLAS then runs on its callers' threads; the
/// kernels split GEMMs over threads themselves). Returns only when the
/// environment is right or re-execution is impossible.
void ensureSingleThreadedBlas(char **argv);

/// The first "model name" of /proc/cpuinfo, or "unknown": the CPU a
/// profile (gpipe-run --profile, gpipe-calibrate) was measured on.
std::string getCpuName();

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_ENGINE_H
