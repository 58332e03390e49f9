//===- PyTorchSchedulesTest.cpp - PyTorch's own schedules -------*- C++ -*-===//
//
// The schedules torch.distributed.pipelining generates, stored as CSV under
// test/Schedules/PyTorch (generate_pytorch_schedules.py, listed in its
// manifest.json), read by `parseCSV`. For every stored file: it parses (or
// fails with the known located error), a compute-only order completed by
// `insertCommunication` verifies, a file with PyTorch's own sends and
// receives verifies as written (or fails in the known way) and once
// re-placed; each stage sits on the rank its class places it on (round-robin
// for the interleaved classes, V-shaped for ZBV and DualPipeV); which stages
// accumulate weight gradients out of micro-batch order; and the bubble
// fraction and per-rank peak of held activations simulated with F = 1,
// B = 2 (I = W = 1), free transfers; the known answer per file is in
// `getExpected` (GPIPE_PRINT_EXPECTED=1 prints the entries for the files as
// they are, after a regeneration). Also the PyTorch-only cell spellings
// (composite OVERLAP_F_B cells, actions without effect) and their errors, and
// what is wrong with PyTorch's Schedule1F1B order.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Schedule.h"
#include "gpipe/Analysis/ScheduleVerifier.h"
#include "gpipe/Analysis/Timeline.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace mlir::gpipe;

