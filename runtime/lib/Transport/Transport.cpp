//===- Transport.cpp - What every transport shares -------------*- C++ -*-===//
//
// The interfaces' out-of-line members and the wording of failed waits that
// the transports and the engine's own collectives share.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Transport.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gpipe::rt {

RunControl::~RunControl() = default;
Transport::~Transport() = default;

std::string formatSeconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", seconds);
  if (std::fabs(std::strtod(buf, nullptr) - seconds) > 1e-9)
    std::snprintf(buf, sizeof buf, "%.3g", seconds);
  return buf;
}

/// How a run that stopped because another process failed says so.
static const char kRemoteFailure[] = "stopped because another process failed: ";

std::string remoteFailure(const std::string &message) {
  return kRemoteFailure + message;
}

bool isRemoteFailure(const std::string &message) {
  return message.find(kRemoteFailure) != std::string::npos;
}

} // namespace gpipe::rt
