//===- KernelCalls.cpp - Which kernel computes an nn op ---------*- C++ -*-===//
//
// Implements getKernelCall: per nn op, the element types its kernel
// accepts, the shape facts the kernel's arguments take for granted (a
// GEMM's operands have two dims, a slice's offsets one entry per dim, ...),
// and the kernel's arguments in the order Kernels.def declares them; and
// verifyKernelCall, which holds a call against that declaration.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"

#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gpipe;
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

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}
int64_t rankOf(Value v) { return int64_t(shapeOf(v).size()); }
int64_t productOf(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
int64_t countOf(Value v) { return productOf(shapeOf(v)); }

/// Builds one op's call: argument appenders in the kernel's order, and the
/// element-type checks with the consumer's name in their messages.
class CallBuilder {
public:
  CallBuilder(Operation *op, const KernelCallOptions &options)
      : op(op), options(options) {}

  CallBuilder &kernel(KernelId id) {
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

} // namespace

FailureOr<KernelCall>
mlir::gpipe::getKernelCall(Operation *operation,
                           const KernelCallOptions &options) {
  CallBuilder b(operation, options);
  if (std::optional<gpipe_rt_unary_op> kind =
          getRuntimeUnaryOp(operation->getName().getStringRef())) {
    if (failed(b.f32Only()))
      return failure();
    return b.kernel(KernelId::k_unary_f32)
        .integer(*kind)
        .buffer(operation->getOperand(0))
        .buffer(operation->getResult(0))
        .integer(countOf(operation->getOperand(0)))
        .done();
  }
  auto binary = [&](gpipe_rt_binary_op kind) -> FailureOr<KernelCall> {
    // Integer arithmetic (position ids): the i64 kernel.
    if (cast<ShapedType>(operation->getResult(0).getType())
            .getElementType()
            .isInteger(64))
      return b.kernel(KernelId::k_binary_i64)
          .integer(kind)
          .tensor(operation->getOperand(0))
          .tensor(operation->getOperand(1))
          .tensor(operation->getResult(0))
          .done();
    if (failed(b.f32Only()))
      return failure();
    return b.kernel(KernelId::k_binary_f32)
        .integer(kind)
        .tensor(operation->getOperand(0))
        .tensor(operation->getOperand(1))
        .tensor(operation->getResult(0))
        .done();
  };
  // The contractions' kernels in the requested precision.
  KernelId matmulKernel =
      b.bf16() ? KernelId::k_matmul_bf16 : KernelId::k_matmul_f32;
  KernelId gemmKernel = b.bf16() ? KernelId::k_gemm_bf16 : KernelId::k_gemm_f32;
  KernelId linearKernel =
      b.bf16() ? KernelId::k_linear_bf16 : KernelId::k_linear_f32;
  const std::initializer_list<gpipe_rt_dtype> indexTypes = {GPIPE_RT_I32,
                                                            GPIPE_RT_I64};

  return llvm::TypeSwitch<Operation *, FailureOr<KernelCall>>(operation)
      .Case<nn::AddOp>([&](auto) { return binary(GPIPE_RT_ADD); })
      .Case<nn::SubOp>([&](auto) { return binary(GPIPE_RT_SUB); })
      .Case<nn::MulOp>([&](auto) { return binary(GPIPE_RT_MUL); })
      .Case<nn::DivOp>([&](auto) { return binary(GPIPE_RT_DIV); })
      .Case<nn::PowOp>([&](auto) { return binary(GPIPE_RT_POW); })
      .Case<nn::MaxOp>([&](auto) { return binary(GPIPE_RT_MAX); })
      .Case<nn::MinOp>([&](auto) { return binary(GPIPE_RT_MIN); })
      .Case<nn::RemainderOp>([&](auto) { return binary(GPIPE_RT_REMAINDER); })
      .Case<nn::FModOp>([&](auto) { return binary(GPIPE_RT_FMOD); })
      .Case<nn::EqualOp>([&](nn::EqualOp eq) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype =
            b.dtype(eq.getLhs(), {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_I32,
                                  GPIPE_RT_I64, GPIPE_RT_BOOL});
        if (failed(dtype))
          return failure();
        return b.kernel(KernelId::k_equal)
            .integer(*dtype)
            .tensor(eq.getLhs())
            .tensor(eq.getRhs())
            .tensor(eq.getResult())
            .done();
      })
      .Case<nn::CompareOp>([&](nn::CompareOp cmp) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype =
            b.dtype(cmp.getLhs(), {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_I32,
                                   GPIPE_RT_I64, GPIPE_RT_BOOL});
        if (failed(dtype))
          return failure();
        // nn.ComparePredicate and gpipe_rt_compare_op number alike.
        return b.kernel(KernelId::k_compare)
            .integer(static_cast<int64_t>(cmp.getPredicate()))
            .integer(*dtype)
            .tensor(cmp.getLhs())
            .tensor(cmp.getRhs())
            .tensor(cmp.getResult())
            .done();
      })
      .Case<nn::LogicalOp>([&](nn::LogicalOp op) -> FailureOr<KernelCall> {
        // nn.LogicalKind and gpipe_rt_logical_op number alike.
        return b.kernel(KernelId::k_logical)
            .integer(static_cast<int64_t>(op.getKind()))
            .tensor(op.getLhs())
            .tensor(op.getRhs())
            .tensor(op.getResult())
            .done();
      })
      .Case<nn::CumSumOp>([&](nn::CumSumOp op) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype =
            b.dtype(op.getInput(), {GPIPE_RT_F32, GPIPE_RT_I64});
        if (failed(dtype))
          return failure();
        return b.kernel(KernelId::k_cumsum)
            .integer(*dtype)
            .tensor(op.getInput())
            .integer(op.getAxis())
            .integer(op.getExclusive())
            .integer(op.getReverse())
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::BroadcastToOp>(
          [&](nn::BroadcastToOp op) -> FailureOr<KernelCall> {
            FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getInput());
            if (failed(dtype))
              return failure();
            return b.kernel(KernelId::k_broadcast)
                .integer(*dtype)
                .tensor(op.getInput())
                .tensor(op.getResult())
                .done();
          })
      .Case<nn::ClipOp>([&](nn::ClipOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        return b.kernel(KernelId::k_clip_f32)
            .buffer(op.getInput())
            .buffer(op.getResult())
            .integer(countOf(op.getInput()))
            .real(op.getMin().convertToFloat())
            .real(op.getMax().convertToFloat())
            .done();
      })
      .Case<nn::ClipGradOp>([&](nn::ClipGradOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        return b.kernel(KernelId::k_clip_grad_f32)
            .buffer(op.getInput())
            .buffer(op.getGrad())
            .buffer(op.getResult())
            .integer(countOf(op.getInput()))
            .real(op.getMin().convertToFloat())
            .real(op.getMax().convertToFloat())
            .done();
      })
      .Case<nn::WhereOp>([&](nn::WhereOp where) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype = b.dtype(where.getX());
        if (failed(dtype))
          return failure();
        return b.kernel(KernelId::k_where)
            .tensor(where.getCondition())
            .integer(*dtype)
            .tensor(where.getX())
            .tensor(where.getY())
            .tensor(where.getResult())
            .done();
      })
      .Case<nn::NotOp>([&](nn::NotOp notOp) -> FailureOr<KernelCall> {
        return b.kernel(KernelId::k_not)
            .buffer(notOp.getInput())
            .buffer(notOp.getResult())
            .integer(countOf(notOp.getInput()))
            .done();
      })
      .Case<nn::CastOp>([&](nn::CastOp cast) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> from = b.dtype(cast.getInput());
        if (failed(from))
          return failure();
        FailureOr<gpipe_rt_dtype> to = b.dtype(cast.getResult());
        if (failed(to))
          return failure();
        return b.kernel(KernelId::k_cast)
            .integer(*from)
            .buffer(cast.getInput())
            .integer(*to)
            .buffer(cast.getResult())
            .integer(countOf(cast.getInput()))
            .done();
      })
      .Case<nn::MatMulOp>([&](nn::MatMulOp mm) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        return b.kernel(matmulKernel)
            .tensor(mm.getLhs())
            .tensor(mm.getRhs())
            .integer(mm.getTransLhs())
            .integer(mm.getTransRhs())
            .tensor(mm.getResult())
            .done();
      })
      .Case<nn::GemmOp>([&](nn::GemmOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        // The kernel takes the operands' and the result's dims without a
        // rank.
        if (rankOf(op.getA()) != 2 || rankOf(op.getB()) != 2 ||
            rankOf(op.getResult()) != 2)
          return b.error("expected 2-D operands and result");
        b.kernel(gemmKernel).buffer(op.getA()).shape(op.getA());
        b.buffer(op.getB()).shape(op.getB());
        if (Value c = op.getC())
          b.tensor(c);
        else
          b.null().null().integer(0);
        return b.real(op.getAlpha().convertToFloat())
            .real(op.getBeta().convertToFloat())
            .integer(op.getTransA())
            .integer(op.getTransB())
            .buffer(op.getResult())
            .shape(op.getResult())
            .done();
      })
      .Case<nn::LinearOp>([&](nn::LinearOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        // The kernel takes the weight's dims without a rank and the bias's
        // size from the result.
        if (rankOf(op.getWeight()) != 2)
          return b.error("expected a 2-D weight");
        ArrayRef<int64_t> outShape = shapeOf(op.getResult());
        if (Value bias = op.getBias())
          if (outShape.empty() || rankOf(bias) != 1 ||
              shapeOf(bias)[0] != outShape.back())
            return b.error("expected a bias of shape [")
                   << (outShape.empty() ? 0 : outShape.back()) << "]";
        return b.kernel(linearKernel)
            .tensor(op.getInput())
            .buffer(op.getWeight())
            .shape(op.getWeight())
            .optBuffer(op.getBias())
            .integer(op.getTransposeWeight())
            .tensor(op.getResult())
            .done();
      })
      .Case<nn::SoftmaxOp>([&](nn::SoftmaxOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        return b.kernel(KernelId::k_softmax_f32)
            .tensor(op.getInput())
            .integer(op.getAxis())
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::LayerNormOp>([&](nn::LayerNormOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        int64_t axis = int64_t(op.getAxis());
        if (axis > rankOf(op.getInput()))
          return b.error("axis ") << axis << " exceeds the rank";
        int64_t normalized = productOf(shapeOf(op.getInput()).drop_front(axis));
        if (countOf(op.getScale()) != normalized ||
            (op.getBias() && countOf(op.getBias()) != normalized))
          return b.error("scale and bias must cover the normalized dims");
        // No mean and rstd: the backward recomputes them.
        return b.kernel(KernelId::k_layer_norm_f32)
            .tensor(op.getInput())
            .integer(axis)
            .buffer(op.getScale())
            .optBuffer(op.getBias())
            .real(op.getEpsilon().convertToFloat())
            .buffer(op.getResult())
            .null()
            .null()
            .done();
      })
      .Case<nn::GatherOp>([&](nn::GatherOp op) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getData());
        if (failed(dtype))
          return failure();
        FailureOr<gpipe_rt_dtype> indexType =
            b.dtype(op.getIndices(), indexTypes);
        if (failed(indexType))
          return failure();
        return b.kernel(KernelId::k_gather)
            .integer(*dtype)
            .tensor(op.getData())
            .integer(*indexType)
            .tensor(op.getIndices())
            .integer(op.getAxis())
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::TransposeOp>([&](nn::TransposeOp op) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getInput());
        if (failed(dtype))
          return failure();
        if (int64_t(op.getPerm().size()) != rankOf(op.getInput()))
          return b.error("perm has ")
                 << op.getPerm().size() << " entries for rank "
                 << rankOf(op.getInput());
        return b.kernel(KernelId::k_transpose)
            .integer(*dtype)
            .tensor(op.getInput())
            .ints(op.getPerm())
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::SliceOp>([&](nn::SliceOp op) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getInput());
        if (failed(dtype))
          return failure();
        size_t rank = size_t(rankOf(op.getInput()));
        if (op.getOffsets().size() != rank || op.getSizes().size() != rank ||
            op.getStrides().size() != rank ||
            op.getSizes() != shapeOf(op.getResult()))
          return b.error("offsets, sizes and strides must have one entry per "
                         "dim, sizes matching the result");
        return b.kernel(KernelId::k_slice)
            .integer(*dtype)
            .tensor(op.getInput())
            .ints(op.getOffsets())
            .ints(op.getSizes())
            .ints(op.getStrides())
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::SplitOp>([&](nn::SplitOp op) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getInput());
        if (failed(dtype))
          return failure();
        int64_t axis = int64_t(op.getAxis());
        if (op.getSizes().size() != op.getNumResults())
          return b.error("has ") << op.getSizes().size() << " sizes for "
                                 << op.getNumResults() << " results";
        for (auto [result, size] : llvm::zip(op.getResults(), op.getSizes()))
          if (axis >= rankOf(result) || shapeOf(result)[axis] != size)
            return b.error("result type ")
                   << result.getType() << " does not match size " << size;
        return b.kernel(KernelId::k_split)
            .integer(*dtype)
            .tensor(op.getInput())
            .integer(axis)
            .ints(op.getSizes())
            .integer(op.getNumResults())
            .buffers(op.getResults())
            .done();
      })
      .Case<nn::ConcatOp>([&](nn::ConcatOp op) -> FailureOr<KernelCall> {
        FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getResult());
        if (failed(dtype))
          return failure();
        for (Value v : op.getInputs())
          if (rankOf(v) != rankOf(op.getResult()) ||
              cast<ShapedType>(v.getType()).getElementType() !=
                  cast<ShapedType>(op.getResult().getType()).getElementType())
            return b.error(
                "inputs must match the result's rank and element type");
        return b.kernel(KernelId::k_concat)
            .integer(*dtype)
            .integer(op.getInputs().size())
            .buffers(op.getInputs())
            .shapes(op.getInputs())
            .integer(rankOf(op.getResult()))
            .integer(op.getAxis())
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::CrossEntropyOp>(
          [&](nn::CrossEntropyOp op) -> FailureOr<KernelCall> {
            if (failed(b.dtype(op.getLogits(), {GPIPE_RT_F32})))
              return failure();
            FailureOr<gpipe_rt_dtype> labelType =
                b.dtype(op.getLabels(), indexTypes);
            if (failed(labelType) ||
                failed(b.dtype(op.getResult(), {GPIPE_RT_F32})))
              return failure();
            if (rankOf(op.getLogits()) < 1 ||
                shapeOf(op.getLabels()) != shapeOf(op.getLogits()).drop_back())
              return b.error("labels must be shaped like the logits without "
                             "the class dim");
            return b.kernel(KernelId::k_cross_entropy_f32)
                .tensor(op.getLogits())
                .integer(*labelType)
                .buffer(op.getLabels())
                .buffer(op.getResult())
                .done();
          })
      .Case<nn::MSEOp>([&](nn::MSEOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        if (shapeOf(op.getInput()) != shapeOf(op.getTarget()))
          return b.error("input and target shapes differ");
        return b.kernel(KernelId::k_mse_f32)
            .buffer(op.getInput())
            .buffer(op.getTarget())
            .integer(countOf(op.getInput()))
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::ReduceSumOp>([&](nn::ReduceSumOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        // The kernel checks the axes; the result must hold the kept dims.
        ArrayRef<int64_t> axes = op.getAxes();
        int64_t kept = 1;
        for (auto [d, size] : llvm::enumerate(shapeOf(op.getInput())))
          if (!llvm::is_contained(axes, int64_t(d)))
            kept *= size;
        if (kept != countOf(op.getResult()))
          return b.error("result has ")
                 << countOf(op.getResult()) << " elements, but reducing "
                 << op.getInput().getType() << " keeps " << kept;
        return b.kernel(KernelId::k_reduce_sum_f32)
            .tensor(op.getInput())
            .ints(axes)
            .integer(axes.size())
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::InsertSliceOp>(
          [&](nn::InsertSliceOp op) -> FailureOr<KernelCall> {
            FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getDest());
            if (failed(dtype))
              return failure();
            size_t rank = size_t(rankOf(op.getDest()));
            if (cast<ShapedType>(op.getSource().getType()).getElementType() !=
                    cast<ShapedType>(op.getDest().getType()).getElementType() ||
                size_t(rankOf(op.getSource())) != rank ||
                op.getOffsets().size() != rank ||
                op.getStrides().size() != rank)
              return b.error("source, dest, offsets and strides must agree on "
                             "the rank and element type");
            return b.kernel(KernelId::k_insert_slice)
                .integer(*dtype)
                .buffer(op.getSource())
                .shape(op.getSource())
                .buffer(op.getDest())
                .shape(op.getDest())
                .integer(rank)
                .ints(op.getOffsets())
                .ints(op.getStrides())
                .buffer(op.getResult())
                .done();
          })
      .Case<nn::GatherGradOp>(
          [&](nn::GatherGradOp op) -> FailureOr<KernelCall> {
            FailureOr<gpipe_rt_dtype> indexType =
                b.dtype(op.getIndices(), indexTypes);
            if (failed(indexType) ||
                failed(b.dtype(op.getGrad(), {GPIPE_RT_F32})) ||
                failed(b.dtype(op.getResult(), {GPIPE_RT_F32})))
              return failure();
            return b.kernel(KernelId::k_gather_grad_f32)
                .integer(*indexType)
                .tensor(op.getIndices())
                .tensor(op.getGrad())
                .integer(op.getAxis())
                .tensor(op.getResult())
                .done();
          })
      .Case<nn::SoftmaxGradOp>(
          [&](nn::SoftmaxGradOp op) -> FailureOr<KernelCall> {
            if (failed(b.f32Only()))
              return failure();
            // One shape describes all three buffers.
            if (shapeOf(op.getOutput()) != shapeOf(op.getGrad()) ||
                shapeOf(op.getOutput()) != shapeOf(op.getResult()))
              return b.error("output, grad and result shapes differ");
            return b.kernel(KernelId::k_softmax_grad_f32)
                .buffer(op.getOutput())
                .buffer(op.getGrad())
                .shape(op.getOutput())
                .integer(rankOf(op.getOutput()))
                .integer(op.getAxis())
                .buffer(op.getResult())
                .done();
          })
      .Case<nn::DropoutOp>([&](nn::DropoutOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        return b.kernel(KernelId::k_dropout_f32)
            .buffer(op.getInput())
            .buffer(op.getResult())
            .integer(countOf(op.getInput()))
            .real(op.getRatio().convertToFloat())
            .rngKey()
            .integer(op.getStream())
            .done();
      })
      .Case<nn::Conv2DOp>([&](nn::Conv2DOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        return b.kernel(KernelId::k_conv2d_f32)
            .buffer(op.getInput())
            .shape(op.getInput())
            .buffer(op.getWeight())
            .shape(op.getWeight())
            .optBuffer(op.getBias())
            .ints(op.getStrides())
            .ints(op.getPads())
            .ints(op.getDilations())
            .integer(op.getGroups())
            .buffer(op.getResult())
            .shape(op.getResult())
            .done();
      })
      .Case<nn::Conv2DGradOp>(
          [&](nn::Conv2DGradOp op) -> FailureOr<KernelCall> {
            if (failed(b.f32Only()))
              return failure();
            return b.kernel(KernelId::k_conv2d_grad_f32)
                .buffer(op.getInput())
                .shape(op.getInput())
                .buffer(op.getWeight())
                .shape(op.getWeight())
                .buffer(op.getGrad())
                .shape(op.getGrad())
                .ints(op.getStrides())
                .ints(op.getPads())
                .ints(op.getDilations())
                .integer(op.getGroups())
                .buffer(op.getInputGrad())
                .buffer(op.getWeightGrad())
                .buffer(op.getBiasGrad())
                .done();
          })
      .Case<nn::MaxPool2DOp>([&](nn::MaxPool2DOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        return b.kernel(KernelId::k_max_pool2d_f32)
            .buffer(op.getInput())
            .shape(op.getInput())
            .ints(op.getKernel())
            .ints(op.getStrides())
            .ints(op.getPads())
            .ints(op.getDilations())
            .buffer(op.getResult())
            .shape(op.getResult())
            .done();
      })
      .Case<nn::MaxPool2DGradOp>(
          [&](nn::MaxPool2DGradOp op) -> FailureOr<KernelCall> {
            if (failed(b.f32Only()))
              return failure();
            return b.kernel(KernelId::k_max_pool2d_grad_f32)
                .buffer(op.getInput())
                .shape(op.getInput())
                .buffer(op.getGrad())
                .shape(op.getGrad())
                .ints(op.getKernel())
                .ints(op.getStrides())
                .ints(op.getPads())
                .ints(op.getDilations())
                .buffer(op.getResult())
                .done();
          })
      .Case<nn::AvgPool2DOp>([&](nn::AvgPool2DOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        return b.kernel(KernelId::k_avg_pool2d_f32)
            .buffer(op.getInput())
            .shape(op.getInput())
            .ints(op.getKernel())
            .ints(op.getStrides())
            .ints(op.getPads())
            .integer(op.getCountIncludePad())
            .buffer(op.getResult())
            .shape(op.getResult())
            .done();
      })
      .Case<nn::AvgPool2DGradOp>(
          [&](nn::AvgPool2DGradOp op) -> FailureOr<KernelCall> {
            if (failed(b.f32Only()))
              return failure();
            return b.kernel(KernelId::k_avg_pool2d_grad_f32)
                .buffer(op.getGrad())
                .shape(op.getGrad())
                .ints(op.getKernel())
                .ints(op.getStrides())
                .ints(op.getPads())
                .integer(op.getCountIncludePad())
                .buffer(op.getResult())
                .shape(op.getResult())
                .done();
          })
      .Case<nn::BatchNormOp>([&](nn::BatchNormOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        // The running statistics are not read: see nn.batch_norm.
        return b.kernel(KernelId::k_batch_norm_f32)
            .tensor(op.getInput())
            .buffer(op.getScale())
            .buffer(op.getBias())
            .real(op.getEpsilon().convertToFloat())
            .buffer(op.getResult())
            .done();
      })
      .Case<nn::BatchNormGradOp>(
          [&](nn::BatchNormGradOp op) -> FailureOr<KernelCall> {
            if (failed(b.f32Only()))
              return failure();
            return b.kernel(KernelId::k_batch_norm_grad_f32)
                .tensor(op.getInput())
                .buffer(op.getScale())
                .buffer(op.getGrad())
                .real(op.getEpsilon().convertToFloat())
                .buffer(op.getRunningMean())
                .buffer(op.getInputGrad())
                .buffer(op.getScaleGrad())
                .buffer(op.getBiasGrad())
                .buffer(op.getMeanStat())
                .buffer(op.getVarStat())
                .done();
          })
      .Case<nn::LayerNormGradOp>(
          [&](nn::LayerNormGradOp op) -> FailureOr<KernelCall> {
            if (failed(b.f32Only()))
              return failure();
            Value x = op.getInput();
            int64_t axis = int64_t(op.getAxis());
            if (axis > rankOf(x))
              return b.error("axis ") << axis << " exceeds the rank";
            int64_t normalized = productOf(shapeOf(x).drop_front(axis));
            if (shapeOf(op.getGrad()) != shapeOf(x) ||
                shapeOf(op.getInputGrad()) != shapeOf(x) ||
                countOf(op.getScale()) != normalized ||
                countOf(op.getScaleGrad()) != normalized ||
                countOf(op.getBiasGrad()) != normalized)
              return b.error("shapes do not fit a layer norm over dims [")
                     << axis << ", " << rankOf(x) << ") of " << x.getType();
            return b.kernel(KernelId::k_layer_norm_grad_f32)
                .tensor(x)
                .integer(axis)
                .buffer(op.getScale())
                .buffer(op.getGrad())
                .real(op.getEpsilon().convertToFloat())
                .buffer(op.getInputGrad())
                .buffer(op.getScaleGrad())
                .buffer(op.getBiasGrad())
                .done();
          })
      .Case<nn::GeluGradOp>([&](nn::GeluGradOp op) -> FailureOr<KernelCall> {
        if (failed(b.f32Only()))
          return failure();
        if (shapeOf(op.getInput()) != shapeOf(op.getGrad()))
          return b.error("input and grad shapes differ");
        return b.kernel(KernelId::k_gelu_grad_f32)
            .buffer(op.getInput())
            .buffer(op.getGrad())
            .buffer(op.getResult())
            .integer(countOf(op.getInput()))
            .done();
      })
      .Case<nn::CrossEntropyGradOp>(
          [&](nn::CrossEntropyGradOp op) -> FailureOr<KernelCall> {
            if (failed(b.dtype(op.getLogits(), {GPIPE_RT_F32})))
              return failure();
            FailureOr<gpipe_rt_dtype> labelType =
                b.dtype(op.getLabels(), indexTypes);
            if (failed(labelType) ||
                failed(b.dtype(op.getGrad(), {GPIPE_RT_F32})) ||
                failed(b.dtype(op.getResult(), {GPIPE_RT_F32})))
              return failure();
            if (rankOf(op.getLogits()) < 1 ||
                shapeOf(op.getLabels()) !=
                    shapeOf(op.getLogits()).drop_back() ||
                shapeOf(op.getResult()) != shapeOf(op.getLogits()) ||
                countOf(op.getGrad()) != 1)
              return b.error(
                  "labels must be shaped like the logits without the class "
                  "dim, the result like the logits, and grad a scalar");
            // The scalar seed is read by the kernel, never by the caller
            // (in compiled code it may live in device memory).
            return b.kernel(KernelId::k_cross_entropy_grad_at_f32)
                .tensor(op.getLogits())
                .integer(*labelType)
                .buffer(op.getLabels())
                .buffer(op.getGrad())
                .buffer(op.getResult())
                .done();
          })
      .Default([&](Operation *other) -> FailureOr<KernelCall> {
        return other->emitOpError("is not supported by the ")
               << options.consumer;
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
