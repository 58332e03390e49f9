//===- Trace.cpp - Chrome / Perfetto traces of a run -----------*- C++ -*-===//
//
// Writes the actions a run recorded (RunResult::trace) as Chrome trace JSON
// for chrome://tracing and Perfetto: one thread per rank, one complete event
// per action named like the schedule pictures (F3 s1, B3 s1, send mb3),
// written to a temporary file and renamed into place.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Trace.h"
#include "gpipe/Runtime/Engine.h"
#include "gpipe/Runtime/Metrics.h"
#include "gpipe/Runtime/ModelMetadata.h"

#include "../IO/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <tuple>
#include <unistd.h>

namespace gpipe::rt {

namespace {

/// The name of action `a` in traces and pictures: F3 s1, B3 s1, send mb3.
std::string actionLabel(const ActionSpec &a) {
  std::string mb = std::to_string(a.mb), stage = std::to_string(a.stage);
  switch (a.kind) {
  case ActionKind::Forward:
    return "F" + mb + " s" + stage;
  case ActionKind::Backward:
    return "B" + mb + " s" + stage;
  case ActionKind::BackwardInput:
    return "BI" + mb + " s" + stage;
  case ActionKind::BackwardWeight:
    return "BW" + mb + " s" + stage;
  case ActionKind::Recompute:
    return "R" + mb + " s" + stage;
  case ActionKind::SendF:
  case ActionKind::SendB:
    return "send mb" + mb;
  case ActionKind::RecvF:
  case ActionKind::RecvB:
    return "recv mb" + mb;
  case ActionKind::ReduceGrad:
    return "reduce s" + stage;
  case ActionKind::Step:
    return "step";
  case ActionKind::SumTied:
    return "sum tied";
  case ActionKind::ClipGrad:
    return "clip grad";
  }
  return "?";
}

/// The steady-state step to draw: the median by duration of the steps after
/// the first (of replica 0's workers), and its start; -1 when none ran.
std::pair<int64_t, double> pickMeasuredStep(const ModelMetadata &metadata,
                                            const RunResult &result) {
  std::map<int64_t, std::pair<double, double>> span; // step -> (begin, end)
  for (const TraceEvent &e : result.trace) {
    if (e.rank >= metadata.numRanks())
      continue;
    auto [it, inserted] = span.try_emplace(e.step, e.beginUs, e.endUs);
    if (!inserted) {
      it->second.first = std::min(it->second.first, e.beginUs);
      it->second.second = std::max(it->second.second, e.endUs);
    }
  }
  if (span.empty())
    return {-1, 0.0};
  std::vector<std::pair<double, int64_t>> byLength;
  for (const auto &[step, s] : span)
    if (span.size() == 1 || step != span.begin()->first)
      byLength.push_back({s.second - s.first, step});
  std::sort(byLength.begin(), byLength.end());
  int64_t step = byLength[byLength.size() / 2].second;
  return {step, span[step].first};
}

} // namespace

Status writeChromeTrace(const std::string &path, const ModelMetadata &metadata,
                        const RunResult &result) {
  using Json = nlohmann::json;
  Json events = Json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", "gpipe " + metadata.source}}}});
  // One thread per worker (replica d's rank r is worker d*K + r).
  const int64_t K = metadata.numRanks();
  for (int64_t w = 0; w < metadata.numWorkers(); ++w) {
    std::string name = "rank " + std::to_string(w % K);
    if (metadata.dataParallel > 1)
      name = "replica " + std::to_string(w / K) + " " + name;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", w},
                      {"args", {{"name", name}}}});
  }
  for (const TraceEvent &e : result.trace) {
    const ActionSpec &a =
        metadata.ranks[size_t(e.rank % K)].actions[size_t(e.action)];
    std::string name = actionLabel(a);
    Json args = {{"stage", a.stage},
                 {"mb", a.mb},
                 {"step", e.step + 1},
                 {"action", e.action}};
    if (a.isTransfer()) {
      args["peer"] = a.peer;
      args["bytes"] = a.bytes;
    }
    events.push_back({{"name", name},
                      {"cat", actionKindName(a.kind)},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", e.rank},
                      {"ts", e.beginUs},
                      {"dur", e.endUs - e.beginUs},
                      {"args", std::move(args)}});
  }
  // The compiler's predicted step as a second process, starting where the
  // drawn measured step starts, for the two to be compared in one view.
  if (!metadata.predictedTimeline.empty()) {
    auto [step, startUs] = pickMeasuredStep(metadata, result);
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", 0},
                      {"args",
                       {{"name", "predicted by the compiler (aligned with "
                                 "step " +
                                     std::to_string(step + 1) + ")"}}}});
    for (int64_t r = 0; r < K; ++r) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", 1},
                        {"tid", r},
                        {"args", {{"name", "rank " + std::to_string(r)}}}});
      const auto &times = metadata.predictedTimeline[size_t(r)];
      for (size_t i = 0; i < times.size(); ++i) {
        const ActionSpec &a = metadata.ranks[size_t(r)].actions[i];
        events.push_back({{"name", actionLabel(a)},
                          {"cat", actionKindName(a.kind)},
                          {"ph", "X"},
                          {"pid", 1},
                          {"tid", r},
                          {"ts", startUs + times[i].first},
                          {"dur", times[i].second - times[i].first},
                          {"args", {{"stage", a.stage}, {"mb", a.mb}}}});
      }
    }
  }
  Json root = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  std::string text =
      root.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  return replaceFile(path, std::vector<uint8_t>(text.begin(), text.end()));
}

} // namespace gpipe::rt

