//===- ResNet.cpp - The built-in residual CNN -------------------*- C++ -*-===//
//
// Builds the `resnet` preset: the CIFAR-sized residual network of He et al.,
// "Deep Residual Learning for Image Recognition" (2016), section 4.2, with
// PyTorch's module names: a 3x3 stem convolution to `width` channels with
// batch norm and ReLU, then `depth` basic blocks (two 3x3 convolutions with
// batch norm; ReLU after the first and after the residual sum) in three
// stages of width, 2 x width and 4 x width channels, the first block of the
// second and third stage striding by 2 with a 1x1 strided projection
// (convolution and batch norm) on its shortcut, then global average pooling
// and a linear classifier. `depth` 9 is ResNet-20 (6n + 2 with n = 3).
//
// Convolutions have no bias (each feeds a batch norm) and He-normal weights
// (standard deviation sqrt(2 / fan_in)); batch norms start at scale 1 and
// shift 0 with running mean 0 and variance 1 (momentum 0.1, epsilon 1e-5,
// PyTorch's defaults); the classifier has PyTorch's Linear init.
//
//===----------------------------------------------------------------------===//

#include "PresetBuilder.h"

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/IR/NNShapes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::presets;

namespace {

class ResNetBuilder {
public:
  explicit ResNetBuilder(PresetBuilder &pb) : pb(pb) {}

  /// A bias-free He-initialized convolution of module `scope`.
  Value conv(StringRef scope, Value x, int64_t out, int64_t kernel,
             int64_t stride) {
    ArrayRef<int64_t> in = shapeOf(x);
    int64_t fanIn = in[1] * kernel * kernel;
    Value weight = pb.parameter(dottedName(scope) + ".weight",
                                {out, in[1], kernel, kernel},
                                InitRule::normal(std::sqrt(2.0 / fanIn)));
    int64_t pad = kernel / 2;
    SmallVector<int64_t> strides = {stride, stride};
    SmallVector<int64_t> pads = {pad, pad, pad, pad};
    SmallVector<int64_t> dilations = {1, 1};
    SmallVector<int64_t> window2D = {kernel, kernel};
    nn::Window2D window{window2D, strides, pads, dilations, false};
    FailureOr<nn::Shape> image = nn::inferWindowShape(
        in.drop_front(2), window, [&] { return emitError(x.getLoc()); });
    auto type =
        f32Tensor(pb.getContext(), {in[0], out, (*image)[0], (*image)[1]});
    return nn::Conv2DOp::create(pb.builder(), pb.loc(scope, "Conv"), type, x,
                                weight, Value(), strides, pads, dilations, 1);
  }

  /// A training-mode batch norm of module `scope` with its running
  /// statistics.
  Value batchNorm(StringRef scope, Value x) {
    int64_t channels = shapeOf(x)[1];
    std::string prefix = dottedName(scope);
    Value scale = pb.parameter(prefix + ".weight", channels, InitRule::ones());
    Value bias = pb.parameter(prefix + ".bias", channels, InitRule::zeros());
    Value mean =
        pb.parameter(prefix + ".running_mean", channels, InitRule::zeros());
    Value var =
        pb.parameter(prefix + ".running_var", channels, InitRule::ones());
    return nn::BatchNormOp::create(
        pb.builder(), pb.loc(scope, "BatchNormalization"), x.getType(), x,
        scale, bias, mean, var, llvm::APFloat(1.0e-5f), llvm::APFloat(0.1f));
  }

  Value relu(StringRef scope, Value x) {
    return nn::ReluOp::create(pb.builder(), pb.loc(scope, "Relu"), x);
  }

  /// A basic block `scope`: conv-bn-relu-conv-bn, plus the shortcut, relu.
  Value block(StringRef scope, Value x, int64_t out, int64_t stride) {
    Value y = relu(
        scope, batchNorm(joinScope(scope, "bn1"),
                         conv(joinScope(scope, "conv1"), x, out, 3, stride)));
    y = batchNorm(joinScope(scope, "bn2"),
                  conv(joinScope(scope, "conv2"), y, out, 3, 1));
    Value shortcut = x;
    if (stride != 1 || shapeOf(x)[1] != out) {
      std::string down = joinScope(scope, "downsample");
      shortcut = batchNorm(joinScope(down, "1"),
                           conv(joinScope(down, "0"), x, out, 1, stride));
    }
    Value sum = nn::AddOp::create(pb.builder(), pb.loc(scope, "Add"),
                                  y.getType(), y, shortcut);
    return relu(scope, sum);
  }

private:
  PresetBuilder &pb;
};

} // namespace

OwningOpRef<ModuleOp> presets::buildResNet(MLIRContext *context,
                                           const PresetOptions &options) {
  int64_t image = options.imageSize;
  PresetBuilder pb(context, "resnet",
                   f32Tensor(context, {options.batch, 3, image, image}),
                   f32Tensor(context, {options.batch, options.classes}));
  ResNetBuilder rb(pb);
  Value x = rb.relu("", rb.batchNorm("bn1", rb.conv("conv1", pb.input(),
                                                    options.width, 3, 1)));
  // Blocks spread over three stages, the earlier ones taking the remainder.
  for (int64_t stage = 0, index = 0; stage < 3; ++stage) {
    int64_t blocks = options.depth / 3 + (stage < options.depth % 3 ? 1 : 0);
    int64_t channels = options.width << stage;
    for (int64_t b = 0; b < blocks; ++b, ++index) {
      int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      x = rb.block("layer" + std::to_string(stage + 1) + "/" +
                       std::to_string(b),
                   x, channels, stride);
    }
  }
  ArrayRef<int64_t> shape = shapeOf(x);
  SmallVector<int64_t> kernel = {shape[2], shape[3]};
  SmallVector<int64_t> ones = {1, 1}, zeros = {0, 0, 0, 0};
  Value pooled = nn::AvgPool2DOp::create(
      pb.builder(), pb.loc("avgpool", "GlobalAveragePool"),
      f32Tensor(context, {shape[0], shape[1], 1, 1}), x, kernel, ones, zeros,
      false, false);
  Value flat =
      nn::ReshapeOp::create(pb.builder(), pb.loc("", "Flatten"),
                            f32Tensor(context, {shape[0], shape[1]}), pooled);
  double bound = 1.0 / std::sqrt(static_cast<double>(shape[1]));
  return pb.finish(pb.linear("fc", flat, options.classes,
                             InitRule::uniform(bound),
                             InitRule::uniform(bound)));
}
