// RUN: gpipe-opt %s --nn-differentiate=save-activations=true | FileCheck %s

// save-activations (remat none): nothing is recomputed. The forward returns,
// after its result, the values the VJPs read (nn.saved_count of them), and
// the backward takes them between the inputs and the seeds. Values inside
// nested nn.layer ops leave each layer as extra results.

// CHECK-LABEL: func.func @flat
// CHECK-SAME:    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>)
// CHECK-SAME:    nn.saved_count = 2 : i64
// CHECK:         %[[R:.*]] = nn.relu
// CHECK:         %[[T:.*]] = nn.tanh %[[R]]
// CHECK:         return %[[T]], %[[R]], %[[T]]
// CHECK-LABEL: func.func @flat_bwd
// CHECK-SAME:    (%[[X:.*]]: tensor<4x3xf32>, %[[SR:.*]]: tensor<4x2xf32>, %[[ST:.*]]: tensor<4x2xf32>, %[[DT:.*]]: tensor<4x2xf32>)
// CHECK-SAME:    nn.saved_count = 2 : i64
// CHECK-NOT:     nn.relu
// CHECK-NOT:     nn.tanh
// CHECK:         nn.mul %[[ST]], %[[ST]]
// CHECK:         nn.mul %[[DT]]
// CHECK:         nn.equal %[[SR]]
// CHECK:         nn.gemm %[[X]]
// CHECK-NOT:     nn.linear %[[X]]
// CHECK:         return

// CHECK-LABEL: func.func @nested
// CHECK-SAME:    nn.saved_count = 2 : i64
// CHECK:         %[[OUTER:.*]]:3 = nn.layer "outer"
// CHECK:           %[[INNER:.*]]:2 = nn.layer "inner"
// CHECK:             %[[R2:.*]] = nn.relu
// CHECK:             nn.yield %[[R2]], %[[R2]]
// CHECK:           %[[T2:.*]] = nn.tanh %[[INNER]]#0
// CHECK:           nn.yield %[[T2]], %[[T2]], %[[INNER]]#1
// CHECK:         return %[[OUTER]]#0, %[[OUTER]]#2, %[[OUTER]]#1
// CHECK-LABEL: func.func @nested_bwd
// CHECK-SAME:    (%{{.*}}: tensor<4x3xf32>, %[[NR:.*]]: tensor<4x2xf32>, %[[NT:.*]]: tensor<4x2xf32>, %{{.*}}: tensor<4x2xf32>)
// CHECK-NOT:     nn.layer
// CHECK:         nn.mul %[[NT]], %[[NT]]
// CHECK:         nn.equal %[[NR]]

nn.parameter @w : tensor<3x2xf32> init normal(2.0e-02)

func.func @flat(%x: tensor<4x3xf32>) -> tensor<4x2xf32> attributes {nn.differentiate} {
  %w = nn.param @w : tensor<3x2xf32>
  %y = nn.linear %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %r = nn.relu %y : tensor<4x2xf32>
  %t = nn.tanh %r : tensor<4x2xf32>
  return %t : tensor<4x2xf32>
}

func.func @nested(%x: tensor<4x3xf32>) -> tensor<4x2xf32> attributes {nn.differentiate} {
  %0 = nn.layer "outer"(%x) : (tensor<4x3xf32>) -> tensor<4x2xf32> {
  ^bb0(%a: tensor<4x3xf32>):
    %1 = nn.layer "inner"(%a) : (tensor<4x3xf32>) -> tensor<4x2xf32> {
    ^bb0(%b: tensor<4x3xf32>):
      %w = nn.param @w : tensor<3x2xf32>
      %y = nn.linear %b, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
      %r = nn.relu %y : tensor<4x2xf32>
      nn.yield %r : tensor<4x2xf32>
    }
    %t = nn.tanh %1 : tensor<4x2xf32>
    nn.yield %t : tensor<4x2xf32>
  }
  return %0 : tensor<4x2xf32>
}
