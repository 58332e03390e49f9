//===- Checkpointing.cpp - Resuming from and writing checkpoints -*- C++
//-*-===//
//
// The engine's side of checkpoints (Checkpoint.h writes and reads them): a
// resumed run's parameters and optimizer state go into the arenas by
// parameter name, whatever stage count wrote them; between steps, when one
// is due, the ranks' persistent blocks are gathered, process 0 builds the
// training state and hands it to RunOptions::checkpoint, and every process
// learns how the write went (the others wait ten minutes longer than the
// timeout, so slow storage is not mistaken for a dead process).
//
//===----------------------------------------------------------------------===//

#include "RunState.h"

#include "gpipe/Runtime/Checkpoint.h"

#include "Transport/Mpi.h"

#include <algorithm>

namespace gpipe::rt {

std::string stateKindName(const OptimizerConfig &config) {
  return getOptimizerName(config.stateKind());
}

Status RunState::restoreCheckpoint() {
  if (!options.resume)
    return Status::success();
  if (optimizerStateSlots(options.resume->optimizer) !=
      optimizerStateSlots(stateKindName(optimizer)))
    return Status::error("the checkpoint holds optimizer state for " +
                         options.resume->optimizer + ", this run uses " +
                         stateKindName(optimizer));
  // Into every replica's arenas (each holds the same parameters).
  const int64_t K = numRanks();
  for (int64_t d = 0; d < numReplicas(); ++d) {
    std::vector<uint8_t *> replica(views.begin() + d * K,
                                   views.begin() + (d + 1) * K);
    if (Status s = restoreState(meta, *options.resume, replica); !s.ok())
      return s;
  }
  return Status::success();
}

bool RunState::checkpointIfDue(int64_t step) {
  Status s = Status::success();
  // A checkpoint between steps: every rank waits at the barrier.
  bool due =
      options.checkpoint && options.checkpointEvery > 0 &&
      ((step + 1) % options.checkpointEvery == 0 || step + 1 == options.steps);
  if (due) {
    if (!gatherBlocks(step + 1))
      return false;
    std::string checkpointError;
    if (root) {
      TrainingState saved;
      saved.step = step + 1;
      saved.seed = options.seed;
      saved.optimizer = stateKindName(optimizer);
      saved.source = meta.source;
      for (const gpipe_rt_rank &rank : ranks)
        if (isLocal(rank.index))
          for (int64_t t : rank.optimizerSteps)
            saved.optimizerSteps = std::max(saved.optimizerSteps, t);
      s = collectTensors(meta, views, /*gradients=*/false, saved.parameters);
      collectOptimizerState(meta, views, optimizerStateSlots(saved.optimizer),
                            saved.optimizerState);
      if (s.ok())
        s = options.checkpoint(saved);
      if (!s.ok())
        checkpointError = s.message();
    }
    if (mpi) {
      // Everyone learns how the write went; the others wait while process
      // 0 writes, so their deadline allows for slow storage.
      std::vector<uint8_t> verdict(checkpointError.begin(),
                                   checkpointError.end());
      std::string abortMessage;
      mpi::Wait w = mpi::broadcast(
          verdict, deadline() + std::chrono::minutes(10), abortMessage);
      if (w != mpi::Wait::Done) {
        fail(step + 1, w == mpi::Wait::Aborted
                           ? remoteFailure(abortMessage)
                           : "process 0 did not finish writing the "
                             "checkpoint in time");
        return false;
      }
      checkpointError.assign(verdict.begin(), verdict.end());
    }
    if (!checkpointError.empty()) {
      fail(step + 1, "checkpoint: " + checkpointError);
      return false;
    }
  }
  return true;
}

} // namespace gpipe::rt
