//===- ScheduleConversion.cpp - gpipe IR <-> Schedule -----------*- C++ -*-===//
//
// Implements the conversions between `gpipe.pipeline` programs and the
// plain-data `Schedule`, the boundary traffic of a list of stages, and the
// reporting of schedule-verifier findings at the ops they name (the verifier
// is plain C++ and names actions as "rank R action I" in its messages; those
// references are read back here).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"

#include "gpipe/Analysis/ScheduleVerifier.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::gpipe;

Operation *PipelineSchedule::getOp(int rank, int index) const {
  if (rank < 0 || rank >= static_cast<int>(ops.size()))
    return nullptr;
  if (index < 0 || index >= static_cast<int>(ops[rank].size()))
    return nullptr;
  return ops[rank][index];
}

InFlightDiagnostic mlir::gpipe::emitPipelineError(PipelineOp pipeline) {
  InFlightDiagnostic diag = emitError(pipeline.getLoc());
  diag << "pipeline @" << pipeline.getSymName() << " ";
  return diag;
}

FailureOr<SmallVector<StageOp>>
mlir::gpipe::lookupStages(PipelineOp pipeline,
                          SymbolTableCollection *symbolTable) {
  SymbolTableCollection local;
  SymbolTableCollection &table = symbolTable ? *symbolTable : local;
  SmallVector<StageOp> stages;
  for (Attribute attr : pipeline.getStages()) {
    auto ref = cast<FlatSymbolRefAttr>(attr);
    auto stage = table.lookupNearestSymbolFrom<StageOp>(pipeline, ref);
    if (!stage)
      return emitPipelineError(pipeline)
             << "stage " << ref << " does not name a 'gpipe.stage'";
    stages.push_back(stage);
  }
  return stages;
}

int64_t mlir::gpipe::getPayloadBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  Type element = shaped.getElementType();
  int64_t bits = 0;
  if (element.isIndex())
    bits = 64;
  else if (element.isIntOrFloat())
    bits = element.getIntOrFloatBitWidth();
  return (shaped.getNumElements() * bits + 7) / 8;
}

std::string mlir::gpipe::getPayloadDType(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped)
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  shaped.getElementType().print(os);
  return text;
}

BoundaryTraffic mlir::gpipe::getBoundaryTraffic(ArrayRef<StageOp> stages) {
  BoundaryTraffic traffic;
  for (size_t b = 0; b + 1 < stages.size(); ++b)
    traffic.bytes.push_back(
        getPayloadBytes(StageOp(stages[b]).getOutputType()));
  if (stages.size() > 1)
    traffic.dtype = getPayloadDType(StageOp(stages[0]).getOutputType());
  return traffic;
}

FailureOr<PipelineSchedule>
mlir::gpipe::toSchedule(PipelineOp pipeline,
                        SymbolTableCollection *symbolTable) {
  FailureOr<SmallVector<StageOp>> stages = lookupStages(pipeline, symbolTable);
  if (failed(stages))
    return failure();
  PipelineSchedule result;
  result.stages = std::move(*stages);
  Schedule &schedule = result.schedule;
  schedule.numStages = static_cast<int>(pipeline.getNumStages());
  schedule.numMicrobatches = static_cast<int>(pipeline.getNumMicrobatches());
  schedule.forwardOnly = pipeline.isForwardOnly();
  schedule.stageToRank.assign(schedule.numStages, -1);

  llvm::DenseMap<Attribute, int> stageIndex;
  for (auto [i, attr] : llvm::enumerate(pipeline.getStages()))
    stageIndex[attr] = static_cast<int>(i);

  llvm::DenseMap<Type, std::pair<int64_t, std::string>> payloads;
  // Per stage, how many actions each rank runs of it.
  std::vector<std::map<int, int>> actionsOfStage(schedule.numStages);
  for (ProgramOp program : pipeline.getPrograms()) {
    int rank = static_cast<int>(schedule.ranks.size());
    std::vector<Action> &actions = schedule.ranks.emplace_back();
    std::vector<Operation *> &ops = result.ops.emplace_back();
    actions.reserve(getNumExpandedActions(program));
    ops.reserve(actions.capacity());
    LogicalResult status = success();
    walkProgram(program, [&](ActionOpInterface actionOp, int64_t mb) {
      if (failed(status))
        return;
      Operation *op = actionOp;
      auto it = stageIndex.find(actionOp.getStageSymbol());
      if (it == stageIndex.end()) {
        status = op->emitOpError("stage ")
                 << actionOp.getStageSymbol() << " is not a stage of pipeline @"
                 << pipeline.getSymName();
        return;
      }
      Action action;
      action.kind = actionOp.getActionKind();
      action.stage = it->second;
      action.microbatch = static_cast<int>(mb);
      if (isTransferKind(action.kind)) {
        action.peer = static_cast<int>(actionOp.getPeerRank());
        Type payload = isa<SendOp>(op) ? cast<SendOp>(op).getPayload()
                                       : cast<RecvOp>(op).getPayload();
        // Printing a type is slow; a loop repeats the same few payloads.
        auto [it, inserted] = payloads.try_emplace(payload);
        if (inserted)
          it->second = {getPayloadBytes(payload), getPayloadDType(payload)};
        action.bytes = it->second.first;
        action.dtype = it->second.second;
      }
      ++actionsOfStage[action.stage][rank];
      actions.push_back(std::move(action));
      ops.push_back(op);
    });
    if (failed(status))
      return failure();
    // Ops the walk does not visit (only a broken program has them).
    if (!program.getBody().empty())
      for (Operation &op : program.getBody().front())
        if (!isa<ActionOpInterface, ForOp>(op))
          return op.emitOpError("is not allowed in a program, expected a "
                                "pipeline action or a 'gpipe.for'");
  }
  // A stage runs on the rank with most of its actions (the lowest such
  // rank): one action on a wrong rank then stands out as that action rather
  // than moving the stage.
  for (int s = 0; s < schedule.numStages; ++s) {
    int most = 0;
    for (auto [rank, count] : actionsOfStage[s])
      if (count > most) {
        most = count;
        schedule.stageToRank[s] = rank;
      }
  }
  return result;
}

