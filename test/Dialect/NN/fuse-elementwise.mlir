// RUN: gpipe-opt %s --pass-pipeline='builtin.module(func.func(nn-fuse-elementwise))' -split-input-file | FileCheck %s
// RUN: gpipe-opt %s --pass-pipeline='builtin.module(func.func(nn-fuse-elementwise))' -split-input-file | gpipe-opt --verify-roundtrip -split-input-file > /dev/null

// nn-fuse-elementwise: which elementwise ops become one nn.fused, with
// what inputs and results.

// A chain with a broadcast bias: one loop; the value read outside (%t, by
// the softmax) is a second result.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT:    %[[F:.*]]:2 = nn.fused(%[[X]], %[[B]]) : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<4x8xf32>, %[[C:.*]]: tensor<8xf32>):
// CHECK-NEXT:      %[[S:.*]] = nn.add %[[A]], %[[C]]
// CHECK-NEXT:      %[[T:.*]] = nn.tanh %[[S]]
// CHECK-NEXT:      %[[G:.*]] = nn.gelu %[[T]]
// CHECK-NEXT:      nn.yield %[[T]], %[[G]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[SM:.*]] = nn.softmax %[[F]]#0
// CHECK-NEXT:    %[[O:.*]] = nn.mul %[[SM]], %[[F]]#1
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = nn.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %t = nn.tanh %s : tensor<4x8xf32>
  %g = nn.gelu %t : tensor<4x8xf32>
  %sm = nn.softmax %t {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  %o = nn.mul %sm, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// Two groups an op reads both of merge into one.
// CHECK-LABEL: func.func @merge
// CHECK-NEXT:    %[[F:.*]] = nn.fused(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      nn.exp
// CHECK-NEXT:      nn.neg
// CHECK-NEXT:      nn.tanh
// CHECK-NEXT:      nn.sigmoid
// CHECK-NEXT:      nn.mul
// CHECK-NEXT:      nn.yield
// CHECK:         return %[[F]]
func.func @merge(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %e = nn.exp %x : tensor<8xf32>
  %n = nn.neg %e : tensor<8xf32>
  %t = nn.tanh %y : tensor<8xf32>
  %s = nn.sigmoid %t : tensor<8xf32>
  %m = nn.mul %n, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %m : tensor<8xf32>
}

// -----

// A value read by an op between two members keeps the later member out:
// the fused op would come after its reader. The softmax reads %e before
// the sigmoid, so the exp and the neg fuse, and the sigmoid starts a group
// of its own (with the add).
// CHECK-LABEL: func.func @reader_in_between
// CHECK:         %[[E:.*]] = nn.fused
// CHECK:           nn.neg
// CHECK-NEXT:      nn.exp
// CHECK-NEXT:      nn.yield
// CHECK:         %[[SM:.*]] = nn.softmax %[[E]]
// CHECK-NEXT:    nn.fused(%[[E]], %[[SM]])
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      nn.sigmoid
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.yield
func.func @reader_in_between(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %n = nn.neg %x : tensor<4x8xf32>
  %e = nn.exp %n : tensor<4x8xf32>
  %sm = nn.softmax %e {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = nn.sigmoid %e : tensor<4x8xf32>
  %o = nn.add %sm, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// Another shape starts another group; a single op stays as it is; pow and
// ops on other element types are not fused.
// CHECK-LABEL: func.func @shapes_and_singles
// CHECK-NEXT:    nn.fused
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      nn.relu
// CHECK-NEXT:      nn.sqrt
// CHECK-NEXT:      nn.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    nn.add {{.*}} -> tensor<2x4x8xf32>
// CHECK-NEXT:    nn.pow
// CHECK-NEXT:    nn.exp
// CHECK-NEXT:    return
func.func @shapes_and_singles(%x: tensor<4x8xf32>, %y: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %r = nn.relu %x : tensor<4x8xf32>
  %q = nn.sqrt %r : tensor<4x8xf32>
  %a = nn.add %q, %y : (tensor<4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %p = nn.pow %a, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %e = nn.exp %p : tensor<2x4x8xf32>
  return %e : tensor<2x4x8xf32>
}

// -----

// The scaled, masked attention scores: a bool mask and a scalar fill are
// inputs like any other.
// CHECK-LABEL: func.func @mask
// CHECK-NEXT:    %[[F:.*]] = nn.fused(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x4x4xf32>, tensor<f32>, tensor<4x4xi1>, tensor<f32>) -> tensor<2x4x4xf32>
// CHECK:           nn.mul
// CHECK-NEXT:      nn.where
// CHECK-NEXT:      nn.yield
// CHECK:         return %[[F]]
func.func @mask(%s: tensor<2x4x4xf32>, %scale: tensor<f32>, %m: tensor<4x4xi1>, %ninf: tensor<f32>) -> tensor<2x4x4xf32> {
  %a = nn.mul %s, %scale : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %w = nn.where %m, %a, %ninf : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  return %w : tensor<2x4x4xf32>
}

// -----

// Layers are fused inside, never across: a fused loop belongs to one layer
// (the per-layer profile times it there).
// CHECK-LABEL: func.func @layers
// CHECK:         nn.layer "a"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      nn.fused
// CHECK:           nn.exp
// CHECK-NEXT:      nn.neg
// CHECK:         nn.layer "b"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      nn.tanh
// CHECK-NEXT:      nn.yield
func.func @layers(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = nn.exp %a : tensor<4xf32>
    %n = nn.neg %e : tensor<4xf32>
    nn.yield %n : tensor<4xf32>
  }
  %o = nn.layer "b" (%h) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %t = nn.tanh %a : tensor<4xf32>
    nn.yield %t : tensor<4xf32>
  }
  return %o : tensor<4xf32>
}
