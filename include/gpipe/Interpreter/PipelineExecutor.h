//===- PipelineExecutor.h - Reference executor for pipelines ----*- C++ -*-===//
//
// Runs one training step of a scheduled `gpipe.pipeline` (the output of
// buildGPipePipeline) on the host, with the nn interpreter as the compute
// engine: the mini-batch is split into the pipeline's M micro-batches along
// dim 0, every rank's `gpipe.program` is executed action by action (all
// ranks simulated in one thread, transfers as mailbox hand-offs), the stages'
// forward and backward functions run through interpretFunction, parameter
// gradients are accumulated over the micro-batches in the fixed order
// 0, 1, ..., M-1, and `gpipe.step` optionally applies plain SGD. It is the
// reference the compiled pipelines are checked against, and what tests use
// to check the GPipe guarantee (bitwise identical gradients for every K and
// schedule at a fixed M).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_INTERPRETER_PIPELINEEXECUTOR_H
#define GPIPE_INTERPRETER_PIPELINEEXECUTOR_H

#include "gpipe/Interpreter/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::gpipe {

struct PipelineExecutorOptions {
  /// The symbol of the `gpipe.pipeline` to run; empty: the module's only
  /// one.
  std::string pipeline;
  /// When set, each `gpipe.step @s` applies plain SGD to the parameters of
  /// stage @s with the gradients accumulated over the mini-batch:
  /// `p = p - lr * g` in f32 (gpipe_rt_cpu_sgd_update_f32). Unset: steps
  /// change nothing.
  std::optional<float> sgdLearningRate;
  /// The run's seed and the step (from 0) dropout masks are drawn for, as
  /// gpipe-run's --seed and step count.
  uint64_t seed = 0;
  int64_t step = 0;
};

/// What one training step produced.
struct PipelineStepResult {
  /// The mean loss over the mini-batch: the micro-batch losses summed in
  /// micro-batch order (in double) and divided by M.
  double loss = 0.0;
  /// The last stage's output (the loss) of micro-batches 0, ..., M-1.
  std::vector<float> microbatchLosses;
  /// The gradient of the mean loss with respect to every parameter the
  /// stages' backward functions differentiate, by parameter name: the sum
  /// over micro-batches 0, 1, ..., M-1 (the first micro-batch's gradient,
  /// then each next one added in f32), each already scaled by 1/M by the
  /// last stage's backward (`nn.loss_scale`).
  std::map<std::string, HostTensor> gradients;
  /// Every action in the order the simulation ran it: (rank, position in
  /// the rank's program).
  std::vector<std::pair<int64_t, int64_t>> trace;
};

/// Runs one training step of the scheduled pipeline in `module` on the
/// mini-batch `input` (dim 0 is the batch B = M * micro-batch) and `labels`
/// (the last stage's extra argument, split the same way; may be an invalid
/// tensor when the last stage takes none).
///
/// Execution: the ranks' programs run in one thread in a fixed global order:
/// round after round, each rank (0, 1, ...) runs actions until it reaches a
/// receive whose message has not been sent yet. Sends deliver to a mailbox
/// keyed by (boundary, micro-batch, direction) and never block; a receive
/// takes its message, checking the peer ranks and the payload type. When no
/// rank can move and some have actions left, the step fails naming each
/// waiting action. `gpipe.forward` calls the stage's forward on its input
/// (stage 0: micro-batch `mb` of `input`; others: the received activation,
/// or the previous stage's output when the same rank runs it), plus the
/// micro-batch's labels on the last stage. `gpipe.backward` calls the
/// stage's backward with (forward arguments..., output gradient) where the
/// last stage's output gradient is 1.0 (its backward multiplies by 1/M);
/// the backward functions recompute the forward, so `gpipe.recompute` only
/// checks its place and `gpipe.reduce_grad` (one replica) does nothing.
/// `gpipe.backward_input` / `gpipe.backward_weight` call the stage's split
/// functions (the weight half must carry `nn.param_grads`).
///
/// Parameter gradients are accumulated per stage in the order its backwards
/// run, which must be micro-batch order 0..M-1 (an error otherwise): the
/// result is bitwise the same for every schedule and partition of the same
/// network and M. A parameter differentiated by two stages is an error
/// (tied weights across stages are not supported).
///
/// `params` supplies the parameters; with `sgdLearningRate` each step
/// replaces the updated ones in it. Errors are reported through the
/// context's diagnostics at the offending action or the pipeline.
FailureOr<PipelineStepResult>
executePipeline(ModuleOp module, const HostTensor &input,
                const HostTensor &labels, ParameterStore &params,
                const PipelineExecutorOptions &options = {});

} // namespace mlir::gpipe

#endif // GPIPE_INTERPRETER_PIPELINEEXECUTOR_H
