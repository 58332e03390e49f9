//===- StageFunctions.cpp - Stage functions to gpipe_rt calls ---*- C++ -*-===//
//
// Part of the lowering's emitter; see Emitter.h. Each stage function is
// checked against its frame and cloned to `__gpipe_<name>`; the clones are
// then converted by the patterns below, one per op family:
//
//   func.func                 (tensors) -> (tensors)  becomes
//                             (rank, mb, scratch, params, grads, first,
//                              args..., results...) -> i32, internal
//   nn.layer, gpipe.remat     their bodies inlined in place
//   nn.param                  an address in the stage's parameters
//   nn.constant               read-only bytes (gpipe_rt.bytes)
//   nn.reshape, nn.unsqueeze  their input's address (views)
//   nn.fused                  scf loops of arith/math/vector (FusedLoops.cpp)
//   ops with a kernel         gpipe_rt.kernel calls, as their
//                             KernelCallOpInterface model builds them, at
//                             their results' planned addresses
//   func.return               copies into the result buffers, the loss
//                             report, gradient accumulation; returns 0
//
// Every tensor becomes the `!llvm.ptr` of its bytes; where each result
// lives is the memory plan's (`gpipe.offsets` on its op).
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;

//===----------------------------------------------------------------------===//
// Preparation: what the patterns need, from the function as planned
//===----------------------------------------------------------------------===//

