//===- Presets.h - Built-in models ------------------------------*- C++ -*-===//
//
// Built-in networks written directly in the `nn` dialect: an MLP and a
// decoder-only GPT with a char-level vocabulary. Their parameters carry
// PyTorch-style dotted names and layouts (`blocks.0.attn.qkv.weight`,
// `[out, in]`) and seeded init rules instead of values; op locations carry
// ONNX-style name scopes (`/blocks.0/ln1/LayerNorm`) so layer formation names
// layers the same way for presets and imports.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_FRONTEND_PRESETS_H
#define GPIPE_FRONTEND_PRESETS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::gpipe {

struct PresetOptions {
  int64_t depth = 4;      ///< hidden layers (MLP) or transformer blocks (GPT)
  int64_t width = 64;     ///< hidden features (MLP) or model dim (GPT)
  int64_t heads = 4;      ///< attention heads (GPT)
  int64_t seqLen = 32;    ///< tokens per sample (GPT)
  int64_t batch = 16;     ///< samples per mini-batch
  int64_t vocab = 65;     ///< vocabulary size (GPT, char-level)
  int64_t inFeatures = 32; ///< input features (MLP)
  int64_t classes = 10;   ///< output classes (MLP)
};

/// Names of the built-in presets ("mlp", "gpt").
std::vector<std::string> presetNames();

/// Builds preset `name`: its `nn.parameter`s (init rules, no values), then
/// `func.func @forward` in fused `nn` ops with ONNX-style name-scope
/// locations, verified. Only the options the preset uses are checked. On bad
/// options (a size that is not positive, or past a cap that keeps the IR
/// buildable: depth <= 16384, seq-len <= 8192, other sizes <= 2^24, no tensor
/// over 2^40 elements; width not divisible by heads; unknown name) reports an
/// error at an unknown location naming the option and returns null.
OwningOpRef<ModuleOp> buildPreset(MLIRContext *context, llvm::StringRef name,
                                  const PresetOptions &options);

} // namespace mlir::gpipe

#endif // GPIPE_FRONTEND_PRESETS_H
