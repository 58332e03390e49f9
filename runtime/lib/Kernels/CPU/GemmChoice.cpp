//===- GemmChoice.cpp - Which implementation each GEMM shape takes
//---------===//
//
// The process's GEMM choice (gpipe_rt_cpu_set_gemm_choice: a compiled
// model's, from its metadata) and the libxsmm path behind it.
//
// libxsmm (1.17) generates a kernel for one shape, layout and set of leading
// dimensions at its first use; the calling thread keeps it, with how the
// GEMM splits over the kernel threads, in a table keyed by all of them, so
// a steady step only looks the plan up. A GEMM splits by blocks of rows of
// C, each block its own kernel, only where the blocks were found, on random
// operands of that very shape, to give the bits of the whole GEMM in one
// kernel (for some shapes no block height does: measured, docs/Codegen.md);
// the bits therefore never depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "CPU/CPUInternal.h"
#include "CPU/Parallel.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#ifdef GPIPE_RT_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

namespace gpipe::rt::cpu {
namespace {

/// An installed choice (gpipe_rt_cpu_set_gemm_choice), never changed.
struct Choice {
  int32_t impl = GPIPE_RT_GEMM_OPENBLAS;
  std::vector<int64_t> grid;
  std::array<std::string, 4> cells;
  /// `cells`' texts, null for a layout without cells.
  const char *cellTexts[4] = {};
};

/// The choice in force; null: OpenBLAS for every shape. Installed choices
/// stay alive for the process (a GEMM may be reading the previous one).
std::atomic<const Choice *> installed{nullptr};
std::mutex installMutex;
std::vector<std::unique_ptr<Choice>> &keptChoices() {
  static std::vector<std::unique_ptr<Choice>> kept;
  return kept;
}

} // namespace

int32_t gemmImplFor(bool transA, bool transB, int64_t m, int64_t n, int64_t k) {
  const Choice *choice = installed.load(std::memory_order_acquire);
  if (!choice)
    return GPIPE_RT_GEMM_OPENBLAS;
  return gpipe_rt_gemm_choose(choice->impl, choice->grid.data(),
                              int32_t(choice->grid.size()), choice->cellTexts,
                              transA, transB, m, n, k);
}

#ifdef GPIPE_RT_HAVE_LIBXSMM

namespace {

/// A GEMM's shape, layout and leading dimensions: what a kernel is made for.
struct XsmmKey {
  int64_t m, n, k, lda, ldb, ldc;
  bool transA;
  bool operator==(const XsmmKey &o) const {
    return m == o.m && n == o.n && k == o.k && lda == o.lda && ldb == o.ldb &&
           ldc == o.ldc && transA == o.transA;
  }
};

struct XsmmKeyHash {
  size_t operator()(const XsmmKey &key) const {
    return hashValues(
        {key.m, key.n, key.k, key.lda, key.ldb, key.ldc, int64_t(key.transA)});
  }
};

/// How one GEMM runs: the whole kernel, and where it splits, the row
/// block's and the last block's (which takes the remainder).
struct XsmmPlan {
  libxsmm_smmfunction whole = nullptr;
  /// Rows per block of a split; 0: the GEMM runs whole.
  int64_t block = 0;
  libxsmm_smmfunction blockKernel = nullptr, lastKernel = nullptr;
  /// Whether `block` was decided (for a thread count above one).
  bool splitDecided = false;
};

/// libxsmm's kernel for rows [0, rows) of C (m x n, row-major) = op(A) B,
/// accumulated into C. In libxsmm's column-major terms that is C^T (n x
/// rows) += B^T op(A)^T: B's stored rows are its first operand, A's its
/// second (transposed where A is), C's rows its columns.
libxsmm_smmfunction dispatch(const XsmmKey &key, int64_t rows) {
  static const bool ready = [] {
    libxsmm_init();
    return true;
  }();
  (void)ready;
  libxsmm_blasint m = libxsmm_blasint(key.n), n = libxsmm_blasint(rows),
                  k = libxsmm_blasint(key.k), lda = libxsmm_blasint(key.ldb),
                  ldb = libxsmm_blasint(key.lda),
                  ldc = libxsmm_blasint(key.ldc);
  float alpha = 1.0f, beta = 1.0f;
  int flags = key.transA ? LIBXSMM_GEMM_FLAG_TRANS_B : 0;
  return libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags,
                             nullptr);
}

/// Runs rows [row, row + rows) of the GEMM with `kernel`.
void runRows(libxsmm_smmfunction kernel, const XsmmKey &key, int64_t row,
             const float *a, const float *b, float *c) {
  kernel(b, key.transA ? a + row : a + row * key.lda, c + row * key.ldc);
#if defined(__x86_64__)
  // The JIT kernel leaves the upper halves of the vector registers dirty;
  // the runtime's own loops (SSE code) would then pay for every
  // transition (measured: softmax and layer norm 1.7x slower after it).
  asm volatile("vzeroupper" ::: "memory");
#endif
}

/// The row block (and its kernels) that splits the GEMM of `key` over
/// `threads` with the bits of one kernel over all of C; plan.block stays 0
/// when no candidate does. Each candidate is a multiple of a register tile
/// height near m / threads, tried on random operands.
void decideSplit(XsmmPlan &plan, const XsmmKey &key, int threads) {
  plan.splitDecided = true;
  const int64_t m = key.m, n = key.n, k = key.k;
  size_t aSize =
      size_t(key.transA ? (k - 1) * key.lda + m : (m - 1) * key.lda + k);
  size_t bSize = size_t((k - 1) * key.ldb + n);
  size_t cSize = size_t((m - 1) * key.ldc + n);
  std::vector<float> a(aSize), b(bSize), whole(cSize, 0.0f), parts;
  uint32_t state = 2463534242u;
  fillCheckOperand(a, state);
  fillCheckOperand(b, state);
  runRows(plan.whole, key, 0, a.data(), b.data(), whole.data());
  for (int64_t tile : {8, 16, 24, 32, 48, 64}) {
    int64_t rows = std::max<int64_t>(tile, m / threads / tile * tile);
    int64_t blocks = m / rows;
    if (blocks < 2)
      continue;
    int64_t last = m - (blocks - 1) * rows;
    libxsmm_smmfunction blockKernel = dispatch(key, rows),
                        lastKernel = dispatch(key, last);
    if (!blockKernel || !lastKernel)
      continue;
    parts.assign(cSize, 0.0f);
    for (int64_t i = 0; i < blocks; ++i)
      runRows(i + 1 == blocks ? lastKernel : blockKernel, key, i * rows,
              a.data(), b.data(), parts.data());
    if (std::memcmp(whole.data(), parts.data(), cSize * sizeof(float)) == 0) {
      plan.block = rows;
      plan.blockKernel = blockKernel;
      plan.lastKernel = lastKernel;
      return;
    }
  }
}

} // namespace

