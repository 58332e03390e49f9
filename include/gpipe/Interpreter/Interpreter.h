//===- Interpreter.h - Reference executor for nn functions ------*- C++ -*-===//
//
// A direct interpreter of `nn` dialect functions on the host: each op runs
// the runtime's CPU kernel (runtime/include/gpipe/Runtime/CPUKernels.h) on
// host tensors, called as getKernelCall (KernelCalls.h) describes it for the
// code generator too, `nn.layer` bodies run inline, `nn.param` reads a
// ParameterStore filled from the module's `nn.parameter` initial values (or
// their seeded init rules) and `nn.constant` materializes its attribute. The
// ops reverse-mode autodiff emits (`nn.reduce_sum`, `nn.insert_slice` and the
// `*_grad` kernels) run too, so any backward function buildBackwardFunction
// builds can be interpreted. It is the reference the tests check imports,
// rewrites and autodiff against (and the pipeline executor's engine); the
// production path compiles the IR instead.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_INTERPRETER_INTERPRETER_H
#define GPIPE_INTERPRETER_INTERPRETER_H

#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Common.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::gpipe {

/// A tensor on the host: an element type, a static shape and row-major
/// little-endian elements (booleans one byte each, 0 or 1). Copies share the
/// elements; treat a tensor as immutable once it has been handed on.
class HostTensor {
public:
  /// An empty (invalid) tensor.
  HostTensor() = default;
  /// A zero-filled tensor.
  HostTensor(gpipe_rt_dtype dtype, llvm::ArrayRef<int64_t> shape);

  /// Tensors holding `values` (one per element; missing ones stay zero,
  /// extra ones are ignored).
  static HostTensor fromF32(llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<float> values);
  static HostTensor fromI64(llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<int64_t> values);
  static HostTensor fromBool(llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<uint8_t> values);

  /// Whether this holds a tensor (default-constructed ones do not).
  bool isValid() const { return storage != nullptr; }
  gpipe_rt_dtype getDType() const { return dtype; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getRank() const { return int64_t(shape.size()); }
  int64_t getNumElements() const;
  size_t getByteSize() const;

  const void *getData() const { return storage.get(); }
  /// Writable elements; only for a tensor not yet shared.
  void *getMutableData() { return storage.get(); }

  /// The elements as f32 / i64 / bytes; empty unless the dtype matches.
  llvm::ArrayRef<float> getF32() const;
  llvm::ArrayRef<int64_t> getI64() const;
  llvm::ArrayRef<uint8_t> getBool() const;

  /// The same elements under another shape of equal element count (shares
  /// the storage).
  HostTensor reshaped(llvm::ArrayRef<int64_t> newShape) const;

  /// The MLIR type, e.g. tensor<2x16xf32>.
  RankedTensorType getType(MLIRContext *context) const;
  /// "tensor<2x16xf32>" without needing a context.
  std::string getTypeString() const;

private:
  gpipe_rt_dtype dtype = GPIPE_RT_F32;
  llvm::SmallVector<int64_t, 4> shape;
  std::shared_ptr<uint8_t[]> storage;
};

/// Reads a statically shaped `dense` or `dense_resource` elements attribute.
/// Reports through `emitError` when the attribute cannot be read.
FailureOr<HostTensor>
hostTensorFromAttr(ElementsAttr attr,
                   llvm::function_ref<InFlightDiagnostic()> emitError);

/// The current values of a module's parameters, by symbol name.
class ParameterStore {
public:
  /// Values for every `nn.parameter` of `module`: explicit initial values as
  /// given; init rules (`zeros`, `ones`, `normal`, `uniform`) drawn from
  /// `seed` with the runtime's counter-based generator, keyed by the
  /// parameter's name (gpipe_rt_cpu_fill_init_f32), so the values do not
  /// depend on the order of the parameters. Reports located errors.
  static FailureOr<ParameterStore> fromModule(ModuleOp module,
                                              uint64_t seed = 0);

  /// Sets (or replaces) parameter `name`.
  void set(llvm::StringRef name, HostTensor value);
  /// The value of `name`, or null.
  const HostTensor *lookup(llvm::StringRef name) const;
  size_t size() const { return values.size(); }
  /// Every name, sorted.
  std::vector<std::string> getNames() const;

private:
  llvm::StringMap<HostTensor> values;
};

/// Weight gradients accumulated in place, as compiled code does
/// (NNDialect::getAccumulatingGemms): for each listed result index, the
/// nn.gemm computing it adds its product into `into` (beta 1; on the first
/// micro-batch, `first`, it overwrites it), and the result is that tensor.
struct GradientAccumulation {
  llvm::SmallDenseMap<unsigned, HostTensor *> into;
  bool first = false;
};

/// Runs `func` (a body of nn ops, nn.layer ops and a func.return) on `args`
/// and returns its results. Arguments must match the function's argument
/// types exactly. An op the interpreter does not support, an element type a
/// kernel lacks, or a data-dependent error (an index or label out of range)
/// is reported at the op's location. Dropout masks are drawn with `rngKey`
/// (gpipe::abi::getRngKey of the step and micro-batch); `accumulation`, if
/// given, binds weight gradients to their accumulators.
FailureOr<std::vector<HostTensor>>
interpretFunction(func::FuncOp func, llvm::ArrayRef<HostTensor> args,
                  const ParameterStore &params, uint64_t rngKey = 0,
                  const GradientAccumulation *accumulation = nullptr);

/// Runs one op without regions (an nn op the interpreter supports, not
/// nn.param) on `operands` and returns its results; errors are reported at
/// the op.
FailureOr<std::vector<HostTensor>>
interpretOp(Operation *op, llvm::ArrayRef<HostTensor> operands);

/// The tensor as an elements attribute: `dense` up to `inlineLimit`
/// elements (and for booleans and splats), a `dense_resource` blob named
/// after `hint` above.
ElementsAttr elementsAttrFromHostTensor(const HostTensor &tensor,
                                        MLIRContext *context,
                                        llvm::StringRef hint,
                                        int64_t inlineLimit = 16);

} // namespace mlir::gpipe

#endif // GPIPE_INTERPRETER_INTERPRETER_H
