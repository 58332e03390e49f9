// RUN: gpipe-opt %s --nn-form-layers -split-input-file | FileCheck %s
// RUN: gpipe-opt %s --nn-form-layers=granularity=op -split-input-file | FileCheck %s --check-prefix=OP
// RUN: gpipe-opt %s --nn-form-layers=granularity=anchor -split-input-file | FileCheck %s --check-prefix=ANCHOR
// RUN: not gpipe-opt %s --nn-form-layers=granularity=coarse -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: for the --granularity option: unknown granularity 'coarse' (expected scope, anchor or op)

// A Linear/ReLU chain: one layer per Linear+ReLU pair by default, one per op
// with granularity=op. Layer names come from the ONNX-style name scopes.

nn.parameter @"0.weight" : tensor<32x16xf32> init normal(2.0e-02)
nn.parameter @"2.weight" : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @"4.weight" : tensor<10x32xf32> init normal(2.0e-02)

// CHECK-LABEL: func.func @linear_relu_pairs
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>)
// CHECK:         %[[L0:.*]] = nn.layer "0"(%[[X]]) : (tensor<8x16xf32>) -> tensor<8x32xf32> {
// CHECK:           nn.linear
// CHECK-NEXT:      nn.relu
// CHECK-NEXT:      nn.yield
// CHECK:         %[[L1:.*]] = nn.layer "2"(%[[L0]])
// CHECK:           nn.linear
// CHECK-NEXT:      nn.relu
// CHECK:         %[[L2:.*]] = nn.layer "4"(%[[L1]])
// CHECK:           nn.linear
// CHECK-NEXT:      nn.yield
// CHECK:         return %[[L2]]
// CHECK-NOT:     nn.layer

// OP-LABEL: func.func @linear_relu_pairs
// OP-COUNT-5:  nn.layer
// OP-NOT:      nn.layer
func.func @linear_relu_pairs(%x: tensor<8x16xf32>) -> tensor<8x10xf32> {
  %w0 = nn.param @"0.weight" : tensor<32x16xf32>
  %h0 = nn.linear %x, %w0 {transpose_weight = true} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32> loc("/0/Gemm")
  %a0 = nn.relu %h0 : tensor<8x32xf32> loc("/1/Relu")
  %w2 = nn.param @"2.weight" : tensor<32x32xf32>
  %h2 = nn.linear %a0, %w2 {transpose_weight = true} : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32> loc("/2/Gemm")
  %a2 = nn.relu %h2 : tensor<8x32xf32> loc("/3/Relu")
  %w4 = nn.param @"4.weight" : tensor<10x32xf32>
  %y = nn.linear %a2, %w4 {transpose_weight = true} : (tensor<8x32xf32>, tensor<10x32xf32>) -> tensor<8x10xf32> loc("/4/Gemm")
  return %y : tensor<8x10xf32>
}

// -----

// A residual block keeps two activations live until its add, so it is one
// layer; the common scope "blocks.0" names it.

nn.parameter @"stem.weight" : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @"blocks.0.ln.weight" : tensor<32xf32> init ones
nn.parameter @"blocks.0.fc.weight" : tensor<32x32xf32> init normal(2.0e-02)
nn.parameter @"head.weight" : tensor<4x32xf32> init normal(2.0e-02)

// CHECK-LABEL: func.func @residual_block_stays_whole
// CHECK:         %[[STEM:.*]] = nn.layer "stem"
// CHECK:         %[[BLOCK:.*]] = nn.layer "blocks.0"(%[[STEM]])
// CHECK:         ^bb0(%[[IN:.*]]: tensor<8x32xf32>):
// CHECK:           %[[LN:.*]] = nn.layer_norm %[[IN]]
// CHECK:           %[[FC:.*]] = nn.linear %[[LN]]
// CHECK:           %[[RES:.*]] = nn.add %[[IN]], %[[FC]]
// CHECK:           nn.yield %[[RES]]
// CHECK:         %[[HEAD:.*]] = nn.layer "head"(%[[BLOCK]])
// CHECK:         return %[[HEAD]]

// OP-LABEL: func.func @residual_block_stays_whole
// OP:         nn.layer "stem"
// OP:         nn.layer "blocks.0"
// OP:         nn.layer "head"
func.func @residual_block_stays_whole(%x: tensor<8x32xf32>) -> tensor<8x4xf32> {
  %ws = nn.param @"stem.weight" : tensor<32x32xf32>
  %s = nn.linear %x, %ws {transpose_weight = true} : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32> loc("/stem/Gemm")
  %g = nn.param @"blocks.0.ln.weight" : tensor<32xf32>
  %ln = nn.layer_norm %s, %g {axis = 1} : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("/blocks.0/ln/LayerNorm")
  %wf = nn.param @"blocks.0.fc.weight" : tensor<32x32xf32>
  %fc = nn.linear %ln, %wf {transpose_weight = true} : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32> loc("/blocks.0/fc/Gemm")
  %r = nn.add %s, %fc : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("/blocks.0/Add")
  %wh = nn.param @"head.weight" : tensor<4x32xf32>
  %y = nn.linear %r, %wh {transpose_weight = true} : (tensor<8x32xf32>, tensor<4x32xf32>) -> tensor<8x4xf32> loc("/head/Gemm")
  return %y : tensor<8x4xf32>
}

