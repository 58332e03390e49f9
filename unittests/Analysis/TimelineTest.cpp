//===- TimelineTest.cpp - Timeline simulator tests --------------*- C++ -*-===//
//
// Unit tests of the timeline simulator: GPipe's bubble equals the closed form
// (K-1)/(M+K-1) with uniform costs (and so does 1F1B's), the rendezvous timing
// of transfers, held activations (1F1B at most K-k on stage k, GPipe M), the
// Chrome trace (parses as JSON, one X event per action, flows per transfer)
// and the SVG picture (starts with <svg, tags balance). Buffered sends: the
// timing of a send that goes on alone, and the schedules with several
// stages per rank reaching their closed forms once their sends are
// buffered (the copies chosen by chooseSendBuffering).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Timeline.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace mlir::gpipe;

namespace {

TEST(TimelineTest, GPipeBubbleMatchesClosedForm) {
  for (int k = 1; k <= 16; ++k) {
    for (int m = 1; m <= 64; m += (m < 10 ? 1 : 9)) {
      double ideal = getIdealBubbleFraction(k, m);
      EXPECT_DOUBLE_EQ(ideal, static_cast<double>(k - 1) / (m + k - 1));
      for (bool oneFOneB : {false, true}) {
        Schedule s = oneFOneB ? build1F1BSchedule(k, m, 64)
                              : buildGPipeSchedule(k, m, 64);
        // F = B = 1, free transfers; and the usual B = 2F.
        for (double backward : {1.0, 2.0}) {
          Timeline t = simulate(s, ActionDurations::uniform(k, 1, backward));
          ASSERT_TRUE(t.ok()) << t.error;
          EXPECT_NEAR(t.makespan, (m + k - 1) * (1 + backward), 1e-9)
              << "K=" << k << " M=" << m << " 1F1B=" << oneFOneB;
          EXPECT_NEAR(t.bubbleFraction, ideal, 1e-12)
              << "K=" << k << " M=" << m << " 1F1B=" << oneFOneB;
          for (double busy : t.busy)
            EXPECT_NEAR(busy, m * (1 + backward), 1e-9);
        }
      }
    }
  }
}

TEST(TimelineTest, ActivationsHeld) {
  for (int k = 1; k <= 12; ++k) {
    for (int m = 1; m <= 40; m += 3) {
      Timeline g = simulate(buildGPipeSchedule(k, m, 8),
                            ActionDurations::uniform(k, 1, 2));
      Timeline o = simulate(build1F1BSchedule(k, m, 8),
                            ActionDurations::uniform(k, 1, 2));
      ASSERT_TRUE(g.ok() && o.ok());
      ASSERT_EQ(static_cast<int>(o.peakActivations.size()), k);
      for (int s = 0; s < k; ++s) {
        EXPECT_EQ(g.peakActivations[s], m);
        EXPECT_LE(o.peakActivations[s], k - s);
        EXPECT_LE(o.peakActivations[s], k);
        EXPECT_EQ(o.peakActivations[s], std::min(k - s, m));
      }
    }
  }
}

TEST(TimelineTest, RendezvousTiming) {
  // K=2, M=1: F0 on rank 0 [0,1], transfer 0.5, F0 on rank 1 [1.5,2.5],
  // B0 [2.5,4.5], gradient back [4.5,5], B0 on rank 0 [5,7].
  Schedule s = buildGPipeSchedule(2, 1, 64);
  Timeline t = simulate(s, ActionDurations::uniform(2, 1, 2, 0.5));
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_DOUBLE_EQ(t.makespan, 7);
  // Rank 1 posts its receive at 0; both ends finish at max(0, 1) + 0.5.
  ASSERT_EQ(toString(s.ranks[1][0]), "1RECV_F0");
  EXPECT_DOUBLE_EQ(t.ranks[1][0].start, 0);
  EXPECT_DOUBLE_EQ(t.ranks[1][0].end, 1.5);
  ASSERT_EQ(toString(s.ranks[0][1]), "0SEND_F0");
  EXPECT_DOUBLE_EQ(t.ranks[0][1].start, 1);
  EXPECT_DOUBLE_EQ(t.ranks[0][1].end, 1.5);
  EXPECT_DOUBLE_EQ(t.busy[0], 3);
  EXPECT_DOUBLE_EQ(t.busy[1], 3);
  EXPECT_DOUBLE_EQ(t.bubbleFraction, 1 - 6.0 / 14);
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < t.ranks[r].size(); ++i)
      EXPECT_EQ(t.ranks[r][i].action, static_cast<int>(i));
}

