//===- RunState.h - What one Engine::run shares between threads -*- C++ -*-===//
//
// The state of one training run and the pieces of the engine that act on
// it, each in its own file:
//
//   Engine.cpp         Engine::run: set-up, the loop over steps, the report
//   Callbacks.cpp      the gpipe_rt_* callbacks of Program.h (rank threads)
//   StepLoop.cpp       a rank thread's steps and the main thread's step
//                      barrier, metrics, losses and deferred updates
//   Reports.cpp        what crosses processes between steps (per-step
//                      records, persistent blocks) and the final report
//   Checkpointing.cpp  resuming from and writing checkpoints
//   FlightRecorder.cpp each rank's last actions, for failures
//   Faults.cpp         injected faults
//   Trace.cpp          Chrome traces
//
// Moving transfer payloads is the Transport's (Transport.h), where arenas
// live and kernels run the Device's (Device.h). Internal to the engine.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_ENGINE_RUNSTATE_H
#define GPIPE_RUNTIME_LIB_ENGINE_RUNSTATE_H

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Dataset.h"
#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/Engine.h"
#include "gpipe/Runtime/Transport.h"

#include "Arena.h"
#include "FlightRecorder.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace gpipe::rt {

class RunState;

using Clock = std::chrono::steady_clock;

/// Where a non-finite value was found, in the order values flow through a
/// step: payloads leaving forwards by stage ascending (a loss with its last
/// stage's forward), payloads leaving backwards by stage descending, then
/// gradient blocks by stage descending; micro-batch next. Of several reports
/// in a step the smallest is where the value appeared (the rest follow from
/// it), whichever rank noticed first.
struct NonFiniteSite {
  int64_t phase = 0, position = 0, mb = 0;
  static NonFiniteSite forward(int64_t stage, int64_t mb) {
    return {0, stage, mb};
  }
  static NonFiniteSite backward(int64_t stage, int64_t mb) {
    return {1, -stage, mb};
  }
  static NonFiniteSite gradients(int64_t stage) { return {2, -stage, 0}; }
  bool operator<(const NonFiniteSite &o) const {
    return std::tie(phase, position, mb) < std::tie(o.phase, o.position, o.mb);
  }
};

} // namespace gpipe::rt

/// A worker's view of the run (Program.h): its plan, its arena and what it
/// is doing in the current step. A worker is one pipeline rank of one
/// data-parallel replica (just the rank without data parallelism). Only the
/// worker's own thread touches it during a step; the main thread reads it
/// at the step barrier.
namespace gpipe::rt {
/// What an inspection looked at, to handle its answer now or at the end of
/// the step (plain data: recording one allocates nothing once the vector
/// has grown).
struct InspectionSite {
  enum Kind : uint8_t { Payload, Loss, Gradients } kind = Payload;
  /// The action that asked (payloads: the send).
  int64_t action = -1;
  int64_t stage = 0, mb = 0;
  /// Payloads: whether activations (forward) or gradients.
  bool forward = true;
  /// Gradients: the stage's plan (parameter names).
  const StagePlan *plan = nullptr;
};
} // namespace gpipe::rt

struct gpipe_rt_rank {
  gpipe::rt::RunState *run = nullptr;
  /// The worker: replica * K + rank (the process of an MPI run).
  int64_t index = 0;
  /// Its pipeline rank and replica, and its name in messages
  /// (RunState::workerName).
  int64_t rank = 0, replica = 0;
  std::string name;
  const gpipe::rt::RankPlan *plan = nullptr;
  /// The arena on the device (what the program gets).
  uint8_t *arena = nullptr;
  /// The device side of the rank (null for other processes' ranks).
  gpipe::rt::RankDevice *device = nullptr;
  /// Inspections the device answers when the step ends, in the order they
  /// were asked: what each one looked at.
  std::vector<gpipe::rt::InspectionSite> deferred;
  /// When the current step started (the engine's clock).
  int64_t stepStartNs = 0;
  /// Set while the device's deferred answers are handled (finishStep).
  bool finishing = false;

