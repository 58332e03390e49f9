//===- KernelCalls.cpp - Which kernel computes an nn op ---------*- C++ -*-===//
//
// Implements getKernelCall through KernelCallOpInterface, whose models the
// per-family files of this folder attach (Elementwise.cpp, Contractions.cpp,
// Reductions.cpp, DataMovement.cpp, Losses.cpp, Convolutions.cpp): per nn
// op, the element types its kernel accepts, the shape facts the kernel's
// arguments take for granted (a GEMM's operands have two dims, a slice's
// offsets one entry per dim, ...), and the kernel's arguments in the order
// Kernels.def declares them. And verifyKernelCall, which holds a call
// against that declaration.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"

#include "CallBuilder.h"

#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::kernel_calls;
using ::gpipe::abi::ArgRole;
using ::gpipe::abi::KernelId;

FailureOr<gpipe_rt_dtype> mlir::gpipe::getRuntimeDType(Type elementType) {
  if (elementType.isF32())
    return GPIPE_RT_F32;
  if (elementType.isF64())
    return GPIPE_RT_F64;
  if (elementType.isF16())
    return GPIPE_RT_F16;
  if (elementType.isBF16())
    return GPIPE_RT_BF16;
  if (elementType.isInteger(64))
    return GPIPE_RT_I64;
  if (elementType.isInteger(32))
    return GPIPE_RT_I32;
  if (elementType.isInteger(1))
    return GPIPE_RT_BOOL;
  return failure();
}

// The nn enums pass to the kernels as numbers.
static_assert(int(nn::ComparePredicate::eq) == GPIPE_RT_CMP_EQ &&
              int(nn::ComparePredicate::ne) == GPIPE_RT_CMP_NE &&
              int(nn::ComparePredicate::lt) == GPIPE_RT_CMP_LT &&
              int(nn::ComparePredicate::le) == GPIPE_RT_CMP_LE &&
              int(nn::ComparePredicate::gt) == GPIPE_RT_CMP_GT &&
              int(nn::ComparePredicate::ge) == GPIPE_RT_CMP_GE);
static_assert(int(nn::LogicalKind::and_) == GPIPE_RT_AND &&
              int(nn::LogicalKind::or_) == GPIPE_RT_OR &&
              int(nn::LogicalKind::xor_) == GPIPE_RT_XOR);

/// The unary float ops, by name: no op class is needed for them.
std::optional<gpipe_rt_unary_op>
mlir::gpipe::getRuntimeUnaryOp(StringRef name) {
  return llvm::StringSwitch<std::optional<gpipe_rt_unary_op>>(name)
      .Case("nn.neg", GPIPE_RT_NEG)
      .Case("nn.reciprocal", GPIPE_RT_RECIPROCAL)
      .Case("nn.sqrt", GPIPE_RT_SQRT)
      .Case("nn.exp", GPIPE_RT_EXP)
      .Case("nn.log", GPIPE_RT_LOG)
      .Case("nn.sin", GPIPE_RT_SIN)
      .Case("nn.cos", GPIPE_RT_COS)
      .Case("nn.floor", GPIPE_RT_FLOOR)
      .Case("nn.ceil", GPIPE_RT_CEIL)
      .Case("nn.round", GPIPE_RT_ROUND)
      .Case("nn.erf", GPIPE_RT_ERF)
      .Case("nn.tanh", GPIPE_RT_TANH)
      .Case("nn.sigmoid", GPIPE_RT_SIGMOID)
      .Case("nn.relu", GPIPE_RT_RELU)
      .Case("nn.gelu", GPIPE_RT_GELU)
      .Default(std::nullopt);
}

FailureOr<KernelCall>
mlir::gpipe::getKernelCall(Operation *op, const KernelCallOptions &options) {
  auto kernel = dyn_cast<KernelCallOpInterface>(op);
  if (!kernel)
    return op->emitOpError("is not supported by the ") << options.consumer;
  return kernel.getKernelCall(options);
}

void mlir::gpipe::registerKernelCallExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, nn::NNDialect *) {
    registerElementwiseKernels(ctx);
    registerContractionsKernels(ctx);
    registerReductionsKernels(ctx);
    registerDataMovementKernels(ctx);
    registerLossesKernels(ctx);
    registerConvolutionsKernels(ctx);
  });
}

FailureOr<KernelCall>
mlir::gpipe::getAccumulatingGemmCall(Operation *op,
                                     const KernelCallOptions &options) {
  auto gemm = dyn_cast<nn::GemmOp>(op);
  if (!gemm || gemm.getC())
    return op->emitOpError("accumulates in place only as an nn.gemm without "
                           "an addend");
  FailureOr<KernelCall> call = getKernelCall(op, options);
  if (failed(call))
    return failure();
  // The result's buffer is the addend too, scaled by AccumulateBeta.
  Value result = gemm.getResult();
  for (auto [param, arg] : llvm::zip_equal(call->signature(), call->args)) {
    StringRef name = param.name;
    if (name == "c") {
      arg.kind = KernelArg::Buffer;
      arg.value = result;
    } else if (name == "cShape") {
      arg.kind = KernelArg::Ints;
      arg.ints.assign(shapeOf(result).begin(), shapeOf(result).end());
    } else if (name == "cRank") {
      arg.kind = KernelArg::Int;
      arg.integer = rankOf(result);
    } else if (name == "beta") {
      arg.kind = KernelArg::AccumulateBeta;
    }
  }
  if (failed(verifyKernelCall(op, *call)))
    return failure();
  return call;
}

LogicalResult mlir::gpipe::verifyKernelCall(Operation *op,
                                            const KernelCall &call) {
  const ::gpipe::abi::KernelSignature &sig = call.signature();
  auto mismatch = [&]() {
    return op->emitOpError("kernel call does not match gpipe_rt_*_")
           << sig.name << " of Kernels.def: ";
  };
  if (call.args.size() != sig.numParams)
    return mismatch() << call.args.size() << " arguments for " << sig.numParams
                      << " parameters";
  for (auto [i, param, arg] : llvm::enumerate(sig, call.args)) {
    ArgRole role = param.role;
    bool fits = false;
    switch (arg.kind) {
    case KernelArg::Buffer:
      fits = ::gpipe::abi::isBuffer(role) && arg.value;
      break;
    case KernelArg::Null:
      fits = ::gpipe::abi::isOptional(role);
      break;
    case KernelArg::Int:
      fits = ::gpipe::abi::isInteger(role);
      break;
    case KernelArg::RngKey:
      fits = role == ArgRole::INT && param.type == ::gpipe::abi::ArgType::I64;
      break;
    case KernelArg::Real:
    case KernelArg::AccumulateBeta:
      fits = role == ArgRole::REAL;
      break;
    case KernelArg::Ints:
      fits = ::gpipe::abi::isIntArray(role);
      break;
    case KernelArg::Buffers:
      fits = role == ArgRole::IN_LIST || role == ArgRole::OUT_LIST;
      break;
    case KernelArg::IntsList:
      fits = role == ArgRole::SHAPE_LIST;
      break;
    }
    if (!fits)
      return mismatch() << "argument " << i << " (" << param.name
                        << ") gets a value of the wrong kind";
  }
  return success();
}

#include "gpipe/Dialect/NN/KernelCalls/KernelCallOpInterface.cpp.inc"
