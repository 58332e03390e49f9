//===- Timeline.cpp - Schedule timeline simulation --------------*- C++ -*-===//
//
// Implements the timeline simulator (every rank runs its verified program in
// order through the run of Rendezvous.h; a send and its receive end at the
// later start plus the boundary's transfer time, a buffered send once its
// staging copy is free plus the transfer time, and its receive once both it
// and the send have ended), the derived
// figures (makespan, busy time, bubble fraction, peak held activations), and
// the two exports: a Chrome/Perfetto trace built with nlohmann::json and a
// standalone SVG picture.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Timeline.h"

#include "gpipe/Analysis/Rendezvous.h"
#include "gpipe/Analysis/ScheduleVerifier.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

using namespace mlir::gpipe;

//===----------------------------------------------------------------------===//
// Durations
//===----------------------------------------------------------------------===//

ActionDurations ActionDurations::uniform(int numStages, double forward,
                                         double backward, double transfer) {
  ActionDurations durations;
  std::array<double, kNumActionKinds> perKind{};
  perKind[static_cast<int>(ActionKind::Forward)] = forward;
  perKind[static_cast<int>(ActionKind::Backward)] = backward;
  perKind[static_cast<int>(ActionKind::BackwardInput)] = backward / 2;
  perKind[static_cast<int>(ActionKind::BackwardWeight)] = backward / 2;
  perKind[static_cast<int>(ActionKind::Recompute)] = forward;
  durations.perStage.assign(std::max(numStages, 0), perKind);
  durations.transfer.assign(numStages > 1 ? numStages - 1 : 0, transfer);
  return durations;
}

void ActionDurations::set(ActionKind kind, int stage, double seconds) {
  if (stage < 0)
    return;
  if (stage >= static_cast<int>(perStage.size()))
    perStage.resize(stage + 1, std::array<double, kNumActionKinds>{});
  perStage[stage][static_cast<int>(kind)] = seconds;
}

double ActionDurations::get(ActionKind kind, int stage) const {
  if (stage < 0 || stage >= static_cast<int>(perStage.size()))
    return 0;
  return perStage[stage][static_cast<int>(kind)];
}

double ActionDurations::getTransfer(int boundary) const {
  if (boundary < 0 || boundary >= static_cast<int>(transfer.size()))
    return 0;
  return transfer[boundary];
}

double mlir::gpipe::getIdealBubbleFraction(int numStages, int numMicrobatches) {
  if (numStages < 1 || numMicrobatches < 1)
    return 0;
  return static_cast<double>(numStages - 1) /
         static_cast<double>(numMicrobatches + numStages - 1);
}

//===----------------------------------------------------------------------===//
// Simulation
//===----------------------------------------------------------------------===//

namespace {

/// (direction, receiving stage, micro-batch): what identifies a transfer.
std::tuple<bool, int, int> getTransferKey(const Action &action) {
  bool forward = isForwardComm(action.kind);
  int receiver = action.stage;
  if (action.kind == ActionKind::SendF)
    receiver = action.stage + 1;
  else if (action.kind == ActionKind::SendB)
    receiver = action.stage - 1;
  return {forward, receiver, action.microbatch};
}

bool isFinite(double value) { return std::isfinite(value); }

} // namespace