FailureOr<LoweredFunction> Emitter::lowerStageFunction(func::FuncOp source,
                                                       StageFunctionKind kind,
                                                       int64_t stage) {
  if (source.isExternal() || !source.getBody().hasOneBlock())
    return mlir::emitError(source.getLoc())
               << "@" << source.getSymName()
               << " needs a single-block body to be compiled",
           failure();
  // The frame the memory plan wrote: where every value lives.
  auto frame = source->getAttrOfType<FrameAttr>(GPipeDialect::kFrameAttrName);
  if (!frame)
    return mlir::emitError(source.getLoc())
               << "@" << source.getSymName()
               << " has no frame (gpipe.frame); run gpipe-plan-memory first",
           failure();

  // The clone the patterns convert in place; the source stays for the
  // metadata and goes with the module's other input.
  OpBuilder at(ctx);
  at.setInsertionPointToEnd(module.getBody());
  auto func = cast<func::FuncOp>(at.clone(*source));
  func.setSymName(("__gpipe_" + source.getSymName()).str());

  LoweredFunction lowered;
  lowered.source = source;
  lowered.func = func;
  lowered.buffers.scratchBytes = frame.getSize();
  lowered.buffers.seedOffsets.assign(frame.getSeeds().asArrayRef().begin(),
                                     frame.getSeeds().asArrayRef().end());
  FunctionLiveness liveness(func);
  for (Operation *op : liveness.getOps()) {
    auto offsets =
        op->getAttrOfType<DenseI64ArrayAttr>(GPipeDialect::kOffsetsAttrName);
    if (!offsets)
      continue;
    for (auto [result, offset] :
         llvm::zip(op->getResults(), offsets.asArrayRef())) {
      if (offset <= -2)
        lowered.buffers.routed[result] = static_cast<unsigned>(-2 - offset);
      else if (offset >= 0)
        lowered.buffers.offsets[result] = offset;
    }
  }
  FunctionType type = func.getFunctionType();
  lowered.numArgs = type.getNumInputs();
  lowered.numResults = type.getNumResults();

  StageFunctionInfo info;
  info.kind = kind;
  info.stage = stage;
  info.last = stage + 1 == int64_t(converted.stages.size());
  info.sourceName = source.getSymName();
  info.numArgs = lowered.numArgs;
  info.numResults = lowered.numResults;
  for (auto [value, result] : lowered.buffers.routed)
    if (result >= lowered.numResults)
      return mlir::emitError(value.getLoc())
                 << "@" << source.getSymName() << ": gpipe.offsets routes a "
                 << "value to result " << result << " of "
                 << lowered.numResults,
             failure();

  const StageParams &sp = stageParams[stage];
  // The weight gradients a GEMM accumulates in place (result index -> the
  // parameter's offset in the gradient buffer): computed into the rank's
  // gradients, not accumulated after the return. Only where the memory
  // plan routed them (a plan made without it placed them in scratch).
  info.paramGrads =
      func->getAttrOfType<ArrayAttr>(nn::NNDialect::kParamGradsAttrName);
  // A backward returns its input gradients (none on stage 0) first.
  auto inputGrads = func->getAttrOfType<DenseI64ArrayAttr>("nn.input_grads");
  info.numInputGrads = inputGrads ? inputGrads.size() : (stage > 0);
  auto paramOffset = [&](StringRef name) -> FailureOr<int64_t> {
    auto it = sp.params.find(name);
    if (it == sp.params.end())
      return mlir::emitError(source.getLoc())
                 << "@" << source.getSymName() << " returns the gradient of @"
                 << name << ", which its stage's forward does not read",
             failure();
    return it->second.first;
  };
  if (kind == StageFunctionKind::Backward && info.paramGrads)
    for (auto [index, gemm] :
         nn::NNDialect::getAccumulatingGemms(func, info.numInputGrads)) {
      auto routed = lowered.buffers.routed.find(gemm->getResult(0));
      if (routed == lowered.buffers.routed.end() || routed->second != index)
        continue;
      FailureOr<int64_t> offset = paramOffset(
          cast<FlatSymbolRefAttr>(info.paramGrads[index - info.numInputGrads])
              .getValue());
      if (failed(offset))
        return failure();
      info.accumulatedAt[index] = *offset;
      info.accumulatingGemms.insert(gemm);
    }

  // Per-layer timing marks: gpipe_rt_layer(rank, 2 x layer + recomputing)
  // wherever the layer (or recomputing) changes, before the op's kernels.
  // An op of no layer (the loss) belongs to the layer before it.
  int64_t currentMark = -1;
  for (Operation *op : liveness.getOps()) {
    if (isa<func::ReturnOp, nn::YieldOp, YieldOp, nn::ParamOp, nn::ConstantOp,
            nn::ReshapeOp, nn::UnsqueezeOp>(op))
      continue;
    StringAttr layer = nn::getLayerOf(op);
    if (layer)
      info.layerOf[op] = layer;
    auto it = layer ? layerIndex.find(layer) : layerIndex.end();
    if (it == layerIndex.end())
      continue;
    bool recomputing = op->getParentOfType<RematOp>() != nullptr;
    int64_t mark = 2 * it->second + (recomputing ? 1 : 0);
    if (mark != currentMark)
      info.layerMarks[op] = currentMark = mark;
  }

  // The results: which are computed in place, and whether they are what
  // the function's kind returns.
  SmallVector<Value> returned = liveness.getReturned();
  for (auto [i, v] : llvm::enumerate(returned)) {
    auto routed = lowered.buffers.routed.find(v);
    info.resultInPlace.push_back(routed != lowered.buffers.routed.end() &&
                                 routed->second == i);
  }
  if (kind == StageFunctionKind::Backward) {
    // An input half returns, after its input gradient, the values it hands
    // to the weight half: copied into the Deferred buffer.
    info.numDeferred =
        info.paramGrads ? 0 : nn::NNDialect::getDeferredCount(func);
    size_t size = returned.size();
    if (info.numDeferred > size - std::min<size_t>(info.numInputGrads, size))
      return mlir::emitError(source.getLoc())
                 << "@" << source.getSymName() << " returns " << size
                 << " results, fewer than its " << info.numInputGrads
                 << " input gradients and " << info.numDeferred
                 << " handed-over values (nn.deferred_count)",
             failure();
    if (!info.paramGrads && size > info.numInputGrads + info.numDeferred)
      return mlir::emitError(source.getLoc())
                 << "@" << source.getSymName() << " returns " << size
                 << " results but lists no nn.param_grads for the "
                 << size - info.numInputGrads - info.numDeferred
                 << " after its input gradient",
             failure();
    if (info.numInputGrads > 1 ||
        (info.paramGrads &&
         info.paramGrads.size() + info.numInputGrads != size))
      return mlir::emitError(source.getLoc())
                 << "@" << source.getSymName()
                 << " must return at most one input gradient followed by "
                    "one gradient per nn.param_grads entry",
             failure();
    if (info.paramGrads)
      for (Attribute name : info.paramGrads)
        if (failed(paramOffset(cast<FlatSymbolRefAttr>(name).getValue())))
          return failure();
  }
  stageInfos[func] = std::move(info);
  return lowered;
}

