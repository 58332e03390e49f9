//===- RankPrograms.cpp - Rank programs with their loops ---*- C++ -*-===//
//
// Part of the lowering's emitter; see Emitter.h.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;

/// The stage index of `action` in pipeline order.
static int stageIndexOf(PipelineOp pipeline, ActionOpInterface action) {
  return static_cast<int>(pipeline.getStagePosition(action.getStageSymbol()));
}

LogicalResult Emitter::lowerRank(ProgramOp program) {
  int r = static_cast<int>(program.getRankIndex());
  Location loc = program.getLoc();

  // The expanded index of each stage's first backward (or weight half): it
  // starts the gradient accumulators (a copy, not an add).
  std::map<int, int64_t> firstBackward;
  int64_t count = 0;
  walkProgram(program, [&](ActionOpInterface action, int64_t) {
    ActionKind kind = action.getActionKind();
    if (kind == ActionKind::Backward || kind == ActionKind::BackwardWeight)
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
    Value trip =
        LLVM::SubOp::create(at, l, iv, constI64(at, l, loop.getLowerBound()));
    // Each operand named first: the order of a call's arguments is
    // unspecified, and the IR must not depend on the compiler.
    Value tripOffset =
        LLVM::MulOp::create(at, l, trip, constI64(at, l, period));
    Value nextIndex = constI64(at, l, next);
    Value first = LLVM::AddOp::create(at, l, nextIndex, tripOffset);
    for (auto [j, inner] : llvm::enumerate(bodyOps)) {
      auto action = cast<ActionOpInterface>(inner);
      Value mb =
          action.getMicrobatchBase()
              ? LLVM::AddOp::create(
                    at, inner.getLoc(), iv,
                    constI64(at, inner.getLoc(), action.getMicrobatchOffset()))
                    .getResult()
              : constI64(at, inner.getLoc(), action.getMicrobatchOffset());
      Value index = LLVM::AddOp::create(
          at, inner.getLoc(), first, constI64(at, inner.getLoc(), int64_t(j)));
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
               << "rank " << r << " (" << getActionKindName(kind)
               << " of stage " << s << "): the memory plan has no " << what
               << " slot",
           failure();
  };
  auto ptrAt = [&](int64_t offset) {
    return offsetPtr(at, loc, arena, offset);
  };
  // The address of micro-batch mb's copy in the slot of (kind, stage).
  auto slotPtr = [&](SlotKind slotKind, int stage) -> std::optional<Value> {
    SlotAttr slot = plan.lookup(slotKind, stage);
    if (!slot)
      return std::nullopt;
    if (slot.getCount() == 1 || mb.constant)
      return ptrAt(slot.getOffsetOf(mb.constant.value_or(0)));
    Value copy = LLVM::URemOp::create(at, loc, mb.value,
                                      constI64(at, loc, slot.getCount()));
    Value scaled =
        LLVM::MulOp::create(at, loc, copy, constI64(at, loc, slot.getStride()));
    Value base = constI64(at, loc, slot.getOffset());
    Value offset = LLVM::AddOp::create(at, loc, base, scaled);
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
    // Inference plans no gradients; forwards never touch them.
    if (!g && sp.bytes > 0 && !pipeline.isForwardOnly())
      return missing("gradient");
    return g ? *g : ptrAt(0);
  };

  switch (kind) {
  case ActionKind::Forward:
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight: {
    bool forward = kind == ActionKind::Forward;
    const std::optional<LoweredFunction> &half =
        kind == ActionKind::BackwardInput    ? inputHalves[s]
        : kind == ActionKind::BackwardWeight ? weightHalves[s]
                                             : std::nullopt;
    if ((kind == ActionKind::BackwardInput ||
         kind == ActionKind::BackwardWeight) &&
        !half)
      return mlir::emitError(loc)
                 << "rank " << r << " (" << getActionKindName(kind)
                 << " of stage " << s
                 << "): the stage declares no split backward",
             failure();
    LoweredFunction fn = forward ? forwards[s] : half ? *half : backwards[s];
    std::optional<Value> input = slotPtr(SlotKind::Input, s);
    if (!input)
      return missing("input");
    // The rank's scratch region: the working set of whichever stage
    // function runs. A function without scratch values gets any address.
    SlotAttr scratch = plan.lookup(SlotKind::Scratch, -1);
    if (fn.buffers.scratchBytes > 0 &&
        (!scratch || scratch.getSize() < fn.buffers.scratchBytes))
      return mlir::emitError(loc)
                 << "rank " << r << ": @" << fn.source.getSymName() << " needs "
                 << fn.buffers.scratchBytes
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
      // The split halves meet in the Deferred buffer: the input half's last
      // results, the weight half's last arguments.
      if (half && !deferredOffsets[s].empty()) {
        std::optional<Value> deferred = slotPtr(SlotKind::Deferred, s);
        if (!deferred)
          return missing("deferred");
        SmallVector<Value> &to =
            kind == ActionKind::BackwardWeight ? args : results;
        for (int64_t off : deferredOffsets[s])
          to.push_back(offsetPtr(at, loc, *deferred, off));
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
    SmallVector<Value> operands = {rank,    mb.value, ptrAt(scratchOffset),
                                   *params, *grads,   firstFlag};
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
  case ActionKind::ReduceGrad: {
    // Starts the replicas' sum of the stage's gradients in place; the
    // stage's step waits for it. The Reduce slot holds the other replicas'
    // pieces of this replica's share (absent with one replica).
    FailureOr<Value> grads = gradsPtr();
    if (failed(grads))
      return failure();
    std::optional<Value> scratch = slotPtr(SlotKind::Reduce, s);
    Value scratchPtr =
        scratch ? *scratch : LLVM::ZeroOp::create(at, loc, ptrTy).getResult();
    auto reduce = declare("gpipe_rt_reduce_grad", i32Ty,
                          {ptrTy, i64Ty, ptrTy, ptrTy, i64Ty});
    emitChecked(at, loc, reduce,
                ValueRange{rank, index, *grads, scratchPtr,
                           constI64(at, loc, sp.bytes / 4)},
                abort, -1);
    break;
  }
  case ActionKind::SumTied: {
    // The runtime knows the rank's tied copies from the metadata; the Tied
    // slot receives other ranks' copies' gradients (absent when none come).
    std::optional<Value> scratch = slotPtr(SlotKind::Tied, s);
    Value scratchPtr =
        scratch ? *scratch : LLVM::ZeroOp::create(at, loc, ptrTy).getResult();
    auto sum = declare("gpipe_rt_sum_tied", i32Ty, {ptrTy, i64Ty, ptrTy});
    emitChecked(at, loc, sum, ValueRange{rank, index, scratchPtr}, abort, -1);
    break;
  }
  case ActionKind::Recompute:
    // The backward recomputes its stage.
    break;
  }
  LLVM::CallOp::create(at, loc, end, ValueRange{rank, index});
  return success();
}