Timeline mlir::gpipe::simulate(const Schedule &schedule,
                               const ActionDurations &durations,
                               const SendBuffering &buffering) {
  Timeline timeline;
  VerifyResult verified = verifySchedule(schedule);
  if (!verified.ok()) {
    timeline.error =
        "cannot simulate an invalid schedule: " + verified.summary +
        (verified.problems.empty() ? std::string()
                                   : "; " + verified.problems.front().message);
    return timeline;
  }
  int numStages = schedule.numStages;
  int numRanks = schedule.getNumRanks();
  if (static_cast<int>(durations.perStage.size()) < numStages) {
    timeline.error = "durations cover " +
                     std::to_string(durations.perStage.size()) +
                     " stages, the schedule has " + std::to_string(numStages);
    return timeline;
  }
  if (!durations.transfer.empty() &&
      static_cast<int>(durations.transfer.size()) < numStages - 1) {
    timeline.error =
        "transfer times cover " + std::to_string(durations.transfer.size()) +
        " boundaries, the schedule has " + std::to_string(numStages - 1);
    return timeline;
  }
  for (int s = 0; s < numStages; ++s) {
    for (int k = 0; k < kNumActionKinds; ++k) {
      double value = durations.perStage[s][k];
      if (!isFinite(value) || value < 0) {
        timeline.error =
            "duration of " +
            std::string(getActionKindName(static_cast<ActionKind>(k))) +
            " on stage " + std::to_string(s) + " is " + std::to_string(value) +
            ", expected finite and non-negative";
        return timeline;
      }
    }
  }
  for (size_t b = 0; b < durations.transfer.size(); ++b) {
    double value = durations.transfer[b];
    if (!isFinite(value) || value < 0) {
      timeline.error = "transfer time of boundary " + std::to_string(b) +
                       " is " + std::to_string(value) +
                       ", expected finite and non-negative";
      return timeline;
    }
  }

  timeline.ranks.resize(numRanks);
  std::vector<double> clock(numRanks, 0.0);
  for (int r = 0; r < numRanks; ++r)
    timeline.ranks[r].resize(schedule.ranks[r].size());
  // A REDUCE_GRAD runs on the rank's communication lane (one all-reduce at
  // a time): the rank goes on with its program, and the stage's STEP waits
  // for the sum.
  std::vector<double> commClock(numRanks, 0.0);
  std::vector<double> reduced(numStages, 0.0);
  RendezvousObserver observer;
  observer.onAction = [&](int r, int i) {
    const Action &a = schedule.ranks[r][i];
    double seconds = durations.get(a.kind, a.stage);
    if (a.kind == ActionKind::ReduceGrad) {
      double start = std::max(clock[r], commClock[r]);
      commClock[r] = start + seconds;
      timeline.ranks[r][i] = {i, start, commClock[r]};
      if (a.stage >= 0 && a.stage < numStages)
        reduced[a.stage] = commClock[r];
      return;
    }
    if (a.kind == ActionKind::Step && a.stage >= 0 && a.stage < numStages)
      clock[r] = std::max(clock[r], reduced[a.stage]);
    double end = clock[r] + seconds;
    timeline.ranks[r][i] = {i, clock[r], end};
    clock[r] = end;
  };
  observer.onTransfer = [&](int r, int i, int p, int j) {
    const Action &a = schedule.ranks[r][i];
    int boundary =
        static_cast<int>(::gpipe::abi::getTransferBoundary(a.kind, a.stage));
    double end = std::max(clock[r], clock[p]) + durations.getTransfer(boundary);
    timeline.ranks[r][i] = {i, clock[r], end};
    timeline.ranks[p][j] = {j, clock[p], end};
    clock[r] = clock[p] = end;
  };
  // Buffered sends: a staging copy is free again once the receive of its
  // last payload has ended.
  std::map<std::tuple<bool, int, int>, double> copyFree;
  observer.onSend = [&](int r, int i) {
    const Action &a = schedule.ranks[r][i];
    int boundary =
        static_cast<int>(::gpipe::abi::getTransferBoundary(a.kind, a.stage));
    double start = std::max(clock[r], copyFree[buffering.getCopyKey(a)]);
    double end = start + durations.getTransfer(boundary);
    timeline.ranks[r][i] = {i, clock[r], end};
    clock[r] = end;
  };
  observer.onReceive = [&](int r, int i, int p, int j) {
    double end = std::max(clock[r], timeline.ranks[p][j].end);
    timeline.ranks[r][i] = {i, clock[r], end};
    copyFree[buffering.getCopyKey(schedule.ranks[p][j])] = end;
    clock[r] = end;
  };
  RendezvousResult run = runRendezvous(schedule, observer, buffering);
  for (int r = 0; r < numRanks; ++r) {
    if (!run.isFinished(schedule, r)) {
      // Unreachable for a verified schedule; kept so that a verifier bug
      // cannot turn into a bogus timeline.
      timeline = Timeline();
      timeline.error = "simulation stuck at rank " + std::to_string(r) +
                       " action " + std::to_string(run.stoppedAt[r]);
      return timeline;
    }
  }

  timeline.busy.assign(numRanks, 0.0);
  timeline.busyWithSteps.assign(numRanks, 0.0);
  timeline.peakActivations.assign(numStages, 0);
  std::vector<int> held(numStages, 0);
  double totalBusy = 0;
  for (int r = 0; r < numRanks; ++r) {
    for (size_t i = 0; i < schedule.ranks[r].size(); ++i) {
      const Action &a = schedule.ranks[r][i];
      const TimedAction &t = timeline.ranks[r][i];
      timeline.makespan = std::max(timeline.makespan, t.end);
      if (isComputeKind(a.kind))
        timeline.busy[r] += t.end - t.start;
      if (isComputeKind(a.kind) || a.kind == ActionKind::Step)
        timeline.busyWithSteps[r] += t.end - t.start;
      if (a.kind == ActionKind::Forward) {
        int &count = held[a.stage];
        ++count;
        timeline.peakActivations[a.stage] =
            std::max(timeline.peakActivations[a.stage], count);
      } else if (a.kind == ActionKind::Backward ||
                 a.kind == ActionKind::BackwardWeight) {
        --held[a.stage];
      }
    }
    totalBusy += timeline.busy[r];
  }
  if (timeline.makespan > 0)
    timeline.bubbleFraction =
        1.0 - totalBusy / (static_cast<double>(numRanks) * timeline.makespan);
  return timeline;
}