  /// The current step, from 0 (while evaluating: the step evaluated after).
  int64_t step = 0;
  /// Running the evaluation programs (ModelMetadata::eval) on mini-batch
  /// `evalBatch` of the evaluation data instead of a training step; the
  /// rank's sums over the current evaluation (the rank that reports the
  /// outputs: the last stage's), in sample order.
  bool evaluating = false;
  int64_t evalBatch = -1;
  double evalLoss = 0.0;
  int64_t evalCorrect = 0, evalCount = 0;
  std::vector<uint8_t> evalLabels;
  /// The action begin expects next, the one running (-1 between actions)
  /// and the last one begun.
  int64_t nextAction = 0, current = -1, lastBegun = -1;
  int64_t actionBeginNs = 0;
  /// Compute time of the current step.
  int64_t busyNs = 0;
  /// Operator-new allocations the rank's thread made in the current step
  /// (HeapCount.h).
  int64_t heapAllocations = 0;
  /// With RunOptions::timeKernels: the rank thread's kernel nanoseconds
  /// per class in the current step.
  std::array<int64_t, GPIPE_RT_KERNEL_CLASS_COUNT> kernelNs{};
  /// With RunOptions::timeKernels: the rank thread's sgemm times by shape
  /// in the current step (-1: more shapes than kept).
  std::array<gpipe_rt_gemm_shape_time, GPIPE_RT_GEMM_SHAPES> gemmShapes{};
  int32_t gemmShapeCount = 0;
  /// The device's answers at the end of a step (kept: no allocation per
  /// step).
  std::vector<gpipe::rt::Inspection> inspections;
  std::vector<gpipe::rt::ActionTiming> timings;
  /// Stopped by fault injection.
  bool dead = false;
  /// Per stage the rank holds (plan order): optimizer steps taken, and the
  /// step the optimizer last ran in.
  std::vector<int64_t> optimizerSteps, lastStepped;
  /// Per stage the rank holds: a gradient reduction was started this step
  /// and its step has not waited for it yet.
  std::vector<char> reducing;
  /// Per held stage: its reduction finished early (SUM_TIED or CLIP_GRAD
  /// waited for it).
  std::vector<char> reduced;
  /// CLIP_GRAD: the global gradient norm of the current step (NaN before).
  double gradNorm = std::numeric_limits<double>::quiet_NaN();
  /// CLIP_GRAD: the rank holding each stage, and the held stages (plan
  /// indices) in stage order; filled at its first call.
  std::vector<int64_t> stageHolders;
  std::vector<size_t> stagesInOrder;
  /// The current step's losses by micro-batch.
  std::vector<double> losses;
  std::vector<char> lossReported;
  /// When the run keeps outputs (RunState::keepsOutputs): the replica's
  /// share of the step's outputs (M micro-batches, host memory, allocated
  /// once) and which micro-batches reported theirs.
  std::vector<uint8_t> outputs;
  std::vector<char> outputReported;
  /// Every action's times, when the run records a trace.
  std::vector<gpipe::rt::RecordedAction> events;
  /// RunOptions::profileLayers: the current action's layer marks (mark,
  /// time), and every compute action's time per layer.
  std::vector<std::pair<int64_t, int64_t>> marks;
  std::vector<gpipe::rt::RecordedLayer> layerTimes;
  gpipe::rt::FlightRecorder recorder;
  /// NonFinitePolicy::Skip: the updates of this step, applied after the
  /// step if every rank finished it cleanly.
  struct PendingUpdate {
    size_t local;
    float *params;
    const float *grads;
    float *state;
  };
  std::vector<PendingUpdate> pending;
};

namespace gpipe::rt {

/// One stage's step on `device` (a RankDevice, or the Device for deferred
/// updates): the optimizer over the trainable parameters, then each batch
/// norm's running statistics from their accumulated sums.
template <typename AnyDevice>
Status stepStage(AnyDevice &device, const OptimizerConfig &config, int64_t step,
                 const StagePlan &plan, float *params, const float *grads,
                 float *state) {
  Status s = device.optimizerStep(config, step, params, grads, state,
                                  plan.trainableBytes / 4);
  for (const RunningStatsSlot &stats : plan.runningStats) {
    if (!s.ok())
      break;
    s = device.runningStatsUpdate(
        params + stats.meanOffset / 4, params + stats.varOffset / 4,
        grads + stats.meanOffset / 4, grads + stats.varOffset / 4,
        stats.channels, stats.count, stats.momentum);
  }
  return s;
}

/// Everything one Engine::run shares between its threads.
class RunState final : public RunControl {
public:
  RunState(const ModelImage &model, const RunOptions &options)
      : model(model), meta(model.metadata()), options(options),
        timeoutNs(int64_t(options.timeoutSeconds * 1e9)), start(Clock::now()),
        startStep(options.resume ? options.resume->step : 0) {}