bool xsmmGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb,
              float *c, int64_t ldc, int threads) {
  if (transB) {
    // libxsmm makes no kernel that reads B transposed: B^T [k, n] copied
    // out, in tiles, to this thread's buffer (grown at a shape's first
    // call, kept after).
    thread_local std::vector<float> copy;
    if (copy.size() < size_t(k * n))
      copy.resize(size_t(k * n));
    constexpr int64_t kTile = 16;
    float *to = copy.data();
    auto transpose = [&](int64_t first, int64_t last) {
      for (int64_t j0 = first * kTile; j0 < std::min(n, last * kTile);
           j0 += kTile)
        for (int64_t l0 = 0; l0 < k; l0 += kTile)
          for (int64_t j = j0; j < std::min(n, j0 + kTile); ++j)
            for (int64_t l = l0; l < std::min(k, l0 + kTile); ++l)
              to[l * n + j] = b[j * ldb + l];
    };
    int64_t columnTiles = (n + kTile - 1) / kTile;
    if (threads > 1)
      parallelFor(columnTiles, 1, transpose);
    else
      transpose(0, columnTiles);
    b = copy.data();
    ldb = n;
  }
  thread_local std::unordered_map<XsmmKey, XsmmPlan, XsmmKeyHash> plans;
  XsmmKey key{m, n, k, lda, ldb, ldc, transA};
  auto [it, inserted] = plans.try_emplace(key);
  XsmmPlan &plan = it->second;
  if (inserted)
    plan.whole = dispatch(key, m);
  if (!plan.whole)
    return false;
  if (threads > 1 && !plan.splitDecided)
    decideSplit(plan, key, threads);
  if (threads <= 1 || plan.block == 0) {
    runRows(plan.whole, key, 0, a, b, c);
    return true;
  }
  int64_t blocks = m / plan.block;
  parallelFor(blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
      runRows(i + 1 == blocks ? plan.lastKernel : plan.blockKernel, key,
              i * plan.block, a, b, c);
  });
  return true;
}