// -----

// Constants are not activations: one used by two layers is cloned into
// both, and nothing is left outside. Unnamed ops give layer<N> names, made
// unique.

// CHECK-LABEL: func.func @constants_cloned_into_layers
// CHECK-NOT:     nn.constant
// CHECK:         nn.layer "layer0"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[C0:.*]] = nn.constant dense<2.000000e+00>
// CHECK-NEXT:      %[[S0:.*]] = nn.softmax
// CHECK-NEXT:      nn.mul %[[S0]], %[[C0]]
// CHECK:         nn.layer "layer1"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[C1:.*]] = nn.constant dense<2.000000e+00>
// CHECK-NEXT:      %[[S1:.*]] = nn.softmax
// CHECK-NEXT:      nn.mul %[[S1]], %[[C1]]
func.func @constants_cloned_into_layers(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = nn.constant dense<2.0> : tensor<f32>
  %a = nn.softmax %x {axis = 1} : tensor<4x8xf32> -> tensor<4x8xf32>
  %b = nn.mul %a, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %d = nn.softmax %b {axis = 1} : tensor<4x8xf32> -> tensor<4x8xf32>
  %e = nn.mul %d, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

// Two network inputs live at once: the first layer takes both. The same
// scope appearing again after another one gets a numbered name.

// CHECK-LABEL: func.func @two_inputs_and_repeated_names
// CHECK-SAME:    (%[[IDS:.*]]: tensor<2x4xi64>, %[[MASK:.*]]: tensor<2x4x8xi1>)
// CHECK:         %[[E:.*]] = nn.layer "emb"(%[[IDS]], %[[MASK]]) : (tensor<2x4xi64>, tensor<2x4x8xi1>) -> tensor<2x4x8xf32>
// CHECK:         nn.layer "norm"(%[[E]])
// CHECK:         nn.layer "mid"
// CHECK:         nn.layer "norm_1"
func.func @two_inputs_and_repeated_names(%ids: tensor<2x4xi64>, %mask: tensor<2x4x8xi1>) -> tensor<2x4x8xf32> {
  %t = nn.param @table : tensor<16x8xf32>
  %e = nn.gather %t, %ids {axis = 0} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("/emb/Gather")
  %z = nn.constant dense<0.0> : tensor<f32>
  %m = nn.where %mask, %e, %z : (tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32> loc("/emb/Where")
  %n1 = nn.softmax %m {axis = 2} : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("/norm/Softmax")
  %n2 = nn.softmax %n1 {axis = 2} : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("/mid/Softmax")
  %n3 = nn.softmax %n2 {axis = 2} : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("/norm/Softmax_1")
  return %n3 : tensor<2x4x8xf32>
}
nn.parameter @table : tensor<16x8xf32> init normal(1.0)

// -----

// Consecutive cut segments of one module form one layer: the attention and
// MLP halves of a transformer block each end in a residual add (a cut point)
// but share the scope "blocks.0". With granularity=op they stay apart.

nn.parameter @"blocks.0.attn.weight" : tensor<8x8xf32> init normal(2.0e-02)
nn.parameter @"blocks.0.mlp.weight" : tensor<8x8xf32> init normal(2.0e-02)

// CHECK-LABEL: func.func @block_halves_form_one_layer
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK:         %[[B:.*]] = nn.layer "blocks.0"(%[[X]])
// CHECK-COUNT-2:   nn.add
// CHECK:           nn.yield
// CHECK:         return %[[B]]
// CHECK-NOT:     nn.layer

// ANCHOR-LABEL: func.func @block_halves_form_one_layer
// ANCHOR:         nn.layer "blocks.0"
// ANCHOR:         nn.layer "blocks.0_1"

// OP-LABEL: func.func @block_halves_form_one_layer
// OP:         nn.layer "blocks.0"
// OP:         nn.layer "blocks.0_1"
func.func @block_halves_form_one_layer(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wa = nn.param @"blocks.0.attn.weight" : tensor<8x8xf32>
  %a = nn.linear %x, %wa {transpose_weight = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/attn/Linear")
  %r1 = nn.add %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/Add")
  %wm = nn.param @"blocks.0.mlp.weight" : tensor<8x8xf32>
  %m = nn.linear %r1, %wm {transpose_weight = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/mlp/Linear")
  %r2 = nn.add %r1, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/blocks.0/Add_1")
  return %r2 : tensor<4x8xf32>
}

// -----

// A function that already has layers is left as it is.

// CHECK-LABEL: func.func @already_layered
// CHECK:         nn.layer "mine"
// CHECK-NOT:     nn.layer
func.func @already_layered(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = nn.layer "mine"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %s = nn.relu %a : tensor<4xf32>
    nn.yield %s : tensor<4xf32>
  }
  %t = nn.relu %r : tensor<4xf32>
  return %t : tensor<4xf32>
}