TEST(TimelineTest, BufferedSendTiming) {
  // K=2, M=1 with both slots buffered and transfers of 0.5: rank 0's send
  // of F0 runs [1, 1.5] into its copy; rank 1 had posted its receive at 0
  // and takes the payload at 1.5.
  Schedule s = buildGPipeSchedule(2, 1, 64);
  SendBuffering buffering;
  buffering.setCopies(ActionKind::SendF, 0, 1);
  buffering.setCopies(ActionKind::SendB, 1, 1);
  Timeline t = simulate(s, ActionDurations::uniform(2, 1, 2, 0.5), buffering);
  ASSERT_TRUE(t.ok()) << t.error;
  EXPECT_DOUBLE_EQ(t.ranks[0][1].start, 1);
  EXPECT_DOUBLE_EQ(t.ranks[0][1].end, 1.5);
  EXPECT_DOUBLE_EQ(t.ranks[1][0].end, 1.5);
  EXPECT_DOUBLE_EQ(t.makespan, 7);
}

TEST(TimelineTest, BufferedSendsReachTheClosedForms) {
  // Uniform F = I = W: under rendezvous a rank of interleaved 1F1B at
  // K = 2 waits for its peer to reach the matching receive; with staging
  // copies every family with two stages per rank reaches its closed form
  // (DualPipeV, which has none, ZB-V's).
  struct Case {
    ScheduleFamily family;
    ScheduleFamily closedForm;
  };
  for (Case c :
       {Case{ScheduleFamily::Interleaved1F1B, ScheduleFamily::Interleaved1F1B},
        Case{ScheduleFamily::ZBV, ScheduleFamily::ZBV},
        Case{ScheduleFamily::DualPipeV, ScheduleFamily::ZBV}}) {
    for (int K : {2, 4}) {
      const int V = 2, M = 8;
      ScheduleOrError built = buildSchedule(
          c.family, K, V, M, BoundaryTraffic::uniform(K * V, 256));
      ASSERT_TRUE(built.ok()) << built.error;
      ActionDurations durations = ActionDurations::uniform(K * V, 1, 2);
      SendBuffering buffering =
          chooseSendBuffering(built.schedule, durations, 2);
      Timeline rendezvous = simulate(built.schedule, durations);
      Timeline buffered = simulate(built.schedule, durations, buffering);
      ASSERT_TRUE(rendezvous.ok() && buffered.ok());
      std::optional<double> idle =
          getClosedFormIdleTime(c.closedForm, K, V, M, 1, 1, 1);
      ASSERT_TRUE(idle);
      double closed = *idle / (*idle + V * M * 3.0);
      std::string what = std::string(getScheduleFamilyName(c.family)) +
                         " K=" + std::to_string(K);
      EXPECT_NEAR(buffered.bubbleFraction, closed, 1e-9) << what;
      EXPECT_LE(buffered.makespan, rendezvous.makespan + 1e-9) << what;
      // The copies chosen keep what two copies everywhere give.
      SendBuffering two;
      for (int stage = 0; stage < K * V; ++stage) {
        two.setCopies(ActionKind::SendF, stage, 2);
        two.setCopies(ActionKind::SendB, stage, 2);
      }
      EXPECT_NEAR(simulate(built.schedule, durations, two).makespan,
                  buffered.makespan, 1e-9)
          << what;
    }
  }
  // Interleaved at K = 2 needs them: 0.158 under rendezvous.
  ScheduleOrError interleaved =
      buildSchedule(ScheduleFamily::Interleaved1F1B, 2, 2, 8,
                    BoundaryTraffic::uniform(4, 256));
  ASSERT_TRUE(interleaved.ok());
  ActionDurations durations = ActionDurations::uniform(4, 1, 2);
  EXPECT_GT(simulate(interleaved.schedule, durations).bubbleFraction, 0.15);
  EXPECT_TRUE(chooseSendBuffering(interleaved.schedule, durations, 2).any());
  // 1F1B gains nothing: every slot stays a rendezvous.
  Schedule oneFOneB = build1F1BSchedule(4, 8, 256);
  EXPECT_FALSE(
      chooseSendBuffering(oneFOneB, ActionDurations::uniform(4, 1, 2), 2)
          .any());
  EXPECT_FALSE(
      chooseSendBuffering(oneFOneB, ActionDurations::uniform(4, 1, 2), 0)
          .any());
}

TEST(TimelineTest, PerStageDurations) {
  // A slow last stage: GPipe's makespan is set by it.
  ActionDurations d = ActionDurations::uniform(3, 1, 2);
  d.set(ActionKind::Forward, 2, 3);
  d.set(ActionKind::Backward, 2, 6);
  EXPECT_DOUBLE_EQ(d.get(ActionKind::Forward, 2), 3);
  EXPECT_DOUBLE_EQ(d.get(ActionKind::Forward, 9), 0);
  Timeline t = simulate(buildGPipeSchedule(3, 4, 8), d);
  ASSERT_TRUE(t.ok()) << t.error;
  // Forwards reach stage 2 at 2, then 4 x 3 + 4 x 6 there, then 2 + 2 back.
  EXPECT_DOUBLE_EQ(t.makespan, 2 + 36 + 4);
}

