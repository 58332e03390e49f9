//===- Optimizer.h - The optimizers of a training run -----------*- C++ -*-===//
//
// The parameter update a stage's gpipe.step applies: plain SGD, SGD with
// momentum and AdamW, with PyTorch's semantics. The user's options resolve
// against the optimizer whose state the model's plan reserves
// (ModelMetadata::optimizer); devices (Device.h) apply the result to their
// memory. The spellings of the optimizer kinds are the vocabulary's
// (Optimizers.def, Vocabulary.h). Part of GPipeRuntimeEngine.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_OPTIMIZER_H
#define GPIPE_RUNTIME_OPTIMIZER_H

#include "gpipe/Runtime/Status.h"
#include "gpipe/Runtime/Vocabulary.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpipe::rt {

struct ModelMetadata;

using OptimizerKind = abi::OptimizerKind;

/// How the learning rate moves over the training steps (--lr-schedule).
enum class LRScheduleKind { Constant, Linear, Cosine, Step };

/// "constant", "linear", "cosine", "step".
const char *getLRScheduleName(LRScheduleKind kind);
std::optional<LRScheduleKind> parseLRScheduleKind(std::string_view name);

/// The learning rate of training step s (counted from 1; u = s - 1 updates
/// came before it), for a base rate `lr`:
///   warmup (u < W):  lr * (u + 1) / (W + 1)
///   then, with p = (u - W) / (H - W) clamped to [0, 1]:
///     constant       lr
///     linear         min + (lr - min) * (1 - p)
///     cosine         min + (lr - min) * (1 + cos(pi p)) / 2
///     step           max(min, lr * gamma^floor((u - W) / stepSize))
/// The torch.optim.lr_scheduler equivalents (stepped once per step):
/// LinearLR(start_factor=1/(W+1), total_iters=W) for the warmup, then
/// LinearLR(1, min/lr, H-W), CosineAnnealingLR(H-W, eta_min=min) or
/// StepLR(stepSize, gamma), joined by SequentialLR(milestones=[W]).
struct LRSchedule {
  LRScheduleKind kind = LRScheduleKind::Constant;
  int64_t warmupSteps = 0;
  double minLr = 0.0;
  /// H: the step the decay ends at, warmup included (default: the run's
  /// --steps).
  int64_t horizon = 0;
  /// step: the steps between decays (default: (H - W) / 3, at least 1)
  /// and the factor of each.
  int64_t stepSize = 0;
  double gamma = 0.1;

  double learningRate(double lr, int64_t step) const;
};

/// Fully resolved hyper-parameters.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::SGD;
  double lr = 0.01;
  /// SGD with momentum (PyTorch semantics, no dampening, no Nesterov).
  double momentum = 0.0;
  /// SGD: added to the gradient (g + wd * p); Adam: decoupled (AdamW).
  double weightDecay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  /// The learning rate over the steps; `lr` is its base.
  LRSchedule schedule;
  /// The bound of the global gradient norm (the library's CLIP_GRAD
  /// actions); 0 when the library does not clip.
  double clipGradNorm = 0.0;

  /// This configuration with the learning rate of training step `step`
  /// (counted from 1): what that step's updates use.
  OptimizerConfig atStep(int64_t step) const;

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
  std::optional<LRScheduleKind> schedule;
  std::optional<int64_t> warmupSteps, horizon, stepSize;
  std::optional<double> minLr, gamma;
  /// The gradient-norm bound (default: the library's, which must clip).
  std::optional<double> clipGradNorm;
};

/// Resolves `options` against the model: default optimizer = the
/// metadata's; lr 0.01 (sgd, momentum) or 0.001 (adam); momentum 0.9 for
/// "momentum", else 0; weight decay 0 (sgd, momentum) or 0.01 (AdamW, as
/// torch.optim.AdamW); a constant learning rate, the schedule's horizon
/// `steps`. Fails when the result needs more optimizer state than the model
/// reserves, or a value is out of range.
/// `library` names the model library in messages (the path the user gave).
Status resolveOptimizer(const ModelMetadata &metadata,
                        const OptimizerOptions &options, int64_t steps,
                        OptimizerConfig &config,
                        std::string_view library = "the model library");

/// One optimizer step over `count` parameters in place. `step` counts this
/// parameter block's steps from 1 (Adam's bias correction, momentum's first
/// step). `state` holds config.stateMultiple() * count floats (momentum
/// buffer; Adam's m then v) and may be null when that is 0. Plain SGD
/// without weight decay is exactly gpipe_rt_cpu_sgd_update_f32.
Status applyOptimizer(const OptimizerConfig &config, int64_t step,
                      float *params, const float *grads, float *state,
                      int64_t count);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_OPTIMIZER_H
