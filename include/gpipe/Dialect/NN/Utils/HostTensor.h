//===- HostTensor.h - Constant tensors evaluated on the host ----*- C++ -*-===//
//
// A constant tensor held on the host: an MLIR element type, a static shape
// and the values (doubles for float types, int64 for integer and boolean
// types), with the folds both constant evaluators share. The ONNX importer
// evaluates shape arithmetic (Shape, Gather, Slice, Concat, Div, ...) on
// these so that every shape reaching an `nn` op is static; `nn-fold-constants`
// evaluates the nn ops left on constants. Plain C++ on attributes: no kernel
// library, no BLAS.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_UTILS_HOSTTENSOR_H
#define GPIPE_DIALECT_NN_UTILS_HOSTTENSOR_H

#include "gpipe/Dialect/NN/IR/NNShapes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace mlir::gpipe::nn {

/// Folds stop at this many elements: anything larger is not shape
/// arithmetic, and would only bloat the IR.
constexpr int64_t kMaxFoldElements = int64_t(1) << 24;

struct HostTensor {
  /// f16, bf16, f32, f64, i1 or an integer type (ONNX unsigned types map to
  /// unsigned integer types; they fold but never reach an nn op).
  Type elementType;
  nn::Shape shape;
  /// Row-major values; `floats` for float element types, `ints` otherwise
  /// (booleans as 0/1).
  std::vector<double> floats;
  std::vector<int64_t> ints;

  /// A tensor of `shape` filled with zeros.
  static HostTensor zeros(Type elementType, llvm::ArrayRef<int64_t> shape);
  /// A 1-D i64 tensor, the type of ONNX shape values.
  static HostTensor fromI64(MLIRContext *context,
                            llvm::ArrayRef<int64_t> values);

  bool isFloat() const { return llvm::isa<FloatType>(elementType); }
  /// All elements equal (true for an empty tensor).
  bool isSplat() const {
    return isFloat() ? llvm::all_equal(floats) : llvm::all_equal(ints);
  }
  bool isBool() const { return elementType.isInteger(1); }
  int64_t numElements() const { return nn::numElements(shape); }
  RankedTensorType getType() const {
    return RankedTensorType::get(shape, elementType);
  }
  double getDouble(int64_t i) const {
    return isFloat() ? floats[i] : static_cast<double>(ints[i]);
  }
  int64_t getInt(int64_t i) const {
    return isFloat() ? static_cast<int64_t>(floats[i]) : ints[i];
  }
  /// Copies element `from` of `src` (same element kind) to element `to`.
  void copyElement(int64_t to, const HostTensor &src, int64_t from) {
    if (isFloat())
      floats[to] = src.floats[from];
    else
      ints[to] = src.ints[from];
  }
};

/// Rounds `value` to the precision of the float type `type`.
double roundToFloatType(Type type, double value);
/// Wraps `value` to the width of the integer type `type` (two's complement;
/// i1 becomes 0 or 1).
int64_t wrapToIntType(Type type, int64_t value);

/// Whether the nn dialect can hold a tensor of this element type.
bool isNNElementType(Type type);

/// The value as a `dense` attribute (APFloat/APInt per element).
DenseElementsAttr toDenseAttr(const HostTensor &tensor);
/// The value of a statically shaped `dense` or `dense_resource` attribute of
/// an nn element type; an error through `emitError` otherwise.
FailureOr<HostTensor>
fromElementsAttr(ElementsAttr attr,
                 function_ref<InFlightDiagnostic()> emitError);
/// The value as an attribute for an `nn.constant`: `dense` up to
/// `inlineLimit` elements, for splats and for booleans, else a
/// `dense_resource` blob named after `hint`.
ElementsAttr toElementsAttr(const HostTensor &tensor, StringRef hint,
                            int64_t inlineLimit);
/// The value in the little-endian packed layout of `dense_resource` blobs.
std::vector<char> toBytes(const HostTensor &tensor);

enum class BinaryFn {
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  /// Float operands only (std::pow).
  Pow,
  /// ONNX Mod with fmod 0: the sign of the divisor (integers).
  Mod,
  /// ONNX Mod with fmod 1: the sign of the dividend (C's fmod).
  FMod,
  // Comparisons: an i1 result.
  Equal,
  Less,
  LessOrEqual,
  Greater,
  GreaterOrEqual,
  // On booleans.
  And,
  Or,
  Xor,
};
enum class UnaryFn { Neg, Sqrt, Not, Sin, Cos, Floor, Ceil, Round, Log, Exp };

/// Whether `fn` compares (its result is i1).
inline bool isComparison(BinaryFn fn) {
  return fn >= BinaryFn::Equal && fn <= BinaryFn::GreaterOrEqual;
}

/// Elementwise binary op with numpy broadcasting. Integer division truncates
/// toward zero, as in ONNX (and C); division by zero is an error.
FailureOr<HostTensor> foldBinary(BinaryFn fn, const HostTensor &lhs,
                                 const HostTensor &rhs,
                                 nn::EmitErrorFn emitError);
FailureOr<HostTensor> foldUnary(UnaryFn fn, const HostTensor &input,
                                nn::EmitErrorFn emitError);
FailureOr<HostTensor> foldWhere(const HostTensor &cond, const HostTensor &x,
                                const HostTensor &y, nn::EmitErrorFn emitError);
/// ONNX Cast: floats to integers truncate toward zero, anything to i1 is
/// `x != 0`. Non-finite or out-of-range floats cast to integers are an
/// error.
FailureOr<HostTensor> foldCast(const HostTensor &input, Type to,
                               nn::EmitErrorFn emitError);

/// The following take already validated, normalized arguments.
HostTensor foldGather(const HostTensor &data, llvm::ArrayRef<int64_t> indices,
                      llvm::ArrayRef<int64_t> indicesShape, int64_t axis);
HostTensor foldSlice(const HostTensor &input, llvm::ArrayRef<int64_t> offsets,
                     llvm::ArrayRef<int64_t> sizes,
                     llvm::ArrayRef<int64_t> strides);
HostTensor foldConcat(llvm::ArrayRef<const HostTensor *> inputs, int64_t axis,
                      llvm::ArrayRef<int64_t> resultShape);
HostTensor foldTranspose(const HostTensor &input, llvm::ArrayRef<int64_t> perm,
                         llvm::ArrayRef<int64_t> resultShape);
/// Broadcasts to `shape`, which `input` must broadcast to.
HostTensor foldBroadcastTo(const HostTensor &input,
                           llvm::ArrayRef<int64_t> shape);
/// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each
/// matrix in the last two dims, zeroing the rest.
HostTensor foldTrilu(const HostTensor &input, int64_t k, bool upper);

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_UTILS_HOSTTENSOR_H
