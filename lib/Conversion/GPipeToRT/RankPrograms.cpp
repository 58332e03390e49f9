//===- RankPrograms.cpp - Programs, loops and actions as patterns -*- C++
//-*-===//
//
// Part of the lowering's emitter; see Emitter.h. The conversion patterns of
// the rank programs:
//
//   gpipe.program rank r  ->  func.func @gpipe_model_rank_<r>(rank, arena)
//   gpipe.for             ->  scf.for over the micro-batch index
//   each action           ->  gpipe_rt.action_begin / check, its runtime
//                             calls on the arena's slots, action_end
//
// One pattern per action op. Each action knows its index in the expanded
// program (what the runtime's transfers and traces are keyed by): a
// constant at the top level, first + (iv - lower) * period in a loop.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;

namespace {

/// Where an action sits in its rank's expanded program, and what of its
/// program it needs once the program is gone.
struct ActionPlace {
  /// Its expanded index (in a loop: on the loop's first trip).
  int64_t first = 0;
  /// In a loop: the loop's period (actions per trip) and lower bound.
  bool inLoop = false;
  int64_t period = 0, lower = 0;
  int rank = 0;
  ArenaAttr arena;
  /// The expanded index of its stage's first backward (or weight half) on
  /// this rank: the one that starts the gradient accumulators.
  std::optional<int64_t> firstBackward;
};

/// What the patterns share: the emitter's layouts and every action's place.
struct ProgramState {
  explicit ProgramState(Emitter &emitter) : emitter(emitter) {}
  Emitter &emitter;
  llvm::DenseMap<Operation *, ActionPlace> places;
};

Value constI64(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}
Value constI32(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}

/// The stage index of `action` in pipeline order.
int stageIndexOf(PipelineOp pipeline, ActionOpInterface action) {
  return static_cast<int>(pipeline.getStagePosition(action.getStageSymbol()));
}

/// One action's lowering at the rewriter's insertion point.
class ActionEmitter {
public:
  ActionEmitter(ProgramState &state, ConversionPatternRewriter &b,
                ActionOpInterface action, Value base)
      : e(state.emitter), b(b), action(action), loc(action->getLoc()),
        place(state.places.lookup(action)) {
    kind = action.getActionKind();
    s = stageIndexOf(e.pipeline, action);
    last = s + 1 == static_cast<int>(e.converted.stages.size());
    auto func = action->getParentOfType<func::FuncOp>();
    rank = func.getArgument(0);
    arena = func.getArgument(1);
    i32Ty = b.getI32Type();
    int64_t offset = action.getMicrobatchOffset();
    if (base) {
      Value iv = arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
      mb = arith::AddIOp::create(b, loc, iv, constI64(b, loc, offset));
    } else {
      mb = constI64(b, loc, offset);
      mbConstant = offset;
    }
    if (place.inLoop) {
      // first + (iv - lower) * period
      auto loop = action->getParentOfType<scf::ForOp>();
      Value iv = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                            loop.getInductionVar());
      Value trip =
          arith::SubIOp::create(b, loc, iv, constI64(b, loc, place.lower));
      Value tripOffset =
          arith::MulIOp::create(b, loc, trip, constI64(b, loc, place.period));
      index = arith::AddIOp::create(b, loc, constI64(b, loc, place.first),
                                    tripOffset);
    } else {
      index = constI64(b, loc, place.first);
      indexConstant = place.first;
    }
  }

  /// action_begin, checked: a run being aborted returns at once.
  void begin() {
    Value status = gpipe_rt::ActionBeginOp::create(b, loc, i32Ty, rank, index);
    gpipe_rt::CheckOp::create(b, loc, status, IntegerAttr(), Value());
  }
  void end() { gpipe_rt::ActionEndOp::create(b, loc, rank, index); }

