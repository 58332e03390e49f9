//===- Interpreter.cpp - Reference executor for nn functions ----*- C++ -*-===//
//
// Implements interpretFunction: walks a function's ops in order, keeps one
// host tensor per SSA value, and runs each op with the runtime's CPU kernel,
// reading shapes and attributes from the op. `nn.layer` bodies run inline
// (one level of nesting per layer, bounded), `nn.reshape`/`nn.unsqueeze` are
// views, the gradient ops of autodiff run their backward kernels, and every
// failure - an unsupported op or element type, a kernel error such as an
// out-of-range index - is reported at the op's location.
// Also holds the host tensor type and the parameter store.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Interpreter/Interpreter.h"

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Runtime/CPUKernels.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <optional>

using namespace mlir;
using namespace mlir::gpipe;

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

static int64_t productOf(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor::HostTensor(gpipe_rt_dtype dtype, ArrayRef<int64_t> shape)
    : dtype(dtype), shape(shape.begin(), shape.end()) {
  size_t bytes = std::max<size_t>(1, getByteSize());
  storage = std::shared_ptr<uint8_t[]>(new uint8_t[bytes]());
}

HostTensor HostTensor::fromF32(ArrayRef<int64_t> shape,
                               ArrayRef<float> values) {
  HostTensor t(GPIPE_RT_F32, shape);
  std::copy_n(values.begin(),
              std::min<size_t>(values.size(), t.getNumElements()),
              static_cast<float *>(t.getMutableData()));
  return t;
}

HostTensor HostTensor::fromI64(ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> values) {
  HostTensor t(GPIPE_RT_I64, shape);
  std::copy_n(values.begin(),
              std::min<size_t>(values.size(), t.getNumElements()),
              static_cast<int64_t *>(t.getMutableData()));
  return t;
}

HostTensor HostTensor::fromBool(ArrayRef<int64_t> shape,
                                ArrayRef<uint8_t> values) {
  HostTensor t(GPIPE_RT_BOOL, shape);
  uint8_t *data = static_cast<uint8_t *>(t.getMutableData());
  size_t n = std::min<size_t>(values.size(), t.getNumElements());
  for (size_t i = 0; i < n; ++i)
    data[i] = values[i] ? 1 : 0;
  return t;
}

int64_t HostTensor::getNumElements() const { return productOf(shape); }

size_t HostTensor::getByteSize() const {
  return size_t(getNumElements()) * gpipe_rt_dtype_size(dtype);
}

ArrayRef<float> HostTensor::getF32() const {
  if (!isValid() || dtype != GPIPE_RT_F32)
    return {};
  return {static_cast<const float *>(getData()), size_t(getNumElements())};
}

ArrayRef<int64_t> HostTensor::getI64() const {
  if (!isValid() || dtype != GPIPE_RT_I64)
    return {};
  return {static_cast<const int64_t *>(getData()), size_t(getNumElements())};
}

ArrayRef<uint8_t> HostTensor::getBool() const {
  if (!isValid() || dtype != GPIPE_RT_BOOL)
    return {};
  return {static_cast<const uint8_t *>(getData()), size_t(getNumElements())};
}

HostTensor HostTensor::reshaped(ArrayRef<int64_t> newShape) const {
  HostTensor t = *this;
  t.shape.assign(newShape.begin(), newShape.end());
  return t;
}

static Type getElementType(MLIRContext *context, gpipe_rt_dtype dtype) {
  Builder b(context);
  switch (dtype) {
  case GPIPE_RT_F32:
    return b.getF32Type();
  case GPIPE_RT_F64:
    return b.getF64Type();
  case GPIPE_RT_F16:
    return b.getF16Type();
  case GPIPE_RT_BF16:
    return b.getBF16Type();
  case GPIPE_RT_I64:
    return b.getI64Type();
  case GPIPE_RT_I32:
    return b.getI32Type();
  case GPIPE_RT_BOOL:
    return b.getI1Type();
  }
  return b.getF32Type();
}

RankedTensorType HostTensor::getType(MLIRContext *context) const {
  return RankedTensorType::get(shape, getElementType(context, dtype));
}

std::string HostTensor::getTypeString() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "tensor<";
  for (int64_t d : shape)
    os << d << 'x';
  os << gpipe_rt_dtype_name(dtype) << '>';
  return s;
}

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