TEST(TimelineTest, GradientReductionOverlapsTheRestOfTheRank) {
  // 1F1B, K=2, M=2 with a REDUCE_GRAD after each stage's last backward:
  // F=1, B=2, reduce 5, step 0.5. The reduction does not hold up the rank
  // (the last stage's second gradient still leaves at once); each step
  // waits for its stage's sum.
  Schedule s = insertGradientReductions(build1F1BSchedule(2, 2, 64));
  ActionDurations d = ActionDurations::uniform(2, 1, 2);
  for (int stage : {0, 1}) {
    d.set(ActionKind::ReduceGrad, stage, 5);
    d.set(ActionKind::Step, stage, 0.5);
  }
  Timeline t = simulate(s, d);
  ASSERT_TRUE(t.ok()) << t.error;
  std::map<std::pair<int, int>, TimedAction> at;
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < s.ranks[r].size(); ++i)
      at[{r, static_cast<int>(s.ranks[r][i].kind)}] = t.ranks[r][i];
  TimedAction reduce1 = at[{1, static_cast<int>(ActionKind::ReduceGrad)}];
  TimedAction step1 = at[{1, static_cast<int>(ActionKind::Step)}];
  TimedAction reduce0 = at[{0, static_cast<int>(ActionKind::ReduceGrad)}];
  TimedAction step0 = at[{0, static_cast<int>(ActionKind::Step)}];
  EXPECT_DOUBLE_EQ(reduce1.end - reduce1.start, 5);
  EXPECT_DOUBLE_EQ(step1.start, reduce1.end);
  EXPECT_DOUBLE_EQ(step0.start, reduce0.end);
  // Without reductions the pipeline ends at (M+K-1)(F+B) = 9 plus the
  // step; rank 0's last backward ends at 9 whatever rank 1's reduction.
  EXPECT_DOUBLE_EQ(reduce0.start, 9);
  EXPECT_DOUBLE_EQ(t.makespan, 9 + 5 + 0.5);
}

