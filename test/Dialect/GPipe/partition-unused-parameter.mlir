// RUN: gpipe-import --preset mlp --depth 2 --width 8 --in-features 8 --classes 4 --batch 8 > %t.mlir
// RUN: sed -i '0,/nn.parameter/s//nn.parameter @"head.unused" : tensor<3xf32> init uniform(0.1)\n  nn.parameter/' %t.mlir
// RUN: gpipe-opt %t.mlir --gpipe-pipeline="stages=2 microbatches=2" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=WARN < %t.err
// RUN: gpipe-compile %t.mlir --stages 2 --microbatches 2 --quiet -o %t.so 2>&1 | FileCheck %s --check-prefix=WARN
// RUN: gpipe-run %t.so --steps 2 | FileCheck %s --check-prefix=TRAIN

// A parameter the network never reads (an ONNX initializer nothing
// consumes, a dropout ratio, an untied head) would be trained by no rank
// and the library could not be loaded: the partition drops it with a
// warning, and the library loads and trains.

// CHECK-NOT: nn.parameter @"head.unused"
// CHECK: nn.parameter @"0.weight"
// CHECK-NOT: nn.parameter @"head.unused"
// WARN: warning: parameter 'head.unused' is not used by the network; it is dropped (no stage trains it)
// TRAIN: loss: {{.*}} over 2 steps
