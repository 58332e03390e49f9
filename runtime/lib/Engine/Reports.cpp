//===- Reports.cpp - What crosses processes, and the run's report -*- C++
//-*-===//
//
// With a distributed transport every process runs one rank and process 0
// speaks for the run: after each step it gathers every rank's busy time,
// losses and non-finite findings and answers whether the step's updates
// apply; for the first step's gradients, checkpoints and the end it gathers
// the ranks' persistent blocks (parameters, gradients, optimizer state) into
// its copies of their arenas; at the end, their measured arenas and traces.
// Each gather waits at most the run's timeout and watches other processes'
// failure announcements. With threads the same code runs without the
// gathers.
//
//===----------------------------------------------------------------------===//

#include "RunState.h"

#include "Transport/Mpi.h"

#include <algorithm>
#include <cstring>

namespace gpipe::rt {
namespace {

/// Appends / reads plain values for the exchanges.
template <typename T> void put(std::vector<uint8_t> &out, const T &value) {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}
template <typename T> T take(const std::vector<uint8_t> &in, size_t &at) {
  T value{};
  if (at + sizeof(T) <= in.size())
    std::memcpy(&value, in.data() + at, sizeof(T));
  at += sizeof(T);
  return value;
}

} // namespace

bool RunState::gatherEvalSums(int64_t step, double &loss, int64_t &correct,
                              int64_t &count) {
  std::vector<uint8_t> record;
  put(record, loss);
  put(record, correct);
  put(record, count);
  std::vector<std::vector<uint8_t>> all;
  std::string abortMessage;
  mpi::Wait w = mpi::gather(record, all, deadline(), abortMessage);
  if (w != mpi::Wait::Done) {
    fail(step + 1, w == mpi::Wait::Aborted
                       ? remoteFailure(abortMessage)
                       : "the evaluation's sums did not reach rank 0 within "
                         "the timeout; a rank may have died or stalled");
    return false;
  }
  if (root) {
    loss = 0.0;
    correct = count = 0;
    for (const std::vector<uint8_t> &in : all) {
      size_t at = 0;
      loss += take<double>(in, at);
      correct += take<int64_t>(in, at);
      count += take<int64_t>(in, at);
    }
  }
  return true;
}

bool RunState::exchangeStepRecords(int64_t step) {
  // Process 0 learns every rank's step (busy time, losses, non-finite
  // values); everyone learns whether the step's updates apply.
  const gpipe_rt_rank &mine = ranks[size_t(me)];
  std::vector<uint8_t> record;
  put(record, mine.busyNs);
  for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
    put(record, uint8_t(mine.lossReported[size_t(mb)]));
    put(record, mine.losses[size_t(mb)]);
  }
  // The outputs of the step, when it keeps them: the rank that reported
  // them sends its micro-batches' rows.
  const bool outputs = keepsOutputs(step);
  const size_t outputBytes =
      size_t(meta.microBatchSize() * outputSampleBytes());
  if (outputs)
    for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
      bool reported = mine.outputReported[size_t(mb)];
      put(record, uint8_t(reported));
      if (reported)
        record.insert(
            record.end(), mine.outputs.begin() + long(size_t(mb) * outputBytes),
            mine.outputs.begin() + long(size_t(mb + 1) * outputBytes));
    }
  if (!nonFiniteMessage.empty()) {
    put(record, nonFiniteSite);
    record.insert(record.end(), nonFiniteMessage.begin(),
                  nonFiniteMessage.end());
  }
  std::vector<std::vector<uint8_t>> all;
  std::string abortMessage;
  // Process 0 comes to the exchange once its own ranks finished the step,
  // which its barrier allows twice the timeout without progress: the others
  // wait that long for it (and a second more), so the process that names a
  // stalled rank is the one that waited on it, not one waiting here.
  Clock::time_point deadline =
      root ? this->deadline()
           : Clock::now() + std::chrono::nanoseconds(2 * timeoutNs) +
                 std::chrono::seconds(1);
  mpi::Wait w = mpi::gather(record, all, deadline, abortMessage);
  if (w == mpi::Wait::Done && root) {
    for (int64_t w = 1; w < numWorkers(); ++w) {
      gpipe_rt_rank &rank = ranks[size_t(w)];
      const std::vector<uint8_t> &in = all[size_t(w)];
      size_t at = 0;
      rank.busyNs = take<int64_t>(in, at);
      for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
        rank.lossReported[size_t(mb)] = char(take<uint8_t>(in, at));
        rank.losses[size_t(mb)] = take<double>(in, at);
      }
      if (outputs) {
        rank.outputs.resize(size_t(meta.microbatches) * outputBytes);
        for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
          bool reported = take<uint8_t>(in, at) != 0;
          rank.outputReported[size_t(mb)] = reported;
          if (reported && at + outputBytes <= in.size())
            std::memcpy(rank.outputs.data() + size_t(mb) * outputBytes,
                        in.data() + at, outputBytes);
          if (reported)
            at += outputBytes;
        }
      }
      if (at + sizeof(NonFiniteSite) < in.size()) {
        NonFiniteSite site = take<NonFiniteSite>(in, at);
        if (nonFiniteMessage.empty() || site < nonFiniteSite) {
          nonFiniteSite = site;
          nonFiniteMessage.assign(in.begin() + long(at), in.end());
        }
      }
    }
  }
  std::vector<uint8_t> decision(nonFiniteMessage.begin(),
                                nonFiniteMessage.end());
  if (w == mpi::Wait::Done)
    w = mpi::broadcast(decision, deadline, abortMessage);
  if (w != mpi::Wait::Done) {
    fail(step + 1, w == mpi::Wait::Aborted
                       ? remoteFailure(abortMessage)
                       : "the step's records did not reach rank 0 "
                         "within the timeout; a rank may have died "
                         "or stalled");
    return false;
  }
  nonFiniteMessage.assign(decision.begin(), decision.end());
  // The step ends when the last process has finished it.
  lastFinishNs = nowNs();
  return true;
}

