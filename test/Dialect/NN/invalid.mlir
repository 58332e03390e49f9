// RUN: gpipe-opt %s -split-input-file -verify-diagnostics

// Every verifier rule of the nn ops, with its exact message, and the ODS type
// constraints. No input here may crash gpipe-opt.

// Type constraints from ODS.

func.func @not_of_f32(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %r = nn.not %a : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @relu_of_integers(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'nn.relu' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<4xi64>'}}
  %r = nn.relu %a : tensor<4xi64>
  return %r : tensor<4xi64>
}

// -----

func.func @dynamic_shape_operand(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'nn.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x4xf32>'}}
  %r = nn.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @unranked_operand(%a: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{custom op 'nn.relu' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %r = nn.relu %a : tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

func.func @equal_result_not_bool(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.equal' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %r = nn.equal %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @where_condition_not_bool(%m: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %r = nn.where %m, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @gather_float_indices(%t: tensor<32x64xf32>, %i: tensor<4xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'nn.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %r = nn.gather %t, %i {axis = 0} : (tensor<32x64xf32>, tensor<4xf32>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}

// -----

func.func @softmax_negative_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax' op attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %r = nn.softmax %x {axis = -1} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @cross_entropy_loss_not_scalar(%l: tensor<2x32xf32>, %y: tensor<2xi64>) -> tensor<1xf32> {
  // expected-error @+1 {{'nn.cross_entropy' op result #0 must be 0D tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<1xf32>'}}
  %c = nn.cross_entropy %l, %y : (tensor<2x32xf32>, tensor<2xi64>) -> tensor<1xf32>
  return %c : tensor<1xf32>
}

// -----

func.func @linear_two_biases(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op operand group starting at #2 requires 0 or 1 element, but found 2}}
  %r = "nn.linear"(%x, %w, %b, %b) : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @constant_type_mismatch() -> tensor<3xf32> {
  // expected-error @+1 {{'nn.constant' op failed to verify that all of {value, result} have same type}}
  %c = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return %c : tensor<3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'nn.parameter' op parameter 'both' needs exactly one of an initial value and an init rule}}
nn.parameter @both : tensor<2xf32> = dense<1.0> : tensor<2xf32> init zeros

// -----

// expected-error @+1 {{'nn.parameter' op parameter 'neither' needs exactly one of an initial value and an init rule}}
nn.parameter @neither : tensor<2xf32>

// -----

nn.parameter @first : tensor<2xf32> init zeros
// expected-error @+1 {{'nn.parameter' op parameter 'copy' is tied to @first and starts as it does: it takes no initial value or init rule}}
nn.parameter @copy : tensor<2xf32> tied_to @first init zeros

// -----

// expected-error @+1 {{'nn.parameter' op parameter 'copy' is tied to @nowhere, which is not an nn.parameter}}
nn.parameter @copy : tensor<2xf32> tied_to @nowhere

// -----

nn.parameter @first : tensor<2xf32> init zeros
nn.parameter @copy : tensor<2xf32> tied_to @first
// expected-error @+1 {{'nn.parameter' op parameter 'copy2' is tied to @copy, itself a copy; tie copies to the first parameter}}
nn.parameter @copy2 : tensor<2xf32> tied_to @copy

// -----

nn.parameter @first : tensor<2xf32> init zeros
// expected-error @+1 {{'nn.parameter' op parameter 'copy' of type 'tensor<3xf32>' is tied to @first of type 'tensor<2xf32>'}}
nn.parameter @copy : tensor<3xf32> tied_to @first

// -----

// expected-error @+1 {{unknown init rule 'xavier' (expected zeros, ones, normal or uniform)}}
nn.parameter @unknown_rule : tensor<2xf32> init xavier

// -----

// expected-error @+1 {{'nn.parameter' op init rule 'normal' needs init_scale}}
nn.parameter @normal_without_scale : tensor<2xf32> init normal

// -----

// expected-error @+1 {{'nn.parameter' op init rule 'uniform' needs init_scale}}
nn.parameter @uniform_without_scale : tensor<2xf32> init uniform

// -----

// expected-error @+1 {{'nn.parameter' op init rule 'normal' needs a positive init_scale, got -2.000000e-02}}
nn.parameter @normal_negative_scale : tensor<2xf32> init normal(-2.0e-02)

// -----

// expected-error @+1 {{'nn.parameter' op init rule 'uniform' needs a positive init_scale, got 0.000000e+00}}
nn.parameter @uniform_zero_scale : tensor<2xf32> init uniform(0.0)

// -----

// expected-error @+1 {{'nn.parameter' op initial value of type 'tensor<3xf32>' does not match parameter type 'tensor<2xf32>'}}
nn.parameter @initial_value_shape : tensor<2xf32> = dense<1.0> : tensor<3xf32>

// -----

// expected-error @+1 {{'nn.parameter' op initial value of type 'tensor<2xf16>' does not match parameter type 'tensor<2xf32>'}}
nn.parameter @initial_value_element_type : tensor<2xf32> = dense_resource<blob> : tensor<2xf16>

// -----

// A blob shorter than its type would be read past its end.
// expected-error @+1 {{'nn.parameter' op resource 'short_blob' holds 4 bytes but 'tensor<2xf32>' needs 8}}
nn.parameter @initial_value_blob_size : tensor<2xf32> = dense_resource<short_blob> : tensor<2xf32>
{-#
  dialect_resources: {
    builtin: {
      short_blob: "0x040000000000803F"
    }
  }
#-}

// -----

func.func @constant_blob_size() -> tensor<2xi32> {
  // expected-error @+1 {{'nn.constant' op resource 'long_blob' holds 12 bytes but 'tensor<2xi32>' needs 8}}
  %c = nn.constant dense_resource<long_blob> : tensor<2xi32>
  return %c : tensor<2xi32>
}
{-#
  dialect_resources: {
    builtin: {
      long_blob: "0x04000000010000000200000003000000"
    }
  }
#-}

// -----

// expected-error @+1 {{'nn.parameter' op parameters must have a float element type, got 'i64'}}
nn.parameter @integer_parameter : tensor<2xi64> init zeros

// -----

// expected-error @+1 {{'nn.parameter' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor}}
nn.parameter @dynamic_parameter : tensor<?xf32> init zeros

// -----

// expected-error @+1 {{'nn.parameter' op attribute 'init' failed to satisfy constraint: how a parameter's initial value is drawn at run time}}
nn.parameter @init_not_a_string : tensor<2xf32> {init = 3 : i64}

// -----

func.func @parameter_inside_function() {
  // expected-error @+1 {{'nn.parameter' op expects parent op 'builtin.module'}}
  nn.parameter @p : tensor<2xf32> init zeros
  return
}

// -----

func.func @param_missing_symbol() -> tensor<4xf32> {
  // expected-error @+1 {{'nn.param' op 'nope' does not name an nn.parameter}}
  %w = nn.param @nope : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @param_names_a_function() -> tensor<4xf32> {
  // expected-error @+1 {{'nn.param' op 'param_names_a_function' does not name an nn.parameter}}
  %w = nn.param @param_names_a_function : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

nn.parameter @w : tensor<4xf32> init zeros
func.func @param_wrong_type() -> tensor<4xf16> {
  // expected-error @+1 {{'nn.param' op type 'tensor<4xf16>' does not match parameter 'w' of type 'tensor<4xf32>'}}
  %w = nn.param @w : tensor<4xf16>
  return %w : tensor<4xf16>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

func.func @broadcast_mismatch(%a: tensor<4x3xf32>, %b: tensor<4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'nn.add' op operand shapes [4, 3] and [4] are not broadcast-compatible}}
  %r = nn.add %a, %b : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

func.func @binary_wrong_result_shape(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'nn.sub' op expected result shape [4, 3] but the result type has shape [4, 4]}}
  %r = nn.sub %a, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @binary_element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.mul' op expected operands of one element type, got 'f32' and 'f16'}}
  %r = nn.mul %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @binary_result_element_type(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'nn.div' op expected operands and result of one element type, got 'f32' and 'f16'}}
  %r = nn.div %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return %r : tensor<4xf16>
}

// -----

func.func @pow_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.pow' op operand shapes [2, 3] and [2] are not broadcast-compatible}}
  %r = nn.pow %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

func.func @equal_element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{'nn.equal' op expected operands of one element type, got 'f32' and 'i64'}}
  %r = nn.equal %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return %r : tensor<4xi1>
}

// -----

func.func @where_value_element_types(%m: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.where' op expected select values of one element type, got 'f32' and 'f16'}}
  %r = nn.where %m, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @where_broadcast_mismatch(%m: tensor<3xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.where' op operand shapes [3] and [4] and [4] are not broadcast-compatible}}
  %r = nn.where %m, %a, %b : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @cast_changes_shape(%a: tensor<4xf32>) -> tensor<5xi64> {
  // expected-error @+1 {{'nn.cast' op cast cannot change the shape [4] to [5]}}
  %r = nn.cast %a : tensor<4xf32> -> tensor<5xi64>
  return %r : tensor<5xi64>
}

// -----

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

func.func @matmul_inner_dims(%a: tensor<8x16xf32>, %b: tensor<32x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.matmul' op matmul inner dimensions differ: [8, 16] times [32, 16] (16 vs 32)}}
  %r = nn.matmul %a, %b : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

func.func @matmul_rank_1(%a: tensor<16xf32>, %b: tensor<16x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.matmul' op expected matmul operands of rank >= 2, got [16] and [16, 4]}}
  %r = nn.matmul %a, %b : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @matmul_batch_mismatch(%a: tensor<2x8x16xf32>, %b: tensor<3x16x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'nn.matmul' op matmul batch dimensions [2] and [3] of [2, 8, 16] and [3, 16, 4] are not broadcast-compatible}}
  %r = nn.matmul %a, %b : (tensor<2x8x16xf32>, tensor<3x16x4xf32>) -> tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}

// -----

func.func @matmul_operand_element_types(%a: tensor<8x16xf32>, %b: tensor<16x4xbf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'nn.matmul' op expected operands of one element type, got 'f32' and 'bf16'}}
  %r = nn.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xbf16>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

func.func @matmul_result_element_type(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf16> {
  // expected-error @+1 {{'nn.matmul' op expected operands and result of one element type, got 'f32' and 'f16'}}
  %r = nn.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf16>
  return %r : tensor<8x4xf16>
}

// -----

func.func @matmul_result_shape(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x5xf32> {
  // expected-error @+1 {{'nn.matmul' op expected result shape [8, 4] but the result type has shape [8, 5]}}
  %r = nn.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x5xf32>
  return %r : tensor<8x5xf32>
}

// -----

func.func @gemm_inner_dims(%a: tensor<8x16xf32>, %b: tensor<32x16xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op gemm inner dimensions differ: [8, 16] times [32, 16] (16 vs 32)}}
  %r = nn.gemm %a, %b : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @gemm_inner_dims_transposed(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.gemm' op gemm inner dimensions differ: [8, 16] times [16, 32]^T (16 vs 32)}}
  %r = nn.gemm %a, %b {trans_b = true} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

func.func @gemm_rank_3(%a: tensor<2x8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op expected gemm operands of rank 2, got [2, 8, 16] and [16, 32]}}
  %r = nn.gemm %a, %b : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @gemm_addend_not_broadcastable(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<16xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op gemm addend of shape [16] does not broadcast to [8, 32]}}
  %r = nn.gemm %a, %b, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @gemm_addend_widens_result(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<2x8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op gemm addend of shape [2, 8, 32] does not broadcast to [8, 32]}}
  %r = nn.gemm %a, %b, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<2x8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @gemm_element_types(%a: tensor<8x16xf32>, %b: tensor<16x32xf16>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op expected operands of one element type, got 'f32' and 'f16'}}
  %r = nn.gemm %a, %b : (tensor<8x16xf32>, tensor<16x32xf16>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @gemm_addend_element_type(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<32xf64>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op expected operands of one element type, got 'f32' and 'f64'}}
  %r = nn.gemm %a, %b, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf64>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @gemm_result_shape(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<32x8xf32> {
  // expected-error @+1 {{'nn.gemm' op expected result shape [8, 32] but the result type has shape [32, 8]}}
  %r = nn.gemm %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<32x8xf32>
  return %r : tensor<32x8xf32>
}

// -----

func.func @linear_feature_mismatch(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.linear' op linear input features 16 do not match the 32 input features of weight [32, 16]}}
  %r = nn.linear %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

func.func @linear_feature_mismatch_transposed(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.linear' op linear input features 16 do not match the 32 input features of transposed weight [16, 32]}}
  %r = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

func.func @linear_bias_wrong_size(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected linear bias of shape [32], got [16]}}
  %r = nn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @linear_bias_2d(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected linear bias of shape [32], got [8, 32]}}
  %r = nn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @linear_weight_3d(%x: tensor<8x16xf32>, %w: tensor<2x16x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected linear input of rank >= 1 and a 2-D weight, got [8, 16] and [2, 16, 32]}}
  %r = nn.linear %x, %w : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<16x32xf32>) -> tensor<f32> {
  // expected-error @+1 {{'nn.linear' op expected linear input of rank >= 1 and a 2-D weight, got [] and [16, 32]}}
  %r = nn.linear %x, %w : (tensor<f32>, tensor<16x32xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @linear_element_types(%x: tensor<8x16xf16>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected input and weight of one element type, got 'f16' and 'f32'}}
  %r = nn.linear %x, %w : (tensor<8x16xf16>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @linear_bias_element_type(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf16>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected input and bias of one element type, got 'f32' and 'f16'}}
  %r = nn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf16>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

func.func @linear_result_shape(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.linear' op expected result shape [8, 32] but the result type has shape [8, 16]}}
  %r = nn.linear %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

func.func @softmax_axis_out_of_range(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax' op axis 2 is out of range for shape [4, 8]}}
  %r = nn.softmax %x {axis = 2} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @softmax_result_type(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{'nn.softmax' op expected result type 'tensor<4x8xf32>', got 'tensor<4x8xf16>'}}
  %r = nn.softmax %x {axis = 1} : tensor<4x8xf32> -> tensor<4x8xf16>
  return %r : tensor<4x8xf16>
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x16x32xf32>, %g: tensor<16xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op expected layer_norm scale of shape [32], got [16]}}
  %r = nn.layer_norm %x, %g {axis = 2} : (tensor<2x16x32xf32>, tensor<16xf32>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

func.func @layer_norm_scale_rank(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op expected layer_norm scale of shape [16, 32], got [32]}}
  %r = nn.layer_norm %x, %g {axis = 1} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<16xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op expected layer_norm bias of shape [32], got [16]}}
  %r = nn.layer_norm %x, %g, %b {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<16xf32>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

func.func @layer_norm_axis_out_of_range(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op axis 3 is out of range for shape [2, 16, 32]}}
  %r = nn.layer_norm %x, %g {axis = 3} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