namespace {

std::string getScheduleDir() {
  return std::string(GPIPE_SOURCE_DIR) + "/test/Schedules/PyTorch/";
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// What the analysis of one stored file gives.
struct Outcome {
  /// parseCSV's error; empty when the file parses.
  std::string parseError;
  /// For a file with PyTorch's sends and receives: whether it verifies as
  /// written (after appending the Steps PyTorch does not write).
  bool ownCommsVerify = false;
  /// The stages whose B-or-W micro-batches are not increasing in program
  /// order.
  std::vector<int> outOfOrderStages;
  /// Simulated with the sends and receives `insertCommunication` places.
  double bubble = 0;
  /// The compute order's own bubble (`getAsyncBubble`).
  double asyncBubble = 0;
  /// Simulated with PyTorch's own sends and receives (run as blocking
  /// rendezvous) where they verify, else 0.
  double ownCommsBubble = 0;
  /// Per rank, the most micro-batches whose forward has run and whose
  /// backward (B, or W for a split backward) has not, over all its stages.
  std::vector<int> peakPerRank;
};

/// The rank each stage should sit on for `className`.
std::vector<int> getExpectedPlacement(const std::string &className, int k,
                                      int v) {
  std::vector<int> rankOf(k * v);
  bool vShape =
      className == "ScheduleZBVZeroBubble" || className == "ScheduleDualPipeV";
  for (int s = 0; s < k * v; ++s) {
    int round = s / k, pos = s % k;
    rankOf[s] = vShape && round % 2 == 1 ? k - 1 - pos : pos;
  }
  return rankOf;
}

std::vector<int> getOutOfOrderStages(const Schedule &schedule) {
  std::vector<int> stages;
  for (int s = 0; s < schedule.numStages; ++s) {
    int last = -1;
    for (const Action &a : schedule.ranks[schedule.stageToRank[s]]) {
      if (a.stage != s || (a.kind != ActionKind::Backward &&
                           a.kind != ActionKind::BackwardWeight))
        continue;
      if (a.microbatch < last) {
        stages.push_back(s);
        break;
      }
      last = a.microbatch;
    }
  }
  return stages;
}

std::vector<int> getPeakPerRank(const Schedule &schedule) {
  std::vector<int> peaks;
  for (const std::vector<Action> &program : schedule.ranks) {
    int held = 0, peak = 0;
    for (const Action &a : program) {
      if (a.kind == ActionKind::Forward)
        peak = std::max(peak, ++held);
      else if (a.kind == ActionKind::Backward ||
               a.kind == ActionKind::BackwardWeight)
        --held;
    }
    peaks.push_back(peak);
  }
  return peaks;
}

/// The bubble fraction of the compute order alone, as with asynchronous
/// sends and free transfers: every compute action starts as soon as its rank
/// is free and its input exists (the forward before it, the input gradient
/// after it, the input-gradient half before a weight half); sends, receives,
/// reductions and steps take no time. -1 if the order cannot run.
double getAsyncBubble(const Schedule &schedule,
                      const ActionDurations &durations) {
  int numRanks = schedule.getNumRanks(), numStages = schedule.numStages;
  int numMicrobatches = schedule.numMicrobatches;
  // End times per (kind, stage, micro-batch); -1 until run.
  auto index = [&](ActionKind kind, int stage, int mb) {
    return (static_cast<int>(kind) * numStages + stage) * numMicrobatches + mb;
  };
  std::vector<double> end(kNumActionKinds * numStages * numMicrobatches, -1);
  auto endOf = [&](ActionKind kind, int stage, int mb) {
    return end[index(kind, stage, mb)];
  };
  std::vector<size_t> pc(numRanks, 0);
  std::vector<double> freeAt(numRanks, 0);
  double busy = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < numRanks; ++r) {
      const std::vector<Action> &program = schedule.ranks[r];
      for (; pc[r] < program.size(); ++pc[r]) {
        const Action &a = program[pc[r]];
        if (!isComputeKind(a.kind))
          continue;
        std::vector<double> inputs;
        if (a.kind == ActionKind::Forward) {
          if (a.stage > 0)
            inputs.push_back(
                endOf(ActionKind::Forward, a.stage - 1, a.microbatch));
        } else if (a.kind == ActionKind::BackwardWeight) {
          inputs.push_back(
              endOf(ActionKind::BackwardInput, a.stage, a.microbatch));
        } else {
          inputs.push_back(endOf(ActionKind::Forward, a.stage, a.microbatch));
          if (a.kind != ActionKind::Recompute && a.stage + 1 < numStages)
            inputs.push_back(std::max(
                endOf(ActionKind::Backward, a.stage + 1, a.microbatch),
                endOf(ActionKind::BackwardInput, a.stage + 1, a.microbatch)));
        }
        double start = freeAt[r];
        bool ready = true;
        for (double input : inputs) {
          ready = ready && input >= 0;
          start = std::max(start, input);
        }
        if (!ready)
          break;
        double duration = durations.get(a.kind, a.stage);
        end[index(a.kind, a.stage, a.microbatch)] = freeAt[r] =
            start + duration;
        busy += duration;
        progress = true;
      }
    }
  }
  double makespan = 0;
  for (int r = 0; r < numRanks; ++r) {
    if (pc[r] < schedule.ranks[r].size())
      return -1;
    makespan = std::max(makespan, freeAt[r]);
  }
  return makespan > 0 ? 1.0 - busy / (numRanks * makespan) : 0.0;
}

/// Parses, completes, verifies and simulates one stored file; fails the
/// test (with the file named) where gpipe rejects what it must accept.
Outcome analyze(const std::string &file, const std::string &className, int k,
                int v, int m, bool comms) {
  SCOPED_TRACE(file);
  Outcome out;
  int numStages = k * v;
  BoundaryTraffic traffic = BoundaryTraffic::uniform(numStages, 64);
  ScheduleOrError parsed =
      parseCSV(readFile(getScheduleDir() + file), numStages, m, traffic);
  if (!parsed.ok()) {
    out.parseError = parsed.error;
    return out;
  }
  Schedule &schedule = parsed.schedule;
  EXPECT_EQ(schedule.getNumRanks(), k);
  EXPECT_EQ(schedule.stageToRank, getExpectedPlacement(className, k, v));
  // PyTorch writes no optimizer step: one per stage at the end of its rank.
  for (int s = 0; s < numStages; ++s)
    schedule.ranks[schedule.stageToRank[s]].push_back(Action::step(s));
  if (comms)
    out.ownCommsVerify = verifySchedule(schedule).ok();
  // Sends and receives placed by gpipe (any in the file dropped).
  ScheduleOrError full = insertCommunication(schedule, traffic);
  if (!full.ok()) {
    ADD_FAILURE() << "insertCommunication: " << full.error;
    return out;
  }
  VerifyResult verified = verifySchedule(full.schedule);
  EXPECT_TRUE(verified.ok()) << verified.getMessage();
  // Both depend on the compute order alone.
  out.outOfOrderStages = getOutOfOrderStages(full.schedule);
  out.peakPerRank = getPeakPerRank(full.schedule);
  ActionDurations durations = ActionDurations::uniform(numStages, 1, 2);
  Timeline timeline = simulate(full.schedule, durations);
  EXPECT_TRUE(timeline.ok()) << timeline.error;
  out.bubble = timeline.bubbleFraction;
  out.asyncBubble = getAsyncBubble(full.schedule, durations);
  if (out.ownCommsVerify) {
    Timeline own = simulate(schedule, durations);
    EXPECT_TRUE(own.ok()) << own.error;
    out.ownCommsBubble = own.bubbleFraction;
  }
  return out;
}

