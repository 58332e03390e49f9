//===- Parallel.cpp - CPU kernels split over a rank's cores ---------------===//
//
// The pool behind cpu::runParallel. A job is published as one 64-bit
// ticket: the job's number (upper 32 bits), its chunk count (16 bits) and
// the next chunk to claim (16 bits). A thread claims a chunk by advancing
// the ticket with a compare-and-swap, and only then reads the job's
// function and range, which the caller wrote before publishing the ticket
// and rewrites only after every chunk has been claimed and finished: a
// worker late for a job fails its claim instead of reading the next job's
// fields.
//
//===----------------------------------------------------------------------===//

#include "Parallel.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace gpipe::rt::cpu {
namespace {

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// How long an idle worker spins before it sleeps. A step's parallel
/// kernels come back to back, with the small kernels between them on the
/// calling thread alone, often for more than 10 us; waking a sleeping
/// worker (a futex, in a VM an interprocessor interrupt) costs tens of
/// microseconds a job. Measured on the width-64 GPT at K = 1 on 2 cores:
/// 4.5 ms a step spinning 10 us, 3.9 ms spinning 100 us, 3.8 ms spinning
/// 1 ms. Workers exist only where a rank has the process's cores to itself
/// (more than one kernel thread), so the spin takes no core from another
/// rank.
constexpr std::chrono::microseconds kSpinTime{500};
/// Pauses between two reads of the clock while spinning.
constexpr int kPausesPerClockRead = 64;
constexpr uint64_t kMaxChunks = 4096;

class Pool {
public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop.store(true);
    }
    cv.notify_all();
    for (std::thread &t : workers)
      t.join();
  }

  void setThreads(int n) { threads.store(std::max(n, 1)); }
  int getThreads() const { return threads.load(std::memory_order_relaxed); }

  void run(int64_t n, int64_t grain, void (*fn)(const void *, int64_t, int64_t),
           const void *ctx) {
    int t = getThreads();
    if (t <= 1 || busy.exchange(true, std::memory_order_acquire)) {
      fn(ctx, 0, n);
      return;
    }
    if (!ensureWorkers(t - 1)) {
      busy.store(false, std::memory_order_release);
      fn(ctx, 0, n);
      return;
    }
    // A few chunks per thread, each at least `grain`.
    int64_t chunk = std::max(grain, (n + 4 * t - 1) / (4 * t));
    uint64_t chunks = uint64_t((n + chunk - 1) / chunk);
    if (chunks > kMaxChunks) {
      chunk = (n + int64_t(kMaxChunks) - 1) / int64_t(kMaxChunks);
      chunks = uint64_t((n + chunk - 1) / chunk);
    }
    job = {fn, ctx, n, chunk};
    done.store(0, std::memory_order_relaxed);
    uint64_t number = ++jobs & 0xffffffffu;
    ticket.store(number << 32 | chunks << 16);
    if (sleeping.load() > 0) {
      {
        std::lock_guard<std::mutex> lock(mu);
      }
      cv.notify_all();
    }
    work(number);
    while (done.load(std::memory_order_acquire) < chunks)
      pause();
    busy.store(false, std::memory_order_release);
  }

private:
  struct Job {
    void (*fn)(const void *, int64_t, int64_t) = nullptr;
    const void *ctx = nullptr;
    int64_t n = 0, chunk = 0;
  };

  /// Only the caller holding `busy` makes workers.
  bool ensureWorkers(int count) {
    try {
      while (int(workers.size()) < count)
        workers.emplace_back([this] { workerMain(); });
    } catch (...) {
      // No thread to be had: the workers there are still take part.
      return !workers.empty();
    }
    return true;
  }

  /// Claims and runs chunks of job `number` until none is left.
  void work(uint64_t number) {
    uint64_t t = ticket.load(std::memory_order_acquire);
    for (;;) {
      if (t >> 32 != number)
        return;
      uint64_t chunks = (t >> 16) & 0xffff, next = t & 0xffff;
      if (next >= chunks)
        return;
      if (!ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                        std::memory_order_acquire))
        continue;
      int64_t begin = int64_t(next) * job.chunk;
      int64_t end = std::min(job.n, begin + job.chunk);
      job.fn(job.ctx, begin, end);
      done.fetch_add(1, std::memory_order_release);
      t = ticket.load(std::memory_order_acquire);
    }
  }

  void workerMain() {
    uint64_t seen = ticket.load() >> 32;
    for (;;) {
      int spins = 0;
      auto spinEnd = std::chrono::steady_clock::now() + kSpinTime;
      uint64_t number;
      while ((number = ticket.load(std::memory_order_acquire) >> 32) == seen) {
        if (stop.load(std::memory_order_relaxed))
          return;
        if (++spins < kPausesPerClockRead ||
            std::chrono::steady_clock::now() < spinEnd) {
          spins %= kPausesPerClockRead;
          pause();
          continue;
        }
        std::unique_lock<std::mutex> lock(mu);
        sleeping.fetch_add(1);
        cv.wait(lock,
                [&] { return ticket.load() >> 32 != seen || stop.load(); });
        sleeping.fetch_sub(1);
        spins = 0;
      }
      if (stop.load())
        return;
      seen = number;
      work(number);
    }
  }

  std::atomic<int> threads{1};
  std::atomic<bool> busy{false}, stop{false};
  std::atomic<uint64_t> ticket{0};
  std::atomic<uint64_t> done{0};
  std::atomic<int> sleeping{0};
  uint64_t jobs = 0;
  Job job;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::thread> workers;
};

Pool &pool() {
  static Pool instance;
  return instance;
}

} // namespace

int kernelThreads() { return pool().getThreads(); }

void runParallel(int64_t n, int64_t grain,
                 void (*fn)(const void *, int64_t, int64_t), const void *ctx) {
  pool().run(n, std::max<int64_t>(grain, 1), fn, ctx);
}

} // namespace gpipe::rt::cpu

extern "C" void gpipe_rt_cpu_set_kernel_threads(int32_t threads) {
  gpipe::rt::cpu::pool().setThreads(threads);
}

extern "C" int32_t gpipe_rt_cpu_get_kernel_threads(void) {
  return gpipe::rt::cpu::kernelThreads();
}

extern "C" void
gpipe_rt_cpu_fused_rows(void (*fn)(const void *, int64_t, int64_t),
                        const void *argv, int64_t rows, int64_t row_elements) {
  using namespace gpipe::rt::cpu;
  int64_t grain =
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(row_elements, 1));
  if (rows < 2 * grain || kernelThreads() <= 1) {
    if (rows > 0)
      fn(argv, 0, rows);
    return;
  }
  runParallel(rows, grain, fn, argv);
}