void Emitter::emitKernel(OpBuilder &at, Location loc, StringRef kernel,
                         ValueRange args, int64_t site, Value rank) {
  Value status = gpipe_rt::KernelOp::create(at, loc, i32Ty, kernel, args);
  gpipe_rt::CheckOp::create(at, loc, status, at.getI64IntegerAttr(site), rank);
}

void Emitter::emitReportOutput(OpBuilder &at, Location loc, Value rank,
                               Value mb, Value value, int64_t bytes) {
  Value status = gpipe_rt::ReportOutputOp::create(
      at, loc, i32Ty, rank, mb, value, constI64(at, loc, bytes));
  gpipe_rt::CheckOp::create(at, loc, status, IntegerAttr(), Value());
}

//===----------------------------------------------------------------------===//
// The patterns
//===----------------------------------------------------------------------===//

namespace {

/// The converted stage function's arguments:
/// (rank, mb, scratch, params, grads, first, args..., results...).
struct StageFrame {
  enum : unsigned { Rank, Microbatch, Scratch, Params, Grads, First, Args };

  StageFrame(func::FuncOp func, const StageFunctionInfo &info)
      : func(func), info(info) {}
  Value get(unsigned i) const { return func.getArgument(i); }
  Value rank() const { return get(Rank); }
  Value result(unsigned i) const { return get(Args + info.numArgs + i); }