FailureOr<HostTensor>
mlir::gpipe::hostTensorFromAttr(ElementsAttr attr,
                                function_ref<InFlightDiagnostic()> emitError) {
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape())
    return emitError() << "expected a statically shaped tensor value, got "
                       << attr.getType();
  FailureOr<gpipe_rt_dtype> dtype = getRuntimeDType(type.getElementType());
  if (failed(dtype))
    return emitError() << "unsupported element type " << type.getElementType();
  HostTensor t(*dtype, type.getShape());
  int64_t n = t.getNumElements();

  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    void *out = t.getMutableData();
    auto store = [&](auto values, auto *dst) {
      int64_t i = 0;
      for (auto v : values)
        dst[i++] = v;
    };
    switch (*dtype) {
    case GPIPE_RT_F32:
      store(dense.getValues<float>(), static_cast<float *>(out));
      break;
    case GPIPE_RT_F64:
      store(dense.getValues<double>(), static_cast<double *>(out));
      break;
    case GPIPE_RT_I64:
      store(dense.getValues<int64_t>(), static_cast<int64_t *>(out));
      break;
    case GPIPE_RT_I32:
      store(dense.getValues<int32_t>(), static_cast<int32_t *>(out));
      break;
    case GPIPE_RT_BOOL: {
      uint8_t *dst = static_cast<uint8_t *>(out);
      int64_t i = 0;
      for (bool v : dense.getValues<bool>())
        dst[i++] = v ? 1 : 0;
      break;
    }
    case GPIPE_RT_F16:
    case GPIPE_RT_BF16: {
      uint16_t *dst = static_cast<uint16_t *>(out);
      int64_t i = 0;
      for (const APFloat &v : dense.getValues<APFloat>())
        dst[i++] = uint16_t(v.bitcastToAPInt().getZExtValue());
      break;
    }
    }
    return t;
  }

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    DenseResourceElementsHandle handle = resource.getRawHandle();
    AsmResourceBlob *blob = handle.getBlob();
    if (!blob)
      return emitError() << "dense_resource '" << handle.getKey()
                         << "' has no data (elided or never loaded)";
    ArrayRef<char> data = blob->getData();
    if (data.size() != t.getByteSize())
      return emitError() << "dense_resource '" << handle.getKey() << "' holds "
                         << data.size() << " bytes but " << type << " needs "
                         << t.getByteSize();
    if (n > 0)
      std::memcpy(t.getMutableData(), data.data(), data.size());
    return t;
  }

  return emitError() << "cannot read elements attribute of kind "
                     << attr.getAbstractAttribute().getName();
}

//===----------------------------------------------------------------------===//
// ParameterStore
//===----------------------------------------------------------------------===//

FailureOr<ParameterStore> ParameterStore::fromModule(ModuleOp module,
                                                     uint64_t seed) {
  ParameterStore store;
  for (auto param : module.getOps<nn::ParameterOp>()) {
    RankedTensorType type = param.getTensorType();
    StringRef name = param.getSymName();
    if (std::optional<ElementsAttr> value = param.getInitialValue()) {
      FailureOr<HostTensor> t = hostTensorFromAttr(
          *value, [&] { return param.emitOpError("initial value: "); });
      if (failed(t))
        return failure();
      if (t->getType(module.getContext()) != type)
        return param.emitOpError("initial value of type ")
               << t->getType(module.getContext())
               << " does not match the parameter type " << type;
      store.set(name, std::move(*t));
      continue;
    }
    std::optional<StringRef> rule = param.getInit();
    if (!rule)
      return param.emitOpError("has neither an initial value nor an init rule");
    FailureOr<gpipe_rt_dtype> dtype = getRuntimeDType(type.getElementType());
    if (failed(dtype))
      return param.emitOpError("unsupported element type ")
             << type.getElementType();
    HostTensor t(*dtype, type.getShape());
    if (*rule == "zeros") {
      store.set(name, std::move(t));
      continue;
    }
    if (*dtype != GPIPE_RT_F32)
      return param.emitOpError("init rule '")
             << *rule << "' is implemented for f32 parameters only, got "
             << type;
    std::optional<gpipe_rt_init> init =
        llvm::StringSwitch<std::optional<gpipe_rt_init>>(*rule)
            .Case("ones", GPIPE_RT_INIT_ONES)
            .Case("normal", GPIPE_RT_INIT_NORMAL)
            .Case("uniform", GPIPE_RT_INIT_UNIFORM)
            .Default(std::nullopt);
    if (!init)
      return param.emitOpError("unknown init rule '") << *rule << "'";
    double scale = 0.0;
    if (std::optional<APFloat> s = param.getInitScale())
      scale = s->convertToDouble();
    if (gpipe_rt_cpu_fill_init_f32(
            *init, static_cast<float *>(t.getMutableData()), t.getNumElements(),
            scale, seed,
            gpipe_rt_hash_name(name.data(), name.size())) != GPIPE_RT_SUCCESS)
      return param.emitOpError("init failed: ") << gpipe_rt_last_error();
    store.set(name, std::move(t));
  }
  return store;
}

void ParameterStore::set(StringRef name, HostTensor value) {
  values[name] = std::move(value);
}

const HostTensor *ParameterStore::lookup(StringRef name) const {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second;
}

std::vector<std::string> ParameterStore::getNames() const {
  std::vector<std::string> names;
  for (const auto &entry : values)
    names.push_back(entry.getKey().str());
  llvm::sort(names);
  return names;
}

//===----------------------------------------------------------------------===//
// Interpreter
//===----------------------------------------------------------------------===//

namespace {

/// nn.layer bodies may not nest deeper than this (they do not nest at all
/// today); it bounds the interpreter's recursion.
constexpr unsigned kMaxLayerDepth = 16;

RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

int32_t rankOf(ArrayRef<int64_t> shape) { return int32_t(shape.size()); }

class Interpreter {
public:
  explicit Interpreter(const ParameterStore &params) : params(params) {}

  /// Runs `block` with `args` bound to its arguments and returns the
  /// operands of its terminator.
  LogicalResult runBlock(Block &block, ArrayRef<HostTensor> args,
                         std::vector<HostTensor> &results, unsigned depth);

private:
  LogicalResult run(Operation *op, unsigned depth);

  /// The value of `v` (defined earlier in this walk). A value the walk has
  /// not defined reads as an empty tensor, which every kernel rejects.
  const HostTensor &get(Value v) {
    static const HostTensor missing;
    auto it = env.find(v);
    return it == env.end() ? missing : it->second;
  }
  /// A fresh zero tensor of `v`'s type.
  FailureOr<HostTensor> allocate(Operation *op, Value v);
  /// The dtype of `v`, checked against `allowed` (empty: any).
  FailureOr<gpipe_rt_dtype> dtypeOf(Operation *op, Value v,
                                    ArrayRef<gpipe_rt_dtype> allowed = {});
  /// Reports a failing kernel call.
  LogicalResult check(Operation *op, gpipe_rt_status status);