namespace gpipe::rt {

namespace {

const char *kindColour(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
    return "#4e79a7";
  case ActionKind::Backward:
    return "#e15759";
  case ActionKind::BackwardInput:
    return "#f28e2b";
  case ActionKind::BackwardWeight:
    return "#9c755f";
  case ActionKind::Recompute:
    return "#edc948";
  case ActionKind::Step:
    return "#59a14f";
  case ActionKind::ReduceGrad:
  case ActionKind::SumTied:
  case ActionKind::ClipGrad:
    return "#b07aa1";
  default:
    return "#bab0ac";
  }
}

std::string fixed(double value, int digits = 1) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

/// "2", "0.5", "12.25": at most 3 decimals, no trailing zeros.
std::string shortMs(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f", value);
  std::string out = text;
  while (!out.empty() && out.back() == '0')
    out.pop_back();
  if (!out.empty() && out.back() == '.')
    out.pop_back();
  return out;
}

} // namespace

Status writeTimelineSVG(const std::string &path, const ModelMetadata &metadata,
                        const RunResult &result) {
  const int64_t K = metadata.numRanks();
  auto [step, startUs] = pickMeasuredStep(metadata, result);
  if (step < 0)
    return Status::error(path + ": the run recorded no actions to draw");
  // Per rank: (action, begin, end) of the drawn step, from its start.
  using Rows = std::vector<std::vector<std::tuple<int64_t, double, double>>>;
  Rows measured(static_cast<size_t>(K));
  double measuredEnd = 0;
  for (const TraceEvent &e : result.trace)
    if (e.step == step && e.rank < K) {
      measured[size_t(e.rank)].push_back(
          {e.action, e.beginUs - startUs, e.endUs - startUs});
      measuredEnd = std::max(measuredEnd, e.endUs - startUs);
    }
  double predictedEnd = 0;
  for (const auto &rank : metadata.predictedTimeline)
    for (const auto &[begin, end] : rank)
      predictedEnd = std::max(predictedEnd, end);
  const bool hasPrediction = !metadata.predictedTimeline.empty();
  const double spanUs = std::max({measuredEnd, predictedEnd, 1.0});

  const double left = 170, width = 960, rowHeight = 22, rowGap = 4;
  const double panelTitle = 24, top = 46;
  const double panelHeight = panelTitle + K * (rowHeight + rowGap) + 10;
  const int panels = hasPrediction ? 2 : 1;
  const double axisY = top + panels * panelHeight;
  const double height = axisY + 70;
  auto x = [&](double us) { return left + us / spanUs * width; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
      << left + width + 20 << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"10\" y=\"20\" font-size=\"14\">"
      << escapeXml(metadata.source) << ": " << K << " ranks, "
      << metadata.microbatches << " micro-batches, schedule "
      << escapeXml(metadata.schedule) << ", remat " << escapeXml(metadata.remat)
      << "</text>\n"
      << "<text x=\"10\" y=\"36\">"
      << (hasPrediction ? "the compiler's predicted "
                          "step above the measured "
                          "one, on one time scale"
                        : "measured (the model "
                          "carries no predicted "
                          "timeline)")
      << "</text>\n";
  auto drawPanel = [&](int panel, const std::string &title, const Rows &rows,
                       const std::vector<double> &busyMs) {
    double y0 = top + panel * panelHeight;
    svg << "<text x=\"10\" y=\"" << y0 + 16 << "\" font-weight=\"bold\">"
        << escapeXml(title) << "</text>\n";
    for (int64_t r = 0; r < K; ++r) {
      double y = y0 + panelTitle + r * (rowHeight + rowGap);
      svg << "<text x=\"10\" y=\"" << y + 15 << "\">rank " << r << " (busy "
          << fixed(busyMs[size_t(r)], 2) << " ms)</text>\n";
      for (const auto &[action, begin, end] : rows[size_t(r)]) {
        const ActionSpec &a = metadata.ranks[size_t(r)].actions[size_t(action)];
        bool transfer = a.isTransfer();
        double bx = x(begin), bw = std::max(0.5, x(end) - x(begin));
        double by = transfer ? y + rowHeight - 4 : y;
        double bh = transfer ? 4 : rowHeight;
        svg << "<rect x=\"" << fixed(bx, 2) << "\" y=\"" << by << "\" width=\""
            << fixed(bw, 2) << "\" height=\"" << bh << "\" fill=\""
            << kindColour(a.kind)
            << "\" stroke=\"white\" stroke-width=\"0.5\"><title>"
            << escapeXml(actionLabel(a)) << ": " << fixed(end - begin, 1)
            << " us</title></rect>\n";
        if (!transfer && a.mb >= 0 && bw >= 14)
          svg << "<text x=\"" << fixed(bx + bw / 2, 2) << "\" y=\"" << y + 15
              << "\" text-anchor=\"middle\" fill=\"white\">" << a.mb
              << "</text>\n";
      }
    }
  };
  auto busyOf = [&](const Rows &rows) {
    std::vector<double> busy(size_t(K), 0.0);
    for (int64_t r = 0; r < K; ++r)
      for (const auto &[action, begin, end] : rows[size_t(r)])
        if (isComputeAction(
                metadata.ranks[size_t(r)].actions[size_t(action)].kind))
          busy[size_t(r)] += (end - begin) * 1e-3;
    return busy;
  };
  int panel = 0;
  if (hasPrediction) {
    Rows predicted(static_cast<size_t>(K));
    for (int64_t r = 0; r < K; ++r)
      for (size_t i = 0; i < metadata.predictedTimeline[size_t(r)].size(); ++i)
        predicted[size_t(r)].push_back(
            {int64_t(i), metadata.predictedTimeline[size_t(r)][i].first,
             metadata.predictedTimeline[size_t(r)][i].second});
    drawPanel(panel++,
              "predicted by the compiler: " + fixed(predictedEnd * 1e-3, 3) +
                  " ms per step",
              predicted, busyOf(predicted));
  }
  drawPanel(panel,
            "measured, step " + std::to_string(step + 1) +
                " (the median): " + fixed(measuredEnd * 1e-3, 3) + " ms",
            measured, busyOf(measured));

  // Time axis and legend.
  svg << "<line x1=\"" << left << "\" y1=\"" << axisY << "\" x2=\""
      << left + width << "\" y2=\"" << axisY << "\" stroke=\"black\"/>\n";
  // 5 to 10 ticks of 1, 2 or 5 times a power of ten.
  double tick = std::pow(10.0, std::floor(std::log10(spanUs / 5)));
  if (spanUs / tick > 20)
    tick *= 5;
  else if (spanUs / tick > 10)
    tick *= 2;
  for (double t = 0; t <= spanUs + 1e-9; t += tick)
    svg << "<line x1=\"" << fixed(x(t), 2) << "\" y1=\"" << axisY << "\" x2=\""
        << fixed(x(t), 2) << "\" y2=\"" << axisY + 4
        << "\" stroke=\"black\"/><text x=\"" << fixed(x(t), 2) << "\" y=\""
        << axisY + 16 << "\" text-anchor=\"middle\">" << shortMs(t * 1e-3)
        << " ms</text>\n";
  double lx = left;
  for (auto [kind, name] : {std::pair{ActionKind::Forward, "forward"},
                            {ActionKind::Backward, "backward"},
                            {ActionKind::BackwardInput, "backward (input)"},
                            {ActionKind::BackwardWeight, "backward (weight)"},
                            {ActionKind::Recompute, "recompute"},
                            {ActionKind::Step, "optimizer step"},
                            {ActionKind::ReduceGrad, "reduce / tied sum"},
                            {ActionKind::SendF, "send / receive"}}) {
    svg << "<rect x=\"" << lx << "\" y=\"" << axisY + 30
        << "\" width=\"12\" height=\"12\" fill=\"" << kindColour(kind)
        << "\"/><text x=\"" << lx + 16 << "\" y=\"" << axisY + 40 << "\">"
        << name << "</text>\n";
    lx += 30 + 6.2 * std::strlen(name);
  }
  svg << "</svg>\n";
  std::string text = svg.str();
  return replaceFile(path, std::vector<uint8_t>(text.begin(), text.end()));
}

} // namespace gpipe::rt