  /// Mutable: an op handle's accessors are not const.
  mutable func::FuncOp func;
  const StageFunctionInfo &info;
};

/// The stage function `op` is in (being converted), or failure.
FailureOr<StageFrame> getFrame(Emitter &emitter, Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  auto it = func ? emitter.stageInfos.find(func) : emitter.stageInfos.end();
  if (it == emitter.stageInfos.end())
    return failure();
  return StageFrame(func, it->second);
}

/// A site for a call made on behalf of `op`.
llvm::json::Object siteFor(Operation *op, StringRef what,
                           const StageFunctionInfo &info) {
  llvm::json::Object site{{"op", what.str()},
                          {"loc", locationString(op->getLoc())},
                          {"function", info.sourceName.str()}};
  if (StringAttr layer = info.layerOf.lookup(op))
    site["layer"] = layer.str();
  return site;
}

template <typename OpT> struct StagePattern : OpConversionPattern<OpT> {
  StagePattern(const TypeConverter &converter, MLIRContext *ctx,
               Emitter &emitter, PatternBenefit benefit = 1)
      : OpConversionPattern<OpT>(converter, ctx, benefit), emitter(emitter) {}
  Emitter &emitter;
};

/// The signature: tensors in and out become addresses in, the results
/// written through the trailing ones, and a status out.
struct FunctionLowering : StagePattern<func::FuncOp> {
  using StagePattern::StagePattern;
  LogicalResult
  matchAndRewrite(func::FuncOp func, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto it = emitter.stageInfos.find(func);
    if (it == emitter.stageInfos.end())
      return failure();
    const StageFunctionInfo &info = it->second;
    MLIRContext *ctx = getContext();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    TypeConverter::SignatureConversion signature(info.numArgs);
    signature.addInputs({ptr, i64, ptr, ptr, ptr, i32});
    for (unsigned i = 0; i < info.numArgs; ++i)
      signature.addInputs(i, ptr);
    signature.addInputs(SmallVector<Type>(info.numResults, ptr));
    rewriter.applySignatureConversion(&func.getBody().front(), signature,
                                      getTypeConverter());
    // Only the name, the new type and the linkage remain: the frame, the
    // gradient lists and the argument attributes were the tensors'.
    rewriter.modifyOpInPlace(func, [&] {
      NamedAttrList attrs;
      attrs.append(func.getSymNameAttrName(), func.getSymNameAttr());
      attrs.append(func.getFunctionTypeAttrName(),
                   TypeAttr::get(FunctionType::get(
                       ctx, signature.getConvertedTypes(), {i32})));
      attrs.append("llvm.linkage",
                   LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
      func->setAttrs(attrs.getDictionary(ctx));
    });
    return success();
  }
};

/// nn.layer and gpipe.remat: their bodies, in place.
template <typename OpT> struct RegionInlining : StagePattern<OpT> {
  using StagePattern<OpT>::StagePattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Block &body = op->getRegion(0).front();
    Operation *terminator = body.getTerminator();
    SmallVector<Value> yielded(terminator->getOperands());
    rewriter.eraseOp(terminator);
    rewriter.inlineBlockBefore(&body, op, op->getOperands());
    rewriter.replaceOp(op, yielded);
    return success();
  }
};

/// A parameter read: its place among the stage's parameters.
struct ParamLowering : StagePattern<nn::ParamOp> {
  using StagePattern::StagePattern;
  LogicalResult
  matchAndRewrite(nn::ParamOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<StageFrame> frame = getFrame(emitter, op);
    if (failed(frame))
      return failure();
    const StageParams &sp = emitter.getStageParams(frame->info.stage);
    auto it = sp.params.find(op.getName());
    if (it == sp.params.end())
      return op.emitError()
             << "@" << frame->info.sourceName << " reads parameter @"
             << op.getName() << ", which its stage's forward does not read";
    rewriter.replaceOp(op, offsetAddress(rewriter, op.getLoc(),
                                         frame->get(StageFrame::Params),
                                         it->second.first));
    return success();
  }
};

/// A constant: its bytes, read-only.
struct ConstantLowering : StagePattern<nn::ConstantOp> {
  using StagePattern::StagePattern;
  LogicalResult
  matchAndRewrite(nn::ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<std::vector<char>> value =
        nn::getElementsBytes(op.getValue(), [&] { return op.emitOpError(); });
    if (failed(value))
      return failure();
    rewriter.replaceOpWithNewOp<gpipe_rt::BytesOp>(
        op, StringRef(value->data(), value->size()));
    return success();
  }
};

/// A view: its input's bytes.
template <typename OpT> struct ViewLowering : StagePattern<OpT> {
  using StagePattern<OpT>::StagePattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

/// Where each result of `op` lives: its planned scratch offset, its result
/// buffer (routed), or its parameter's gradient (accumulated in place).
SmallVector<Value> resultAddresses(Operation *op, const StageFrame &frame,
                                   OpBuilder &at) {
  auto offsets =
      op->getAttrOfType<DenseI64ArrayAttr>(GPipeDialect::kOffsetsAttrName);
  Value scratch = frame.get(StageFrame::Scratch);
  SmallVector<Value> addresses;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    int64_t offset = offsets && i < offsets.size() ? offsets[i] : -1;
    if (offset >= 0) {
      addresses.push_back(offsetAddress(at, op->getLoc(), scratch, offset));
    } else if (offset <= -2) {
      unsigned result = unsigned(-2 - offset);
      auto acc = frame.info.accumulatedAt.find(result);
      addresses.push_back(acc != frame.info.accumulatedAt.end()
                              ? offsetAddress(at, op->getLoc(),
                                              frame.get(StageFrame::Grads),
                                              acc->second)
                              : frame.result(result));
    } else {
      addresses.push_back(scratch); // empty tensors
    }
  }
  return addresses;
}

/// Emits the layer mark that goes before `op`, if any.
void markLayer(Operation *op, const StageFrame &frame, OpBuilder &at) {
  auto mark = frame.info.layerMarks.find(op);
  if (mark == frame.info.layerMarks.end())
    return;
  gpipe_rt::LayerOp::create(
      at, op->getLoc(), frame.rank(),
      arith::ConstantIntOp::create(at, op->getLoc(), mark->second, 64));
}

/// Each operand's and result's address (converted operands, planned
/// results), for building a call on them.
llvm::DenseMap<Value, Value> addressesOf(ValueRange values, ValueRange operands,
                                         ValueRange resultValues,
                                         ValueRange results) {
  llvm::DenseMap<Value, Value> address;
  for (auto [value, converted] : llvm::zip(values, operands))
    address[value] = converted;
  for (auto [value, converted] : llvm::zip(resultValues, results))
    address[value] = converted;
  return address;
}

/// nn.fused: a host loop (CPU only).
struct FusedLowering : StagePattern<nn::FusedOp> {
  using StagePattern::StagePattern;
  LogicalResult
  matchAndRewrite(nn::FusedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<StageFrame> frame = getFrame(emitter, op);
    if (failed(frame))
      return failure();
    if (emitter.getTarget() != TargetKind::CPU)
      return op.emitOpError("is a host loop; the ")
             << emitter.getTargetName() << " target runs kernels only (compile "
             << "with --fuse=false, as gpipe-compile does for it)";
    SmallVector<Value> results = resultAddresses(op, *frame, rewriter);
    markLayer(op, *frame, rewriter);
    llvm::DenseMap<Value, Value> address = addressesOf(
        op.getInputs(), adaptor.getInputs(), op.getResults(), results);
    if (failed(emitter.emitFusedLoop(
            rewriter, op, [&](Value v) { return address.lookup(v); })))
      return failure();
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// An op with a kernel (KernelCallOpInterface): the kernel call its model
/// builds, on its operands' and results' addresses.
struct KernelCallLowering
    : OpInterfaceConversionPattern<KernelCallOpInterface> {
  KernelCallLowering(const TypeConverter &converter, MLIRContext *ctx,
                     Emitter &emitter)
      : OpInterfaceConversionPattern(converter, ctx), emitter(emitter) {}

  LogicalResult
  matchAndRewrite(KernelCallOpInterface kernelOp, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *op = kernelOp;
    FailureOr<StageFrame> frame = getFrame(emitter, op);
    if (failed(frame))
      return failure();
    const StageFunctionInfo &info = frame->info;
    KernelCallOptions options{"CPU code generator", emitter.isBF16()};
    FailureOr<KernelCall> call = info.accumulatingGemms.contains(op)
                                     ? getAccumulatingGemmCall(op, options)
                                     : kernelOp.getKernelCall(options);
    if (failed(call))
      return failure();
    Location loc = op->getLoc();
    SmallVector<Value> results = resultAddresses(op, *frame, rewriter);
    markLayer(op, *frame, rewriter);
    llvm::DenseMap<Value, Value> address =
        addressesOf(op->getOperands(), operands, op->getResults(), results);
    // Training's last forward hands its prediction (the logits the loss
    // reads) to the runtime before the loss: what `gpipe-run
    // --save-outputs` writes.
    if (info.kind == StageFunctionKind::Forward && info.last &&
        isa<nn::CrossEntropyOp, nn::MSEOp>(op))
      emitter.emitReportOutput(rewriter, loc, frame->rank(),
                               frame->get(StageFrame::Microbatch), operands[0],
                               getValueBytes(op->getOperand(0).getType()));
    FailureOr<SmallVector<Value>> args =
        getArguments(op, *call, address, *frame, rewriter);
    if (failed(args))
      return failure();
    StringRef kernel = call->signature().name;
    emitter.emitKernel(
        rewriter, loc, kernel, *args,
        emitter.newSite(siteFor(op, op->getName().getStringRef(), info)),
        frame->rank());
    rewriter.replaceOp(op, results);
    return success();
  }

private:
  /// One value per kernel argument, of the type the kernel's signature
  /// gives.
  static FailureOr<SmallVector<Value>>
  getArguments(Operation *op, const KernelCall &call,
               const llvm::DenseMap<Value, Value> &address,
               const StageFrame &frame, OpBuilder &at) {
    Location loc = op->getLoc();
    SmallVector<Type> types =
        *gpipe_rt::getKernelParamTypes(op->getContext(), call.signature().name);
    auto addressOf = [&](Value v) -> FailureOr<Value> {
      Value a = address.lookup(v);
      if (!a)
        return op->emitOpError("passes its kernel a value that is neither an "
                               "operand nor a result"),
               failure();
      return a;
    };
    SmallVector<Value> args;
    for (auto [type, a] : llvm::zip_equal(types, call.args)) {
      switch (a.kind) {
      case KernelArg::Buffer: {
        FailureOr<Value> v = addressOf(a.value);
        if (failed(v))
          return failure();
        args.push_back(*v);
        break;
      }
      case KernelArg::Null:
        args.push_back(gpipe_rt::NullOp::create(at, loc));
        break;
      case KernelArg::Int:
        args.push_back(arith::ConstantOp::create(
            at, loc, at.getIntegerAttr(type, a.integer)));
        break;
      case KernelArg::Real:
        args.push_back(arith::ConstantOp::create(
            at, loc, cast<TypedAttr>(at.getFloatAttr(type, a.real))));
        break;
      case KernelArg::AccumulateBeta: {
        // 0 on the step's first micro-batch (the gradient starts), else 1.
        // Each operand named first: the order of a call's arguments is
        // unspecified, and the IR must not depend on the compiler.
        Value zeroI32 = arith::ConstantIntOp::create(at, loc, 0, 32);
        Value isFirst =
            arith::CmpIOp::create(at, loc, arith::CmpIPredicate::ne,
                                  frame.get(StageFrame::First), zeroI32);
        Value zero = arith::ConstantOp::create(
            at, loc, cast<TypedAttr>(at.getFloatAttr(type, 0.0)));
        Value one = arith::ConstantOp::create(
            at, loc, cast<TypedAttr>(at.getFloatAttr(type, 1.0)));
        args.push_back(arith::SelectOp::create(at, loc, isFirst, zero, one));
        break;
      }
      case KernelArg::RngKey:
        args.push_back(
            gpipe_rt::RngKeyOp::create(at, loc, at.getI64Type(), frame.rank(),
                                       frame.get(StageFrame::Microbatch)));
        break;
      case KernelArg::Ints:
        args.push_back(gpipe_rt::IntsOp::create(at, loc, a.ints));
        break;
      case KernelArg::Buffers:
      case KernelArg::IntsList: {
        SmallVector<Value> elements;
        for (Value v : a.values) {
          FailureOr<Value> e = addressOf(v);
          if (failed(e))
            return failure();
          elements.push_back(*e);
        }
        for (ArrayRef<int64_t> ints : a.intsList)
          elements.push_back(gpipe_rt::IntsOp::create(at, loc, ints));
        args.push_back(gpipe_rt::PtrArrayOp::create(at, loc, elements));
        break;
      }
      }
    }
    return args;
  }

  Emitter &emitter;
};

/// An nn op nothing else converts: no kernel computes it.
struct UnsupportedOp : ConversionPattern {
  UnsupportedOp(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/0, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value>,
                                ConversionPatternRewriter &) const override {
    // The others have patterns of their own, which report their errors.
    if (isa<nn::NNDialect>(op->getDialect()) &&
        !isa<KernelCallOpInterface, nn::ParamOp, nn::ConstantOp, nn::ReshapeOp,
             nn::UnsqueezeOp, nn::LayerOp, nn::YieldOp, nn::FusedOp>(op))
      op->emitOpError("is not supported by the CPU code generator");
    return failure();
  }
};

/// The return: what the function's kind hands back, then status 0.
struct ReturnLowering : StagePattern<func::ReturnOp> {
  using StagePattern::StagePattern;
  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<StageFrame> frame = getFrame(emitter, op);
    if (failed(frame))
      return failure();
    const StageFunctionInfo &info = frame->info;
    Location loc = op.getLoc();
    ValueRange returned = adaptor.getOperands();
    Value rank = frame->rank(), mb = frame->get(StageFrame::Microbatch);
    // Copies result `i` into its buffer unless it was computed there.
    auto copyOut = [&](unsigned i) -> LogicalResult {
      if (info.resultInPlace[i])
        return success();
      Value v = op.getOperand(i);
      FailureOr<int64_t> dtype = dtypeOf(op, v);
      if (failed(dtype))
        return failure();
      emitter.emitKernel(
          rewriter, loc, "copy",
          ValueRange{emitter.constI32(rewriter, loc, *dtype), returned[i],
                     frame->result(i),
                     emitter.constI64(rewriter, loc, countOf(v))},
          emitter.newSite(siteFor(op, "copy", info)), rank);
      return success();
    };
    if (info.kind == StageFunctionKind::Forward) {
      for (unsigned i = 0; i < returned.size(); ++i) {
        if (i == 0 && info.last && emitter.pipeline.isForwardOnly()) {
          // The prediction of an inference pipeline: reported, not stored.
          emitter.emitReportOutput(rewriter, loc, rank, mb, returned[i],
                                   getValueBytes(op.getOperand(i).getType()));
          continue;
        }
        if (i == 0 && info.last) {
          // The loss: reported, not stored; a failing callback returns at
          // once.
          Value status = gpipe_rt::ReportLossOp::create(
              rewriter, loc, rewriter.getI32Type(), rank, mb, returned[i]);
          gpipe_rt::CheckOp::create(rewriter, loc, status, IntegerAttr(),
                                    Value());
          continue;
        }
        if (failed(copyOut(i)))
          return failure();
      }
    } else {
      // Input gradients and handed-over values are copied out; parameter
      // gradients are added into the rank's gradients (unless their GEMM
      // did).
      for (unsigned i = 0; i < info.numInputGrads + info.numDeferred; ++i)
        if (failed(copyOut(i)))
          return failure();
      const StageParams &sp = emitter.getStageParams(info.stage);
      for (unsigned k = 0; info.paramGrads && k < info.paramGrads.size(); ++k) {
        unsigned i = info.numInputGrads + k;
        if (info.accumulatedAt.count(i))
          continue;
        StringRef name = cast<FlatSymbolRefAttr>(info.paramGrads[k]).getValue();
        auto [offset, count] = sp.params.lookup(name);
        emitter.emitKernel(
            rewriter, loc, "accumulate_f32",
            ValueRange{offsetAddress(rewriter, loc,
                                     frame->get(StageFrame::Grads), offset),
                       returned[i], emitter.constI64(rewriter, loc, count),
                       frame->get(StageFrame::First)},
            emitter.newSite(siteFor(op, "accumulate @" + name.str(), info)),
            rank);
      }
    }
    rewriter.replaceOpWithNewOp<func::ReturnOp>(
        op, ValueRange{emitter.constI32(rewriter, loc, 0)});
    return success();
  }
};

} // namespace

LogicalResult Emitter::convertStageFunctions() {
  TypeConverter converter;
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([&](RankedTensorType) { return ptrTy; });

  RewritePatternSet patterns(ctx);
  patterns.add<FunctionLowering, RegionInlining<nn::LayerOp>,
               RegionInlining<RematOp>, ParamLowering, ConstantLowering,
               ViewLowering<nn::ReshapeOp>, ViewLowering<nn::UnsqueezeOp>,
               FusedLowering, ReturnLowering>(converter, ctx, *this,
                                              /*benefit=*/2);
  patterns.add<KernelCallLowering>(converter, ctx, *this);
  patterns.add<UnsupportedOp>(converter, ctx);

  ConversionTarget target(*ctx);
  target.addLegalDialect<gpipe_rt::RTDialect, arith::ArithDialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *op) {
    return !isa<nn::NNDialect, GPipeDialect>(op->getDialect());
  });
  target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
    return !stageInfos.contains(func) || func->hasAttr("llvm.linkage");
  });
  target.addDynamicallyLegalOp<func::ReturnOp>([&](func::ReturnOp op) {
    return op->getNumOperands() == 1 && op.getOperand(0).getType() == i32Ty;
  });

  SmallVector<Operation *> functions;
  for (auto &[func, info] : stageInfos)
    functions.push_back(func);
  // One order for the sites, whatever the map's.
  llvm::sort(functions,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return applyPartialConversion(functions, target, std::move(patterns));
}
