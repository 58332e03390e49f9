//===- GPipeOps.cpp - gpipe dialect ops -------------------------*- C++ -*-===//
//
// Implements the `gpipe` dialect: registration, the verifiers of stages,
// pipelines and programs, and the verification shared by all action ops
// (local structure in `verifyActionOp`, what needs the stage declaration in
// `verifyActionSymbolUses`). Schedule-level properties (coverage, order,
// matching sends and receives, deadlock freedom) are not op invariants: the
// `gpipe-verify-schedule` pass checks them.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::gpipe;

#include "gpipe/Dialect/GPipe/IR/GPipeOpsDialect.cpp.inc"

#include "gpipe/Dialect/GPipe/IR/GPipeEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "gpipe/Dialect/GPipe/IR/GPipeAttrs.cpp.inc"

#include "gpipe/Dialect/GPipe/IR/GPipeInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// The micro-batch of an action: `mb 3`, `mb %mb` or `mb %mb + 3`
//===----------------------------------------------------------------------===//

static ParseResult
parseMicrobatch(OpAsmParser &parser,
                std::optional<OpAsmParser::UnresolvedOperand> &base,
                IntegerAttr &offset) {
  OpAsmParser::UnresolvedOperand operand;
  OptionalParseResult hasOperand = parser.parseOptionalOperand(operand);
  int64_t constant = 0;
  if (hasOperand.has_value()) {
    if (failed(*hasOperand))
      return failure();
    base = operand;
    if (succeeded(parser.parseOptionalPlus()) && parser.parseInteger(constant))
      return failure();
  } else if (parser.parseInteger(constant)) {
    return failure();
  }
  offset = parser.getBuilder().getI64IntegerAttr(constant);
  return success();
}

static void printMicrobatch(OpAsmPrinter &printer, Operation *, Value base,
                            IntegerAttr offset) {
  if (!base) {
    printer << offset.getInt();
    return;
  }
  printer << base;
  if (offset.getInt() != 0)
    printer << " + " << offset.getInt();
}

void GPipeDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gpipe/Dialect/GPipe/IR/GPipeOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "gpipe/Dialect/GPipe/IR/GPipeAttrs.cpp.inc"
      >();
}

LogicalResult GPipeDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName() == kFrameAttrName) {
    if (!isa<FrameAttr>(attr.getValue()) || !isa<func::FuncOp>(op))
      return op->emitError("'")
             << kFrameAttrName << "' must be a #gpipe.frame on a 'func.func'";
    return success();
  }
  if (attr.getName() == kModelAttrName) {
    auto model = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!model || !isa<ModuleOp>(op) || !model.get("format"))
      return op->emitError("'")
             << kModelAttrName
             << "' must be a model metadata dictionary on a 'builtin.module'";
    return success();
  }
  if (attr.getName() == kOffsetsAttrName) {
    auto offsets = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!offsets || offsets.size() != static_cast<int64_t>(op->getNumResults()))
      return op->emitError("'")
             << kOffsetsAttrName << "' must hold one i64 per result ("
             << op->getNumResults() << ")";
    auto func = op->getParentOfType<func::FuncOp>();
    int64_t numResults = func ? func.getFunctionType().getNumResults() : 0;
    for (int64_t offset : offsets.asArrayRef())
      if (offset < -1 - numResults)
        return op->emitError("'")
               << kOffsetsAttrName << "' holds " << offset
               << "; expected a byte offset, -1, or -2 - i for the "
                  "function's result i (of "
               << numResults << ")";
    return success();
  }
  return op->emitError("unknown gpipe attribute '") << attr.getName() << "'";
}

//===----------------------------------------------------------------------===//
// StageOp
//===----------------------------------------------------------------------===//

