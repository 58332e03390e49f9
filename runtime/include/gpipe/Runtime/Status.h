//===- Status.h - Error returns of the runtime's C++ services ---*- C++ -*-===//
//
// The result of a runtime service call made from C++ (file formats, and later
// checkpoints and data loading): success, or a message saying what failed,
// naming the file and the object involved. The runtime reports errors by
// return value rather than by exception so the compiler's tools, built
// without exceptions, can call it.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_STATUS_H
#define GPIPE_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace gpipe::rt {

class [[nodiscard]] Status {
public:
  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.text = std::move(message);
    return s;
  }

  bool ok() const { return !failed; }
  /// The error message ("" on success).
  const std::string &message() const { return text; }

private:
  Status() = default;
  bool failed = false;
  std::string text;
};

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_STATUS_H
