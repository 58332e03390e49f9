//===- TransportTest.cpp - The local transport on its own --------*- C++
//-*-===//
//
// Drives the local transport (Transport.h) without an engine: two threads
// stand in for two ranks, a RunControl records failures. Checks that a send
// and its receive rendezvous and copy the bytes whichever arrives first,
// that a size mismatch fails both sides with the run knowing why before
// either returns, that a receive without a sender times out, and that a
// buffered send goes on before its receiver and holds its staging copy
// until the payload is received.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Transport.h"
#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/ModelMetadata.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace gpipe::rt;

namespace {

/// Records failures as an engine run would: the first one aborts.
class FakeRun final : public RunControl {
public:
  Transport *transport = nullptr;
  std::mutex mu;
  std::vector<std::string> errors;
  std::atomic<bool> abortFlag{false};

  const std::atomic<bool> &aborted() const override { return abortFlag; }
  void failRank(int64_t rank, std::string message) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      errors.push_back("rank " + std::to_string(rank) + ": " + message);
    }
    if (!abortFlag.exchange(true) && transport)
      transport->wake();
  }
  std::string where(int64_t rank, int64_t action) const override {
    return "r" + std::to_string(rank) + "a" + std::to_string(action);
  }
};

struct Ranks {
  std::shared_ptr<Device> device = makeCpuDevice();
  std::unique_ptr<RankDevice> rank0, rank1;
  Ranks() {
    EXPECT_TRUE(device->makeRank(0, 0, 0, 1, rank0).ok());
    EXPECT_TRUE(device->makeRank(1, 0, 0, 1, rank1).ok());
  }
};

Transfer side(int64_t rank, int64_t peer, bool send, void *data, int64_t bytes,
              RankDevice *device) {
  Transfer t;
  t.rank = rank;
  t.action = 0;
  t.peer = peer;
  t.tag = 7;
  t.send = send;
  t.data = data;
  t.bytes = bytes;
  t.device = device;
  return t;
}

TEST(LocalTransport, RendezvousCopiesWhicheverArrivesFirst) {
  for (bool senderFirst : {true, false}) {
    Ranks ranks;
    FakeRun run;
    std::unique_ptr<Transport> transport =
        makeLocalTransport(run, *ranks.device, 2, 5.0);
    run.transport = transport.get();
    EXPECT_STREQ(transport->name(), "local");
    EXPECT_FALSE(transport->distributed());
    std::vector<float> out = {1, 2, 3, 4}, in(4, 0.0f);
    bool sent = false, received = false;
    std::function<void()> send = [&] {
      sent = transport->transfer(
          side(0, 1, true, out.data(), 16, ranks.rank0.get()));
    };
    std::function<void()> recv = [&] {
      received = transport->transfer(
          side(1, 0, false, in.data(), 16, ranks.rank1.get()));
    };
    std::thread first(senderFirst ? send : recv);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::thread second(senderFirst ? recv : send);
    first.join();
    second.join();
    EXPECT_TRUE(sent && received);
    EXPECT_EQ(in, out);
    EXPECT_TRUE(run.errors.empty());
  }
}

