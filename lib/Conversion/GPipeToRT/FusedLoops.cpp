//===- FusedLoops.cpp - nn.fused -> scf loops of arith ops ------*- C++ -*-===//
//
// Part of the lowering's emitter; see Emitter.h. An nn.fused becomes an
// scf.for nest over its results' shape: rows (the leading dims) outside,
// and inside the longest run of trailing dims along which every input is
// either contiguous or one repeated value; 8 lanes at a time (vector<8xf32>,
// which the code generator splits to the host's registers), then one at a
// time for the rest. The nest is outlined into its own function,
// `__gpipe_fused.<stage function>.<n>(argv, first row, end row)` (argv: the
// inputs' then the results' addresses), which the code generator optimizes
// (lib/Target: registers, not stack slots, across the loop) while the long
// straight-line stage functions keep its fast instruction selector. The
// stage function calls it on every row at once (gpipe_rt.fused_rows: the
// runtime splits the rows over the rank's kernel threads). Each body
// op is computed with ScalarMath.h's templates on a backend that emits arith
// and math ops: the operations and their order are the kernels', with no
// fast-math flags, so the loop's results are bitwise the kernels'.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "gpipe/Runtime/ScalarMath.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;

namespace {

/// ScalarMath.h's backend that emits arith and math ops on f32 or on a
/// vector of f32.
struct LoopMath {
  using Value = mlir::Value;
  using Mask = mlir::Value;

  OpBuilder &b;
  Location loc;
  Type floatTy; ///< f32 or vector<W x f32>
  Type intTy;   ///< i32 or vector<W x i32>

  Value constant(Type type, Attribute scalar) const {
    if (auto vec = dyn_cast<VectorType>(type))
      return arith::ConstantOp::create(b, loc,
                                       DenseElementsAttr::get(vec, scalar));
    return arith::ConstantOp::create(b, loc, cast<TypedAttr>(scalar));
  }
  Value lit(float c) const { return constant(floatTy, b.getF32FloatAttr(c)); }
  Value add(Value x, Value y) const {
    return arith::AddFOp::create(b, loc, x, y);
  }
  Value sub(Value x, Value y) const {
    return arith::SubFOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) const {
    return arith::MulFOp::create(b, loc, x, y);
  }
  Value div(Value x, Value y) const {
    return arith::DivFOp::create(b, loc, x, y);
  }
  Value neg(Value x) const { return arith::NegFOp::create(b, loc, x); }
  Value sqrt(Value x) const { return math::SqrtOp::create(b, loc, x); }
  Mask lt(Value x, Value y) const {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y);
  }
  Mask gt(Value x, Value y) const {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, y);
  }
  Mask isNan(Value x) const {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  }
  Value select(Mask m, Value x, Value y) const {
    return arith::SelectOp::create(b, loc, m, x, y);
  }
  Value intLit(int32_t c) const {
    return constant(intTy, b.getI32IntegerAttr(c));
  }
  /// (int32(n) + 127) << 23, as float bits: ScalarFloat::exp2i.
  Value exp2i(Value n) const {
    Value i = arith::FPToSIOp::create(b, loc, intTy, n);
    i = arith::AddIOp::create(b, loc, i, intLit(127));
    i = arith::ShLIOp::create(b, loc, i, intLit(23));
    return arith::BitcastOp::create(b, loc, floatTy, i);
  }
};

/// The value of one body op at the loop's current point(s), from its
/// operands' values; failure for an op the loop cannot compute.
FailureOr<Value> computeOp(const LoopMath &m, Operation *op,
                           ArrayRef<Value> in) {
  namespace math = ::gpipe::rt::math;
  using namespace mlir::gpipe::nn;
  return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](AddOp) { return m.add(in[0], in[1]); })
      .Case([&](SubOp) { return m.sub(in[0], in[1]); })
      .Case([&](MulOp) { return m.mul(in[0], in[1]); })
      .Case([&](DivOp) { return m.div(in[0], in[1]); })
      .Case([&](NegOp) { return m.neg(in[0]); })
      .Case([&](ReciprocalOp) { return math::reciprocal(m, in[0]); })
      .Case([&](SqrtOp) { return m.sqrt(in[0]); })
      .Case([&](ExpOp) { return math::exp(m, in[0]); })
      .Case([&](ErfOp) { return math::erf(m, in[0]); })
      .Case([&](TanhOp) { return math::tanh(m, in[0]); })
      .Case([&](SigmoidOp) { return math::sigmoid(m, in[0]); })
      .Case([&](ReluOp) { return math::relu(m, in[0]); })
      .Case([&](GeluOp) { return math::gelu(m, in[0]); })
      .Case([&](GeluGradOp) { return math::geluGrad(m, in[0], in[1]); })
      .Case([&](WhereOp) { return m.select(in[0], in[1], in[2]); })
      .Default([&](Operation *) -> FailureOr<Value> {
        return op->emitOpError("has no loop code (nn.fused holds only the "
                               "ops nn::FusedOp::isFusible accepts)");
      });
}