SendBuffering mlir::gpipe::chooseSendBuffering(const Schedule &schedule,
                                               const ActionDurations &durations,
                                               int maxCopies) {
  SendBuffering chosen;
  if (maxCopies < 1)
    return chosen;
  std::vector<std::pair<ActionKind, int>> slots = getSendSlots(schedule);
  // The durations are predictions and the real ones move from step to
  // step: a copy earns its bytes if it helps on the predicted durations or
  // on perturbed ones (each (stage, kind) off by up to 25%, fixed
  // pseudo-random draws), where a rendezvous makes the faster side wait.
  std::vector<ActionDurations> cases = {durations};
  uint32_t state = 0x9e3779b9u;
  auto uniform = [&] { // a linear congruential draw in [-1, 1]
    state = state * 1664525u + 1013904223u;
    return static_cast<double>(state >> 8) / double(1u << 23) - 1.0;
  };
  for (int trial = 0; trial < kSendBufferingTrials; ++trial) {
    ActionDurations jittered = durations;
    for (auto &perKind : jittered.perStage)
      for (double &seconds : perKind)
        seconds *= 1.0 + 0.25 * uniform();
    cases.push_back(std::move(jittered));
  }
  auto cost = [&](const SendBuffering &buffering) {
    double total = 0;
    for (const ActionDurations &d : cases) {
      Timeline timeline = simulate(schedule, d, buffering);
      if (!timeline.ok())
        return std::numeric_limits<double>::infinity();
      total += timeline.makespan;
    }
    return total;
  };
  for (auto [kind, stage] : slots)
    chosen.setCopies(kind, stage, maxCopies);
  double full = cost(chosen);
  if (!std::isfinite(full))
    return SendBuffering();
  // Each slot in turn down to the fewest copies that keep the cost within
  // a thousandth of the most copies' (the others as decided so far; the
  // bound is against the fixed target, so the losses cannot add up).
  double target = full * (1 + 1e-3);
  for (auto [kind, stage] : slots) {
    for (int copies = 0; copies < maxCopies; ++copies) {
      SendBuffering trial = chosen;
      trial.setCopies(kind, stage, copies);
      if (cost(trial) <= target) {
        chosen = trial;
        break;
      }
    }
  }
  return chosen;
}

//===----------------------------------------------------------------------===//
// Exports
//===----------------------------------------------------------------------===//

namespace {

std::string getRankLabel(const Schedule &schedule, int rank) {
  std::vector<int> stages = schedule.getStagesOfRank(rank);
  std::string label = "rank " + std::to_string(rank) + " (stage";
  if (stages.size() != 1)
    label += "s";
  for (size_t i = 0; i < stages.size(); ++i)
    label += (i ? ", " : " ") + std::to_string(stages[i]);
  return label + ")";
}

/// The trace/picture name of an action: its type and micro-batch, "F3".
std::string getShortName(const Action &action) {
  std::string name = getActionKindName(action.kind);
  if (hasMicrobatch(action.kind))
    name += std::to_string(action.microbatch);
  return name;
}

const char *getCategory(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
    return "forward";
  case ActionKind::Backward:
  case ActionKind::BackwardInput:
  case ActionKind::BackwardWeight:
    return "backward";
  case ActionKind::Recompute:
    return "recompute";
  case ActionKind::SendF:
  case ActionKind::SendB:
    return "send";
  case ActionKind::RecvF:
  case ActionKind::RecvB:
    return "recv";
  case ActionKind::ReduceGrad:
    return "reduce";
  case ActionKind::Step:
    return "step";
  case ActionKind::SumTied:
    return "tied";
  case ActionKind::ClipGrad:
    return "clip";
  }
  return "other";
}

