//===- Presets.h - Built-in models ------------------------------*- C++ -*-===//
//
// Built-in networks written directly in the `nn` dialect: an MLP, a
// decoder-only GPT with a char-level vocabulary and a CIFAR-sized residual
// CNN with batch norm. Their parameters carry
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
  int64_t depth = 4;          ///< hidden layers (MLP), transformer blocks (GPT)
                              ///< or residual blocks (ResNet)
  int64_t width = 64;         ///< hidden features (MLP), model dim (GPT) or
                              ///< the first stage's channels (ResNet)
  int64_t heads = 4;          ///< attention heads (GPT)
  int64_t seqLen = 32;        ///< tokens per sample (GPT)
  int64_t batch = 16;         ///< samples per mini-batch
  int64_t vocab = 65;         ///< vocabulary size (GPT, char-level)
  int64_t inFeatures = 32;    ///< input features (MLP)
  int64_t classes = 10;       ///< output classes (MLP, ResNet)
  int64_t imageSize = 32;     ///< image height and width (ResNet, 3 channels)
  bool tieEmbeddings = false; ///< the head reuses the token embedding (GPT)
};

/// Names of the built-in presets ("mlp", "gpt", "resnet").
std::vector<std::string> presetNames();

/// The sizes preset `name` uses when their flags are not given (the
/// struct's defaults, except for the ResNet: ResNet-8 with 16 channels,
/// batch 32).
PresetOptions getPresetDefaults(llvm::StringRef name);

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