FailureOr<const PipelineSchedule *>
ScheduleAnalysis::getSchedule(PipelineOp pipeline) {
  Entry &entry = entries[pipeline];
  if (!entry.schedule) {
    FailureOr<PipelineSchedule> converted = toSchedule(pipeline, &symbolTable);
    if (failed(converted))
      return failure();
    entry.schedule = std::make_unique<PipelineSchedule>(std::move(*converted));
  }
  return const_cast<const PipelineSchedule *>(entry.schedule.get());
}

bool ScheduleAnalysis::isVerified(PipelineOp pipeline) const {
  auto it = entries.find(pipeline);
  return it != entries.end() && it->second.verified;
}

void ScheduleAnalysis::setVerified(PipelineOp pipeline) {
  entries[pipeline].verified = true;
}

/// Why `action` of `rank` cannot be an op of `pipeline`, or an empty string.
static std::string checkFits(const Action &action, int rank, int numRanks,
                             int numStages, int numMicrobatches) {
  if (action.stage < 0 || action.stage >= numStages)
    return "stage " + std::to_string(action.stage) + " out of range for " +
           std::to_string(numStages) + " stages";
  if (hasMicrobatch(action.kind) &&
      (action.microbatch < 0 || action.microbatch >= numMicrobatches))
    return "micro-batch " + std::to_string(action.microbatch) +
           " out of range for " + std::to_string(numMicrobatches) +
           " micro-batches";
  if (!isTransferKind(action.kind))
    return "";
  if (action.peer < 0 || action.peer >= numRanks)
    return "peer rank " + std::to_string(action.peer) + " out of range for " +
           std::to_string(numRanks) + " ranks";
  if (action.peer == rank)
    return "the peer is the action's own rank; stages on one rank hand data "
           "over in memory";
  bool towardsNext =
      action.kind == ActionKind::SendF || action.kind == ActionKind::RecvB;
  int other = towardsNext ? action.stage + 1 : action.stage - 1;
  if (other < 0 || other >= numStages)
    return std::string("stage ") + std::to_string(action.stage) + " has no " +
           (towardsNext ? "next" : "previous") + " stage";
  return "";
}