func.func @layer_norm_scale_element_type(%x: tensor<2x16x32xf32>, %g: tensor<32xf16>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm' op expected input and scale of one element type, got 'f32' and 'f16'}}
  %r = nn.layer_norm %x, %g {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf16>) -> tensor<2x16x32xf32>
  return %r : tensor<2x16x32xf32>
}

// -----

func.func @layer_norm_result_type(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) -> tensor<2x16x32xf16> {
  // expected-error @+1 {{'nn.layer_norm' op expected result type 'tensor<2x16x32xf32>', got 'tensor<2x16x32xf16>'}}
  %r = nn.layer_norm %x, %g {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf16>
  return %r : tensor<2x16x32xf16>
}

// -----

//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

func.func @gather_axis_out_of_range(%t: tensor<32x64xf32>, %i: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.gather' op axis 2 is out of range for shape [32, 64]}}
  %r = nn.gather %t, %i {axis = 2} : (tensor<32x64xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @gather_result_shape(%t: tensor<32x64xf32>, %i: tensor<4xi64>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'nn.gather' op expected result shape [4, 64] but the result type has shape [4, 32]}}
  %r = nn.gather %t, %i {axis = 0} : (tensor<32x64xf32>, tensor<4xi64>) -> tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}

// -----

func.func @gather_result_element_type(%t: tensor<32x64xf32>, %i: tensor<4xi64>) -> tensor<4x64xf16> {
  // expected-error @+1 {{'nn.gather' op expected data and result of one element type, got 'f32' and 'f16'}}
  %r = nn.gather %t, %i {axis = 0} : (tensor<32x64xf32>, tensor<4xi64>) -> tensor<4x64xf16>
  return %r : tensor<4x64xf16>
}

// -----

func.func @reshape_element_count(%x: tensor<2x16xf32>) -> tensor<2x15xf32> {
  // expected-error @+1 {{'nn.reshape' op cannot reshape [2, 16] (32 elements) to [2, 15] (30 elements)}}
  %r = nn.reshape %x : tensor<2x16xf32> -> tensor<2x15xf32>
  return %r : tensor<2x15xf32>
}

// -----

func.func @reshape_element_type(%x: tensor<2x16xf32>) -> tensor<32xf16> {
  // expected-error @+1 {{'nn.reshape' op expected input and result of one element type, got 'f32' and 'f16'}}
  %r = nn.reshape %x : tensor<2x16xf32> -> tensor<32xf16>
  return %r : tensor<32xf16>
}

// -----

func.func @transpose_not_a_permutation(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'nn.transpose' op transpose permutation [0, 0, 2] is not a permutation of 0..2}}
  %r = nn.transpose %x {perm = array<i64: 0, 0, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

func.func @transpose_index_out_of_range(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'nn.transpose' op transpose permutation [2, 0] is not a permutation of 0..1}}
  %r = nn.transpose %x {perm = array<i64: 2, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// -----

func.func @transpose_permutation_length(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  // expected-error @+1 {{'nn.transpose' op transpose permutation of length 2 does not match rank 3}}
  %r = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return %r : tensor<3x2x4xf32>
}

// -----

func.func @transpose_result_shape(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'nn.transpose' op expected result shape [3, 2, 4] but the result type has shape [2, 3, 4]}}
  %r = nn.transpose %x {perm = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

func.func @split_sizes_do_not_sum(%x: tensor<2x96xf32>) -> (tensor<2x32xf32>, tensor<2x32xf32>) {
  // expected-error @+1 {{'nn.split' op split sizes [32, 32] do not sum to 96, dim 1 of [2, 96]}}
  %a, %b = nn.split %x {axis = 1, sizes = array<i64: 32, 32>} : tensor<2x96xf32> -> tensor<2x32xf32>, tensor<2x32xf32>
  return %a, %b : tensor<2x32xf32>, tensor<2x32xf32>
}

// -----

// Sizes whose sum overflows int64 must not wrap around to the dim.
func.func @split_sizes_overflow(%x: tensor<2x96xf32>) -> (tensor<2x9223372036854775807xf32>, tensor<2x9223372036854775807xf32>, tensor<2x98xf32>) {
  // expected-error @+1 {{'nn.split' op split sizes [9223372036854775807, 9223372036854775807, 98] do not sum to 96, dim 1 of [2, 96]}}
  %a, %b, %c = nn.split %x {axis = 1, sizes = array<i64: 9223372036854775807, 9223372036854775807, 98>} : tensor<2x96xf32> -> tensor<2x9223372036854775807xf32>, tensor<2x9223372036854775807xf32>, tensor<2x98xf32>
  return %a, %b, %c : tensor<2x9223372036854775807xf32>, tensor<2x9223372036854775807xf32>, tensor<2x98xf32>
}

// -----

func.func @split_axis_out_of_range(%x: tensor<2x96xf32>) -> (tensor<2x48xf32>, tensor<2x48xf32>) {
  // expected-error @+1 {{'nn.split' op axis 2 is out of range for shape [2, 96]}}
  %a, %b = nn.split %x {axis = 2, sizes = array<i64: 48, 48>} : tensor<2x96xf32> -> tensor<2x48xf32>, tensor<2x48xf32>
  return %a, %b : tensor<2x48xf32>, tensor<2x48xf32>
}

// -----

func.func @split_non_positive_size(%x: tensor<2x96xf32>) -> (tensor<2x100xf32>, tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.split' op split sizes must be positive, got -4}}
  %a, %b = nn.split %x {axis = 1, sizes = array<i64: 100, -4>} : tensor<2x96xf32> -> tensor<2x100xf32>, tensor<2x4xf32>
  return %a, %b : tensor<2x100xf32>, tensor<2x4xf32>
}

// -----

func.func @split_result_count(%x: tensor<2x96xf32>) -> tensor<2x48xf32> {
  // expected-error @+1 {{'nn.split' op expected 2 results for 2 split sizes, got 1}}
  %a = nn.split %x {axis = 1, sizes = array<i64: 48, 48>} : tensor<2x96xf32> -> tensor<2x48xf32>
  return %a : tensor<2x48xf32>
}

// -----

func.func @split_result_shape(%x: tensor<2x96xf32>) -> (tensor<2x48xf32>, tensor<2x48xf32>) {
  // expected-error @+1 {{'nn.split' op expected result shape [2, 32] but the result type has shape [2, 48]}}
  %a, %b = nn.split %x {axis = 1, sizes = array<i64: 32, 64>} : tensor<2x96xf32> -> tensor<2x48xf32>, tensor<2x48xf32>
  return %a, %b : tensor<2x48xf32>, tensor<2x48xf32>
}

// -----

func.func @slice_out_of_bounds(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.slice' op slice of dim 1 (offset 9, size 8, stride 1) is out of bounds for [4, 16]}}
  %s = nn.slice %x {offsets = array<i64: 0, 9>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @slice_strided_out_of_bounds(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.slice' op slice of dim 1 (offset 2, size 8, stride 2) is out of bounds for [4, 16]}}
  %s = nn.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 2>} : tensor<4x16xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// offset + (size - 1) * stride overflows int64; it must not wrap into bounds.
func.func @slice_stride_overflow(%x: tensor<4x16xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'nn.slice' op slice of dim 1 (offset 1, size 2, stride 9223372036854775807) is out of bounds for [4, 16]}}
  %s = nn.slice %x {offsets = array<i64: 0, 1>, sizes = array<i64: 4, 2>, strides = array<i64: 1, 9223372036854775807>} : tensor<4x16xf32> -> tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}

// -----

func.func @slice_zero_stride(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.slice' op slice of dim 1 (offset 0, size 8, stride 0) is out of bounds for [4, 16]}}
  %s = nn.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @slice_missing_offsets(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.slice' op slice needs one offset, size and stride per dim of [4, 16], got 1, 2 and 2}}
  %s = nn.slice %x {offsets = array<i64: 0>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @concat_axis_out_of_range(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.concat' op axis 2 is out of range for shape [2, 3]}}
  %c = nn.concat %a, %b {axis = 2} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}

// -----

func.func @concat_shape_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.concat' op concat inputs [2, 3] and [3, 5] differ outside axis 1}}
  %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}

// -----

func.func @concat_no_inputs() -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.concat' op concat needs at least one input}}
  %c = nn.concat {axis = 1} : () -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}

// -----

func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x5xf16>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.concat' op expected inputs and result of one element type, got 'f16' and 'f32'}}
  %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf16>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}

// -----

func.func @concat_result_shape(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x9xf32> {
  // expected-error @+1 {{'nn.concat' op expected result shape [2, 8] but the result type has shape [2, 9]}}
  %c = nn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x9xf32>
  return %c : tensor<2x9xf32>
}

// -----

func.func @unsqueeze_unsorted_axes(%m: tensor<16x16xi1>) -> tensor<1x1x16x16xi1> {
  // expected-error @+1 {{'nn.unsqueeze' op unsqueeze axes [1, 0] must be sorted, distinct and below 4}}
  %u = nn.unsqueeze %m {axes = array<i64: 1, 0>} : tensor<16x16xi1> -> tensor<1x1x16x16xi1>
  return %u : tensor<1x1x16x16xi1>
}

// -----

func.func @unsqueeze_repeated_axis(%m: tensor<16xi1>) -> tensor<1x1x16xi1> {
  // expected-error @+1 {{'nn.unsqueeze' op unsqueeze axes [0, 0] must be sorted, distinct and below 3}}
  %u = nn.unsqueeze %m {axes = array<i64: 0, 0>} : tensor<16xi1> -> tensor<1x1x16xi1>
  return %u : tensor<1x1x16xi1>
}

// -----

func.func @unsqueeze_axis_too_large(%x: tensor<4xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'nn.unsqueeze' op unsqueeze axes [2] must be sorted, distinct and below 2}}
  %u = nn.unsqueeze %x {axes = array<i64: 2>} : tensor<4xf32> -> tensor<4x1xf32>
  return %u : tensor<4x1xf32>
}