  LogicalResult runBinary(Operation *op, gpipe_rt_binary_op kind);
  LogicalResult runUnary(Operation *op, gpipe_rt_unary_op kind);
  LogicalResult runLayer(nn::LayerOp layer, unsigned depth);

  const ParameterStore &params;
  DenseMap<Value, HostTensor> env;
};

} // namespace

LogicalResult Interpreter::check(Operation *op, gpipe_rt_status status) {
  if (status == GPIPE_RT_SUCCESS)
    return success();
  return op->emitOpError("failed in the runtime kernel: ")
         << gpipe_rt_last_error();
}

FailureOr<gpipe_rt_dtype>
Interpreter::dtypeOf(Operation *op, Value v, ArrayRef<gpipe_rt_dtype> allowed) {
  Type elementType = tensorTypeOf(v).getElementType();
  FailureOr<gpipe_rt_dtype> dtype = getRuntimeDType(elementType);
  if (failed(dtype) ||
      (!allowed.empty() && !llvm::is_contained(allowed, *dtype))) {
    InFlightDiagnostic diag = op->emitOpError("element type ")
                              << elementType
                              << " is not supported by the nn interpreter";
    if (!allowed.empty()) {
      diag << " (supported: ";
      llvm::interleaveComma(allowed, diag, [&](gpipe_rt_dtype d) {
        diag << gpipe_rt_dtype_name(d);
      });
      diag << ")";
    }
    return diag;
  }
  return *dtype;
}

FailureOr<HostTensor> Interpreter::allocate(Operation *op, Value v) {
  FailureOr<gpipe_rt_dtype> dtype = dtypeOf(op, v);
  if (failed(dtype))
    return failure();
  return HostTensor(*dtype, tensorTypeOf(v).getShape());
}

LogicalResult Interpreter::runBlock(Block &block, ArrayRef<HostTensor> args,
                                    std::vector<HostTensor> &results,
                                    unsigned depth) {
  for (auto [arg, value] : llvm::zip(block.getArguments(), args))
    env[arg] = value;
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      if (!isa<func::ReturnOp, nn::YieldOp, YieldOp>(op))
        return op.emitOpError("is not supported by the nn interpreter "
                              "(expected func.return, nn.yield or "
                              "gpipe.yield)");
      results.clear();
      for (Value v : op.getOperands())
        results.push_back(get(v));
      return success();
    }
    if (failed(run(&op, depth)))
      return failure();
  }
  return block.getParentOp()->emitOpError("body has no terminator");
}

LogicalResult Interpreter::runLayer(nn::LayerOp layer, unsigned depth) {
  if (depth >= kMaxLayerDepth)
    return layer.emitOpError("nn.layer nesting deeper than ")
           << kMaxLayerDepth << " is not supported by the nn interpreter";
  SmallVector<HostTensor> inputs;
  for (Value v : layer.getInputs())
    inputs.push_back(get(v));
  std::vector<HostTensor> results;
  if (failed(runBlock(layer.getBodyBlock(), inputs, results, depth + 1)))
    return failure();
  for (auto [result, value] : llvm::zip(layer.getResults(), results))
    env[result] = value;
  return success();
}

LogicalResult Interpreter::runBinary(Operation *op, gpipe_rt_binary_op kind) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Value res = op->getResult(0);
  if (failed(dtypeOf(op, lhs, {GPIPE_RT_F32})) ||
      failed(dtypeOf(op, rhs, {GPIPE_RT_F32})))
    return failure();
  FailureOr<HostTensor> out = allocate(op, res);
  if (failed(out))
    return failure();
  const HostTensor &a = get(lhs), &b = get(rhs);
  if (failed(check(op, gpipe_rt_cpu_binary_f32(
                           kind, a.getF32().data(), a.getShape().data(),
                           rankOf(a.getShape()), b.getF32().data(),
                           b.getShape().data(), rankOf(b.getShape()),
                           static_cast<float *>(out->getMutableData()),
                           out->getShape().data(), rankOf(out->getShape())))))
    return failure();
  env[res] = std::move(*out);
  return success();
}

LogicalResult Interpreter::runUnary(Operation *op, gpipe_rt_unary_op kind) {
  Value in = op->getOperand(0), res = op->getResult(0);
  if (failed(dtypeOf(op, in, {GPIPE_RT_F32})))
    return failure();
  FailureOr<HostTensor> out = allocate(op, res);
  if (failed(out))
    return failure();
  const HostTensor &x = get(in);
  if (failed(check(op, gpipe_rt_cpu_unary_f32(
                           kind, x.getF32().data(),
                           static_cast<float *>(out->getMutableData()),
                           x.getNumElements()))))
    return failure();
  env[res] = std::move(*out);
  return success();
}

/// The unary float ops, by name: the interpreter needs no op class for them.
std::optional<gpipe_rt_unary_op>
mlir::gpipe::getRuntimeUnaryOp(StringRef name) {
  return llvm::StringSwitch<std::optional<gpipe_rt_unary_op>>(name)
      .Case("nn.neg", GPIPE_RT_NEG)
      .Case("nn.reciprocal", GPIPE_RT_RECIPROCAL)
      .Case("nn.sqrt", GPIPE_RT_SQRT)
      .Case("nn.exp", GPIPE_RT_EXP)
      .Case("nn.log", GPIPE_RT_LOG)
      .Case("nn.erf", GPIPE_RT_ERF)
      .Case("nn.tanh", GPIPE_RT_TANH)
      .Case("nn.sigmoid", GPIPE_RT_SIGMOID)
      .Case("nn.relu", GPIPE_RT_RELU)
      .Case("nn.gelu", GPIPE_RT_GELU)
      .Default(std::nullopt);
}

