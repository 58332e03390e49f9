//===- StepLoop.cpp - Rank threads and the main thread's steps -*- C++ -*-===//
//
// A step: the main thread releases it, every local rank thread runs its
// program once and waits for its device, and the main thread waits at the
// step barrier, with the run's timeout, for all of them or the first error.
// Then the main thread checks the guard zones, sums the losses, computes the
// step's metrics, applies the updates a Skip policy deferred, and writes a
// checkpoint when one is due, all while the rank threads wait for the next
// release.
//
//===----------------------------------------------------------------------===//

#include "HeapCount.h"
#include "RunState.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <pthread.h>
#include <sched.h>
#include <system_error>

namespace gpipe::rt {
namespace {

std::string unfinishedRanks(const std::vector<char> &finished,
                            int64_t numRanks) {
  std::string list;
  int count = 0;
  bool replicas = int64_t(finished.size()) > numRanks;
  for (size_t w = 0; w < finished.size(); ++w)
    if (!finished[w]) {
      list += list.empty() ? "" : ", ";
      if (replicas)
        list += "replica " + std::to_string(int64_t(w) / numRanks) + " rank ";
      list += std::to_string(int64_t(w) % numRanks);
      ++count;
    }
  if (replicas)
    return list;
  return (count == 1 ? "rank " : "ranks ") + list;
}

} // namespace

//===----------------------------------------------------------------------===//
// Rank threads
//===----------------------------------------------------------------------===//

void RunState::startRankThreads() {
  // GEMMs and the other kernels split their work over as many threads.
  if (blasThreads > 0)
    gpipe_rt_cpu_set_blas_threads(int32_t(blasThreads));
  if (options.timeKernels)
    gpipe_rt_cpu_set_kernel_timing(1);
  threadExited.assign(size_t(numWorkers()), 0);
  // One core per rank thread where there are enough: the w-th local rank
  // on the w-th CPU this process may use (taskset and cgroups respected).
  // Not under MPI: mpirun binds its processes itself.
  std::vector<int> cpus;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  int64_t local = 0;
  for (int64_t w = 0; w < numWorkers(); ++w)
    local += isLocal(w);
  if (!mpi && local > 1 && sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed))
        cpus.push_back(c);
  if (int64_t(cpus.size()) < local)
    cpus.clear();
  int64_t next = 0;
  for (int64_t w = 0; w < numWorkers(); ++w) {
    if (!isLocal(w))
      continue;
    int cpu = cpus.empty() ? -1 : cpus[size_t(next++)];
    // Creating a thread fails when its stack cannot be mapped (a memory
    // limit): the run fails; the threads already running see the abort.
    try {
      threads.emplace_back([this, w, cpu] {
        if (cpu >= 0) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(cpu, &set);
          // Best effort: an unpinned thread runs all the same.
          (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        }
        rankMain(&ranks[size_t(w)]);
        std::lock_guard<std::mutex> lock(mu);
        ++exitedThreads;
        threadExited[size_t(w)] = 1;
        mainCv.notify_all();
      });
    } catch (const std::system_error &e) {
      fail(startStep + 1, "cannot start the thread of " + workerName(w) + ": " +
                              e.what() +
                              " (out of memory or threads; a memory limit "
                              "such as ulimit -v too low?)");
      break;
    }
  }
}