std::string join(const std::vector<int> &values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text;
}

/// The known answer per stored file: the parse error (empty when it parses),
/// whether PyTorch's own sends and receives verify, the stages accumulating
/// out of micro-batch order, the three bubble fractions (4 decimals) and the
/// per-rank peaks.
struct Expected {
  const char *parseError;
  bool ownCommsVerify;
  std::vector<int> outOfOrderStages;
  double bubble;
  double asyncBubble;
  double ownCommsBubble;
  std::vector<int> peakPerRank;
};

const std::map<std::string, Expected> &getExpected() {
  static const std::map<std::string, Expected> expected = {
      {"gpipe_k2_v1_m4.csv", {"", false, {}, 0.2000, 0.2000, 0.0000, {4, 4}}},
      {"gpipe_k2_v1_m8.csv", {"", false, {}, 0.1111, 0.1111, 0.0000, {8, 8}}},
      {"gpipe_k4_v1_m4.csv",
       {"", false, {}, 0.4286, 0.4286, 0.0000, {4, 4, 4, 4}}},
      {"gpipe_k4_v1_m8.csv",
       {"", false, {}, 0.2727, 0.2727, 0.0000, {8, 8, 8, 8}}},
      {"gpipe_k4_v1_m2.csv",
       {"", false, {}, 0.6000, 0.6000, 0.0000, {2, 2, 2, 2}}},
      {"1f1b_k2_v1_m4.csv",
       {"line 2 (rank 1) column 7: micro-batch 4 in '1F4' out of range for 4 "
        "micro-batches",
        false,
        {},
        0.0000,
        0.0000,
        0.0000,
        {}}},
      {"1f1b_k2_v1_m8.csv",
       {"line 2 (rank 1) column 15: micro-batch 8 in '1F8' out of range for 8 "
        "micro-batches",
        false,
        {},
        0.0000,
        0.0000,
        0.0000,
        {}}},
      {"1f1b_k4_v1_m4.csv",
       {"line 4 (rank 3) column 7: micro-batch 4 in '3F4' out of range for 4 "
        "micro-batches",
        false,
        {},
        0.0000,
        0.0000,
        0.0000,
        {}}},
      {"1f1b_k4_v1_m8.csv",
       {"line 4 (rank 3) column 15: micro-batch 8 in '3F8' out of range for 8 "
        "micro-batches",
        false,
        {},
        0.0000,
        0.0000,
        0.0000,
        {}}},
      {"interleaved1f1b_k2_v2_m4.csv",
       {"", false, {}, 0.2258, 0.1111, 0.0000, {5, 3}}},
      {"interleaved1f1b_k2_v2_m4_comms.csv",
       {"", true, {}, 0.2258, 0.1111, 0.4000, {5, 3}}},
      {"interleaved1f1b_k2_v2_m8.csv",
       {"", false, {}, 0.2381, 0.0588, 0.0000, {5, 3}}},
      {"interleaved1f1b_k2_v2_m8_comms.csv",
       {"", true, {}, 0.2381, 0.0588, 0.3846, {5, 3}}},
      {"interleaved1f1b_k2_v3_m4.csv",
       {"", false, {}, 0.2340, 0.0769, 0.0000, {7, 5}}},
      {"interleaved1f1b_k2_v3_m8.csv",
       {"", false, {}, 0.2727, 0.0400, 0.0000, {7, 5}}},
      {"interleaved1f1b_k2_v4_m4.csv",
       {"", false, {}, 0.2381, 0.0588, 0.0000, {9, 7}}},
      {"interleaved1f1b_k2_v4_m8.csv",
       {"", false, {}, 0.2889, 0.0303, 0.0000, {9, 7}}},
      {"interleaved1f1b_k4_v2_m4.csv",
       {"", false, {}, 0.2727, 0.2727, 0.0000, {8, 8, 7, 5}}},
      {"interleaved1f1b_k4_v2_m4_comms.csv",
       {"", true, {}, 0.2941, 0.2727, 0.5636, {8, 8, 7, 5}}},
      {"interleaved1f1b_k4_v2_m8.csv",
       {"", false, {}, 0.1579, 0.1579, 0.0000, {11, 9, 7, 5}}},
      {"interleaved1f1b_k4_v2_m8_comms.csv",
       {"", true, {}, 0.1724, 0.1579, 0.4947, {11, 9, 7, 5}}},
      {"interleaved1f1b_k4_v3_m4.csv",
       {"", false, {}, 0.2000, 0.2000, 0.0000, {12, 12, 11, 9}}},
      {"interleaved1f1b_k4_v3_m8.csv",
       {"", false, {}, 0.1111, 0.1111, 0.0000, {15, 13, 11, 9}}},
      {"interleaved1f1b_k4_v4_m4.csv",
       {"", false, {}, 0.1579, 0.1579, 0.0000, {16, 16, 15, 13}}},
      {"interleaved1f1b_k4_v4_m8.csv",
       {"", false, {}, 0.0857, 0.0857, 0.0000, {19, 17, 15, 13}}},
      {"interleavedzerobubble_k2_v2_m4.csv",
       {"", false, {}, 0.0400, 0.0400, 0.0000, {4, 4}}},
      {"interleavedzerobubble_k2_v2_m4_comms.csv",
       {"", true, {}, 0.0400, 0.0400, 0.2727, {4, 4}}},
      {"interleavedzerobubble_k2_v2_m8.csv",
       {"", false, {}, 0.0204, 0.0204, 0.0000, {4, 4}}},
      {"interleavedzerobubble_k2_v2_m8_comms.csv",
       {"", true, {}, 0.0204, 0.0204, 0.2615, {4, 4}}},
      {"interleavedzerobubble_k2_v3_m4.csv",
       {"", false, {}, 0.0270, 0.0270, 0.0000, {6, 6}}},
      {"interleavedzerobubble_k2_v3_m8.csv",
       {"", false, {}, 0.0137, 0.0137, 0.0000, {6, 6}}},
      {"interleavedzerobubble_k2_v4_m4.csv",
       {"", false, {}, 0.0204, 0.0204, 0.0000, {8, 8}}},
      {"interleavedzerobubble_k2_v4_m8.csv",
       {"", false, {}, 0.0103, 0.0103, 0.0000, {8, 8}}},
      {"interleavedzerobubble_k4_v2_m4.csv",
       {"", false, {}, 0.1111, 0.1111, 0.0000, {8, 8, 8, 8}}},
      {"interleavedzerobubble_k4_v2_m4_comms.csv",
       {"", true, {}, 0.1111, 0.1111, 0.4286, {8, 8, 8, 8}}},
      {"interleavedzerobubble_k4_v2_m8.csv",
       {"", false, {}, 0.0588, 0.0588, 0.0000, {8, 8, 8, 8}}},
      {"interleavedzerobubble_k4_v2_m8_comms.csv",
       {"", true, {}, 0.0588, 0.0588, 0.3846, {8, 8, 8, 8}}},
      {"interleavedzerobubble_k4_v3_m4.csv",
       {"", false, {}, 0.0769, 0.0769, 0.0000, {12, 12, 12, 12}}},
      {"interleavedzerobubble_k4_v3_m8.csv",
       {"", false, {}, 0.0400, 0.0400, 0.0000, {12, 12, 12, 12}}},
      {"interleavedzerobubble_k4_v4_m4.csv",
       {"", false, {}, 0.0588, 0.0588, 0.0000, {16, 16, 16, 16}}},
      {"interleavedzerobubble_k4_v4_m8.csv",
       {"", false, {}, 0.0303, 0.0303, 0.0000, {16, 16, 16, 16}}},
      {"zbvzerobubble_k2_v2_m4.csv",
       {"", false, {}, 0.0400, 0.0400, 0.0000, {4, 4}}},
      {"zbvzerobubble_k2_v2_m4_comms.csv",
       {"", true, {}, 0.0400, 0.0400, 0.2258, {4, 4}}},
      {"zbvzerobubble_k2_v2_m8.csv",
       {"", false, {}, 0.0204, 0.0204, 0.0000, {4, 4}}},
      {"zbvzerobubble_k2_v2_m8_comms.csv",
       {"", true, {}, 0.0204, 0.0204, 0.2381, {4, 4}}},
      {"zbvzerobubble_k4_v2_m4.csv",
       {"", false, {}, 0.2000, 0.2000, 0.0000, {5, 6, 7, 8}}},
      {"zbvzerobubble_k4_v2_m4_comms.csv",
       {"", true, {}, 0.2000, 0.2000, 0.4000, {5, 6, 7, 8}}},
      {"zbvzerobubble_k4_v2_m8.csv",
       {"", false, {}, 0.0588, 0.0588, 0.0000, {8, 8, 8, 8}}},
      {"zbvzerobubble_k4_v2_m8_comms.csv",
       {"", true, {}, 0.0588, 0.0588, 0.3143, {8, 8, 8, 8}}},
      {"dualpipev_k2_v2_m4.csv",
       {"", false, {}, 0.1111, 0.0400, 0.0000, {5, 5}}},
      {"dualpipev_k2_v2_m4_comms.csv",
       {"", true, {}, 0.1429, 0.0400, 0.3333, {5, 5}}},
      {"dualpipev_k2_v2_m8.csv",
       {"", false, {}, 0.1864, 0.0204, 0.0000, {5, 5}}},
      {"dualpipev_k2_v2_m8_comms.csv",
       {"", true, {}, 0.2000, 0.0204, 0.3333, {5, 5}}},
      {"dualpipev_k4_v2_m8.csv",
       {"", false, {}, 0.1864, 0.0588, 0.0000, {9, 9, 9, 9}}},
      {"dualpipev_k4_v2_m8_comms.csv",
       {"", true, {}, 0.2000, 0.0588, 0.4074, {9, 9, 9, 9}}},
  };
  return expected;
}