// -----

func.func @unsqueeze_result_shape(%m: tensor<16x16xi1>) -> tensor<16x1x16xi1> {
  // expected-error @+1 {{'nn.unsqueeze' op expected result shape [1, 16, 16] but the result type has shape [16, 1, 16]}}
  %u = nn.unsqueeze %m {axes = array<i64: 0>} : tensor<16x16xi1> -> tensor<16x1x16xi1>
  return %u : tensor<16x1x16xi1>
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

func.func @cross_entropy_labels_shape(%l: tensor<2x16x32xf32>, %y: tensor<2x32xi64>) -> tensor<f32> {
  // expected-error @+1 {{'nn.cross_entropy' op expected labels of shape [2, 16] for logits [2, 16, 32], got [2, 32]}}
  %c = nn.cross_entropy %l, %y : (tensor<2x16x32xf32>, tensor<2x32xi64>) -> tensor<f32>
  return %c : tensor<f32>
}

// -----

// Scalar logits have no class dim (this crashed the verifier once).
func.func @cross_entropy_scalar_logits(%l: tensor<f32>, %y: tensor<i64>) -> tensor<f32> {
  // expected-error @+1 {{'nn.cross_entropy' op expected logits of rank >= 1, got []}}
  %c = nn.cross_entropy %l, %y : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return %c : tensor<f32>
}

// -----

func.func @cross_entropy_loss_element_type(%l: tensor<2x32xf32>, %y: tensor<2xi64>) -> tensor<f16> {
  // expected-error @+1 {{'nn.cross_entropy' op expected logits and loss of one element type, got 'f32' and 'f16'}}
  %c = nn.cross_entropy %l, %y : (tensor<2x32xf32>, tensor<2xi64>) -> tensor<f16>
  return %c : tensor<f16>
}

// -----

func.func @mse_type_mismatch(%p: tensor<8x10xf32>, %t: tensor<8x9xf32>) -> tensor<f32> {
  // expected-error @+1 {{'nn.mse' op expected input and target of one type, got 'tensor<8x10xf32>' and 'tensor<8x9xf32>'}}
  %c = nn.mse %p, %t : (tensor<8x10xf32>, tensor<8x9xf32>) -> tensor<f32>
  return %c : tensor<f32>
}

// -----

func.func @mse_loss_element_type(%p: tensor<8x10xf32>, %t: tensor<8x10xf32>) -> tensor<f64> {
  // expected-error @+1 {{'nn.mse' op expected input and loss of one element type, got 'f32' and 'f64'}}
  %c = nn.mse %p, %t : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f64>
  return %c : tensor<f64>
}

// -----

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

func.func @layer_argument_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' has 1 inputs but its body takes 0 arguments}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
    %c = nn.constant dense<1.0> : tensor<4xf32>
    nn.yield %c : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}

