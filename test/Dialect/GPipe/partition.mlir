// RUN: gpipe-opt %s --gpipe-partition="stages=2 microbatches=4" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpipe-opt %s --gpipe-partition="stages=2 microbatches=4 balance=1,2" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=BALANCE

// A three-layer MLP on one micro-batch with its loss. The partitioner puts
// the two heavy layers apart; each stage gets a forward and a backward
// function and a declaration; the last stage takes the labels and its
// backward seeds the loss gradient with 1/M. Stage 0's input is the data, so
// its backward does not compute the input's gradient.

nn.parameter @w0 : tensor<64x16xf32> init normal(2.0e-02)
nn.parameter @w1 : tensor<64x64xf32> init normal(2.0e-02)
nn.parameter @w2 : tensor<10x64xf32> init normal(2.0e-02)

// CHECK-LABEL: func.func @forward
// CHECK:       func.func @train_s0_fwd(%[[X:.*]]: tensor<4x16xf32>) -> tensor<4x64xf32>
// CHECK:         nn.layer "l0"(%[[X]])
// CHECK:       func.func @train_s0_bwd({{.*}}: tensor<4x16xf32>, {{.*}}: tensor<4x64xf32>) -> tensor<64x16xf32>
// CHECK-SAME:    nn.input_grads = array<i64>, nn.param_grads = [@w0]
// CHECK:       gpipe.stage @train_s0 index 0 : tensor<4x16xf32> -> tensor<4x64xf32> forward @train_s0_fwd backward @train_s0_bwd
// CHECK:       func.func @train_s1_fwd(%[[H:.*]]: tensor<4x64xf32>, %[[L:.*]]: tensor<4xi64>) -> tensor<f32>
// CHECK:         nn.layer "l1"(%[[H]])
// CHECK:         nn.layer "l2"
// CHECK:         nn.cross_entropy {{.*}}, %[[L]]
// CHECK:       func.func @train_s1_bwd({{.*}}: tensor<4x64xf32>, {{.*}}: tensor<4xi64>, {{.*}}: tensor<f32>)
// CHECK-SAME:    nn.loss_scale = 2.500000e-01 : f64
// CHECK-SAME:    nn.param_grads = [@w1, @w2]
// CHECK:       gpipe.stage @train_s1 index 1 : tensor<4x64xf32> -> tensor<f32>
// CHECK:       gpipe.pipeline @train stages [@train_s0, @train_s1] microbatches 4 schedule gpipe remat stage {
// CHECK-NEXT:  }

// BALANCE-LABEL: func.func @train_s0_fwd
// BALANCE:         nn.layer "l0"
// BALANCE-NOT:     nn.layer
// BALANCE:       func.func @train_s1_fwd
// BALANCE:         nn.layer "l1"
// BALANCE:         nn.layer "l2"
func.func @forward(%x: tensor<4x16xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %0 = nn.layer "l0"(%x) : (tensor<4x16xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %w = nn.param @w0 : tensor<64x16xf32>
    %h = nn.linear %a, %w {transpose_weight = true} : (tensor<4x16xf32>, tensor<64x16xf32>) -> tensor<4x64xf32>
    %r = nn.relu %h : tensor<4x64xf32>
    nn.yield %r : tensor<4x64xf32>
  }
  %1 = nn.layer "l1"(%0) : (tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %w = nn.param @w1 : tensor<64x64xf32>
    %h = nn.linear %a, %w {transpose_weight = true} : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
    %r = nn.relu %h : tensor<4x64xf32>
    nn.yield %r : tensor<4x64xf32>
  }
  %2 = nn.layer "l2"(%1) : (tensor<4x64xf32>) -> tensor<4x10xf32> {
  ^bb0(%a: tensor<4x64xf32>):
    %w = nn.param @w2 : tensor<10x64xf32>
    %h = nn.linear %a, %w {transpose_weight = true} : (tensor<4x64xf32>, tensor<10x64xf32>) -> tensor<4x10xf32>
    nn.yield %h : tensor<4x10xf32>
  }
  %loss = nn.cross_entropy %2, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{the network has no layers to cut into stages: no op computes its output from its input}}
func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  return %x : tensor<4x16xf32>
}

// -----

// expected-error @+1 {{the network has no layers to cut into stages: its ops are not grouped into nn.layer ops (run nn-form-layers first)}}
func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %y = nn.relu %x : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// expected-error @+1 {{cannot cut 1 layers into 2 stages}}
func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = nn.layer "only"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %r = nn.relu %a : tensor<4x16xf32>
    nn.yield %r : tensor<4x16xf32>
  }
  return %0 : tensor<4x16xf32>
}