/// How an input of the loop is read.
struct LoopInput {
  Value base;      ///< its buffer
  bool isBool;     ///< an i1 tensor: one byte per element
  bool contiguous; ///< varies along the inner dims (else one value per row)
  SmallVector<int64_t>
      rowStrides; ///< per outer dim, in elements (0: broadcast)
};

} // namespace

LogicalResult
Emitter::emitFusedLoop(OpBuilder &at, nn::FusedOp fused,
                       llvm::function_ref<Value(Value)> addressOf) {
  constexpr int64_t kLanes = 8;
  Location loc = fused.getLoc();
  ArrayRef<int64_t> shape = shapeOf(fused.getResult(0));
  int64_t rank = shape.size();
  int64_t count = countOf(fused.getResult(0));
  if (count == 0)
    return success();

  // Each input's dims aligned to the result's (missing leading dims: 1).
  SmallVector<SmallVector<int64_t>> dims;
  for (Value in : fused.getInputs()) {
    ArrayRef<int64_t> s = shapeOf(in);
    SmallVector<int64_t> d(rank - s.size(), 1);
    d.append(s.begin(), s.end());
    dims.push_back(std::move(d));
  }
  // The inner dims [split, rank): the longest suffix along which every
  // input is entirely the result's (contiguous) or entirely broadcast.
  auto suffixOk = [&](int64_t split) {
    for (const SmallVector<int64_t> &d : dims) {
      bool full = true, broadcast = true;
      for (int64_t i = split; i < rank; ++i) {
        full &= d[i] == shape[i];
        broadcast &= d[i] == 1;
      }
      if (!full && !broadcast)
        return false;
    }
    return true;
  };
  int64_t split = rank;
  while (split > 0 && suffixOk(split - 1))
    --split;
  // Every input whole or a scalar: any suffix is as good, so the leading
  // dims become rows where the rest still holds at least kMinRowElements,
  // and the runtime can split the rows over the kernel threads (one row
  // runs on the calling thread alone).
  constexpr int64_t kMinRowElements = 512;
  if (split == 0) {
    int64_t suffix = 1;
    for (int64_t i = rank - 1; i > 0 && suffix < kMinRowElements; --i) {
      suffix *= shape[i];
      if (suffix >= kMinRowElements)
        split = i;
    }
  }
  int64_t inner = 1, outer = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < split ? outer : inner) *= shape[i];

  // The outlined function: its argument array's addresses, in order, are
  // the inputs' then the results'; the call passes the whole row range.
  SmallVector<Value> addresses;
  for (Value in : fused.getInputs())
    addresses.push_back(addressOf(in));
  for (Value r : fused.getResults())
    addresses.push_back(addressOf(r));
  // Built outside the stage function's conversion (its return has no
  // status to check), with a plain builder.
  OpBuilder top(ctx);
  top.setInsertionPointToEnd(module.getBody());
  // Named after its stage function, whose name is unique across the
  // training and evaluation modules (--eval merges them).
  StringRef stageName = fused->getParentOfType<func::FuncOp>().getSymName();
  stageName.consume_front("__gpipe_");
  auto outlined =
      func::FuncOp::create(top, loc,
                           (llvm::Twine(gpipe_rt::RTDialect::kFusedLoopPrefix) +
                            stageName + "." + llvm::Twine(fusedLoops++))
                               .str(),
                           FunctionType::get(ctx, {ptrTy, i64Ty, i64Ty}, {}));
  outlined.setPrivate();
  outlined->setAttr("llvm.linkage",
                    LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
  Block *entry = outlined.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  Value argv = entry->getArgument(0);
  SmallVector<Value> loaded;
  for (int64_t i = 0, e = addresses.size(); i < e; ++i) {
    Value slot = LLVM::GEPOp::create(b, loc, ptrTy, ptrTy, argv,
                                     ArrayRef<LLVM::GEPArg>{int32_t(i)});
    loaded.push_back(LLVM::LoadOp::create(b, loc, ptrTy, slot));
  }

  SmallVector<LoopInput> inputs;
  for (auto [value, d, base] : llvm::zip(fused.getInputs(), dims, loaded)) {
    LoopInput in;
    in.base = base;
    in.isBool = cast<ShapedType>(value.getType()).getElementType().isInteger(1);
    in.contiguous = false;
    for (int64_t i = split; i < rank; ++i)
      in.contiguous |= d[i] != 1;
    // Row-major strides of the input's own layout, 0 where it broadcasts.
    SmallVector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    for (int64_t i = rank - 1; i >= 0; --i) {
      strides[i] = d[i] == 1 ? 0 : stride;
      stride *= d[i];
    }
    in.rowStrides.assign(strides.begin(), strides.begin() + split);
    inputs.push_back(std::move(in));
  }
  SmallVector<Value> outputs(loaded.begin() + fused.getNumOperands(),
                             loaded.end());

  // scf.for %iv = lo to hi step step : i64 { body(iv) }, continuing after
  // it.
  auto loop = [&](OpBuilder &b, int64_t lo, int64_t hi, int64_t step,
                  llvm::function_ref<void(OpBuilder &, Value)> body) {
    auto forOp =
        scf::ForOp::create(b, loc, constI64(b, loc, lo), constI64(b, loc, hi),
                           constI64(b, loc, step));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forOp.getBody()->getTerminator());
    body(b, forOp.getInductionVar());
  };

  Block &bodyBlock = fused.getBodyBlock();
  auto yield = cast<nn::YieldOp>(bodyBlock.getTerminator());
  LogicalResult status = success();

  // The body at `lanes` points starting at inner index `i` of the row whose
  // input offsets are `rowOffsets` and output offset `outRow`.
  auto compute = [&](OpBuilder &b, int64_t lanes, ArrayRef<Value> rowOffsets,
                     Value outRow, Value i) {
    Type floatTy = lanes > 1 ? Type(VectorType::get({lanes}, f32Ty)) : f32Ty;
    Type intTy = lanes > 1 ? Type(VectorType::get({lanes}, i32Ty)) : i32Ty;
    Type byteTy = lanes > 1 ? Type(VectorType::get({lanes}, i8Ty)) : i8Ty;
    LoopMath m{b, loc, floatTy, intTy};
    auto splat = [&](Value scalar, Type vecTy) -> Value {
      if (lanes == 1)
        return scalar;
      return vector::BroadcastOp::create(b, loc, vecTy, scalar);
    };
    llvm::DenseMap<Value, Value> values;
    for (auto [arg, in, rowOffset] :
         llvm::zip(bodyBlock.getArguments(), inputs, rowOffsets)) {
      Value index =
          in.contiguous
              ? arith::AddIOp::create(b, loc, rowOffset, i).getResult()
              : rowOffset;
      Type elemTy = in.isBool ? i8Ty : f32Ty;
      Value v;
      if (in.contiguous) {
        v = gpipe_rt::LoadOp::create(b, loc, in.isBool ? byteTy : floatTy,
                                     in.base, index);
      } else {
        v = gpipe_rt::LoadOp::create(b, loc, elemTy, in.base, index);
        v = splat(v, in.isBool ? byteTy : floatTy);
      }
      if (in.isBool)
        v = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                  m.constant(byteTy, b.getI8IntegerAttr(0)));
      values[arg] = v;
    }
    for (Operation &op : bodyBlock.without_terminator()) {
      SmallVector<Value> operands;
      for (Value v : op.getOperands())
        operands.push_back(values.lookup(v));
      FailureOr<Value> r = computeOp(m, &op, operands);
      if (failed(r)) {
        status = failure();
        return;
      }
      values[op.getResult(0)] = *r;
    }
    Value index = arith::AddIOp::create(b, loc, outRow, i);
    for (auto [yielded, out] : llvm::zip(yield.getValues(), outputs))
      gpipe_rt::StoreOp::create(b, loc, values.lookup(yielded), out, index);
  };

  // One row: the inputs' offsets from the row index `o`, then the lanes.
  auto row = [&](OpBuilder &b, Value o) {
    SmallVector<Value> rowOffsets;
    for (const LoopInput &in : inputs) {
      Value offset = constI64(b, loc, 0);
      int64_t below = 1; // the product of the outer dims after d
      for (int64_t d = split - 1; d >= 0; --d) {
        if (in.rowStrides[d] != 0 && shape[d] != 1) {
          Value idx =
              arith::DivUIOp::create(b, loc, o, constI64(b, loc, below));
          idx = arith::RemUIOp::create(b, loc, idx, constI64(b, loc, shape[d]));
          idx = arith::MulIOp::create(b, loc, idx,
                                      constI64(b, loc, in.rowStrides[d]));
          offset = arith::AddIOp::create(b, loc, offset, idx);
        }
        below *= shape[d];
      }
      rowOffsets.push_back(offset);
    }
    Value outRow = arith::MulIOp::create(b, loc, o, constI64(b, loc, inner));
    int64_t vectorEnd = inner - inner % kLanes;
    if (vectorEnd > 0)
      loop(b, 0, vectorEnd, kLanes, [&](OpBuilder &b, Value i) {
        compute(b, kLanes, rowOffsets, outRow, i);
      });
    if (vectorEnd < inner)
      loop(b, vectorEnd, inner, 1, [&](OpBuilder &b, Value i) {
        compute(b, 1, rowOffsets, outRow, i);
      });
  };
  // The rows [first, end) the call asks for.
  auto rows = scf::ForOp::create(b, loc, entry->getArgument(1),
                                 entry->getArgument(2), constI64(b, loc, 1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(rows.getBody()->getTerminator());
    row(b, rows.getInductionVar());
  }
  func::ReturnOp::create(b, loc);
  if (failed(status))
    return failure();

  // One row: a direct call; more: the runtime's, which may split them over
  // the rank's kernel threads.
  Value argArray = gpipe_rt::PtrArrayOp::create(at, loc, addresses);
  if (outer == 1)
    func::CallOp::create(
        at, loc, outlined,
        ValueRange{argArray, constI64(at, loc, 0), constI64(at, loc, outer)});
  else
    gpipe_rt::FusedRowsOp::create(at, loc, outlined.getSymName(), argArray,
                                  outer, inner);
  return success();
}