// -----

func.func @layer_argument_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' body argument type 'tensor<4xf16>' does not match input type 'tensor<4xf32>'}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf16>):
    %c = nn.constant dense<1.0> : tensor<4xf32>
    nn.yield %c : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}

// -----

func.func @layer_yield_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' yields ('tensor<4xf16>') but its results are ('tensor<4xf32>')}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = nn.constant dense<1.0> : tensor<4xf16>
    nn.yield %c : tensor<4xf16>
  }
  return %h : tensor<4xf32>
}

// -----

func.func @layer_yield_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' yields ('tensor<4xf32>', 'tensor<4xf32>') but its results are ('tensor<4xf32>')}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    nn.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  return %h : tensor<4xf32>
}

// -----

func.func @layer_without_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' body must end in nn.yield}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %r = nn.relu %a : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}

// -----

func.func @layer_empty_body(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op expects a non-empty block}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
  }
  return %h : tensor<4xf32>
}

// -----

func.func @layer_uses_value_from_above(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %h = nn.layer "a" () : () -> tensor<4xf32> {
    // expected-error @+1 {{'nn.yield' op using value defined outside the region}}
    nn.yield %x : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}

// -----

func.func @yield_outside_layer(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.yield' op expects parent op to be one of 'nn.layer, nn.fused'}}
  nn.yield %x : tensor<4xf32>
}

// -----

func.func @fused_unfusible_op(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = nn.fused (%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{'nn.softmax' op cannot be in an nn.fused body (an f32 elementwise op with its math in ScalarMath.h can)}}
    %s = nn.softmax %a {axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
    nn.yield %s : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

func.func @fused_pow_has_no_loop_math(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = nn.fused (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{'nn.pow' op cannot be in an nn.fused body}}
    %p = nn.pow %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    nn.yield %p : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @fused_results_differ(%x: tensor<4x4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.fused' op results have different shapes: 'tensor<4x4xf32>' and 'tensor<4xf32>'}}
  %r:2 = nn.fused (%x, %y) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4xf32>):
    %e = nn.exp %a : tensor<4x4xf32>
    %f = nn.exp %b : tensor<4xf32>
    nn.yield %e, %f : tensor<4x4xf32>, tensor<4xf32>
  }
  return %r#1 : tensor<4xf32>
}

// -----

func.func @fused_input_does_not_broadcast(%x: tensor<4x4xf32>, %y: tensor<3xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'nn.fused' op input of type 'tensor<3xf32>' does not broadcast to the results' shape}}
  %r = nn.fused (%x, %y) : (tensor<4x4xf32>, tensor<3xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<3xf32>):
    %e = nn.exp %a : tensor<4x4xf32>
    nn.yield %e : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

func.func @fused_argument_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.fused' op body argument type 'tensor<8xf32>' does not match input type 'tensor<4xf32>'}}
  %r = nn.fused (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<8xf32>):
    %e = nn.exp %a : tensor<8xf32>
    nn.yield %e : tensor<8xf32>
  }
  return %r : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Reductions and slice insertion
//===----------------------------------------------------------------------===//

func.func @reduce_sum_unsorted_axes(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op reduce axes [2, 0] must be sorted, distinct and below the rank 3 of [2, 3, 4]}}
  %r = nn.reduce_sum %x {axes = array<i64: 2, 0>} : tensor<2x3x4xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

func.func @reduce_sum_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op reduce axes [2] must be sorted, distinct and below the rank 2 of [2, 3]}}
  %r = nn.reduce_sum %x {axes = array<i64: 2>} : tensor<2x3xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @reduce_sum_negative_axis(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op reduce axes [-1] must be sorted, distinct and below the rank 2 of [2, 3]}}
  %r = nn.reduce_sum %x {axes = array<i64: -1>} : tensor<2x3xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @reduce_sum_result_shape(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op expected result shape [1, 3] but the result type has shape [3]}}
  %r = nn.reduce_sum %x {axes = array<i64: 0>, keep_dims = true} : tensor<2x3xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}