bool isUsable(const Schedule &schedule, const Timeline &timeline) {
  if (!timeline.ok() ||
      static_cast<int>(timeline.ranks.size()) != schedule.getNumRanks())
    return false;
  for (int r = 0, e = schedule.getNumRanks(); r < e; ++r)
    if (timeline.ranks[r].size() != schedule.ranks[r].size())
      return false;
  return true;
}

} // namespace

std::string mlir::gpipe::toChromeTrace(const Schedule &schedule,
                                       const Timeline &timeline) {
  using nlohmann::json;
  if (!isUsable(schedule, timeline))
    return "";
  constexpr double kMicros = 1e6;
  json events = json::array();
  events.push_back(
      {{"name", "process_name"},
       {"ph", "M"},
       {"pid", 0},
       {"args",
        {{"name", "gpipe pipeline (" + std::to_string(schedule.numStages) +
                      " stages, " + std::to_string(schedule.numMicrobatches) +
                      " micro-batches)"}}}});
  int numRanks = schedule.getNumRanks();
  for (int r = 0; r < numRanks; ++r) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"name", getRankLabel(schedule, r)}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"sort_index", r}}}});
  }
  // Receives by transfer, to draw an arrow from each send to its receive.
  std::map<std::tuple<bool, int, int>, std::pair<int, int>> receives;
  for (int r = 0; r < numRanks; ++r) {
    for (size_t i = 0; i < schedule.ranks[r].size(); ++i) {
      const Action &a = schedule.ranks[r][i];
      if (isRecvKind(a.kind))
        receives[getTransferKey(a)] = {r, static_cast<int>(i)};
    }
  }
  int flowId = 0;
  for (int r = 0; r < numRanks; ++r) {
    for (size_t i = 0; i < schedule.ranks[r].size(); ++i) {
      const Action &a = schedule.ranks[r][i];
      const TimedAction &t = timeline.ranks[r][i];
      json args = {{"stage", a.stage}};
      if (hasMicrobatch(a.kind))
        args["microbatch"] = a.microbatch;
      if (isTransferKind(a.kind)) {
        args["peer"] = a.peer;
        args["bytes"] = a.bytes;
        args["dtype"] = a.dtype;
      }
      events.push_back({{"name", getShortName(a)},
                        {"cat", getCategory(a.kind)},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", r},
                        {"ts", t.start * kMicros},
                        {"dur", (t.end - t.start) * kMicros},
                        {"args", args}});
      if (!isSendKind(a.kind))
        continue;
      auto it = receives.find(getTransferKey(a));
      if (it == receives.end())
        continue;
      auto [recvRank, recvIndex] = it->second;
      const TimedAction &recv = timeline.ranks[recvRank][recvIndex];
      ++flowId;
      events.push_back({{"name", getShortName(a)},
                        {"cat", "transfer"},
                        {"ph", "s"},
                        {"id", flowId},
                        {"pid", 0},
                        {"tid", r},
                        {"ts", t.start * kMicros}});
      events.push_back({{"name", getShortName(a)},
                        {"cat", "transfer"},
                        {"ph", "f"},
                        {"bp", "e"},
                        {"id", flowId},
                        {"pid", 0},
                        {"tid", recvRank},
                        {"ts", recv.end * kMicros}});
    }
  }
  json trace = {{"traceEvents", events},
                {"displayTimeUnit", "ms"},
                {"otherData",
                 {{"makespan_s", timeline.makespan},
                  {"bubble_fraction", timeline.bubbleFraction},
                  {"ideal_bubble_fraction",
                   getIdealBubbleFraction(schedule.numStages,
                                          schedule.numMicrobatches)}}}};
  return trace.dump(1, ' ', false, json::error_handler_t::replace);
}