TEST(TimelineTest, Errors) {
  Schedule s = buildGPipeSchedule(2, 2, 8);
  Schedule broken = s;
  broken.ranks[0].erase(broken.ranks[0].begin() + 1);
  Timeline t = simulate(broken, ActionDurations::uniform(2, 1, 1));
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.error.rfind("cannot simulate an invalid schedule: schedule is "
                          "invalid",
                          0),
            0u)
      << t.error;
  EXPECT_TRUE(t.ranks.empty());

  t = simulate(s, ActionDurations::uniform(1, 1, 1));
  EXPECT_EQ(t.error, "durations cover 1 stages, the schedule has 2");

  ActionDurations negative = ActionDurations::uniform(2, 1, 1);
  negative.set(ActionKind::Backward, 1, -1);
  t = simulate(s, negative);
  EXPECT_EQ(t.error, "duration of B on stage 1 is -1.000000, expected finite "
                     "and non-negative");

  ActionDurations nan = ActionDurations::uniform(2, 1, 1);
  nan.transfer[0] = std::nan("");
  t = simulate(s, nan);
  EXPECT_EQ(t.error.rfind("transfer time of boundary 0 is", 0), 0u) << t.error;

  EXPECT_EQ(toChromeTrace(s, t), "");
  std::string svg = toSVG(s, t);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("transfer time of boundary 0"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Exports
//===----------------------------------------------------------------------===//

TEST(TimelineTest, ChromeTrace) {
  ScheduleOptions options;
  options.recompute = true;
  Schedule s =
      build1F1BSchedule(4, 6, BoundaryTraffic::uniform(4, 512), options);
  Timeline t = simulate(s, ActionDurations::uniform(4, 1e-3, 2e-3, 1e-4));
  ASSERT_TRUE(t.ok()) << t.error;
  std::string text = toChromeTrace(s, t);
  nlohmann::json trace = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(trace.is_discarded());
  ASSERT_TRUE(trace.is_object());
  const nlohmann::json &events = trace["traceEvents"];
  ASSERT_TRUE(events.is_array());

  size_t numActions = 0, numSends = 0;
  for (const std::vector<Action> &program : s.ranks) {
    numActions += program.size();
    for (const Action &a : program)
      numSends += isSendKind(a.kind);
  }
  size_t numX = 0, numStart = 0, numFinish = 0;
  std::map<int, std::string> threadNames;
  std::map<std::string, int> names;
  for (const nlohmann::json &e : events) {
    std::string ph = e.value("ph", "");
    ASSERT_EQ(e.value("pid", -1), 0);
    if (ph == "X") {
      ++numX;
      ASSERT_TRUE(e["ts"].is_number());
      ASSERT_TRUE(e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0);
      ASSERT_TRUE(e["args"].contains("stage"));
      ++names[e["name"].get<std::string>()];
      int tid = e["tid"].get<int>();
      EXPECT_EQ(e["args"]["stage"].get<int>(), tid); // one stage per rank
    } else if (ph == "M" && e["name"] == "thread_name") {
      threadNames[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    } else if (ph == "s") {
      ++numStart;
    } else if (ph == "f") {
      ++numFinish;
      EXPECT_EQ(e.value("bp", ""), "e");
    }
  }
  EXPECT_EQ(numX, numActions);
  EXPECT_EQ(numStart, numSends);
  EXPECT_EQ(numFinish, numSends);
  EXPECT_EQ(threadNames.size(), 4u);
  EXPECT_EQ(threadNames[2], "rank 2 (stage 2)");
  // Names: "F3", "B3", "R3", "SEND_F3", "STEP"; F3 once per stage.
  EXPECT_EQ(names["F3"], 4);
  EXPECT_EQ(names["B3"], 4);
  EXPECT_EQ(names["R3"], 4);
  EXPECT_EQ(names["SEND_F3"], 3);
  EXPECT_EQ(names["RECV_B3"], 3);
  EXPECT_EQ(names["STEP"], 4);

  // Timestamps in microseconds: the makespan shows up as the latest end.
  double latest = 0;
  for (const nlohmann::json &e : events)
    if (e.value("ph", "") == "X")
      latest = std::max(latest, e["ts"].get<double>() + e["dur"].get<double>());
  EXPECT_NEAR(latest, t.makespan * 1e6, 1e-6);

  // Flow ids pair up: each "s" id has one "f" with the same id.
  std::map<int, int> ids;
  for (const nlohmann::json &e : events) {
    std::string ph = e.value("ph", "");
    if (ph == "s")
      ++ids[e["id"].get<int>()];
    else if (ph == "f")
      ids[e["id"].get<int>()] += 100;
  }
  for (auto [id, count] : ids)
    EXPECT_EQ(count, 101) << "flow " << id;
}

/// Checks that every tag is closed in order; returns the number of elements
/// or -1 when unbalanced.
int countBalancedElements(const std::string &xml) {
  std::vector<std::string> stack;
  int elements = 0;
  size_t pos = 0;
  while ((pos = xml.find('<', pos)) != std::string::npos) {
    size_t end = xml.find('>', pos);
    if (end == std::string::npos)
      return -1;
    std::string tag = xml.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty())
      return -1;
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1))
        return -1;
      stack.pop_back();
      continue;
    }
    ++elements;
    if (tag.back() == '/')
      continue;
    stack.push_back(tag.substr(0, tag.find_first_of(" \t\n")));
  }
  return stack.empty() ? elements : -1;
}

TEST(TimelineTest, SVG) {
  ScheduleOptions options;
  options.recompute = true;
  Schedule s =
      build1F1BSchedule(4, 8, BoundaryTraffic::uniform(4, 512), options);
  Timeline t = simulate(s, ActionDurations::uniform(4, 1, 2, 0.05));
  ASSERT_TRUE(t.ok()) << t.error;
  std::string svg = toSVG(s, t);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_GT(countBalancedElements(svg), 100);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // Row labels, legend and axis.
  EXPECT_NE(svg.find(">rank 3 (stage 3)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">forward (F)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">backward (B)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">recompute (R)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">send</text>"), std::string::npos);
  EXPECT_NE(svg.find(">time (s)</text>"), std::string::npos);
  // Micro-batch numbers inside boxes.
  EXPECT_NE(svg.find(">7</text>"), std::string::npos);
  // Nothing outside what XML allows unescaped in text.
  EXPECT_EQ(svg.find("&&"), std::string::npos);

  // A GPipe picture in milliseconds, and an interleaved-looking label.
  Schedule g = buildGPipeSchedule(2, 3, 8);
  Timeline tg = simulate(g, ActionDurations::uniform(2, 1e-3, 2e-3));
  std::string svg2 = toSVG(g, tg);
  EXPECT_GT(countBalancedElements(svg2), 20);
  EXPECT_NE(svg2.find(">time (ms)</text>"), std::string::npos);
  EXPECT_EQ(countBalancedElements("<svg><g></svg></g>"), -1);
}

} // namespace
