//===- ModelMetadata.h - The model metadata as an attribute -----*- C++ -*-===//
//
// The metadata a compiled model carries for the runtime (Program.h) travels
// through the LLVM dialect as the module's `gpipe.model` dictionary and
// becomes JSON text only when the module is translated. These convert
// between the two forms: objects are dictionaries, arrays are arrays,
// integers are i64, numbers f64, strings strings, booleans i1 and null the
// unit attribute.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_UTILS_MODELMETADATA_H
#define GPIPE_DIALECT_GPIPE_UTILS_MODELMETADATA_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"

namespace mlir::gpipe {

/// `value` as an attribute.
Attribute jsonToAttribute(MLIRContext *context, const llvm::json::Value &value);

/// `attr` (made by jsonToAttribute) as JSON; failure for an attribute kind
/// JSON has no form for.
FailureOr<llvm::json::Value> attributeToJSON(Attribute attr);

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_UTILS_MODELMETADATA_H