// -----

func.func @reduce_sum_of_integers(%x: tensor<2x3xi64>) -> tensor<3xi64> {
  // expected-error @+1 {{'nn.reduce_sum' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2x3xi64>'}}
  %r = nn.reduce_sum %x {axes = array<i64: 0>} : tensor<2x3xi64> -> tensor<3xi64>
  return %r : tensor<3xi64>
}

// -----

func.func @insert_slice_out_of_bounds(%s: tensor<4x8xf32>, %d: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'nn.insert_slice' op slice of dim 1 (offset 9, size 8, stride 1) is out of bounds for [4, 16]}}
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 9>, strides = array<i64: 1, 1>} : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

func.func @insert_slice_rank_mismatch(%s: tensor<8xf32>, %d: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'nn.insert_slice' op cannot insert a slice of rank 1 into a tensor of rank 2}}
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

func.func @insert_slice_missing_strides(%s: tensor<4x8xf32>, %d: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'nn.insert_slice' op slice needs one offset, size and stride per dim of [4, 16], got 2, 2 and 1}}
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 0>, strides = array<i64: 1>} : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

func.func @insert_slice_element_types(%s: tensor<4x8xf16>, %d: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'nn.insert_slice' op expected source and destination of one element type, got 'f16' and 'f32'}}
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<4x8xf16> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

