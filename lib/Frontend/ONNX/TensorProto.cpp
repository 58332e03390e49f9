//===- TensorProto.cpp - ONNX tensor data ---------------------------------===//
//
// Decodes ONNX TensorProtos (raw and typed data, every element type gpipe
// reads) into packed little-endian bytes and host tensors.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/SwapByteOrder.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::onnximport;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

namespace mlir::gpipe::onnximport {

//===----------------------------------------------------------------------===//
// Tensor data
//===----------------------------------------------------------------------===//

/// An ONNX element type as an MLIR type; null if gpipe cannot read it.
Type elementTypeFor(MLIRContext *ctx, int32_t onnxType) {
  using TP = onnx::TensorProto;
  switch (onnxType) {
  case TP::FLOAT:
    return Float32Type::get(ctx);
  case TP::DOUBLE:
    return Float64Type::get(ctx);
  case TP::FLOAT16:
    return Float16Type::get(ctx);
  case TP::BFLOAT16:
    return BFloat16Type::get(ctx);
  case TP::BOOL:
    return IntegerType::get(ctx, 1);
  case TP::INT8:
    return IntegerType::get(ctx, 8);
  case TP::INT16:
    return IntegerType::get(ctx, 16);
  case TP::INT32:
    return IntegerType::get(ctx, 32);
  case TP::INT64:
    return IntegerType::get(ctx, 64);
  case TP::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case TP::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case TP::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case TP::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  default:
    return {};
  }
}

std::string onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto_DataType_IsValid(onnxType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(onnxType));
  return "#" + std::to_string(onnxType);
}

unsigned byteWidth(Type elementType) {
  return std::max(1u, (elementType.getIntOrFloatBitWidth() + 7) / 8);
}

/// Decodes `proto`; `what` names it in messages ("initializer 'w'").
FailureOr<RawTensor> decodeTensor(MLIRContext *ctx,
                                  const onnx::TensorProto &proto, Location loc,
                                  const std::string &what) {
  using TP = onnx::TensorProto;
  if (proto.data_location() == TP::EXTERNAL || proto.external_data_size())
    return emitError(loc) << what
                          << " stores its data in an external file, which "
                             "gpipe does not support (save the model with "
                             "its data inline)",
           failure();
  if (proto.has_segment())
    return emitError(loc) << what
                          << " is segmented, which gpipe does not "
                             "support",
           failure();
  RawTensor raw;
  raw.elementType = elementTypeFor(ctx, proto.data_type());
  if (!raw.elementType)
    return emitError(loc) << what << " has element type "
                          << onnxTypeName(proto.data_type())
                          << ", which gpipe does not support",
           failure();
  int64_t count = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0 || (d != 0 && count > INT64_MAX / d))
      return emitError(loc) << what << " has an invalid shape "
                            << nn::formatShape(SmallVector<int64_t>(
                                   proto.dims().begin(), proto.dims().end())),
             failure();
    raw.shape.push_back(d);
    count *= d;
  }
  unsigned width = byteWidth(raw.elementType);
  auto sizeError = [&](int64_t have) {
    return emitError(loc) << what << " has " << have
                          << " elements of data but its shape "
                          << nn::formatShape(raw.shape) << " needs " << count,
           failure();
  };

  if (proto.has_raw_data()) {
    const std::string &data = proto.raw_data();
    if (data.size() % width != 0)
      return emitError(loc) << what << " has " << data.size()
                            << " bytes of raw data, not a whole number of "
                            << raw.elementType << " elements",
             failure();
    if (static_cast<int64_t>(data.size() / width) != count)
      return sizeError(data.size() / width);
    raw.bytes.assign(data.begin(), data.end());
    if (llvm::sys::IsBigEndianHost && width > 1)
      for (size_t i = 0; i < raw.bytes.size(); i += width)
        std::reverse(raw.bytes.begin() + i, raw.bytes.begin() + i + width);
    return raw;
  }

  // Reserved once the data is known to hold `count` elements: a shape with
  // no data behind it must not allocate what the shape claims.
  auto put = [&](uint64_t bits) {
    for (unsigned b = 0; b < width; ++b)
      raw.bytes.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  };
  switch (proto.data_type()) {
  case TP::FLOAT:
    if (proto.float_data_size() != count)
      return sizeError(proto.float_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (float f : proto.float_data()) {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      put(bits);
    }
    break;
  case TP::DOUBLE:
    if (proto.double_data_size() != count)
      return sizeError(proto.double_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (double d : proto.double_data()) {
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof(bits));
      put(bits);
    }
    break;
  case TP::INT64:
    if (proto.int64_data_size() != count)
      return sizeError(proto.int64_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (int64_t v : proto.int64_data())
      put(static_cast<uint64_t>(v));
    break;
  case TP::UINT32:
  case TP::UINT64:
    if (proto.uint64_data_size() != count)
      return sizeError(proto.uint64_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (uint64_t v : proto.uint64_data())
      put(v);
    break;
  default: // INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16
    if (proto.int32_data_size() != count)
      return sizeError(proto.int32_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (int32_t v : proto.int32_data())
      put(static_cast<uint64_t>(static_cast<int64_t>(v)));
    break;
  }
  return raw;
}

HostTensor toHost(const RawTensor &raw) {
  HostTensor t = HostTensor::zeros(raw.elementType, raw.shape);
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = raw.bits(i);
    if (!t.isFloat()) {
      t.ints[i] = wrapToIntType(raw.elementType, static_cast<int64_t>(bits));
      continue;
    }
    if (raw.elementType.isF32()) {
      uint32_t b32 = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b32, sizeof(f));
      t.floats[i] = f;
    } else if (raw.elementType.isF64()) {
      double d;
      std::memcpy(&d, &bits, sizeof(d));
      t.floats[i] = d;
    } else {
      const llvm::fltSemantics &sem =
          cast<FloatType>(raw.elementType).getFloatSemantics();
      llvm::APFloat f(sem, llvm::APInt(byteWidth(raw.elementType) * 8, bits));
      bool lost;
      f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      t.floats[i] = f.convertToDouble();
    }
  }
  return t;
}

/// Whether every element of a float tensor is finite (exponent not all
/// ones).
bool allFinite(const RawTensor &raw) {
  uint64_t expMask;
  Type type = raw.elementType;
  if (type.isF32())
    expMask = 0x7f800000;
  else if (type.isF64())
    expMask = 0x7ff0000000000000ULL;
  else if (type.isF16())
    expMask = 0x7c00;
  else if (type.isBF16())
    expMask = 0x7f80;
  else
    return true;
  for (int64_t i = 0, n = nn::numElements(raw.shape); i < n; ++i)
    if ((raw.bits(i) & expMask) == expMask)
      return false;
  return true;
}

/// |x| from here up is no weight: PyTorch masks with finfo(float32).min
/// (-3.4e38), which a trained value never reaches.
static constexpr double kMaskMagnitude = 1e30;

bool isMaskConstant(const HostTensor &t) {
  return t.isFloat() && llvm::any_of(t.floats, [](double d) {
           return std::abs(d) >= kMaskMagnitude;
         });
}

bool slicesEqual(const RawTensor &raw, int64_t count) {
  if (raw.shape.empty() || raw.shape[0] != count || count < 1)
    return false;
  size_t slice = raw.bytes.size() / count;
  for (int64_t i = 1; i < count; ++i)
    if (!std::equal(raw.bytes.begin(), raw.bytes.begin() + slice,
                    raw.bytes.begin() + i * slice))
      return false;
  return true;
}

} // namespace mlir::gpipe::onnximport
