//===- Optimizer.cpp - Parameter updates of gpipe.step ----------*- C++ -*-===//
//
// The optimizers gpipe_rt_optimizer_step applies to a stage's contiguous
// parameter block: plain SGD (bit-identical to gpipe_rt_cpu_sgd_update_f32
// without weight decay), SGD with momentum as PyTorch defines it (the buffer
// starts as the first gradient, then buf = momentum * buf + g), and AdamW
// with PyTorch's defaults (decoupled weight decay, bias-corrected moments).
// All arithmetic is f32 per element with the scalar factors computed in
// double once per step; the runtime builds with -ffp-contract=off, so the
// results do not depend on the target's FMA support.
//
// The optimizer-state block the compiler reserved holds the momentum buffer
// (momentum) or the first moments followed by the second moments (adam).
// The engine zeroes it before the first step.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Optimizer.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/ModelMetadata.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpipe::rt {

int64_t OptimizerConfig::stateMultiple() const {
  if (kind == OptimizerKind::Adam)
    return 2;
  return momentum > 0.0 ? 1 : 0;
}

OptimizerKind OptimizerConfig::stateKind() const {
  if (kind == OptimizerKind::Adam)
    return OptimizerKind::Adam;
  return momentum > 0.0 ? OptimizerKind::Momentum : OptimizerKind::SGD;
}

const char *getLRScheduleName(LRScheduleKind kind) {
  switch (kind) {
  case LRScheduleKind::Constant:
    return "constant";
  case LRScheduleKind::Linear:
    return "linear";
  case LRScheduleKind::Cosine:
    return "cosine";
  case LRScheduleKind::Step:
    return "step";
  }
  return "constant";
}

std::optional<LRScheduleKind> parseLRScheduleKind(std::string_view name) {
  for (LRScheduleKind kind : {LRScheduleKind::Constant, LRScheduleKind::Linear,
                              LRScheduleKind::Cosine, LRScheduleKind::Step})
    if (name == getLRScheduleName(kind))
      return kind;
  return std::nullopt;
}

double LRSchedule::learningRate(double lr, int64_t step) const {
  const int64_t u = std::max<int64_t>(step - 1, 0);
  // Linear warmup from lr / (W + 1) (torchtitan's; LinearLR with
  // start_factor 1 / (W + 1)).
  if (u < warmupSteps)
    return lr * double(u + 1) / double(warmupSteps + 1);
  const int64_t decaySteps = horizon - warmupSteps;
  const double p =
      decaySteps <= 0
          ? 1.0
          : std::min(1.0, double(u - warmupSteps) / double(decaySteps));
  switch (kind) {
  case LRScheduleKind::Constant:
    return lr;
  case LRScheduleKind::Linear:
    return minLr + (lr - minLr) * (1.0 - p);
  case LRScheduleKind::Cosine:
    // SGDR's annealing (Loshchilov & Hutter 2017, eq. 5), as
    // CosineAnnealingLR's closed form.
    return minLr + (lr - minLr) * (1.0 + std::cos(M_PI * p)) / 2.0;
  case LRScheduleKind::Step: {
    int64_t decays = (u - warmupSteps) / std::max<int64_t>(stepSize, 1);
    return std::max(minLr, lr * std::pow(gamma, double(decays)));
  }
  }
  return lr;
}

OptimizerConfig OptimizerConfig::atStep(int64_t step) const {
  OptimizerConfig config = *this;
  config.lr = schedule.learningRate(lr, step);
  return config;
}