func.func @insert_slice_result_type(%s: tensor<4x8xf32>, %d: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.insert_slice' op failed to verify that all of {dest, result} have same type}}
  %r = "nn.insert_slice"(%s, %d) <{offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Gradient kernels
//===----------------------------------------------------------------------===//

func.func @gather_grad_shape(%ids: tensor<2x16xi64>, %dy: tensor<2x16x32xf32>) -> tensor<32x64xf32> {
  // expected-error @+1 {{'nn.gather_grad' op expected gradient shape [2, 16, 64] (the gather of [32, 64] by indices [2, 16] along axis 0), got [2, 16, 32]}}
  %t = nn.gather_grad %ids, %dy {axis = 0} : (tensor<2x16xi64>, tensor<2x16x32xf32>) -> tensor<32x64xf32>
  return %t : tensor<32x64xf32>
}

// -----

func.func @gather_grad_axis(%ids: tensor<3xi64>, %dy: tensor<3xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'nn.gather_grad' op axis 1 is out of range for shape [8]}}
  %t = nn.gather_grad %ids, %dy {axis = 1} : (tensor<3xi64>, tensor<3xf32>) -> tensor<8xf32>
  return %t : tensor<8xf32>
}

// -----

func.func @gather_grad_element_types(%ids: tensor<3xi64>, %dy: tensor<3x4xf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'nn.gather_grad' op expected gradient and result of one element type, got 'f16' and 'f32'}}
  %t = nn.gather_grad %ids, %dy {axis = 0} : (tensor<3xi64>, tensor<3x4xf16>) -> tensor<8x4xf32>
  return %t : tensor<8x4xf32>
}

