//===- Checkpoint.h - Crash-safe training checkpoints -----------*- C++ -*-===//
//
// A checkpoint is the whole training state by the frontend's parameter
// names, so it resumes with any number of stages: the parameters, the
// optimizer state (PyTorch's names: `momentum_buffer.<param>`,
// `exp_avg.<param>`, `exp_avg_sq.<param>`), the optimizer's step count, the
// number of steps done (which is also the data position: step t reads
// samples [t B, (t + 1) B)) and the seed the data and initial values were
// drawn from.
//
// On disk, under the checkpoint directory D:
//
//   D/step-00000012/params.safetensors
//   D/step-00000012/optimizer.safetensors
//   D/step-00000012/MANIFEST.json        written last: step, seed, optimizer,
//                                        each file's size and FNV-1a hash,
//                                        and the FNV-1a hash of the
//                                        manifest's own canonical text
//
// A manifest is checked against its checksum and its directory's name
// (step-00000012 holds step 12), so an edited step, seed or optimizer step
// count is refused rather than silently changing the training. Version 1
// manifests (without the checksum) are read, flagged unverifiedManifest.
//
// Writing is atomic: the files go to D/.tmp-step-00000012-<pid>/, each
// flushed to disk, the manifest last, the directory flushed, then renamed
// to D/step-00000012 and D flushed. A crash at any moment leaves either the
// previous checkpoints alone or a complete new one; leftover temporary
// directories are ignored (and removed by the next writer). Resuming picks
// the newest directory whose manifest and files check out, and says which
// newer ones it skipped.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_CHECKPOINT_H
#define GPIPE_RUNTIME_CHECKPOINT_H

#include "gpipe/Runtime/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpipe::rt {

struct ModelMetadata;

/// Everything needed to continue training exactly where it stopped.
struct TrainingState {
  /// Steps completed (the next step is step + 1, counted from 1).
  int64_t step = 0;
  /// The run's seed (initial values and built-in data).
  uint64_t seed = 0;
  /// "sgd", "momentum" or "adam": which state tensors there are.
  std::string optimizer;
  /// Optimizer updates applied so far (Adam's bias correction t).
  int64_t optimizerSteps = 0;
  /// Where the model came from (informational).
  std::string source;
  /// Read from a version 1 manifest, which has no checksum of its own: its
  /// step, seed and optimizer step count could not be verified.
  bool unverifiedManifest = false;
  /// By parameter name, in the parameter's row-major layout.
  std::map<std::string, std::vector<float>> parameters;
  /// By "<slot>.<parameter name>".
  std::map<std::string, std::vector<float>> optimizerState;
};

/// The optimizer-state slot names of an optimizer ("momentum_buffer";
/// "exp_avg", "exp_avg_sq"; none for sgd), in the order of its state blocks.
std::vector<std::string> optimizerStateSlots(const std::string &optimizer);

/// The directory name of the checkpoint after `step` steps: step-00000012.
std::string checkpointName(int64_t step);

/// Writes `state` as a checkpoint under `dir` (created if missing),
/// atomically; `path` receives the final directory. Then removes all but
/// the newest `keep` complete checkpoints (keep >= 1) and stale temporary
/// directories; an old checkpoint that cannot be removed is left in place
/// and said in `warnings` (the write itself succeeded).
Status writeCheckpoint(const std::string &dir, const TrainingState &state,
                       const ModelMetadata &meta, int keep,
                       std::string *path = nullptr,
                       std::vector<std::string> *warnings = nullptr);

/// Reads and verifies the checkpoint directory `path` (a step-* directory):
/// manifest (its checksum, and its step against the directory's name),
/// file sizes and hashes, and that it holds exactly the model's
/// parameters in their shapes and the state tensors `optimizer` needs
/// (`optimizer` empty: whatever state it holds, for reading parameters
/// only).
Status readCheckpoint(const std::string &path, const ModelMetadata &meta,
                      const std::string &optimizer, TrainingState &state);

/// The newest checkpoint under `dir` that reads back completely for this
/// model and optimizer. `skipped` receives "path: why" for each newer one
/// that did not. Fails when there is none (saying why for each).
Status findLatestCheckpoint(const std::string &dir, const ModelMetadata &meta,
                            const std::string &optimizer, std::string &path,
                            TrainingState &state,
                            std::vector<std::string> *skipped = nullptr);

/// One writer per checkpoint directory: an advisory lock (flock) on
/// `dir`/LOCK, which also records its owner (process id, host, start time,
/// command). Held until destroyed or the process ends (the kernel releases
/// it then, whatever killed the owner: a lock whose owner is gone is never
/// stale, and the next run takes it over, saying so).
class CheckpointDirLock {
public:
  /// Creates `dir` when missing and takes its lock. A directory another
  /// live process holds is an error naming that owner. `note` receives a
  /// line when the lock of an owner that ended without releasing it was
  /// taken over.
  static Status acquire(const std::string &dir, const std::string &command,
                        std::unique_ptr<CheckpointDirLock> &out,
                        std::string *note = nullptr);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock &) = delete;
  CheckpointDirLock &operator=(const CheckpointDirLock &) = delete;

private:
  CheckpointDirLock() = default;
  int fd = -1;
  std::string path;
};

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_CHECKPOINT_H