LogicalResult StageOp::verify() {
  if (getStageIndex() < 0)
    return emitOpError("expected a non-negative stage index, got ")
           << getStageIndex();
  if (!hasBackward() && getBackwardInputAttr())
    return emitOpError("declares a split backward but no backward");
  if (static_cast<bool>(getBackwardInputAttr()) !=
      static_cast<bool>(getBackwardWeightAttr()))
    return emitOpError("expected backward_input and backward_weight together, "
                       "got only ")
           << (getBackwardInputAttr() ? "backward_input" : "backward_weight");
  for (auto [name, attr] :
       {std::make_pair("forward_time", getForwardTimeAttr()),
        std::make_pair("backward_time", getBackwardTimeAttr()),
        std::make_pair("backward_input_time", getBackwardInputTimeAttr()),
        std::make_pair("backward_weight_time", getBackwardWeightTimeAttr()),
        std::make_pair("reduce_time", getReduceTimeAttr()),
        std::make_pair("step_time", getStepTimeAttr())}) {
    if (!attr)
      continue;
    double value = attr.getValueAsDouble();
    if (!std::isfinite(value) || value < 0)
      return emitOpError("expected a finite non-negative ")
             << name << ", got " << value;
  }
  return success();
}

/// The `func.func` `ref` names, or an error naming its `role`.
static FailureOr<func::FuncOp> lookupFunc(StageOp stage, FlatSymbolRefAttr ref,
                                          StringRef role,
                                          SymbolTableCollection &symbolTable) {
  Operation *op = symbolTable.lookupNearestSymbolFrom(stage, ref);
  if (!op)
    return stage.emitOpError() << role << " function " << ref << " not found";
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    return stage.emitOpError() << role << " function " << ref << " is a '"
                               << op->getName() << "', expected a 'func.func'";
  return func;
}

/// The number of values a forward function saves for its backward (its
/// last results, `nn.saved_count`; 0 when it recomputes).
static unsigned getSavedCount(func::FuncOp func) {
  auto count = func->getAttrOfType<IntegerAttr>("nn.saved_count");
  return count ? static_cast<unsigned>(count.getInt()) : 0;
}

/// Checks that a backward-like function takes the forward's arguments, then
/// the `numSaved` values the forward saves (its last results), then the
/// output gradient (the autodiff contract of `nn::buildBackwardFunction`)
/// and, when `needsInputGrad`, returns the input gradient first.
static LogicalResult verifyBackwardLike(StageOp stage, FunctionType forward,
                                        unsigned numSaved,
                                        FlatSymbolRefAttr ref, StringRef role,
                                        bool needsInputGrad,
                                        SymbolTableCollection &symbolTable) {
  FailureOr<func::FuncOp> func = lookupFunc(stage, ref, role, symbolTable);
  if (failed(func))
    return failure();
  FunctionType type = func->getFunctionType();
  Type input = stage.getInputType();
  Type output = stage.getOutputType();
  unsigned n = forward.getNumInputs();
  ArrayRef<Type> saved = forward.getResults().take_back(numSaved);
  if (getSavedCount(*func) != numSaved)
    return stage.emitOpError("expected ")
           << role << " function " << ref << " to take the " << numSaved
           << " values its forward saves (nn.saved_count), got "
           << getSavedCount(*func);
  if (type.getNumInputs() < n + numSaved + 1 ||
      type.getInputs().take_front(n) != forward.getInputs() ||
      type.getInputs().slice(n, numSaved) != saved ||
      type.getInput(n + numSaved) != output) {
    InFlightDiagnostic diag = stage.emitOpError("expected ")
                              << role << " function " << ref
                              << " to take the forward's arguments "
                              << forward.getInputs();
    if (numSaved)
      diag << ", the saved values " << saved;
    return diag << " and then the output gradient " << output << ", got "
                << type;
  }
  if (needsInputGrad &&
      (type.getNumResults() < 1 || type.getResult(0) != input))
    return stage.emitOpError("expected ")
           << role << " function " << ref << " of stage "
           << stage.getStageIndex() << " to return the input gradient " << input
           << " first, got " << type;
  return success();
}

