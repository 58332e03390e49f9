// RUN: gpipe-opt %s --nn-fold-constants -split-input-file -verify-diagnostics | FileCheck %s
// RUN: gpipe-opt %s --nn-fold-constants=max-elements=4 -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SMALL

// A causal mask from positions: compare, then select, in one walk.
// CHECK-LABEL: func.func @mask
// CHECK-NEXT: %[[M:.*]] = nn.constant dense<{{\[}}[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>
// CHECK-NEXT: %[[Z:.*]] = nn.constant dense<0.000000e+00> : tensor<3x3xf32>
// CHECK-NEXT: nn.where %[[M]], %arg0, %[[Z]]
// The 3 x 3 mask is over max-elements=4: it stays.
// SMALL-LABEL: func.func @mask
// SMALL: nn.compare le
func.func @mask(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %p = nn.constant dense<[0, 1, 2]> : tensor<3xi64>
  %q = nn.constant dense<[[0], [1], [2]]> : tensor<3x1xi64>
  %m = nn.compare le, %p, %q : (tensor<3xi64>, tensor<3x1xi64>) -> tensor<3x3xi1>
  %z = nn.constant dense<0.0> : tensor<3x3xf32>
  %r = nn.where %m, %x, %z : (tensor<3x3xi1>, tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  return %r : tensor<3x3xf32>
}

// -----

// Rotary tables: positions times frequencies (broadcast), then sin and cos.
// CHECK-LABEL: func.func @rotary
// CHECK-DAG: nn.constant dense<{{\[}}[0.000000e+00, 0.000000e+00], [0.841470957, 0.00999983306]]> : tensor<2x2xf32>
// CHECK-DAG: nn.constant dense<{{\[}}[1.000000e+00, 1.000000e+00], [0.540302277, 0.999949991]]> : tensor<2x2xf32>
// CHECK-NOT: nn.sin
// CHECK-NOT: nn.cos
// CHECK-NOT: nn.mul
func.func @rotary() -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %pos = nn.constant dense<[[0.0], [1.0]]> : tensor<2x1xf32>
  %freq = nn.constant dense<[1.0, 0.01]> : tensor<2xf32>
  %a = nn.mul %pos, %freq : (tensor<2x1xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %s = nn.sin %a : tensor<2x2xf32>
  %c = nn.cos %a : tensor<2x2xf32>
  return %s, %c : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Float pow, a cast to integers (truncation toward zero), ne, logic, not.
// CHECK-LABEL: func.func @arith
// CHECK-DAG: nn.constant dense<[1.000000e+00, 8.000000e+00, 0.333333343]> : tensor<3xf32>
// CHECK-DAG: nn.constant dense<[-1, 2, 0]> : tensor<3xi64>
// CHECK-DAG: nn.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK-DAG: nn.constant dense<[true, false, false]> : tensor<3xi1>
func.func @arith() -> (tensor<3xf32>, tensor<3xi64>, tensor<3xi1>, tensor<3xi1>) {
  %b = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %e = nn.constant dense<[2.0, 3.0, -1.0]> : tensor<3xf32>
  %p = nn.pow %b, %e : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %f = nn.constant dense<[-1.5, 2.9, 0.2]> : tensor<3xf32>
  %i = nn.cast %f : tensor<3xf32> -> tensor<3xi64>
  %one = nn.constant dense<[1, 2, 3]> : tensor<3xi64>
  %two = nn.constant dense<[0, 2, 4]> : tensor<3xi64>
  %ne = nn.compare ne, %one, %two : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %t = nn.constant dense<[true, true, false]> : tensor<3xi1>
  %x = nn.logical xor, %ne, %t : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %n = nn.not %x : tensor<3xi1>
  return %p, %i, %ne, %n : tensor<3xf32>, tensor<3xi64>, tensor<3xi1>, tensor<3xi1>
}

// -----

// Data movement: transpose, slice, split, concat, unsqueeze, gather.
// CHECK-LABEL: func.func @movement
// CHECK-DAG: nn.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
// CHECK-DAG: nn.constant dense<{{\[}}[2, 3], [5, 6]]> : tensor<2x2xi64>
// CHECK-DAG: nn.constant dense<{{\[}}[1], [4]]> : tensor<2x1xi64>
// CHECK-DAG: nn.constant dense<{{\[}}[2, 3, 1], [5, 6, 4]]> : tensor<2x3xi64>
// CHECK-DAG: nn.constant dense<{{\[}}{{\[}}[4, 5, 6]], {{\[}}[1, 2, 3]]]> : tensor<2x1x3xi64>
// CHECK-NOT: nn.transpose
// CHECK-NOT: nn.split
// CHECK-NOT: nn.gather
func.func @movement() -> (tensor<3x2xi64>, tensor<2x2xi64>, tensor<2x1xi64>, tensor<2x3xi64>, tensor<2x1x3xi64>) {
  %a = nn.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %t = nn.transpose %a {perm = array<i64: 1, 0>} : tensor<2x3xi64> -> tensor<3x2xi64>
  %s = nn.slice %a {offsets = array<i64: 0, 1>, sizes = array<i64: 2, 2>, strides = array<i64: 1, 1>} : tensor<2x3xi64> -> tensor<2x2xi64>
  %l, %r = nn.split %a {axis = 1, sizes = array<i64: 1, 2>} : tensor<2x3xi64> -> tensor<2x1xi64>, tensor<2x2xi64>
  %c = nn.concat %r, %l {axis = 1} : (tensor<2x2xi64>, tensor<2x1xi64>) -> tensor<2x3xi64>
  %idx = nn.constant dense<[1, 0]> : tensor<2xi64>
  %g = nn.gather %a, %idx {axis = 0} : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<2x3xi64>
  %u = nn.unsqueeze %g {axes = array<i64: 1>} : tensor<2x3xi64> -> tensor<2x1x3xi64>
  return %t, %s, %l, %c, %u : tensor<3x2xi64>, tensor<2x2xi64>, tensor<2x1xi64>, tensor<2x3xi64>, tensor<2x1x3xi64>
}

// -----

// No host evaluation (a GEMM), or an index out of range: they stay, for the
// compiled model to compute or report.
// CHECK-LABEL: func.func @stays
// CHECK: nn.matmul
// CHECK: nn.gather
func.func @stays() -> (tensor<2x2xf32>, tensor<1x3xi64>) {
  %a = nn.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %m = nn.matmul %a, %a : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %d = nn.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %idx = nn.constant dense<[5]> : tensor<1xi64>
  %g = nn.gather %d, %idx {axis = 0} : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<1x3xi64>
  return %m, %g : tensor<2x2xf32>, tensor<1x3xi64>
}

// -----

// A large folded value goes to a resource blob named after the op.
// CHECK-LABEL: func.func @blob
// CHECK: nn.constant dense_resource<table> : tensor<4x8xf32>
func.func @blob() -> tensor<4x8xf32> {
  %a = nn.constant dense<[[0.0], [1.0], [2.0], [3.0]]> : tensor<4x1xf32>
  %b = nn.constant dense<[0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]> : tensor<8xf32>
  %m = nn.mul %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("table")
  return %m : tensor<4x8xf32>
}

// -----

// An evaluation that fails is an error at the op.
func.func @div_by_zero() -> tensor<2xi64> {
  %a = nn.constant dense<[1, 2]> : tensor<2xi64>
  %z = nn.constant dense<[1, 0]> : tensor<2xi64>
  // expected-error @below {{'nn.div' op integer division by zero}}
  %d = nn.div %a, %z : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %d : tensor<2xi64>
}
