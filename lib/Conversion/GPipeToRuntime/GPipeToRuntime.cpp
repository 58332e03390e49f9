//===- GPipeToRuntime.cpp - Lower pipelines to runtime calls ----*- C++ -*-===//
//
// Implements `convert-gpipe-to-runtime`: a scheduled, memory-planned
// pipeline becomes LLVM-dialect functions that call the runtime's C ABI
// (gpipe/Runtime/CPUKernels.h for compute, gpipe/Runtime/Program.h for
// everything else) on buffers at the memory plan's offsets, plus the model's
// metadata and initial parameter data. See the pass description in
// Passes.td for the shape of the output.
//
// The kernel arguments mirror the nn interpreter's calls exactly (same
// kernels, same shapes and attributes), so compiled and interpreted stages
// compute the same bits.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Conversion/Passes.h"
#include "gpipe/Analysis/Timeline.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/StageBuffers.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Interpreter/Interpreter.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Program.h"
#include "gpipe/Runtime/Vocabulary.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace mlir::gpipe {
#define GEN_PASS_DEF_CONVERTGPIPETORUNTIMEPASS
#include "gpipe/Conversion/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;


namespace {

//===----------------------------------------------------------------------===//
// Kernel calls
//===----------------------------------------------------------------------===//

/// One argument of a runtime kernel call.
struct KernelArg {
  enum Kind {
    Buffer,  ///< the address of `value`
    Null,    ///< a null pointer
    I32,     ///< `integer` as i32 (enums, ranks, flags)
    I64,     ///< `integer` as i64
    F32,     ///< `real` as f32
    Ints,    ///< the address of a read-only i64 array
    Buffers, ///< the address of a stack array of the addresses of `values`
    IntsList, ///< the address of a stack array of read-only i64 arrays
  };
  Kind kind = Null;
  Value value;
  int64_t integer = 0;
  double real = 0;
  SmallVector<int64_t> ints;
  SmallVector<Value> values;
  SmallVector<SmallVector<int64_t>> intsList;

  static KernelArg buffer(Value v) {
    KernelArg a;
    a.kind = Buffer;
    a.value = v;
    return a;
  }
  static KernelArg null() { return KernelArg(); }
  static KernelArg i32(int64_t v) {
    KernelArg a;
    a.kind = I32;
    a.integer = v;
    return a;
  }
  static KernelArg i64(int64_t v) {
    KernelArg a;
    a.kind = I64;
    a.integer = v;
    return a;
  }
  static KernelArg f32(double v) {
    KernelArg a;
    a.kind = F32;
    a.real = v;
    return a;
  }
  static KernelArg array(ArrayRef<int64_t> v) {
    KernelArg a;
    a.kind = Ints;
    a.ints.assign(v.begin(), v.end());
    return a;
  }
  static KernelArg buffers(ValueRange v) {
    KernelArg a;
    a.kind = Buffers;
    a.values.assign(v.begin(), v.end());
    return a;
  }
};

struct KernelCall {
  std::string callee;
  SmallVector<KernelArg> args;
};

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}
static int64_t rankOf(Value v) { return shapeOf(v).size(); }
static int64_t countOf(Value v) {
  int64_t n = 1;
  for (int64_t d : shapeOf(v))
    n *= d;
  return n;
}

/// The (buffer, shape, rank) triple most kernels take for a tensor.
static void addTensor(KernelCall &call, Value v) {
  call.args.push_back(KernelArg::buffer(v));
  call.args.push_back(KernelArg::array(shapeOf(v)));
  call.args.push_back(KernelArg::i32(rankOf(v)));
}

/// The runtime element type of `v`, or an error at `op`.
static FailureOr<int64_t> dtypeOf(Operation *op, Value v,
                                  ArrayRef<gpipe_rt_dtype> allowed = {}) {
  auto shaped = dyn_cast<ShapedType>(v.getType());
  FailureOr<gpipe_rt_dtype> dtype =
      shaped ? getRuntimeDType(shaped.getElementType())
             : FailureOr<gpipe_rt_dtype>(failure());
  if (failed(dtype) || (!allowed.empty() && !llvm::is_contained(allowed, *dtype)))
    return mlir::emitError(op->getLoc())
           << "'" << op->getName() << "': element type of " << v.getType()
           << " is not supported by the CPU code generator",
           failure();
  return static_cast<int64_t>(*dtype);
}