LogicalResult mlir::gpipe::populateProgramsFromSchedule(
    PipelineOp pipeline, const Schedule &schedule, ArrayRef<StageOp> stages,
    ArrayRef<SmallVector<Location>> locations) {
  int numStages = static_cast<int>(pipeline.getNumStages());
  int numMicrobatches = static_cast<int>(pipeline.getNumMicrobatches());
  if (schedule.numStages != numStages ||
      static_cast<int>(stages.size()) != numStages)
    return emitPipelineError(pipeline)
           << "has " << numStages << " stages, the schedule "
           << schedule.numStages;
  if (schedule.numMicrobatches != numMicrobatches)
    return emitPipelineError(pipeline)
           << "has " << numMicrobatches << " micro-batches, the schedule "
           << schedule.numMicrobatches;
  int numRanks = schedule.getNumRanks();
  bool haveLocations = !locations.empty();
  if (haveLocations && static_cast<int>(locations.size()) != numRanks)
    return emitPipelineError(pipeline)
           << "got locations for " << locations.size()
           << " ranks, the schedule has " << numRanks;
  for (int r = 0; r < numRanks; ++r) {
    const std::vector<Action> &program = schedule.ranks[r];
    if (haveLocations && locations[r].size() != program.size())
      return emitPipelineError(pipeline)
             << "got " << locations[r].size() << " locations for rank " << r
             << ", the "
             << "schedule has " << program.size() << " actions";
    for (auto [i, action] : llvm::enumerate(program)) {
      std::string why =
          checkFits(action, r, numRanks, numStages, numMicrobatches);
      if (!why.empty())
        return emitPipelineError(pipeline)
               << "cannot hold rank " << r << " action " << i << " ("
               << describe(action) << "): " << why;
    }
  }

  // Replace the body.
  Region &body = pipeline.getBody();
  if (body.empty())
    body.emplaceBlock();
  Block &block = body.front();
  while (!block.empty())
    block.back().erase();

  OpBuilder builder = OpBuilder::atBlockEnd(&block);
  SmallVector<FlatSymbolRefAttr> symbols;
  for (StageOp stage : stages)
    symbols.push_back(FlatSymbolRefAttr::get(stage.getSymNameAttr()));
  for (int r = 0; r < numRanks; ++r) {
    auto program = ProgramOp::create(builder, pipeline.getLoc(),
                                     builder.getI64IntegerAttr(r), ArenaAttr());
    Block &programBlock = program.getBody().emplaceBlock();
    OpBuilder b = OpBuilder::atBlockEnd(&programBlock);
    const std::vector<Action> &actions = schedule.ranks[r];
    // Actions that carry their own location stay one op each; generated
    // programs are rolled into micro-batch loops.
    SmallVector<ProgramSegment> segments =
        haveLocations ? SmallVector<ProgramSegment>{{0, actions.size(), 1}}
                      : findMicrobatchLoops(actions);
    for (const ProgramSegment &segment : segments) {
      auto emit = [&](OpBuilder &at, size_t i, Value base, int64_t mb) {
        const Action &action = actions[i];
        Location loc = haveLocations ? locations[r][i] : pipeline.getLoc();
        FlatSymbolRefAttr stage = symbols[action.stage];
        StageOp decl = stages[action.stage];
        switch (action.kind) {
        case ActionKind::Forward:
          ForwardOp::create(at, loc, stage, base, mb);
          break;
        case ActionKind::Backward:
          BackwardOp::create(at, loc, stage, base, mb);
          break;
        case ActionKind::BackwardInput:
          BackwardInputOp::create(at, loc, stage, base, mb);
          break;
        case ActionKind::BackwardWeight:
          BackwardWeightOp::create(at, loc, stage, base, mb);
          break;
        case ActionKind::Recompute:
          RecomputeOp::create(at, loc, stage, base, mb);
          break;
        case ActionKind::SendF:
        case ActionKind::RecvF:
        case ActionKind::SendB:
        case ActionKind::RecvB: {
          bool carriesOutput = action.kind == ActionKind::SendF ||
                               action.kind == ActionKind::RecvB;
          Direction direction = isForwardComm(action.kind)
                                    ? Direction::Forward
                                    : Direction::Backward;
          Type payload =
              carriesOutput ? decl.getOutputType() : decl.getInputType();
          if (isSendKind(action.kind))
            SendOp::create(at, loc, stage, base, mb, direction, action.peer,
                           payload);
          else
            RecvOp::create(at, loc, stage, base, mb, direction, action.peer,
                           payload);
          break;
        }
        case ActionKind::ReduceGrad:
          ReduceGradOp::create(at, loc, stage);
          break;
        case ActionKind::Step:
          StepOp::create(at, loc, stage);
          break;
        case ActionKind::SumTied:
          SumTiedOp::create(at, loc, stage);
          break;
        case ActionKind::ClipGrad:
          ClipGradOp::create(at, loc, stage);
          break;
        }
      };
      if (segment.trips == 1) {
        for (size_t i = segment.begin; i < segment.begin + segment.period; ++i)
          emit(b, i, Value(), actions[i].microbatch);
        continue;
      }
      // Loop over micro-batches from the smallest of the first period.
      int64_t lower = std::numeric_limits<int64_t>::max();
      for (size_t j = 0; j < segment.period; ++j)
        lower = std::min<int64_t>(lower, actions[segment.begin + j].microbatch);
      auto loop = ForOp::create(b, pipeline.getLoc(), lower,
                                lower + int64_t(segment.trips));
      OpBuilder inner = OpBuilder::atBlockEnd(&loop.getBody().front());
      Value iv = loop.getInductionVar();
      for (size_t j = 0; j < segment.period; ++j) {
        size_t i = segment.begin + j;
        emit(inner, i, iv, actions[i].microbatch - lower);
      }
    }
  }
  return success();
}