TEST(LocalTransport, SizeMismatchFailsBothSides) {
  Ranks ranks;
  FakeRun run;
  std::unique_ptr<Transport> transport =
      makeLocalTransport(run, *ranks.device, 2, 5.0);
  run.transport = transport.get();
  std::vector<float> out(4, 1.0f), in(4, 0.0f);
  bool sent = true, received = true;
  bool knewWhyBeforeReturning = false;
  std::thread sender([&] {
    sent = transport->transfer(
        side(0, 1, true, out.data(), 16, ranks.rank0.get()));
    std::lock_guard<std::mutex> lock(run.mu);
    knewWhyBeforeReturning = !run.errors.empty();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  received =
      transport->transfer(side(1, 0, false, in.data(), 12, ranks.rank1.get()));
  sender.join();
  EXPECT_FALSE(sent);
  EXPECT_FALSE(received);
  EXPECT_TRUE(knewWhyBeforeReturning);
  ASSERT_EQ(run.errors.size(), 1u);
  // Whichever side arrives second reports it, naming both.
  EXPECT_NE(run.errors[0].find("transfer size mismatch: r0a0 sends 16 bytes "
                               "but r1a0 receives 12"),
            std::string::npos)
      << run.errors[0];
}

// A send with a staging copy returns before any receiver comes; the next
// send into the same copy waits until the first payload is received; the
// step's end (finishSends) waits for the last one.
TEST(LocalTransport, BufferedSendGoesOnUntilItsCopyIsNeeded) {
  Ranks ranks;
  FakeRun run;
  std::unique_ptr<Transport> transport =
      makeLocalTransport(run, *ranks.device, 2, 5.0);
  run.transport = transport.get();
  std::vector<float> out = {1, 2, 3, 4}, staging(4, 0.0f);
  Transfer first = side(0, 1, true, out.data(), 16, ranks.rank0.get());
  first.staging = staging.data();
  ASSERT_TRUE(transport->transfer(first));
  // The sender's buffer is its own again.
  out = {5, 6, 7, 8};
  std::atomic<bool> secondDone{false};
  Transfer second = first;
  second.tag = 8;
  std::thread sender([&] {
    EXPECT_TRUE(transport->transfer(second));
    secondDone = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(secondDone) << "the second send overwrote a payload in use";
  std::vector<float> in(4, 0.0f);
  ASSERT_TRUE(
      transport->transfer(side(1, 0, false, in.data(), 16, ranks.rank1.get())));
  EXPECT_EQ(in, (std::vector<float>{1, 2, 3, 4}));
  sender.join();
  EXPECT_TRUE(secondDone);
  std::atomic<bool> flushed{false};
  std::thread end([&] {
    EXPECT_TRUE(transport->finishSends(0));
    flushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(flushed) << "the step ended with a payload not received";
  Transfer last = side(1, 0, false, in.data(), 16, ranks.rank1.get());
  last.tag = 8;
  ASSERT_TRUE(transport->transfer(last));
  end.join();
  EXPECT_EQ(in, (std::vector<float>{5, 6, 7, 8}));
  EXPECT_TRUE(run.errors.empty());
}

// A receiver already waiting gets a buffered payload through the staging
// copy (the plan's bytes are the ones used, whatever the timing), and the
// copy is free again at once.
TEST(LocalTransport, BufferedSendToAWaitingReceiverGoesThroughItsCopy) {
  Ranks ranks;
  FakeRun run;
  std::unique_ptr<Transport> transport =
      makeLocalTransport(run, *ranks.device, 2, 5.0);
  run.transport = transport.get();
  std::vector<float> out = {1, 2, 3, 4}, staging(4, 0.0f), in(4, 0.0f);
  bool received = false;
  std::thread receiver([&] {
    received = transport->transfer(
        side(1, 0, false, in.data(), 16, ranks.rank1.get()));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Transfer t = side(0, 1, true, out.data(), 16, ranks.rank0.get());
  t.staging = staging.data();
  EXPECT_TRUE(transport->transfer(t));
  receiver.join();
  EXPECT_TRUE(received);
  EXPECT_EQ(in, out);
  EXPECT_EQ(staging, out);
  EXPECT_TRUE(transport->finishSends(0));
  EXPECT_TRUE(run.errors.empty());
}

// A buffered payload nobody receives fails the step's end at the timeout,
// naming the rank.
TEST(LocalTransport, UnreceivedBufferedSendTimesOutAtTheStepsEnd) {
  Ranks ranks;
  FakeRun run;
  std::unique_ptr<Transport> transport =
      makeLocalTransport(run, *ranks.device, 2, 0.1);
  run.transport = transport.get();
  std::vector<float> out(4, 1.0f), staging(4, 0.0f);
  Transfer t = side(0, 1, true, out.data(), 16, ranks.rank0.get());
  t.staging = staging.data();
  ASSERT_TRUE(transport->transfer(t));
  EXPECT_FALSE(transport->finishSends(0));
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_NE(run.errors[0].find("r0a-1: a payload it sent was still not "
                               "received at the step's end after 0.1 s"),
            std::string::npos)
      << run.errors[0];
}

TEST(LocalTransport, ReceiveWithoutSenderTimesOut) {
  Ranks ranks;
  FakeRun run;
  std::unique_ptr<Transport> transport =
      makeLocalTransport(run, *ranks.device, 2, 0.1);
  run.transport = transport.get();
  std::vector<float> in(4, 0.0f);
  EXPECT_FALSE(
      transport->transfer(side(1, 0, false, in.data(), 16, ranks.rank1.get())));
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_EQ(run.errors[0], "rank 1: r1a0: no message after 0.1 s; the peer "
                           "may have died or stalled");
}

//===----------------------------------------------------------------------===//
// Gradient all-reduce among replicas
//===----------------------------------------------------------------------===//

/// D replicas' gradients whose sum depends on the order of the additions
/// (magnitudes from 1e-4 to 1e4).
std::vector<std::vector<float>> gradients(int64_t replicas, int64_t count) {
  std::mt19937 rng(unsigned(replicas * 1000 + count));
  std::uniform_real_distribution<float> exponent(-4.0f, 4.0f), sign(-1, 1);
  std::vector<std::vector<float>> g(static_cast<size_t>(replicas));
  for (auto &v : g)
    for (int64_t i = 0; i < count; ++i)
      v.push_back(std::pow(10.0f, exponent(rng)) * (sign(rng) < 0 ? -1 : 1));
  return g;
}

/// g0 + g1 + ... + g(D-1), left to right.
std::vector<float> inOrder(const std::vector<std::vector<float>> &g) {
  std::vector<float> sum = g[0];
  for (size_t j = 1; j < g.size(); ++j)
    for (size_t i = 0; i < sum.size(); ++i)
      sum[i] += g[j][i];
  return sum;
}

TEST(ReduceShare, EveryElementSummedInReplicaOrder) {
  for (int64_t replicas : {1, 2, 3, 4, 5})
    for (int64_t count :
         {int64_t(1), replicas - 1, int64_t(7), int64_t(1037)}) {
      if (count < 1)
        continue;
      std::vector<std::vector<float>> g = gradients(replicas, count);
      std::vector<float> expected = inOrder(g);
      const int64_t share = getReduceShare(count, replicas);
      EXPECT_EQ(share, (count + replicas - 1) / replicas);
      // Each replica sums its share from the others' pieces; the shares
      // then make the whole.
      std::vector<float> whole(static_cast<size_t>(count));
      for (int64_t d = 0; d < replicas; ++d) {
        int64_t lo = std::min(count, d * share),
                hi = std::min(count, lo + share);
        std::vector<float> mine = g[size_t(d)];
        std::vector<float> others(
            static_cast<size_t>(std::max<int64_t>(replicas - 1, 1) * share));
        for (int64_t j = 0, slot = 0; j < replicas; ++j)
          if (j != d)
            std::memcpy(others.data() + slot++ * share,
                        g[size_t(j)].data() + lo, size_t(hi - lo) * 4);
        sumShare(mine.data(), others.data(), replicas, d, count);
        std::copy(mine.begin() + lo, mine.begin() + hi, whole.begin() + lo);
      }
      EXPECT_EQ(std::memcmp(whole.data(), expected.data(), size_t(count) * 4),
                0)
          << replicas << " replicas, " << count << " gradients";
    }
}

TEST(LocalTransport, ReducesOverReplicaThreadsBitwise) {
  const int64_t replicas = 3, count = 1001;
  std::shared_ptr<Device> device = makeCpuDevice();
  FakeRun run;
  std::unique_ptr<Transport> transport =
      makeLocalTransport(run, *device, replicas, 5.0);
  run.transport = transport.get();
  ModelMetadata meta;
  meta.dataParallel = replicas;
  ASSERT_TRUE(transport->start(meta, *device).ok());
  std::vector<std::vector<float>> g = gradients(replicas, count);
  std::vector<float> expected = inOrder(g);
  const int64_t share = getReduceShare(count, replicas);
  std::vector<std::vector<float>> scratch(
      size_t(replicas), std::vector<float>(size_t((replicas - 1) * share), -1));
  std::vector<std::thread> threads;
  std::vector<char> ok(size_t(replicas), 0);
  for (int64_t d = 0; d < replicas; ++d)
    threads.emplace_back([&, d] {
      Reduction r;
      r.worker = d;
      r.replica = d;
      r.stage = 0;
      r.grads = g[size_t(d)].data();
      r.scratch = scratch[size_t(d)].data();
      r.count = count;
      ok[size_t(d)] =
          transport->startReduction(r) && transport->finishReduction(d, 0);
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_TRUE(run.errors.empty());
  for (int64_t d = 0; d < replicas; ++d) {
    EXPECT_TRUE(ok[size_t(d)]);
    EXPECT_EQ(std::memcmp(g[size_t(d)].data(), expected.data(), count * 4), 0)
        << "replica " << d;
    // The Reduce buffer is written whole (the plan measures it).
    for (float v : scratch[size_t(d)])
      EXPECT_NE(v, -1.0f);
  }
}

TEST(LocalTransport, MissingReplicaTimesOutNamingIt) {
  std::shared_ptr<Device> device = makeCpuDevice();
  FakeRun run;
  std::unique_ptr<Transport> transport =
      makeLocalTransport(run, *device, 2, 0.1);
  run.transport = transport.get();
  ModelMetadata meta;
  meta.dataParallel = 2;
  ASSERT_TRUE(transport->start(meta, *device).ok());
  std::vector<float> grads(10, 1.0f), scratch(5);
  Reduction r;
  r.worker = 0;
  r.action = 3;
  r.grads = grads.data();
  r.scratch = scratch.data();
  r.count = 10;
  ASSERT_TRUE(transport->startReduction(r));
  EXPECT_FALSE(transport->finishReduction(0, 0));
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_EQ(run.errors[0], "rank 0: r0a3: the gradient all-reduce waited 0.1 "
                           "s for replica 1; it may have died or stalled");
}

} // namespace