LogicalResult Interpreter::run(Operation *op, unsigned depth) {
  if (std::optional<gpipe_rt_unary_op> kind =
          getRuntimeUnaryOp(op->getName().getStringRef()))
    return runUnary(op, *kind);

  // Every op below produces fresh tensors of its result types; `out` holds
  // the first result.
  auto bindResult = [&](HostTensor value) {
    env[op->getResult(0)] = std::move(value);
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<nn::LayerOp>([&](auto layer) { return runLayer(layer, depth); })
      .Case<RematOp>([&](RematOp remat) -> LogicalResult {
        // The recomputed forward runs in place.
        std::vector<HostTensor> results;
        if (failed(runBlock(remat.getBody().front(), {}, results, depth + 1)))
          return failure();
        for (auto [result, value] : llvm::zip(remat.getResults(), results))
          env[result] = value;
        return success();
      })
      .Case<nn::ParamOp>([&](nn::ParamOp param) -> LogicalResult {
        const HostTensor *value = params.lookup(param.getName());
        if (!value)
          return param.emitOpError("reads parameter @")
                 << param.getName() << ", which the parameter store lacks";
        if (value->getType(op->getContext()) != param.getType())
          return param.emitOpError("reads ")
                 << param.getType() << " but parameter @" << param.getName()
                 << " holds " << value->getType(op->getContext());
        return bindResult(*value);
      })
      .Case<nn::ConstantOp>([&](nn::ConstantOp constant) -> LogicalResult {
        FailureOr<HostTensor> value = hostTensorFromAttr(
            constant.getValue(), [&] { return constant.emitOpError(); });
        if (failed(value))
          return failure();
        return bindResult(std::move(*value));
      })
      .Case<nn::AddOp>([&](auto) { return runBinary(op, GPIPE_RT_ADD); })
      .Case<nn::SubOp>([&](auto) { return runBinary(op, GPIPE_RT_SUB); })
      .Case<nn::MulOp>([&](auto) { return runBinary(op, GPIPE_RT_MUL); })
      .Case<nn::DivOp>([&](auto) { return runBinary(op, GPIPE_RT_DIV); })
      .Case<nn::PowOp>([&](auto) { return runBinary(op, GPIPE_RT_POW); })
      .Case<nn::EqualOp>([&](nn::EqualOp eq) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> dtype =
            dtypeOf(op, eq.getLhs(),
                    {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_I32, GPIPE_RT_I64,
                     GPIPE_RT_BOOL});
        FailureOr<HostTensor> out = allocate(op, eq.getResult());
        if (failed(dtype) || failed(out))
          return failure();
        const HostTensor &a = get(eq.getLhs()), &b = get(eq.getRhs());
        if (failed(check(op,
                         gpipe_rt_cpu_equal(
                             *dtype, a.getData(), a.getShape().data(),
                             rankOf(a.getShape()), b.getData(),
                             b.getShape().data(), rankOf(b.getShape()),
                             static_cast<uint8_t *>(out->getMutableData()),
                             out->getShape().data(), rankOf(out->getShape())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::WhereOp>([&](nn::WhereOp where) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> dtype = dtypeOf(op, where.getX());
        FailureOr<HostTensor> out = allocate(op, where.getResult());
        if (failed(dtype) || failed(out))
          return failure();
        const HostTensor &c = get(where.getCondition());
        const HostTensor &x = get(where.getX()), &y = get(where.getY());
        if (failed(check(op,
                         gpipe_rt_cpu_where(
                             c.getBool().data(), c.getShape().data(),
                             rankOf(c.getShape()), *dtype, x.getData(),
                             x.getShape().data(), rankOf(x.getShape()),
                             y.getData(), y.getShape().data(),
                             rankOf(y.getShape()), out->getMutableData(),
                             out->getShape().data(), rankOf(out->getShape())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::NotOp>([&](nn::NotOp notOp) -> LogicalResult {
        FailureOr<HostTensor> out = allocate(op, notOp.getResult());
        if (failed(out))
          return failure();
        const HostTensor &x = get(notOp.getInput());
        if (failed(check(op, gpipe_rt_cpu_not(
                                 x.getBool().data(),
                                 static_cast<uint8_t *>(out->getMutableData()),
                                 x.getNumElements()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::CastOp>([&](nn::CastOp cast) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> from = dtypeOf(op, cast.getInput());
        FailureOr<HostTensor> out = allocate(op, cast.getResult());
        if (failed(from) || failed(out))
          return failure();
        const HostTensor &x = get(cast.getInput());
        if (failed(check(op, gpipe_rt_cpu_cast(
                                 *from, x.getData(), out->getDType(),
                                 out->getMutableData(), x.getNumElements()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::MatMulOp>([&](nn::MatMulOp mm) -> LogicalResult {
        if (failed(dtypeOf(op, mm.getLhs(), {GPIPE_RT_F32})) ||
            failed(dtypeOf(op, mm.getRhs(), {GPIPE_RT_F32})))
          return failure();
        FailureOr<HostTensor> out = allocate(op, mm.getResult());
        if (failed(out))
          return failure();
        const HostTensor &a = get(mm.getLhs()), &b = get(mm.getRhs());
        if (failed(check(op,
                         gpipe_rt_cpu_matmul_f32(
                             a.getF32().data(), a.getShape().data(),
                             rankOf(a.getShape()), b.getF32().data(),
                             b.getShape().data(), rankOf(b.getShape()),
                             static_cast<float *>(out->getMutableData()),
                             out->getShape().data(), rankOf(out->getShape())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::GemmOp>([&](nn::GemmOp gemm) -> LogicalResult {
        for (Value v : gemm->getOperands())
          if (failed(dtypeOf(op, v, {GPIPE_RT_F32})))
            return failure();
        FailureOr<HostTensor> out = allocate(op, gemm.getResult());
        if (failed(out))
          return failure();
        const HostTensor &a = get(gemm.getA()), &b = get(gemm.getB());
        const HostTensor *c = gemm.getC() ? &get(gemm.getC()) : nullptr;
        if (a.getRank() != 2 || b.getRank() != 2 || out->getRank() != 2)
          return gemm.emitOpError("expected 2-D operands and result");
        if (failed(check(op, gpipe_rt_cpu_gemm_f32(
                                 a.getF32().data(), a.getShape().data(),
                                 b.getF32().data(), b.getShape().data(),
                                 c ? c->getF32().data() : nullptr,
                                 c ? c->getShape().data() : nullptr,
                                 c ? rankOf(c->getShape()) : 0,
                                 gemm.getAlpha().convertToFloat(),
                                 gemm.getBeta().convertToFloat(),
                                 gemm.getTransA(), gemm.getTransB(),
                                 static_cast<float *>(out->getMutableData()),
                                 out->getShape().data()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::LinearOp>([&](nn::LinearOp linear) -> LogicalResult {
        for (Value v : linear->getOperands())
          if (failed(dtypeOf(op, v, {GPIPE_RT_F32})))
            return failure();
        FailureOr<HostTensor> out = allocate(op, linear.getResult());
        if (failed(out))
          return failure();
        const HostTensor &x = get(linear.getInput());
        const HostTensor &w = get(linear.getWeight());
        const HostTensor *bias =
            linear.getBias() ? &get(linear.getBias()) : nullptr;
        if (w.getRank() != 2)
          return linear.emitOpError("expected a 2-D weight");
        if (bias && (bias->getRank() != 1 ||
                     bias->getShape()[0] != out->getShape().back()))
          return linear.emitOpError("expected a bias of shape [")
                 << out->getShape().back() << "]";
        if (failed(check(op,
                         gpipe_rt_cpu_linear_f32(
                             x.getF32().data(), x.getShape().data(),
                             rankOf(x.getShape()), w.getF32().data(),
                             w.getShape().data(),
                             bias ? bias->getF32().data() : nullptr,
                             linear.getTransposeWeight(),
                             static_cast<float *>(out->getMutableData()),
                             out->getShape().data(), rankOf(out->getShape())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::SoftmaxOp>([&](nn::SoftmaxOp softmax) -> LogicalResult {
        if (failed(dtypeOf(op, softmax.getInput(), {GPIPE_RT_F32})))
          return failure();
        FailureOr<HostTensor> out = allocate(op, softmax.getResult());
        if (failed(out))
          return failure();
        const HostTensor &x = get(softmax.getInput());
        if (failed(
                check(op, gpipe_rt_cpu_softmax_f32(
                              x.getF32().data(), x.getShape().data(),
                              rankOf(x.getShape()), int64_t(softmax.getAxis()),
                              static_cast<float *>(out->getMutableData())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::LayerNormOp>([&](nn::LayerNormOp ln) -> LogicalResult {
        for (Value v : ln->getOperands())
          if (failed(dtypeOf(op, v, {GPIPE_RT_F32})))
            return failure();
        FailureOr<HostTensor> out = allocate(op, ln.getResult());
        if (failed(out))
          return failure();
        const HostTensor &x = get(ln.getInput());
        const HostTensor &scale = get(ln.getScale());
        const HostTensor *bias = ln.getBias() ? &get(ln.getBias()) : nullptr;
        int64_t axis = int64_t(ln.getAxis());
        if (axis > x.getRank())
          return ln.emitOpError("axis ") << axis << " exceeds the rank";
        ArrayRef<int64_t> normalized = x.getShape().drop_front(axis);
        if (productOf(scale.getShape()) != productOf(normalized) ||
            (bias && productOf(bias->getShape()) != productOf(normalized)))
          return ln.emitOpError("scale and bias must cover the normalized "
                                "dims");
        if (failed(
                check(op, gpipe_rt_cpu_layer_norm_f32(
                              x.getF32().data(), x.getShape().data(),
                              rankOf(x.getShape()), axis, scale.getF32().data(),
                              bias ? bias->getF32().data() : nullptr,
                              ln.getEpsilon().convertToFloat(),
                              static_cast<float *>(out->getMutableData()),
                              nullptr, nullptr))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::GatherOp>([&](nn::GatherOp gather) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> dtype = dtypeOf(op, gather.getData());
        FailureOr<gpipe_rt_dtype> indexType =
            dtypeOf(op, gather.getIndices(), {GPIPE_RT_I32, GPIPE_RT_I64});
        FailureOr<HostTensor> out = allocate(op, gather.getResult());
        if (failed(dtype) || failed(indexType) || failed(out))
          return failure();
        const HostTensor &data = get(gather.getData());
        const HostTensor &indices = get(gather.getIndices());
        if (failed(check(
                op, gpipe_rt_cpu_gather(
                        *dtype, data.getData(), data.getShape().data(),
                        rankOf(data.getShape()), *indexType, indices.getData(),
                        indices.getShape().data(), rankOf(indices.getShape()),
                        int64_t(gather.getAxis()), out->getMutableData()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::ReshapeOp, nn::UnsqueezeOp>([&](auto view) -> LogicalResult {
        const HostTensor &x = get(view.getInput());
        RankedTensorType type = view.getResult().getType();
        if (productOf(type.getShape()) != x.getNumElements())
          return view.emitOpError("element count changes from ")
                 << x.getNumElements() << " to " << productOf(type.getShape());
        return bindResult(x.reshaped(type.getShape()));
      })
      .Case<nn::TransposeOp>([&](nn::TransposeOp transpose) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> dtype = dtypeOf(op, transpose.getInput());
        FailureOr<HostTensor> out = allocate(op, transpose.getResult());
        if (failed(dtype) || failed(out))
          return failure();
        const HostTensor &x = get(transpose.getInput());
        if (transpose.getPerm().size() != size_t(x.getRank()))
          return transpose.emitOpError("perm has ")
                 << transpose.getPerm().size() << " entries for rank "
                 << x.getRank();
        if (failed(check(op, gpipe_rt_cpu_transpose(*dtype, x.getData(),
                                                    x.getShape().data(),
                                                    rankOf(x.getShape()),
                                                    transpose.getPerm().data(),
                                                    out->getMutableData()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::SliceOp>([&](nn::SliceOp slice) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> dtype = dtypeOf(op, slice.getInput());
        FailureOr<HostTensor> out = allocate(op, slice.getResult());
        if (failed(dtype) || failed(out))
          return failure();
        const HostTensor &x = get(slice.getInput());
        size_t rank = size_t(x.getRank());
        if (slice.getOffsets().size() != rank ||
            slice.getSizes().size() != rank ||
            slice.getStrides().size() != rank ||
            slice.getSizes() != out->getShape())
          return slice.emitOpError("offsets, sizes and strides must have one "
                                   "entry per dim, sizes matching the result");
        if (failed(check(op,
                         gpipe_rt_cpu_slice(
                             *dtype, x.getData(), x.getShape().data(),
                             rankOf(x.getShape()), slice.getOffsets().data(),
                             slice.getSizes().data(), slice.getStrides().data(),
                             out->getMutableData()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::SplitOp>([&](nn::SplitOp split) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> dtype = dtypeOf(op, split.getInput());
        if (failed(dtype))
          return failure();
        const HostTensor &x = get(split.getInput());
        int64_t axis = int64_t(split.getAxis());
        if (split.getSizes().size() != split.getNumResults())
          return split.emitOpError("has ")
                 << split.getSizes().size() << " sizes for "
                 << split.getNumResults() << " results";
        SmallVector<HostTensor> outs;
        SmallVector<void *> ptrs;
        for (auto [result, size] :
             llvm::zip(split.getResults(), split.getSizes())) {
          FailureOr<HostTensor> out = allocate(op, result);
          if (failed(out))
            return failure();
          if (axis >= out->getRank() || out->getShape()[axis] != size)
            return split.emitOpError("result type ")
                   << result.getType() << " does not match size " << size;
          ptrs.push_back(out->getMutableData());
          outs.push_back(std::move(*out));
        }
        if (failed(check(
                op, gpipe_rt_cpu_split(*dtype, x.getData(), x.getShape().data(),
                                       rankOf(x.getShape()), axis,
                                       split.getSizes().data(),
                                       int32_t(ptrs.size()), ptrs.data()))))
          return failure();
        for (auto [result, out] : llvm::zip(split.getResults(), outs))
          env[result] = out;
        return success();
      })
      .Case<nn::ConcatOp>([&](nn::ConcatOp concat) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> dtype = dtypeOf(op, concat.getResult());
        FailureOr<HostTensor> out = allocate(op, concat.getResult());
        if (failed(dtype) || failed(out))
          return failure();
        SmallVector<const void *> inputs;
        SmallVector<const int64_t *> shapes;
        for (Value v : concat.getInputs()) {
          const HostTensor &x = get(v);
          if (x.getRank() != out->getRank() || x.getDType() != *dtype)
            return concat.emitOpError("inputs must match the result's rank "
                                      "and element type");
          inputs.push_back(x.getData());
          shapes.push_back(x.getShape().data());
        }
        if (failed(check(op, gpipe_rt_cpu_concat(*dtype, int32_t(inputs.size()),
                                                 inputs.data(), shapes.data(),
                                                 rankOf(out->getShape()),
                                                 int64_t(concat.getAxis()),
                                                 out->getMutableData()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::CrossEntropyOp>([&](nn::CrossEntropyOp ce) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> labelType =
            dtypeOf(op, ce.getLabels(), {GPIPE_RT_I32, GPIPE_RT_I64});
        if (failed(dtypeOf(op, ce.getLogits(), {GPIPE_RT_F32})) ||
            failed(labelType) ||
            failed(dtypeOf(op, ce.getResult(), {GPIPE_RT_F32})))
          return failure();
        FailureOr<HostTensor> out = allocate(op, ce.getResult());
        if (failed(out))
          return failure();
        const HostTensor &logits = get(ce.getLogits());
        const HostTensor &labels = get(ce.getLabels());
        if (logits.getRank() < 1 ||
            labels.getShape() != logits.getShape().drop_back())
          return ce.emitOpError("labels must be shaped like the logits "
                                "without the class dim");
        if (failed(check(
                op, gpipe_rt_cpu_cross_entropy_f32(
                        logits.getF32().data(), logits.getShape().data(),
                        rankOf(logits.getShape()), *labelType, labels.getData(),
                        static_cast<float *>(out->getMutableData())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::MSEOp>([&](nn::MSEOp mse) -> LogicalResult {
        if (failed(dtypeOf(op, mse.getInput(), {GPIPE_RT_F32})) ||
            failed(dtypeOf(op, mse.getTarget(), {GPIPE_RT_F32})) ||
            failed(dtypeOf(op, mse.getResult(), {GPIPE_RT_F32})))
          return failure();
        FailureOr<HostTensor> out = allocate(op, mse.getResult());
        if (failed(out))
          return failure();
        const HostTensor &x = get(mse.getInput()), &t = get(mse.getTarget());
        if (x.getShape() != t.getShape())
          return mse.emitOpError("input and target shapes differ");
        if (failed(check(op, gpipe_rt_cpu_mse_f32(
                                 x.getF32().data(), t.getF32().data(),
                                 x.getNumElements(),
                                 static_cast<float *>(out->getMutableData())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::ReduceSumOp>([&](nn::ReduceSumOp sum) -> LogicalResult {
        if (failed(dtypeOf(op, sum.getInput(), {GPIPE_RT_F32})))
          return failure();
        FailureOr<HostTensor> out = allocate(op, sum.getResult());
        if (failed(out))
          return failure();
        const HostTensor &x = get(sum.getInput());
        ArrayRef<int64_t> axes = sum.getAxes();
        // The kernel checks the axes; the result must hold the kept dims.
        int64_t kept = 1;
        for (auto [d, size] : llvm::enumerate(x.getShape()))
          if (!llvm::is_contained(axes, int64_t(d)))
            kept *= size;
        if (kept != out->getNumElements())
          return sum.emitOpError("result has ")
                 << out->getNumElements() << " elements, but reducing "
                 << x.getTypeString() << " keeps " << kept;
        if (failed(check(op, gpipe_rt_cpu_reduce_sum_f32(
                                 x.getF32().data(), x.getShape().data(),
                                 rankOf(x.getShape()), axes.data(),
                                 int32_t(axes.size()),
                                 static_cast<float *>(out->getMutableData())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::InsertSliceOp>([&](nn::InsertSliceOp insert) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> dtype = dtypeOf(op, insert.getDest());
        FailureOr<HostTensor> out = allocate(op, insert.getResult());
        if (failed(dtype) || failed(out))
          return failure();
        const HostTensor &src = get(insert.getSource());
        const HostTensor &dest = get(insert.getDest());
        size_t rank = size_t(dest.getRank());
        if (src.getDType() != *dtype || size_t(src.getRank()) != rank ||
            insert.getOffsets().size() != rank ||
            insert.getStrides().size() != rank)
          return insert.emitOpError("source, dest, offsets and strides must "
                                    "agree on the rank and element type");
        if (failed(check(op, gpipe_rt_cpu_insert_slice(
                                 *dtype, src.getData(), src.getShape().data(),
                                 dest.getData(), dest.getShape().data(),
                                 int32_t(rank), insert.getOffsets().data(),
                                 insert.getStrides().data(),
                                 out->getMutableData()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::GatherGradOp>([&](nn::GatherGradOp gg) -> LogicalResult {
        FailureOr<gpipe_rt_dtype> indexType =
            dtypeOf(op, gg.getIndices(), {GPIPE_RT_I32, GPIPE_RT_I64});
        if (failed(indexType) ||
            failed(dtypeOf(op, gg.getGrad(), {GPIPE_RT_F32})) ||
            failed(dtypeOf(op, gg.getResult(), {GPIPE_RT_F32})))
          return failure();
        FailureOr<HostTensor> out = allocate(op, gg.getResult());
        if (failed(out))
          return failure();
        const HostTensor &indices = get(gg.getIndices());
        const HostTensor &grad = get(gg.getGrad());
        if (failed(check(
                op, gpipe_rt_cpu_gather_grad_f32(
                        *indexType, indices.getData(),
                        indices.getShape().data(), rankOf(indices.getShape()),
                        grad.getF32().data(), grad.getShape().data(),
                        rankOf(grad.getShape()), int64_t(gg.getAxis()),
                        static_cast<float *>(out->getMutableData()),
                        out->getShape().data(), rankOf(out->getShape())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::SoftmaxGradOp>([&](nn::SoftmaxGradOp sg) -> LogicalResult {
        if (failed(dtypeOf(op, sg.getOutput(), {GPIPE_RT_F32})))
          return failure();
        FailureOr<HostTensor> out = allocate(op, sg.getResult());
        if (failed(out))
          return failure();
        const HostTensor &y = get(sg.getOutput());
        const HostTensor &dy = get(sg.getGrad());
        if (y.getShape() != dy.getShape() || y.getShape() != out->getShape())
          return sg.emitOpError("output, grad and result shapes differ");
        if (failed(check(op, gpipe_rt_cpu_softmax_grad_f32(
                                 y.getF32().data(), dy.getF32().data(),
                                 y.getShape().data(), rankOf(y.getShape()),
                                 int64_t(sg.getAxis()),
                                 static_cast<float *>(out->getMutableData())))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::LayerNormGradOp>([&](nn::LayerNormGradOp lg) -> LogicalResult {
        for (Value v : lg->getOperands())
          if (failed(dtypeOf(op, v, {GPIPE_RT_F32})))
            return failure();
        for (Value v : lg->getResults())
          if (failed(dtypeOf(op, v, {GPIPE_RT_F32})))
            return failure();
        FailureOr<HostTensor> dx = allocate(op, lg.getInputGrad());
        FailureOr<HostTensor> dscale = allocate(op, lg.getScaleGrad());
        FailureOr<HostTensor> dbias = allocate(op, lg.getBiasGrad());
        if (failed(dx) || failed(dscale) || failed(dbias))
          return failure();
        const HostTensor &x = get(lg.getInput());
        const HostTensor &scale = get(lg.getScale());
        const HostTensor &dy = get(lg.getGrad());
        int64_t axis = int64_t(lg.getAxis());
        if (axis > x.getRank())
          return lg.emitOpError("axis ") << axis << " exceeds the rank";
        int64_t normalized = productOf(x.getShape().drop_front(axis));
        if (dy.getShape() != x.getShape() || dx->getShape() != x.getShape() ||
            scale.getNumElements() != normalized ||
            dscale->getNumElements() != normalized ||
            dbias->getNumElements() != normalized)
          return lg.emitOpError("shapes do not fit a layer norm over dims [")
                 << axis << ", " << x.getRank() << ") of " << x.getTypeString();
        if (failed(check(
                op, gpipe_rt_cpu_layer_norm_grad_f32(
                        x.getF32().data(), x.getShape().data(),
                        rankOf(x.getShape()), axis, scale.getF32().data(),
                        dy.getF32().data(), lg.getEpsilon().convertToFloat(),
                        static_cast<float *>(dx->getMutableData()),
                        static_cast<float *>(dscale->getMutableData()),
                        static_cast<float *>(dbias->getMutableData())))))
          return failure();
        env[lg.getInputGrad()] = std::move(*dx);
        env[lg.getScaleGrad()] = std::move(*dscale);
        env[lg.getBiasGrad()] = std::move(*dbias);
        return success();
      })
      .Case<nn::GeluGradOp>([&](nn::GeluGradOp gg) -> LogicalResult {
        if (failed(dtypeOf(op, gg.getInput(), {GPIPE_RT_F32})))
          return failure();
        FailureOr<HostTensor> out = allocate(op, gg.getResult());
        if (failed(out))
          return failure();
        const HostTensor &x = get(gg.getInput());
        const HostTensor &dy = get(gg.getGrad());
        if (x.getShape() != dy.getShape())
          return gg.emitOpError("input and grad shapes differ");
        if (failed(check(op, gpipe_rt_cpu_gelu_grad_f32(
                                 x.getF32().data(), dy.getF32().data(),
                                 static_cast<float *>(out->getMutableData()),
                                 x.getNumElements()))))
          return failure();
        return bindResult(std::move(*out));
      })
      .Case<nn::CrossEntropyGradOp>(
          [&](nn::CrossEntropyGradOp ce) -> LogicalResult {
            FailureOr<gpipe_rt_dtype> labelType =
                dtypeOf(op, ce.getLabels(), {GPIPE_RT_I32, GPIPE_RT_I64});
            if (failed(dtypeOf(op, ce.getLogits(), {GPIPE_RT_F32})) ||
                failed(labelType) ||
                failed(dtypeOf(op, ce.getGrad(), {GPIPE_RT_F32})) ||
                failed(dtypeOf(op, ce.getResult(), {GPIPE_RT_F32})))
              return failure();
            FailureOr<HostTensor> out = allocate(op, ce.getResult());
            if (failed(out))
              return failure();
            const HostTensor &logits = get(ce.getLogits());
            const HostTensor &labels = get(ce.getLabels());
            const HostTensor &grad = get(ce.getGrad());
            if (logits.getRank() < 1 ||
                labels.getShape() != logits.getShape().drop_back() ||
                out->getShape() != logits.getShape() ||
                grad.getNumElements() != 1)
              return ce.emitOpError(
                  "labels must be shaped like the logits without the class "
                  "dim, the result like the logits, and grad a scalar");
            if (failed(check(
                    op, gpipe_rt_cpu_cross_entropy_grad_f32(
                            logits.getF32().data(), logits.getShape().data(),
                            rankOf(logits.getShape()), *labelType,
                            labels.getData(), grad.getF32()[0],
                            static_cast<float *>(out->getMutableData())))))
              return failure();
            return bindResult(std::move(*out));
          })
      .Default([&](Operation *other) {
        return other->emitOpError("is not supported by the nn interpreter");
      });
}

FailureOr<std::vector<HostTensor>>
mlir::gpipe::interpretFunction(func::FuncOp func, ArrayRef<HostTensor> args,
                               const ParameterStore &params) {
  // Function-level errors go to the function's location without the op
  // attached: printing a whole network under a one-line message helps no one.
  auto fail = [&]() {
    return mlir::emitError(func.getLoc()) << "@" << func.getSymName() << " ";
  };
  if (func.isExternal())
    return fail() << "has no body to interpret";
  if (!func.getBody().hasOneBlock())
    return fail() << "has " << func.getBody().getBlocks().size()
                  << " blocks; the nn interpreter runs single-block functions";
  FunctionType type = func.getFunctionType();
  if (args.size() != type.getNumInputs())
    return fail() << "takes " << type.getNumInputs() << " arguments, got "
                  << args.size();
  for (auto [i, arg] : llvm::enumerate(args)) {
    if (!arg.isValid())
      return fail() << "argument " << i << " is an empty tensor";
    if (arg.getType(func.getContext()) != type.getInput(i))
      return fail() << "argument " << i << " has type "
                    << arg.getType(func.getContext())
                    << " but the function takes " << type.getInput(i);
  }
  Interpreter interpreter(params);
  std::vector<HostTensor> results;
  if (failed(interpreter.runBlock(func.getBody().front(), args, results, 0)))
    return failure();
  return results;
}