/// Prints the table docs/Schedules.md shows; with GPIPE_PRINT_EXPECTED set,
/// also the known-answer entries for the current files.
TEST(PyTorchSchedulesTest, StoredSchedules) {
  std::string manifestText = readFile(getScheduleDir() + "manifest.json");
  ASSERT_FALSE(manifestText.empty())
      << "no " << getScheduleDir() << "manifest.json";
  nlohmann::json manifest = nlohmann::json::parse(manifestText);
  const nlohmann::json &files = manifest.at("files");
  EXPECT_EQ(files.size(), getExpected().size())
      << "the stored files and the known answers differ in number";
  bool printExpected = std::getenv("GPIPE_PRINT_EXPECTED") != nullptr;
  std::printf("%-40s %2s %2s %2s %-6s %-9s %-8s %-7s %-7s %-7s %s\n", "file",
              "K", "V", "M", "parses", "own comms", "in order", "bubble",
              "async", "own", "peak activations per rank");
  for (const nlohmann::json &entry : files) {
    std::string file = entry.at("file");
    std::string className = entry.at("class");
    int k = entry.at("K"), v = entry.at("V"), m = entry.at("M");
    bool comms = entry.at("comms");
    Outcome out = analyze(file, className, k, v, m, comms);
    bool parses = out.parseError.empty();
    const char *ownComms = !comms               ? "-"
                           : out.ownCommsVerify ? "verifies"
                                                : "fails";
    const char *inOrder = !parses                        ? "-"
                          : out.outOfOrderStages.empty() ? "yes"
                                                         : "no";
    std::printf("%-40s %2d %2d %2d %-6s %-9s %-8s %-7.4f %-7.4f %-7.4f %s\n",
                file.c_str(), k, v, m, parses ? "yes" : "no", ownComms, inOrder,
                out.bubble, out.asyncBubble, out.ownCommsBubble,
                join(out.peakPerRank).c_str());
    if (printExpected)
      std::printf("      {\"%s\",\n       {\"%s\", %s, {%s}, %.4f, %.4f, "
                  "%.4f, {%s}}},\n",
                  file.c_str(), out.parseError.c_str(),
                  out.ownCommsVerify ? "true" : "false",
                  join(out.outOfOrderStages).c_str(), out.bubble,
                  out.asyncBubble, out.ownCommsBubble,
                  join(out.peakPerRank).c_str());
    auto it = getExpected().find(file);
    if (it == getExpected().end()) {
      ADD_FAILURE() << file << " has no known answer";
      continue;
    }
    const Expected &want = it->second;
    EXPECT_EQ(out.parseError, want.parseError) << file;
    EXPECT_EQ(out.ownCommsVerify, want.ownCommsVerify) << file;
    EXPECT_EQ(out.outOfOrderStages, want.outOfOrderStages) << file;
    EXPECT_NEAR(out.bubble, want.bubble, 5e-5) << file;
    EXPECT_NEAR(out.asyncBubble, want.asyncBubble, 5e-5) << file;
    EXPECT_NEAR(out.ownCommsBubble, want.ownCommsBubble, 5e-5) << file;
    EXPECT_EQ(out.peakPerRank, want.peakPerRank) << file;
  }
}

