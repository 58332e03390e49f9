// RUN: gpipe-opt %s -split-input-file -verify-diagnostics

// The gpipe_rt verifier: kernel calls against Kernels.def, status checks
// against their function.

func.func @unknown(%p: !llvm.ptr) -> i32 {
  // expected-error @+1 {{'gpipe_rt.kernel' op calls 'no_such_kernel', which is no kernel of Kernels.def}}
  %s = gpipe_rt.kernel "no_such_kernel"(%p) : (!llvm.ptr) -> i32
  return %s : i32
}

// -----

func.func @arity(%p: !llvm.ptr) -> i32 {
  // expected-error @+1 {{'gpipe_rt.kernel' op calls 'fill_f32' with 1 arguments; its signature has 3}}
  %s = gpipe_rt.kernel "fill_f32"(%p) : (!llvm.ptr) -> i32
  return %s : i32
}

// -----

func.func @type(%p: !llvm.ptr, %n: i32, %x: f32) -> i32 {
  // expected-error @+1 {{'gpipe_rt.kernel' op argument 1 ('count') of 'fill_f32' is 'i32'; the kernel takes 'i64'}}
  %s = gpipe_rt.kernel "fill_f32"(%p, %n, %x) : (!llvm.ptr, i32, f32) -> i32
  return %s : i32
}

// -----

func.func @no_status(%s: i32) {
  // expected-error @+1 {{'gpipe_rt.check' op returns the status from its function, which must return one i32}}
  gpipe_rt.check %s
  return
}