// -----

func.func @softmax_grad_axis(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax_grad' op axis 2 is out of range for shape [4, 8]}}
  %dx = nn.softmax_grad %y, %dy {axis = 2} : tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}

// -----

func.func @softmax_grad_types(%y: tensor<4x8xf32>, %dy: tensor<4x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax_grad' op failed to verify that all of {output, grad, result} have same type}}
  %dx = "nn.softmax_grad"(%y, %dy) <{axis = 1 : i64}> : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}

// -----

func.func @layer_norm_grad_scale_shape(%x: tensor<2x16x32xf32>, %g: tensor<16xf32>, %dy: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm_grad' op expected layer_norm scale of shape [32], got [16]}}
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2} : (tensor<2x16x32xf32>, tensor<16xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<16xf32>, tensor<16xf32>)
  return %dx : tensor<2x16x32xf32>
}

// -----

func.func @layer_norm_grad_grad_type(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<2x16x16xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm_grad' op expected gradient of the input type 'tensor<2x16x32xf32>', got 'tensor<2x16x16xf32>'}}
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x16xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
  return %dx : tensor<2x16x32xf32>
}

// -----

func.func @layer_norm_grad_input_grad_type(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<2x16x32xf32>) -> tensor<2x16x32xf16> {
  // expected-error @+1 {{'nn.layer_norm_grad' op expected input gradient of type 'tensor<2x16x32xf32>', got 'tensor<2x16x32xf16>'}}
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf16>, tensor<32xf32>, tensor<32xf32>)
  return %dx : tensor<2x16x32xf16>
}

// -----

func.func @layer_norm_grad_param_grad_types(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'nn.layer_norm_grad' op expected scale and bias gradients of type 'tensor<32xf32>', got 'tensor<32xf32>' and 'tensor<16x32xf32>'}}
  %dx, %dg, %db = nn.layer_norm_grad %x, %g, %dy {axis = 2} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<16x32xf32>)
  return %dx : tensor<2x16x32xf32>
}

