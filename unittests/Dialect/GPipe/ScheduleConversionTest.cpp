//===- ScheduleConversionTest.cpp - gpipe IR <-> Schedule tests -----------===//
//
// Checks the conversions between `gpipe.pipeline` programs and plain
// schedules: generated schedules survive IR -> schedule exactly (peers,
// payload bytes and dtypes included) for many K and M; the IR can hold every
// action of mutated schedules or refuses them without changing the pipeline;
// and every verifier finding on a mutated schedule that names actions is
// reported at ops that exist (the positions are read back from the
// verifier's messages, so its wording is part of the contract). Mutants of
// the zero-bubble, interleaved and V-shaped schedules (split backwards,
// several stages per rank) are each either a reordering that an independent
// executor runs to completion or rejected with a finding that names a rank
// and an action.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Analysis/Schedule.h"
#include "gpipe/Analysis/ScheduleVerifier.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <tuple>

using namespace mlir;
using namespace mlir::gpipe;

namespace {

class ScheduleConversionTest : public ::testing::Test {
protected:
  ScheduleConversionTest()
      : handler(&context, [this](Diagnostic &d) {
          messages.push_back(d.str());
          return success();
        }) {
    context.loadDialect<GPipeDialect, func::FuncDialect>();
  }

  /// A module with `numStages` stages of tensor<4x8xf32> activations (stage
  /// 0 takes i64 tokens) and an empty pipeline @p.
  OwningOpRef<ModuleOp> makeModule(int numStages, int numMicrobatches,
                                   StringRef kind = "gpipe") {
    std::string text = "gpipe.pipeline @p stages [";
    for (int s = 0; s < numStages; ++s)
      text += (s ? ", @s" : "@s") + std::to_string(s);
    text += "] microbatches " + std::to_string(numMicrobatches) + " schedule " +
            kind.str() + " remat stage {\n}\n";
    text += "func.func private @f0(tensor<4x8xi64>) -> tensor<4x8xf32>\n"
            "func.func private @b0(tensor<4x8xi64>, tensor<4x8xf32>)\n"
            "func.func private @f(tensor<4x8xf32>) -> tensor<4x8xf32>\n"
            "func.func private @b(tensor<4x8xf32>, tensor<4x8xf32>) -> "
            "tensor<4x8xf32>\n";
    for (int s = 0; s < numStages; ++s) {
      std::string in = s ? "tensor<4x8xf32>" : "tensor<4x8xi64>";
      text += "gpipe.stage @s" + std::to_string(s) + " index " +
              std::to_string(s) + " : " + in + " -> tensor<4x8xf32> forward " +
              (s ? "@f backward @b\n" : "@f0 backward @b0\n");
    }
    return parseSourceString<ModuleOp>(text, &context);
  }

  /// Like `makeModule`, schedule custom, every stage with the split halves
  /// of its backward.
  OwningOpRef<ModuleOp> makeSplitModule(int numStages, int numMicrobatches) {
    std::string text = "gpipe.pipeline @p stages [";
    for (int s = 0; s < numStages; ++s)
      text += (s ? ", @s" : "@s") + std::to_string(s);
    text += "] microbatches " + std::to_string(numMicrobatches) +
            " schedule custom remat stage {\n}\n";
    text += "func.func private @f0(tensor<4x8xi64>) -> tensor<4x8xf32>\n"
            "func.func private @b0(tensor<4x8xi64>, tensor<4x8xf32>)\n"
            "func.func private @f(tensor<4x8xf32>) -> tensor<4x8xf32>\n"
            "func.func private @b(tensor<4x8xf32>, tensor<4x8xf32>) -> "
            "tensor<4x8xf32>\n";
    for (int s = 0; s < numStages; ++s) {
      std::string in = s ? "tensor<4x8xf32>" : "tensor<4x8xi64>";
      std::string bwd = s ? "@b" : "@b0";
      text += "gpipe.stage @s" + std::to_string(s) + " index " +
              std::to_string(s) + " : " + in + " -> tensor<4x8xf32> forward " +
              (s ? "@f" : "@f0") + " backward " + bwd + " backward_input " +
              bwd + " backward_weight " + bwd + "\n";
    }
    return parseSourceString<ModuleOp>(text, &context);
  }