  LogicalResult compute();
  LogicalResult transfer();
  LogicalResult step();
  LogicalResult reduceGrad();
  LogicalResult sumTied();
  LogicalResult clipGrad();
  LogicalResult recompute() { return success(); } // the backward recomputes

private:
  LogicalResult missing(StringRef what) {
    return mlir::emitError(loc)
           << "rank " << place.rank << " (" << getActionKindName(kind)
           << " of stage " << s << "): the memory plan has no " << what
           << " slot";
  }
  Value offsetPtr(Value base, int64_t offset) {
    return offsetAddress(b, loc, base, offset);
  }
  /// A call's status, checked: a failure returns it from the program.
  void check(Value status) {
    gpipe_rt::CheckOp::create(b, loc, status, IntegerAttr(), Value());
  }
  /// The address of micro-batch mb's copy in the slot of (kind, stage).
  std::optional<Value> slotPtr(SlotKind slotKind, int stage) {
    SlotAttr slot = place.arena.lookup(slotKind, stage);
    if (!slot)
      return std::nullopt;
    if (slot.getCount() == 1 || mbConstant)
      return offsetPtr(arena, slot.getOffsetOf(mbConstant.value_or(0)));
    Value copy =
        arith::RemUIOp::create(b, loc, mb, constI64(b, loc, slot.getCount()));
    if (!slot.getTable().empty()) {
      // table[mb mod count], a constant array of the module.
      LLVM::GlobalOp table = getSlotTable(slot);
      auto ptrTy = LLVM::LLVMPointerType::get(b.getContext());
      Value base = LLVM::AddressOfOp::create(b, loc, table);
      Value entry = LLVM::GEPOp::create(b, loc, ptrTy, b.getI64Type(), base,
                                        ArrayRef<LLVM::GEPArg>{copy});
      Value offset = LLVM::LoadOp::create(b, loc, b.getI64Type(), entry);
      return gpipe_rt::OffsetOp::create(b, loc, arena, offset, 0).getResult();
    }
    // offset + (mb mod count) * stride
    Value scaled =
        arith::MulIOp::create(b, loc, copy, constI64(b, loc, slot.getStride()));
    return gpipe_rt::OffsetOp::create(b, loc, arena, scaled, slot.getOffset())
        .getResult();
  }
  /// The module's constant array of `slot`'s table (one per pipeline,
  /// rank, kind and stage; made on first use).
  LLVM::GlobalOp getSlotTable(SlotAttr slot) {
    auto module = action->getParentOfType<ModuleOp>();
    // The pipeline's name keeps an evaluation pipeline's tables apart.
    std::string name =
        ("__gpipe_slots_" + e.pipeline.getSymName() + "_r" +
         llvm::Twine(place.rank) + "_" + stringifySlotKind(slot.getKind()) +
         "_" + llvm::Twine(slot.getStage()))
            .str();
    if (auto existing = module.lookupSymbol<LLVM::GlobalOp>(name))
      return existing;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    ArrayRef<int64_t> entries = slot.getTable();
    auto type = LLVM::LLVMArrayType::get(b.getI64Type(), entries.size());
    auto values = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(entries.size())},
                              b.getI64Type()),
        entries);
    return LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                  LLVM::Linkage::Internal, name, values);
  }
  FailureOr<Value> paramsPtr() {
    std::optional<Value> p = slotPtr(SlotKind::Parameters, s);
    if (!p && e.stageParams[s].bytes > 0)
      return missing("parameter");
    return p ? *p : arena;
  }
  FailureOr<Value> gradsPtr() {
    std::optional<Value> g = slotPtr(SlotKind::Gradients, s);
    // Inference plans no gradients; forwards never touch them.
    if (!g && e.stageParams[s].bytes > 0 && !e.pipeline.isForwardOnly())
      return missing("gradient");
    return g ? *g : arena;
  }
  Value nullPtr() { return gpipe_rt::NullOp::create(b, loc); }

  Emitter &e;
  ConversionPatternRewriter &b;
  ActionOpInterface action;
  Location loc;
  ActionPlace place;
  ActionKind kind;
  int s;
  bool last;
  Value rank, arena, mb, index;
  std::optional<int64_t> mbConstant, indexConstant;
  Type i32Ty;
};