bool RunState::gatherBlocks(int64_t step) {
  for (int64_t w = 0; w < numWorkers(); ++w)
    if (isLocal(w)) {
      Status t = arenas[size_t(w)]->toHost(
          0, persistentEnd(meta.ranks[size_t(w % numRanks())],
                           meta.stateMultiple()));
      if (!t.ok()) {
        fail(step, t.message());
        return false;
      }
    }
  if (!mpi)
    return true;
  // Every replica holds the same blocks: replica 0's workers send theirs.
  std::vector<uint8_t> mine;
  if (me < numRanks())
    mine = packBlocks(meta.ranks[size_t(me)], views[size_t(me)],
                      meta.stateMultiple());
  std::vector<std::vector<uint8_t>> all;
  std::string abortMessage;
  mpi::Wait w = mpi::gather(mine, all, deadline(), abortMessage);
  if (w != mpi::Wait::Done) {
    fail(step, w == mpi::Wait::Aborted
                   ? remoteFailure(abortMessage)
                   : "parameters did not reach rank 0 within the timeout");
    return false;
  }
  if (root)
    for (int64_t r = 1; r < numRanks(); ++r)
      unpackBlocks(meta.ranks[size_t(r)], views[size_t(r)],
                   meta.stateMultiple(), all[size_t(r)]);
  return true;
}

Status RunState::report(RunResult &result) {
  const int64_t numWorkers = this->numWorkers(), K = numRanks();
  Status s = Status::success();
  double busyMean = 0.0;
  for (int64_t w = 0; w < numWorkers; ++w)
    busyMean +=
        double(busyTotal[size_t(w)]) / double(std::max<int64_t>(wallTotal, 1));
  result.measuredBubble = 1.0 - busyMean / double(numWorkers);
  for (int64_t w = 0; w < numWorkers; ++w)
    result.busySeconds.push_back(double(busyTotal[size_t(w)]) * 1e-9 /
                                 double(std::max<int64_t>(countedSteps, 1)));

  // Each process measures its own arenas and keeps its own trace; MPI
  // process 0 gathers both.
  std::vector<uint8_t> record;
  for (int64_t w = 0; w < numWorkers; ++w) {
    if (!isLocal(w))
      continue;
    const RankPlan &plan = meta.ranks[size_t(w % K)];
    s = arenas[size_t(w)]->toHost(0, arenas[size_t(w)]->size);
    if (!s.ok())
      return Status::error(workerName(w) + ": " + s.message());
    const uint8_t *arena = views[size_t(w)];
    s = checkGuard(plan, arena);
    if (!s.ok())
      return s;
    int64_t top = plan.arenaBytes;
    while (top > 0 && arena[top - 1] == canaryByte(top - 1))
      --top;
    ArenaReport report;
    report.rank = w;
    report.plannedBytes = plan.arenaBytes;
    report.peakBytes = plan.peakBytes;
    report.measuredBytes = roundUp(top, meta.alignment);
    result.arenas.push_back(report);
    put(record, report.measuredBytes);
    const gpipe_rt_rank &rank = ranks[size_t(w)];
    put(record, int64_t(options.recordTrace ? rank.events.size() : 0));
    if (options.recordTrace)
      for (const RecordedAction &e : rank.events) {
        result.trace.push_back({rank.index, e.step, e.action,
                                double(e.beginNs) * 1e-3,
                                double(e.endNs) * 1e-3});
        put(record, e);
      }
    for (const RecordedLayer &l : rank.layerTimes) {
      result.layerTimes.push_back(
          {rank.index, l.step, l.action, l.mark, double(l.ns) * 1e-9});
      put(record, l);
    }
  }
  if (mpi) {
    std::vector<std::vector<uint8_t>> all;
    std::string abortMessage;
    mpi::Wait w = mpi::gather(record, all, deadline(), abortMessage);
    if (w != mpi::Wait::Done)
      return Status::error(w == mpi::Wait::Aborted
                               ? remoteFailure(abortMessage)
                               : "the run's reports did not reach rank 0 "
                                 "within the timeout");
    if (root)
      for (int64_t w = 1; w < numWorkers; ++w) {
        const std::vector<uint8_t> &in = all[size_t(w)];
        size_t at = 0;
        ArenaReport report;
        report.rank = w;
        report.plannedBytes = meta.ranks[size_t(w % K)].arenaBytes;
        report.peakBytes = meta.ranks[size_t(w % K)].peakBytes;
        report.measuredBytes = take<int64_t>(in, at);
        result.arenas.push_back(report);
        int64_t numEvents = take<int64_t>(in, at);
        for (int64_t i = 0;
             i < numEvents && at + sizeof(RecordedAction) <= in.size(); ++i) {
          RecordedAction e = take<RecordedAction>(in, at);
          result.trace.push_back({w, e.step, e.action, double(e.beginNs) * 1e-3,
                                  double(e.endNs) * 1e-3});
        }
        while (at + sizeof(RecordedLayer) <= in.size()) {
          RecordedLayer l = take<RecordedLayer>(in, at);
          result.layerTimes.push_back(
              {w, l.step, l.action, l.mark, double(l.ns) * 1e-9});
        }
      }
    if (!gatherBlocks(0)) {
      const auto &[step, message] = errors.front();
      return Status::error(message);
    }
  }
  if (root)
    return collectTensors(meta, views, /*gradients=*/false,
                          result.finalParameters);
  return Status::success();
}

} // namespace gpipe::rt