/// The number of values the input half of a split backward hands to its
/// weight half (`nn.deferred_count`; 0 without it).
static unsigned getDeferredCount(func::FuncOp func) {
  auto count = func->getAttrOfType<IntegerAttr>("nn.deferred_count");
  return count ? static_cast<unsigned>(count.getInt()) : 0;
}

/// Checks the hand-over of a split backward: the input half's last
/// `nn.deferred_count` results are the weight half's last arguments.
static LogicalResult verifyDeferred(StageOp stage,
                                    SymbolTableCollection &symbolTable) {
  FailureOr<func::FuncOp> input = lookupFunc(
      stage, stage.getBackwardInputAttr(), "backward_input", symbolTable);
  FailureOr<func::FuncOp> weight = lookupFunc(
      stage, stage.getBackwardWeightAttr(), "backward_weight", symbolTable);
  if (failed(input) || failed(weight))
    return failure();
  unsigned n = getDeferredCount(*input);
  if (getDeferredCount(*weight) != n)
    return stage.emitOpError("expected backward_weight function ")
           << stage.getBackwardWeightAttr() << " to take the " << n
           << " values backward_input " << stage.getBackwardInputAttr()
           << " hands over (nn.deferred_count), got "
           << getDeferredCount(*weight);
  FunctionType in = input->getFunctionType(), w = weight->getFunctionType();
  if (in.getNumResults() < n || w.getNumInputs() < n ||
      in.getResults().take_back(n) != w.getInputs().take_back(n))
    return stage.emitOpError("expected backward_weight function ")
           << stage.getBackwardWeightAttr() << " to take last the " << n
           << " values backward_input " << stage.getBackwardInputAttr()
           << " returns last, got " << in << " and " << w;
  return success();
}

LogicalResult StageOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<func::FuncOp> forward =
      lookupFunc(*this, getForwardAttr(), "forward", symbolTable);
  if (failed(forward))
    return failure();
  FunctionType type = forward->getFunctionType();
  if (type.getNumInputs() < 1 || type.getInput(0) != getInputType())
    return emitOpError("expected forward function ")
           << getForwardAttr() << " to take the stage input " << getInputType()
           << " first, got " << type;
  if (type.getNumResults() < 1 || type.getResult(0) != getOutputType())
    return emitOpError("expected forward function ")
           << getForwardAttr() << " to return the stage output "
           << getOutputType() << " first, got " << type;

  // remat none: the forward returns, after the output, what its backward
  // reads.
  unsigned numSaved = getSavedCount(*forward);
  if (type.getNumResults() < 1 + numSaved)
    return emitOpError("expected forward function ")
           << getForwardAttr() << " to return the stage output and the "
           << numSaved << " values it saves (nn.saved_count), got " << type;

  // A forward-only stage (inference) has its forward alone, which takes the
  // stage input only (no labels) and returns its output only.
  if (!hasBackward()) {
    if (type.getNumInputs() != 1 || type.getNumResults() != 1)
      return emitOpError("expected forward function ")
             << getForwardAttr()
             << " of a stage without backward to take the stage input and "
                "return the stage output only, got "
             << type;
    return success();
  }

  // Stage 0's input is the data: its gradient is not needed.
  bool needsInputGrad = getStageIndex() > 0;
  if (failed(verifyBackwardLike(*this, type, numSaved, getBackwardAttr(),
                                "backward", needsInputGrad, symbolTable)))
    return failure();
  if (FlatSymbolRefAttr ref = getBackwardInputAttr())
    if (failed(verifyBackwardLike(*this, type, numSaved, ref, "backward_input",
                                  needsInputGrad, symbolTable)))
      return failure();
  if (FlatSymbolRefAttr ref = getBackwardWeightAttr())
    if (failed(verifyBackwardLike(*this, type, numSaved, ref, "backward_weight",
                                  /*needsInputGrad=*/false, symbolTable)))
      return failure();
  if (hasSplitBackward())
    return verifyDeferred(*this, symbolTable);
  return success();
}

