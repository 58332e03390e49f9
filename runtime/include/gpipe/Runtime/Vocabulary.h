//===- Vocabulary.h - Words the compiler and the runtime share --*- C++ -*-===//
//
// The backend-neutral vocabulary of a compiled pipeline, declared once for
// the compiler (analyses, IR, code generation) and the runtime (engine,
// transports, devices): what an action does, which way a transfer goes, the
// optimizer whose state the memory plan reserves, the loss, and the names
// the model metadata spells them with. Header-only C++17, with no
// dependencies but the name lists beside it (Optimizers.def, Losses.def):
// the compiler includes it without linking the runtime.
//
// Strings appear at two edges only: the metadata (written at translation,
// parsed once when the runtime loads a model) and the command line. Inside
// both programs these are enums.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_VOCABULARY_H
#define GPIPE_RUNTIME_VOCABULARY_H

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpipe::abi {

/// The version of the metadata's layout (Program.h). Bumped with every
/// change a reader must know about; the runtime refuses other versions.
inline constexpr int kMetadataSchemaVersion = 2;
/// The metadata's `format`.
inline constexpr const char *kMetadataFormat = "gpipe-model";

//===----------------------------------------------------------------------===//
// Actions
//===----------------------------------------------------------------------===//

/// What one action of a rank's program does. Mirrors the action vocabulary
/// of PyTorch's pipeline schedule IR (F, B, I, W, SEND_F, RECV_F, SEND_B,
/// RECV_B, REDUCE_GRAD, STEP) plus R, the recompute, SUM_TIED, the sum
/// of a tied parameter's copies' gradients, and CLIP_GRAD, the global
/// gradient-norm clipping.
enum class ActionKind : uint8_t {
  Forward,        ///< F: forward of (stage, micro-batch)
  Backward,       ///< B: full backward of (stage, micro-batch)
  BackwardInput,  ///< I: input-gradient half of a split backward
  BackwardWeight, ///< W: weight-gradient half of a split backward
  Recompute,      ///< R: re-run the forward before its backward (remat)
  SendF,          ///< SEND_F: activation to the next stage
  RecvF,          ///< RECV_F: activation from the previous stage
  SendB,          ///< SEND_B: gradient to the previous stage
  RecvB,          ///< RECV_B: gradient from the next stage
  ReduceGrad,     ///< REDUCE_GRAD: data-parallel gradient reduction
  Step,           ///< STEP: optimizer update of a stage
  SumTied,        ///< SUM_TIED: a rank's tied copies' gradients summed
  ClipGrad,       ///< CLIP_GRAD: gradients scaled to the global norm bound
};

inline constexpr int kNumActionKinds = 13;

/// Which way a transfer at a stage boundary goes.
enum class Direction : uint8_t {
  Forward,  ///< activations, stage s -> s + 1
  Backward, ///< gradients, stage s + 1 -> s
};

constexpr bool isSendKind(ActionKind k) {
  return k == ActionKind::SendF || k == ActionKind::SendB;
}
constexpr bool isRecvKind(ActionKind k) {
  return k == ActionKind::RecvF || k == ActionKind::RecvB;
}
constexpr bool isTransferKind(ActionKind k) {
  return isSendKind(k) || isRecvKind(k);
}
/// F, B, I, W and R: the actions that run a stage's layers.
constexpr bool isComputeKind(ActionKind k) {
  return k == ActionKind::Forward || k == ActionKind::Backward ||
         k == ActionKind::BackwardInput || k == ActionKind::BackwardWeight ||
         k == ActionKind::Recompute;
}
/// Every kind but ReduceGrad, Step, SumTied and ClipGrad names a
/// micro-batch.
constexpr bool hasMicrobatch(ActionKind k) {
  return k != ActionKind::ReduceGrad && k != ActionKind::Step &&
         k != ActionKind::SumTied && k != ActionKind::ClipGrad;
}
/// The direction of a transfer kind (Forward for SEND_F and RECV_F).
constexpr Direction getDirection(ActionKind k) {
  return k == ActionKind::SendB || k == ActionKind::RecvB ? Direction::Backward
                                                          : Direction::Forward;
}
/// The transfer kind of a send or receive going `dir`.
constexpr ActionKind getTransferKind(bool send, Direction dir) {
  if (send)
    return dir == Direction::Forward ? ActionKind::SendF : ActionKind::SendB;
  return dir == Direction::Forward ? ActionKind::RecvF : ActionKind::RecvB;
}

/// The CSV spelling (PyTorch's schedule IR): F B I W R SEND_F RECV_F SEND_B
/// RECV_B REDUCE_GRAD STEP, and SUM_TIED and CLIP_GRAD.
constexpr const char *getActionKindCSVName(ActionKind k) {
  switch (k) {
  case ActionKind::Forward:
    return "F";
  case ActionKind::Backward:
    return "B";
  case ActionKind::BackwardInput:
    return "I";
  case ActionKind::BackwardWeight:
    return "W";
  case ActionKind::Recompute:
    return "R";
  case ActionKind::SendF:
    return "SEND_F";
  case ActionKind::RecvF:
    return "RECV_F";
  case ActionKind::SendB:
    return "SEND_B";
  case ActionKind::RecvB:
    return "RECV_B";
  case ActionKind::ReduceGrad:
    return "REDUCE_GRAD";
  case ActionKind::Step:
    return "STEP";
  case ActionKind::SumTied:
    return "SUM_TIED";
  case ActionKind::ClipGrad:
    return "CLIP_GRAD";
  }
  return "?";
}

/// The metadata's spelling, which is also the `gpipe` op's name: forward
/// backward backward_input backward_weight recompute send recv reduce_grad
/// step sum_tied clip_grad (a transfer's direction is a key of its own).
constexpr const char *getActionKindMetadataName(ActionKind k) {
  switch (k) {
  case ActionKind::Forward:
    return "forward";
  case ActionKind::Backward:
    return "backward";
  case ActionKind::BackwardInput:
    return "backward_input";
  case ActionKind::BackwardWeight:
    return "backward_weight";
  case ActionKind::Recompute:
    return "recompute";
  case ActionKind::SendF:
  case ActionKind::SendB:
    return "send";
  case ActionKind::RecvF:
  case ActionKind::RecvB:
    return "recv";
  case ActionKind::ReduceGrad:
    return "reduce_grad";
  case ActionKind::Step:
    return "step";
  case ActionKind::SumTied:
    return "sum_tied";
  case ActionKind::ClipGrad:
    return "clip_grad";
  }
  return "?";
}

constexpr const char *getDirectionName(Direction d) {
  return d == Direction::Forward ? "forward" : "backward";
}

inline std::optional<Direction> parseDirection(std::string_view s) {
  if (s == "forward")
    return Direction::Forward;
  if (s == "backward")
    return Direction::Backward;
  return std::nullopt;
}

/// Parses the metadata's spelling; transfers need their direction.
inline std::optional<ActionKind> parseActionKindMetadataName(std::string_view s,
                                                             Direction dir) {
  if (s == "forward")
    return ActionKind::Forward;
  if (s == "backward")
    return ActionKind::Backward;
  if (s == "backward_input")
    return ActionKind::BackwardInput;
  if (s == "backward_weight")
    return ActionKind::BackwardWeight;
  if (s == "recompute")
    return ActionKind::Recompute;
  if (s == "send")
    return getTransferKind(true, dir);
  if (s == "recv")
    return getTransferKind(false, dir);
  if (s == "reduce_grad")
    return ActionKind::ReduceGrad;
  if (s == "step")
    return ActionKind::Step;
  if (s == "sum_tied")
    return ActionKind::SumTied;
  if (s == "clip_grad")
    return ActionKind::ClipGrad;
  return std::nullopt;
}

/// The tag a transfer of micro-batch `mb` across boundary `boundary` (stage
/// boundary -> boundary + 1) carries; a send and the receive it pairs with
/// compute the same one. `microbatches` is M.
constexpr int64_t getTransferTag(int64_t boundary, int64_t mb,
                                 int64_t microbatches, Direction dir) {
  return (boundary * microbatches + mb) * 2 +
         (dir == Direction::Forward ? 0 : 1);
}
/// The tag of a SUM_TIED message about copy `copy` of tied group `group`
/// (`gather`: a copy's gradient going to copy 0's holder; else the sum
/// coming back): past every stage-boundary tag of a pipeline of
/// `numStages` stages and `microbatches` micro-batches, `maxCopies` the
/// most copies of any group.
constexpr int64_t getTiedTransferTag(int64_t numStages, int64_t microbatches,
                                     int64_t maxCopies, int64_t group,
                                     int64_t copy, bool gather) {
  return numStages * microbatches * 2 + (group * maxCopies + copy) * 2 +
         (gather ? 0 : 1);
}
/// The tag of a CLIP_GRAD message: the running sum of squares handed from
/// the holder of stage `stage` - 1 to the holder of `stage` (`chain`), or
/// the total the last stage's holder hands every other rank (stage 0).
/// Past every stage-boundary and SUM_TIED tag (`tiedGroups` groups).
constexpr int64_t getClipTransferTag(int64_t numStages, int64_t microbatches,
                                     int64_t maxCopies, int64_t tiedGroups,
                                     int64_t stage, bool chain) {
  return numStages * microbatches * 2 + tiedGroups * maxCopies * 2 + stage * 2 +
         (chain ? 0 : 1);
}
/// SplitMix64's output function (Steele, Lea and Flood, "Fast Splittable
/// Pseudorandom Number Generators", OOPSLA 2014).
constexpr uint64_t splitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
/// The random key of one micro-batch of one step (dropout masks): the run's
/// seed, the step (from 0, counted across resumes) and the micro-batch's
/// index in the whole mini-batch (replica * M + m). Every rank, the
/// interpreter and every K, schedule and remat policy derive the same key,
/// so masks do not depend on how the model is split or recomputed.
constexpr uint64_t getRngKey(uint64_t seed, int64_t step, int64_t microbatch) {
  return splitMix64(
      seed ^ splitMix64(uint64_t(step) ^ splitMix64(uint64_t(microbatch))));
}
/// The boundary a transfer of `stage` crosses: a forward send leaves stage
/// s over boundary s, a forward receive enters it over s - 1, and the other
/// way round for gradients.
constexpr int64_t getTransferBoundary(ActionKind k, int64_t stage) {
  switch (k) {
  case ActionKind::SendF:
  case ActionKind::RecvB:
    return stage;
  default:
    return stage - 1;
  }
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// The optimizer whose state the memory plan reserves (Optimizers.def).
enum class OptimizerKind : uint8_t {
#define GPIPE_OPTIMIZER(kind, name, stateFactor, help) kind,
#include "gpipe/Runtime/Optimizers.def"
};

/// State per parameter byte: SGD 0, SGD with momentum 1 (velocity), Adam 2
/// (first and second moments).
constexpr int getOptimizerStateFactor(OptimizerKind k) {
  switch (k) {
#define GPIPE_OPTIMIZER(kind, name, stateFactor, help)                         \
  case OptimizerKind::kind:                                                    \
    return stateFactor;
#include "gpipe/Runtime/Optimizers.def"
  }
  return 0;
}
/// The canonical name: "sgd", "momentum", "adam".
constexpr const char *getOptimizerName(OptimizerKind k) {
  switch (k) {
#define GPIPE_OPTIMIZER(kind, name, stateFactor, help)                         \
  case OptimizerKind::kind:                                                    \
    return name;
#include "gpipe/Runtime/Optimizers.def"
  }
  return "?";
}
/// The one parser of optimizer names, wherever one is read: a canonical
/// name or an alias of Optimizers.def ("sgd-momentum", "adamw"), matched
/// exactly (case-sensitive); nullopt for any other.
constexpr std::optional<OptimizerKind> parseOptimizerKind(std::string_view s) {
#define GPIPE_OPTIMIZER(kind, name, stateFactor, help)                         \
  if (s == name)                                                               \
    return OptimizerKind::kind;
#define GPIPE_OPTIMIZER_ALIAS(kind, alias, help)                               \
  if (s == alias)                                                              \
    return OptimizerKind::kind;
#include "gpipe/Runtime/Optimizers.def"
  return std::nullopt;
}
/// The canonical names as a message lists them: "sgd, momentum or adam".
inline std::string getOptimizerNameList() {
  const char *names[] = {
#define GPIPE_OPTIMIZER(kind, name, stateFactor, help) name,
#include "gpipe/Runtime/Optimizers.def"
  };
  size_t count = sizeof(names) / sizeof(names[0]);
  std::string text;
  for (size_t i = 0; i < count; ++i) {
    if (i)
      text += i + 1 == count ? " or " : ", ";
    text += names[i];
  }
  return text;
}
/// The error for a name parseOptimizerKind rejects: "unknown optimizer
/// 'lamb' (expected sgd, momentum or adam)".
inline std::string getUnknownOptimizerMessage(std::string_view s) {
  return "unknown optimizer '" + std::string(s) + "' (expected " +
         getOptimizerNameList() + ")";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The loss a network is trained on (Losses.def).
enum class LossKind : uint8_t {
#define GPIPE_LOSS(kind, name, help) kind,
#include "gpipe/Runtime/Losses.def"
};

/// "cross-entropy", "mse".
constexpr const char *getLossName(LossKind k) {
  switch (k) {
#define GPIPE_LOSS(kind, name, help)                                           \
  case LossKind::kind:                                                         \
    return name;
#include "gpipe/Runtime/Losses.def"
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Metadata keys
//===----------------------------------------------------------------------===//

/// The keys of the model metadata (Program.h) that the compiler writes and
/// the runtime reads, spelled once: both sides name them by these constants,
/// never by a literal.
namespace key {
inline constexpr const char *kFormat = "format";
inline constexpr const char *kSchemaVersion = "schema_version";
inline constexpr const char *kAbiVersion = "abi_version";
inline constexpr const char *kTarget = "target";
inline constexpr const char *kPrecision = "precision";
/// Which implementation each GEMM shape runs on (ModelMetadata::GemmChoice):
/// {"impl": ..., "grid": [...], "cells": {"NN": ..., ...}}.
inline constexpr const char *kGemm = "gemm";
inline constexpr const char *kGemmImpl = "impl";
inline constexpr const char *kGemmGrid = "grid";
inline constexpr const char *kGemmCells = "cells";
inline constexpr const char *kStages = "stages";
inline constexpr const char *kMicrobatches = "microbatches";
inline constexpr const char *kSchedule = "schedule";
inline constexpr const char *kRemat = "remat";
inline constexpr const char *kOptimizer = "optimizer";
/// The default bound of a library that clips its gradients (CLIP_GRAD).
inline constexpr const char *kClipGradNorm = "clip_grad_norm";
inline constexpr const char *kAlignment = "alignment";
inline constexpr const char *kRanks = "ranks";
inline constexpr const char *kActions = "actions";
inline constexpr const char *kKind = "kind";
inline constexpr const char *kStage = "stage";
inline constexpr const char *kMicrobatch = "mb";
inline constexpr const char *kPeer = "peer";
inline constexpr const char *kDirection = "direction";
inline constexpr const char *kBytes = "bytes";
inline constexpr const char *kDType = "dtype";
inline constexpr const char *kTag = "tag";
/// A micro-batch loop of a program: {"loop": {"lower", "upper", "body"}}.
inline constexpr const char *kLoop = "loop";
inline constexpr const char *kLower = "lower";
inline constexpr const char *kUpper = "upper";
inline constexpr const char *kBody = "body";
} // namespace key

//===----------------------------------------------------------------------===//
// A model's identity
//===----------------------------------------------------------------------===//

/// What the files made from a model (profiles) are checked against: FNV-1a
/// (64 bits) of its parameters (each "name[d0,d1,...];", in name order; tied
/// copies are their first parameter) and of one sample of its input ("input
/// [d1,...]<dtype>", the packed input of a model with several), as 16 hex
/// digits. Two models with the same layer names but other sizes differ.
/// `parameters` is sorted in place.
inline std::string getModelFingerprint(
    std::vector<std::pair<std::string, std::vector<int64_t>>> &parameters,
    const std::vector<int64_t> &sampleShape, std::string_view inputDType) {
  std::sort(parameters.begin(), parameters.end());
  auto dims = [](const std::vector<int64_t> &shape, size_t from) {
    std::string text = "[";
    for (size_t i = from; i < shape.size(); ++i)
      text += (i > from ? "," : "") + std::to_string(shape[i]);
    return text + "]";
  };
  std::string text;
  for (const auto &[name, shape] : parameters)
    text += name + dims(shape, 0) + ";";
  text += "input" + dims(sampleShape, 0) + std::string(inputDType);
  uint64_t hash = 0xcbf29ce484222325ull; // FNV-1a's offset basis and prime
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4)
    out[size_t(i)] = digits[hash & 15];
  return out;
}

} // namespace gpipe::abi

#endif // GPIPE_RUNTIME_VOCABULARY_H
