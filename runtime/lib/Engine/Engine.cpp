//===- Engine.cpp - Training a compiled pipeline ---------------*- C++ -*-===//
//
// Engine::run: set-up, the loop over steps, the report. Set-up picks the
// device (Device.h) and the transport (Transport.h), resolves the optimizer
// and the data, allocates one arena per rank (once, aligned, with a guard
// zone after it; arena and guard are filled with a canary pattern and the
// parameters, gradients and optimizer state are put in place), restores a
// checkpoint, and starts one thread per local rank. The loop runs the steps
// (StepLoop.cpp). The report measures the arenas against the plan and
// gathers what a distributed run's other processes hold (Reports.cpp).
// RunState.h lists where each part of a run lives.
//
//===----------------------------------------------------------------------===//

#include "RunState.h"

#include "Faults.h"

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Dataset.h"
#include "gpipe/Runtime/SafeTensors.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <set>
#include <sys/resource.h>
#include <unistd.h>

namespace gpipe::rt {
namespace {

Status checkRunOptions(const ModelMetadata &meta, const RunOptions &options) {
  if (options.predict && !meta.inference)
    return Status::error("this model was compiled for training; compile it "
                         "with gpipe-compile --inference to predict");
  if (!options.predict && meta.inference)
    return Status::error("this model was compiled with --inference and "
                         "cannot train; run it with --predict");
  if ((options.predict || options.keepOutputs) && !meta.output)
    return Status::error("the model library describes no output (compiled "
                         "by an older gpipe-compile?); recompile it");
  if (options.predict && !options.dataset && options.dataPath.empty())
    return Status::error("prediction needs data: give the samples to run "
                         "the model on");
  if (options.steps < 1)
    return Status::error("the number of steps must be at least 1");
  if (options.epochs < 0)
    return Status::error("the number of epochs must be at least 1, got " +
                         std::to_string(options.epochs));
  if (options.predict && (options.epochs > 0 || options.shuffle))
    return Status::error("a prediction runs over the data once, in order: "
                         "no epochs or shuffling");
  const bool evaluates = options.evalDataset || !options.evalDataPath.empty();
  if (evaluates && options.predict)
    return Status::error("evaluation data is for training runs; a "
                         "prediction runs the whole data already");
  if (evaluates && !meta.eval)
    return Status::error("this model library has no evaluation programs; "
                         "compile it with gpipe-compile --eval to evaluate "
                         "during training");
  if (options.evalEvery < 0)
    return Status::error("the evaluation interval must be at least 0, got " +
                         std::to_string(options.evalEvery));
  if (options.evalEvery > 0 && !evaluates)
    return Status::error("an evaluation interval needs evaluation data");
  if (!(options.timeoutSeconds > 0) || !std::isfinite(options.timeoutSeconds) ||
      options.timeoutSeconds > 1e6)
    return Status::error("the timeout must be more than 0 and at most "
                         "1000000 seconds, got " +
                         std::to_string(options.timeoutSeconds));
  return checkFaultInjection(meta, options);
}

/// The whole mini-batches of an epoch: data with an end, at least one.
Status getStepsPerEpoch(const ModelMetadata &meta, const Dataset &data,
                        int64_t &steps) {
  if (data.isEndless())
    return Status::error("--epochs and --shuffle need data with an end: the "
                         "built-in data (" +
                         data.describe() +
                         ") is generated without one; pass --data "
                         "FILE.safetensors");
  steps = data.numSamples() / meta.batchSize();
  if (steps < 1)
    return Status::error(
        "an epoch needs at least one mini-batch: the data holds " +
        std::to_string(data.numSamples()) +
        " samples, the model's mini-batch is " +
        std::to_string(meta.batchSize()));
  return Status::success();
}

/// The run's data: the file at options.dataPath, else the built-in data
/// the metadata names, from the run's seed.
Status loadRunData(const ModelMetadata &meta, const RunOptions &options,
                   std::shared_ptr<const Dataset> &out) {
  std::unique_ptr<Dataset> loaded;
  Status s = options.dataPath.empty()
                 ? makeBuiltinDataset(meta, options.seed, loaded)
                 : loadDataset(options.dataPath, meta, loaded);
  if (s.ok())
    out = std::move(loaded);
  return s;
}

} // namespace

//===----------------------------------------------------------------------===//
// Set-up
//===----------------------------------------------------------------------===//

Status RunState::chooseDevice(RunResult &result) {
  devicePtr = options.device;
  if (!devicePtr) {
    if (Status s = makeDevice(meta.target, 0, devicePtr); !s.ok())
      return s;
  }
  if (meta.target != devicePtr->target())
    return Status::error("the model was compiled for --target " + meta.target +
                         " but the run's device is " + devicePtr->describe() +
                         " (--target " + devicePtr->target() + ")");
  device = devicePtr.get();
  result.deviceDescription = device->describe();
  return Status::success();
}

Status RunState::installGemmChoice(RunResult &result) {
  if (meta.target != "cpu")
    return Status::success();
  const ModelMetadata::GemmChoice &choice = meta.gemm;
  int32_t impl =
      choice.impl == "libxsmm" ? GPIPE_RT_GEMM_LIBXSMM : GPIPE_RT_GEMM_OPENBLAS;
  const char *cells[4] = {};
  int64_t libxsmmCells = 0, allCells = 0;
  for (size_t layout = 0; layout < 4; ++layout)
    if (!choice.cells[layout].empty()) {
      cells[layout] = choice.cells[layout].c_str();
      allCells += int64_t(choice.cells[layout].size());
      libxsmmCells += std::count(choice.cells[layout].begin(),
                                 choice.cells[layout].end(), '1');
    }
  if (gpipe_rt_cpu_set_gemm_choice(impl, choice.grid.data(),
                                   int32_t(choice.grid.size()),
                                   cells) != GPIPE_RT_SUCCESS)
    return Status::error(std::string("the model's GEMM choice: ") +
                         gpipe_rt_last_error());
  if (!choice.grid.empty())
    result.gemm = "per shape (libxsmm for " + std::to_string(libxsmmCells) +
                  " of " + std::to_string(allCells) +
                  " shape classes, OpenBLAS for the rest)";
  else if (impl == GPIPE_RT_GEMM_LIBXSMM)
    result.gemm = "libxsmm";
  else
    result.gemm = "OpenBLAS";
  return Status::success();
}

Status RunState::chooseBlasThreads(RunResult &result) {
  int64_t asked = options.blasThreads;
  if (asked < 0 || asked > 1024)
    return Status::error("the BLAS threads per rank must be 0 (automatic) "
                         "to 1024, got " +
                         std::to_string(asked));
  if (meta.target != "cpu") {
    result.blasThreads = 0;
    result.blasThreadsReason =
        "the kernels run on the " + meta.target + " device";
    return Status::success();
  }
  int64_t local = numLocal();
  if (asked > 1 && local > 1)
    return Status::error(
        std::to_string(asked) + " BLAS threads per rank: this process runs " +
        std::to_string(local) +
        " rank threads, and the kernels have one "
        "thread pool per process, so each rank runs its GEMMs on 1 thread "
        "(leave "
        "the count automatic, or run one rank per process: mpirun with "
        "--transport mpi)");
  if (asked > 0) {
    blasThreads = asked;
    result.blasThreadsReason = "asked for";
  } else if (local > 1) {
    blasThreads = 1;
    result.blasThreadsReason =
        std::to_string(local) + " rank threads share one kernel thread pool";
  } else {
    // The CPUs this process may use, shared with the other processes
    // mpirun started on this node (unless it bound each to its own).
    int64_t cpus = 0;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
      cpus = CPU_COUNT(&allowed);
    if (cpus < 1)
      cpus = std::max<long>(sysconf(_SC_NPROCESSORS_ONLN), 1);
    int64_t processes = 1;
    if (const char *size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        mpi && size) {
      char *end = nullptr;
      long n = std::strtol(size, &end, 10);
      if (end != size && *end == 0 && n >= 1)
        processes = n;
    }
    struct rlimit limit;
    bool limited =
        getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
    if (limited) {
      blasThreads = 1;
      result.blasThreadsReason =
          "an address-space limit (ulimit -v) is set, under which OpenBLAS "
          "on a second thread that cannot map its buffer never returns";
    } else {
      blasThreads = std::clamp<int64_t>(cpus / processes, 1, 1024);
      result.blasThreadsReason =
          std::to_string(cpus) + (cpus == 1 ? " CPU" : " CPUs") +
          (processes > 1
               ? " for " + std::to_string(processes) + " processes on this node"
               : " for one rank");
    }
  }
  result.blasThreads = blasThreads;
  return Status::success();
}

Status RunState::prepareData(RunResult &result) {
  dataPtr = options.dataset;
  if (!dataPtr)
    if (Status s = loadRunData(meta, options, dataPtr); !s.ok())
      return s;
  if (dataPtr->numSamples() < 1)
    return Status::error("the data holds no samples");
  data = dataPtr.get();
  evalData = options.evalDataset.get();
  if (!evalData && !options.evalDataPath.empty()) {
    std::unique_ptr<Dataset> loaded;
    Status s = options.evalDataPath == kBuiltinEvalData
                   ? makeBuiltinDataset(meta, options.seed, loaded,
                                        kBuiltinEvalBatches * meta.batchSize())
                   : loadDataset(options.evalDataPath, meta, loaded);
    if (!s.ok())
      return Status::error("evaluation data: " + s.message());
    evalDataPtr = std::move(loaded);
    evalData = evalDataPtr.get();
  }
  if (evalData && (evalData->numSamples() < 1 || evalData->isEndless()))
    return Status::error("the evaluation data must hold a finite number of "
                         "samples, at least one");
  if (options.epochs > 0 || options.shuffle) {
    if (Status e = getStepsPerEpoch(meta, *data, stepsPerEpoch); !e.ok())
      return e;
  }
  result.dataDescription = data->describe();
  return Status::success();
}

Status RunState::startTransport() {
  switch (options.transport) {
  case TransportKind::Local:
    transport = makeLocalTransport(*this, *device, numWorkers(),
                                   options.timeoutSeconds);
    break;
  case TransportKind::Mpi:
    transport = makeMpiTransport(*this, *device, options.timeoutSeconds);
    break;
  case TransportKind::Nccl:
    transport = makeNcclTransport(*this, *device, options.timeoutSeconds);
    break;
  }
  mpi = transport->distributed();
  // mpirun tears a job down with SIGTERM when a process dies: print this
  // process's flight recorder then.
  if (mpi)
    installTerminationHandler();
  if (Status s = transport->start(meta, *device); !s.ok())
    return s;
  me = transport->processRank();
  root = !mpi || me == 0;
  return Status::success();
}

Status RunState::allocateArenas() {
  // The workers this process runs; MPI process 0 also keeps copies of the
  // arenas of replica 0's other ranks (every replica holds the same
  // parameters), filled when it gathers their blocks.
  arenas.resize(size_t(numWorkers()));
  views.assign(size_t(numWorkers()), nullptr);
  for (int64_t w = 0; w < numWorkers(); ++w) {
    const int64_t r = w % numRanks();
    if (!isLocal(w) && !(root && w < numRanks()))
      continue;
    arenas[size_t(w)] = std::make_unique<Arena>();
    Arena &arena = *arenas[size_t(w)];
    if (!isLocal(w)) {
      // Process 0's copy of another process's rank holds only what it
      // gathers: the persistent blocks.
      int64_t end = persistentEnd(meta.ranks[size_t(r)], meta.stateMultiple());
      Status s =
          arena.allocate(*device, end, meta.alignment, /*onDevice=*/false);
      if (!s.ok())
        return Status::error("rank " + std::to_string(r) +
                             "'s parameters on process 0: " + s.message());
      std::memset(arena.host, 0, size_t(end));
    } else {
      Status s =
          makeArena(model, meta.ranks[size_t(r)], options.seed, *device, arena);
      if (!s.ok())
        return s;
    }
    views[size_t(w)] = arena.host;
  }
  return Status::success();
}

Status RunState::prepareRanks() {
  // The initial arenas onto the device, and each local rank's device side.
  rankDevices.resize(size_t(numWorkers()));
  int64_t slotBytes = meta.microBatchSize() * meta.input.sampleBytes();
  if (meta.labels)
    slotBytes =
        std::max(slotBytes, meta.microBatchSize() * meta.labels->sampleBytes());
  for (int64_t w = 0; w < numWorkers(); ++w) {
    if (!isLocal(w))
      continue;
    Status s = arenas[size_t(w)]->toDevice(0, arenas[size_t(w)]->size);
    if (s.ok())
      s = device->makeRank(
          w, 2 * meta.microbatches, slotBytes,
          int64_t(meta.ranks[size_t(w % numRanks())].actions.size()),
          rankDevices[size_t(w)]);
    if (!s.ok())
      return Status::error(workerName(w) + ": " + s.message());
  }
  ranks.resize(size_t(numWorkers()));
  for (int64_t w = 0; w < numWorkers(); ++w) {
    gpipe_rt_rank &rank = ranks[size_t(w)];
    rank.run = this;
    rank.index = w;
    rank.rank = w % numRanks();
    rank.replica = w / numRanks();
    rank.name = workerName(w);
    rank.plan = &meta.ranks[size_t(rank.rank)];
    rank.arena = arenas[size_t(w)] ? arenas[size_t(w)]->deviceMemory : nullptr;
    rank.device = rankDevices[size_t(w)].get();
    rank.optimizerSteps.assign(rank.plan->stages.size(),
                               options.resume ? options.resume->optimizerSteps
                                              : 0);
    rank.lastStepped.assign(rank.plan->stages.size(), -1);
    rank.reducing.assign(rank.plan->stages.size(), 0);
    rank.reduced.assign(rank.plan->stages.size(), 0);
    rank.losses.assign(size_t(meta.microbatches), 0.0);
    rank.lossReported.assign(size_t(meta.microbatches), 0);
    rank.outputReported.assign(size_t(meta.microbatches), 0);
    if (isLocal(w) && (options.predict || options.keepOutputs))
      rank.outputs.assign(size_t(meta.replicaBatchSize() * outputSampleBytes()),
                          0);
    if (options.recordTrace)
      rank.events.reserve(std::min<size_t>(
          size_t(options.steps) * rank.plan->actions.size(), size_t(1) << 20));
    if (options.profileLayers) {
      // A mark per layer of the rank's stages (and per recomputed layer)
      // per action, and the time before the first.
      size_t layers = 0;
      for (const StageInfo &info : meta.stageInfo)
        if (info.rank == rank.rank)
          layers += info.layers.size();
      rank.marks.reserve(2 * layers + 8);
      rank.layerTimes.reserve(std::min<size_t>(
          size_t(options.steps) * rank.plan->actions.size() * (2 * layers + 2),
          size_t(1) << 22));
    }
    rankCvs.push_back(std::make_unique<std::condition_variable>());
  }
  finished.assign(size_t(numWorkers()), 0);
  busyTotal.assign(size_t(numWorkers()), 0);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Engine::run
//===----------------------------------------------------------------------===//

Status resolveEpochs(const ModelMetadata &meta, RunOptions &options) {
  if (options.epochs <= 0)
    return Status::success();
  // A file is read once and kept; built-in data, whose values depend on
  // the seed (a resumed run takes its checkpoint's), only counted.
  std::shared_ptr<const Dataset> data = options.dataset;
  if (!data) {
    if (Status s = loadRunData(meta, options, data); !s.ok())
      return s;
    if (!options.dataPath.empty())
      options.dataset = data;
  }
  int64_t perEpoch = 0;
  if (Status e = getStepsPerEpoch(meta, *data, perEpoch); !e.ok())
    return e;
  options.steps = options.epochs * perEpoch;
  return Status::success();
}

Status Engine::run(const RunOptions &options, RunResult &result) {
  result = RunResult();
  const ModelMetadata &meta = model.metadata();
  if (Status s = checkRunOptions(meta, options); !s.ok())
    return s;

  // Set-up: device, optimizer, data, transport, arenas, ranks.
  // A prediction runs over all of the data: ceil(N / B) steps, the last
  // mini-batch padded (the loader wraps around to the first samples).
  RunOptions predictOptions;
  const RunOptions *effective = &options;
  if (options.predict) {
    predictOptions = options;
    if (!predictOptions.dataset) {
      std::unique_ptr<Dataset> loaded;
      if (Status s = loadDataset(options.dataPath, meta, loaded); !s.ok())
        return s;
      predictOptions.dataset = std::move(loaded);
    }
    int64_t n = predictOptions.dataset->numSamples();
    if (n < 1)
      return Status::error("the data holds no samples");
    predictOptions.steps = (n + meta.batchSize() - 1) / meta.batchSize();
    predictOptions.checkpoint = nullptr;
    predictOptions.checkpointEvery = 0;
    result.outputSamples = n;
    effective = &predictOptions;
  }
  // Epochs: floor(N / B) steps each, so the data comes first.
  RunOptions epochOptions;
  if (!options.predict && options.epochs > 0) {
    epochOptions = options;
    if (Status s = resolveEpochs(meta, epochOptions); !s.ok())
      return s;
    effective = &epochOptions;
  }
  RunState state(model, *effective);
  Status s = state.chooseDevice(result);
  if (s.ok())
    s = resolveOptimizer(meta, options.optimizer, effective->steps,
                         state.optimizer, model.path());
  if (s.ok()) {
    result.optimizer = state.optimizer;
    s = state.prepareData(result);
  }
  if (s.ok())
    s = state.startTransport();
  if (s.ok())
    s = state.chooseBlasThreads(result);
  if (s.ok())
    s = state.installGemmChoice(result);
  if (s.ok())
    s = state.allocateArenas();
  if (s.ok())
    s = state.restoreCheckpoint();
  if (s.ok())
    s = state.prepareRanks();
  if (!s.ok())
    return s;
  if (options.onStart && state.root)
    options.onStart(state.optimizer, *state.data);

  // The loop: one step (or evaluation mini-batch) at a time, every local
  // rank on its own thread.
  state.planWork();
  state.startRankThreads();
  for (const RunState::Work &item : state.work)
    if (!(item.evalBatch < 0 ? state.runStep(item.step, result)
                             : state.runEvalBatch(item, result)))
      break;
  state.joinRankThreads();
  result.totalSeconds = double(state.nowNs()) * 1e-9;

  // The report: the first error with every rank's last actions, or the
  // measured bubble, arenas, trace and final parameters.
  if (!state.errors.empty()) {
    int64_t now = state.nowNs();
    for (const gpipe_rt_rank &rank : state.ranks)
      if (state.isLocal(rank.index))
        result.flightRecorder.push_back(
            rank.recorder.render(state.workerName(rank.index), now));
    Status error = state.firstError();
    std::string cause = state.timeoutCause(now);
    if (!cause.empty())
      return Status::error(error.message() + "\n  " + cause);
    return error;
  }
  return state.report(result);
}

//===----------------------------------------------------------------------===//
// Output files and the process
//===----------------------------------------------------------------------===//

Status
writeParameterTensors(const std::string &path, const ModelMetadata &metadata,
                      const std::map<std::string, std::vector<float>> &tensors,
                      const std::map<std::string, std::string> &extra) {
  std::vector<SafeTensorRef> refs;
  for (const ParameterSpec &p : metadata.parameters) {
    auto it = tensors.find(p.name);
    // Gradient files have no running statistics.
    if (it == tensors.end() && p.runningStatistic)
      continue;
    if (it == tensors.end() || int64_t(it->second.size()) != p.elements)
      return Status::error(path + ": no values for parameter '" + p.name + "'");
    refs.push_back({p.name, SafeTensorsDType::F32, p.shape, it->second.data(),
                    it->second.size() * 4});
  }
  std::map<std::string, std::string> fileMeta = extra;
  if (!metadata.source.empty())
    fileMeta["source"] = metadata.source;
  return writeSafeTensors(path, refs, fileMeta);
}

Status writeOutputTensor(const std::string &path, const ModelMetadata &metadata,
                         const RunResult &result,
                         const std::map<std::string, std::string> &extra) {
  if (!metadata.output)
    return Status::error(path + ": the model describes no output");
  const TensorSpec &spec = *metadata.output;
  std::vector<int64_t> shape = spec.shape;
  shape[0] = result.outputSamples;
  if (int64_t(result.outputs.size()) !=
      result.outputSamples * spec.sampleBytes())
    return Status::error(path + ": " + std::to_string(result.outputs.size()) +
                         " bytes of outputs for " +
                         std::to_string(result.outputSamples) + " samples");
  std::vector<SafeTensorRef> refs = {{"output", fromRuntimeDType(spec.dtype),
                                      shape, result.outputs.data(),
                                      result.outputs.size()}};
  std::map<std::string, std::string> fileMeta = extra;
  if (!metadata.source.empty())
    fileMeta["source"] = metadata.source;
  return writeSafeTensors(path, refs, fileMeta);
}

Status readParameterTensors(const std::string &path,
                            const ModelMetadata &metadata,
                            std::map<std::string, std::vector<float>> &out) {
  SafeTensorsFile file;
  if (Status s = SafeTensorsFile::read(path, file); !s.ok())
    return s;
  // gpipe-run marks what it writes; gradients have parameters' names and
  // shapes but are no parameters.
  if (auto it = file.metadata().find("contents");
      it != file.metadata().end() && it->second != "parameters")
    return Status::error(path + " holds " + it->second +
                         " (gpipe-run --save-grads), not parameters; give a "
                         "--save-params file or a checkpoint");
  // The batch norms' running variances: a negative one is no statistic.
  std::set<std::string> variances;
  for (const RankPlan &rank : metadata.ranks)
    for (const StagePlan &stage : rank.stages)
      for (const RunningStatsSlot &stats : stage.runningStats)
        for (const ParamSlot &slot : stage.params)
          if (slot.offset == stats.varOffset)
            variances.insert(slot.name);
  out.clear();
  for (const ParameterSpec &p : metadata.parameters) {
    const SafeTensorInfo *info = file.find(p.name);
    if (!info)
      return Status::error(path + ": no tensor for the model's parameter '" +
                           p.name +
                           "' (the parameters must come from the "
                           "same model)");
    if (info->dtype != SafeTensorsDType::F32)
      return Status::error(path + ": tensor '" + p.name + "' is " +
                           safeTensorsDTypeName(info->dtype) +
                           ", the parameter is F32");
    if (info->shape != p.shape) {
      auto text = [](const std::vector<int64_t> &shape) {
        std::string t = "[";
        for (size_t i = 0; i < shape.size(); ++i)
          t += (i ? ", " : "") + std::to_string(shape[i]);
        return t + "]";
      };
      return Status::error(path + ": tensor '" + p.name + "' has shape " +
                           text(info->shape) + ", the parameter " +
                           text(p.shape));
    }
    std::vector<float> &values = out[p.name];
    values.resize(size_t(p.elements));
    if (p.elements)
      std::memcpy(values.data(), file.data(*info), size_t(p.elements) * 4);
    // Found here, naming the file, whatever K the values would reach.
    // An inference library reads them as plain parameters: by their
    // PyTorch name there.
    const bool variance =
        variances.count(p.name) != 0 ||
        std::string_view(p.name).substr(p.name.size() -
                                        std::min<size_t>(p.name.size(), 11)) ==
            "running_var";
    for (int64_t i = 0; i < p.elements; ++i) {
      float v = values[size_t(i)];
      if (!std::isfinite(v))
        return Status::error(path + ": tensor '" + p.name + "' holds " +
                             (std::isnan(v) ? "nan"
                              : v > 0       ? "inf"
                                            : "-inf") +
                             " at index " + std::to_string(i) +
                             "; parameters must be finite");
      if (variance && v < 0)
        return Status::error(path + ": tensor '" + p.name +
                             "' (a batch norm's running variance) holds " +
                             std::to_string(v) + " at index " +
                             std::to_string(i) +
                             "; a variance cannot be negative");
    }
  }
  for (const SafeTensorInfo &info : file.tensors())
    if (!metadata.findParameter(info.name))
      return Status::error(path + ": tensor '" + info.name +
                           "' is no parameter of this model");
  return Status::success();
}

void ensureSingleThreadedBlas(char **argv) {
  const char *value = std::getenv("OPENBLAS_NUM_THREADS");
  if (value && std::string(value) == "1")
    return;
  if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  // Could not re-execute (no /proc): carry on with the pool as it is.
}

} // namespace gpipe::rt