//===----------------------------------------------------------------------===//
// RematOp
//===----------------------------------------------------------------------===//

LogicalResult RematOp::verify() {
  if (getPolicy() == Remat::None)
    return emitOpError("re-materializes under remat policy none, which keeps "
                       "every activation instead");
  if (getPolicy() == Remat::Auto)
    return emitOpError("re-materializes under remat policy auto, which "
                       "gpipe-compile resolves to selective");
  Operation *yield = getBody().front().getTerminator();
  if (yield->getOperandTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield->getOperandTypes() << " but returns " << getResultTypes();
  return success();
}

//===----------------------------------------------------------------------===//
// PipelineOp
//===----------------------------------------------------------------------===//

SmallVector<ProgramOp, 8> PipelineOp::getPrograms() {
  SmallVector<ProgramOp, 8> programs;
  if (getBody().empty())
    return programs;
  for (auto program : getBody().front().getOps<ProgramOp>())
    programs.push_back(program);
  return programs;
}

int64_t PipelineOp::getNumRanks() {
  if (getBody().empty())
    return 0;
  return llvm::range_size(getBody().front().getOps<ProgramOp>());
}

int64_t PipelineOp::getStagePosition(FlatSymbolRefAttr stage) {
  for (auto [i, attr] : llvm::enumerate(getStages()))
    if (attr == stage)
      return static_cast<int64_t>(i);
  return -1;
}

LogicalResult PipelineOp::verify() {
  if (getStages().empty())
    return emitOpError("expected at least one stage");
  if (getRemat() == Remat::Auto)
    return emitOpError("has remat auto, which gpipe-compile resolves to "
                       "selective before the partition; expected none, stage "
                       "or selective");
  if (getNumMicrobatches() < 1)
    return emitOpError("expected at least one micro-batch, got ")
           << getNumMicrobatches();
  // Schedules index micro-batches with `int`.
  if (getNumMicrobatches() > std::numeric_limits<int32_t>::max())
    return emitOpError("expected at most ")
           << std::numeric_limits<int32_t>::max() << " micro-batches, got "
           << getNumMicrobatches();
  llvm::DenseSet<Attribute> seen;
  for (Attribute stage : getStages())
    if (!seen.insert(stage).second)
      return emitOpError("stage ") << stage << " is listed twice";
  int64_t v = getNumVirtualStages();
  if (v < 1 || getNumStages() % v != 0)
    return emitOpError("expected virtual_stages to divide the ")
           << getNumStages() << " stages, got " << v;
  if (getNumReplicas() < 1)
    return emitOpError("expected data_parallel to be at least 1, got ")
           << getNumReplicas();
  if (std::optional<double> clip = getClipBound()) {
    if (!(*clip > 0) || !std::isfinite(*clip))
      return emitOpError("expected clip_grad_norm to be positive and finite, "
                         "got ")
             << *clip;
    if (isForwardOnly())
      return emitOpError("is forward_only and has no gradients to clip; "
                         "expected no clip_grad_norm");
  }
  if (isForwardOnly()) {
    // The forward half, its stages placed as the schedule places them (one
    // per rank for gpipe), one replica, nothing kept.
    if (getSchedule() == ScheduleKind::Custom)
      return emitOpError("is forward_only: its schedule names where its "
                         "stages run, expected a generated schedule, got "
                         "custom");
    if (getNumReplicas() != 1)
      return emitOpError("is forward_only; expected one replica, got "
                         "data_parallel ")
             << getNumReplicas();
    if (getRemat() != Remat::None)
      return emitOpError("is forward_only and keeps nothing for a backward; "
                         "expected remat none, got ")
             << stringifyRemat(getRemat());
  }
  return success();
}

LogicalResult PipelineOp::verifyRegions() {
  if (getBody().empty())
    return success();
  int64_t position = 0;
  for (Operation &op : getBody().front()) {
    auto program = dyn_cast<ProgramOp>(op);
    if (!program)
      return op.emitOpError("is not allowed in a pipeline body, expected "
                            "'gpipe.program'");
    if (program.getRankIndex() != position)
      return program.emitOpError("expected rank ")
             << position << " (programs list ranks 0, 1, ... in order), got "
             << program.getRankIndex();
    ++position;
  }
  // Which rank runs each stage follows from the programs: one rank a stage.
  llvm::DenseMap<Attribute, int64_t> stageToRank;
  for (ProgramOp program : getPrograms()) {
    if (program.getBody().empty())
      continue;
    for (auto action : program.getBody().front().getOps<ActionOpInterface>()) {
      auto [it, inserted] = stageToRank.try_emplace(action.getStageSymbol(),
                                                    program.getRankIndex());
      if (!inserted && it->second != program.getRankIndex())
        return action->emitOpError("runs stage ")
               << action.getStageSymbol() << " on rank "
               << program.getRankIndex() << ", but rank " << it->second
               << " runs it too; a stage runs on one rank";
    }
  }
  // Replicas sum every stage's gradients once per step.
  if (getNumReplicas() > 1 && !stageToRank.empty()) {
    llvm::DenseMap<Attribute, int64_t> reductions;
    walk([&](ReduceGradOp op) { ++reductions[op.getStageAttr()]; });
    for (Attribute stage : getStages())
      if (reductions.lookup(stage) != 1)
        return emitOpError("has data_parallel ")
               << getNumReplicas() << " but stage " << stage << " has "
               << reductions.lookup(stage)
               << " gpipe.reduce_grad actions; expected exactly one";
  }
  return success();
}

LogicalResult PipelineOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  StageOp previous;
  FlatSymbolRefAttr previousRef;
  for (auto [position, attr] : llvm::enumerate(getStages())) {
    auto ref = cast<FlatSymbolRefAttr>(attr);
    auto stage = symbolTable.lookupNearestSymbolFrom<StageOp>(*this, ref);
    if (!stage)
      return emitOpError("stage ") << ref << " does not name a 'gpipe.stage'";
    if (stage.getStageIndex() != static_cast<int64_t>(position))
      return emitOpError("expected stage ")
             << ref << " at position " << position << " to have index "
             << position << ", got " << stage.getStageIndex();
    if (stage.hasBackward() == isForwardOnly())
      return emitOpError("stage ")
             << ref
             << (isForwardOnly()
                     ? " declares a backward, but the pipeline is "
                       "forward_only"
                     : " declares no backward, but the pipeline trains "
                       "(only a forward_only pipeline has stages without "
                       "one)");
    if (previous && previous.getOutputType() != stage.getInputType())
      return emitOpError("stage ")
             << previousRef << " produces " << previous.getOutputType()
             << " but the next stage " << ref << " takes "
             << stage.getInputType();
    previous = stage;
    previousRef = ref;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

PipelineOp ProgramOp::getPipeline() {
  return cast<PipelineOp>((*this)->getParentOp());
}

LogicalResult ProgramOp::verify() {
  if (getRankIndex() < 0)
    return emitOpError("expected a non-negative rank, got ") << getRankIndex();
  if (ArenaAttr arena = getArenaAttr()) {
    int64_t numStages = getPipeline().getNumStages();
    for (SlotAttr slot : arena.getSlots()) {
      if (slot.getStage() >= numStages)
        return emitOpError("arena slot ")
               << slot << " names stage " << slot.getStage() << " of "
               << numStages;
      if (slot.getOffset() + slot.getSpan() > arena.getSize())
        return emitOpError("arena slot ")
               << slot << " ends at byte " << slot.getOffset() + slot.getSpan()
               << ", past the arena's " << arena.getSize();
    }
  }
  if (getBody().empty())
    return success();
  for (Operation &op : getBody().front())
    if (!isa<ActionOpInterface, ForOp>(op))
      return op.emitOpError("is not allowed in a program, expected a "
                            "pipeline action or a 'gpipe.for'");
  return success();
}

//===----------------------------------------------------------------------===//
// ForOp
//===----------------------------------------------------------------------===//

void ForOp::build(OpBuilder &builder, OperationState &state, int64_t lower,
                  int64_t upper) {
  state.addAttribute(getLowerAttrName(state.name),
                     builder.getI64IntegerAttr(lower));
  state.addAttribute(getUpperAttrName(state.name),
                     builder.getI64IntegerAttr(upper));
  Region *body = state.addRegion();
  Block *block = new Block();
  block->addArgument(builder.getIndexType(), state.location);
  body->push_back(block);
}

ParseResult ForOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::Argument iv;
  int64_t lower = 0, upper = 0;
  if (parser.parseArgument(iv) || parser.parseEqual() ||
      parser.parseInteger(lower) || parser.parseKeyword("to") ||
      parser.parseInteger(upper))
    return failure();
  Builder &b = parser.getBuilder();
  iv.type = b.getIndexType();
  result.addAttribute("lower", b.getI64IntegerAttr(lower));
  result.addAttribute("upper", b.getI64IntegerAttr(upper));
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, {iv}) ||
      parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  if (body->empty())
    body->emplaceBlock();
  return success();
}

