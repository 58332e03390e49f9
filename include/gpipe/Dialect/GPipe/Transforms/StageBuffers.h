//===- StageBuffers.h - Where a stage function's values live ----*- C++ -*-===//
//
// The one answer to "where does each value of a stage function live while it
// runs for one micro-batch", shared by the memory planner (which sizes the
// per-action scratch buffers from it) and the code generator (which places
// every value at the offsets it gives), so that the arena the generated code
// touches is exactly the arena the plan reserved.
//
// A stage function's values fall into:
//   - arguments: the caller's buffers (boundary activations, kept inputs,
//     labels, saved values, the output gradient);
//   - `nn.param` results: views of the rank's parameter buffer;
//   - constants: read-only data of the compiled library;
//   - routed results: the forward's output (not on the last stage) or the
//     backward's input gradient (not on stage 0) is computed directly into
//     the buffer it is sent from, the values a forward saves for its
//     backward directly into their saved slots, and the values the input
//     half of a split backward hands to its weight half directly into the
//     Deferred buffer, and the weight gradients a GEMM accumulates in place
//     (NNDialect::getAccumulatingGemms) directly into the rank's gradient
//     buffer (a value returned twice is routed to its first result and
//     copied to the other);
//   - everything else: the function's scratch region, at offsets an interval
//     allocation over the body's liveness assigns (values whose lives do not
//     overlap share bytes).
// `nn.layer` bodies run in place (their arguments and results are the
// values they stand for), and `nn.reshape` / `nn.unsqueeze` are views of
// their input (no copy, no bytes of their own).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_TRANSFORMS_STAGEBUFFERS_H
#define GPIPE_DIALECT_GPIPE_TRANSFORMS_STAGEBUFFERS_H

#include "gpipe/Analysis/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::gpipe {

/// Bytes of a statically shaped tensor of integers (i1 as one byte) or
/// floats; 0 for anything else.
int64_t getValueBytes(Type type);

/// Liveness over one function body in execution order. Every op is a program
/// point; an `nn.layer` runs its body in place and reshapes are views, so
/// such values stand for ("are canonically") the value they alias. A value
/// is live from the point that defines it to its last use (itself if
/// unused). `nn.param` results and constants take no bytes; the function's
/// arguments are not values here.
class FunctionLiveness {
public:
  explicit FunctionLiveness(func::FuncOp func);

  /// Defined (canonical) values in definition order.
  ArrayRef<Value> getValues() const { return order; }
  /// The live range of a defined canonical value.
  LiveRange getRange(Value v) const { return ranges.lookup(v); }
  /// Whether `v` (canonical) is defined by an op of the body that takes
  /// bytes (not an argument, parameter or constant).
  bool isScratchValue(Value v) const;

  /// The peak of live bytes over the body, leaving out `excluded`.
  int64_t getPeak(llvm::function_ref<bool(Value)> excluded) const;
  /// The sum of the bytes of every defined value, leaving out `excluded`.
  int64_t getTotal(llvm::function_ref<bool(Value)> excluded) const;

  /// The value `v` stands for (through layer arguments and results and
  /// reshapes).
  Value getCanonical(Value v) const;
  /// The canonical values the function returns, in result order.
  SmallVector<Value> getReturned() const;
  /// The ops that are program points (layers are not), in order.
  ArrayRef<Operation *> getOps() const { return ops; }

private:
  void visit(Block &block);

  mutable func::FuncOp func;
  llvm::DenseMap<Value, Value> alias;
  llvm::DenseMap<Value, LiveRange> ranges;
  SmallVector<Value> order;
  SmallVector<Operation *> ops;
  int numPoints = 0;
};

/// Where the values a split backward's input half `input` hands over live in
/// the stage's Deferred buffer: packed in result order, each at a multiple
/// of 16 bytes. Fills `offsets` (one per deferred result) and returns the
/// buffer's size, what the memory planner reserves per micro-batch.
int64_t getDeferredLayout(func::FuncOp input,
                          SmallVectorImpl<int64_t> &offsets);

/// What a stage function is to its stage.
enum class StageFunctionKind { Forward, Backward };

/// The buffer layout of one stage function for one micro-batch.
struct StageFunctionBuffers {
  /// Routed results: canonical value -> the result whose buffer it is
  /// computed in directly (no copy at the return).
  llvm::SmallDenseMap<Value, unsigned, 4> routed;
  /// Offsets in the scratch region of every scratch value (canonical).
  llvm::DenseMap<Value, int64_t> offsets;
  /// The last stage's backward: the loss seeds (the arguments after the
  /// forward's arguments and saved values) are written by the caller at
  /// these offsets of the scratch region.
  SmallVector<int64_t> seedOffsets;
  /// The scratch region's size: the allocated values, then the seeds, every
  /// piece aligned. The memory plan's working set of the function.
  int64_t scratchBytes = 0;
};

/// Plans `func`, the forward or backward of stage `index` of `numStages`,
/// whose backward takes `numForwardArgs` arguments (the forward's plus the
/// saved values) before the seeds (and a weight half the deferred values
/// after them). Offsets and sizes are multiples of
/// `alignment`.
StageFunctionBuffers
planStageFunction(func::FuncOp func, const FunctionLiveness &liveness,
                  StageFunctionKind kind, int64_t index, int64_t numStages,
                  unsigned numForwardArgs, int64_t alignment);

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_TRANSFORMS_STAGEBUFFERS_H