/// Whether `b` is `a` shifted by `shift` micro-batches.
static bool isShifted(const Action &a, const Action &b, int shift) {
  return a.kind == b.kind && a.stage == b.stage && a.peer == b.peer &&
         a.bytes == b.bytes && a.dtype == b.dtype && hasMicrobatch(a.kind) &&
         b.microbatch == a.microbatch + shift;
}

SmallVector<ProgramSegment>
mlir::gpipe::findMicrobatchLoops(ArrayRef<Action> actions, size_t maxPeriod) {
  SmallVector<ProgramSegment> segments;
  size_t n = actions.size();
  size_t i = 0, single = 0; // single: start of the pending run of singles
  auto flushSingles = [&](size_t end) {
    for (size_t k = single; k < end; ++k)
      segments.push_back({k, 1, 1});
  };
  while (i < n) {
    size_t bestPeriod = 0, bestTrips = 0;
    for (size_t p = 1; p <= maxPeriod && i + 2 * p <= n; ++p) {
      size_t trips = 1;
      while (i + (trips + 1) * p <= n) {
        bool same = true;
        for (size_t j = 0; j < p && same; ++j)
          same = isShifted(actions[i + j], actions[i + trips * p + j],
                           static_cast<int>(trips));
        if (!same)
          break;
        ++trips;
      }
      if (trips >= 2 && trips * p > bestTrips * bestPeriod) {
        bestPeriod = p;
        bestTrips = trips;
      }
    }
    if (bestTrips >= 2) {
      flushSingles(i);
      segments.push_back({i, bestPeriod, bestTrips});
      i += bestPeriod * bestTrips;
      single = i;
      continue;
    }
    ++i;
  }
  flushSingles(n);
  return segments;
}

/// Parses the decimal at the front of `text` (at most 9 digits) and drops it.
static bool consumeInt(StringRef &text, int &value) {
  size_t n = 0;
  while (n < text.size() && n < 9 && llvm::isDigit(text[n]))
    ++n;
  if (n == 0)
    return false;
  value = 0;
  for (char c : text.take_front(n))
    value = value * 10 + (c - '0');
  text = text.drop_front(n);
  return true;
}

SmallVector<std::pair<int, int>>
mlir::gpipe::getProblemPositions(const VerifyProblem &problem) {
  SmallVector<std::pair<int, int>> positions;
  auto add = [&](int rank, int index) {
    std::pair<int, int> pos{rank, index};
    if (!llvm::is_contained(positions, pos))
      positions.push_back(pos);
  };
  // Scan words left to right. "rank R" sets the rank that later "action I"
  // and "actions I, J and K" belong to, unless it names the other end of a
  // transfer ("to/from/on/for rank R"); "rank R waits for rank P (action I"
  // is a deadlock edge whose action is R's.
  StringRef rest = problem.message;
  int currentRank = -1;
  auto previousWord = [&](size_t at) {
    StringRef before = StringRef(problem.message).take_front(at).rtrim(' ');
    size_t space = before.find_last_of(" (");
    return space == StringRef::npos ? before : before.drop_front(space + 1);
  };
  while (!rest.empty()) {
    size_t at = problem.message.size() - rest.size();
    bool wordStart = at == 0 || !llvm::isAlnum(problem.message[at - 1]);
    int rank = 0, index = 0;
    if (wordStart && rest.consume_front("rank ") && consumeInt(rest, rank)) {
      StringRef edge = rest;
      int peer = 0;
      if (edge.consume_front(" waits for rank ") && consumeInt(edge, peer) &&
          edge.consume_front(" (action ") && consumeInt(edge, index)) {
        add(rank, index);
        rest = edge;
        continue;
      }
      StringRef word = previousWord(at);
      if (word != "to" && word != "from" && word != "on" && word != "for")
        currentRank = rank;
      continue;
    }
    if (wordStart && currentRank >= 0 && rest.consume_front("actions ")) {
      while (consumeInt(rest, index)) {
        add(currentRank, index);
        if (!rest.consume_front(", ") && !rest.consume_front(" and "))
          break;
      }
      continue;
    }
    if (wordStart && currentRank >= 0 && rest.consume_front("action ")) {
      if (consumeInt(rest, index))
        add(currentRank, index);
      continue;
    }
    rest = rest.drop_front();
  }
  return positions;
}

