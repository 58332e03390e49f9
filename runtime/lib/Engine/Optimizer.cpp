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

Status resolveOptimizer(const ModelMetadata &metadata,
                        const OptimizerOptions &options,
                        OptimizerConfig &config) {
  config = OptimizerConfig();
  config.kind = options.kind ? *options.kind : metadata.optimizer;
  bool adam = config.kind == OptimizerKind::Adam;
  config.lr = options.lr.value_or(adam ? 1e-3 : 0.01);
  config.momentum = options.momentum.value_or(
      config.kind == OptimizerKind::Momentum ? 0.9 : 0.0);
  config.weightDecay = options.weightDecay.value_or(adam ? 0.01 : 0.0);
  auto number = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  if (!std::isfinite(config.lr) || config.lr < 0)
    return Status::error("--lr " + number(config.lr) +
                         ": the learning rate must be finite and "
                         "non-negative");
  if (!(config.momentum >= 0.0 && config.momentum < 1.0))
    return Status::error("--momentum " + number(config.momentum) +
                         ": momentum must lie in [0, 1)");
  if (adam && options.momentum)
    return Status::error("--momentum does not apply to adam");
  if (!std::isfinite(config.weightDecay) || config.weightDecay < 0)
    return Status::error("--weight-decay " + number(config.weightDecay) +
                         ": weight decay must be finite and non-negative");
  // "momentum" with momentum 0 is plain SGD, and "sgd" with a momentum is
  // SGD with momentum: name the optimizer by what it does.
  if (!adam)
    config.kind =
        config.momentum > 0.0 ? OptimizerKind::Momentum : OptimizerKind::SGD;
  if (config.stateMultiple() > metadata.stateMultiple())
    return Status::error("model.so reserves optimizer state for " +
                         std::string(getOptimizerName(metadata.optimizer)) +
                         "; recompile with gpipe-compile --optimizer " +
                         getOptimizerName(config.kind));
  return Status::success();
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
