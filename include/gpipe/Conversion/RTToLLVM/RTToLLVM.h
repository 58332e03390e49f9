//===- RTToLLVM.h - gpipe_rt to the LLVM dialect ----------------*- C++ -*-===//
//
// The patterns that lower `gpipe_rt` ops to LLVM-dialect calls, globals and
// memory accesses, for use beside upstream's `populate...ToLLVM...`
// patterns (what `convert-rt-to-llvm` does).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_CONVERSION_RTTOLLVM_RTTOLLVM_H
#define GPIPE_CONVERSION_RTTOLLVM_RTTOLLVM_H

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gpipe_rt {

/// Adds the lowering of every `gpipe_rt` op. Kernel calls go to
/// `gpipe_rt_<target>_<kernel>`. `gpipe_rt.check` splits its block, so the
/// structured control flow around it must already be `cf` (its function's
/// body a CFG).
void populateRTToLLVMConversionPatterns(LLVMTypeConverter &converter,
                                        RewritePatternSet &patterns,
                                        StringRef target);

} // namespace mlir::gpipe_rt

#endif // GPIPE_CONVERSION_RTTOLLVM_RTTOLLVM_H
