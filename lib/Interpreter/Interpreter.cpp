//===- Interpreter.cpp - Reference executor for nn functions ----*- C++ -*-===//
//
// Implements interpretFunction: walks a function's ops in order, keeps one
// host tensor per SSA value, and runs each op's kernel call - the one
// getKernelCall describes for the code generator too - on the CPU kernels,
// through one typed trampoline per kernel of Kernels.def that unpacks the
// arguments by position. `nn.layer` bodies run inline (one level of nesting
// per layer, bounded), `nn.reshape`/`nn.unsqueeze` are views, and every
// failure - an unsupported op or element type, a kernel error such as an
// out-of-range index - is reported at the op's location.
// Also holds the host tensor type and the parameter store.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Interpreter/Interpreter.h"

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/NN/IR/NNElementsBytes.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/KernelSignatures.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

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

FailureOr<HostTensor>
mlir::gpipe::hostTensorFromAttr(ElementsAttr attr,
                                function_ref<InFlightDiagnostic()> emitError) {
  FailureOr<std::vector<char>> bytes = nn::getElementsBytes(attr, emitError);
  if (failed(bytes))
    return failure();
  auto type = cast<RankedTensorType>(attr.getType());
  FailureOr<gpipe_rt_dtype> dtype = getRuntimeDType(type.getElementType());
  if (failed(dtype))
    return emitError() << "unsupported element type " << type.getElementType();
  HostTensor t(*dtype, type.getShape());
  if (!bytes->empty())
    std::memcpy(t.getMutableData(), bytes->data(), bytes->size());
  return t;
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
    // A tied copy starts as its first parameter (declared before it).
    if (FlatSymbolRefAttr first = param.getTiedToAttr()) {
      const HostTensor *value = store.lookup(first.getValue());
      if (!value)
        return param.emitOpError("is tied to @")
               << first.getValue() << ", which has no value before it";
      store.set(name, *value);
      continue;
    }
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
    std::optional<nn::InitKind> kind = param.getInit();
    std::optional<StringRef> rule =
        kind ? std::optional<StringRef>(nn::stringifyInitKind(*kind))
             : std::nullopt;
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
// CPU kernel dispatch
//===----------------------------------------------------------------------===//

namespace {

/// One kernel argument, untyped: a pointer, an integer or a float. The
/// trampoline of the kernel converts it to the parameter's C type.
struct KernelSlot {
  void *pointer = nullptr;
  int64_t integer = 0;
  double real = 0;
};

template <typename T> T unpackSlot(const KernelSlot &slot) {
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<T>(slot.pointer);
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(slot.real);
  else
    return static_cast<T>(slot.integer);
}

/// Calls a kernel of type `Signature` (a function type spelled from
/// Kernels.def) with slot i as its argument i.
template <typename Signature> struct Trampoline;
template <typename... Params> struct Trampoline<gpipe_rt_status(Params...)> {
  static gpipe_rt_status call(gpipe_rt_status (*kernel)(Params...),
                              ArrayRef<KernelSlot> slots) {
    return call(kernel, slots, std::index_sequence_for<Params...>());
  }
  template <size_t... I>
  static gpipe_rt_status call(gpipe_rt_status (*kernel)(Params...),
                              ArrayRef<KernelSlot> slots,
                              std::index_sequence<I...>) {
    return kernel(unpackSlot<Params>(slots[I])...);
  }
};

/// Runs CPU kernel `id` on `slots` (one per parameter, checked by
/// verifyKernelCall).
gpipe_rt_status runCPUKernel(::gpipe::abi::KernelId id,
                             ArrayRef<KernelSlot> slots) {
  switch (id) {
#define GPIPE_RT_ARG(role, type, name) type
#define GPIPE_RT_KERNEL(name, ret, args)                                       \
  case ::gpipe::abi::KernelId::k_##name:                                       \
    return Trampoline<ret args>::call(&gpipe_rt_cpu_##name, slots);
#include "gpipe/Runtime/Kernels.def"
  }
  return GPIPE_RT_INVALID_ARGUMENT;
}

} // namespace

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

class Interpreter {
public:
  Interpreter(const ParameterStore &params, uint64_t rngKey)
      : params(params), rngKey(rngKey) {}

  /// The GEMMs that accumulate into a gradient in place, and whether this
  /// is the first micro-batch (beta 0).
  DenseMap<Operation *, HostTensor *> accumulating;
  bool firstMicrobatch = false;

  /// Runs `op` alone on `operands`.
  LogicalResult runOne(Operation *op, ArrayRef<HostTensor> operands,
                       std::vector<HostTensor> &results) {
    for (auto [v, t] : llvm::zip(op->getOperands(), operands))
      env[v] = t;
    if (failed(run(op, 0)))
      return failure();
    for (Value r : op->getResults())
      results.push_back(get(r));
    return success();
  }

  /// Runs `block` with `args` bound to its arguments and returns the
  /// operands of its terminator.
  LogicalResult runBlock(Block &block, ArrayRef<HostTensor> args,
                         std::vector<HostTensor> &results, unsigned depth);

private:
  LogicalResult run(Operation *op, unsigned depth);

  /// The value of `v` (defined earlier in this walk), or an empty tensor.
  const HostTensor &get(Value v) {
    static const HostTensor missing;
    auto it = env.find(v);
    return it == env.end() ? missing : it->second;
  }
  /// A fresh zero tensor of `v`'s type.
  FailureOr<HostTensor> allocate(Operation *op, Value v);
  /// Runs `call` (computing `op`) on fresh result tensors and binds them.
  LogicalResult runKernel(Operation *op, const KernelCall &call);
  LogicalResult runLayer(nn::LayerOp layer, unsigned depth);
  /// Runs `body` on `inputs`' values and binds what it yields to `results`.
  LogicalResult runBody(Block &body, ValueRange inputs, ValueRange results,
                        unsigned depth);

  const ParameterStore &params;
  /// The random key dropout masks are drawn with.
  uint64_t rngKey;
  DenseMap<Value, HostTensor> env;
};

} // namespace

FailureOr<HostTensor> Interpreter::allocate(Operation *op, Value v) {
  Type elementType = tensorTypeOf(v).getElementType();
  FailureOr<gpipe_rt_dtype> dtype = getRuntimeDType(elementType);
  if (failed(dtype))
    return op->emitOpError("element type ")
           << elementType << " is not supported by the nn interpreter";
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
  return runBody(layer.getBodyBlock(), layer.getInputs(), layer.getResults(),
                 depth);
}

LogicalResult Interpreter::runBody(Block &body, ValueRange inputs,
                                   ValueRange results, unsigned depth) {
  SmallVector<HostTensor> args;
  for (Value v : inputs)
    args.push_back(get(v));
  std::vector<HostTensor> values;
  if (failed(runBlock(body, args, values, depth + 1)))
    return failure();
  for (auto [result, value] : llvm::zip(results, values))
    env[result] = value;
  return success();
}

LogicalResult Interpreter::runKernel(Operation *op, const KernelCall &call) {
  // Every result is a fresh tensor of its type: the buffers a compiled
  // stage would place in its scratch region; a GEMM accumulating a
  // gradient in place computes into the gradient.
  SmallVector<HostTensor> results;
  if (auto acc = accumulating.find(op); acc != accumulating.end()) {
    results.push_back(*acc->second);
  } else {
    for (Value result : op->getResults()) {
      FailureOr<HostTensor> out = allocate(op, result);
      if (failed(out))
        return failure();
      results.push_back(std::move(*out));
    }
  }
  auto dataOf = [&](Value v) -> FailureOr<void *> {
    if (auto result = dyn_cast<OpResult>(v); result && result.getOwner() == op)
      return results[result.getResultNumber()].getMutableData();
    auto it = env.find(v);
    if (it == env.end())
      return op->emitOpError("reads a value the interpreter has not computed");
    // Kernels only write their outputs: the results above.
    return const_cast<void *>(it->second.getData());
  };

  // The slots, and the pointer arrays the list arguments point to (one per
  // argument, allocated up front so that the slots' pointers stay valid).
  SmallVector<KernelSlot> slots(call.args.size());
  std::vector<std::vector<void *>> lists(call.args.size());
  for (auto [i, arg] : llvm::enumerate(call.args)) {
    KernelSlot &slot = slots[i];
    switch (arg.kind) {
    case KernelArg::Buffer: {
      FailureOr<void *> data = dataOf(arg.value);
      if (failed(data))
        return failure();
      slot.pointer = *data;
      break;
    }
    case KernelArg::Null:
      break;
    case KernelArg::Int:
      slot.integer = arg.integer;
      break;
    case KernelArg::RngKey:
      slot.integer = int64_t(rngKey);
      break;
    case KernelArg::Real:
      slot.real = arg.real;
      break;
    case KernelArg::AccumulateBeta:
      slot.real = firstMicrobatch ? 0.0 : 1.0;
      break;
    case KernelArg::Ints:
      slot.pointer = const_cast<int64_t *>(arg.ints.data());
      break;
    case KernelArg::Buffers:
      for (Value v : arg.values) {
        FailureOr<void *> data = dataOf(v);
        if (failed(data))
          return failure();
        lists[i].push_back(*data);
      }
      slot.pointer = lists[i].data();
      break;
    case KernelArg::IntsList:
      for (const SmallVector<int64_t> &ints : arg.intsList)
        lists[i].push_back(const_cast<int64_t *>(ints.data()));
      slot.pointer = lists[i].data();
      break;
    }
  }
  if (runCPUKernel(call.kernel, slots) != GPIPE_RT_SUCCESS)
    return op->emitOpError("failed in the runtime kernel: ")
           << gpipe_rt_last_error();
  for (auto [result, value] : llvm::zip(op->getResults(), results))
    env[result] = std::move(value);
  return success();
}

LogicalResult Interpreter::run(Operation *op, unsigned depth) {
  // The ops without a kernel: layers, values and views.
  auto bindResult = [&](HostTensor value) {
    env[op->getResult(0)] = std::move(value);
    return success();
  };
  if (auto layer = dyn_cast<nn::LayerOp>(op))
    return runLayer(layer, depth);
  if (auto param = dyn_cast<nn::ParamOp>(op)) {
    const HostTensor *value = params.lookup(param.getName());
    if (!value)
      return param.emitOpError("reads parameter @")
             << param.getName() << ", which the parameter store lacks";
    if (value->getType(op->getContext()) != param.getType())
      return param.emitOpError("reads ")
             << param.getType() << " but parameter @" << param.getName()
             << " holds " << value->getType(op->getContext());
    return bindResult(*value);
  }
  if (auto constant = dyn_cast<nn::ConstantOp>(op)) {
    FailureOr<HostTensor> value = hostTensorFromAttr(
        constant.getValue(), [&] { return constant.emitOpError(); });
    if (failed(value))
      return failure();
    return bindResult(std::move(*value));
  }
  if (isa<nn::ReshapeOp, nn::UnsqueezeOp>(op)) {
    const HostTensor &x = get(op->getOperand(0));
    RankedTensorType type = tensorTypeOf(op->getResult(0));
    if (productOf(type.getShape()) != x.getNumElements())
      return op->emitOpError("element count changes from ")
             << x.getNumElements() << " to " << productOf(type.getShape());
    return bindResult(x.reshaped(type.getShape()));
  }

  // A fused loop's body op by op on whole tensors: the kernels compute each
  // element as the compiled loop does.
  if (auto fused = dyn_cast<nn::FusedOp>(op))
    return runBody(fused.getBodyBlock(), fused.getInputs(), fused.getResults(),
                   depth);

  // The recomputed forward runs in place.
  if (auto remat = dyn_cast<RematOp>(op))
    return runBody(remat.getBody().front(), {}, remat.getResults(), depth);

  // Everything else runs the kernel the code generator calls, with the
  // same arguments.
  KernelCallOptions options{"nn interpreter"};
  FailureOr<KernelCall> call = accumulating.count(op)
                                   ? getAccumulatingGemmCall(op, options)
                                   : getKernelCall(op, options);
  if (failed(call))
    return failure();
  return runKernel(op, *call);
}

FailureOr<std::vector<HostTensor>>
mlir::gpipe::interpretFunction(func::FuncOp func, ArrayRef<HostTensor> args,
                               const ParameterStore &params, uint64_t rngKey,
                               const GradientAccumulation *accumulation) {
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
  Interpreter interpreter(params, rngKey);
  if (accumulation) {
    Operation *ret = func.getBody().front().getTerminator();
    interpreter.firstMicrobatch = accumulation->first;
    for (auto [index, into] : accumulation->into) {
      Operation *gemm = index < ret->getNumOperands()
                            ? ret->getOperand(index).getDefiningOp()
                            : nullptr;
      if (!isa_and_nonnull<nn::GemmOp>(gemm) || !into ||
          into->getType(func.getContext()) != ret->getOperand(index).getType())
        return fail() << "result " << index
                      << " is not a GEMM that can accumulate into the given "
                         "gradient";
      interpreter.accumulating[gemm] = into;
    }
  }
  std::vector<HostTensor> results;
  if (failed(interpreter.runBlock(func.getBody().front(), args, results, 0)))
    return failure();
  return results;
}

FailureOr<std::vector<HostTensor>>
mlir::gpipe::interpretOp(Operation *op, ArrayRef<HostTensor> operands) {
  if (op->getNumRegions() != 0 || isa<nn::ParamOp>(op))
    return op->emitOpError("cannot be interpreted alone");
  if (operands.size() != op->getNumOperands())
    return op->emitOpError("takes ")
           << op->getNumOperands() << " operands, got " << operands.size();
  for (auto [i, t] : llvm::enumerate(operands))
    if (!t.isValid() ||
        t.getType(op->getContext()) != op->getOperand(i).getType())
      return op->emitOpError("operand ")
             << i << " has type " << op->getOperand(i).getType()
             << " but the value given is " << t.getTypeString();
  ParameterStore none;
  Interpreter interpreter(none, /*rngKey=*/0);
  std::vector<HostTensor> results;
  if (failed(interpreter.runOne(op, operands, results)))
    return failure();
  return results;
}

ElementsAttr mlir::gpipe::elementsAttrFromHostTensor(const HostTensor &tensor,
                                                     MLIRContext *context,
                                                     StringRef hint,
                                                     int64_t inlineLimit) {
  RankedTensorType type = tensor.getType(context);
  if (tensor.getDType() == GPIPE_RT_BOOL) {
    SmallVector<bool> values;
    for (uint8_t b : tensor.getBool())
      values.push_back(b != 0);
    return DenseElementsAttr::get(type, values);
  }
  ArrayRef<char> bytes(static_cast<const char *>(tensor.getData()),
                       tensor.getByteSize());
  size_t width =
      tensor.getByteSize() / std::max<int64_t>(1, tensor.getNumElements());
  bool splat =
      tensor.getNumElements() > 0 &&
      llvm::all_of(llvm::seq<int64_t>(1, tensor.getNumElements()),
                   [&](int64_t i) {
                     return std::memcmp(bytes.data(), bytes.data() + i * width,
                                        width) == 0;
                   });
  if (tensor.getNumElements() <= inlineLimit || splat)
    return DenseElementsAttr::getFromRawBuffer(
        type, splat ? bytes.take_front(width) : bytes);
  std::string key;
  for (char c : hint)
    key += (llvm::isAlnum(c) || c == '_' || c == '.') ? c : '_';
  if (key.empty() || !(llvm::isAlpha(key[0]) || key[0] == '_'))
    key = "_" + key;
  return DenseResourceElementsAttr::get(
      type, key, HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, width));
}