void ForOp::print(OpAsmPrinter &p) {
  p << " " << getInductionVar() << " = " << getLowerBound() << " to "
    << getUpperBound() << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false);
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(), {"lower", "upper"});
}

void ForOp::getAsmBlockArgumentNames(Region &region,
                                     OpAsmSetValueNameFn setNameFn) {
  if (!region.empty() && region.front().getNumArguments() == 1)
    setNameFn(region.front().getArgument(0), "mb");
}

LogicalResult ForOp::verify() {
  if (getLowerBound() < 0 || getUpperBound() <= getLowerBound())
    return emitOpError("expected 0 <= lower < upper, got ")
           << getLowerBound() << " to " << getUpperBound();
  Block &body = getBody().front();
  if (body.getNumArguments() != 1 || !body.getArgument(0).getType().isIndex())
    return emitOpError("expected one 'index' block argument, the micro-batch");
  for (Operation &op : body)
    if (!isa<ActionOpInterface>(op))
      return op.emitOpError("is not allowed in a 'gpipe.for', expected a "
                            "pipeline action");
  return success();
}

//===----------------------------------------------------------------------===//
// Expanding a program
//===----------------------------------------------------------------------===//

void mlir::gpipe::walkProgram(
    ProgramOp program,
    llvm::function_ref<void(ActionOpInterface, int64_t)> callback) {
  if (program.getBody().empty())
    return;
  auto visit = [&](Operation &op, std::optional<int64_t> iv) {
    auto action = dyn_cast<ActionOpInterface>(op);
    if (!action)
      return;
    int64_t mb = action.getMicrobatchOffset();
    if (action.getMicrobatchBase() && iv)
      mb += *iv;
    callback(action, mb);
  };
  for (Operation &op : program.getBody().front()) {
    if (auto loop = dyn_cast<ForOp>(op)) {
      for (int64_t i = loop.getLowerBound(); i < loop.getUpperBound(); ++i)
        for (Operation &inner : loop.getBody().front())
          visit(inner, i);
      continue;
    }
    visit(op, std::nullopt);
  }
}

