//===- StageFunctions.cpp - Stage functions to gpipe_rt calls ---*- C++ -*-===//
//
// Part of the lowering's emitter; see Emitter.h.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;

FailureOr<LoweredFunction> Emitter::lowerStageFunction(func::FuncOp func,
                                                       StageFunctionKind kind,
                                                       int64_t stage) {
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
  // The frame the memory plan wrote: where every value lives.
  auto frame = func->getAttrOfType<FrameAttr>(GPipeDialect::kFrameAttrName);
  if (!frame)
    return mlir::emitError(func.getLoc())
               << "@" << func.getSymName()
               << " has no frame (gpipe.frame); run gpipe-plan-memory first",
           failure();
  lowered.buffers.scratchBytes = frame.getSize();
  lowered.buffers.seedOffsets.assign(frame.getSeeds().asArrayRef().begin(),
                                     frame.getSeeds().asArrayRef().end());
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

  // (rank, mb, scratch, params, grads, first, args..., results...) -> i32,
  // internal to the library.
  SmallVector<Type> argTypes = {ptrTy, i64Ty, ptrTy, ptrTy, ptrTy, i32Ty};
  for (unsigned i = 0; i < lowered.numArgs + lowered.numResults; ++i)
    argTypes.push_back(ptrTy);
  OpBuilder at(ctx);
  at.setInsertionPointToEnd(module.getBody());
  Location loc = func.getLoc();
  auto rtFunc =
      func::FuncOp::create(at, loc, ("__gpipe_" + func.getSymName()).str(),
                           FunctionType::get(ctx, argTypes, {i32Ty}));
  rtFunc->setAttr("llvm.linkage",
                  LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
  lowered.func = rtFunc;
  Block *entry = rtFunc.addEntryBlock();
  Value rank = entry->getArgument(0), mb = entry->getArgument(1);
  Value scratch = entry->getArgument(2), params = entry->getArgument(3);
  Value grads = entry->getArgument(4), first = entry->getArgument(5);
  auto argPtr = [&](unsigned i) { return entry->getArgument(6 + i); };
  auto resultPtr = [&](unsigned i) {
    return entry->getArgument(6 + lowered.numArgs + i);
  };

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

  // A failed kernel call reports its site and returns its status.
  auto newSite = [&](llvm::json::Object info) {
    sites.push_back(std::move(info));
    return int64_t(sites.size() - 1);
  };
  auto emitKernel = [&](Location l, StringRef kernel, ValueRange args,
                        int64_t site) {
    Value status = gpipe_rt::KernelOp::create(at, l, i32Ty, kernel, args);
    gpipe_rt::CheckOp::create(at, l, status, at.getI64IntegerAttr(site), rank);
  };

  // One gpipe_rt.kernel per kernel call, its types from the kernel's
  // signature.
  auto callKernel = [&](Operation *op, const KernelCall &call) {
    Location opLoc = op->getLoc();
    const ::gpipe::abi::KernelSignature &signature = call.signature();
    SmallVector<Type> types =
        *gpipe_rt::getKernelParamTypes(ctx, signature.name);
    SmallVector<Value> args;
    for (auto [type, a] : llvm::zip_equal(types, call.args)) {
      switch (a.kind) {
      case KernelArg::Buffer:
        args.push_back(addressOf(a.value));
        break;
      case KernelArg::Null:
        args.push_back(gpipe_rt::NullOp::create(at, opLoc));
        break;
      case KernelArg::Int:
        args.push_back(arith::ConstantOp::create(
            at, opLoc, at.getIntegerAttr(type, a.integer)));
        break;
      case KernelArg::Real:
        args.push_back(arith::ConstantOp::create(
            at, opLoc, cast<TypedAttr>(at.getFloatAttr(type, a.real))));
        break;
      case KernelArg::AccumulateBeta: {
        // 0 on the step's first micro-batch (the gradient starts), else 1.
        // Each operand named first: the order of a call's arguments is
        // unspecified, and the IR must not depend on the compiler.
        Value zeroI32 = constI32(at, opLoc, 0);
        Value isFirst = arith::CmpIOp::create(
            at, opLoc, arith::CmpIPredicate::ne, first, zeroI32);
        Value zero = arith::ConstantOp::create(
            at, opLoc, cast<TypedAttr>(at.getFloatAttr(type, 0.0)));
        Value one = arith::ConstantOp::create(
            at, opLoc, cast<TypedAttr>(at.getFloatAttr(type, 1.0)));
        args.push_back(arith::SelectOp::create(at, opLoc, isFirst, zero, one));
        break;
      }
      case KernelArg::RngKey:
        args.push_back(gpipe_rt::RngKeyOp::create(at, opLoc, i64Ty, rank, mb));
        break;
      case KernelArg::Ints:
        args.push_back(gpipe_rt::IntsOp::create(at, opLoc, a.ints));
        break;
      case KernelArg::Buffers:
      case KernelArg::IntsList: {
        SmallVector<Value> elements;
        if (a.kind == KernelArg::Buffers)
          for (Value v : a.values)
            elements.push_back(addressOf(v));
        else
          for (ArrayRef<int64_t> ints : a.intsList)
            elements.push_back(gpipe_rt::IntsOp::create(at, opLoc, ints));
        args.push_back(gpipe_rt::PtrArrayOp::create(at, opLoc, elements));
        break;
      }
      }
    }
    llvm::json::Object siteInfo{{"op", op->getName().getStringRef().str()},
                                {"loc", locationString(opLoc)},
                                {"function", func.getSymName().str()}};
    if (StringAttr layer = nn::getLayerOf(op))
      siteInfo["layer"] = layer.str();
    emitKernel(opLoc, signature.name, args, newSite(std::move(siteInfo)));
  };

  // Copies `v` into `dest` (a kernel call of its own site).
  auto copyTo = [&](Operation *anchor, Value v, Value dest) -> LogicalResult {
    FailureOr<std::pair<int64_t, int64_t>> dc = dtypeAndCount(anchor, v);
    if (failed(dc))
      return failure();
    Location l = anchor->getLoc();
    int64_t site =
        newSite(llvm::json::Object{{"op", "copy"},
                                   {"loc", locationString(l)},
                                   {"function", func.getSymName().str()}});
    emitKernel(l, "copy",
               ValueRange{constI32(at, l, dc->first), addressOf(v), dest,
                          constI64(at, l, dc->second)},
               site);
    return success();
  };

  // Per-layer timing marks: gpipe_rt_layer(rank, 2 x layer + recomputing)
  // wherever the layer (or recomputing) changes, before the op's kernels.
  // An op of no layer (the loss) belongs to the layer before it.
  int64_t currentMark = -1;
  auto markLayer = [&](Operation *op) {
    StringAttr name = nn::getLayerOf(op);
    auto it = name ? layerIndex.find(name) : layerIndex.end();
    if (it == layerIndex.end())
      return;
    bool recomputing = op->getParentOfType<RematOp>() != nullptr;
    int64_t mark = 2 * it->second + (recomputing ? 1 : 0);
    if (mark == currentMark)
      return;
    currentMark = mark;
    gpipe_rt::LayerOp::create(at, op->getLoc(), rank,
                              constI64(at, op->getLoc(), mark));
  };

  const StageParams &sp = stageParams[stage];
  // The weight gradients a GEMM accumulates in place (result index -> the
  // parameter's offset in the gradient buffer): computed into the rank's
  // gradients, not accumulated after the return. Only where the memory
  // plan routed them (a plan made without it placed them in scratch).
  auto paramGradNames =
      func->getAttrOfType<ArrayAttr>(nn::NNDialect::kParamGradsAttrName);
  // A backward returns its input gradients (none on stage 0) first.
  auto inputGrads = func->getAttrOfType<DenseI64ArrayAttr>("nn.input_grads");
  unsigned numInputGrads = inputGrads ? inputGrads.size() : (stage > 0);
  llvm::SmallDenseMap<unsigned, int64_t> accumulatedAt;
  llvm::SmallPtrSet<Operation *, 8> accumulatingGemms;
  if (kind == StageFunctionKind::Backward && paramGradNames)
    for (auto [index, gemm] :
         nn::NNDialect::getAccumulatingGemms(func, numInputGrads)) {
      auto routed = lowered.buffers.routed.find(gemm->getResult(0));
      if (routed == lowered.buffers.routed.end() || routed->second != index)
        continue;
      StringRef name =
          cast<FlatSymbolRefAttr>(paramGradNames[index - numInputGrads])
              .getValue();
      auto it = sp.params.find(name);
      if (it == sp.params.end())
        return mlir::emitError(func.getLoc())
                   << "@" << func.getSymName() << " returns the gradient of @"
                   << name << ", which its stage's forward does not read",
               failure();
      accumulatedAt[index] = it->second.first;
      accumulatingGemms.insert(gemm);
    }
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
      FailureOr<std::vector<char>> value = nn::getElementsBytes(
          constant.getValue(), [&] { return constant.emitOpError(); });
      if (failed(value))
        return failure();
      address[constant.getResult()] = gpipe_rt::BytesOp::create(
          at, opLoc, StringRef(value->data(), value->size()));
      continue;
    }
    if (isa<nn::ReshapeOp, nn::UnsqueezeOp>(op))
      continue; // views: the canonical value's address
    for (Value result : op->getResults()) {
      if (auto routed = lowered.buffers.routed.find(result);
          routed != lowered.buffers.routed.end()) {
        if (routed->second >= lowered.numResults)
          return mlir::emitError(opLoc)
                     << "@" << func.getSymName() << ": gpipe.offsets routes a "
                     << "value to result " << routed->second << " of "
                     << lowered.numResults,
                 failure();
        if (auto acc = accumulatedAt.find(routed->second);
            acc != accumulatedAt.end()) {
          address[result] = offsetPtr(at, opLoc, grads, acc->second);
          continue;
        }
        address[result] = resultPtr(routed->second);
        continue;
      }
      auto it = lowered.buffers.offsets.find(result);
      address[result] = it != lowered.buffers.offsets.end()
                            ? offsetPtr(at, opLoc, scratch, it->second)
                            : scratch; // empty tensors
    }
    markLayer(op);
    if (auto fused = dyn_cast<nn::FusedOp>(op)) {
      if (target != "cpu")
        return fused.emitOpError("is a host loop; the ")
               << target << " target runs kernels only (compile with "
               << "--fuse=false, as gpipe-compile does for it)";
      if (failed(emitFusedLoop(at, fused, addressOf)))
        return failure();
      continue;
    }
    // Training's last forward hands its prediction (the logits the loss
    // reads) to the runtime before the loss: what `gpipe-run
    // --save-outputs` writes.
    if (kind == StageFunctionKind::Forward && last &&
        isa<nn::CrossEntropyOp, nn::MSEOp>(op)) {
      Value prediction = op->getOperand(0);
      emitReportOutput(at, opLoc, rank, mb, addressOf(prediction),
                       getValueBytes(prediction.getType()));
    }
    KernelCallOptions options{"CPU code generator", precision == "bf16"};
    FailureOr<KernelCall> call = accumulatingGemms.contains(op)
                                     ? getAccumulatingGemmCall(op, options)
                                     : getKernelCall(op, options);
    if (failed(call))
      return failure();
    callKernel(op, *call);
  }

  // Results.
  Operation *terminator = body.getTerminator();
  SmallVector<Value> returned = liveness.getReturned();
  if (kind == StageFunctionKind::Forward) {
    for (auto [i, v] : llvm::enumerate(returned)) {
      if (i == 0 && last && pipeline.isForwardOnly()) {
        // The prediction of an inference pipeline: reported, not stored.
        emitReportOutput(at, loc, rank, mb, addressOf(v),
                         getValueBytes(v.getType()));
        continue;
      }
      if (i == 0 && last) {
        // The loss: reported, not stored; a failing callback returns at
        // once.
        Value status = gpipe_rt::ReportLossOp::create(at, loc, i32Ty, rank, mb,
                                                      addressOf(v));
        gpipe_rt::CheckOp::create(at, loc, status, IntegerAttr(), Value());
        continue;
      }
      if (lowered.buffers.routed.lookup(v) == i &&
          lowered.buffers.routed.count(v))
        continue;
      if (failed(copyTo(terminator, v, resultPtr(i))))
        return failure();
    }
  } else {
    ArrayAttr paramGrads = paramGradNames;
    // An input half returns, after its input gradient, the values it hands
    // to the weight half: copied into the Deferred buffer.
    unsigned numDeferred =
        paramGrads ? 0 : nn::NNDialect::getDeferredCount(func);
    if (numDeferred >
        returned.size() - std::min<size_t>(numInputGrads, returned.size()))
      return mlir::emitError(func.getLoc())
                 << "@" << func.getSymName() << " returns " << returned.size()
                 << " results, fewer than its " << numInputGrads
                 << " input gradients and " << numDeferred
                 << " handed-over values (nn.deferred_count)",
             failure();
    if (!paramGrads && returned.size() > numInputGrads + numDeferred)
      return mlir::emitError(func.getLoc())
                 << "@" << func.getSymName() << " returns " << returned.size()
                 << " results but lists no nn.param_grads for the "
                 << returned.size() - numInputGrads - numDeferred
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
      if (lowered.buffers.routed.count(returned[i]) &&
          lowered.buffers.routed.lookup(returned[i]) == i)
        continue;
      if (failed(copyTo(terminator, returned[i], resultPtr(i))))
        return failure();
    }
    for (unsigned i = numInputGrads; i < numInputGrads + numDeferred; ++i) {
      if (lowered.buffers.routed.count(returned[i]) &&
          lowered.buffers.routed.lookup(returned[i]) == i)
        continue;
      if (failed(copyTo(terminator, returned[i], resultPtr(i))))
        return failure();
    }
    for (unsigned k = 0; paramGrads && k < paramGrads.size(); ++k) {
      StringRef name = cast<FlatSymbolRefAttr>(paramGrads[k]).getValue();
      auto it = sp.params.find(name);
      if (it == sp.params.end())
        return mlir::emitError(func.getLoc())
                   << "@" << func.getSymName() << " returns the gradient of @"
                   << name << ", which its stage's forward does not read",
               failure();
      if (accumulatedAt.count(numInputGrads + k))
        continue; // its GEMM added it into the gradient
      Value g = returned[numInputGrads + k];
      int64_t site =
          newSite(llvm::json::Object{{"op", "accumulate @" + name.str()},
                                     {"loc", locationString(func.getLoc())},
                                     {"function", func.getSymName().str()}});
      emitKernel(loc, "accumulate_f32",
                 ValueRange{offsetPtr(at, loc, grads, it->second.first),
                            addressOf(g), constI64(at, loc, it->second.second),
                            first},
                 site);
    }
  }
  func::ReturnOp::create(at, loc, constI32(at, loc, 0));
  return lowered;
}

void Emitter::emitReportOutput(OpBuilder &at, Location loc, Value rank,
                               Value mb, Value value, int64_t bytes) {
  Value status = gpipe_rt::ReportOutputOp::create(
      at, loc, i32Ty, rank, mb, value, constI64(at, loc, bytes));
  gpipe_rt::CheckOp::create(at, loc, status, IntegerAttr(), Value());
}
