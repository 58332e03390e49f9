//===- PresetBuilder.h - Shared helpers of the built-in models --*- C++ -*-===//
//
// The private helper the preset builders share: it owns the module being
// built, declares `nn.parameter`s (named after the PyTorch module path, with
// an init rule) ahead of `@forward`, reads them back with `nn.param`, and
// gives every op an ONNX-style name-scope location
// (`/blocks.0/attn/qkv/Linear`, repeated op kinds in one scope numbered
// `Add`, `Add_1`, ... as torch.onnx does) so that `nn-form-layers` names the
// layers of a preset the same way as those of an exported model.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_LIB_FRONTEND_PRESETS_PRESETBUILDER_H
#define GPIPE_LIB_FRONTEND_PRESETS_PRESETBUILDER_H

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Frontend/Presets.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::gpipe::presets {

/// How a parameter is initialized at run time (the `init` and `init_scale`
/// attributes of `nn.parameter`).
struct InitRule {
  nn::InitKind rule;
  std::optional<double> scale;

  static InitRule zeros() { return {nn::InitKind::Zeros, std::nullopt}; }
  static InitRule ones() { return {nn::InitKind::Ones, std::nullopt}; }
  static InitRule normal(double std) { return {nn::InitKind::Normal, std}; }
  static InitRule uniform(double bound) {
    return {nn::InitKind::Uniform, bound};
  }
};

/// Builds one preset module: parameters first, then `func.func @forward`.
class PresetBuilder {
public:
  /// Starts a module holding `@forward(inputType) -> resultType`; ops are
  /// built into its body. `presetName` names the file of every location
  /// (`preset:gpt`).
  PresetBuilder(MLIRContext *context, llvm::StringRef presetName,
                Type inputType, Type resultType);

  OpBuilder &builder() { return opBuilder; }
  MLIRContext *getContext() { return opBuilder.getContext(); }
  /// The argument of `@forward`.
  Value input();

  /// The location of the next op of kind `kind` in module scope `scope`
  /// (`blocks.0/attn`, empty for the root): a NameLoc
  /// `/blocks.0/attn/<kind>[_n]` around `preset:<name>:0:0`.
  Location loc(llvm::StringRef scope, llvm::StringRef kind);

  /// Declares parameter `name` of type f32 `shape` with `init` and returns
  /// its value read in `@forward`.
  Value parameter(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                  InitRule init);

  /// `nn.linear {transpose_weight = true}` of module `scope` (parameters
  /// `<scope>.weight` `[out, in]` and, when `biasInit` is set, `<scope>.bias`
  /// `[out]`) on the last dim of `x`.
  Value linear(llvm::StringRef scope, Value x, int64_t out, InitRule weightInit,
               std::optional<InitRule> biasInit);

  /// `nn.layer_norm` over the last dim of `x` (epsilon 1e-5) of module
  /// `scope` with parameters `<scope>.weight` (ones) and `<scope>.bias`
  /// (zeros).
  Value layerNorm(llvm::StringRef scope, Value x);

  /// A scalar f32 `nn.constant`.
  Value scalar(llvm::StringRef scope, double value);

  /// Returns `result` from `@forward` and verifies the module; null (with the
  /// verifier's diagnostics reported) if it does not verify.
  OwningOpRef<ModuleOp> finish(Value result);

private:
  OpBuilder opBuilder;
  OwningOpRef<ModuleOp> module;
  func::FuncOp forward;
  StringAttr fileName;
  llvm::StringMap<unsigned> kindCount;
};

/// f32 tensor of `shape`.
RankedTensorType f32Tensor(MLIRContext *context, llvm::ArrayRef<int64_t> shape);

/// The shape of a ranked tensor value.
llvm::ArrayRef<int64_t> shapeOf(Value v);

/// "blocks.0/attn/qkv" -> "blocks.0.attn.qkv".
std::string dottedName(llvm::StringRef scope);

/// "blocks.0" + "attn" -> "blocks.0/attn" (either may be empty).
std::string joinScope(llvm::StringRef outer, llvm::StringRef inner);

OwningOpRef<ModuleOp> buildMLP(MLIRContext *context,
                               const PresetOptions &options);
OwningOpRef<ModuleOp> buildGPT(MLIRContext *context,
                               const PresetOptions &options);
OwningOpRef<ModuleOp> buildResNet(MLIRContext *context,
                                  const PresetOptions &options);

} // namespace mlir::gpipe::presets

#endif // GPIPE_LIB_FRONTEND_PRESETS_PRESETBUILDER_H