namespace {

std::string escapeXML(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  return buffer;
}

std::string shortNum(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

/// A 1, 2 or 5 times a power of ten near `range / 8`.
double niceStep(double range) {
  double raw = range / 8;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw)
      return m * power;
  return 10 * power;
}

struct Style {
  const char *fill;
  const char *text;
  const char *label;
};

Style getStyle(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
    return {"#4e79a7", "#ffffff", "forward (F)"};
  case ActionKind::Backward:
    return {"#59a14f", "#ffffff", "backward (B)"};
  case ActionKind::BackwardInput:
    return {"#8cd17d", "#1b1b1b", "backward input (I)"};
  case ActionKind::BackwardWeight:
    return {"#b6992d", "#ffffff", "backward weight (W)"};
  case ActionKind::Recompute:
    return {"#b07aa1", "#ffffff", "recompute (R)"};
  case ActionKind::SendF:
  case ActionKind::SendB:
    return {"#e15759", "#ffffff", "send"};
  case ActionKind::RecvF:
  case ActionKind::RecvB:
    return {"#f28e2b", "#ffffff", "receive (wait)"};
  case ActionKind::ReduceGrad:
    return {"#9c755f", "#ffffff", "gradient reduce"};
  case ActionKind::Step:
    return {"#79706e", "#ffffff", "optimizer step"};
  case ActionKind::SumTied:
    return {"#d37295", "#ffffff", "tied gradient sum"};
  case ActionKind::ClipGrad:
    return {"#b07aa1", "#ffffff", "gradient clipping"};
  }
  return {"#cccccc", "#000000", "?"};
}

} // namespace