/// The kernel call computing `op` (every nn op but layers, params,
/// constants and reshapes), mirroring the nn interpreter.
static FailureOr<KernelCall> getKernelCall(Operation *op) {
  KernelCall call;
  auto f32Only = [&]() -> LogicalResult {
    for (Value v : op->getOperands())
      if (failed(dtypeOf(op, v, {GPIPE_RT_F32})))
        return failure();
    for (Value v : op->getResults())
      if (failed(dtypeOf(op, v, {GPIPE_RT_F32})))
        return failure();
    return success();
  };
  if (std::optional<gpipe_rt_unary_op> kind =
          getRuntimeUnaryOp(op->getName().getStringRef())) {
    if (failed(f32Only()))
      return failure();
    call.callee = "gpipe_rt_cpu_unary_f32";
    call.args = {KernelArg::i32(*kind), KernelArg::buffer(op->getOperand(0)),
                 KernelArg::buffer(op->getResult(0)),
                 KernelArg::i64(countOf(op->getOperand(0)))};
    return call;
  }
  auto binary = [&](gpipe_rt_binary_op kind) -> FailureOr<KernelCall> {
    if (failed(f32Only()))
      return failure();
    call.callee = "gpipe_rt_cpu_binary_f32";
    call.args.push_back(KernelArg::i32(kind));
    addTensor(call, op->getOperand(0));
    addTensor(call, op->getOperand(1));
    addTensor(call, op->getResult(0));
    return call;
  };
  return llvm::TypeSwitch<Operation *, FailureOr<KernelCall>>(op)
      .Case<nn::AddOp>([&](auto) { return binary(GPIPE_RT_ADD); })
      .Case<nn::SubOp>([&](auto) { return binary(GPIPE_RT_SUB); })
      .Case<nn::MulOp>([&](auto) { return binary(GPIPE_RT_MUL); })
      .Case<nn::DivOp>([&](auto) { return binary(GPIPE_RT_DIV); })
      .Case<nn::PowOp>([&](auto) { return binary(GPIPE_RT_POW); })
      .Case<nn::EqualOp>([&](nn::EqualOp eq) -> FailureOr<KernelCall> {
        FailureOr<int64_t> dtype =
            dtypeOf(op, eq.getLhs(),
                    {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_I32, GPIPE_RT_I64,
                     GPIPE_RT_BOOL});
        if (failed(dtype))
          return failure();
        call.callee = "gpipe_rt_cpu_equal";
        call.args.push_back(KernelArg::i32(*dtype));
        addTensor(call, eq.getLhs());
        addTensor(call, eq.getRhs());
        addTensor(call, eq.getResult());
        return call;
      })
      .Case<nn::WhereOp>([&](nn::WhereOp where) -> FailureOr<KernelCall> {
        FailureOr<int64_t> dtype = dtypeOf(op, where.getX());
        if (failed(dtype))
          return failure();
        call.callee = "gpipe_rt_cpu_where";
        addTensor(call, where.getCondition());
        call.args.push_back(KernelArg::i32(*dtype));
        addTensor(call, where.getX());
        addTensor(call, where.getY());
        addTensor(call, where.getResult());
        return call;
      })
      .Case<nn::NotOp>([&](nn::NotOp notOp) -> FailureOr<KernelCall> {
        call.callee = "gpipe_rt_cpu_not";
        call.args = {KernelArg::buffer(notOp.getInput()),
                     KernelArg::buffer(notOp.getResult()),
                     KernelArg::i64(countOf(notOp.getInput()))};
        return call;
      })
      .Case<nn::CastOp>([&](nn::CastOp cast) -> FailureOr<KernelCall> {
        FailureOr<int64_t> from = dtypeOf(op, cast.getInput());
        FailureOr<int64_t> to = dtypeOf(op, cast.getResult());
        if (failed(from) || failed(to))
          return failure();
        call.callee = "gpipe_rt_cpu_cast";
        call.args = {KernelArg::i32(*from), KernelArg::buffer(cast.getInput()),
                     KernelArg::i32(*to), KernelArg::buffer(cast.getResult()),
                     KernelArg::i64(countOf(cast.getInput()))};
        return call;
      })
      .Case<nn::MatMulOp>([&](nn::MatMulOp mm) -> FailureOr<KernelCall> {
        if (failed(f32Only()))
          return failure();
        call.callee = "gpipe_rt_cpu_matmul_f32";
        addTensor(call, mm.getLhs());
        addTensor(call, mm.getRhs());
        addTensor(call, mm.getResult());
        return call;
      })
      .Case<nn::GemmOp>([&](nn::GemmOp gemm) -> FailureOr<KernelCall> {
        if (failed(f32Only()))
          return failure();
        call.callee = "gpipe_rt_cpu_gemm_f32";
        call.args.push_back(KernelArg::buffer(gemm.getA()));
        call.args.push_back(KernelArg::array(shapeOf(gemm.getA())));
        call.args.push_back(KernelArg::buffer(gemm.getB()));
        call.args.push_back(KernelArg::array(shapeOf(gemm.getB())));
        if (Value c = gemm.getC()) {
          addTensor(call, c);
        } else {
          call.args.push_back(KernelArg::null());
          call.args.push_back(KernelArg::null());
          call.args.push_back(KernelArg::i32(0));
        }
        call.args.push_back(KernelArg::f32(gemm.getAlpha().convertToFloat()));
        call.args.push_back(KernelArg::f32(gemm.getBeta().convertToFloat()));
        call.args.push_back(KernelArg::i32(gemm.getTransA()));
        call.args.push_back(KernelArg::i32(gemm.getTransB()));
        call.args.push_back(KernelArg::buffer(gemm.getResult()));
        call.args.push_back(KernelArg::array(shapeOf(gemm.getResult())));
        return call;
      })
      .Case<nn::LinearOp>([&](nn::LinearOp linear) -> FailureOr<KernelCall> {
        if (failed(f32Only()))
          return failure();
        call.callee = "gpipe_rt_cpu_linear_f32";
        addTensor(call, linear.getInput());
        call.args.push_back(KernelArg::buffer(linear.getWeight()));
        call.args.push_back(KernelArg::array(shapeOf(linear.getWeight())));
        call.args.push_back(linear.getBias()
                                ? KernelArg::buffer(linear.getBias())
                                : KernelArg::null());
        call.args.push_back(KernelArg::i32(linear.getTransposeWeight()));
        addTensor(call, linear.getResult());
        return call;
      })
      .Case<nn::SoftmaxOp>([&](nn::SoftmaxOp softmax) -> FailureOr<KernelCall> {
        if (failed(f32Only()))
          return failure();
        call.callee = "gpipe_rt_cpu_softmax_f32";
        addTensor(call, softmax.getInput());
        call.args.push_back(KernelArg::i64(softmax.getAxis()));
        call.args.push_back(KernelArg::buffer(softmax.getResult()));
        return call;
      })
      .Case<nn::LayerNormOp>([&](nn::LayerNormOp ln) -> FailureOr<KernelCall> {
        if (failed(f32Only()))
          return failure();
        call.callee = "gpipe_rt_cpu_layer_norm_f32";
        addTensor(call, ln.getInput());
        call.args.push_back(KernelArg::i64(ln.getAxis()));
        call.args.push_back(KernelArg::buffer(ln.getScale()));
        call.args.push_back(ln.getBias() ? KernelArg::buffer(ln.getBias())
                                         : KernelArg::null());
        call.args.push_back(KernelArg::f32(ln.getEpsilon().convertToFloat()));
        call.args.push_back(KernelArg::buffer(ln.getResult()));
        call.args.push_back(KernelArg::null());
        call.args.push_back(KernelArg::null());
        return call;
      })
      .Case<nn::GatherOp>([&](nn::GatherOp gather) -> FailureOr<KernelCall> {
        FailureOr<int64_t> dtype = dtypeOf(op, gather.getData());
        FailureOr<int64_t> indexType =
            dtypeOf(op, gather.getIndices(), {GPIPE_RT_I32, GPIPE_RT_I64});
        if (failed(dtype) || failed(indexType))
          return failure();
        call.callee = "gpipe_rt_cpu_gather";
        call.args.push_back(KernelArg::i32(*dtype));
        addTensor(call, gather.getData());
        call.args.push_back(KernelArg::i32(*indexType));
        addTensor(call, gather.getIndices());
        call.args.push_back(KernelArg::i64(gather.getAxis()));
        call.args.push_back(KernelArg::buffer(gather.getResult()));
        return call;
      })
      .Case<nn::TransposeOp>([&](nn::TransposeOp t) -> FailureOr<KernelCall> {
        FailureOr<int64_t> dtype = dtypeOf(op, t.getInput());
        if (failed(dtype))
          return failure();
        call.callee = "gpipe_rt_cpu_transpose";
        call.args.push_back(KernelArg::i32(*dtype));
        addTensor(call, t.getInput());
        call.args.push_back(KernelArg::array(t.getPerm()));
        call.args.push_back(KernelArg::buffer(t.getResult()));
        return call;
      })
      .Case<nn::SliceOp>([&](nn::SliceOp slice) -> FailureOr<KernelCall> {
        FailureOr<int64_t> dtype = dtypeOf(op, slice.getInput());
        if (failed(dtype))
          return failure();
        call.callee = "gpipe_rt_cpu_slice";
        call.args.push_back(KernelArg::i32(*dtype));
        addTensor(call, slice.getInput());
        call.args.push_back(KernelArg::array(slice.getOffsets()));
        call.args.push_back(KernelArg::array(slice.getSizes()));
        call.args.push_back(KernelArg::array(slice.getStrides()));
        call.args.push_back(KernelArg::buffer(slice.getResult()));
        return call;
      })
      .Case<nn::SplitOp>([&](nn::SplitOp split) -> FailureOr<KernelCall> {
        FailureOr<int64_t> dtype = dtypeOf(op, split.getInput());
        if (failed(dtype))
          return failure();
        call.callee = "gpipe_rt_cpu_split";
        call.args.push_back(KernelArg::i32(*dtype));
        addTensor(call, split.getInput());
        call.args.push_back(KernelArg::i64(split.getAxis()));
        call.args.push_back(KernelArg::array(split.getSizes()));
        call.args.push_back(KernelArg::i32(split.getNumResults()));
        call.args.push_back(KernelArg::buffers(split.getResults()));
        return call;
      })
      .Case<nn::ConcatOp>([&](nn::ConcatOp concat) -> FailureOr<KernelCall> {
        FailureOr<int64_t> dtype = dtypeOf(op, concat.getResult());
        if (failed(dtype))
          return failure();
        call.callee = "gpipe_rt_cpu_concat";
        call.args.push_back(KernelArg::i32(*dtype));
        call.args.push_back(KernelArg::i32(concat.getInputs().size()));
        call.args.push_back(KernelArg::buffers(concat.getInputs()));
        KernelArg shapes;
        shapes.kind = KernelArg::IntsList;
        for (Value v : concat.getInputs())
          shapes.intsList.push_back(SmallVector<int64_t>(shapeOf(v)));
        call.args.push_back(shapes);
        call.args.push_back(KernelArg::i32(rankOf(concat.getResult())));
        call.args.push_back(KernelArg::i64(concat.getAxis()));
        call.args.push_back(KernelArg::buffer(concat.getResult()));
        return call;
      })
      .Case<nn::CrossEntropyOp>(
          [&](nn::CrossEntropyOp ce) -> FailureOr<KernelCall> {
            FailureOr<int64_t> labelType =
                dtypeOf(op, ce.getLabels(), {GPIPE_RT_I32, GPIPE_RT_I64});
            if (failed(labelType) ||
                failed(dtypeOf(op, ce.getLogits(), {GPIPE_RT_F32})))
              return failure();
            call.callee = "gpipe_rt_cpu_cross_entropy_f32";
            addTensor(call, ce.getLogits());
            call.args.push_back(KernelArg::i32(*labelType));
            call.args.push_back(KernelArg::buffer(ce.getLabels()));
            call.args.push_back(KernelArg::buffer(ce.getResult()));
            return call;
          })
      .Case<nn::MSEOp>([&](nn::MSEOp mse) -> FailureOr<KernelCall> {
        if (failed(f32Only()))
          return failure();
        call.callee = "gpipe_rt_cpu_mse_f32";
        call.args = {KernelArg::buffer(mse.getInput()),
                     KernelArg::buffer(mse.getTarget()),
                     KernelArg::i64(countOf(mse.getInput())),
                     KernelArg::buffer(mse.getResult())};
        return call;
      })
      .Case<nn::ReduceSumOp>([&](nn::ReduceSumOp sum) -> FailureOr<KernelCall> {
        if (failed(f32Only()))
          return failure();
        call.callee = "gpipe_rt_cpu_reduce_sum_f32";
        addTensor(call, sum.getInput());
        call.args.push_back(KernelArg::array(sum.getAxes()));
        call.args.push_back(KernelArg::i32(sum.getAxes().size()));
        call.args.push_back(KernelArg::buffer(sum.getResult()));
        return call;
      })
      .Case<nn::InsertSliceOp>(
          [&](nn::InsertSliceOp insert) -> FailureOr<KernelCall> {
            FailureOr<int64_t> dtype = dtypeOf(op, insert.getDest());
            if (failed(dtype))
              return failure();
            call.callee = "gpipe_rt_cpu_insert_slice";
            call.args.push_back(KernelArg::i32(*dtype));
            call.args.push_back(KernelArg::buffer(insert.getSource()));
            call.args.push_back(KernelArg::array(shapeOf(insert.getSource())));
            call.args.push_back(KernelArg::buffer(insert.getDest()));
            call.args.push_back(KernelArg::array(shapeOf(insert.getDest())));
            call.args.push_back(KernelArg::i32(rankOf(insert.getDest())));
            call.args.push_back(KernelArg::array(insert.getOffsets()));
            call.args.push_back(KernelArg::array(insert.getStrides()));
            call.args.push_back(KernelArg::buffer(insert.getResult()));
            return call;
          })
      .Case<nn::GatherGradOp>([&](nn::GatherGradOp gg) -> FailureOr<KernelCall> {
        FailureOr<int64_t> indexType =
            dtypeOf(op, gg.getIndices(), {GPIPE_RT_I32, GPIPE_RT_I64});
        if (failed(indexType) ||
            failed(dtypeOf(op, gg.getGrad(), {GPIPE_RT_F32})))
          return failure();
        call.callee = "gpipe_rt_cpu_gather_grad_f32";
        call.args.push_back(KernelArg::i32(*indexType));
        addTensor(call, gg.getIndices());
        addTensor(call, gg.getGrad());
        call.args.push_back(KernelArg::i64(gg.getAxis()));
        addTensor(call, gg.getResult());
        return call;
      })
      .Case<nn::SoftmaxGradOp>(
          [&](nn::SoftmaxGradOp sg) -> FailureOr<KernelCall> {
            if (failed(f32Only()))
              return failure();
            call.callee = "gpipe_rt_cpu_softmax_grad_f32";
            call.args.push_back(KernelArg::buffer(sg.getOutput()));
            call.args.push_back(KernelArg::buffer(sg.getGrad()));
            call.args.push_back(KernelArg::array(shapeOf(sg.getOutput())));
            call.args.push_back(KernelArg::i32(rankOf(sg.getOutput())));
            call.args.push_back(KernelArg::i64(sg.getAxis()));
            call.args.push_back(KernelArg::buffer(sg.getResult()));
            return call;
          })
      .Case<nn::LayerNormGradOp>(
          [&](nn::LayerNormGradOp lg) -> FailureOr<KernelCall> {
            if (failed(f32Only()))
              return failure();
            call.callee = "gpipe_rt_cpu_layer_norm_grad_f32";
            addTensor(call, lg.getInput());
            call.args.push_back(KernelArg::i64(lg.getAxis()));
            call.args.push_back(KernelArg::buffer(lg.getScale()));
            call.args.push_back(KernelArg::buffer(lg.getGrad()));
            call.args.push_back(
                KernelArg::f32(lg.getEpsilon().convertToFloat()));
            call.args.push_back(KernelArg::buffer(lg.getInputGrad()));
            call.args.push_back(KernelArg::buffer(lg.getScaleGrad()));
            call.args.push_back(KernelArg::buffer(lg.getBiasGrad()));
            return call;
          })
      .Case<nn::GeluGradOp>([&](nn::GeluGradOp gg) -> FailureOr<KernelCall> {
        if (failed(f32Only()))
          return failure();
        call.callee = "gpipe_rt_cpu_gelu_grad_f32";
        call.args = {KernelArg::buffer(gg.getInput()),
                     KernelArg::buffer(gg.getGrad()),
                     KernelArg::buffer(gg.getResult()),
                     KernelArg::i64(countOf(gg.getInput()))};
        return call;
      })
      .Case<nn::CrossEntropyGradOp>(
          [&](nn::CrossEntropyGradOp ce) -> FailureOr<KernelCall> {
            FailureOr<int64_t> labelType =
                dtypeOf(op, ce.getLabels(), {GPIPE_RT_I32, GPIPE_RT_I64});
            if (failed(labelType) ||
                failed(dtypeOf(op, ce.getLogits(), {GPIPE_RT_F32})) ||
                failed(dtypeOf(op, ce.getGrad(), {GPIPE_RT_F32})))
              return failure();
            // The scalar seed is read by the kernel, never by the
            // generated code (it may live in device memory).
            call.callee = "gpipe_rt_cpu_cross_entropy_grad_at_f32";
            addTensor(call, ce.getLogits());
            call.args.push_back(KernelArg::i32(*labelType));
            call.args.push_back(KernelArg::buffer(ce.getLabels()));
            call.args.push_back(KernelArg::buffer(ce.getGrad()));
            call.args.push_back(KernelArg::buffer(ce.getResult()));
            return call;
          })
      .Default([&](Operation *other) -> FailureOr<KernelCall> {
        return mlir::emitError(other->getLoc())
                   << "'" << other->getName()
                   << "' is not supported by the CPU code generator",
               failure();
      });
}