  const ModelImage &model;
  const ModelMetadata &meta;
  const RunOptions &options;
  int64_t timeoutNs;
  Clock::time_point start;
  /// The first step this run takes (from 0): the resumed checkpoint's step.
  int64_t startStep;

  //===--------------------------------------------------------------------===//
  // Set-up (Engine.cpp)
  //===--------------------------------------------------------------------===//

  /// Where the arenas live and the kernels run.
  std::shared_ptr<Device> devicePtr;
  Device *device = nullptr;
  OptimizerConfig optimizer;
  /// Epochs (RunOptions::epochs or shuffle): whole mini-batches per epoch,
  /// 0 otherwise; the current epoch's sample order and its epoch.
  int64_t stepsPerEpoch = 0;
  std::vector<int64_t> epochOrder;
  int64_t orderEpoch = -1;
  std::shared_ptr<const Dataset> dataPtr;
  const Dataset *data = nullptr;
  /// RunOptions::evalDataPath's data (null without evaluation).
  std::shared_ptr<const Dataset> evalDataPtr;
  const Dataset *evalData = nullptr;
  /// What the rank threads do, in order, released one at a time: the
  /// training steps, each followed by the evaluation due after it, one
  /// item per mini-batch of the evaluation data (evalBatch >= 0).
  struct Work {
    int64_t step = 0;
    int64_t evalBatch = -1;
  };
  std::vector<Work> work;
  /// Fills `work` for steps startStep..steps-1 (RunOptions::evalEvery).
  void planWork();
  /// ceil(N / B) for the evaluation data's N samples.
  int64_t numEvalBatches() const {
    return evalData ? (evalData->numSamples() + meta.batchSize() - 1) /
                          meta.batchSize()
                    : 0;
  }
  std::unique_ptr<Transport> transport;
  /// Distributed transports: this process runs only rank `me`, and process
  /// 0 (`root`) gathers.
  bool mpi = false, root = true;
  int me = 0;
  /// The arenas, and the engine's host view of each (null for ranks this
  /// process neither runs nor collects); the local ranks' device sides.
  std::vector<std::unique_ptr<Arena>> arenas;
  std::vector<uint8_t *> views;
  std::vector<std::unique_ptr<RankDevice>> rankDevices;
  std::vector<gpipe_rt_rank> ranks;
  /// OpenBLAS threads per local rank (chooseBlasThreads).
  int64_t blasThreads = 1;

  bool isLocal(int64_t worker) const { return !mpi || worker == me; }
  /// Pipeline ranks K, replicas D and workers K x D (ranks, arenas, views
  /// and the per-worker tables are indexed by worker; replica 0's workers
  /// are 0..K-1, the ones process 0 gathers).
  int64_t numRanks() const { return meta.numRanks(); }
  int64_t numReplicas() const { return meta.dataParallel; }
  int64_t numWorkers() const { return meta.numWorkers(); }
  int64_t numLocal() const { return mpi ? 1 : numWorkers(); }

  Status chooseDevice(RunResult &result);
  Status prepareData(RunResult &result);
  Status startTransport();
  /// Resolves RunOptions::blasThreads (after startTransport: MPI runs one
  /// rank per process).
  Status chooseBlasThreads(RunResult &result);
  /// Installs the model's GEMM choice (ModelMetadata::gemm) in the CPU
  /// kernels: which implementation each GEMM shape runs on.
  Status installGemmChoice(RunResult &result);
  Status allocateArenas();
  /// Uploads the arenas and makes each local rank's device side and view.
  Status prepareRanks();

