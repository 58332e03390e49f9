//===- OutOfMemory.h - A clear error when a tool runs out of memory -*- C++
//-*-===//
//
// Installs, for operator new and LLVM's own allocators, a handler that
// prints "<tool>: error: out of memory while <doing>" and exits with 1 like
// every other failure, instead of LLVM's "LLVM ERROR: out of memory", abort
// and stack dump. Call after llvm::InitLLVM, which installs LLVM's
// aborting handler.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_TOOLS_COMMON_OUTOFMEMORY_H
#define GPIPE_TOOLS_COMMON_OUTOFMEMORY_H

#include "llvm/Support/ErrorHandling.h"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace gpipe_tools {

/// The tool's name and what it is doing, for the message.
inline const char *outOfMemoryTool = "gpipe";
inline const char *volatile outOfMemoryDoing = "starting";

/// Only what needs no memory.
[[noreturn]] inline void reportOutOfMemory() {
  std::fflush(stdout);
  std::fprintf(stderr,
               "%s: error: out of memory while %s; free memory, or use a "
               "smaller model\n",
               outOfMemoryTool, outOfMemoryDoing);
  std::fflush(stderr);
  std::_Exit(1);
}

inline void installOutOfMemoryHandler(const char *tool) {
  outOfMemoryTool = tool;
  std::set_new_handler([] { reportOutOfMemory(); });
  llvm::install_bad_alloc_error_handler(
      [](void *, const char *, bool) { reportOutOfMemory(); });
}

} // namespace gpipe_tools

#endif // GPIPE_TOOLS_COMMON_OUTOFMEMORY_H