//===----------------------------------------------------------------------===//
// The emitter
//===----------------------------------------------------------------------===//

static std::string locationString(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

/// Where a stage's parameters live inside its parameter buffer.
struct StageParams {
  /// name -> (byte offset, element count), in the forward's read order.
  llvm::MapVector<StringRef, std::pair<int64_t, int64_t>> params;
  int64_t bytes = 0;
};

/// A lowered stage function.
struct LoweredFunction {
  LLVM::LLVMFuncOp func;
  func::FuncOp source;
  StageFunctionBuffers buffers;
  unsigned numArgs = 0;
  unsigned numResults = 0;
};

class Emitter {
public:
  Emitter(ModuleOp module, PipelineOp pipeline, PipelineSchedule &schedule,
          StringRef source, StringRef target, StringRef precision)
      : module(module), pipeline(pipeline), converted(schedule),
        memory(pipeline.getMemoryPlanAttr()), source(source),
        target(target), precision(precision),
        ctx(module.getContext()), b(ctx) {
    ptrTy = LLVM::LLVMPointerType::get(ctx);
    i8Ty = IntegerType::get(ctx, 8);
    i32Ty = IntegerType::get(ctx, 32);
    i64Ty = IntegerType::get(ctx, 64);
    f32Ty = Float32Type::get(ctx);
  }

  /// Emits everything at the end of the module (the nn/gpipe ops are erased
  /// by the caller afterwards).
  LogicalResult run();

private:
  // Declarations and data.
  LLVM::LLVMFuncOp declare(StringRef name, Type result, ArrayRef<Type> args);
  Value bytesGlobal(OpBuilder &at, Location loc, StringRef bytes,
                    StringRef prefix);
  Value intsGlobal(OpBuilder &at, Location loc, ArrayRef<int64_t> ints);
  Value constI32(OpBuilder &at, Location loc, int64_t v) {
    return LLVM::ConstantOp::create(at, loc, i32Ty, at.getI32IntegerAttr(v));
  }
  Value constI64(OpBuilder &at, Location loc, int64_t v) {
    return LLVM::ConstantOp::create(at, loc, i64Ty, at.getI64IntegerAttr(v));
  }
  Value offsetPtr(OpBuilder &at, Location loc, Value base, int64_t offset) {
    if (offset == 0)
      return base;
    Value index = constI64(at, loc, offset);
    return LLVM::GEPOp::create(at, loc, ptrTy, i8Ty, base,
                               ArrayRef<LLVM::GEPArg>{index});
  }

  /// Emits a call returning an i32 status; branches to `failBlock` with the
  /// status (and `site`, when >= 0) when it is nonzero. Continues in a new
  /// block.
  void emitChecked(OpBuilder &at, Location loc, LLVM::LLVMFuncOp callee,
                   ValueRange args, Block *failBlock, int64_t site);

  LogicalResult collectParams();
  FailureOr<LoweredFunction> lowerStageFunction(func::FuncOp func,
                                                StageFunctionKind kind,
                                                int64_t stage,
                                                unsigned numForwardArgs);
  /// A micro-batch in generated code: a constant, or a value of a loop.
  struct Microbatch {
    Value value;
    std::optional<int64_t> constant;
  };
  LogicalResult lowerRank(ProgramOp program);
  LogicalResult lowerAction(OpBuilder &at, ProgramOp program,
                            ActionOpInterface action, Microbatch mb,
                            Value index, std::optional<int64_t> constIndex,
                            const std::map<int, int64_t> &firstBackward,
                            Value rank, Value arena, Block *abort);
  llvm::json::Array describeActions(Block &block);
  LogicalResult emitMetadata();

  ModuleOp module;
  PipelineOp pipeline;
  /// The programs expanded (for the metadata's predictions and the rank of
  /// each stage) and the stages in pipeline order.
  PipelineSchedule &converted;
  /// What the memory plan assumed (optimizer, alignment); every program
  /// carries its own arena.
  MemoryPlanAttr memory;
  std::string source;
  /// The kernel library the calls go to: gpipe_rt_<target>_* ("cpu" or
  /// "cuda"; same signatures, data pointers on that device).
  std::string target;
  /// "fp32" or "bf16": which GEMM kernels the calls go to.
  std::string precision;
  MLIRContext *ctx;
  OpBuilder b;
  Type ptrTy, i8Ty, i32Ty, i64Ty, f32Ty;

  llvm::StringMap<LLVM::LLVMFuncOp> declared;
  std::map<std::string, LLVM::GlobalOp> globals;
  int64_t numGlobals = 0;
  llvm::json::Array sites;

  SmallVector<StageParams> stageParams;
  SmallVector<LoweredFunction> forwards, backwards;
  /// Per stage: the saved values' offsets in the Saved buffer (remat none),
  /// one per saved result of the forward; and the extra inputs' offsets.
  SmallVector<SmallVector<int64_t>> savedOffsets, extraOffsets;
  SmallVector<unsigned> numSaved;
};

LLVM::LLVMFuncOp Emitter::declare(StringRef kernelName, Type result,
                                  ArrayRef<Type> args) {
  // Kernels are named for the CPU library; other targets have the same
  // entry points under their own prefix. In bf16 the GEMMs call their
  // `_bf16` twins (same arguments).
  std::string base = kernelName.str();
  if (precision == "bf16" &&
      llvm::is_contained({"gpipe_rt_cpu_matmul_f32", "gpipe_rt_cpu_gemm_f32",
                          "gpipe_rt_cpu_linear_f32"},
                         kernelName))
    base = kernelName.drop_back(strlen("f32")).str() + "bf16";
  std::string name = base;
  StringRef cpu = "gpipe_rt_cpu_";
  if (StringRef(base).starts_with(cpu) && target != "cpu")
    name = "gpipe_rt_" + target + "_" + base.substr(cpu.size());
  auto it = declared.find(name);
  if (it != declared.end())
    return it->second;
  OpBuilder at(ctx);
  at.setInsertionPointToEnd(module.getBody());
  auto type = LLVM::LLVMFunctionType::get(result, args);
  auto func = LLVM::LLVMFuncOp::create(at, module.getLoc(), name, type);
  declared[name] = func;
  return func;
}

Value Emitter::bytesGlobal(OpBuilder &at, Location loc, StringRef bytes,
                           StringRef prefix) {
  std::string key = prefix.str() + ":" + bytes.str();
  LLVM::GlobalOp global;
  auto it = globals.find(key);
  if (it != globals.end()) {
    global = it->second;
  } else {
    OpBuilder g(ctx);
    g.setInsertionPointToEnd(module.getBody());
    auto type = LLVM::LLVMArrayType::get(i8Ty, std::max<size_t>(bytes.size(), 1));
    std::string name = "__gpipe_" + prefix.str() + std::to_string(numGlobals++);
    std::string data = bytes.empty() ? std::string(1, '\0') : bytes.str();
    global = LLVM::GlobalOp::create(g, loc, type, /*isConstant=*/true,
                                    LLVM::Linkage::Internal, name,
                                    g.getStringAttr(data), /*alignment=*/64);
    globals[key] = global;
  }
  return LLVM::AddressOfOp::create(at, loc, global);
}

Value Emitter::intsGlobal(OpBuilder &at, Location loc, ArrayRef<int64_t> ints) {
  std::string bytes(ints.size() * sizeof(int64_t), '\0');
  if (!ints.empty())
    std::memcpy(bytes.data(), ints.data(), bytes.size());
  return bytesGlobal(at, loc, bytes, "shape");
}

void Emitter::emitChecked(OpBuilder &at, Location loc, LLVM::LLVMFuncOp callee,
                          ValueRange args, Block *failBlock, int64_t site) {
  auto call = LLVM::CallOp::create(at, loc, callee, args);
  Value status = call.getResult();
  Value zero = constI32(at, loc, 0);
  Value bad = LLVM::ICmpOp::create(at, loc, LLVM::ICmpPredicate::ne, status,
                                   zero);
  Block *current = at.getInsertionBlock();
  Block *next = new Block();
  current->getParent()->getBlocks().insertAfter(Region::iterator(current),
                                                next);
  SmallVector<Value> failArgs = {status};
  if (site >= 0)
    failArgs.push_back(constI64(at, loc, site));
  LLVM::CondBrOp::create(at, loc, bad, failBlock, failArgs, next,
                         ValueRange());
  at.setInsertionPointToStart(next);
}

LogicalResult Emitter::collectParams() {
  for (StageOp stage : converted.stages) {
    auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        stage, stage.getForwardAttr());
    StageParams sp;
    WalkResult walk = forward.walk([&](nn::ParamOp param) {
      if (sp.params.count(param.getName()))
        return WalkResult::advance();
      // The read's type is the declaration's (verified).
      auto type = dyn_cast<RankedTensorType>(param.getType());
      if (!type || !type.getElementType().isF32()) {
        mlir::emitError(param.getLoc())
            << "parameter @" << param.getName()
            << " must be a declared f32 tensor for the CPU code generator";
        return WalkResult::interrupt();
      }
      int64_t count = type.getNumElements();
      sp.params[param.getName()] = {sp.bytes, count};
      sp.bytes += count * 4;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    stageParams.push_back(std::move(sp));
  }
  return success();
}

FailureOr<LoweredFunction>
Emitter::lowerStageFunction(func::FuncOp func, StageFunctionKind kind,
                            int64_t stage, unsigned numForwardArgs) {
  int64_t numStages = converted.stages.size();
  bool last = stage + 1 == numStages;
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return mlir::emitError(func.getLoc())
               << "@" << func.getSymName()
               << " needs a single-block body to be compiled",
           failure();
  FunctionLiveness liveness(func);
  LoweredFunction lowered;
  lowered.source = func;
  lowered.buffers = planStageFunction(func, liveness, kind, stage, numStages,
                                      numForwardArgs, memory.getAlignment());
  FunctionType type = func.getFunctionType();
  lowered.numArgs = type.getNumInputs();
  lowered.numResults = type.getNumResults();

  // (rank, mb, scratch, params, grads, first, args..., results...) -> i32
  SmallVector<Type> argTypes = {ptrTy, i64Ty, ptrTy, ptrTy, ptrTy, i32Ty};
  for (unsigned i = 0; i < lowered.numArgs + lowered.numResults; ++i)
    argTypes.push_back(ptrTy);
  OpBuilder at(ctx);
  at.setInsertionPointToEnd(module.getBody());
  Location loc = func.getLoc();
  auto llvmFunc = LLVM::LLVMFuncOp::create(
      at, loc, ("__gpipe_" + func.getSymName()).str(),
      LLVM::LLVMFunctionType::get(i32Ty, argTypes), LLVM::Linkage::Internal);
  lowered.func = llvmFunc;
  Block *entry = llvmFunc.addEntryBlock(at);
  Value rank = entry->getArgument(0), mb = entry->getArgument(1);
  Value scratch = entry->getArgument(2), params = entry->getArgument(3);
  Value grads = entry->getArgument(4), first = entry->getArgument(5);
  auto argPtr = [&](unsigned i) { return entry->getArgument(6 + i); };
  auto resultPtr = [&](unsigned i) {
    return entry->getArgument(6 + lowered.numArgs + i);
  };

  // The failure block: report the site, return the status.
  Block *fail = new Block();
  llvmFunc.getBody().push_back(fail);
  fail->addArgument(i32Ty, loc);
  fail->addArgument(i64Ty, loc);
  {
    OpBuilder f = OpBuilder::atBlockBegin(fail);
    auto report = declare("gpipe_rt_kernel_error", i32Ty,
                          {ptrTy, i64Ty, i32Ty});
    LLVM::CallOp::create(f, loc, report,
                         ValueRange{rank, fail->getArgument(1),
                                    fail->getArgument(0)});
    LLVM::ReturnOp::create(f, loc, fail->getArgument(0));
  }

  at.setInsertionPointToStart(entry);
  llvm::DenseMap<Value, Value> address;
  Block &body = func.getBody().front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    address[arg] = argPtr(i);
  auto addressOf = [&](Value v) -> Value {
    return address.lookup(liveness.getCanonical(v));
  };

  auto dtypeAndCount = [&](Operation *op,
                           Value v) -> FailureOr<std::pair<int64_t, int64_t>> {
    FailureOr<int64_t> dtype = dtypeOf(op, v);
    if (failed(dtype))
      return failure();
    return std::make_pair(*dtype, countOf(v));
  };

  auto callKernel = [&](Operation *op, const KernelCall &call) {
    Location opLoc = op->getLoc();
    SmallVector<Value> args;
    SmallVector<Type> types;
    for (const KernelArg &a : call.args) {
      switch (a.kind) {
      case KernelArg::Buffer:
        args.push_back(addressOf(a.value));
        types.push_back(ptrTy);
        break;
      case KernelArg::Null:
        args.push_back(LLVM::ZeroOp::create(at, opLoc, ptrTy));
        types.push_back(ptrTy);
        break;
      case KernelArg::I32:
        args.push_back(constI32(at, opLoc, a.integer));
        types.push_back(i32Ty);
        break;
      case KernelArg::I64:
        args.push_back(constI64(at, opLoc, a.integer));
        types.push_back(i64Ty);
        break;
      case KernelArg::F32:
        args.push_back(LLVM::ConstantOp::create(
            at, opLoc, f32Ty, at.getF32FloatAttr(float(a.real))));
        types.push_back(f32Ty);
        break;
      case KernelArg::Ints:
        args.push_back(intsGlobal(at, opLoc, a.ints));
        types.push_back(ptrTy);
        break;
      case KernelArg::Buffers:
      case KernelArg::IntsList: {
        size_t n = a.kind == KernelArg::Buffers ? a.values.size()
                                                : a.intsList.size();
        auto arrayTy = LLVM::LLVMArrayType::get(ptrTy, n);
        Value one = constI64(at, opLoc, 1);
        Value array = LLVM::AllocaOp::create(at, opLoc, ptrTy, arrayTy, one, 8);
        for (size_t k = 0; k < n; ++k) {
          Value elem = a.kind == KernelArg::Buffers
                           ? addressOf(a.values[k])
                           : intsGlobal(at, opLoc, a.intsList[k]);
          Value slot = offsetPtr(at, opLoc, array, int64_t(k * 8));
          LLVM::StoreOp::create(at, opLoc, elem, slot);
        }
        args.push_back(array);
        types.push_back(ptrTy);
        break;
      }
      }
    }
    LLVM::LLVMFuncOp callee = declare(call.callee, i32Ty, types);
    int64_t site = sites.size();
    sites.push_back(llvm::json::Object{
        {"op", op->getName().getStringRef().str()},
        {"loc", locationString(opLoc)},
        {"function", func.getSymName().str()}});
    emitChecked(at, opLoc, callee, args, fail, site);
  };

  // Copies `v` into `dest` (a kernel call of its own site).
  auto copyTo = [&](Operation *anchor, Value v, Value dest) -> LogicalResult {
    FailureOr<std::pair<int64_t, int64_t>> dc = dtypeAndCount(anchor, v);
    if (failed(dc))
      return failure();
    Location l = anchor->getLoc();
    LLVM::LLVMFuncOp copy =
        declare("gpipe_rt_cpu_copy", i32Ty, {i32Ty, ptrTy, ptrTy, i64Ty});
    int64_t site = sites.size();
    sites.push_back(llvm::json::Object{{"op", "copy"},
                                       {"loc", locationString(l)},
                                       {"function", func.getSymName().str()}});
    emitChecked(at, l,
                copy,
                ValueRange{constI32(at, l, dc->first), addressOf(v), dest,
                           constI64(at, l, dc->second)},
                fail, site);
    return success();
  };

  const StageParams &sp = stageParams[stage];
  for (Operation *op : liveness.getOps()) {
    Location opLoc = op->getLoc();
    if (isa<func::ReturnOp, nn::YieldOp, YieldOp>(op))
      continue;
    if (auto param = dyn_cast<nn::ParamOp>(op)) {
      auto it = sp.params.find(param.getName());
      if (it == sp.params.end())
        return mlir::emitError(opLoc)
                   << "@" << func.getSymName() << " reads parameter @"
                   << param.getName()
                   << ", which its stage's forward does not read",
               failure();
      address[param.getResult()] =
          offsetPtr(at, opLoc, params, it->second.first);
      continue;
    }
    if (auto constant = dyn_cast<nn::ConstantOp>(op)) {
      FailureOr<HostTensor> value = hostTensorFromAttr(
          constant.getValue(), [&] { return constant.emitOpError(); });
      if (failed(value))
        return failure();
      StringRef bytes(static_cast<const char *>(value->getData()),
                      value->getByteSize());
      address[constant.getResult()] = bytesGlobal(at, opLoc, bytes, "const");
      continue;
    }
    if (isa<nn::ReshapeOp, nn::UnsqueezeOp>(op))
      continue; // views: the canonical value's address
    for (Value result : op->getResults()) {
      if (result == lowered.buffers.routed) {
        address[result] = resultPtr(0);
        continue;
      }
      auto it = lowered.buffers.offsets.find(result);
      address[result] = it != lowered.buffers.offsets.end()
                            ? offsetPtr(at, opLoc, scratch, it->second)
                            : scratch; // empty tensors
    }
    FailureOr<KernelCall> call = getKernelCall(op);
    if (failed(call))
      return failure();
    callKernel(op, *call);
  }

  // Results.
  Operation *terminator = body.getTerminator();
  SmallVector<Value> returned = liveness.getReturned();
  if (kind == StageFunctionKind::Forward) {
    for (auto [i, v] : llvm::enumerate(returned)) {
      if (i == 0 && last) {
        // The loss: reported, not stored.
        auto report = declare("gpipe_rt_report_loss", i32Ty,
                              {ptrTy, i64Ty, ptrTy});
        auto call = LLVM::CallOp::create(at, loc, report,
                                         ValueRange{rank, mb, addressOf(v)});
        Value zero = constI32(at, loc, 0);
        Value bad = LLVM::ICmpOp::create(at, loc, LLVM::ICmpPredicate::ne,
                                         call.getResult(), zero);
        Block *next = new Block();
        llvmFunc.getBody().push_back(next);
        Block *abort = new Block();
        llvmFunc.getBody().push_back(abort);
        LLVM::CondBrOp::create(at, loc, bad, abort, next);
        OpBuilder ab = OpBuilder::atBlockBegin(abort);
        LLVM::ReturnOp::create(ab, loc, call.getResult());
        at.setInsertionPointToStart(next);
        continue;
      }
      if (i == 0 && v == lowered.buffers.routed)
        continue;
      if (failed(copyTo(terminator, v, resultPtr(i))))
        return failure();
    }
  } else {
    auto inputGrads = func->getAttrOfType<DenseI64ArrayAttr>("nn.input_grads");
    unsigned numInputGrads = inputGrads ? inputGrads.size() : (stage > 0);
    auto paramGrads = func->getAttrOfType<ArrayAttr>("nn.param_grads");
    if (!paramGrads && returned.size() > numInputGrads)
      return mlir::emitError(func.getLoc())
                 << "@" << func.getSymName() << " returns " << returned.size()
                 << " results but lists no nn.param_grads for the "
                 << returned.size() - numInputGrads
                 << " after its input gradient",
             failure();
    if (numInputGrads > 1 ||
        (paramGrads && paramGrads.size() + numInputGrads != returned.size()))
      return mlir::emitError(func.getLoc())
                 << "@" << func.getSymName()
                 << " must return at most one input gradient followed by "
                    "one gradient per nn.param_grads entry",
             failure();
    for (unsigned i = 0; i < numInputGrads; ++i) {
      if (returned[i] == lowered.buffers.routed)
        continue;
      if (failed(copyTo(terminator, returned[i], resultPtr(i))))
        return failure();
    }
    LLVM::LLVMFuncOp accumulate = declare("gpipe_rt_cpu_accumulate_f32", i32Ty,
                                          {ptrTy, ptrTy, i64Ty, i32Ty});
    for (unsigned k = 0; paramGrads && k < paramGrads.size(); ++k) {
      StringRef name = cast<FlatSymbolRefAttr>(paramGrads[k]).getValue();
      auto it = sp.params.find(name);
      if (it == sp.params.end())
        return mlir::emitError(func.getLoc())
                   << "@" << func.getSymName() << " returns the gradient of @"
                   << name << ", which its stage's forward does not read",
               failure();
      Value g = returned[numInputGrads + k];
      int64_t site = sites.size();
      sites.push_back(llvm::json::Object{
          {"op", "accumulate @" + name.str()},
          {"loc", locationString(func.getLoc())},
          {"function", func.getSymName().str()}});
      emitChecked(at, loc, accumulate,
                  ValueRange{offsetPtr(at, loc, grads, it->second.first),
                             addressOf(g), constI64(at, loc, it->second.second),
                             first},
                  fail, site);
    }
  }
  LLVM::ReturnOp::create(at, loc, constI32(at, loc, 0));
  return lowered;
}

/// The stage index of `action` in pipeline order.
static int stageIndexOf(PipelineOp pipeline, ActionOpInterface action) {
  return static_cast<int>(pipeline.getStagePosition(action.getStageSymbol()));
}

LogicalResult Emitter::lowerRank(ProgramOp program) {
  int r = static_cast<int>(program.getRankIndex());
  Location loc = program.getLoc();

  // The expanded index of each stage's first backward: it starts the
  // gradient accumulators (a copy, not an add).
  std::map<int, int64_t> firstBackward;
  int64_t count = 0;
  walkProgram(program, [&](ActionOpInterface action, int64_t) {
    if (action.getActionKind() == ActionKind::Backward)
      firstBackward.try_emplace(stageIndexOf(pipeline, action), count);
    ++count;
  });

  OpBuilder at(ctx);
  at.setInsertionPointToEnd(module.getBody());
  auto func = LLVM::LLVMFuncOp::create(
      at, loc, "gpipe_model_rank_" + std::to_string(r),
      LLVM::LLVMFunctionType::get(i32Ty, {ptrTy, ptrTy}));
  Block *entry = func.addEntryBlock(at);
  Value rank = entry->getArgument(0), arena = entry->getArgument(1);
  Block *abort = new Block();
  func.getBody().push_back(abort);
  abort->addArgument(i32Ty, loc);
  {
    OpBuilder ab = OpBuilder::atBlockBegin(abort);
    LLVM::ReturnOp::create(ab, loc, abort->getArgument(0));
  }
  at.setInsertionPointToStart(entry);

  int64_t next = 0; // the expanded index of the next action
  for (Operation &op : program.getBody().front()) {
    if (auto action = dyn_cast<ActionOpInterface>(op)) {
      int64_t mb = action.getMicrobatchOffset();
      if (failed(lowerAction(at, program, action,
                             {constI64(at, op.getLoc(), mb), mb},
                             constI64(at, op.getLoc(), next), next,
                             firstBackward, rank, arena, abort)))
        return failure();
      ++next;
      continue;
    }
    // A micro-batch loop stays a loop:
    //   br header(lower); header(iv): iv < upper ? body : exit;
    //   body: actions with mb = iv + offset; br header(iv + 1)
    auto loop = cast<ForOp>(op);
    Location l = loop.getLoc();
    Block &bodyOps = loop.getBody().front();
    int64_t period = static_cast<int64_t>(bodyOps.getOperations().size());
    Block *current = at.getInsertionBlock();
    Block *header = new Block(), *body = new Block(), *exit = new Block();
    func.getBody().getBlocks().insertAfter(Region::iterator(current), header);
    func.getBody().getBlocks().insertAfter(Region::iterator(header), body);
    func.getBody().getBlocks().insertAfter(Region::iterator(body), exit);
    Value iv = header->addArgument(i64Ty, l);
    LLVM::BrOp::create(at, l, ValueRange{constI64(at, l, loop.getLowerBound())},
                       header);
    at.setInsertionPointToStart(header);
    Value more = LLVM::ICmpOp::create(at, l, LLVM::ICmpPredicate::slt, iv,
                                      constI64(at, l, loop.getUpperBound()));
    LLVM::CondBrOp::create(at, l, more, body, exit);
    at.setInsertionPointToStart(body);
    // Action j of trip t has the expanded index next + t * period + j.
    Value trip = LLVM::SubOp::create(at, l, iv,
                                     constI64(at, l, loop.getLowerBound()));
    Value first = LLVM::AddOp::create(
        at, l, constI64(at, l, next),
        LLVM::MulOp::create(at, l, trip, constI64(at, l, period)));
    for (auto [j, inner] : llvm::enumerate(bodyOps)) {
      auto action = cast<ActionOpInterface>(inner);
      Value mb = action.getMicrobatchBase()
                     ? LLVM::AddOp::create(
                           at, inner.getLoc(), iv,
                           constI64(at, inner.getLoc(),
                                    action.getMicrobatchOffset()))
                           .getResult()
                     : constI64(at, inner.getLoc(),
                                action.getMicrobatchOffset());
      Value index = LLVM::AddOp::create(at, inner.getLoc(), first,
                                        constI64(at, inner.getLoc(), int64_t(j)));
      if (failed(lowerAction(at, program, action, {mb, std::nullopt}, index,
                             std::nullopt, firstBackward, rank, arena, abort)))
        return failure();
    }
    Value step = LLVM::AddOp::create(at, l, iv, constI64(at, l, 1));
    LLVM::BrOp::create(at, l, ValueRange{step}, header);
    at.setInsertionPointToStart(exit);
    next += loop.getTripCount() * period;
  }
  LLVM::ReturnOp::create(at, loc, constI32(at, loc, 0));
  return success();
}

LogicalResult Emitter::lowerAction(OpBuilder &at, ProgramOp program,
                                   ActionOpInterface action, Microbatch mb,
                                   Value index,
                                   std::optional<int64_t> constIndex,
                                   const std::map<int, int64_t> &firstBackward,
                                   Value rank, Value arena, Block *abort) {
  Operation *op = action;
  Location loc = op->getLoc();
  ArenaAttr plan = program.getArenaAttr();
  int r = static_cast<int>(program.getRankIndex());
  int numStages = static_cast<int>(converted.stages.size());
  int s = stageIndexOf(pipeline, action);
  ActionKind kind = action.getActionKind();
  bool last = s + 1 == numStages;

  auto begin = declare("gpipe_rt_action_begin", i32Ty, {ptrTy, i64Ty});
  auto end = declare("gpipe_rt_action_end", LLVM::LLVMVoidType::get(ctx),
                     {ptrTy, i64Ty});
  emitChecked(at, loc, begin, ValueRange{rank, index}, abort, -1);

  auto missing = [&](StringRef what) {
    return mlir::emitError(loc)
           << "rank " << r << " (" << getActionKindName(kind) << " of stage "
           << s << "): the memory plan has no " << what << " slot",
           failure();
  };
  auto ptrAt = [&](int64_t offset) { return offsetPtr(at, loc, arena, offset); };
  // The address of micro-batch mb's copy in the slot of (kind, stage).
  auto slotPtr = [&](SlotKind slotKind, int stage) -> std::optional<Value> {
    SlotAttr slot = plan.lookup(slotKind, stage);
    if (!slot)
      return std::nullopt;
    if (slot.getCount() == 1 || mb.constant)
      return ptrAt(slot.getOffsetOf(mb.constant.value_or(0)));
    Value copy = LLVM::URemOp::create(at, loc, mb.value,
                                      constI64(at, loc, slot.getCount()));
    Value offset = LLVM::AddOp::create(
        at, loc, constI64(at, loc, slot.getOffset()),
        LLVM::MulOp::create(at, loc, copy, constI64(at, loc, slot.getStride())));
    return LLVM::GEPOp::create(at, loc, ptrTy, i8Ty, arena,
                               ArrayRef<LLVM::GEPArg>{offset})
        .getResult();
  };

  const StageParams &sp = stageParams[s];
  auto paramsPtr = [&]() -> FailureOr<Value> {
    std::optional<Value> p = slotPtr(SlotKind::Parameters, s);
    if (!p && sp.bytes > 0)
      return missing("parameter");
    return p ? *p : ptrAt(0);
  };
  auto gradsPtr = [&]() -> FailureOr<Value> {
    std::optional<Value> g = slotPtr(SlotKind::Gradients, s);
    if (!g && sp.bytes > 0)
      return missing("gradient");
    return g ? *g : ptrAt(0);
  };

  switch (kind) {
  case ActionKind::Forward:
  case ActionKind::Backward: {
    bool forward = kind == ActionKind::Forward;
    LoweredFunction fn = forward ? forwards[s] : backwards[s];
    std::optional<Value> input = slotPtr(SlotKind::Input, s);
    if (!input)
      return missing("input");
    // The rank's scratch region: the working set of whichever stage
    // function runs. A function without scratch values gets any address.
    SlotAttr scratch = plan.lookup(SlotKind::Scratch, -1);
    if (fn.buffers.scratchBytes > 0 &&
        (!scratch || scratch.getSize() < fn.buffers.scratchBytes))
      return mlir::emitError(loc)
                 << "rank " << r << ": @" << fn.source.getSymName()
                 << " needs " << fn.buffers.scratchBytes
                 << " scratch bytes, the memory plan's scratch slot holds "
                 << (scratch ? scratch.getSize() : 0)
                 << "; re-run gpipe-plan-memory",
             failure();
    int64_t scratchOffset = scratch ? scratch.getOffset() : 0;
    FailureOr<Value> params = paramsPtr(), grads = gradsPtr();
    if (failed(params) || failed(grads))
      return failure();
    SmallVector<Value> args = {*input};
    // Extra inputs (the labels) in one buffer.
    unsigned numExtra = extraOffsets[s].size();
    std::optional<Value> extra = slotPtr(SlotKind::ExtraInput, s);
    if (numExtra > 0 && !extra)
      return missing("extra input");
    for (int64_t off : extraOffsets[s])
      args.push_back(offsetPtr(at, loc, *extra, off));
    if (forward && s == 0) {
      auto loadInput =
          declare("gpipe_rt_load_input", i32Ty, {ptrTy, i64Ty, ptrTy, i64Ty});
      int64_t bytes = getPayloadBytes(converted.stages[s].getInputType());
      emitChecked(at, loc, loadInput,
                  ValueRange{rank, mb.value, *input, constI64(at, loc, bytes)},
                  abort, -1);
    }
    if (forward && numExtra > 0) {
      if (!last || numExtra != 1)
        return mlir::emitError(fn.source.getLoc())
                   << "@" << fn.source.getSymName()
                   << ": only the last stage's forward may take an extra "
                      "argument (its labels)",
               failure();
      auto loadLabels =
          declare("gpipe_rt_load_labels", i32Ty, {ptrTy, i64Ty, ptrTy, i64Ty});
      int64_t bytes = getValueBytes(fn.source.getFunctionType().getInput(1));
      emitChecked(at, loc, loadLabels,
                  ValueRange{rank, mb.value, args[1], constI64(at, loc, bytes)},
                  abort, -1);
    }
    std::optional<Value> saved = slotPtr(SlotKind::Saved, s);
    if (numSaved[s] > 0 && !saved)
      return missing("saved");
    SmallVector<Value> results;
    if (forward) {
      // Output, then the saved values.
      if (last) {
        results.push_back(LLVM::ZeroOp::create(at, loc, ptrTy));
      } else {
        std::optional<Value> out = slotPtr(SlotKind::Output, s);
        if (!out)
          out = slotPtr(SlotKind::Input, s + 1);
        if (!out)
          return missing("output");
        results.push_back(*out);
      }
      for (int64_t off : savedOffsets[s])
        results.push_back(offsetPtr(at, loc, *saved, off));
    } else {
      for (int64_t off : savedOffsets[s])
        args.push_back(offsetPtr(at, loc, *saved, off));
      if (last) {
        // The loss seed 1.0 in the scratch region's seed slot.
        auto fill =
            declare("gpipe_rt_cpu_fill_f32", i32Ty, {ptrTy, i64Ty, f32Ty});
        for (int64_t off : fn.buffers.seedOffsets) {
          Value seed = ptrAt(scratchOffset + off);
          Value one = LLVM::ConstantOp::create(at, loc, f32Ty,
                                               at.getF32FloatAttr(1.0f));
          emitChecked(at, loc, fill,
                      ValueRange{seed, constI64(at, loc, 1), one}, abort, -1);
          args.push_back(seed);
        }
      } else {
        std::optional<Value> og = slotPtr(SlotKind::OutputGrad, s);
        if (!og)
          return missing("output gradient");
        args.push_back(*og);
      }
      auto inputGrads =
          fn.source->getAttrOfType<DenseI64ArrayAttr>("nn.input_grads");
      unsigned numInputGrads = inputGrads ? inputGrads.size() : (s > 0);
      for (unsigned k = 0; k < numInputGrads; ++k) {
        std::optional<Value> ig = slotPtr(SlotKind::InputGrad, s);
        if (!ig && s > 0)
          ig = slotPtr(SlotKind::OutputGrad, s - 1);
        if (!ig)
          return missing("input gradient");
        results.push_back(*ig);
      }
      // Parameter gradients are accumulated, not returned through
      // pointers: pass nulls for their result slots.
      while (results.size() < fn.numResults)
        results.push_back(LLVM::ZeroOp::create(at, loc, ptrTy));
    }
    if (args.size() != fn.numArgs || results.size() != fn.numResults)
      return mlir::emitError(fn.source.getLoc())
                 << "@" << fn.source.getSymName() << " takes " << fn.numArgs
                 << " arguments and returns " << fn.numResults
                 << " results, but its stage provides " << args.size()
                 << " and " << results.size(),
             failure();
    // The stage's first backward of the step copies into the accumulators.
    Value firstFlag = constI32(at, loc, 0);
    auto fb = firstBackward.find(s);
    if (!forward && fb != firstBackward.end()) {
      if (constIndex)
        firstFlag = constI32(at, loc, *constIndex == fb->second);
      else
        firstFlag = LLVM::ZExtOp::create(
            at, loc, i32Ty,
            LLVM::ICmpOp::create(at, loc, LLVM::ICmpPredicate::eq, index,
                                 constI64(at, loc, fb->second)));
    }
    SmallVector<Value> operands = {rank, mb.value, ptrAt(scratchOffset),
                                   *params, *grads, firstFlag};
    operands.append(args);
    operands.append(results);
    emitChecked(at, loc, fn.func, operands, abort, -1);
    break;
  }
  case ActionKind::SendF:
  case ActionKind::SendB:
  case ActionKind::RecvF:
  case ActionKind::RecvB: {
    std::optional<Value> buffer;
    bool isSend = isSendKind(kind);
    if (kind == ActionKind::SendF)
      buffer = slotPtr(SlotKind::Output, s);
    else if (kind == ActionKind::SendB)
      buffer = slotPtr(SlotKind::InputGrad, s);
    else if (kind == ActionKind::RecvF)
      buffer = slotPtr(SlotKind::Input, s);
    else
      buffer = slotPtr(SlotKind::OutputGrad, s);
    if (!buffer)
      return missing("transfer");
    Type payload = isa<SendOp>(op) ? cast<SendOp>(op).getPayload()
                                   : cast<RecvOp>(op).getPayload();
    auto transfer = declare(isSend ? "gpipe_rt_send" : "gpipe_rt_recv", i32Ty,
                            {ptrTy, i64Ty, ptrTy, i64Ty});
    emitChecked(at, loc, transfer,
                ValueRange{rank, index, *buffer,
                           constI64(at, loc, getPayloadBytes(payload))},
                abort, -1);
    break;
  }
  case ActionKind::Step: {
    FailureOr<Value> params = paramsPtr(), grads = gradsPtr();
    if (failed(params) || failed(grads))
      return failure();
    std::optional<Value> state = slotPtr(SlotKind::OptimizerState, s);
    Value statePtr = state ? *state : LLVM::ZeroOp::create(at, loc, ptrTy);
    auto step = declare("gpipe_rt_optimizer_step", i32Ty,
                        {ptrTy, i64Ty, ptrTy, ptrTy, ptrTy, i64Ty});
    emitChecked(at, loc, step,
                ValueRange{rank, constI64(at, loc, s), *params, *grads,
                           statePtr, constI64(at, loc, sp.bytes / 4)},
                abort, -1);
    break;
  }
  case ActionKind::Recompute:
  case ActionKind::AllReduce:
    // The backward recomputes its stage; one replica has nothing to
    // reduce.
    break;
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight:
    return mlir::emitError(loc)
               << "split backwards (" << getActionKindName(kind) << " of stage "
               << s << ") are not supported by the CPU code generator yet",
           failure();
  }
  LLVM::CallOp::create(at, loc, end, ValueRange{rank, index});
  return success();
}

LogicalResult Emitter::run() {
  if (failed(collectParams()))
    return failure();
  for (auto [s, stage] : llvm::enumerate(converted.stages)) {
    auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        stage, stage.getForwardAttr());
    auto backward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        stage, stage.getBackwardAttr());
    unsigned saved = 0;
    if (auto count = forward->getAttrOfType<IntegerAttr>("nn.saved_count"))
      saved = unsigned(count.getInt());
    if (pipeline.getRemat() != Remat::None)
      saved = 0;
    numSaved.push_back(saved);
    FailureOr<LoweredFunction> f = lowerStageFunction(
        forward, StageFunctionKind::Forward, int64_t(s), 0);
    if (failed(f))
      return failure();
    FunctionType ft = forward.getFunctionType();
    FailureOr<LoweredFunction> bw = lowerStageFunction(
        backward, StageFunctionKind::Backward, int64_t(s),
        ft.getNumInputs() + saved);
    if (failed(bw))
      return failure();
    forwards.push_back(*f);
    backwards.push_back(*bw);

    // The layout of the Saved and ExtraInput buffers: packed, each distinct
    // saved value once, in result order (what the planner counts).
    SmallVector<int64_t> savedOff;
    if (saved > 0) {
      FunctionLiveness liveness(forward);
      SmallVector<Value> returned = liveness.getReturned();
      llvm::DenseMap<Value, int64_t> seen;
      int64_t top = 0;
      for (Value v : ArrayRef<Value>(returned).take_back(saved)) {
        auto [it, inserted] = seen.try_emplace(v, top);
        if (inserted)
          top += getValueBytes(v.getType());
        savedOff.push_back(it->second);
      }
    }
    savedOffsets.push_back(savedOff);
    SmallVector<int64_t> extraOff;
    int64_t top = 0;
    for (unsigned i = 1; i < ft.getNumInputs(); ++i) {
      extraOff.push_back(top);
      top += getValueBytes(ft.getInput(i));
    }
    extraOffsets.push_back(extraOff);
  }
  for (ProgramOp program : pipeline.getPrograms())
    if (failed(lowerRank(program)))
      return failure();
  return emitMetadata();
}

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

