//===- GemmChoice.h - Which implementation each GEMM shape runs on -*- C++
//-*-===//
//
// The compile-time half of the per-shape GEMM choice: from --gemm and the
// machine profile's GEMM rates per implementation (gpipe-calibrate), the
// implementation of every cell of the profile's shape grid, per layout.
// The library records it (the metadata's `gemm`) and the CPU kernels apply
// it (gpipe_rt_cpu_set_gemm_choice), so every run and every stage of a
// library computes a shape with the same kernel; the choice depends only on
// the shape and the profile, never on K or the threads, so the bits across
// K stay equal. The cost model times each GEMM at its implementation's
// rates.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_GEMMCHOICE_H
#define GPIPE_ANALYSIS_GEMMCHOICE_H

#include "gpipe/Runtime/GemmChoice.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::gpipe {

struct MachineModel;

/// gpipe-compile --gemm.
enum class GemmKind {
  Auto,     ///< "auto": per shape from the machine profile
  OpenBLAS, ///< "openblas": every GEMM
  Libxsmm,  ///< "libxsmm": every GEMM
};

/// Whether the runtime this compiler was built with has libxsmm.
bool isLibxsmmBuilt();

struct GemmChoice {
  /// gpipe_rt_gemm_impl for every shape (without a grid).
  int32_t impl = GPIPE_RT_GEMM_OPENBLAS;
  /// With a grid: the implementation of each cell ('0' + impl), per layout
  /// 2 transA + transB, at (i * size + j) * size + l (empty: OpenBLAS).
  std::vector<int64_t> grid;
  std::array<std::string, 4> cells;
  /// Why this choice, for the plan report.
  std::string reason;

  /// The implementation of C (m x n) = op(A) op(B), op(A) m x k: what the
  /// runtime's gpipe_rt_cpu_gemm_impl_for gives under this choice.
  int32_t implFor(bool transA, bool transB, int64_t m, int64_t n,
                  int64_t k) const;
};

/// The choice for `kind`. Auto: with a machine profile that measured both
/// implementations, a cell takes libxsmm where it measured faster both on
/// one thread and on every core (never the ranks' thread count, which
/// differs with K), OpenBLAS elsewhere; without one,
/// OpenBLAS throughout (nothing measured says otherwise), as on a build
/// without libxsmm.
/// std::nullopt and `error` for --gemm libxsmm on a build without it.
std::optional<GemmChoice>
chooseGemms(GemmKind kind, const MachineModel *machine, std::string &error);

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_GEMMCHOICE_H