int64_t mlir::gpipe::getNumExpandedActions(ProgramOp program) {
  int64_t n = 0;
  if (program.getBody().empty())
    return 0;
  for (Operation &op : program.getBody().front()) {
    if (auto loop = dyn_cast<ForOp>(op))
      n += loop.getTripCount() *
           static_cast<int64_t>(loop.getBody().front().getOperations().size());
    else if (isa<ActionOpInterface>(op))
      ++n;
  }
  return n;
}

//===----------------------------------------------------------------------===//
// Actions
//===----------------------------------------------------------------------===//

LogicalResult mlir::gpipe::detail::verifyActionOp(Operation *op) {
  auto action = cast<ActionOpInterface>(op);
  // ParentOneOf has checked the parent: a program or a loop in one.
  auto program = op->getParentOfType<ProgramOp>();
  if (!program)
    return success();
  auto pipeline = dyn_cast_or_null<PipelineOp>(program->getParentOp());
  if (!pipeline)
    return success();
  FlatSymbolRefAttr stage = action.getStageSymbol();
  int64_t position = pipeline.getStagePosition(stage);
  if (position < 0)
    return op->emitOpError("stage ")
           << stage << " is not a stage of pipeline @" << pipeline.getSymName();

  ActionKind kind = action.getActionKind();
  if (pipeline.isForwardOnly() && kind != ActionKind::Forward &&
      kind != ActionKind::SendF && kind != ActionKind::RecvF)
    return op->emitOpError("has no place in forward-only pipeline @")
           << pipeline.getSymName()
           << ", whose programs run forwards and forward transfers only";
  if (hasMicrobatch(kind)) {
    int64_t first = action.getMicrobatchOffset(), last = first;
    if (Value base = action.getMicrobatchBase()) {
      auto loop = dyn_cast_or_null<ForOp>(op->getParentOp());
      if (!loop || base != loop.getInductionVar())
        return op->emitOpError(
            "expected the micro-batch base to be the enclosing 'gpipe.for' "
            "loop's variable");
      first += loop.getLowerBound();
      last += loop.getUpperBound() - 1;
    }
    int64_t numMicrobatches = pipeline.getNumMicrobatches();
    for (int64_t mb : {first, last})
      if (mb < 0 || mb >= numMicrobatches)
        return op->emitOpError("micro-batch ")
               << mb << " out of range for " << numMicrobatches
               << " micro-batches";
  } else if (action.getMicrobatchBase()) {
    return op->emitOpError("takes no micro-batch");
  }
  if (!isTransferKind(kind))
    return success();

  int64_t peer = action.getPeerRank();
  int64_t numRanks = pipeline.getNumRanks();
  int64_t rank = program.getRankIndex();
  if (peer < 0 || peer >= numRanks)
    return op->emitOpError("peer rank ")
           << peer << " out of range for " << numRanks << " ranks";
  if (peer == rank)
    return op->emitOpError("peer rank ")
           << peer << " is its own rank; stages on one rank hand data over "
           << "in memory";
  int64_t last = pipeline.getNumStages() - 1;
  switch (kind) {
  case ActionKind::SendF:
    if (position == last)
      return op->emitOpError("sends an activation forward from the last stage ")
             << stage;
    break;
  case ActionKind::RecvB:
    if (position == last)
      return op->emitOpError("receives a gradient on the last stage ") << stage;
    break;
  case ActionKind::RecvF:
    if (position == 0)
      return op->emitOpError("receives an activation on the first stage ")
             << stage;
    break;
  case ActionKind::SendB:
    if (position == 0)
      return op->emitOpError("sends a gradient backward from the first stage ")
             << stage;
    break;
  default:
    break;
  }
  return success();
}