#else

bool xsmmGemm(bool, bool, int64_t, int64_t, int64_t, const float *, int64_t,
              const float *, int64_t, float *, int64_t, int) {
  return false;
}

#endif // GPIPE_RT_HAVE_LIBXSMM

} // namespace gpipe::rt::cpu

using namespace gpipe::rt;

extern "C" int32_t gpipe_rt_cpu_gemm_impl_available(int32_t impl) {
#ifdef GPIPE_RT_HAVE_LIBXSMM
  return impl == GPIPE_RT_GEMM_OPENBLAS || impl == GPIPE_RT_GEMM_LIBXSMM;
#else
  return impl == GPIPE_RT_GEMM_OPENBLAS;
#endif
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_set_gemm_choice(int32_t impl, const int64_t *grid,
                             int32_t gridSize, const char *const cells[4]) {
  args::Kernel kernel = cpu::kernelNamed("set_gemm_choice");
  auto fail = [&](const std::string &message) -> gpipe_rt_status {
    return args::Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << message;
  };
  auto unavailable = [&](int32_t which) {
    const char *name = gpipe_rt_gemm_impl_name(which);
    return fail(name ? std::string("GEMM implementation ") + name +
                           " is not built into this runtime (install "
                           "libxsmm-dev and rebuild gpipe)"
                     : "GEMM implementation " + std::to_string(which) +
                           " is unknown (expected 0 = openblas or 1 = "
                           "libxsmm)");
  };
  if (!gpipe_rt_cpu_gemm_impl_available(impl))
    return unavailable(impl);
  auto choice = std::make_unique<cpu::Choice>();
  choice->impl = impl;
  if (gridSize < 0 || (gridSize > 0 && !grid))
    return fail("the GEMM choice grid has size " + std::to_string(gridSize) +
                " and no dimensions");
  for (int32_t i = 0; i < gridSize; ++i)
    if (grid[i] < 1 || (i > 0 && grid[i] <= grid[i - 1]))
      return fail("the GEMM choice grid's dimension " + std::to_string(i) +
                  " is " + std::to_string(grid[i]) +
                  " (expected positive and increasing)");
  if (gridSize > 0) {
    choice->grid.assign(grid, grid + gridSize);
    size_t cellCount = size_t(gridSize) * size_t(gridSize) * size_t(gridSize);
    for (int layout = 0; layout < 4; ++layout) {
      if (!cells || !cells[layout])
        continue;
      std::string text = cells[layout];
      if (text.size() != cellCount)
        return fail("the GEMM choice of layout " + std::to_string(layout) +
                    " has " + std::to_string(text.size()) +
                    " cells, the grid " + std::to_string(cellCount));
      for (char c : text)
        if (!gpipe_rt_cpu_gemm_impl_available(c - '0'))
          return unavailable(c - '0');
      choice->cells[size_t(layout)] = std::move(text);
      choice->cellTexts[layout] = choice->cells[size_t(layout)].c_str();
    }
  }
  std::lock_guard<std::mutex> lock(cpu::installMutex);
  cpu::installed.store(choice.get(), std::memory_order_release);
  cpu::keptChoices().push_back(std::move(choice));
  return GPIPE_RT_SUCCESS;
}

extern "C" int32_t gpipe_rt_cpu_gemm_impl_for(int32_t transA, int32_t transB,
                                              int64_t m, int64_t n, int64_t k) {
  return cpu::gemmImplFor(transA != 0, transB != 0, m, n, k);
}