std::string mlir::gpipe::toSVG(const Schedule &schedule,
                               const Timeline &timeline) {
  const double width = 1200, left = 150, right = 30, top = 56, rowHeight = 34,
               boxHeight = 24;
  if (!isUsable(schedule, timeline)) {
    std::string message =
        timeline.ok() ? "timeline does not match the schedule" : timeline.error;
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" "
           "height=\"40\" viewBox=\"0 0 1200 40\"><text x=\"10\" y=\"24\" "
           "font-family=\"sans-serif\" font-size=\"13\" fill=\"#b00020\">" +
           escapeXML(message) + "</text></svg>\n";
  }
  int numRanks = schedule.getNumRanks();
  double makespan = timeline.makespan > 0 ? timeline.makespan : 1;
  double plotWidth = width - left - right;
  double scale = plotWidth / makespan;
  double axisY = top + numRanks * rowHeight + 6;
  double legendY = axisY + 44;
  double height = legendY + 30;

  // Time axis unit.
  double unit = 1;
  const char *unitName = "s";
  if (makespan < 1e-3) {
    unit = 1e-6;
    unitName = "us";
  } else if (makespan < 1) {
    unit = 1e-3;
    unitName = "ms";
  }

  std::string svg;
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
         "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) + " " +
         num(height) + "\" font-family=\"sans-serif\">\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + num(width) + "\" height=\"" +
         num(height) + "\" fill=\"#ffffff\"/>\n";
  char title[256];
  std::snprintf(title, sizeof(title),
                "%d stages, %d micro-batches on %d ranks: makespan %g %s, "
                "bubble %.1f%% (GPipe closed form %.1f%%)",
                schedule.numStages, schedule.numMicrobatches, numRanks,
                timeline.makespan / unit, unitName,
                100 * timeline.bubbleFraction,
                100 * getIdealBubbleFraction(schedule.numStages,
                                             schedule.numMicrobatches));
  svg += "<text x=\"" + num(left) +
         "\" y=\"28\" font-size=\"15\" "
         "fill=\"#222222\">" +
         escapeXML(title) + "</text>\n";

  bool used[kNumActionKinds] = {};
  for (int r = 0; r < numRanks; ++r) {
    double y = top + r * rowHeight;
    double boxY = y + (rowHeight - boxHeight) / 2;
    svg += "<g>\n";
    svg += "<rect x=\"" + num(left) + "\" y=\"" + num(boxY) + "\" width=\"" +
           num(plotWidth) + "\" height=\"" + num(boxHeight) +
           "\" fill=\"#f3f3f3\"/>\n";
    svg += "<text x=\"" + num(left - 8) + "\" y=\"" +
           num(boxY + boxHeight / 2 + 4) +
           "\" font-size=\"12\" text-anchor=\"end\" fill=\"#222222\">" +
           escapeXML(getRankLabel(schedule, r)) + "</text>\n";
    for (size_t i = 0; i < schedule.ranks[r].size(); ++i) {
      const Action &a = schedule.ranks[r][i];
      const TimedAction &t = timeline.ranks[r][i];
      Style style = getStyle(a.kind);
      used[static_cast<int>(a.kind)] = true;
      double x = left + t.start * scale;
      double w = (t.end - t.start) * scale;
      std::string tip =
          escapeXML(describe(a) + " [" + shortNum(t.start / unit) + ", " +
                    shortNum(t.end / unit) + "] " + unitName);
      if (a.kind == ActionKind::ReduceGrad) {
        // The all-reduce runs beside the rank's work: a band along the
        // bottom of the row.
        svg += "<rect x=\"" + num(x) + "\" y=\"" + num(boxY + boxHeight - 6) +
               "\" width=\"" + num(std::max(w, 1.5)) +
               "\" height=\"6\" fill=\"" + style.fill + "\"><title>" + tip +
               "</title></rect>\n";
        continue;
      }
      if (isTransferKind(a.kind)) {
        // A thin mark at the top (send) or bottom (receive) of the row; it
        // spans the rendezvous wait plus the transfer.
        double markY = isSendKind(a.kind) ? boxY - 3 : boxY + boxHeight;
        svg += "<rect x=\"" + num(x) + "\" y=\"" + num(markY) + "\" width=\"" +
               num(std::max(w, 1.5)) + "\" height=\"3\" fill=\"" + style.fill +
               "\"><title>" + tip + "</title></rect>\n";
        continue;
      }
      svg += "<rect x=\"" + num(x) + "\" y=\"" + num(boxY) + "\" width=\"" +
             num(std::max(w, 0.5)) + "\" height=\"" + num(boxHeight) +
             "\" fill=\"" + style.fill +
             "\" stroke=\"#ffffff\" stroke-width=\"0.5\"><title>" + tip +
             "</title></rect>\n";
      std::string label =
          hasMicrobatch(a.kind)
              ? std::to_string(a.microbatch)
              : std::string(a.kind == ActionKind::Step ? "S" : "A");
      double fontSize =
          std::min(11.0, w / (0.62 * static_cast<double>(label.size()) + 0.4));
      if (fontSize >= 6)
        svg += "<text x=\"" + num(x + w / 2) + "\" y=\"" +
               num(boxY + boxHeight / 2 + fontSize * 0.35) + "\" font-size=\"" +
               num(fontSize) + "\" text-anchor=\"middle\" fill=\"" +
               style.text + "\">" + escapeXML(label) + "</text>\n";
    }
    svg += "</g>\n";
  }

  // Time axis.
  svg += "<g>\n";
  svg += "<line x1=\"" + num(left) + "\" y1=\"" + num(axisY) + "\" x2=\"" +
         num(left + plotWidth) + "\" y2=\"" + num(axisY) +
         "\" stroke=\"#444444\" stroke-width=\"1\"/>\n";
  double step = niceStep(makespan / unit) * unit;
  for (int k = 0; k * step <= makespan * (1 + 1e-9); ++k) {
    double x = left + k * step * scale;
    svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(axisY) + "\" x2=\"" +
           num(x) + "\" y2=\"" + num(axisY + 5) +
           "\" stroke=\"#444444\" stroke-width=\"1\"/>\n";
    svg += "<text x=\"" + num(x) + "\" y=\"" + num(axisY + 18) +
           "\" font-size=\"11\" text-anchor=\"middle\" fill=\"#444444\">" +
           shortNum(k * step / unit) + "</text>\n";
  }
  svg += "<text x=\"" + num(left + plotWidth) + "\" y=\"" + num(axisY + 32) +
         "\" font-size=\"11\" text-anchor=\"end\" fill=\"#444444\">time (" +
         unitName + ")</text>\n";
  svg += "</g>\n";

  // Legend: one swatch per kind present (sends and receives once each).
  svg += "<g>\n";
  double x = left;
  bool sendShown = false, recvShown = false;
  for (int k = 0; k < kNumActionKinds; ++k) {
    if (!used[k])
      continue;
    ActionKind kind = static_cast<ActionKind>(k);
    if (isSendKind(kind)) {
      if (sendShown)
        continue;
      sendShown = true;
    }
    if (isRecvKind(kind)) {
      if (recvShown)
        continue;
      recvShown = true;
    }
    Style style = getStyle(kind);
    bool thin = isTransferKind(kind);
    svg += "<rect x=\"" + num(x) + "\" y=\"" +
           num(thin ? legendY + 5 : legendY) + "\" width=\"14\" height=\"" +
           num(thin ? 4 : 14) + "\" fill=\"" + style.fill + "\"/>\n";
    svg += "<text x=\"" + num(x + 19) + "\" y=\"" + num(legendY + 11) +
           "\" font-size=\"12\" fill=\"#222222\">" + style.label + "</text>\n";
    x += 30 + 7.0 * static_cast<double>(std::string(style.label).size());
  }
  svg += "</g>\n";
  svg += "</svg>\n";
  return svg;
}
