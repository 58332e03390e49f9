//===- KernelCalls.h - Which kernel computes an nn op -----------*- C++ -*-===//
//
// The one mapping from `nn` ops to runtime kernel calls, shared by the nn
// interpreter (which executes a call on host tensors through the CPU
// kernels) and by convert-gpipe-to-rt (which emits it as a gpipe_rt.kernel
// call into the CPU or CUDA kernels). A KernelCall names a kernel of
// Kernels.def and describes each of its arguments by position: an SSA value's
// buffer, a null pointer, an integer, a float, an int64 array, or an array of
// buffers or of int64 arrays. Shapes and attributes come from the op's static
// types, so both consumers pass the kernels the same arguments and interpreted
// and compiled stages compute the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_KERNELCALLS_KERNELCALLS_H
#define GPIPE_DIALECT_NN_KERNELCALLS_KERNELCALLS_H

#include "gpipe/Runtime/Common.h"
#include "gpipe/Runtime/KernelSignatures.h"
#include "gpipe/Runtime/Kernels.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::gpipe {

/// One argument of a kernel call.
struct KernelArg {
  enum Kind {
    Buffer,   ///< the data of `value`
    Null,     ///< a null pointer (an optional buffer or shape left out)
    Int,      ///< `integer`, at the width the signature gives
    Real,     ///< `real`, as float or double as the signature gives
    Ints,     ///< a read-only int64 array
    Buffers,  ///< an array of the data pointers of `values`
    IntsList, ///< an array of read-only int64 arrays
    RngKey,   ///< the random key of the step and micro-batch the call runs
              ///< for (an INT; compiled code asks gpipe_rt_rng_key)
    AccumulateBeta, ///< a REAL: 0 for the step's first micro-batch, else 1
                    ///< (a GEMM that accumulates a weight gradient in
                    ///< place; compiled code selects on its `first`
                    ///< argument)
  };
  Kind kind = Null;
  Value value;
  int64_t integer = 0;
  double real = 0;
  SmallVector<int64_t> ints;
  SmallVector<Value> values;
  SmallVector<SmallVector<int64_t>> intsList;
};

/// A call of kernel `gpipe_rt_<backend>_<signature().name>` with `args` in
/// the signature's order.
struct KernelCall {
  ::gpipe::abi::KernelId kernel{};
  SmallVector<KernelArg> args;

  const ::gpipe::abi::KernelSignature &signature() const {
    return ::gpipe::abi::getKernelSignature(kernel);
  }
};

struct KernelCallOptions {
  /// Who runs the calls, named in messages ("nn interpreter", "CPU code
  /// generator").
  StringRef consumer;
  /// Contractions (nn.matmul, nn.gemm, nn.linear) call their `_bf16` twins:
  /// same arguments, operands rounded to bf16, fp32 accumulation.
  bool bf16Contractions = false;
};

/// The kernel call that computes `op`: every nn op except those that call no
/// kernel, which the consumers handle themselves (nn.layer, nn.param,
/// nn.constant, and the views nn.reshape and nn.unsqueeze). Each op result
/// is a buffer of the result's type that the consumer provides. An op
/// without a kernel, an element type the kernel lacks, or operand types that
/// do not fit the kernel's arguments are reported at the op, naming
/// `options.consumer`. Asks the op's KernelCallOpInterface; an op without
/// one (or a context without registerKernelCallExternalModels) is an error.
FailureOr<KernelCall> getKernelCall(Operation *op,
                                    const KernelCallOptions &options);

/// Attaches KernelCallOpInterface to the nn ops when the nn dialect loads.
void registerKernelCallExternalModels(DialectRegistry &registry);

/// The call of an nn.gemm that NNDialect::getAccumulatingGemms lists: the
/// GEMM adds its product into its result's buffer, which is also its addend
/// (`c`), with beta AccumulateBeta (0 on the step's first micro-batch:
/// the buffer is overwritten). The consumer binds the result to the
/// parameter's gradient.
FailureOr<KernelCall> getAccumulatingGemmCall(Operation *gemm,
                                              const KernelCallOptions &options);

/// Checks `call` against its kernel's signature: one argument per
/// parameter, each of a kind the parameter's role accepts. getKernelCall's
/// calls always pass; a failure is reported at `op` and means the mapping
/// and Kernels.def disagree.
LogicalResult verifyKernelCall(Operation *op, const KernelCall &call);

/// The runtime element type of an MLIR element type (f32, f64, f16, bf16,
/// i64, i32, i1), or failure.
FailureOr<gpipe_rt_dtype> getRuntimeDType(Type elementType);

/// The runtime's unary kernel (unary_f32) behind an nn op name ("nn.relu",
/// "nn.exp", ...), if it is one.
std::optional<gpipe_rt_unary_op> getRuntimeUnaryOp(llvm::StringRef opName);

} // namespace mlir::gpipe

#include "gpipe/Dialect/NN/KernelCalls/KernelCallOpInterface.h.inc"

#endif // GPIPE_DIALECT_NN_KERNELCALLS_KERNELCALLS_H