void RunState::joinRankThreads() {
  {
    // Once the run failed, every rank thread gets 2 s to return: one that
    // waits sees the abort within 0.1 s, and one computing finishes its
    // action (whatever the timeout: a wait that expired because a peer's
    // action outlasted a short --timeout is reported as such, not as a
    // stuck rank). One that does not is stuck where nothing can reach it:
    // the process cannot join it nor free the arenas it uses, only end.
    constexpr int64_t kGraceNs = 2'000'000'000;
    std::unique_lock<std::mutex> lock(mu);
    std::optional<Clock::time_point> deadline;
    while (exitedThreads < threads.size()) {
      Clock::time_point now = Clock::now();
      if (abortFlag && !deadline)
        deadline = now + std::chrono::nanoseconds(kGraceNs);
      if (deadline && now >= *deadline)
        break;
      // The abort flag is seen within 0.1 s; the deadline when it falls.
      mainCv.wait_for(
          lock, deadline ? std::min<Clock::duration>(
                               *deadline - now, std::chrono::milliseconds(100))
                         : Clock::duration(std::chrono::milliseconds(100)));
    }
    if (exitedThreads < threads.size()) {
      std::string stuck;
      for (const gpipe_rt_rank &rank : ranks)
        if (isLocal(rank.index) && !threadExited[size_t(rank.index)])
          stuck += "\n  " + where(&rank, currentAction(&rank));
      std::string message =
          firstError().message() + "\nthe run stopped, but " +
          std::to_string(threads.size() - exitedThreads) + " of " +
          std::to_string(threads.size()) + " rank threads did not end within " +
          formatSeconds(double(kGraceNs) * 1e-9) +
          " s after it (stuck inside a kernel or library call, such as "
          "OpenBLAS failing to map its buffers under a memory limit); "
          "ending the process. Where the stuck ranks are:" +
          stuck;
      lock.unlock();
      if (options.onStuck)
        options.onStuck(message);
      std::fflush(stdout);
      std::fprintf(stderr, "error: %s\n", message.c_str());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  for (std::thread &t : threads)
    t.join();
  threads.clear();
  gpipe_rt_cpu_set_kernel_threads(1);
  if (options.timeKernels)
    gpipe_rt_cpu_set_kernel_timing(0);
}

void RunState::rankMain(gpipe_rt_rank *rank) {
  if (Status s = rank->device->bind(blasThreads); !s.ok()) {
    fail(startStep + 1, workerName(rank->index) + ": " + s.message());
    return;
  }
  std::condition_variable &cv = *rankCvs[size_t(rank->index)];
  for (int64_t item = 0; item < int64_t(work.size()); ++item) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return released >= item || abortFlag; });
      if (abortFlag)
        return;
    }
    // A training step, or a mini-batch of an evaluation: the program and
    // its plan (the same arena).
    const Work &next = work[size_t(item)];
    const int64_t step = next.step;
    rank->evaluating = next.evalBatch >= 0;
    rank->evalBatch = next.evalBatch;
    rank->plan = rank->evaluating ? &meta.eval->ranks[size_t(rank->rank)]
                                  : &meta.ranks[size_t(rank->rank)];
    gpipe_model_rank_fn fn = rank->evaluating ? model.evalFunction(rank->rank)
                                              : model.rankFunction(rank->rank);
    size_t numActions = rank->plan->actions.size();
    if (next.evalBatch == 0) {
      rank->evalLoss = 0.0;
      rank->evalCorrect = rank->evalCount = 0;
    }
    // One replica evaluates (they hold the same parameters); the others
    // only pass the barrier.
    if (rank->evaluating && rank->replica > 0) {
      std::lock_guard<std::mutex> lock(mu);
      finished[size_t(rank->index)] = 1;
      ++finishedCount;
      lastFinishNs = nowNs();
      mainCv.notify_all();
      continue;
    }
    const int64_t heapBefore = heapAllocationsOnThisThread();
    std::array<int64_t, GPIPE_RT_KERNEL_CLASS_COUNT> kernelBefore{};
    if (options.timeKernels) {
      for (int c = 0; c < GPIPE_RT_KERNEL_CLASS_COUNT; ++c)
        kernelBefore[size_t(c)] = int64_t(
            gpipe_rt_cpu_thread_kernel_nanoseconds(gpipe_rt_kernel_class(c)));
      gpipe_rt_cpu_reset_thread_gemm_shapes();
    }
    rank->step = step;
    rank->nextAction = 0;
    rank->current = rank->lastBegun = -1;
    rank->busyNs = 0;
    rank->pending.clear();
    std::fill(rank->reducing.begin(), rank->reducing.end(), 0);
    std::fill(rank->reduced.begin(), rank->reduced.end(), 0);
    rank->deferred.clear();
    std::fill(rank->lossReported.begin(), rank->lossReported.end(), 0);
    std::fill(rank->outputReported.begin(), rank->outputReported.end(), 0);
    gpipe_rt_clear_error();
    if (model.libraryClearError)
      model.libraryClearError();
    rank->device->clearKernelError();
    rank->stepStartNs = nowNs();
    if (Status s = rank->device->beginStep(); !s.ok()) {
      fail(rank, workerName(rank->index) + ": " + s.message());
      return;
    }

    // A step that ends without finishStep leaves the device's work to
    // stop or drain before the thread (and then the arenas) go away.
    struct Abandon {
      RunState &run;
      gpipe_rt_rank *rank;
      bool armed = true;
      ~Abandon() {
        if (armed)
          rank->device->abandonStep(run.deadline());
      }
    } abandon{*this, rank};
    int32_t rc = fn(rank, rank->arena);
    if (rank->dead || abortFlag)
      return;
    if (rc != 0) {
      fail(rank, where(rank, currentAction(rank)) + ": " + rank->plan->symbol +
                     " returned " + std::to_string(rc) +
                     " without reporting an error");
      return;
    }
    if (rank->current >= 0 || rank->nextAction != int64_t(numActions)) {
      fail(rank, workerName(rank->index) + ": " + rank->plan->symbol +
                     " returned after beginning " +
                     std::to_string(rank->nextAction) + " of its " +
                     std::to_string(numActions) + " actions" +
                     (rank->current >= 0
                          ? " (action " + std::to_string(rank->current) +
                                " never ended)"
                          : std::string()));
      return;
    }
    if (!finishStep(rank))
      return;
    abandon.armed = false;
    rank->heapAllocations =
        heapBefore < 0 ? -1 : heapAllocationsOnThisThread() - heapBefore;
    if (options.timeKernels) {
      for (int c = 0; c < GPIPE_RT_KERNEL_CLASS_COUNT; ++c)
        rank->kernelNs[size_t(c)] =
            int64_t(gpipe_rt_cpu_thread_kernel_nanoseconds(
                gpipe_rt_kernel_class(c))) -
            kernelBefore[size_t(c)];
      rank->gemmShapeCount = gpipe_rt_cpu_thread_gemm_shapes(
          rank->gemmShapes.data(), int32_t(rank->gemmShapes.size()));
    }
    std::lock_guard<std::mutex> lock(mu);
    finished[size_t(rank->index)] = 1;
    ++finishedCount;
    lastFinishNs = nowNs();
    mainCv.notify_all();
  }
}

