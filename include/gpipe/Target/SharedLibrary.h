//===- SharedLibrary.h - LLVM dialect to a loadable model -------*- C++ -*-===//
//
// The back end of gpipe-compile: an LLVM-dialect module (the output of
// convert-rt-to-llvm) becomes LLVM IR, an object file for the host
// through LLVM's TargetMachine, and a shared library linked by the system C
// compiler driver. The library leaves the runtime's symbols undefined; the
// process that loads it (gpipe-run) provides them.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_TARGET_SHAREDLIBRARY_H
#define GPIPE_TARGET_SHAREDLIBRARY_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::gpipe {

/// Translates `module` (LLVM dialect only) to textual LLVM IR for the host.
LogicalResult emitLLVMIR(ModuleOp module, llvm::raw_ostream &os);

/// Translates `module` to a relocatable, position-independent object file
/// for the host and writes it to `os`; `timing` gets the translation and the
/// code generation as nested timers (a default scope times nothing).
LogicalResult emitObject(ModuleOp module, llvm::raw_pwrite_stream &os,
                         TimingScope &timing);

/// Emits the object and links it into the shared library `outputPath` with
/// the C compiler driver (`$CC`, else cc, gcc or clang on PATH). Errors are
/// reported at the module's location. `timing` as for `emitObject`, plus the
/// link.
LogicalResult emitSharedLibrary(ModuleOp module, llvm::StringRef outputPath,
                                TimingScope &timing);

} // namespace mlir::gpipe

#endif // GPIPE_TARGET_SHAREDLIBRARY_H