// -----

func.func @gelu_grad_types(%x: tensor<4x8xf32>, %dy: tensor<4x8xf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.gelu_grad' op requires the same type for all operands and results}}
  %dx = "nn.gelu_grad"(%x, %dy) : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}

// -----

func.func @cross_entropy_grad_labels(%l: tensor<2x32xf32>, %y: tensor<32xi64>, %d: tensor<f32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'nn.cross_entropy_grad' op expected labels of shape [2] for logits [2, 32], got [32]}}
  %g = nn.cross_entropy_grad %l, %y, %d : (tensor<2x32xf32>, tensor<32xi64>, tensor<f32>) -> tensor<2x32xf32>
  return %g : tensor<2x32xf32>
}

// -----

func.func @cross_entropy_grad_result_type(%l: tensor<2x32xf32>, %y: tensor<2xi64>, %d: tensor<f32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'nn.cross_entropy_grad' op expected result type 'tensor<2x32xf32>', got 'tensor<2x16xf32>'}}
  %g = nn.cross_entropy_grad %l, %y, %d : (tensor<2x32xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x16xf32>
  return %g : tensor<2x16xf32>
}

// -----

func.func @cross_entropy_grad_loss_gradient_type(%l: tensor<2x32xf32>, %y: tensor<2xi64>, %d: tensor<f64>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'nn.cross_entropy_grad' op expected logits and loss gradient of one element type, got 'f32' and 'f64'}}
  %g = nn.cross_entropy_grad %l, %y, %d : (tensor<2x32xf32>, tensor<2xi64>, tensor<f64>) -> tensor<2x32xf32>
  return %g : tensor<2x32xf32>
}

// -----

func.func @cross_entropy_grad_loss_gradient_not_scalar(%l: tensor<2x32xf32>, %y: tensor<2xi64>, %d: tensor<1xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'nn.cross_entropy_grad' op operand #2 must be 0D tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<1xf32>'}}
  %g = nn.cross_entropy_grad %l, %y, %d : (tensor<2x32xf32>, tensor<2xi64>, tensor<1xf32>) -> tensor<2x32xf32>
  return %g : tensor<2x32xf32>
}

// -----

// The dialect's discardable attributes are verified.

// expected-error @+1 {{'nn.saved_count' must be a non-negative integer on a 'func.func', got -1 : i64}}
func.func private @negative_saved() attributes {nn.saved_count = -1 : i64}

// -----

// expected-error @+1 {{'nn.param_grads' must be an array of parameter symbols on a 'func.func', got ["w"]}}
func.func private @string_grads() attributes {nn.param_grads = ["w"]}

// -----

// expected-error @+1 {{unknown nn attribute 'nn.sved_count'}}
func.func private @typo() attributes {nn.sved_count = 1 : i64}

// -----

// expected-error @+1 {{'nn.parameter' op init rule 'ones' takes no scale}}
nn.parameter @ones_with_scale : tensor<2xf32> init ones(0.5)

// -----

func.func @conv_channels(%x: tensor<2x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'nn.conv2d' op weight [4, 2, 3, 3] with groups 1 expects 2 input channels, got 3}}
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

func.func @conv_result(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{'nn.conv2d' op expected result shape [2, 4, 6, 6] but the result type has shape [2, 4, 8, 8]}}
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// -----

func.func @conv_stride(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  // expected-error @+1 {{'nn.conv2d' op expected strides >= 1, got [0, 1]}}
  %y = nn.conv2d %x, %w {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %y : tensor<2x4x6x6xf32>
}

// -----

func.func @pool_window(%x: tensor<2x3x2x2xf32>) -> tensor<2x3x1x1xf32> {
  // expected-error @+1 {{'nn.max_pool2d' op a window of 3 does not fit a height of 2 padded by 0 and 0}}
  %y = nn.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<2x3x2x2xf32> -> tensor<2x3x1x1xf32>
  return %y : tensor<2x3x1x1xf32>
}

// -----

func.func @pool_pads(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x5x5xf32> {
  // expected-error @+1 {{'nn.avg_pool2d' op pads [2, 2, 2, 2] must be smaller than the kernel [2, 2]}}
  %y = nn.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>} : tensor<2x3x8x8xf32> -> tensor<2x3x5x5xf32>
  return %y : tensor<2x3x5x5xf32>
}

// -----

func.func @batch_norm_channels(%x: tensor<2x3x4x4xf32>, %c: tensor<3xf32>, %m: tensor<4xf32>) -> tensor<2x3x4x4xf32> {
  // expected-error @+1 {{'nn.batch_norm' op expected per-channel operands of shape [3], got [4]}}
  %y = nn.batch_norm %x, %c, %c, %m, %c : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}

// -----

func.func @batch_norm_momentum(%x: tensor<2x3x4x4xf32>, %c: tensor<3xf32>) -> tensor<2x3x4x4xf32> {
  // expected-error @+1 {{'nn.batch_norm' op expected a momentum in [0, 1], got 1.5}}
  %y = nn.batch_norm %x, %c, %c, %c, %c {momentum = 1.5 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}