  static PipelineOp getPipeline(ModuleOp module) {
    return *module.getOps<PipelineOp>().begin();
  }

  MLIRContext context;
  ScopedDiagnosticHandler handler;
  std::vector<std::string> messages;
};

TEST_F(ScheduleConversionTest, GeneratedSchedulesRoundTripExactly) {
  for (int k = 1; k <= 6; ++k) {
    for (int m = 1; m <= 8; ++m) {
      for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
        OwningOpRef<ModuleOp> module = makeModule(k, m);
        ASSERT_TRUE(module) << "K=" << k << " M=" << m;
        PipelineOp pipeline = getPipeline(*module);
        ASSERT_TRUE(succeeded(generateSchedule(pipeline, kind)));
        ASSERT_TRUE(succeeded(verify(*module)));
        EXPECT_EQ(pipeline.getSchedule(), kind);

        BoundaryTraffic traffic = BoundaryTraffic::uniform(k, 4 * 8 * 4);
        Schedule expected = kind == ScheduleKind::GPipe
                                ? buildGPipeSchedule(k, m, traffic)
                                : build1F1BSchedule(k, m, traffic);
        FailureOr<PipelineSchedule> converted = toSchedule(pipeline);
        ASSERT_TRUE(succeeded(converted));
        EXPECT_EQ(converted->schedule, expected)
            << "K=" << k << " M=" << m << "\n"
            << toCSV(converted->schedule) << "vs\n"
            << toCSV(expected);
        EXPECT_TRUE(verifySchedule(converted->schedule).ok());
        // The analysis converts once and keeps the verifier's verdict.
        ScheduleAnalysis schedules(pipeline->getParentOp());
        FailureOr<const PipelineSchedule *> verified =
            verifyPipelineSchedule(pipeline, schedules);
        ASSERT_TRUE(succeeded(verified));
        EXPECT_EQ((*verified)->schedule, expected);
        EXPECT_TRUE(schedules.isVerified(pipeline));
        FailureOr<const PipelineSchedule *> again =
            schedules.getSchedule(pipeline);
        ASSERT_TRUE(succeeded(again));
        EXPECT_EQ(*again, *verified);
        // Every action keeps its op.
        for (size_t r = 0; r < converted->ops.size(); ++r)
          EXPECT_EQ(converted->ops[r].size(), expected.ranks[r].size());
      }
    }
  }
  EXPECT_TRUE(messages.empty()) << messages.front();
}

TEST_F(ScheduleConversionTest, PopulateRefusesWhatTheIRCannotHold) {
  OwningOpRef<ModuleOp> module = makeModule(2, 1);
  PipelineOp pipeline = getPipeline(*module);
  FailureOr<SmallVector<StageOp>> stages = lookupStages(pipeline);
  ASSERT_TRUE(succeeded(stages));
  Schedule schedule = buildGPipeSchedule(2, 1, 128);
  // Both stages on rank 0: the send would go to its own rank.
  Schedule bad = schedule;
  bad.stageToRank = {0, 0};
  for (Action &action : bad.ranks[1])
    bad.ranks[0].push_back(action);
  bad.ranks.pop_back();
  for (Action &action : bad.ranks[0])
    if (isTransferKind(action.kind))
      action.peer = 0;
  EXPECT_TRUE(failed(populateProgramsFromSchedule(pipeline, bad, *stages)));
  EXPECT_FALSE(pipeline.isScheduled());
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("own rank"), std::string::npos) << messages[0];

  Schedule wrongM = schedule;
  wrongM.numMicrobatches = 2;
  EXPECT_TRUE(failed(populateProgramsFromSchedule(pipeline, wrongM, *stages)));
  EXPECT_FALSE(pipeline.isScheduled());

  EXPECT_TRUE(
      succeeded(populateProgramsFromSchedule(pipeline, schedule, *stages)));
  EXPECT_EQ(pipeline.getNumRanks(), 2);
}