LogicalResult ActionEmitter::compute() {
  bool forward = kind == ActionKind::Forward;
  const std::optional<LoweredFunction> &half =
      kind == ActionKind::BackwardInput    ? e.inputHalves[s]
      : kind == ActionKind::BackwardWeight ? e.weightHalves[s]
                                           : std::nullopt;
  if ((kind == ActionKind::BackwardInput ||
       kind == ActionKind::BackwardWeight) &&
      !half)
    return mlir::emitError(loc)
           << "rank " << place.rank << " (" << getActionKindName(kind)
           << " of stage " << s << "): the stage declares no split backward";
  LoweredFunction fn = forward ? e.forwards[s] : half ? *half : e.backwards[s];
  std::optional<Value> input = slotPtr(SlotKind::Input, s);
  if (!input)
    return missing("input");
  // The rank's scratch region: the working set of whichever stage function
  // runs. A function without scratch values gets any address.
  SlotAttr scratch = place.arena.lookup(SlotKind::Scratch, -1);
  if (fn.buffers.scratchBytes > 0 &&
      (!scratch || scratch.getSize() < fn.buffers.scratchBytes))
    return mlir::emitError(loc)
           << "rank " << place.rank << ": @" << fn.source.getSymName()
           << " needs " << fn.buffers.scratchBytes
           << " scratch bytes, the memory plan's scratch slot holds "
           << (scratch ? scratch.getSize() : 0) << "; re-run gpipe-plan-memory";
  int64_t scratchOffset = scratch ? scratch.getOffset() : 0;
  FailureOr<Value> params = paramsPtr(), grads = gradsPtr();
  if (failed(params) || failed(grads))
    return failure();
  SmallVector<Value> args = {*input};
  // Extra inputs (the labels) in one buffer.
  unsigned numExtra = e.extraOffsets[s].size();
  std::optional<Value> extra = slotPtr(SlotKind::ExtraInput, s);
  if (numExtra > 0 && !extra)
    return missing("extra input");
  for (int64_t off : e.extraOffsets[s])
    args.push_back(offsetPtr(*extra, off));
  if (forward && s == 0) {
    int64_t bytes =
        getPayloadBytes(StageOp(e.converted.stages[s]).getInputType());
    check(gpipe_rt::LoadInputOp::create(b, loc, i32Ty, rank, mb, *input,
                                        constI64(b, loc, bytes)));
  }
  if (forward && numExtra > 0) {
    if (!last || numExtra != 1)
      return mlir::emitError(fn.source.getLoc())
             << "@" << fn.source.getSymName()
             << ": only the last stage's forward may take an extra "
                "argument (its labels)";
    int64_t bytes = getValueBytes(fn.source.getFunctionType().getInput(1));
    check(gpipe_rt::LoadLabelsOp::create(b, loc, i32Ty, rank, mb, args[1],
                                         constI64(b, loc, bytes)));
  }
  std::optional<Value> saved = slotPtr(SlotKind::Saved, s);
  if (e.numSaved[s] > 0 && !saved)
    return missing("saved");
  SmallVector<Value> results;
  if (forward) {
    // Output, then the saved values.
    if (last) {
      results.push_back(nullPtr());
    } else {
      std::optional<Value> out = slotPtr(SlotKind::Output, s);
      if (!out)
        out = slotPtr(SlotKind::Input, s + 1);
      if (!out)
        return missing("output");
      results.push_back(*out);
    }
    for (int64_t off : e.savedOffsets[s])
      results.push_back(offsetPtr(*saved, off));
  } else {
    for (int64_t off : e.savedOffsets[s])
      args.push_back(offsetPtr(*saved, off));
    if (last) {
      // The loss seed 1.0 in the scratch region's seed slot.
      for (int64_t off : fn.buffers.seedOffsets) {
        Value seed = offsetPtr(arena, scratchOffset + off);
        Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
        check(gpipe_rt::KernelOp::create(
            b, loc, i32Ty, "fill_f32",
            ValueRange{seed, constI64(b, loc, 1), one}));
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
    if (half && !e.deferredOffsets[s].empty()) {
      std::optional<Value> deferred = slotPtr(SlotKind::Deferred, s);
      if (!deferred)
        return missing("deferred");
      SmallVector<Value> &to =
          kind == ActionKind::BackwardWeight ? args : results;
      for (int64_t off : e.deferredOffsets[s])
        to.push_back(offsetPtr(*deferred, off));
    }
    // Parameter gradients are accumulated, not returned through pointers:
    // pass nulls for their result slots.
    while (results.size() < fn.numResults)
      results.push_back(nullPtr());
  }
  if (args.size() != fn.numArgs || results.size() != fn.numResults)
    return mlir::emitError(fn.source.getLoc())
           << "@" << fn.source.getSymName() << " takes " << fn.numArgs
           << " arguments and returns " << fn.numResults
           << " results, but its stage provides " << args.size() << " and "
           << results.size();
  // The stage's first backward of the step copies into the accumulators.
  Value firstFlag = constI32(b, loc, 0);
  if (!forward && place.firstBackward) {
    if (indexConstant)
      firstFlag = constI32(b, loc, *indexConstant == *place.firstBackward);
    else
      firstFlag = arith::ExtUIOp::create(
          b, loc, i32Ty,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, index,
                                constI64(b, loc, *place.firstBackward)));
  }
  SmallVector<Value> operands = {
      rank, mb, offsetPtr(arena, scratchOffset), *params, *grads, firstFlag};
  operands.append(args);
  operands.append(results);
  check(func::CallOp::create(b, loc, fn.func, operands).getResult(0));
  return success();
}

LogicalResult ActionEmitter::transfer() {
  std::optional<Value> buffer;
  Operation *op = action;
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
  Value bytes = constI64(b, loc, getPayloadBytes(payload));
  if (isSendKind(kind)) {
    // A buffered send's staging copy for this micro-batch (none: null).
    std::optional<Value> staging =
        slotPtr(kind == ActionKind::SendF ? SlotKind::StagedOutput
                                          : SlotKind::StagedInputGrad,
                s);
    check(gpipe_rt::SendOp::create(b, loc, i32Ty, rank, index, *buffer, bytes,
                                   staging ? *staging : nullPtr()));
  } else {
    check(gpipe_rt::RecvOp::create(b, loc, i32Ty, rank, index, *buffer, bytes));
  }
  return success();
}

LogicalResult ActionEmitter::step() {
  FailureOr<Value> params = paramsPtr(), grads = gradsPtr();
  if (failed(params) || failed(grads))
    return failure();
  std::optional<Value> state = slotPtr(SlotKind::OptimizerState, s);
  check(gpipe_rt::StepOp::create(b, loc, i32Ty, rank, constI64(b, loc, s),
                                 *params, *grads, state ? *state : nullPtr(),
                                 constI64(b, loc, e.stageParams[s].bytes / 4)));
  return success();
}

LogicalResult ActionEmitter::reduceGrad() {
  // Starts the replicas' sum of the stage's gradients in place; the stage's
  // step waits for it. The Reduce slot holds the other replicas' pieces of
  // this replica's share (absent with one replica).
  FailureOr<Value> grads = gradsPtr();
  if (failed(grads))
    return failure();
  std::optional<Value> scratch = slotPtr(SlotKind::Reduce, s);
  check(gpipe_rt::ReduceGradOp::create(
      b, loc, i32Ty, rank, index, *grads, scratch ? *scratch : nullPtr(),
      constI64(b, loc, e.stageParams[s].bytes / 4)));
  return success();
}

LogicalResult ActionEmitter::sumTied() {
  // The runtime knows the rank's tied copies from the metadata; the Tied
  // slot receives other ranks' copies' gradients (absent when none come).
  std::optional<Value> scratch = slotPtr(SlotKind::Tied, s);
  check(gpipe_rt::SumTiedOp::create(b, loc, i32Ty, rank, index,
                                    scratch ? *scratch : nullPtr()));
  return success();
}

LogicalResult ActionEmitter::clipGrad() {
  // The runtime knows the rank's stages and parameters from the metadata;
  // the Norm slot carries the running sum of squares and the total.
  std::optional<Value> norm = slotPtr(SlotKind::Norm, s);
  if (!norm)
    return missing("norm");
  check(gpipe_rt::ClipGradOp::create(b, loc, i32Ty, rank, index, *norm));
  return success();
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// gpipe.program rank r -> func.func @gpipe_model_rank_<r>(rank, arena) -> i32
/// (gpipe_model_eval_rank_<r> for evaluation programs)
struct ProgramLowering : OpConversionPattern<ProgramOp> {
  ProgramLowering(MLIRContext *ctx, ProgramState &state)
      : OpConversionPattern<ProgramOp>(ctx), state(state) {}
  ProgramState &state;

  LogicalResult
  matchAndRewrite(ProgramOp program, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = program.getLoc();
    auto module = program->getParentOfType<ModuleOp>();
    auto ptrTy = LLVM::LLVMPointerType::get(getContext());
    rewriter.setInsertionPointToEnd(module.getBody());
    auto func = func::FuncOp::create(
        rewriter, loc, state.emitter.getRankSymbol(program.getRankIndex()),
        rewriter.getFunctionType({ptrTy, ptrTy}, {rewriter.getI32Type()}));
    Block *entry =
        rewriter.createBlock(&func.getBody(), {}, {ptrTy, ptrTy}, {loc, loc});
    rewriter.inlineBlockBefore(&program.getBody().front(), entry, entry->end());
    rewriter.setInsertionPointToEnd(entry);
    func::ReturnOp::create(rewriter, loc, constI32(rewriter, loc, 0));
    rewriter.eraseOp(program);
    return success();
  }
};

/// gpipe.for %mb = lower to upper -> scf.for %mb = lower to upper step 1
struct ForLowering : OpConversionPattern<ForOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ForOp loop, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = loop.getLoc();
    auto bound = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    auto forOp = scf::ForOp::create(rewriter, loc, bound(loop.getLowerBound()),
                                    bound(loop.getUpperBound()), bound(1));
    rewriter.inlineBlockBefore(&loop.getBody().front(),
                               forOp.getBody()->getTerminator(),
                               forOp.getInductionVar());
    rewriter.eraseOp(loop);
    return success();
  }
};