LogicalResult
mlir::gpipe::emitScheduleProblems(PipelineOp pipeline,
                                  const PipelineSchedule &converted,
                                  const VerifyResult &result) {
  if (result.ok())
    return success();
  for (const VerifyProblem &problem : result.problems) {
    SmallVector<std::pair<int, int>> positions;
    for (auto [rank, index] : getProblemPositions(problem))
      if (converted.getOp(rank, index))
        positions.push_back({rank, index});
    if (positions.empty()) {
      emitError(pipeline.getLoc(), problem.message);
      continue;
    }
    auto [rank, index] = positions.front();
    // Not op->emitError: printing the op with every finding is noise.
    InFlightDiagnostic diag =
        emitError(converted.getOp(rank, index)->getLoc(), problem.message);
    for (auto [r, i] : llvm::drop_begin(positions)) {
      const Action &action = converted.schedule.ranks[r][i];
      Diagnostic &note = diag.attachNote(converted.getOp(r, i)->getLoc());
      if (problem.kind == VerifyProblemKind::Deadlock &&
          isTransferKind(action.kind))
        note << "rank " << r << " waits here for rank " << action.peer << " ("
             << describe(action) << ")";
      else
        note << "see rank " << r << " action " << i << " (" << describe(action)
             << ")";
    }
  }
  if (result.numProblems > static_cast<int>(result.problems.size()))
    emitError(pipeline.getLoc(), result.summary);
  return failure();
}

ActionDurations mlir::gpipe::getStageDurations(ArrayRef<StageOp> stages) {
  ActionDurations durations = ActionDurations::uniform(
      static_cast<int>(stages.size()), /*forward=*/1.0, /*backward=*/2.0);
  for (auto [s, decl] : llvm::enumerate(stages)) {
    int index = static_cast<int>(s);
    StageOp stage = decl;
    if (FloatAttr forward = stage.getForwardTimeAttr()) {
      durations.set(ActionKind::Forward, index, forward.getValueAsDouble());
      durations.set(ActionKind::Recompute, index, forward.getValueAsDouble());
    }
    if (FloatAttr backward = stage.getBackwardTimeAttr()) {
      double seconds = backward.getValueAsDouble();
      durations.set(ActionKind::Backward, index, seconds);
      FloatAttr input = stage.getBackwardInputTimeAttr();
      FloatAttr weight = stage.getBackwardWeightTimeAttr();
      durations.set(ActionKind::BackwardInput, index,
                    input ? input.getValueAsDouble() : seconds / 2);
      durations.set(ActionKind::BackwardWeight, index,
                    weight ? weight.getValueAsDouble() : seconds / 2);
    }
    if (FloatAttr reduce = stage.getReduceTimeAttr())
      durations.set(ActionKind::ReduceGrad, index, reduce.getValueAsDouble());
    if (FloatAttr step = stage.getStepTimeAttr())
      durations.set(ActionKind::Step, index, step.getValueAsDouble());
  }
  return durations;
}

SendBuffering mlir::gpipe::getSendBuffering(PipelineOp pipeline) {
  SendBuffering buffering;
  for (ProgramOp program : pipeline.getPrograms()) {
    ArenaAttr arena = program.getArenaAttr();
    if (!arena)
      continue;
    for (SlotAttr slot : arena.getSlots()) {
      if (slot.getKind() == SlotKind::StagedOutput)
        buffering.setCopies(ActionKind::SendF,
                            static_cast<int>(slot.getStage()),
                            static_cast<int>(slot.getCount()));
      else if (slot.getKind() == SlotKind::StagedInputGrad)
        buffering.setCopies(ActionKind::SendB,
                            static_cast<int>(slot.getStage()),
                            static_cast<int>(slot.getCount()));
    }
  }
  return buffering;
}