LogicalResult mlir::gpipe::detail::verifyActionSymbolUses(
    ActionOpInterface action, SymbolTableCollection &symbolTable) {
  Operation *op = action;
  FlatSymbolRefAttr ref = action.getStageSymbol();
  Operation *found = symbolTable.lookupNearestSymbolFrom(op, ref);
  auto stage = dyn_cast_or_null<StageOp>(found);
  if (!stage)
    return op->emitOpError("stage ") << ref << " does not name a 'gpipe.stage'";

  switch (action.getActionKind()) {
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight:
    if (!stage.hasSplitBackward())
      return op->emitOpError("needs a split backward, but stage ")
             << ref << " declares no backward_input and backward_weight";
    break;
  case ActionKind::Recompute: {
    auto program = op->getParentOfType<ProgramOp>();
    auto pipeline = program
                        ? dyn_cast_or_null<PipelineOp>(program->getParentOp())
                        : PipelineOp();
    if (pipeline && pipeline.getRemat() == Remat::None)
      return op->emitOpError("recomputes in pipeline @")
             << pipeline.getSymName() << ", whose remat policy is none";
    break;
  }
  case ActionKind::SendF:
  case ActionKind::RecvB:
  case ActionKind::RecvF:
  case ActionKind::SendB: {
    bool carriesOutput = action.getActionKind() == ActionKind::SendF ||
                         action.getActionKind() == ActionKind::RecvB;
    Type expected =
        carriesOutput ? stage.getOutputType() : stage.getInputType();
    Type payload = llvm::TypeSwitch<Operation *, Type>(op)
                       .Case<SendOp, RecvOp>(
                           [](auto transfer) { return transfer.getPayload(); })
                       .Default([](Operation *) { return Type(); });
    if (payload != expected)
      return op->emitOpError("expected payload ")
             << expected << " (the " << (carriesOutput ? "output" : "input")
             << " type of stage " << ref << "), got " << payload;
    break;
  }
  default:
    break;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Memory plan attributes
//===----------------------------------------------------------------------===//

LogicalResult SlotAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               SlotKind kind, int64_t stage, int64_t offset,
                               int64_t size, int64_t count, int64_t stride,
                               ArrayRef<int64_t> table) {
  if (!table.empty()) {
    if (static_cast<int64_t>(table.size()) != count)
      return emitError() << "expected a table of one offset per copy (" << count
                         << "), got " << table.size();
    if (llvm::all_of(table, [](int64_t at) { return at < 0; }))
      return emitError() << "expected a table with at least one placed copy";
    for (int64_t at : table)
      if (at < -1 || (at >= 0 && at < offset))
        return emitError() << "expected the table's offsets at or above the "
                              "slot's offset "
                           << offset << " (or -1 for an unused copy), got "
                           << at;
  }
  if (offset < 0 || size < 0)
    return emitError() << "expected a non-negative offset and size, got "
                       << offset << " and " << size;
  if (count < 1)
    return emitError() << "expected at least one copy, got " << count;
  if (count > 1 && stride < size)
    return emitError() << "expected a stride of at least the size " << size
                       << ", got " << stride;
  if (stage < -1 || (stage == -1) != (kind == SlotKind::Scratch))
    return emitError() << "expected stage -1 exactly for the rank's scratch "
                          "slot, got "
                       << stringifySlotKind(kind) << " of stage " << stage;
  return success();
}

LogicalResult ArenaAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t size, int64_t peak, int64_t peakAt,
                                BreakdownAttr breakdown,
                                ArrayRef<SlotAttr> slots) {
  if (size < 0 || peak < 0)
    return emitError() << "expected a non-negative size and peak";
  for (auto [i, slot] : llvm::enumerate(slots))
    for (SlotAttr other : slots.take_front(i))
      if (other.getKind() == slot.getKind() &&
          other.getStage() == slot.getStage())
        return emitError() << "two slots for "
                           << stringifySlotKind(slot.getKind()) << " of stage "
                           << slot.getStage();
  return success();
}

SlotAttr ArenaAttr::lookup(SlotKind kind, int64_t stage) const {
  for (SlotAttr slot : getSlots())
    if (slot.getKind() == kind && slot.getStage() == stage)
      return slot;
  return nullptr;
}

#define GET_OP_CLASSES
#include "gpipe/Dialect/GPipe/IR/GPipeOps.cpp.inc"
