//===- GemmChoice.cpp - Which implementation each GEMM shape runs on ------===//

#include "gpipe/Analysis/GemmChoice.h"
#include "gpipe/Analysis/CostModel.h"

#include <map>
#include <set>
#include <tuple>

using namespace mlir::gpipe;

bool mlir::gpipe::isLibxsmmBuilt() {
#ifdef GPIPE_HAVE_LIBXSMM
  return true;
#else
  return false;
#endif
}

int32_t GemmChoice::implFor(bool transA, bool transB, int64_t m, int64_t n,
                            int64_t k) const {
  const char *texts[4];
  for (size_t layout = 0; layout < 4; ++layout)
    texts[layout] = cells[layout].c_str();
  return gpipe_rt_gemm_choose(impl, grid.data(), int32_t(grid.size()), texts,
                              transA, transB, m, n, k);
}

std::optional<GemmChoice> mlir::gpipe::chooseGemms(GemmKind kind,
                                                   const MachineModel *machine,
                                                   std::string &error) {
  GemmChoice choice;
  if (kind == GemmKind::OpenBLAS) {
    choice.reason = "OpenBLAS for every GEMM (--gemm openblas)";
    return choice;
  }
  if (!isLibxsmmBuilt()) {
    if (kind == GemmKind::Libxsmm) {
      error = "--gemm libxsmm: this gpipe was built without libxsmm (install "
              "libxsmm-dev and rebuild, or use --gemm openblas)";
      return std::nullopt;
    }
    choice.reason = "OpenBLAS for every GEMM (this gpipe was built without "
                    "libxsmm)";
    return choice;
  }
  if (kind == GemmKind::Libxsmm) {
    choice.impl = GPIPE_RT_GEMM_LIBXSMM;
    choice.reason = "libxsmm for every GEMM (--gemm libxsmm)";
    return choice;
  }
  // Auto: per cell of the machine profile's grid, libxsmm where it
  // measured faster both on one thread and on every core. The choice must
  // not depend on the threads a compile gives its ranks (K = 1 runs on
  // every core, K > 1 on one thread each), or the bits would differ across
  // K; so a cell changes only where neither count loses (the
  // implementations split over threads differently: OpenBLAS keeps small
  // GEMMs whole, and libxsmm's transposed copy of B costs most on one
  // thread).
  using Cell = std::tuple<bool, bool, int64_t, int64_t, int64_t>;
  // Per cell and implementation: seconds per FLOP on one thread and on
  // every core (0: not measured).
  std::map<Cell, std::array<std::array<double, 2>, GPIPE_RT_GEMM_IMPL_COUNT>>
      seconds;
  std::set<int64_t> dims;
  if (machine)
    for (const MachineModel::Gemm &g : machine->gemm)
      if ((g.threads == 1 || g.threads == machine->cores) && g.impl >= 0 &&
          g.impl < GPIPE_RT_GEMM_IMPL_COUNT && g.flopsPerSecond > 0) {
        seconds[{g.transA, g.transB, g.m, g.n, g.k}][size_t(g.impl)]
               [g.threads == 1 ? 0 : 1] = 1.0 / g.flopsPerSecond;
        dims.insert(g.m);
        dims.insert(g.n);
        dims.insert(g.k);
      }
  int counts = machine && machine->cores > 1 ? 2 : 1;
  auto libxsmmWins = [&](const auto &cell) {
    const auto &x = cell[GPIPE_RT_GEMM_LIBXSMM];
    const auto &o = cell[GPIPE_RT_GEMM_OPENBLAS];
    for (int c = 0; c < counts; ++c)
      if (!(x[size_t(c)] > 0 && o[size_t(c)] > 0 &&
            x[size_t(c)] < o[size_t(c)]))
        return false;
    return true;
  };
  bool measuredBoth = false;
  for (const auto &entry : seconds)
    measuredBoth |= entry.second[GPIPE_RT_GEMM_LIBXSMM][0] > 0 &&
                    entry.second[GPIPE_RT_GEMM_OPENBLAS][0] > 0;
  if (!measuredBoth) {
    // Nothing measured says libxsmm is faster here: the long-standing
    // default, whose rounding the golden tests' references were checked
    // against.
    choice.reason =
        std::string("OpenBLAS for every GEMM (") +
        (machine ? "the machine profile has no libxsmm rates: measure again "
                   "with gpipe-calibrate to choose per shape"
                 : "no machine profile: gpipe-calibrate measures one to "
                   "choose per shape") +
        ")";
    return choice;
  }
  choice.grid.assign(dims.begin(), dims.end());
  const size_t size = choice.grid.size();
  int64_t libxsmmCells = 0, allCells = 0;
  for (int layout = 0; layout < 4; ++layout) {
    bool ta = layout & 2, tb = layout & 1;
    std::string cells(size * size * size, '0');
    bool any = false;
    for (size_t i = 0; i < size; ++i)
      for (size_t j = 0; j < size; ++j)
        for (size_t l = 0; l < size; ++l) {
          auto it = seconds.find(
              {ta, tb, choice.grid[i], choice.grid[j], choice.grid[l]});
          if (it == seconds.end())
            continue;
          if (libxsmmWins(it->second)) {
            cells[(i * size + j) * size + l] = '1';
            any = true;
            ++libxsmmCells;
          }
          ++allCells;
        }
    if (any)
      choice.cells[size_t(layout)] = std::move(cells);
  }
  choice.reason = "per shape from the machine profile's rates: libxsmm in " +
                  std::to_string(libxsmmCells) + " of its " +
                  std::to_string(allCells) +
                  " shape classes, OpenBLAS for the "
                  "rest";
  return choice;
}