bool RunState::finishStep(gpipe_rt_rank *rank) {
  // Payloads left in staging copies must be received first: the step (and
  // the arena's next use) may not overwrite them.
  if (!transport->finishSends(rank->index))
    return false;
  std::vector<Inspection> &inspections = rank->inspections;
  std::vector<ActionTiming> &timings = rank->timings;
  inspections.clear();
  timings.clear();
  Status s =
      rank->device->finishStep(deadline(), abortFlag, inspections, timings);
  if (abortFlag)
    return false;
  if (!s.ok()) {
    fail(rank, workerName(rank->index) + ": " + s.message());
    return false;
  }
  if (inspections.size() != rank->deferred.size()) {
    fail(rank, workerName(rank->index) + ": the device answered " +
                   std::to_string(inspections.size()) + " of " +
                   std::to_string(rank->deferred.size()) + " inspections");
    return false;
  }
  rank->finishing = true;
  for (size_t i = 0; i < inspections.size(); ++i)
    if (handleInspection(rank, rank->deferred[i], inspections[i]) != 0) {
      rank->finishing = false;
      return false;
    }
  rank->finishing = false;
  if (rank->device->timesOnDevice()) {
    rank->busyNs = 0;
    for (const ActionTiming &t : timings) {
      if (t.action < 0 || t.action >= int64_t(rank->plan->actions.size()))
        continue;
      if (isComputeAction(rank->plan->actions[size_t(t.action)].kind))
        rank->busyNs += t.endNs - t.beginNs;
      if (options.recordTrace)
        rank->events.push_back({rank->step, t.action,
                                rank->stepStartNs + t.beginNs,
                                rank->stepStartNs + t.endNs});
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The main thread
//===----------------------------------------------------------------------===//

bool RunState::releaseStep(int64_t step, int64_t &stepStart) {
  const int64_t numWorkers = this->numWorkers(), numLocal = this->numLocal();
  std::unique_lock<std::mutex> lock(mu);
  for (int64_t w = 0; w < numWorkers; ++w)
    finished[size_t(w)] = !isLocal(w);
  finishedCount = 0;
  stepStart = nowNs();
  ++released;
  for (auto &cv : rankCvs)
    cv->notify_all();
  // The barrier: all ranks finish, or one fails, or the stragglers take
  // longer than the timeout after the first rank finished. While no rank
  // has finished, ranks waiting on transfers time out by themselves;
  // the main thread only steps in when nothing at all happened for
  // twice the timeout (every rank died or hangs in a computation).
  lastProgressNs.store(stepStart);
  while (finishedCount < numLocal && !abortFlag) {
    int64_t now = nowNs();
    bool anyFinished = finishedCount > 0;
    int64_t deadline = anyFinished ? lastFinishNs + timeoutNs
                                   : lastProgressNs.load() + 2 * timeoutNs;
    if (now >= deadline) {
      std::string late = unfinishedRanks(finished, numRanks());
      std::string stepName =
          work[size_t(released)].evalBatch >= 0
              ? "the evaluation after step " + std::to_string(step + 1)
              : "step " + std::to_string(step + 1);
      failLocked(0, anyFinished
                        ? late + " did not finish " + stepName + " within " +
                              formatSeconds(options.timeoutSeconds) +
                              " s after the other ranks; it may have died or "
                              "stalled"
                        : late + " did not finish " + stepName +
                              " and no rank made progress for " +
                              formatSeconds(2 * options.timeoutSeconds) +
                              " s; a rank may have died or stalled");
      break;
    }
    mainCv.wait_for(lock, std::chrono::nanoseconds(
                              std::min<int64_t>(deadline - now, 100'000'000)));
  }
  return !abortFlag;
}

void RunState::addSteadyTotals(RunResult &result) {
  ++result.steadySteps;
  if (options.timeKernels)
    result.kernelSeconds.resize(GPIPE_RT_KERNEL_CLASS_COUNT, 0.0);
  if (options.timeKernels)
    for (const gpipe_rt_rank &rank : ranks) {
      if (!isLocal(rank.index))
        continue;
      for (size_t c = 0; c < result.kernelSeconds.size(); ++c)
        result.kernelSeconds[c] += double(rank.kernelNs[c]) * 1e-9;
      result.steadyBusySeconds += double(rank.busyNs) * 1e-9;
      if (rank.gemmShapeCount < 0)
        result.gemmShapesIncomplete = true;
      // -1: the table is full and more shapes ran; it holds the first.
      int32_t kept =
          rank.gemmShapeCount < 0 ? GPIPE_RT_GEMM_SHAPES : rank.gemmShapeCount;
      for (int32_t i = 0; i < kept; ++i) {
        const gpipe_rt_gemm_shape_time &g = rank.gemmShapes[size_t(i)];
        auto same = [&](const gpipe_rt_gemm_shape_time &h) {
          return gpipe_rt_gemm_same_shape(&h, &g) != 0;
        };
        auto it = std::find_if(result.gemmShapes.begin(),
                               result.gemmShapes.end(), same);
        if (it == result.gemmShapes.end()) {
          result.gemmShapes.push_back(g);
        } else {
          it->calls += g.calls;
          it->nanoseconds += g.nanoseconds;
        }
      }
    }
  for (const gpipe_rt_rank &rank : ranks)
    if (isLocal(rank.index) && result.steadyHeapAllocations >= 0)
      result.steadyHeapAllocations =
          rank.heapAllocations < 0
              ? -1
              : result.steadyHeapAllocations + rank.heapAllocations;
}

bool RunState::measureAndCheckGuards(int64_t step, int64_t wall,
                                     StepMetrics &metrics) {
  const int64_t numWorkers = this->numWorkers();
  for (int64_t w = 0; w < numWorkers; ++w) {
    const gpipe_rt_rank &rank = ranks[size_t(w)];
    metrics.busyFraction.push_back(double(rank.busyNs) / double(wall));
    if (countsForBubble(step))
      busyTotal[size_t(w)] += rank.busyNs;
    if (!isLocal(w))
      continue;
    Status s = arenas[size_t(w)]->toHost(rank.plan->arenaBytes, kGuardBytes);
    if (s.ok())
      s = checkGuard(*rank.plan, views[size_t(w)]);
    if (!s.ok()) {
      fail(step + 1, s.message());
      break;
    }
  }
  return !abortFlag;
}

bool RunState::sumStepLoss(int64_t step, double &loss) {
  double sum = 0.0;
  int64_t reported = 0, missing = -1;
  const int64_t K = numRanks();
  for (int64_t d = 0; d < numReplicas() && !abortFlag; ++d) {
    // A process other than 0 knows only its own replica's losses.
    if (mpi && !root && me / K != d)
      continue;
    for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
      int64_t reporters = 0;
      for (int64_t r = 0; r < K; ++r) {
        const gpipe_rt_rank &rank = ranks[size_t(d * K + r)];
        if (rank.lossReported[size_t(mb)]) {
          ++reporters;
          sum += rank.losses[size_t(mb)];
        }
      }
      if (reporters > 1) {
        fail(step + 1, "micro-batch " + std::to_string(mb) +
                           "'s loss was reported by more than one rank");
        break;
      }
      reported += reporters;
      if (!reporters && missing < 0)
        missing = mb;
    }
  }
  if (abortFlag)
    return false;
  if (reported > 0 && missing >= 0) {
    fail(step + 1, "the loss of micro-batch " + std::to_string(missing) +
                       " was never reported");
    return false;
  }
  loss = reported ? sum / double(meta.microbatches * numReplicas())
                  : std::numeric_limits<double>::quiet_NaN();
  return true;
}

bool RunState::collectFirstGradients(int64_t step, RunResult &result) {
  if (!gatherBlocks(step + 1))
    return false;
  if (root) {
    if (Status s = collectTensors(meta, views, /*gradients=*/true,
                                  result.firstGradients);
        !s.ok()) {
      fail(step + 1, s.message());
      return false;
    }
  }
  return true;
}

bool RunState::applySkippableUpdates(int64_t step, RunResult &result) {
  if (!nonFiniteMessage.empty()) {
    result.skippedSteps.push_back("step " + std::to_string(step + 1) + ": " +
                                  nonFiniteMessage +
                                  "; the step's updates were skipped");
    nonFiniteMessage.clear();
    return true;
  }
  Status s = Status::success();
  for (gpipe_rt_rank &rank : ranks)
    for (const auto &u : rank.pending) {
      int64_t t = ++rank.optimizerSteps[u.local];
      s = stepStage(*device, optimizer.atStep(step + 1), t,
                    rank.plan->stages[u.local], u.params, u.grads,
                    optimizer.stateMultiple() ? u.state : nullptr);
      if (!s.ok())
        break;
    }
  if (!s.ok()) {
    fail(step + 1, s.message());
    return false;
  }
  return true;
}

void RunState::prepareEpoch(int64_t step) {
  if (stepsPerEpoch == 0 || step / stepsPerEpoch == orderEpoch)
    return;
  orderEpoch = step / stepsPerEpoch;
  getEpochOrder(data->numSamples(), options.shuffle, options.seed, orderEpoch,
                epochOrder);
}

bool RunState::runStep(int64_t step, RunResult &result) {
  int64_t stepStart;
  prepareEpoch(step);
  if (!releaseStep(step, stepStart))
    return false;
  if (mpi && !exchangeStepRecords(step))
    return false;
  // Stop: a non-finite value a device reported at the end of the step
  // (process 0 names it; the others stop because of it).
  if (options.onNonFinite == NonFinitePolicy::Stop &&
      !nonFiniteMessage.empty()) {
    fail(step + 1, root ? nonFiniteMessage : remoteFailure(nonFiniteMessage));
    return false;
  }
  // Steady state: every step after the first two (warm-up grows buffers).
  if (step >= startStep + 2)
    addSteadyTotals(result);
  int64_t wall = std::max<int64_t>(lastFinishNs - stepStart, 1);
  StepMetrics metrics;
  metrics.step = step + 1;
  metrics.lr = optimizer.atStep(step + 1).lr;
  if (stepsPerEpoch > 0)
    metrics.epoch = step / stepsPerEpoch + 1;
  // Every worker of a clipping pipeline computed the same norm.
  for (int64_t w = 0; w < int64_t(ranks.size()); ++w)
    if (isLocal(w) && meta.clipsGradients()) {
      metrics.gradNorm = ranks[size_t(w)].gradNorm;
      break;
    }
  metrics.seconds = double(wall) * 1e-9;
  metrics.samplesPerSecond = double(meta.batchSize()) / metrics.seconds;
  if (!measureAndCheckGuards(step, wall, metrics))
    return false;
  if (countsForBubble(step)) {
    wallTotal += wall;
    ++countedSteps;
  }
  if (!sumStepLoss(step, metrics.loss))
    return false;
  // An inference model has no gradients.
  if (step == startStep && !meta.inference &&
      !collectFirstGradients(step, result))
    return false;
  if (keepsOutputs(step) && root && !collectOutputs(step, result))
    return false;
  if (options.onNonFinite == NonFinitePolicy::Skip &&
      !applySkippableUpdates(step, result))
    return false;
  result.steps.push_back(metrics);
  if (options.onStep)
    options.onStep(metrics);

  return checkpointIfDue(step);
}

void RunState::planWork() {
  work.clear();
  const int64_t batches = numEvalBatches();
  for (int64_t step = startStep; step < options.steps; ++step) {
    work.push_back({step, -1});
    bool due = step + 1 == options.steps ||
               (options.evalEvery > 0 && (step + 1) % options.evalEvery == 0);
    for (int64_t b = 0; due && b < batches; ++b)
      work.push_back({step, b});
  }
}

bool RunState::runEvalBatch(const Work &item, RunResult &result) {
  int64_t start;
  if (item.evalBatch == 0)
    evalStartNs = nowNs();
  if (!releaseStep(item.step, start))
    return false;
  if (item.evalBatch + 1 < numEvalBatches())
    return true;
  // The sums of the rank that reported the outputs (the last stage's); under
  // MPI process 0 gathers every process's (the others' are zero).
  double loss = 0.0;
  int64_t correct = 0, count = 0;
  for (const gpipe_rt_rank &rank : ranks)
    if (isLocal(rank.index)) {
      loss += rank.evalLoss;
      correct += rank.evalCorrect;
      count += rank.evalCount;
    }
  if (mpi && !gatherEvalSums(item.step, loss, correct, count))
    return false;
  if (!root)
    return true;
  EvalMetrics metrics;
  metrics.step = item.step + 1;
  metrics.samples = evalData->numSamples();
  metrics.loss =
      count ? loss / double(count) : std::numeric_limits<double>::quiet_NaN();
  if (meta.loss == abi::getLossName(abi::LossKind::CrossEntropy) && count)
    metrics.accuracy = double(correct) / double(count);
  metrics.seconds = double(nowNs() - evalStartNs) * 1e-9;
  result.evals.push_back(metrics);
  if (options.onEval)
    options.onEval(metrics);
  return true;
}

bool RunState::collectOutputs(int64_t step, RunResult &result) {
  const int64_t K = numRanks(), rows = meta.microBatchSize();
  const int64_t sampleBytes = outputSampleBytes();
  const int64_t batch = meta.batchSize();
  // A prediction keeps every sample of the data (result.outputSamples,
  // set by Engine::run); training the first step's mini-batch.
  const int64_t first = options.predict ? 0 : step * batch;
  if (!options.predict)
    result.outputSamples = batch;
  result.outputs.resize(size_t(result.outputSamples * sampleBytes));
  for (int64_t d = 0; d < numReplicas(); ++d)
    for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
      const gpipe_rt_rank *from = nullptr;
      for (int64_t r = 0; r < K; ++r)
        if (ranks[size_t(d * K + r)].outputReported[size_t(mb)])
          from = &ranks[size_t(d * K + r)];
      if (!from) {
        fail(step + 1, "the output of micro-batch " + std::to_string(mb) +
                           " was never reported");
        return false;
      }
      for (int64_t j = 0; j < rows; ++j) {
        int64_t sample =
            step * batch + d * meta.replicaBatchSize() + mb * rows + j - first;
        // The padding of a partial last mini-batch.
        if (sample >= result.outputSamples)
          continue;
        std::memcpy(result.outputs.data() + sample * sampleBytes,
                    from->outputs.data() + (mb * rows + j) * sampleBytes,
                    size_t(sampleBytes));
      }
    }
  return true;
}

} // namespace gpipe::rt
