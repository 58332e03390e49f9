//===- Files.h - Durable file writes for the runtime ------------*- C++ -*-===//
//
// The two steps every crash-safe write of the runtime is built from: write
// a file's bytes and flush them to disk, and flush a directory so that a
// rename or creation in it is durable. safetensors files (write to a
// temporary, flush, rename, flush the directory) and checkpoint
// directories (flush each file, rename the directory, flush the parent)
// compose them. Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_TRAIN_FILES_H
#define GPIPE_RUNTIME_LIB_TRAIN_FILES_H

#include "gpipe/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpipe::rt {

/// Creates or truncates `path`, writes `bytes` and fsyncs the file.
Status writeFileDurably(const std::string &path,
                        const std::vector<uint8_t> &bytes);

/// Writes `bytes` as the file `path` without ever leaving it half
/// written: to a temporary next to it, flushed, then renamed over it. What
/// `path` names is kept: a symbolic link stays a link (its target is
/// replaced), and a device, pipe or socket (`/dev/null`, `/dev/stdout`) is
/// written into, never replaced by a regular file. A directory is an error.
Status replaceFile(const std::string &path, const std::vector<uint8_t> &bytes);

/// fsyncs directory `dir` (best effort: a directory that cannot be opened
/// is skipped).
void syncDirectory(const std::string &dir);

/// The directory holding `path` ("." for a bare name).
std::string parentDirectory(const std::string &path);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_LIB_TRAIN_FILES_H
