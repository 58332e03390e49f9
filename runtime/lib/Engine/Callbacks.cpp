//===- Callbacks.cpp - The runtime side of Program.h's callbacks -*- C++
//-*-===//
//
// What a rank's compiled program calls (Program.h): action boundaries
// (timing, the flight recorder, abort checks, injected faults), sends and
// receives (checked against the rank's plan, payloads inspected for
// non-finite values, bytes moved by the run's Transport), data loads, loss
// reports, optimizer steps and kernel errors. Every callback runs on the
// rank's own thread; a failure is recorded with the rank, stage,
// micro-batch and action it happened in and aborts the run, after which
// gpipe_rt_action_begin returns nonzero everywhere and the programs return.
//
//===----------------------------------------------------------------------===//

#include "RunState.h"

#include "Faults.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace gpipe::rt {
namespace {

std::string floatText(float value) {
  return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

} // namespace

//===----------------------------------------------------------------------===//
// Failures and inspections
//===----------------------------------------------------------------------===//

void RunState::failLocked(int64_t step, std::string message) {
  errors.push_back({step, std::move(message)});
  if (!abortFlag.exchange(true)) {
    mainCv.notify_all();
    for (auto &cv : rankCvs)
      cv->notify_all();
    if (transport)
      transport->wake();
  }
}

Status RunState::firstError() const {
  const auto &[step, message] = errors.front();
  return Status::error(
      step > 0 ? "step " + std::to_string(step) + ": " + message : message);
}

std::string RunState::timeoutCause(int64_t nowNs) const {
  // Every expired wait's message says "may have died or stalled".
  if (errors.empty() || firstError().message().find(
                            "may have died or stalled") == std::string::npos)
    return "";
  const RecentAction *computing = nullptr;
  const gpipe_rt_rank *slowest = nullptr;
  for (const gpipe_rt_rank &rank : ranks)
    if (isLocal(rank.index)) {
      const RecentAction *a = rank.recorder.unfinishedCompute();
      if (a && (!computing || a->beginNs < computing->beginNs)) {
        computing = a;
        slowest = &rank;
      }
    }
  if (!computing || nowNs - computing->beginNs < timeoutNs)
    return "";
  const ActionSpec &a = computing->plan->actions[size_t(computing->action)];
  return "the timeout is the likely cause: " + workerName(slowest->index) +
         " was still computing (" + actionKindName(a.kind) + ", stage " +
         std::to_string(a.stage) + ") after " +
         formatSeconds(double(nowNs - computing->beginNs) * 1e-9) +
         " s, longer than --timeout " +
         formatSeconds(double(timeoutNs) * 1e-9) +
         " s; raise --timeout above the slowest action";
}

std::string RunState::workerName(int64_t worker) const {
  int64_t k = numRanks();
  std::string rank = "rank " + std::to_string(worker % k);
  return numReplicas() > 1
             ? "replica " + std::to_string(worker / k) + " " + rank
             : rank;
}

std::string RunState::where(const gpipe_rt_rank *rank, int64_t action) const {
  std::string s = workerName(rank->index);
  if (action < 0 || action >= int64_t(rank->plan->actions.size()))
    return s + (action < 0 ? std::string(" (between actions)")
                           : " (action " + std::to_string(action) + ")");
  const ActionSpec &a = rank->plan->actions[size_t(action)];
  s += " (stage " + std::to_string(a.stage);
  if (a.mb >= 0)
    s += ", micro-batch " + std::to_string(a.mb);
  s += ", ";
  s += actionKindName(a.kind);
  if (a.isTransfer())
    s += std::string(" ") + abi::getDirectionName(a.direction()) +
         (a.isSend() ? " to rank " : " from rank ") + std::to_string(a.peer);
  return s + ")";
}

int32_t RunState::nonFinite(gpipe_rt_rank *rank, NonFiniteSite site,
                            std::string message) {
  if (options.onNonFinite == NonFinitePolicy::Stop && !rank->finishing) {
    fail(rank, message);
    return 1;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (nonFiniteMessage.empty() || site < nonFiniteSite) {
    nonFiniteSite = site;
    nonFiniteMessage = std::move(message);
  }
  return 0;
}

int32_t RunState::maybeInjectNan(gpipe_rt_rank *rank, int64_t mb, void *data,
                                 int64_t bytes) {
  if (rank->replica != 0 ||
      !nanDue(options.injectNan, rank->rank, rank->step, mb, bytes))
    return 0;
  Status s = rank->device->poison(data);
  if (s.ok())
    return 0;
  fail(rank, where(rank, currentAction(rank)) + ": " + s.message());
  return 1;
}

int32_t RunState::inspect(gpipe_rt_rank *rank, const float *src, int64_t count,
                          const InspectionSite &site) {
  Inspection answer;
  if (rank->device->inspect(src, count, answer))
    return handleInspection(rank, site, answer);
  rank->deferred.push_back(site);
  return 0;
}

int32_t RunState::handleInspection(gpipe_rt_rank *rank,
                                   const InspectionSite &site,
                                   const Inspection &r) {
  switch (site.kind) {
  case InspectionSite::Payload:
    if (r.badIndex < 0)
      return 0;
    return nonFinite(rank,
                     site.forward
                         ? NonFiniteSite::forward(site.stage, site.mb)
                         : NonFiniteSite::backward(site.stage, site.mb),
                     where(rank, site.action) + ": non-finite " +
                         (site.forward ? "activation" : "gradient") + " (" +
                         floatText(r.badValue) + " at element " +
                         std::to_string(r.badIndex) + ") leaving stage " +
                         std::to_string(site.stage) + " for micro-batch " +
                         std::to_string(site.mb));
  case InspectionSite::Loss:
    rank->losses[size_t(site.mb)] = double(r.first);
    if (r.badIndex < 0)
      return 0;
    return nonFinite(rank, NonFiniteSite::forward(site.stage, site.mb),
                     where(rank, site.action) + ": non-finite loss (" +
                         floatText(r.first) + ") of micro-batch " +
                         std::to_string(site.mb));
  case InspectionSite::Gradients: {
    if (r.badIndex < 0)
      return 0;
    std::string name = "?";
    for (const ParamSlot &slot : site.plan->params)
      if (r.badIndex * 4 >= slot.offset &&
          r.badIndex * 4 < slot.offset + slot.elements * 4)
        name = slot.name;
    return nonFinite(rank, NonFiniteSite::gradients(site.stage),
                     where(rank, site.action) + ": non-finite gradient (" +
                         floatText(r.badValue) + ") of parameter '" + name +
                         "' on stage " + std::to_string(site.stage));
  }
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Callbacks
//===----------------------------------------------------------------------===//

int32_t RunState::actionBegin(gpipe_rt_rank *rank, int64_t action) {
  if (isAborted() || rank->dead)
    return 1;
  if (!rank->evaluating &&
      injectFaultAt(options.fault, rank->rank, rank->replica, rank->step,
                    action, abortFlag)) {
    rank->dead = true;
    return 1;
  }
  int64_t numActions = int64_t(rank->plan->actions.size());
  if (action < 0 || action >= numActions) {
    fail(rank, where(rank, currentAction(rank)) + ": action " +
                   std::to_string(action) + " began but the program has " +
                   std::to_string(numActions) + " actions");
    return 1;
  }
  if (rank->current >= 0 || action != rank->nextAction) {
    fail(rank, where(rank, action) + ": action " + std::to_string(action) +
                   " began " +
                   (rank->current >= 0
                        ? "while action " + std::to_string(rank->current) +
                              " was still running"
                        : "when action " + std::to_string(rank->nextAction) +
                              " was due (actions run in order)"));
    return 1;
  }
  rank->current = rank->lastBegun = action;
  rank->nextAction = action + 1;
  rank->actionBeginNs = nowNs();
  rank->recorder.begin(*rank->plan, rank->step, action, rank->actionBeginNs);
  if (mpi)
    publishFlightRecorder(rank->recorder, rank->name.c_str(), nowNs());
  lastProgressNs.store(rank->actionBeginNs, std::memory_order_relaxed);
  transport->progress(rank->index);
  rank->device->actionBegin(action);
  return 0;
}

void RunState::actionEnd(gpipe_rt_rank *rank, int64_t action) {
  if (isAborted() || rank->dead)
    return;
  if (action != rank->current) {
    fail(rank,
         where(rank, currentAction(rank)) + ": action " +
             std::to_string(action) + " ended but " +
             (rank->current >= 0 ? "action " + std::to_string(rank->current) +
                                       " is the one running"
                                 : std::string("no action is running")));
    return;
  }
  rank->device->actionEnd(action);
  int64_t end = nowNs();
  lastProgressNs.store(end, std::memory_order_relaxed);
  const ActionSpec &a = rank->plan->actions[size_t(action)];
  // Devices that time on their own clock report busy time and the trace
  // when the step ends (and their layers are not timed: the host only
  // queues their kernels).
  // An evaluation's actions are not the training program's: traces and
  // layer times hold training steps only.
  if (!rank->device->timesOnDevice() && !rank->evaluating) {
    if (isComputeAction(a.kind))
      rank->busyNs += end - rank->actionBeginNs;
    if (options.recordTrace)
      rank->events.push_back({rank->step, action, rank->actionBeginNs, end});
    if (options.profileLayers && isComputeAction(a.kind))
      recordLayerTimes(rank, action, end);
  }
  rank->marks.clear();
  rank->recorder.end(end);
  rank->current = -1;
  if (mpi)
    publishFlightRecorder(rank->recorder, rank->name.c_str(), nowNs());
}

int32_t RunState::transfer(gpipe_rt_rank *rank, int64_t action, bool isSend,
                           const void *sendData, void *recvData, int64_t bytes,
                           void *staging) {
  if (isAborted())
    return 1;
  const char *callback = isSend ? "gpipe_rt_send" : "gpipe_rt_recv";
  int64_t numActions = int64_t(rank->plan->actions.size());
  if (action < 0 || action >= numActions) {
    fail(rank, where(rank, currentAction(rank)) + ": " + callback +
                   " for action " + std::to_string(action) +
                   " of a program with " + std::to_string(numActions) +
                   " actions");
    return 1;
  }
  const ActionSpec &a = rank->plan->actions[size_t(action)];
  if (isSend ? !a.isSend() : !a.isRecv()) {
    fail(rank, where(rank, action) + ": " + callback + " on a " +
                   actionKindName(a.kind) + " action");
    return 1;
  }
  if (bytes < 0 || (bytes > 0 && !(isSend ? sendData : recvData))) {
    fail(rank, where(rank, action) + ": " + callback + " of " +
                   std::to_string(bytes) + " bytes at a null pointer");
    return 1;
  }
  const bool f32 = a.payload == GPIPE_RT_F32;
  const bool forward = a.direction() == Direction::Forward;
  if (isSend && f32 && bytes > 0) {
    InspectionSite site;
    site.kind = InspectionSite::Payload;
    site.action = action;
    site.stage = a.stage;
    site.mb = a.mb;
    site.forward = forward;
    if (inspect(rank, static_cast<const float *>(sendData), bytes / 4, site))
      return 1;
  }
  Transfer t;
  t.rank = rank->index;
  t.action = action;
  // The peer rank of the same replica.
  t.peer = rank->replica * numRanks() + a.peer;
  t.tag = a.tag;
  t.send = isSend;
  t.data = isSend ? const_cast<void *>(sendData) : recvData;
  t.bytes = bytes;
  t.staging = isSend ? staging : nullptr;
  t.device = rank->device;
  if (!transport->transfer(t))
    return 1;
  if (!isSend && forward && f32)
    return maybeInjectNan(rank, a.mb, recvData, bytes);
  return 0;
}

int32_t RunState::load(gpipe_rt_rank *rank, bool labels, int64_t mb, void *out,
                       int64_t bytes) {
  if (isAborted())
    return 1;
  const char *callback =
      labels ? "gpipe_rt_load_labels" : "gpipe_rt_load_input";
  // Messages are made only on failure: a step allocates nothing.
  auto at = [&] { return where(rank, currentAction(rank)) + ": " + callback; };
  if (labels && !meta.labels) {
    fail(rank, at() + ": the model has no labels");
    return 1;
  }
  const TensorSpec &spec = labels ? *meta.labels : meta.input;
  if (mb < 0 || mb >= meta.microbatches) {
    fail(rank, at() + ": micro-batch " + std::to_string(mb) +
                   " is outside [0, " + std::to_string(meta.microbatches) +
                   ")");
    return 1;
  }
  // An evaluation program's micro-batches are of one replica's pipeline:
  // B / M samples.
  int64_t rows =
      rank->evaluating ? meta.eval->microBatchSize() : meta.microBatchSize();
  int64_t sampleBytes = spec.sampleBytes();
  if (bytes != rows * sampleBytes || (bytes > 0 && !out)) {
    fail(rank, at() + ": asked for " + std::to_string(bytes) +
                   " bytes, one micro-batch is " +
                   std::to_string(rows * sampleBytes) + " bytes (" +
                   std::to_string(rows) + " samples of " +
                   std::to_string(sampleBytes) + ")");
    return 1;
  }
  // Replica d's share of the step's mini-batch, then the micro-batch.
  const int64_t first =
      rank->replica * meta.replicaBatchSize() + int64_t(mb) * rows;
  const bool poison =
      !labels && spec.dtype == GPIPE_RT_F32 && rank->replica == 0 &&
      !rank->evaluating &&
      nanDue(options.injectNan, rank->rank, rank->step, mb, bytes);
  // An evaluation reads its mini-batch of the evaluation data, the last
  // one padded with the data's first samples.
  const Dataset &source = rank->evaluating ? *evalData : *data;
  auto sampleAt = [&](int64_t position) {
    return rank->evaluating ? (rank->evalBatch * meta.batchSize() + position) %
                                  evalData->numSamples()
                            : sampleOf(rank->step, position);
  };
  // One staging slot per (input or labels, micro-batch) and step.
  int64_t slot = (labels ? meta.microbatches : 0) + mb;
  // One reference captured: std::function keeps it without allocating.
  auto fill = [&](uint8_t *dst) {
    for (int64_t j = 0; j < rows; ++j) {
      int64_t sample = sampleAt(first + j);
      if (labels)
        source.copyLabels(sample, dst + j * sampleBytes);
      else
        source.copyInput(sample, dst + j * sampleBytes);
    }
    if (poison)
      reinterpret_cast<float *>(dst)[0] =
          std::numeric_limits<float>::quiet_NaN();
  };
  Status s = rank->device->upload(out, bytes, slot,
                                  [&fill](uint8_t *dst) { fill(dst); });
  if (!s.ok()) {
    fail(rank, at() + ": " + s.message());
    return 1;
  }
  return 0;
}

int32_t RunState::reportLoss(gpipe_rt_rank *rank, int64_t mb,
                             const float *loss) {
  if (isAborted())
    return 1;
  auto at = [&] {
    return where(rank, currentAction(rank)) + ": gpipe_rt_report_loss";
  };
  if (mb < 0 || mb >= meta.microbatches || !loss) {
    fail(rank, at() + (loss ? ": micro-batch " + std::to_string(mb) +
                                  " is outside [0, " +
                                  std::to_string(meta.microbatches) + ")"
                            : std::string(": null loss")));
    return 1;
  }
  if (rank->lossReported[size_t(mb)]) {
    fail(rank, at() + ": micro-batch " + std::to_string(mb) +
                   "'s loss was already reported this step");
    return 1;
  }
  rank->lossReported[size_t(mb)] = 1;
  int64_t action = currentAction(rank);
  int64_t stage = action >= 0 ? rank->plan->actions[size_t(action)].stage : 0;
  InspectionSite site;
  site.kind = InspectionSite::Loss;
  site.action = action;
  site.stage = stage;
  site.mb = mb;
  return inspect(rank, loss, 1, site);
}

int32_t RunState::reportOutput(gpipe_rt_rank *rank, int64_t mb,
                               const void *data, int64_t bytes) {
  if (isAborted())
    return 1;
  auto at = [&] {
    return where(rank, currentAction(rank)) + ": gpipe_rt_report_output";
  };
  if (mb < 0 || mb >= meta.microbatches) {
    fail(rank, at() + ": micro-batch " + std::to_string(mb) +
                   " is outside [0, " + std::to_string(meta.microbatches) +
                   ")");
    return 1;
  }
  if (rank->evaluating)
    return evaluateOutput(rank, mb, data, bytes);
  // A library compiled before the metadata had an output, or a step that
  // keeps none: nothing to copy.
  if (!keepsOutputs(rank->step))
    return 0;
  const int64_t rows = meta.microBatchSize();
  if (bytes != rows * outputSampleBytes() || !data) {
    fail(rank, at() + ": " + std::to_string(bytes) +
                   " bytes, one micro-batch of the output is " +
                   std::to_string(rows * outputSampleBytes()));
    return 1;
  }
  if (rank->outputReported[size_t(mb)]) {
    fail(rank, at() + ": micro-batch " + std::to_string(mb) +
                   "'s output was already reported this step");
    return 1;
  }
  rank->outputReported[size_t(mb)] = 1;
  Status s = rank->device->copyOut(rank->outputs.data() +
                                       size_t(mb * rows * outputSampleBytes()),
                                   data, bytes);
  if (!s.ok()) {
    fail(rank, at() + ": " + s.message());
    return 1;
  }
  return 0;
}

int32_t RunState::evaluateOutput(gpipe_rt_rank *rank, int64_t mb,
                                 const void *data, int64_t bytes) {
  auto at = [&] {
    return "the evaluation after step " + std::to_string(rank->step + 1) +
           ": " + where(rank, currentAction(rank)) + ": gpipe_rt_report_output";
  };
  const int64_t rows = meta.eval->microBatchSize();
  const int64_t sampleBytes = outputSampleBytes();
  if (bytes != rows * sampleBytes || !data) {
    fail(rank, at() + ": " + std::to_string(bytes) +
                   " bytes, one micro-batch of the output is " +
                   std::to_string(rows * sampleBytes));
    return 1;
  }
  rank->outputs.resize(size_t(rows * sampleBytes));
  if (Status s = rank->device->copyOut(rank->outputs.data(), data, bytes);
      !s.ok()) {
    fail(rank, at() + ": " + s.message());
    return 1;
  }
  const TensorSpec &labels = *meta.labels;
  rank->evalLabels.resize(size_t(labels.sampleBytes()));
  const bool crossEntropy =
      meta.loss == abi::getLossName(abi::LossKind::CrossEntropy);
  const int64_t outputElements = meta.output->sampleElements();
  const int64_t classes = meta.output->shape.back();
  for (int64_t j = 0; j < rows; ++j) {
    int64_t sample = rank->evalBatch * meta.batchSize() + mb * rows + j;
    // The padding of the last mini-batch.
    if (sample >= evalData->numSamples())
      break;
    evalData->copyLabels(sample, rank->evalLabels.data());
    const float *out =
        reinterpret_cast<const float *>(rank->outputs.data() + j * sampleBytes);
    if (!crossEntropy) {
      // Mean squared error over every element (torch's mse_loss).
      const float *target =
          reinterpret_cast<const float *>(rank->evalLabels.data());
      for (int64_t i = 0; i < outputElements; ++i) {
        double d = double(out[i]) - double(target[i]);
        rank->evalLoss += d * d;
      }
      rank->evalCount += outputElements;
      continue;
    }
    // Cross-entropy over the last dim, one label per row (torch's
    // cross_entropy): log-sum-exp in double.
    const int64_t positions = labels.sampleElements();
    for (int64_t p = 0; p < positions; ++p) {
      int64_t label =
          labels.dtype == GPIPE_RT_I32
              ? int64_t(reinterpret_cast<const int32_t *>(
                    rank->evalLabels.data())[p])
              : reinterpret_cast<const int64_t *>(rank->evalLabels.data())[p];
      if (label < 0 || label >= classes) {
        fail(rank, at() + ": evaluation sample " + std::to_string(sample) +
                       " has label " + std::to_string(label) +
                       ", outside the model's " + std::to_string(classes) +
                       " classes");
        return 1;
      }
      const float *x = out + p * classes;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (x[c] > x[best])
          best = c;
      double sum = 0.0;
      for (int64_t c = 0; c < classes; ++c)
        sum += std::exp(double(x[c]) - double(x[best]));
      rank->evalLoss += double(x[best]) + std::log(sum) - double(x[label]);
      rank->evalCorrect += best == label;
      ++rank->evalCount;
    }
  }
  return 0;
}

int32_t RunState::optimizerStep(gpipe_rt_rank *rank, int64_t stage,
                                float *params, const float *grads, float *state,
                                int64_t count) {
  if (isAborted())
    return 1;
  auto at = [&] {
    return where(rank, currentAction(rank)) + ": gpipe_rt_optimizer_step";
  };
  const StagePlan *held = rank->plan->findStage(stage);
  if (!held) {
    fail(rank,
         at() + ": the rank does not hold stage " + std::to_string(stage));
    return 1;
  }
  const StagePlan &plan = *held;
  // Per-stage state (steps taken, reductions) is kept in plan order.
  const size_t local = size_t(held - rank->plan->stages.data());
  if (count != plan.paramBytes / 4) {
    fail(rank, at() + ": " + std::to_string(count) + " parameters, stage " +
                   std::to_string(stage) + " has " +
                   std::to_string(plan.paramBytes / 4));
    return 1;
  }
  if (count > 0 &&
      (reinterpret_cast<uint8_t *>(params) != rank->arena + plan.paramsOffset ||
       reinterpret_cast<const uint8_t *>(grads) !=
           rank->arena + plan.gradsOffset)) {
    fail(rank, at() +
                   ": parameters or gradients are not at the planned "
                   "params_offset " +
                   std::to_string(plan.paramsOffset) + " / grads_offset " +
                   std::to_string(plan.gradsOffset));
    return 1;
  }
  if (count > 0 && optimizer.stateMultiple() > 0 &&
      reinterpret_cast<uint8_t *>(state) != rank->arena + plan.stateOffset) {
    fail(rank, at() +
                   ": the optimizer state is not at the planned "
                   "state_offset " +
                   std::to_string(plan.stateOffset));
    return 1;
  }
  if (rank->lastStepped[local] == rank->step) {
    fail(rank, at() + ": stage " + std::to_string(stage) +
                   " already stepped this step");
    return 1;
  }
  rank->lastStepped[local] = rank->step;
  // Data parallelism: the update waits for the replicas' sum.
  if (numReplicas() > 1 && count > 0 && !rank->reduced[local]) {
    if (!rank->reducing[local]) {
      fail(rank, at() + ": stage " + std::to_string(stage) +
                     "'s gradients were not reduced over the replicas "
                     "before its step (no gpipe.reduce_grad)");
      return 1;
    }
    rank->reducing[local] = 0;
    if (!transport->finishReduction(rank->index, stage))
      return 1;
  }
  InspectionSite site;
  site.kind = InspectionSite::Gradients;
  site.action = currentAction(rank);
  site.stage = stage;
  site.plan = &plan;
  if (inspect(rank, grads, count, site))
    return 1;
  if (options.onNonFinite == NonFinitePolicy::Skip) {
    // Applied after the step, if every rank finished it cleanly.
    rank->pending.push_back({local, params, grads, state});
    return 0;
  }
  int64_t t = ++rank->optimizerSteps[local];
  Status s =
      stepStage(*rank->device, optimizer.atStep(rank->step + 1), t, plan,
                params, grads, optimizer.stateMultiple() ? state : nullptr);
  if (!s.ok()) {
    fail(rank, at() + ": " + s.message());
    return 1;
  }
  return 0;
}

int32_t RunState::reduceGradients(gpipe_rt_rank *rank, int64_t action,
                                  float *grads, float *scratch, int64_t count) {
  if (isAborted())
    return 1;
  auto at = [&] {
    return where(rank, currentAction(rank)) + ": gpipe_rt_reduce_grad";
  };
  int64_t numActions = int64_t(rank->plan->actions.size());
  if (action < 0 || action >= numActions ||
      rank->plan->actions[size_t(action)].kind != ActionKind::ReduceGrad) {
    fail(rank, at() + " for action " + std::to_string(action) +
                   ", which is not a reduce_grad action");
    return 1;
  }
  const int64_t stage = rank->plan->actions[size_t(action)].stage;
  const StagePlan *held = rank->plan->findStage(stage);
  if (!held || count != held->paramBytes / 4 ||
      (count > 0 &&
       reinterpret_cast<uint8_t *>(grads) != rank->arena + held->gradsOffset)) {
    fail(rank, at() + ": " + std::to_string(count) +
                   " gradients that are not stage " + std::to_string(stage) +
                   "'s planned gradient block");
    return 1;
  }
  // One replica, or a stage without parameters: nothing to sum.
  if (numReplicas() == 1 || count == 0)
    return 0;
  if (!scratch) {
    fail(rank, at() + ": the plan reserved no Reduce buffer for stage " +
                   std::to_string(stage));
    return 1;
  }
  Reduction r;
  r.worker = rank->index;
  r.action = action;
  r.stage = stage;
  r.rank = rank->rank;
  r.replica = rank->replica;
  r.grads = grads;
  r.scratch = scratch;
  r.count = count;
  r.device = rank->device;
  if (!transport->startReduction(r))
    return 1;
  rank->reducing[size_t(held - rank->plan->stages.data())] = 1;
  return 0;
}

int32_t RunState::kernelError(gpipe_rt_rank *rank, int64_t site,
                              int32_t status) {
  const char *library =
      model.libraryLastError ? model.libraryLastError() : nullptr;
  const char *own = gpipe_rt_last_error();
  std::string fromDevice = rank->device->kernelError();
  std::string message =
      !fromDevice.empty()   ? fromDevice
      : library && *library ? library
      : own && *own         ? own
                    : "kernel failed with status " + std::to_string(status);
  std::string at = where(rank, currentAction(rank)) + ": ";
  const std::vector<KernelSite> &sites =
      rank->evaluating ? meta.eval->sites : meta.sites;
  if (site >= 0 && site < int64_t(sites.size())) {
    const KernelSite &k = sites[size_t(site)];
    at += k.op;
    if (!k.loc.empty())
      at += " at " + k.loc;
    if (!k.function.empty())
      at += " in " + (k.function[0] == '@' ? k.function : "@" + k.function);
    at += ": ";
  } else {
    at += "kernel site " + std::to_string(site) + ": ";
  }
  if (!abortFlag.load())
    fail(rank, at + message);
  return status ? status : 1;
}

} // namespace gpipe::rt

//===----------------------------------------------------------------------===//
// The C ABI
//===----------------------------------------------------------------------===//

using gpipe::rt::RunState;

void RunState::recordLayerTimes(gpipe_rt_rank *rank, int64_t action,
                                int64_t endNs) {
  const auto &marks = rank->marks;
  int64_t outside =
      (marks.empty() ? endNs : marks.front().second) - rank->actionBeginNs;
  rank->layerTimes.push_back({rank->step, action, -1, outside});
  for (size_t i = 0; i < marks.size(); ++i) {
    int64_t until = i + 1 < marks.size() ? marks[i + 1].second : endNs;
    rank->layerTimes.push_back(
        {rank->step, action, marks[i].first, until - marks[i].second});
  }
}

extern "C" void gpipe_rt_layer(gpipe_rt_rank *rank, int64_t mark) {
  if (!rank->run->options.profileLayers || rank->current < 0)
    return;
  rank->marks.push_back({mark, rank->run->nowNs()});
}

extern "C" int32_t gpipe_rt_action_begin(gpipe_rt_rank *rank, int64_t action) {
  return rank->run->actionBegin(rank, action);
}

extern "C" void gpipe_rt_action_end(gpipe_rt_rank *rank, int64_t action) {
  rank->run->actionEnd(rank, action);
}

bool RunState::checkHostAction(gpipe_rt_rank *rank, int64_t action,
                               ActionKind kind, const char *function,
                               const char *what) {
  auto located = [&] {
    return where(rank, currentAction(rank)) + ": " + function;
  };
  int64_t numActions = int64_t(rank->plan->actions.size());
  if (action < 0 || action >= numActions ||
      rank->plan->actions[size_t(action)].kind != kind) {
    fail(rank, located() + " for action " + std::to_string(action) +
                   ", which is not a " +
                   ::gpipe::abi::getActionKindMetadataName(kind) + " action");
    return false;
  }
  if (meta.target != "cpu") {
    fail(rank, located() + ": " + what + " on the CPU target only");
    return false;
  }
  return true;
}

bool RunState::exchangeInReplica(gpipe_rt_rank *rank, int64_t action, bool send,
                                 int64_t peerRank, int64_t tag, void *data,
                                 int64_t bytes) {
  Transfer t;
  t.rank = rank->index;
  t.action = action;
  t.peer = rank->replica * numRanks() + peerRank;
  t.tag = tag;
  t.send = send;
  t.data = data;
  t.bytes = bytes;
  t.device = rank->device;
  return transport->transfer(t);
}

int32_t RunState::sumTied(gpipe_rt_rank *rank, int64_t action, float *scratch) {
  if (isAborted())
    return 1;
  auto at = [&] {
    return where(rank, currentAction(rank)) + ": gpipe_rt_sum_tied";
  };
  if (!checkHostAction(rank, action, ActionKind::SumTied, "gpipe_rt_sum_tied",
                       "tied parameters are summed"))
    return 1;
  auto gradsOf = [&](const TiedGroup::Member &m) {
    const StagePlan &stage = meta.ranks[size_t(m.rank)].stages[m.stage];
    return reinterpret_cast<float *>(rank->arena + stage.gradsOffset +
                                     stage.params[m.slot].offset);
  };
  auto waitReduced = [&](const TiedGroup::Member &m) -> bool {
    // Data parallelism: a copy's gradient is its replicas' sum first.
    return finishReductionEarly(rank, m.stage);
  };
  // One message with another holder of the group (same replica).
  auto exchange = [&](bool send, int64_t peerRank, int64_t tag, float *data,
                      int64_t count) {
    return exchangeInReplica(rank, action, send, peerRank, tag, data,
                             count * 4);
  };
  // Every holder takes the groups in one order, so no two wait on each
  // other: copy 0's holder gathers the others' gradients and adds them in
  // copy order, then hands the sum back.
  for (size_t g = 0; g < meta.tiedGroups.size(); ++g) {
    const TiedGroup &group = meta.tiedGroups[g];
    const std::vector<TiedGroup::Member> &members = group.members;
    if (std::none_of(members.begin(), members.end(),
                     [&](const auto &m) { return m.rank == rank->rank; }))
      continue;
    const int64_t count = meta.parameters[group.parameter].elements;
    auto tag = [&](size_t copy, bool gather) {
      return ::gpipe::abi::getTiedTransferTag(meta.stages, meta.microbatches,
                                              meta.maxTiedCopies, int64_t(g),
                                              int64_t(copy), gather);
    };
    const TiedGroup::Member &first = members.front();
    if (first.rank == rank->rank) {
      if (!waitReduced(first))
        return 1;
      float *sum = gradsOf(first);
      for (size_t c = 1; c < members.size(); ++c) {
        const float *add;
        if (members[c].rank == rank->rank) {
          if (!waitReduced(members[c]))
            return 1;
          add = gradsOf(members[c]);
        } else {
          if (!scratch) {
            fail(rank, at() +
                           ": the plan reserved no Tied buffer for "
                           "parameter '" +
                           meta.parameters[group.parameter].name + "'");
            return 1;
          }
          if (!exchange(false, members[c].rank, tag(c, true), scratch, count))
            return 1;
          add = scratch;
        }
        for (int64_t i = 0; i < count; ++i)
          sum[i] += add[i];
      }
      for (size_t c = 1; c < members.size(); ++c) {
        if (members[c].rank == rank->rank)
          std::memcpy(gradsOf(members[c]), sum, size_t(count) * 4);
        else if (!exchange(true, members[c].rank, tag(c, false), sum, count))
          return 1;
      }
      continue;
    }
    for (size_t c = 1; c < members.size(); ++c)
      if (members[c].rank == rank->rank) {
        if (!waitReduced(members[c]) ||
            !exchange(true, first.rank, tag(c, true), gradsOf(members[c]),
                      count))
          return 1;
      }
    for (size_t c = 1; c < members.size(); ++c)
      if (members[c].rank == rank->rank &&
          !exchange(false, first.rank, tag(c, false), gradsOf(members[c]),
                    count))
        return 1;
  }
  return 0;
}

extern "C" int32_t gpipe_rt_sum_tied(gpipe_rt_rank *rank, int64_t action,
                                     float *scratch) {
  return rank->run->sumTied(rank, action, scratch);
}

bool RunState::finishReductionEarly(gpipe_rt_rank *rank, size_t local) {
  if (numReplicas() == 1 || !rank->reducing[local])
    return true;
  rank->reducing[local] = 0;
  rank->reduced[local] = 1;
  return transport->finishReduction(rank->index,
                                    rank->plan->stages[local].stage);
}

namespace {

/// The sum of squares of `count` floats in double, in one fixed order
/// (eight lanes over the elements, then the lanes in order), whatever
/// stage holds them.
double sumOfSquares(const float *x, int64_t count) {
  double lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int l = 0; l < 8; ++l)
      lanes[l] += double(x[i + l]) * double(x[i + l]);
  for (int l = 0; i < count; ++i, ++l)
    lanes[l] += double(x[i]) * double(x[i]);
  double sum = 0.0;
  for (double lane : lanes)
    sum += lane;
  return sum;
}

} // namespace

int32_t RunState::clipGrad(gpipe_rt_rank *rank, int64_t action, double *norm) {
  if (isAborted())
    return 1;
  auto at = [&] {
    return where(rank, currentAction(rank)) + ": gpipe_rt_clip_grad";
  };
  if (!checkHostAction(rank, action, ActionKind::ClipGrad, "gpipe_rt_clip_grad",
                       "gradients are clipped"))
    return 1;
  if (!norm) {
    fail(rank, at() + ": the plan reserved no Norm buffer");
    return 1;
  }
  // The holder of every stage; this rank's stages in stage order (once:
  // steady-state steps allocate nothing).
  std::vector<int64_t> &holder = rank->stageHolders;
  std::vector<size_t> &mine = rank->stagesInOrder;
  if (holder.empty()) {
    holder.assign(size_t(meta.stages), -1);
    for (const RankPlan &r : meta.ranks)
      for (const StagePlan &st : r.stages)
        holder[size_t(st.stage)] = r.rank;
    for (size_t l = 0; l < rank->plan->stages.size(); ++l)
      mine.push_back(l);
    std::sort(mine.begin(), mine.end(), [&](size_t a, size_t b) {
      return rank->plan->stages[a].stage < rank->plan->stages[b].stage;
    });
  }
  auto exchange = [&](bool send, int64_t peerRank, int64_t tag, double *data) {
    return exchangeInReplica(rank, action, send, peerRank, tag, data,
                             sizeof(double));
  };
  auto tag = [&](int64_t stage, bool chain) {
    return ::gpipe::abi::getClipTransferTag(
        meta.stages, meta.microbatches, meta.maxTiedCopies,
        int64_t(meta.tiedGroups.size()), stage, chain);
  };
  auto gradsOf = [&](const StagePlan &st) {
    return reinterpret_cast<float *>(rank->arena + st.gradsOffset);
  };
  // The running sum of squares goes along the stages in order: each
  // trainable parameter once (a tied parameter at its first copy, not its
  // copies; no batch-norm statistics), in the stage's parameter order.
  double running = 0.0;
  for (size_t l : mine) {
    const StagePlan &st = rank->plan->stages[l];
    if (!finishReductionEarly(rank, l))
      return 1;
    int64_t from = st.stage > 0 ? holder[size_t(st.stage - 1)] : -1;
    if (from >= 0 && from != rank->rank) {
      if (!exchange(false, from, tag(st.stage, true), &norm[0]))
        return 1;
      running = norm[0];
    }
    const float *grads = gradsOf(st);
    for (const ParamSlot &slot : st.params) {
      if (slot.copy != 0 || slot.offset >= st.trainableBytes ||
          meta.parameters[slot.parameter].runningStatistic)
        continue;
      running += sumOfSquares(grads + slot.offset / 4, slot.elements);
    }
    int64_t to = st.stage + 1 < meta.stages ? holder[size_t(st.stage + 1)] : -1;
    if (to >= 0 && to != rank->rank) {
      norm[0] = running;
      if (!exchange(true, to, tag(st.stage + 1, true), &norm[0]))
        return 1;
    }
  }
  // The last stage's holder hands the total to every other rank.
  int64_t last = holder[size_t(meta.stages - 1)];
  if (last == rank->rank) {
    norm[1] = running;
    for (int64_t r = 0; r < numRanks(); ++r)
      if (r != rank->rank && !exchange(true, r, tag(0, false), &norm[1]))
        return 1;
  } else if (!exchange(false, last, tag(0, false), &norm[1])) {
    return 1;
  }
  double total = std::sqrt(norm[1]);
  rank->gradNorm = total;
  // torch.nn.utils.clip_grad_norm_: g *= min(1, max_norm / (norm + 1e-6)).
  // A non-finite norm comes from a non-finite gradient: the steps' check
  // names it and --on-nonfinite decides.
  double coefficient = optimizer.clipGradNorm / (total + 1e-6);
  if (!std::isfinite(total) || !(coefficient < 1.0))
    return 0;
  const float scale = float(coefficient);
  for (const StagePlan &st : rank->plan->stages) {
    float *grads = gradsOf(st);
    for (int64_t i = 0, n = st.trainableBytes / 4; i < n; ++i)
      grads[i] *= scale;
  }
  return 0;
}

extern "C" int32_t gpipe_rt_clip_grad(gpipe_rt_rank *rank, int64_t action,
                                      double *norm) {
  return rank->run->clipGrad(rank, action, norm);
}

extern "C" int32_t gpipe_rt_send(gpipe_rt_rank *rank, int64_t action,
                                 const void *data, int64_t bytes,
                                 void *staging) {
  return rank->run->transfer(rank, action, true, data, nullptr, bytes, staging);
}

extern "C" int32_t gpipe_rt_recv(gpipe_rt_rank *rank, int64_t action,
                                 void *data, int64_t bytes) {
  return rank->run->transfer(rank, action, false, nullptr, data, bytes);
}

extern "C" int32_t gpipe_rt_load_input(gpipe_rt_rank *rank, int64_t microbatch,
                                       void *data, int64_t bytes) {
  return rank->run->load(rank, false, microbatch, data, bytes);
}

extern "C" int32_t gpipe_rt_load_labels(gpipe_rt_rank *rank, int64_t microbatch,
                                        void *data, int64_t bytes) {
  return rank->run->load(rank, true, microbatch, data, bytes);
}

extern "C" int32_t gpipe_rt_report_loss(gpipe_rt_rank *rank, int64_t microbatch,
                                        const float *loss) {
  return rank->run->reportLoss(rank, microbatch, loss);
}

extern "C" int32_t gpipe_rt_report_output(gpipe_rt_rank *rank,
                                          int64_t microbatch, const void *data,
                                          int64_t bytes) {
  return rank->run->reportOutput(rank, microbatch, data, bytes);
}

extern "C" int32_t gpipe_rt_optimizer_step(gpipe_rt_rank *rank, int64_t stage,
                                           float *params, const float *grads,
                                           float *state, int64_t count) {
  return rank->run->optimizerStep(rank, stage, params, grads, state, count);
}

extern "C" int32_t gpipe_rt_reduce_grad(gpipe_rt_rank *rank, int64_t action,
                                        float *grads, float *scratch,
                                        int64_t count) {
  return rank->run->reduceGradients(rank, action, grads, scratch, count);
}

extern "C" uint64_t gpipe_rt_rng_key(gpipe_rt_rank *rank, int64_t microbatch) {
  const gpipe::rt::ModelMetadata &meta = rank->run->meta;
  return ::gpipe::abi::getRngKey(rank->run->options.seed, rank->step,
                                 rank->replica * meta.microbatches +
                                     microbatch);
}

extern "C" int32_t gpipe_rt_kernel_error(gpipe_rt_rank *rank, int64_t site,
                                         int32_t status) {
  return rank->run->kernelError(rank, site, status);
}