static llvm::json::Array toJSON(ArrayRef<int64_t> values) {
  llvm::json::Array array;
  for (int64_t v : values)
    array.push_back(v);
  return array;
}

/// The metadata's program of a block of actions and loops: an action is
/// {kind, stage, mb[, peer, direction, bytes, dtype]}; a loop is
/// {"loop": {lower, upper, body}} with the body's "mb" relative to the loop's
/// micro-batch. The runtime expands loops and derives each transfer's tag
/// from its boundary and micro-batch (gpipe::abi::getTransferTag).
llvm::json::Array Emitter::describeActions(Block &block) {
  llvm::json::Array entries;
  for (Operation &op : block) {
    if (auto loop = dyn_cast<ForOp>(op)) {
      entries.push_back(llvm::json::Object{
          {"loop", llvm::json::Object{
                       {"lower", loop.getLowerBound()},
                       {"upper", loop.getUpperBound()},
                       {"body", describeActions(loop.getBody().front())}}}});
      continue;
    }
    auto action = cast<ActionOpInterface>(op);
    ActionKind kind = action.getActionKind();
    // The action's op name is the ABI's kind ("forward", "send", ...).
    llvm::json::Object entry{
        {"kind", op.getName().stripDialect().str()},
        {"stage", pipeline.getStagePosition(action.getStageSymbol())},
        {"mb", action.getMicrobatchOffset()}};
    if (isCommKind(kind)) {
      Type payload = isa<SendOp>(op) ? cast<SendOp>(op).getPayload()
                                     : cast<RecvOp>(op).getPayload();
      entry["peer"] = action.getPeerRank();
      entry["direction"] = isForwardComm(kind) ? "forward" : "backward";
      entry["bytes"] = getPayloadBytes(payload);
      entry["dtype"] = getPayloadDType(payload);
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

LogicalResult Emitter::emitMetadata() {
  const Schedule &schedule = converted.schedule;
  int K = schedule.numStages, M = schedule.numMicrobatches;
  ArrayRef<StageOp> stages = converted.stages;
  Location loc = pipeline.getLoc();

  // Input and labels of the whole mini-batch.
  auto batchShape = [&](Type type) {
    SmallVector<int64_t> shape(cast<ShapedType>(type).getShape());
    if (!shape.empty())
      shape[0] *= M;
    return shape;
  };
  auto dtypeName = [](Type type) {
    return std::string(
        gpipe_rt_dtype_name(*getRuntimeDType(
            cast<ShapedType>(type).getElementType())));
  };
  llvm::json::Object root;
  root["format"] = "gpipe-model";
  root[::gpipe::abi::key::kSchemaVersion] = ::gpipe::abi::kMetadataSchemaVersion;
  root["abi_version"] = GPIPE_RT_ABI_VERSION;
  root["producer"] = "gpipe-compile 0.1";
  root["source"] = source;
  root["target"] = target;
  root["precision"] = precision;
  root["stages"] = K;
  root["microbatches"] = M;
  root["schedule"] = stringifyScheduleKind(pipeline.getSchedule()).str();
  root["remat"] = stringifyRemat(pipeline.getRemat()).str();
  root["alignment"] = memory.getAlignment();
  root["optimizer"] = stringifyOptimizer(memory.getOptimizer()).str();

  func::FuncOp firstForward = forwards.front().source;
  func::FuncOp lastForward = forwards.back().source;
  Type inputType = firstForward.getFunctionType().getInput(0);
  if (failed(getRuntimeDType(cast<ShapedType>(inputType).getElementType())))
    return mlir::emitError(loc) << "unsupported input type " << inputType,
           failure();
  root["input"] = llvm::json::Object{{"shape", toJSON(batchShape(inputType))},
                                     {"dtype", dtypeName(inputType)}};
  std::string loss;
  int64_t classes = 0;
  lastForward.walk([&](Operation *op) {
    if (auto ce = dyn_cast<nn::CrossEntropyOp>(op)) {
      loss = "cross-entropy";
      classes = shapeOf(ce.getLogits()).back();
    } else if (isa<nn::MSEOp>(op)) {
      loss = "mse";
    }
  });
  root["loss"] = loss;
  FunctionType lastType = lastForward.getFunctionType();
  if (lastType.getNumInputs() > 1) {
    Type labelType = lastType.getInput(1);
    llvm::json::Object labels{{"shape", toJSON(batchShape(labelType))},
                              {"dtype", dtypeName(labelType)}};
    if (classes > 0)
      labels["classes"] = classes;
    root["labels"] = std::move(labels);
  } else {
    root["labels"] = nullptr;
  }
  int64_t vocab = 0;
  firstForward.walk([&](nn::GatherOp gather) {
    if (!vocab && gather.getData().getDefiningOp<nn::ParamOp>() &&
        gather.getIndices() == firstForward.getArgument(0))
      vocab = shapeOf(gather.getData()).front();
  });
  // Token ids that index an embedding directly.
  if (!vocab) {
    firstForward.walk([&](nn::GatherOp gather) {
      if (!vocab && gather.getData().getDefiningOp<nn::ParamOp>())
        vocab = shapeOf(gather.getData()).front();
    });
  }
  bool tokens = cast<ShapedType>(inputType).getElementType().isInteger(64);
  root["vocab"] = tokens ? vocab : 0;
  std::string hint;
  if (tokens && loss == "cross-entropy" && vocab > 0)
    hint = "text-char";
  else if (!tokens && loss == "cross-entropy" &&
           cast<ShapedType>(inputType).getRank() == 2)
    hint = "classification";
  root["data_hint"] = hint;

  // Predicted timeline.
  Timeline timeline =
      simulate(schedule, getStageDurations(converted.stages));
  root["predicted"] = llvm::json::Object{
      {"bubble", timeline.error.empty() ? timeline.bubbleFraction : -1.0},
      {"closed_form_bubble", getIdealBubbleFraction(K, M)},
      {"step_seconds", timeline.makespan}};

  // Parameters and their initial data.
  std::string data;
  llvm::json::Array parameters;
  for (nn::ParameterOp p : module.getBody()->getOps<nn::ParameterOp>()) {
    auto type = cast<RankedTensorType>(p.getType());
    llvm::json::Object entry{{"name", p.getSymName().str()},
                             {"shape", toJSON(type.getShape())},
                             {"dtype", "f32"}};
    if (std::optional<ElementsAttr> value = p.getInitialValue()) {
      FailureOr<HostTensor> tensor =
          hostTensorFromAttr(*value, [&] { return p.emitOpError(); });
      if (failed(tensor))
        return failure();
      if (tensor->getDType() != GPIPE_RT_F32)
        return p.emitOpError("initial value must be f32"), failure();
      while (data.size() % 64)
        data.push_back('\0');
      entry["init"] = "data";
      entry["data_offset"] = int64_t(data.size());
      data.append(static_cast<const char *>(tensor->getData()),
                  tensor->getByteSize());
    } else {
      entry["init"] = p.getInit().value_or("zeros").str();
      entry["scale"] =
          p.getInitScale() ? p.getInitScale()->convertToDouble() : 0.0;
    }
    parameters.push_back(std::move(entry));
  }
  root["parameters"] = std::move(parameters);

  llvm::json::Array stageInfo;
  for (size_t s = 0; s < stages.size(); ++s) {
    StageOp stage = stages[s];
    llvm::json::Array layers;
    forwards[s].source.walk([&](nn::LayerOp layer) {
      layers.push_back(layer.getName().str());
    });
    stageInfo.push_back(llvm::json::Object{
        {"index", int64_t(s)},
        {"rank", schedule.getRankOfStage(int(s))},
        {"name", stage.getSymName().str()},
        {"layers", std::move(layers)}});
  }
  root["stage_info"] = std::move(stageInfo);

  llvm::json::Array ranks;
  for (ProgramOp program : pipeline.getPrograms()) {
    int r = static_cast<int>(program.getRankIndex());
    ArenaAttr arena = program.getArenaAttr();
    llvm::json::Array rankStages;
    for (int s : schedule.getStagesOfRank(r)) {
      auto offsetOf = [&](SlotKind kind) -> int64_t {
        SlotAttr slot = arena.lookup(kind, s);
        return slot ? slot.getOffset() : -1;
      };
      llvm::json::Array params;
      for (auto &[name, placement] : stageParams[s].params)
        params.push_back(llvm::json::Object{{"name", name.str()},
                                            {"offset", placement.first},
                                            {"elements", placement.second}});
      rankStages.push_back(llvm::json::Object{
          {"stage", s},
          {"params_offset", offsetOf(SlotKind::Parameters)},
          {"grads_offset", offsetOf(SlotKind::Gradients)},
          {"state_offset", offsetOf(SlotKind::OptimizerState)},
          {"param_bytes", stageParams[s].bytes},
          {"params", std::move(params)}});
    }
    ranks.push_back(llvm::json::Object{
        {"rank", r},
        {"symbol", "gpipe_model_rank_" + std::to_string(r)},
        {"arena_bytes", arena.getSize()},
        {"peak_bytes", arena.getPeak()},
        {"stages", std::move(rankStages)},
        {"actions", describeActions(program.getBody().front())}});
  }
  root["ranks"] = std::move(ranks);
  root["sites"] = std::move(sites);

  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(root));
  os.flush();
  json.push_back('\0');

  // The exported accessors.
  auto emitAccessor = [&](StringRef name, StringRef bytes, StringRef prefix) {
    OpBuilder at(ctx);
    at.setInsertionPointToEnd(module.getBody());
    auto func = LLVM::LLVMFuncOp::create(
        at, loc, name, LLVM::LLVMFunctionType::get(ptrTy, {}));
    Block *entry = func.addEntryBlock(at);
    at.setInsertionPointToStart(entry);
    LLVM::ReturnOp::create(at, loc, bytesGlobal(at, loc, bytes, prefix));
  };
  emitAccessor("gpipe_model_metadata", json, "metadata");
  emitAccessor("gpipe_model_data", data, "data");
  {
    OpBuilder at(ctx);
    at.setInsertionPointToEnd(module.getBody());
    auto func = LLVM::LLVMFuncOp::create(
        at, loc, "gpipe_model_abi_version",
        LLVM::LLVMFunctionType::get(i32Ty, {}));
    Block *entry = func.addEntryBlock(at);
    at.setInsertionPointToStart(entry);
    LLVM::ReturnOp::create(at, loc,
                           constI32(at, loc, GPIPE_RT_ABI_VERSION));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertGPipeToRuntimePass
    : public mlir::gpipe::impl::ConvertGPipeToRuntimePassBase<
          ConvertGPipeToRuntimePass> {
  using ConvertGPipeToRuntimePassBase::ConvertGPipeToRuntimePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<PipelineOp> pipelineOp = findPipeline(module, pipeline);
    if (failed(pipelineOp))
      return signalPassFailure();
    PipelineOp op = *pipelineOp;
    // The plan is read from the IR, never recomputed: the pipeline says
    // what it assumed, every program where its buffers live.
    if (!op.getMemoryPlanAttr())
      return emitPipelineError(op)
                 << "has no memory plan; run gpipe-plan-memory (or "
                    "gpipe-pipeline) first",
             signalPassFailure();
    for (ProgramOp program : op.getPrograms())
      if (!program.getArenaAttr())
        return mlir::emitError(program.getLoc())
                   << "rank " << program.getRankIndex()
                   << " has no arena; re-run gpipe-plan-memory",
               signalPassFailure();
    SymbolTableCollection symbols;
    FailureOr<PipelineSchedule> converted = toSchedule(op, &symbols);
    if (failed(converted))
      return signalPassFailure();

    std::string targetName = target;
    if (targetName != "cpu" && targetName != "cuda")
      return emitError(module.getLoc(), "convert-gpipe-to-runtime: unknown "
                                        "target '")
                 << targetName << "' (expected cpu or cuda)",
             signalPassFailure();
    std::string precisionName = precision;
    if (precisionName != "fp32" && precisionName != "bf16")
      return emitError(module.getLoc(), "convert-gpipe-to-runtime: unknown "
                                        "precision '")
                 << precisionName << "' (expected fp32 or bf16)",
             signalPassFailure();
    Emitter emitter(module, op, *converted, source, targetName, precisionName);
    if (failed(emitter.run()))
      return signalPassFailure();

    // Only the LLVM dialect remains.
    for (Operation &other :
         llvm::make_early_inc_range(module.getBody()->getOperations()))
      if (other.getDialect() &&
          other.getDialect()->getNamespace() != "llvm")
        other.erase();
  }
};

} // namespace
