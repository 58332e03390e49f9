//===- NNElementsBytes.cpp - The bytes of a tensor attribute --------------===//
//
// Reads dense and dense_resource attributes into the runtime's tensor
// layout (NNElementsBytes.h).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNElementsBytes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;

size_t mlir::gpipe::nn::elementByteSize(Type type) {
  if (type.isF32())
    return 4;
  if (type.isF64())
    return 8;
  if (type.isF16() || type.isBF16())
    return 2;
  if (type.isInteger(1))
    return 1;
  if (type.isSignlessInteger(32))
    return 4;
  if (type.isSignlessInteger(64))
    return 8;
  return 0;
}

/// Writes `values` to `out` as `T`s.
template <typename T, typename Range>
static void store(const Range &values, char *out) {
  size_t i = 0;
  for (auto v : values) {
    T t = static_cast<T>(v);
    std::memcpy(out + i * sizeof(T), &t, sizeof(T));
    ++i;
  }
}

FailureOr<std::vector<char>> mlir::gpipe::nn::getElementsBytes(
    ElementsAttr attr, function_ref<InFlightDiagnostic()> emitError) {
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape())
    return emitError() << "expected a statically shaped tensor value, got "
                       << attr.getType();
  Type element = type.getElementType();
  size_t width = elementByteSize(element);
  if (!width)
    return emitError() << "unsupported element type " << element;
  std::vector<char> bytes(size_t(type.getNumElements()) * width);

  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    char *out = bytes.data();
    if (element.isF32())
      store<float>(dense.getValues<float>(), out);
    else if (element.isF64())
      store<double>(dense.getValues<double>(), out);
    else if (element.isSignlessInteger(64))
      store<int64_t>(dense.getValues<int64_t>(), out);
    else if (element.isSignlessInteger(32))
      store<int32_t>(dense.getValues<int32_t>(), out);
    else if (element.isInteger(1))
      store<uint8_t>(dense.getValues<bool>(), out);
    else // f16, bf16: their bits
      store<uint16_t>(
          llvm::map_range(dense.getValues<APFloat>(),
                          [](const APFloat &v) {
                            return v.bitcastToAPInt().getZExtValue();
                          }),
          out);
    return bytes;
  }

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    DenseResourceElementsHandle handle = resource.getRawHandle();
    AsmResourceBlob *blob = handle.getBlob();
    if (!blob)
      return emitError() << "dense_resource '" << handle.getKey()
                         << "' has no data (elided or never loaded)";
    ArrayRef<char> data = blob->getData();
    if (data.size() != bytes.size())
      return emitError() << "dense_resource '" << handle.getKey() << "' holds "
                         << data.size() << " bytes but " << type << " needs "
                         << bytes.size();
    std::copy(data.begin(), data.end(), bytes.begin());
    return bytes;
  }

  return emitError() << "cannot read elements attribute of kind "
                     << attr.getAbstractAttribute().getName();
}