/// An action of type OpT: begin, `Body`, end.
template <typename OpT, LogicalResult (ActionEmitter::*Body)()>
struct ActionLowering : OpConversionPattern<OpT> {
  ActionLowering(MLIRContext *ctx, ProgramState &state)
      : OpConversionPattern<OpT>(ctx), state(state) {}
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // The micro-batch's base (the loop's index), when it has one.
    ValueRange operands = adaptor.getOperands();
    ActionEmitter emitter(state, rewriter, op,
                          operands.empty() ? Value() : operands.front());
    emitter.begin();
    if (failed((emitter.*Body)()))
      return failure();
    emitter.end();
    rewriter.eraseOp(op);
    return success();
  }
  ProgramState &state;
};

} // namespace

LogicalResult Emitter::lowerPrograms() {
  ProgramState state(*this);
  // Every action's place in its expanded program.
  for (ProgramOp program : pipeline.getPrograms()) {
    std::map<int, int64_t> firstBackward;
    int64_t count = 0;
    walkProgram(program, [&](ActionOpInterface action, int64_t) {
      ActionKind kind = action.getActionKind();
      if (kind == ActionKind::Backward || kind == ActionKind::BackwardWeight)
        firstBackward.try_emplace(stageIndexOf(pipeline, action), count);
      ++count;
    });
    auto placeOf = [&](ActionOpInterface action, int64_t first) {
      ActionPlace place;
      place.first = first;
      place.rank = static_cast<int>(program.getRankIndex());
      place.arena = program.getArenaAttr();
      auto fb = firstBackward.find(stageIndexOf(pipeline, action));
      if (fb != firstBackward.end())
        place.firstBackward = fb->second;
      return place;
    };
    int64_t next = 0;
    for (Operation &op : program.getBody().front()) {
      if (auto action = dyn_cast<ActionOpInterface>(op)) {
        state.places[action] = placeOf(action, next++);
        continue;
      }
      auto loop = cast<ForOp>(op);
      Block &body = loop.getBody().front();
      int64_t period = static_cast<int64_t>(body.getOperations().size());
      for (auto [j, inner] : llvm::enumerate(body)) {
        ActionPlace place =
            placeOf(cast<ActionOpInterface>(inner), next + int64_t(j));
        place.inLoop = true;
        place.period = period;
        place.lower = loop.getLowerBound();
        state.places[&inner] = place;
      }
      next += loop.getTripCount() * period;
    }
  }

  RewritePatternSet patterns(ctx);
  patterns.add<ForLowering>(ctx);
  patterns.add<ProgramLowering>(ctx, state);
  patterns.add<ActionLowering<ForwardOp, &ActionEmitter::compute>,
               ActionLowering<BackwardOp, &ActionEmitter::compute>,
               ActionLowering<BackwardInputOp, &ActionEmitter::compute>,
               ActionLowering<BackwardWeightOp, &ActionEmitter::compute>,
               ActionLowering<RecomputeOp, &ActionEmitter::recompute>,
               ActionLowering<SendOp, &ActionEmitter::transfer>,
               ActionLowering<RecvOp, &ActionEmitter::transfer>,
               ActionLowering<StepOp, &ActionEmitter::step>,
               ActionLowering<ReduceGradOp, &ActionEmitter::reduceGrad>,
               ActionLowering<SumTiedOp, &ActionEmitter::sumTied>,
               ActionLowering<ClipGradOp, &ActionEmitter::clipGrad>>(ctx,
                                                                     state);
  ConversionTarget target(*ctx);
  target.addIllegalOp<ProgramOp, ForOp>();
  target.addDynamicallyLegalDialect<GPipeDialect>(
      [](Operation *op) { return !isa<ActionOpInterface>(op); });
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  return applyPartialConversion(module, target, std::move(patterns));
}