namespace {

std::string formatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// The schedule of `options` over `steps` steps, checked against `lr`.
Status resolveSchedule(const OptimizerOptions &options, int64_t steps,
                       double lr, LRSchedule &schedule) {
  schedule = LRSchedule();
  schedule.kind = options.schedule.value_or(LRScheduleKind::Constant);
  schedule.warmupSteps = options.warmupSteps.value_or(0);
  schedule.horizon = options.horizon.value_or(steps);
  schedule.minLr = options.minLr.value_or(0.0);
  schedule.gamma = options.gamma.value_or(0.1);
  if (schedule.warmupSteps < 0)
    return Status::error("--warmup-steps " +
                         std::to_string(schedule.warmupSteps) +
                         ": must be 0 or more");
  if (schedule.horizon < 1)
    return Status::error("--lr-decay-steps " +
                         std::to_string(schedule.horizon) +
                         ": the decay horizon must be at least 1 step");
  if (!std::isfinite(schedule.minLr) || schedule.minLr < 0 ||
      schedule.minLr > lr)
    return Status::error("--min-lr " + formatNumber(schedule.minLr) +
                         ": must be finite, non-negative and at most --lr " +
                         formatNumber(lr));
  if (!std::isfinite(schedule.gamma) || !(schedule.gamma > 0) ||
      schedule.gamma > 1)
    return Status::error("--lr-gamma " + formatNumber(schedule.gamma) +
                         ": the step decay factor must lie in (0, 1]");
  schedule.stepSize = options.stepSize.value_or(
      std::max<int64_t>((schedule.horizon - schedule.warmupSteps) / 3, 1));
  if (schedule.stepSize < 1)
    return Status::error("--lr-step-size " + std::to_string(schedule.stepSize) +
                         ": must be at least 1");
  if (schedule.kind != LRScheduleKind::Step &&
      (options.stepSize || options.gamma))
    return Status::error(
        std::string(options.stepSize ? "--lr-step-size" : "--lr-gamma") +
        " applies to --lr-schedule step, not " +
        getLRScheduleName(schedule.kind));
  if (schedule.kind == LRScheduleKind::Constant && options.minLr)
    return Status::error("--min-lr applies to a decaying --lr-schedule "
                         "(linear, cosine, step), not constant");
  return Status::success();
}

} // namespace

Status resolveOptimizer(const ModelMetadata &metadata,
                        const OptimizerOptions &options, int64_t steps,
                        OptimizerConfig &config, std::string_view library) {
  config = OptimizerConfig();
  config.kind = options.kind ? *options.kind : metadata.optimizer;
  bool adam = config.kind == OptimizerKind::Adam;
  config.lr = options.lr.value_or(adam ? 1e-3 : 0.01);
  config.momentum = options.momentum.value_or(
      config.kind == OptimizerKind::Momentum ? 0.9 : 0.0);
  config.weightDecay = options.weightDecay.value_or(adam ? 0.01 : 0.0);
  if (!std::isfinite(config.lr) || config.lr < 0)
    return Status::error("--lr " + formatNumber(config.lr) +
                         ": the learning rate must be finite and "
                         "non-negative");
  if (!(config.momentum >= 0.0 && config.momentum < 1.0))
    return Status::error("--momentum " + formatNumber(config.momentum) +
                         ": momentum must lie in [0, 1)");
  if (adam && options.momentum)
    return Status::error("--momentum does not apply to adam");
  if (!std::isfinite(config.weightDecay) || config.weightDecay < 0)
    return Status::error("--weight-decay " + formatNumber(config.weightDecay) +
                         ": weight decay must be finite and non-negative");
  // "momentum" with momentum 0 is plain SGD, and "sgd" with a momentum is
  // SGD with momentum: name the optimizer by what it does.
  if (!adam)
    config.kind =
        config.momentum > 0.0 ? OptimizerKind::Momentum : OptimizerKind::SGD;
  if (config.stateMultiple() > metadata.stateMultiple())
    return Status::error(std::string(library) +
                         " reserves optimizer state for " +
                         std::string(getOptimizerName(metadata.optimizer)) +
                         "; recompile with gpipe-compile --optimizer " +
                         getOptimizerName(config.kind));
  config.clipGradNorm = options.clipGradNorm.value_or(metadata.clipGradNorm);
  if (options.clipGradNorm &&
      (!std::isfinite(config.clipGradNorm) || !(config.clipGradNorm > 0)))
    return Status::error("--clip-grad-norm " +
                         formatNumber(config.clipGradNorm) +
                         ": the gradient-norm bound must be positive and "
                         "finite");
  if (options.clipGradNorm && !metadata.clipsGradients())
    return Status::error(
        "--clip-grad-norm: " + std::string(library) +
        " was compiled without gradient clipping (its programs have no "
        "clip_grad); recompile with gpipe-compile --clip-grad-norm " +
        formatNumber(config.clipGradNorm));
  if (metadata.clipsGradients() && !(config.clipGradNorm > 0))
    return Status::error(std::string(library) +
                         " clips its gradients but names no bound; give "
                         "--clip-grad-norm X");
  return resolveSchedule(options, steps, config.lr, config.schedule);
}