TEST_F(ScheduleConversionTest, ProblemPositionsFollowTheMessages) {
  auto positions = [](std::string message) {
    return getProblemPositions({VerifyProblemKind::Order, message});
  };
  using P = SmallVector<std::pair<int, int>>;
  EXPECT_EQ(positions("rank 1 action 5 (1SEND_F3 to rank 2) has no matching "
                      "receive (no 2RECV_F3 on rank 2)"),
            (P{{1, 5}}));
  EXPECT_EQ(positions("deadlock: rank 2 waits for rank 3 (action 5, 2SEND_F1 "
                      "to rank 3), rank 3 waits for rank 2 (action 3, "
                      "3SEND_B0 to rank 2)"),
            (P{{2, 5}, {3, 3}}));
  EXPECT_EQ(positions("stage 0 micro-batch 1 has 3 forwards (rank 0 actions "
                      "1, 4 and 7)"),
            (P{{0, 1}, {0, 4}, {0, 7}}));
  EXPECT_EQ(positions("rank 0 runs 0SEND_F0 once (action 1) and rank 1 runs "
                      "1RECV_F0 2 times (actions 0 and 2); expected exactly "
                      "one of each"),
            (P{{0, 1}, {1, 0}, {1, 2}}));
  EXPECT_EQ(positions("stage 0 micro-batch 1 has no backward"), P{});
}

/// Mutations of a valid schedule that keep every action representable in
/// IR: swap two actions of a rank, drop one, duplicate one, change a
/// micro-batch within range.
Schedule mutate(const Schedule &schedule, std::mt19937 &rng) {
  Schedule result = schedule;
  int rank =
      std::uniform_int_distribution<int>(0, result.getNumRanks() - 1)(rng);
  std::vector<Action> &program = result.ranks[rank];
  int n = static_cast<int>(program.size());
  int i = std::uniform_int_distribution<int>(0, n - 1)(rng);
  int j = std::uniform_int_distribution<int>(0, n - 1)(rng);
  switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
  case 0:
    std::swap(program[i], program[j == i ? (i + 1) % n : j]);
    break;
  case 1:
    program.erase(program.begin() + i);
    break;
  case 2:
    program.insert(program.begin() + j, program[i]);
    break;
  default:
    if (hasMicrobatch(program[i].kind))
      program[i].microbatch =
          (program[i].microbatch + 1) % result.numMicrobatches;
    break;
  }
  return result;
}

TEST_F(ScheduleConversionTest, FindingsOnMutatedSchedulesNameExistingOps) {
  std::mt19937 rng(7);
  int invalid = 0;
  for (int trial = 0; trial < 300; ++trial) {
    int k = 2 + trial % 3, m = 1 + trial % 4;
    Schedule base = trial % 2 ? build1F1BSchedule(k, m, 128)
                              : buildGPipeSchedule(k, m, 128);
    Schedule mutated = mutate(base, rng);
    OwningOpRef<ModuleOp> module = makeModule(k, m);
    PipelineOp pipeline = getPipeline(*module);
    FailureOr<SmallVector<StageOp>> stages = lookupStages(pipeline);
    ASSERT_TRUE(succeeded(stages));
    ASSERT_TRUE(
        succeeded(populateProgramsFromSchedule(pipeline, mutated, *stages)));
    ASSERT_TRUE(succeeded(verify(*module)));
    FailureOr<PipelineSchedule> converted = toSchedule(pipeline);
    ASSERT_TRUE(succeeded(converted));
    VerifyResult result = verifySchedule(converted->schedule);
    if (result.ok())
      continue;
    ++invalid;
    for (const VerifyProblem &problem : result.problems) {
      static const std::regex kActionRef(R"(\bactions? \d)");
      bool namesAction = std::regex_search(problem.message, kActionRef);
      SmallVector<std::pair<int, int>> positions = getProblemPositions(problem);
      EXPECT_EQ(namesAction, !positions.empty()) << problem.message;
      for (auto [r, i] : positions)
        EXPECT_NE(converted->getOp(r, i), nullptr)
            << problem.message << " -> rank " << r << " action " << i;
    }
    messages.clear();
    EXPECT_TRUE(failed(emitScheduleProblems(pipeline, *converted, result)));
    EXPECT_GE(messages.size(), result.problems.size());
  }
  EXPECT_GT(invalid, 100);
}