  //===--------------------------------------------------------------------===//
  // Failures (RunControl)
  //===--------------------------------------------------------------------===//

  std::mutex mu;
  std::condition_variable mainCv;
  std::vector<std::unique_ptr<std::condition_variable>> rankCvs;
  std::atomic<bool> abortFlag{false};
  /// (step from 1 or 0 for none, message); the first is the run's error.
  std::vector<std::pair<int64_t, std::string>> errors;

  const std::atomic<bool> &aborted() const override { return abortFlag; }
  bool isAborted() const { return abortFlag.load(std::memory_order_relaxed); }

  int64_t nowNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                                start)
        .count();
  }
  Clock::time_point deadline() const {
    return Clock::now() + std::chrono::nanoseconds(timeoutNs);
  }

  /// Records an error and aborts the run; `mu` must be held.
  void failLocked(int64_t step, std::string message);
  void fail(int64_t step, std::string message) {
    std::lock_guard<std::mutex> lock(mu);
    failLocked(step, std::move(message));
  }
  void fail(const gpipe_rt_rank *rank, std::string message) {
    fail(rank->step + 1, std::move(message));
  }
  void failRank(int64_t rank, std::string message) override {
    fail(&ranks[size_t(rank)], std::move(message));
  }
  /// The run's first error, "step S: ..." when it names a step.
  Status firstError() const;
  /// When the first error is an expired wait and a local rank has been
  /// running one action's layers (no waits inside) for longer than the
  /// timeout at `nowNs`: "the timeout is the likely cause: ...", naming the
  /// longest-running such action. Empty otherwise (a dead or stalled peer).
  std::string timeoutCause(int64_t nowNs) const;

  /// "rank 1 (stage 1, micro-batch 3, recv forward from rank 0)"; with
  /// data parallelism "replica 1 rank 1 (...)".
  std::string where(const gpipe_rt_rank *rank, int64_t action) const;
  /// "rank 1", or "replica 1 rank 1" with data parallelism.
  std::string workerName(int64_t worker) const;
  std::string where(int64_t rank, int64_t action) const override {
    return where(&ranks[size_t(rank)], action);
  }
  /// The action a callback outside begin/end is attributed to.
  static int64_t currentAction(const gpipe_rt_rank *rank) {
    return rank->current >= 0 ? rank->current : rank->lastBegun;
  }

  //===--------------------------------------------------------------------===//
  // Callbacks (Callbacks.cpp)
  //===--------------------------------------------------------------------===//

  int32_t actionBegin(gpipe_rt_rank *rank, int64_t action);
  void actionEnd(gpipe_rt_rank *rank, int64_t action);
  /// RunOptions::profileLayers: the finished compute action's time per
  /// layer, from its marks (the time before the first mark as mark -1).
  void recordLayerTimes(gpipe_rt_rank *rank, int64_t action, int64_t endNs);
  int32_t transfer(gpipe_rt_rank *rank, int64_t action, bool isSend,
                   const void *sendData, void *recvData, int64_t bytes,
                   void *staging = nullptr);
  int32_t load(gpipe_rt_rank *rank, bool labels, int64_t mb, void *data,
               int64_t bytes);
  int32_t reportLoss(gpipe_rt_rank *rank, int64_t mb, const float *loss);
  int32_t reportOutput(gpipe_rt_rank *rank, int64_t mb, const void *data,
                       int64_t bytes);
  /// While evaluating: micro-batch `mb`'s logits at device address `data`
  /// into the rank's evaluation sums, against the evaluation data's labels
  /// (the padding past its last sample left out).
  int32_t evaluateOutput(gpipe_rt_rank *rank, int64_t mb, const void *data,
                         int64_t bytes);
  /// Whether step `step` (from 0) keeps its outputs: every step of a
  /// prediction, the first of a training run asked to keep them.
  bool keepsOutputs(int64_t step) const {
    return meta.output &&
           (options.predict || (options.keepOutputs && step == startStep));
  }
  /// Bytes of one sample of the output (0 without one).
  int64_t outputSampleBytes() const {
    return meta.output ? meta.output->sampleBytes() : 0;
  }
  int32_t optimizerStep(gpipe_rt_rank *rank, int64_t stage, float *params,
                        const float *grads, float *state, int64_t count);
  int32_t reduceGradients(gpipe_rt_rank *rank, int64_t action, float *grads,
                          float *scratch, int64_t count);
  int32_t sumTied(gpipe_rt_rank *rank, int64_t action, float *scratch);
  int32_t clipGrad(gpipe_rt_rank *rank, int64_t action, double *norm);
  /// SUM_TIED and CLIP_GRAD: `action` is of `kind` and the target the CPU
  /// (`what` "is done on the CPU target only"); false after failing the run
  /// with an error located at the rank's action and `function` (the
  /// callback's name). Builds no text when the checks pass: steady-state
  /// steps allocate nothing.
  bool checkHostAction(gpipe_rt_rank *rank, int64_t action, ActionKind kind,
                       const char *function, const char *what);
  /// One message of `bytes` at `data` to or from pipeline rank `peerRank`
  /// of the rank's own replica.
  bool exchangeInReplica(gpipe_rt_rank *rank, int64_t action, bool send,
                         int64_t peerRank, int64_t tag, void *data,
                         int64_t bytes);
  /// The data sample at `position` of step `step`'s mini-batch (replica
  /// d's share first, then the micro-batches in order). Steps in file order
  /// wrap around; with epochs, the epoch's order (see prepareEpoch).
  int64_t sampleOf(int64_t step, int64_t position) const {
    if (stepsPerEpoch == 0)
      return (step * meta.batchSize() + position) % data->numSamples();
    return epochOrder[size_t((step % stepsPerEpoch) * meta.batchSize() +
                             position)];
  }
  /// Epochs: the sample order of step `step`'s epoch, computed when the
  /// epoch changes (on the main thread, between steps): the file's order,
  /// or with RunOptions::shuffle a permutation drawn from the seed and the
  /// epoch.
  void prepareEpoch(int64_t step);
  /// Waits until the replicas' sum of held stage `local`'s gradients is
  /// complete (at once without data parallelism or a started reduction).
  bool finishReductionEarly(gpipe_rt_rank *rank, size_t local);
  int32_t kernelError(gpipe_rt_rank *rank, int64_t site, int32_t status);

  /// A non-finite value found at `rank`: stops the run at once (returns 1)
  /// when the policy is Stop and the value was seen as it appeared;
  /// otherwise marks the step (returns 0): Skip drops the step's updates,
  /// and Stop with checks a device answered at the end of the step stops
  /// the run at the step barrier, naming the earliest site.
  int32_t nonFinite(gpipe_rt_rank *rank, NonFiniteSite site,
                    std::string message);
  /// Asks the rank's device about `count` floats at `src` (what `site`
  /// names); the answer is handled now (handleInspection) or when the step
  /// ends. Returns what handleInspection returned (0 when deferred).
  int32_t inspect(gpipe_rt_rank *rank, const float *src, int64_t count,
                  const InspectionSite &site);
  /// A non-finite value, a loss: what an inspection's answer means.
  int32_t handleInspection(gpipe_rt_rank *rank, const InspectionSite &site,
                           const Inspection &answer);
  /// NaN injection into a payload at device address `data` when due.
  int32_t maybeInjectNan(gpipe_rt_rank *rank, int64_t mb, void *data,
                         int64_t bytes);

  /// The earliest non-finite value of the current step.
  std::string nonFiniteMessage;
  NonFiniteSite nonFiniteSite;

  //===--------------------------------------------------------------------===//
  // Steps (StepLoop.cpp)
  //===--------------------------------------------------------------------===//

  /// The last item of `work` the main thread released (-1 before the
  /// first).
  int64_t released = -1;
  std::vector<char> finished;
  int64_t finishedCount = 0, lastFinishNs = 0;
  /// When any rank last began or ended an action.
  std::atomic<int64_t> lastProgressNs{0};
  std::vector<std::thread> threads;
  /// Rank threads that have returned, and which ranks' (under `mu`;
  /// mainCv is notified).
  size_t exitedThreads = 0;
  std::vector<char> threadExited;
  /// Per rank: compute time, and the wall time, over the steps the bubble
  /// counts (all but the first when there are several).
  std::vector<int64_t> busyTotal;
  int64_t wallTotal = 0, countedSteps = 0;

  void startRankThreads();
  /// Joins the rank threads; when the run failed and some do not end
  /// within the timeout, hands RunOptions::onStuck the reason (never
  /// returns then).
  void joinRankThreads();
  /// A rank thread: its program once per released step.
  void rankMain(gpipe_rt_rank *rank);
  /// Waits for the rank's device at the end of its step and handles what
  /// it reports; false when the run is failing.
  bool finishStep(gpipe_rt_rank *rank);
  /// The main thread's step `step` (from 0): releases it, waits at the
  /// barrier, then metrics, loss, deferred updates and checkpoint. False
  /// when the run failed.
  bool runStep(int64_t step, RunResult &result);
  /// Releases step `step` to the local rank threads and waits at the
  /// barrier (with the run's timeout) for all of them or the first error;
  /// `stepStart` is when it was released. False when the run failed.
  bool releaseStep(int64_t step, int64_t &stepStart);
  /// The main thread's share of an evaluation item: releases it; after the
  /// evaluation's last mini-batch, gathers the sums (from the last stage's
  /// process under MPI) into `result.evals` and RunOptions::onEval. False
  /// when the run failed.
  bool runEvalBatch(const Work &item, RunResult &result);
  int64_t evalStartNs = 0;
  /// A steady step's kernel times, busy time and heap allocations of the
  /// local ranks, added to `result`'s totals.
  void addSteadyTotals(RunResult &result);
  /// Each worker's busy fraction of the step's `wall` time into `metrics`
  /// (and into the bubble's totals when the step counts), and the guard
  /// zones of the local arenas checked. False when the run failed.
  bool measureAndCheckGuards(int64_t step, int64_t wall, StepMetrics &metrics);
  /// The step's loss: the micro-batch losses in order (replica by replica),
  /// summed in double, over M x D; NaN when no rank reported one. False
  /// when a loss is reported twice or missing.
  bool sumStepLoss(int64_t step, double &loss);
  /// After the first step: the gradients into `result.firstGradients` on
  /// process 0. False when the run failed.
  bool collectFirstGradients(int64_t step, RunResult &result);
  /// NonFinitePolicy::Skip: the step's deferred updates, all or none (none
  /// when a non-finite value was seen, which `result` records). False when
  /// an update failed.
  bool applySkippableUpdates(int64_t step, RunResult &result);
  /// The step's outputs into `result.outputs`, in sample order (every
  /// worker's, after the exchange under MPI); a prediction leaves out the
  /// padding past the data's last sample. False when one is missing.
  bool collectOutputs(int64_t step, RunResult &result);
  bool countsForBubble(int64_t step) const {
    return options.steps - startStep == 1 || step > startStep;
  }

  //===--------------------------------------------------------------------===//
  // Between processes and the report (Reports.cpp)
  //===--------------------------------------------------------------------===//

  /// Distributed: process 0 learns every rank's busy time, losses and
  /// non-finite values; everyone learns whether the step's updates apply.
  bool exchangeStepRecords(int64_t step);
  /// Brings the local ranks' persistent blocks into the host views and,
  /// distributed, every other process's into process 0's copies.
  bool gatherBlocks(int64_t step);
  /// Distributed: process 0 sums every process's evaluation sums (in
  /// process order) into `loss`, `correct` and `count`.
  bool gatherEvalSums(int64_t step, double &loss, int64_t &correct,
                      int64_t &count);
  /// Measured arenas, the trace and the final parameters.
  Status report(RunResult &result);

  //===--------------------------------------------------------------------===//
  // Checkpoints (Checkpointing.cpp)
  //===--------------------------------------------------------------------===//

  /// RunOptions::resume's parameters and optimizer state into the views.
  Status restoreCheckpoint();
  /// After step `step` (from 0), when one is due: gathers, writes on
  /// process 0, and makes every process learn how the write went.
  bool checkpointIfDue(int64_t step);
};

/// The checkpoint name of the optimizer state `config` keeps.
std::string stateKindName(const OptimizerConfig &config);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_LIB_ENGINE_RUNSTATE_H
