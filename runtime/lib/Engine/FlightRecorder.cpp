//===- FlightRecorder.cpp - Each rank's last actions -----------*- C++ -*-===//
//
// The per-rank ring of recent actions, its one-line rendering, and the
// SIGTERM path that prints it when mpirun tears a job down: the rank thread
// renders its recorder into one of two buffers after every action and flips
// an index; the handler writes the current one with write(2), which is
// async-signal-safe.
//
//===----------------------------------------------------------------------===//

#include "FlightRecorder.h"

#include "gpipe/Runtime/Engine.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace gpipe::rt {
namespace {

char flightText[2][4096];
std::atomic<size_t> flightLength[2];
std::atomic<int> flightCurrent{-1};

extern "C" void onTerminate(int) {
  int current = flightCurrent.load();
  static const char head[] = "gpipe-run: terminated while the job goes down; ";
  ssize_t ignored = ::write(2, head, sizeof head - 1);
  if (current >= 0)
    ignored = ::write(2, flightText[current], flightLength[current].load());
  ignored = ::write(2, "\n", 1);
  (void)ignored;
  ::_exit(1);
}

/// "12 us", "3.4 ms", "1.25 s".
std::string formatDuration(int64_t ns) {
  char buf[32];
  if (ns < 1'000'000)
    std::snprintf(buf, sizeof buf, "%.0f us", double(ns) * 1e-3);
  else if (ns < 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.1f ms", double(ns) * 1e-6);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", double(ns) * 1e-9);
  return buf;
}

} // namespace

void FlightRecorder::begin(int64_t step, int64_t action, int64_t beginNs) {
  RecordedAction entry{step, action, beginNs, -1};
  if (recent.size() < kSize) {
    recent.push_back(entry);
  } else {
    recent[next] = entry;
    next = (next + 1) % kSize;
  }
}

void FlightRecorder::end(int64_t endNs) {
  if (recent.empty())
    return;
  size_t newest =
      recent.size() < kSize ? recent.size() - 1 : (next + kSize - 1) % kSize;
  recent[newest].endNs = endNs;
}

std::string FlightRecorder::render(const std::string &who,
                                   const RankPlan &plan, int64_t nowNs) const {
  std::string line = who + " last actions:";
  if (recent.empty())
    return line + " none";
  size_t n = recent.size();
  size_t first = n < kSize ? 0 : next;
  for (size_t i = 0; i < n; ++i) {
    const RecordedAction &e = recent[(first + i) % n];
    const ActionSpec &a = plan.actions[size_t(e.action)];
    line += i ? "; " : " ";
    line += "step " + std::to_string(e.step + 1) + " #" +
            std::to_string(e.action) + " " + actionKindName(a.kind);
    if (a.isTransfer())
      line += std::string(" ") + abi::getDirectionName(a.direction()) +
              (a.isSend() ? " to " : " from ") + "rank " +
              std::to_string(a.peer);
    line += " (stage " + std::to_string(a.stage);
    if (a.mb >= 0)
      line += ", mb " + std::to_string(a.mb);
    line += e.endNs >= 0 ? ", " + formatDuration(e.endNs - e.beginNs) + ")"
                         : ", unfinished after " +
                               formatDuration(nowNs - e.beginNs) + ")";
  }
  return line;
}

void installTerminationHandler() {
  struct sigaction action {};
  action.sa_handler = onTerminate;
  sigaction(SIGTERM, &action, nullptr);
}

void publishFlightRecorder(const std::string &text) {
  int next = flightCurrent.load() == 0 ? 1 : 0;
  size_t n = std::min(text.size(), sizeof flightText[0]);
  std::memcpy(flightText[next], text.data(), n);
  flightLength[next].store(n);
  flightCurrent.store(next);
}

} // namespace gpipe::rt