/// What `mutateSplit` did.
enum class Mutation {
  SwapInputAndWeight, ///< an I and its W trade places
  DropWeight,         ///< a W removed
  WeightBeforeInput,  ///< a W moved right before its I
  WrongRank,          ///< an action moved to a rank without its stage
  Duplicate,          ///< an action repeated elsewhere on its rank
  ReorderTransfers,   ///< two sends/receives of a rank trade places
  MoveTransfer,       ///< a send or receive moved elsewhere on its rank
  ChangePeer,         ///< a send or receive names another rank
  ChangeMicrobatch,   ///< an action's micro-batch shifted by one
  SwapAny,            ///< two actions of a rank trade places
  DropAny,            ///< an action removed
};
constexpr int kNumMutations = 11;

const char *getMutationName(Mutation m) {
  static const char *const kNames[] = {
      "swap I and W",  "drop W",      "W before its I",
      "wrong rank",    "duplicate",   "reorder transfers",
      "move transfer", "change peer", "change micro-batch",
      "swap any",      "drop any"};
  return kNames[static_cast<int>(m)];
}

/// Applies `mutation` to a random place of `schedule`; false when the
/// schedule has no place for it (no W, one rank, ...).
bool mutateSplit(Schedule &schedule, Mutation mutation, std::mt19937 &rng) {
  auto pick = [&](int n) {
    return std::uniform_int_distribution<int>(0, n - 1)(rng);
  };
  int numRanks = schedule.getNumRanks();
  // Positions of the actions satisfying `pred`.
  auto positions = [&](auto pred) {
    std::vector<std::pair<int, int>> found;
    for (int r = 0; r < numRanks; ++r)
      for (int i = 0; i < static_cast<int>(schedule.ranks[r].size()); ++i)
        if (pred(schedule.ranks[r][i]))
          found.push_back({r, i});
    return found;
  };
  auto isW = [](const Action &a) {
    return a.kind == ActionKind::BackwardWeight;
  };
  auto isTransfer = [](const Action &a) { return isTransferKind(a.kind); };
  // The I of the W at (r, i), on the same rank.
  auto inputOf = [&](int r, int i) {
    const Action &w = schedule.ranks[r][i];
    for (int j = 0; j < static_cast<int>(schedule.ranks[r].size()); ++j) {
      const Action &a = schedule.ranks[r][j];
      if (a.kind == ActionKind::BackwardInput && a.stage == w.stage &&
          a.microbatch == w.microbatch)
        return j;
    }
    return -1;
  };
  switch (mutation) {
  case Mutation::SwapInputAndWeight:
  case Mutation::WeightBeforeInput: {
    auto ws = positions(isW);
    if (ws.empty())
      return false;
    auto [r, i] = ws[pick(static_cast<int>(ws.size()))];
    int j = inputOf(r, i);
    if (j < 0)
      return false;
    std::vector<Action> &program = schedule.ranks[r];
    if (mutation == Mutation::SwapInputAndWeight) {
      std::swap(program[i], program[j]);
    } else {
      Action w = program[i];
      program.erase(program.begin() + i);
      program.insert(program.begin() + j, w);
    }
    return true;
  }
  case Mutation::DropWeight: {
    auto ws = positions(isW);
    if (ws.empty())
      return false;
    auto [r, i] = ws[pick(static_cast<int>(ws.size()))];
    schedule.ranks[r].erase(schedule.ranks[r].begin() + i);
    return true;
  }
  case Mutation::WrongRank: {
    if (numRanks < 2)
      return false;
    int r = pick(numRanks);
    std::vector<Action> &program = schedule.ranks[r];
    int i = pick(static_cast<int>(program.size()));
    Action action = program[i];
    int to = pick(numRanks - 1);
    if (to >= r)
      ++to;
    if (schedule.stageToRank[action.stage] == to)
      return false;
    program.erase(program.begin() + i);
    std::vector<Action> &target = schedule.ranks[to];
    target.insert(target.begin() + pick(static_cast<int>(target.size()) + 1),
                  action);
    return true;
  }
  case Mutation::Duplicate: {
    int r = pick(numRanks);
    std::vector<Action> &program = schedule.ranks[r];
    Action action = program[pick(static_cast<int>(program.size()))];
    program.insert(program.begin() + pick(static_cast<int>(program.size()) + 1),
                   action);
    return true;
  }
  case Mutation::ReorderTransfers:
  case Mutation::MoveTransfer: {
    auto ts = positions(isTransfer);
    if (ts.empty())
      return false;
    auto [r, i] = ts[pick(static_cast<int>(ts.size()))];
    std::vector<Action> &program = schedule.ranks[r];
    if (mutation == Mutation::ReorderTransfers) {
      std::vector<int> others;
      for (int j = 0; j < static_cast<int>(program.size()); ++j)
        if (j != i && isTransferKind(program[j].kind))
          others.push_back(j);
      if (others.empty())
        return false;
      std::swap(program[i],
                program[others[pick(static_cast<int>(others.size()))]]);
    } else {
      Action action = program[i];
      program.erase(program.begin() + i);
      program.insert(
          program.begin() + pick(static_cast<int>(program.size()) + 1), action);
    }
    return true;
  }
  case Mutation::ChangePeer: {
    auto ts = positions(isTransfer);
    if (ts.empty() || numRanks < 3)
      return false;
    auto [r, i] = ts[pick(static_cast<int>(ts.size()))];
    Action &action = schedule.ranks[r][i];
    // Another rank, not this one (the IR cannot hold a transfer to itself).
    int peer = pick(numRanks);
    if (peer == r || peer == action.peer)
      return false;
    action.peer = peer;
    return true;
  }
  case Mutation::ChangeMicrobatch: {
    auto ms = positions([](const Action &a) { return hasMicrobatch(a.kind); });
    auto [r, i] = ms[pick(static_cast<int>(ms.size()))];
    Action &action = schedule.ranks[r][i];
    action.microbatch =
        (action.microbatch + 1 + pick(2) * (schedule.numMicrobatches - 2)) %
        schedule.numMicrobatches;
    return schedule.numMicrobatches > 1;
  }
  case Mutation::SwapAny: {
    int r = pick(numRanks);
    std::vector<Action> &program = schedule.ranks[r];
    int n = static_cast<int>(program.size());
    int i = pick(n), j = pick(n);
    if (i == j)
      return false;
    std::swap(program[i], program[j]);
    return true;
  }
  case Mutation::DropAny: {
    int r = pick(numRanks);
    std::vector<Action> &program = schedule.ranks[r];
    program.erase(program.begin() + pick(static_cast<int>(program.size())));
    return true;
  }
  }
  return false;
}

