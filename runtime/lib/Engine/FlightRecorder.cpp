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

#include "gpipe/Runtime/ModelMetadata.h"

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

/// "12 us", "3.4 ms", "1.25 s" into `buf`.
void formatDuration(char *buf, size_t size, int64_t ns) {
  if (ns < 1'000'000)
    std::snprintf(buf, size, "%.0f us", double(ns) * 1e-3);
  else if (ns < 1'000'000'000)
    std::snprintf(buf, size, "%.1f ms", double(ns) * 1e-6);
  else
    std::snprintf(buf, size, "%.2f s", double(ns) * 1e-9);
}

/// Appends printf-style to a fixed buffer, cutting at its end.
struct Appender {
  char *out;
  size_t capacity, length = 0;
  template <typename... Args>
  void operator()(const char *format, Args... args) {
    if (length + 1 >= capacity)
      return;
    int n = std::snprintf(out + length, capacity - length, format, args...);
    if (n > 0)
      length = std::min(capacity - 1, length + size_t(n));
  }
};

} // namespace

void FlightRecorder::begin(const RankPlan &plan, int64_t step, int64_t action,
                           int64_t beginNs) {
  RecentAction entry;
  entry.step = step;
  entry.action = action;
  entry.beginNs = beginNs;
  entry.endNs = -1;
  entry.plan = &plan;
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

size_t FlightRecorder::renderInto(char *out, size_t capacity, const char *who,
                                  int64_t nowNs) const {
  if (capacity == 0)
    return 0;
  out[0] = '\0';
  Appender append{out, capacity};
  append("%s last actions:", who);
  if (recent.empty()) {
    append(" none");
    return append.length;
  }
  size_t n = recent.size();
  size_t first = n < kSize ? 0 : next;
  for (size_t i = 0; i < n; ++i) {
    const RecentAction &e = recent[(first + i) % n];
    const ActionSpec &a = e.plan->actions[size_t(e.action)];
    append("%sstep %lld #%lld %s", i ? "; " : " ",
           static_cast<long long>(e.step + 1), static_cast<long long>(e.action),
           actionKindName(a.kind));
    if (a.isTransfer())
      append(" %s %s rank %lld", abi::getDirectionName(a.direction()),
             a.isSend() ? "to" : "from", static_cast<long long>(a.peer));
    append(" (stage %lld", static_cast<long long>(a.stage));
    if (a.mb >= 0)
      append(", mb %lld", static_cast<long long>(a.mb));
    char duration[32];
    if (e.endNs >= 0) {
      formatDuration(duration, sizeof duration, e.endNs - e.beginNs);
      append(", %s)", duration);
    } else {
      formatDuration(duration, sizeof duration, nowNs - e.beginNs);
      append(", unfinished after %s)", duration);
    }
  }
  return append.length;
}

const RecentAction *FlightRecorder::unfinishedCompute() const {
  if (recent.empty())
    return nullptr;
  size_t newest =
      recent.size() < kSize ? recent.size() - 1 : (next + kSize - 1) % kSize;
  const RecentAction &e = recent[newest];
  if (e.endNs >= 0 ||
      !abi::isComputeKind(e.plan->actions[size_t(e.action)].kind))
    return nullptr;
  return &e;
}

std::string FlightRecorder::render(const std::string &who,
                                   int64_t nowNs) const {
  char text[4096];
  size_t n = renderInto(text, sizeof text, who.c_str(), nowNs);
  return std::string(text, n);
}

void installTerminationHandler() {
  struct sigaction action{};
  action.sa_handler = onTerminate;
  sigaction(SIGTERM, &action, nullptr);
}

void publishFlightRecorder(const FlightRecorder &recorder, const char *who,
                           int64_t nowNs) {
  int next = flightCurrent.load() == 0 ? 1 : 0;
  size_t n = recorder.renderInto(flightText[next], sizeof flightText[next], who,
                                 nowNs);
  flightLength[next].store(n);
  flightCurrent.store(next);
}

} // namespace gpipe::rt