Status applyOptimizer(const OptimizerConfig &config, int64_t step,
                      float *params, const float *grads, float *state,
                      int64_t count) {
  if (count < 0 || step < 1)
    return Status::error("optimizer: bad count or step");
  if (count == 0)
    return Status::success();
  if (!params || !grads)
    return Status::error("optimizer: null parameters or gradients");
  if (config.stateMultiple() > 0 && !state)
    return Status::error(std::string("optimizer: ") +
                         getOptimizerName(config.kind) +
                         " needs optimizer state but none was passed");
  const float lr = float(config.lr);
  const float wd = float(config.weightDecay);

  if (config.kind != OptimizerKind::Adam) {
    if (config.momentum == 0.0) {
      if (config.weightDecay == 0.0) {
        if (gpipe_rt_cpu_sgd_update_f32(params, grads, count, lr) !=
            GPIPE_RT_SUCCESS)
          return Status::error(std::string("optimizer: ") +
                               gpipe_rt_last_error());
        return Status::success();
      }
      for (int64_t i = 0; i < count; ++i) {
        float decay = wd * params[i];
        float g = grads[i] + decay;
        float update = lr * g;
        params[i] = params[i] - update;
      }
      return Status::success();
    }
    const float mu = float(config.momentum);
    float *buf = state;
    for (int64_t i = 0; i < count; ++i) {
      float g = grads[i];
      if (wd != 0.0f) {
        float decay = wd * params[i];
        g = g + decay;
      }
      float b;
      if (step == 1) {
        b = g;
      } else {
        float kept = mu * buf[i];
        b = kept + g;
      }
      buf[i] = b;
      float update = lr * b;
      params[i] = params[i] - update;
    }
    return Status::success();
  }

  // AdamW: p *= 1 - lr * wd; m += (1 - b1) (g - m); v = b2 v + (1 - b2) g^2;
  // p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
  double t = double(step);
  const float decay = float(1.0 - config.lr * config.weightDecay);
  const float oneMinusBeta1 = float(1.0 - config.beta1);
  const float beta2 = float(config.beta2);
  const float oneMinusBeta2 = float(1.0 - config.beta2);
  const float stepSize = float(config.lr / (1.0 - std::pow(config.beta1, t)));
  const float correction2 = float(std::sqrt(1.0 - std::pow(config.beta2, t)));
  const float eps = float(config.eps);
  float *m = state;
  float *v = state + count;
  for (int64_t i = 0; i < count; ++i) {
    float g = grads[i];
    float p = params[i] * decay;
    float mi = m[i] + oneMinusBeta1 * (g - m[i]);
    float gg = g * g;
    float vi = beta2 * v[i] + oneMinusBeta2 * gg;
    m[i] = mi;
    v[i] = vi;
    float denom = std::sqrt(vi) / correction2 + eps;
    float update = stepSize * (mi / denom);
    params[i] = p - update;
  }
  return Status::success();
}

} // namespace gpipe::rt
