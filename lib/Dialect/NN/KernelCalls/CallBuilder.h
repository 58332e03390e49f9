//===- CallBuilder.h - Building a kernel call, per op family ----*- C++ -*-===//
//
// What the per-family files of this folder share: the builder that lists a
// kernel's arguments in Kernels.def's order with the element-type checks,
// shape helpers, and the external model that makes a build function an
// op's KernelCallOpInterface. Private to lib/Dialect/NN/KernelCalls.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_LIB_DIALECT_NN_KERNELCALLS_CALLBUILDER_H
#define GPIPE_LIB_DIALECT_NN_KERNELCALLS_CALLBUILDER_H

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

namespace mlir::gpipe::kernel_calls {

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}
inline int64_t rankOf(Value v) { return int64_t(shapeOf(v).size()); }
inline int64_t productOf(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
inline int64_t countOf(Value v) { return productOf(shapeOf(v)); }

/// Builds one op's call: argument appenders in the kernel's order, and the
/// element-type checks with the consumer's name in their messages.
class CallBuilder {
public:
  CallBuilder(Operation *op, const KernelCallOptions &options)
      : op(op), options(options) {}

  CallBuilder &kernel(::gpipe::abi::KernelId id) {
    call.kernel = id;
    return *this;
  }
  CallBuilder &buffer(Value v) {
    KernelArg a;
    a.kind = KernelArg::Buffer;
    a.value = v;
    call.args.push_back(std::move(a));
    return *this;
  }
  /// A buffer that may be absent (a null pointer then).
  CallBuilder &optBuffer(Value v) { return v ? buffer(v) : null(); }
  CallBuilder &null() {
    call.args.push_back(KernelArg());
    return *this;
  }
  CallBuilder &integer(int64_t v) {
    KernelArg a;
    a.kind = KernelArg::Int;
    a.integer = v;
    call.args.push_back(std::move(a));
    return *this;
  }
  CallBuilder &rngKey() {
    KernelArg a;
    a.kind = KernelArg::RngKey;
    call.args.push_back(std::move(a));
    return *this;
  }
  CallBuilder &real(double v) {
    KernelArg a;
    a.kind = KernelArg::Real;
    a.real = v;
    call.args.push_back(std::move(a));
    return *this;
  }
  CallBuilder &ints(ArrayRef<int64_t> v) {
    KernelArg a;
    a.kind = KernelArg::Ints;
    a.ints.assign(v.begin(), v.end());
    call.args.push_back(std::move(a));
    return *this;
  }
  CallBuilder &shape(Value v) { return ints(shapeOf(v)); }
  /// The (buffer, shape, rank) triple most kernels take for a tensor.
  CallBuilder &tensor(Value v) { return buffer(v).shape(v).integer(rankOf(v)); }
  CallBuilder &buffers(ValueRange v) {
    KernelArg a;
    a.kind = KernelArg::Buffers;
    a.values.assign(v.begin(), v.end());
    call.args.push_back(std::move(a));
    return *this;
  }
  CallBuilder &shapes(ValueRange v) {
    KernelArg a;
    a.kind = KernelArg::IntsList;
    for (Value x : v)
      a.intsList.push_back(SmallVector<int64_t>(shapeOf(x)));
    call.args.push_back(std::move(a));
    return *this;
  }

  /// The runtime element type of `v`, one of `allowed` (empty: any).
  FailureOr<gpipe_rt_dtype> dtype(Value v,
                                  ArrayRef<gpipe_rt_dtype> allowed = {}) {
    Type elementType = cast<ShapedType>(v.getType()).getElementType();
    FailureOr<gpipe_rt_dtype> dtype = getRuntimeDType(elementType);
    if (succeeded(dtype) &&
        (allowed.empty() || llvm::is_contained(allowed, *dtype)))
      return *dtype;
    InFlightDiagnostic diag = op->emitOpError("element type ")
                              << elementType << " is not supported by the "
                              << options.consumer;
    if (!allowed.empty()) {
      diag << " (supported: ";
      llvm::interleaveComma(allowed, diag, [&](gpipe_rt_dtype d) {
        diag << ::gpipe::rt::dtypeName(d);
      });
      diag << ")";
    }
    return diag;
  }
  /// Every operand and result is f32.
  LogicalResult f32Only() {
    for (Value v : op->getOperands())
      if (failed(dtype(v, {GPIPE_RT_F32})))
        return failure();
    for (Value v : op->getResults())
      if (failed(dtype(v, {GPIPE_RT_F32})))
        return failure();
    return success();
  }

  /// An error at the op (operand types the kernel's arguments cannot
  /// describe).
  InFlightDiagnostic error(const Twine &message) {
    return op->emitOpError(message);
  }

  FailureOr<KernelCall> done() {
    if (failed(verifyKernelCall(op, call)))
      return failure();
    return std::move(call);
  }

  bool bf16() const { return options.bf16Contractions; }

private:
  Operation *op;
  const KernelCallOptions &options;
  KernelCall call;
};

/// The index element types gathers and losses accept.
inline constexpr gpipe_rt_dtype kIndexTypes[] = {GPIPE_RT_I32, GPIPE_RT_I64};

/// KernelCallOpInterface for `OpT`, by `Build`.
template <typename OpT, FailureOr<KernelCall> (*Build)(CallBuilder &, OpT)>
struct KernelModel
    : KernelCallOpInterface::ExternalModel<KernelModel<OpT, Build>, OpT> {
  FailureOr<KernelCall> getKernelCall(Operation *op,
                                      const KernelCallOptions &options) const {
    CallBuilder builder(op, options);
    return Build(builder, cast<OpT>(op));
  }
};

template <typename OpT, FailureOr<KernelCall> (*Build)(CallBuilder &, OpT)>
void attach(MLIRContext *ctx) {
  OpT::template attachInterface<KernelModel<OpT, Build>>(*ctx);
}

// Each family file attaches its models.
void registerElementwiseKernels(MLIRContext *ctx);
void registerContractionsKernels(MLIRContext *ctx);
void registerReductionsKernels(MLIRContext *ctx);
void registerDataMovementKernels(MLIRContext *ctx);
void registerLossesKernels(MLIRContext *ctx);
void registerConvolutionsKernels(MLIRContext *ctx);

} // namespace mlir::gpipe::kernel_calls

#endif // GPIPE_LIB_DIALECT_NN_KERNELCALLS_CALLBUILDER_H
