//===- ScheduleConversionTest.cpp - gpipe IR <-> Schedule tests -----------===//
//
// Checks the conversions between `gpipe.pipeline` programs and plain
// schedules: generated schedules survive IR -> schedule exactly (peers,
// payload bytes and dtypes included) for many K and M; the IR can hold every
// action of mutated schedules or refuses them without changing the pipeline;
// and every verifier finding on a mutated schedule that names actions is
// reported at ops that exist (the positions are read back from the
// verifier's messages, so its wording is part of the contract).
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

#include <random>
#include <regex>
#include <string>

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
        EXPECT_TRUE(succeeded(verifyPipelineSchedule(pipeline)));
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

} // namespace
