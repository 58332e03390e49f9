//===- ModelMetadata.cpp - The model metadata as an attribute ---*- C++ -*-===//
//
// Implements the conversions of ModelMetadata.h.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/Utils/ModelMetadata.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

Attribute mlir::gpipe::jsonToAttribute(MLIRContext *context,
                                       const llvm::json::Value &value) {
  Builder b(context);
  switch (value.kind()) {
  case llvm::json::Value::Null:
    return b.getUnitAttr();
  case llvm::json::Value::Boolean:
    return b.getBoolAttr(*value.getAsBoolean());
  case llvm::json::Value::Number:
    if (std::optional<int64_t> integer = value.getAsInteger())
      return b.getI64IntegerAttr(*integer);
    return b.getF64FloatAttr(*value.getAsNumber());
  case llvm::json::Value::String:
    return b.getStringAttr(*value.getAsString());
  case llvm::json::Value::Array: {
    SmallVector<Attribute> elements;
    for (const llvm::json::Value &element : *value.getAsArray())
      elements.push_back(jsonToAttribute(context, element));
    return b.getArrayAttr(elements);
  }
  case llvm::json::Value::Object: {
    SmallVector<NamedAttribute> entries;
    for (const auto &[key, member] : *value.getAsObject())
      entries.push_back(
          b.getNamedAttr(key.str(), jsonToAttribute(context, member)));
    return b.getDictionaryAttr(entries);
  }
  }
  return b.getUnitAttr();
}

FailureOr<llvm::json::Value> mlir::gpipe::attributeToJSON(Attribute attr) {
  if (isa<UnitAttr>(attr))
    return llvm::json::Value(nullptr);
  if (auto flag = dyn_cast<BoolAttr>(attr))
    return llvm::json::Value(flag.getValue());
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return llvm::json::Value(integer.getInt());
  if (auto real = dyn_cast<FloatAttr>(attr))
    return llvm::json::Value(real.getValueAsDouble());
  if (auto text = dyn_cast<StringAttr>(attr))
    return llvm::json::Value(text.getValue().str());
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array elements;
    for (Attribute element : array) {
      FailureOr<llvm::json::Value> converted = attributeToJSON(element);
      if (failed(converted))
        return failure();
      elements.push_back(std::move(*converted));
    }
    return llvm::json::Value(std::move(elements));
  }
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute entry : dict) {
      FailureOr<llvm::json::Value> converted =
          attributeToJSON(entry.getValue());
      if (failed(converted))
        return failure();
      object[entry.getName().getValue()] = std::move(*converted);
    }
    return llvm::json::Value(std::move(object));
  }
  return failure();
}