/// An executor independent of the verifier, for the mutants it accepts:
/// runs every rank's program with buffered transfers, each action when what
/// it consumes exists (its stage on this rank, the input from the previous
/// stage or its RECV_F, the gradient from the next stage or its RECV_B, the
/// I before its W, every backward of the stage before its Step; sends go to
/// the neighbour stage's rank). Returns "" when every rank finishes with each
/// (stage, micro-batch) run once (F, and B or I + W), each stage stepped
/// once and every message received once; else what went wrong.
std::string runIndependently(const Schedule &s) {
  int S = s.numStages, M = s.numMicrobatches, R = s.getNumRanks();
  using Key = std::tuple<int, int, int>; // kind, stage, micro-batch
  std::map<Key, int> done;
  // Messages in flight per (direction 0/1, sending stage, micro-batch).
  std::map<Key, int> inFlight;
  auto count = [&](ActionKind k, int stage, int mb) {
    auto it = done.find({static_cast<int>(k), stage, mb});
    return it == done.end() ? 0 : it->second;
  };
  auto gradientReady = [&](int stage, int mb) {
    return count(ActionKind::Backward, stage, mb) +
               count(ActionKind::BackwardInput, stage, mb) >
           0;
  };
  std::vector<size_t> pc(R, 0);
  std::string error;
  auto ready = [&](int r, const Action &a) -> bool {
    if (a.stage < 0 || a.stage >= S || s.stageToRank[a.stage] != r) {
      error = "rank " + std::to_string(r) + " runs " + toString(a) +
              " of a stage it does not hold";
      return false;
    }
    int st = a.stage, mb = a.microbatch;
    if (hasMicrobatch(a.kind) && (mb < 0 || mb >= M)) {
      error = toString(a) + ": micro-batch out of range";
      return false;
    }
    auto rankOf = [&](int stage) {
      return stage >= 0 && stage < S ? s.stageToRank[stage] : -1;
    };
    switch (a.kind) {
    case ActionKind::Forward:
      return st == 0 ||
             (rankOf(st - 1) == r ? count(ActionKind::Forward, st - 1, mb) > 0
                                  : count(ActionKind::RecvF, st, mb) > 0);
    case ActionKind::Recompute:
      return count(ActionKind::Forward, st, mb) > 0;
    case ActionKind::Backward:
    case ActionKind::BackwardInput:
      return count(ActionKind::Forward, st, mb) > 0 &&
             (st == S - 1 ||
              (rankOf(st + 1) == r ? gradientReady(st + 1, mb)
                                   : count(ActionKind::RecvB, st, mb) > 0));
    case ActionKind::BackwardWeight:
      return count(ActionKind::BackwardInput, st, mb) > 0;
    case ActionKind::SendF:
    case ActionKind::SendB: {
      bool forward = a.kind == ActionKind::SendF;
      int to = rankOf(forward ? st + 1 : st - 1);
      if (to < 0 || to == r || a.peer != to) {
        error = "rank " + std::to_string(r) + " sends " + toString(a) +
                " to the wrong rank";
        return false;
      }
      return forward ? count(ActionKind::Forward, st, mb) > 0
                     : gradientReady(st, mb);
    }
    case ActionKind::RecvF:
    case ActionKind::RecvB: {
      bool forward = a.kind == ActionKind::RecvF;
      int from = forward ? st - 1 : st + 1;
      if (rankOf(from) < 0 || rankOf(from) == r || a.peer != rankOf(from)) {
        error = "rank " + std::to_string(r) + " receives " + toString(a) +
                " from the wrong rank";
        return false;
      }
      return inFlight[{forward ? 0 : 1, from, mb}] > 0;
    }
    case ActionKind::ReduceGrad:
    case ActionKind::Step:
    case ActionKind::SumTied:
    case ActionKind::ClipGrad:
      for (int m = 0; m < M; ++m)
        if (count(ActionKind::Backward, st, m) +
                count(ActionKind::BackwardWeight, st, m) ==
            0)
          return false;
      return true;
    }
    return false;
  };
  for (bool progress = true; progress && error.empty();) {
    progress = false;
    for (int r = 0; r < R && error.empty(); ++r) {
      while (pc[r] < s.ranks[r].size() && ready(r, s.ranks[r][pc[r]])) {
        const Action &a = s.ranks[r][pc[r]++];
        progress = true;
        ++done[{static_cast<int>(a.kind), a.stage, a.microbatch}];
        if (a.kind == ActionKind::SendF)
          ++inFlight[{0, a.stage, a.microbatch}];
        else if (a.kind == ActionKind::SendB)
          ++inFlight[{1, a.stage, a.microbatch}];
        else if (a.kind == ActionKind::RecvF)
          --inFlight[{0, a.stage - 1, a.microbatch}];
        else if (a.kind == ActionKind::RecvB)
          --inFlight[{1, a.stage + 1, a.microbatch}];
      }
    }
  }
  if (!error.empty())
    return error;
  for (int r = 0; r < R; ++r)
    if (pc[r] != s.ranks[r].size())
      return "rank " + std::to_string(r) + " is stuck at action " +
             std::to_string(pc[r]);
  for (auto &[key, n] : inFlight)
    if (n != 0)
      return "a message of stage " + std::to_string(std::get<1>(key)) +
             " was never received";
  for (int st = 0; st < S; ++st) {
    if (count(ActionKind::Step, st, -1) != 1)
      return "stage " + std::to_string(st) + " steps " +
             std::to_string(count(ActionKind::Step, st, -1)) + " times";
    for (int mb = 0; mb < M; ++mb) {
      int f = count(ActionKind::Forward, st, mb);
      int b = count(ActionKind::Backward, st, mb);
      int i = count(ActionKind::BackwardInput, st, mb);
      int w = count(ActionKind::BackwardWeight, st, mb);
      if (f != 1 ||
          !((b == 1 && i == 0 && w == 0) || (b == 0 && i == 1 && w == 1)) ||
          count(ActionKind::Recompute, st, mb) > 1)
        return "stage " + std::to_string(st) + " micro-batch " +
               std::to_string(mb) + " runs F " + std::to_string(f) + ", B " +
               std::to_string(b) + ", I " + std::to_string(i) + ", W " +
               std::to_string(w) + " times";
    }
  }
  return "";
}

