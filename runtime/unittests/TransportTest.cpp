//===- TransportTest.cpp - The local transport on its own --------*- C++
//-*-===//
//
// Drives the local transport (Transport.h) without an engine: two threads
// stand in for two ranks, a RunControl records failures. Checks that a send
// and its receive rendezvous and copy the bytes whichever arrives first,
// that a size mismatch fails both sides with the run knowing why before
// either returns, and that a receive without a sender times out.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Transport.h"
#include "gpipe/Runtime/Device.h"

#include <gtest/gtest.h>

#include <functional>
#include <mutex>
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

} // namespace