std::string cells(const std::vector<Action> &program) {
  std::string text;
  for (size_t i = 0; i < program.size(); ++i)
    text += (i ? "," : "") + toString(program[i]);
  return text;
}

TEST(PyTorchSchedulesTest, CompositeAndIgnoredCells) {
  // DualPipeV's overlapped forward/backward: the sub-actions in order, both
  // in the composite's column; FSDP and wait actions are dropped.
  ScheduleOrError parsed =
      parseCSV("0UNSHARD,3UNSHARD,0F0,(0F1;3B0)OVERLAP_F_B,0WAIT_SEND_F0,"
               "0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\r\n"
               "1F0,( 2F0 ; 1I0 )OVERLAP_F_B,1W0,1WAIT_SEND_B0\r\n",
               4, 2);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(cells(parsed.schedule.ranks[0]), "0F0,0F1,3B0,0REDUCE_GRAD");
  EXPECT_EQ(cells(parsed.schedule.ranks[1]), "1F0,2F0,1I0,1W0");
  EXPECT_EQ(parsed.schedule.stageToRank, (std::vector<int>{0, 1, 1, 0}));

  auto error = [](std::string_view text) { return parseCSV(text, 2, 2).error; };
  EXPECT_EQ(error("0F0,(0F1;1B0\n1F0\n"),
            "line 1 (rank 0) column 2: malformed composite action '(0F1;1B0', "
            "expected (<action>;<action>)OVERLAP_F_B");
  EXPECT_EQ(error("0F0,(0F1;1B0)OVERLAP\n1F0\n"),
            "line 1 (rank 0) column 2: malformed composite action "
            "'(0F1;1B0)OVERLAP', expected (<action>;<action>)OVERLAP_F_B");
  EXPECT_EQ(error("0F0,( )OVERLAP_F_B\n1F0\n"),
            "line 1 (rank 0) column 2: composite action '( )OVERLAP_F_B' "
            "holds no action");
  EXPECT_EQ(error("0F0,(0F1;0SEND_F1)OVERLAP_F_B\n1F0\n"),
            "line 1 (rank 0) column 2: action '0SEND_F1' in a composite "
            "action, expected a compute action");
  EXPECT_EQ(error("0F0,(0F1;0UNSHARD)OVERLAP_F_B\n1F0\n"),
            "line 1 (rank 0) column 2: action '0UNSHARD' in a composite "
            "action, expected a compute action");
  EXPECT_EQ(error("0F0,((0F1)OVERLAP_F_B)OVERLAP_F_B\n1F0\n"),
            "line 1 (rank 0) column 2: malformed composite action "
            "'((0F1)OVERLAP_F_B)OVERLAP_F_B', expected "
            "(<action>;<action>)OVERLAP_F_B");
  EXPECT_EQ(error("0F0\n1F0,(1F1;1X0)OVERLAP_F_B\n"),
            "line 2 (rank 1) column 2: unknown action type 'X' in '1X0'");
  EXPECT_EQ(error("0F0\n1F0,(1F1;1B2)OVERLAP_F_B\n"),
            "line 2 (rank 1) column 2: micro-batch 2 in '1B2' out of range for "
            "2 micro-batches");
  // Dropped actions are still checked.
  EXPECT_EQ(error("0F0,0WAIT_SEND_F\n1F0\n"),
            "line 1 (rank 0) column 2: action '0WAIT_SEND_F' needs a "
            "micro-batch");
  EXPECT_EQ(error("0F0,0UNSHARD1\n1F0\n"),
            "line 1 (rank 0) column 2: action '0UNSHARD1' takes no "
            "micro-batch");
  EXPECT_EQ(error("0F0,5RESHARD\n1F0\n"),
            "line 1 (rank 0) column 2: stage 5 in '5RESHARD' out of range for "
            "2 stages");
}