// >= 1,000 mutants of the new families (ZB-H1, ZB-H2, ZB-V, DualPipeV with
// both B and I + W, interleaved 1F1B with V = 2 and 3, zb-auto), with and
// without recompute. Every mutant the verifier accepts must run to
// completion on the independent executor above (it is then a valid
// schedule); every one it rejects must have a finding that names a rank and
// an action, and those positions must exist, in the schedule and in the IR
// the mutant is written to (where the IR can hold it).
TEST_F(ScheduleConversionTest, SplitAndVirtualMutantsAreRejectedAtAnAction) {
  struct Base {
    ScheduleFamily family;
    int ranks, virtualStages, microbatches;
    bool recompute;
  };
  std::vector<Base> bases;
  for (int k : {2, 3, 4}) {
    for (bool recompute : {false, true}) {
      bases.push_back({ScheduleFamily::ZBH1, k, 1, 2 * k, recompute});
      bases.push_back({ScheduleFamily::ZBH2, k, 1, k + 1, recompute});
      bases.push_back({ScheduleFamily::ZBV, k, 2, 2 * k, recompute});
      bases.push_back({ScheduleFamily::DualPipeV, k, 2, 2 * k, recompute});
      bases.push_back({ScheduleFamily::Interleaved1F1B, k, 2, k, recompute});
      bases.push_back(
          {ScheduleFamily::Interleaved1F1B, k, 3, 2 * k, recompute});
      bases.push_back({ScheduleFamily::ZBAuto, k, 2, k + 2, recompute});
    }
  }
  std::vector<Schedule> schedules;
  bool sawFull = false, sawSplit = false, sawBoth = false;
  for (const Base &b : bases) {
    ScheduleOptions options;
    options.recompute = b.recompute;
    int numStages = b.ranks * b.virtualStages;
    ScheduleOrError built =
        buildSchedule(b.family, b.ranks, b.virtualStages, b.microbatches,
                      BoundaryTraffic::uniform(numStages, 4 * 8 * 4), options);
    ASSERT_TRUE(built.ok())
        << getScheduleFamilyName(b.family) << ": " << built.error;
    ASSERT_TRUE(verifySchedule(built.schedule).ok());
    ASSERT_EQ(runIndependently(built.schedule), "")
        << getScheduleFamilyName(b.family);
    bool full = false, split = false;
    for (const std::vector<Action> &program : built.schedule.ranks)
      for (const Action &a : program) {
        full |= a.kind == ActionKind::Backward;
        split |= a.kind == ActionKind::BackwardWeight;
      }
    sawFull |= full;
    sawSplit |= split;
    sawBoth |= full && split;
    schedules.push_back(std::move(built.schedule));
  }
  EXPECT_TRUE(sawFull && sawSplit && sawBoth);

  std::mt19937 rng(2024);
  static const std::regex kActionRef(R"(\bactions? \d)");
  int mutants = 0, rejected = 0, accepted = 0, inIR = 0;
  std::vector<int> perMutation(kNumMutations, 0);
  for (int trial = 0; trial < 3000 && mutants < 1500; ++trial) {
    const Schedule &base = schedules[trial % schedules.size()];
    auto mutation = static_cast<Mutation>(trial % kNumMutations);
    Schedule mutant = base;
    if (!mutateSplit(mutant, mutation, rng) || mutant == base)
      continue;
    ++mutants;
    ++perMutation[static_cast<int>(mutation)];
    std::string what = std::string(getMutationName(mutation)) + " of\n" +
                       toCSV(base) + "gives\n" + toCSV(mutant);
    VerifyResult result = verifySchedule(mutant);
    if (result.ok()) {
      ++accepted;
      EXPECT_EQ(runIndependently(mutant), "")
          << "the verifier accepts an invalid " << what;
      continue;
    }
    ++rejected;
    bool located = false;
    for (const VerifyProblem &problem : result.problems) {
      SmallVector<std::pair<int, int>> at = getProblemPositions(problem);
      EXPECT_EQ(std::regex_search(problem.message, kActionRef), !at.empty())
          << problem.message;
      for (auto [r, i] : at) {
        ASSERT_TRUE(r >= 0 && r < mutant.getNumRanks() && i >= 0 &&
                    i < static_cast<int>(mutant.ranks[r].size()))
            << problem.message << " -> rank " << r << " action " << i;
        located = true;
      }
    }
    EXPECT_TRUE(located) << "no finding names an action: "
                         << result.getMessage() << "\n"
                         << what;

    // The same mutant in IR, where it fits: findings at existing ops.
    OwningOpRef<ModuleOp> module =
        makeSplitModule(mutant.numStages, mutant.numMicrobatches);
    ASSERT_TRUE(module);
    PipelineOp pipeline = getPipeline(*module);
    FailureOr<SmallVector<StageOp>> stages = lookupStages(pipeline);
    ASSERT_TRUE(succeeded(stages));
    messages.clear();
    if (failed(populateProgramsFromSchedule(pipeline, mutant, *stages)))
      continue;
    ++inIR;
    FailureOr<PipelineSchedule> converted = toSchedule(pipeline);
    ASSERT_TRUE(succeeded(converted)) << what;
    VerifyResult again = verifySchedule(converted->schedule);
    ASSERT_FALSE(again.ok()) << what;
    messages.clear();
    EXPECT_TRUE(failed(emitScheduleProblems(pipeline, *converted, again)));
    bool atOp = false;
    for (const VerifyProblem &problem : again.problems)
      for (auto [r, i] : getProblemPositions(problem)) {
        EXPECT_NE(converted->getOp(r, i), nullptr)
            << problem.message << " -> rank " << r << " action " << i;
        atOp = true;
      }
    EXPECT_TRUE(atOp) << again.getMessage() << "\n" << what;
  }
  EXPECT_GE(mutants, 1000);
  for (int m = 0; m < kNumMutations; ++m)
    EXPECT_GT(perMutation[m], 0) << getMutationName(static_cast<Mutation>(m));
  std::printf("mutants: %d (%d rejected at an action, %d accepted and run "
              "to completion independently; %d also checked in IR)\n",
              mutants, rejected, accepted, inIR);
  for (int m = 0; m < kNumMutations; ++m)
    std::printf("  %-20s %d\n", getMutationName(static_cast<Mutation>(m)),
                perMutation[m]);
  messages.clear();
}

// The dialect's ScheduleKind (ODS) and the analyses' ScheduleFamily
// (ScheduleFamilies.def) name every family alike, and getScheduleFamily
// maps each kind to the family of its name; `custom` is no family.
TEST(ScheduleKindTest, NamesMatchTheFamilies) {
  std::set<std::string> kindNames;
  for (uint32_t i = 0; i <= getMaxEnumValForScheduleKind(); ++i) {
    std::optional<ScheduleKind> kind = symbolizeScheduleKind(i);
    ASSERT_TRUE(kind);
    if (*kind == ScheduleKind::Custom)
      continue;
    std::string name = stringifyScheduleKind(*kind).str();
    kindNames.insert(name);
    ScheduleFamily family;
    ASSERT_TRUE(parseScheduleFamily(name, family)) << name;
    EXPECT_EQ(getScheduleFamily(*kind), family) << name;
  }
  std::set<std::string> familyNames;
  for (ScheduleFamily family : getScheduleFamilies())
    familyNames.insert(getScheduleFamilyName(family));
  EXPECT_EQ(kindNames, familyNames);
}

} // namespace
