//===- NNElementsBytes.h - The bytes of a tensor attribute ------*- C++ -*-===//
//
// The bytes of an `nn.constant`'s value or an `nn.parameter`'s initial
// value as the runtime lays a tensor out, read from the attribute alone:
// what the lowering embeds in a compiled model and the interpreter loads.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNELEMENTSBYTES_H
#define GPIPE_DIALECT_NN_IR_NNELEMENTSBYTES_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Diagnostics.h"

#include <vector>

namespace mlir::gpipe::nn {

/// Bytes per element of `type` in the runtime's layout: f32, f64, f16,
/// bf16, i1 (one byte, 0 or 1), i32, i64; 0 for any other type.
size_t elementByteSize(Type type);

/// The elements of `attr` (statically shaped; a dense or dense_resource
/// attribute) row-major in the runtime's layout: numbers in their own
/// width, f16 and bf16 as their bit patterns, i1 as one byte of 0 or 1.
/// An error (through `emitError`) for an elided or short resource, an
/// unsupported element type or attribute kind.
FailureOr<std::vector<char>>
getElementsBytes(ElementsAttr attr,
                 function_ref<InFlightDiagnostic()> emitError);

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_IR_NNELEMENTSBYTES_H