TEST(PyTorchSchedulesTest, Schedule1F1BLastRank) {
  // Schedule1F1B's order (which its runtime does not use) numbers the last
  // rank's forwards 1..M instead of 0..M-1, so the reader rejects it (the
  // known answers above). Renumbered, it is gpipe's own 1F1B compute order.
  for (int k : {2, 4}) {
    for (int m : {4, 8}) {
      std::string file =
          "1f1b_k" + std::to_string(k) + "_v1_m" + std::to_string(m) + ".csv";
      SCOPED_TRACE(file);
      ScheduleOrError parsed =
          parseCSV(readFile(getScheduleDir() + file), k, m + 1);
      ASSERT_TRUE(parsed.ok()) << parsed.error;
      Schedule built = build1F1BSchedule(k, m, 64);
      for (int r = 0; r < k; ++r) {
        std::vector<Action> program;
        for (Action a : parsed.schedule.ranks[r]) {
          if (a.kind == ActionKind::ReduceGrad)
            continue;
          if (r == k - 1 && a.kind == ActionKind::Forward)
            --a.microbatch;
          program.push_back(a);
        }
        std::vector<Action> want;
        for (const Action &a : built.ranks[r])
          if (a.kind == ActionKind::Forward || a.kind == ActionKind::Backward)
            want.push_back(a);
        EXPECT_EQ(cells(program), cells(want)) << "rank " << r;
      }
    }
  }
}

TEST(PyTorchSchedulesTest, OutOfOrderAccumulation) {
  // The check behind the table's "in order" column: stage 1 adds the weight
  // gradient of micro-batch 1 before that of micro-batch 0; stage 0 is in
  // order.
  ScheduleOrError parsed = parseCSV("0F0,0F1,0B0,0B1,0STEP\n"
                                    "1F0,1F1,1I0,1I1,1W1,1W0,1STEP\n",
                                    2, 2, BoundaryTraffic::uniform(2, 64));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  ScheduleOrError full =
      insertCommunication(parsed.schedule, BoundaryTraffic::uniform(2, 64));
  ASSERT_TRUE(full.ok()) << full.error;
  EXPECT_TRUE(verifySchedule(full.schedule).ok());
  EXPECT_EQ(getOutOfOrderStages(full.schedule), (std::vector<int>{1}));
  EXPECT_EQ(getPeakPerRank(full.schedule), (std::vector<int>{2, 2}));
}

} // namespace
