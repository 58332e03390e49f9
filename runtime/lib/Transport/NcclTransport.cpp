//===- NcclTransport.cpp - One GPU per process over NCCL -------*- C++ -*-===//
//
// The nccl transport: one process and one GPU per rank under mpirun, as the
// mpi transport, with payloads moved device to device. The communicator is
// bootstrapped here: process 0 makes the NCCL id, MPI carries it to the
// others, every process joins by the deadline. The NCCL calls themselves
// (ncclSend / ncclRecv on the rank's communication stream, ordered against
// its compute stream by events) are the CUDA device's (Device.h,
// lib/Engine/CUDADevice.cu), which owns the streams.
//
//===----------------------------------------------------------------------===//

#include "MpiTransport.h"

#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/ModelMetadata.h"

#include "Transport/Mpi.h"

#include <chrono>

namespace gpipe::rt {
namespace {

class NcclTransport final : public Transport {
public:
  NcclTransport(RunControl &run, Device &device, double timeoutSeconds)
      : run(run), device(device),
        timeout(std::chrono::nanoseconds(int64_t(timeoutSeconds * 1e9))) {}

  const char *name() const override { return "nccl"; }
  bool distributed() const override { return true; }
  int processRank() const override { return mpi::rank(); }
  Status start(const ModelMetadata &meta, Device &) override;
  bool transfer(const Transfer &t) override {
    Status s =
        device.ncclTransfer(*t.device, t.send, t.data, t.bytes, int(t.peer),
                            mpi::Clock::now() + timeout, run.aborted());
    if (s.ok())
      return true;
    run.failRank(t.rank, run.where(t.rank, t.action) + ": " + s.message());
    return false;
  }

  // Data parallelism: the sum is enqueued on the rank's communication
  // stream when the stage's reduce_grad runs; its step's kernels are
  // ordered after it on the device, so there is nothing to wait for here.
  bool startReduction(const Reduction &r) override {
    Status s = device.ncclAllReduce(*r.device, r.grads, r.count,
                                    mpi::Clock::now() + timeout, run.aborted());
    if (s.ok())
      return true;
    run.failRank(r.worker, run.where(r.worker, r.action) + ": " + s.message());
    return false;
  }
  bool finishReduction(int64_t, int64_t) override { return true; }

private:
  RunControl &run;
  Device &device;
  mpi::Clock::duration timeout;
};

Status NcclTransport::start(const ModelMetadata &meta, Device &) {
  if (Status s = checkMpiProcesses(meta); !s.ok())
    return s;
  // The communicator: process 0 makes its id, MPI carries it to the
  // others (a leading 1 byte, or 0 and process 0's error).
  if (!device.supportsNccl())
    return Status::error("the nccl transport needs a model compiled with "
                         "--target cuda; this one runs on " +
                         device.describe());
  const int me = mpi::rank();
  std::vector<uint8_t> id;
  if (me == 0) {
    Status s = device.ncclUniqueId(id);
    if (s.ok())
      id.insert(id.begin(), uint8_t(1));
    else {
      id.assign(s.message().begin(), s.message().end());
      id.insert(id.begin(), uint8_t(0));
    }
  }
  mpi::Clock::time_point deadline = mpi::Clock::now() + timeout;
  std::string abortMessage;
  mpi::Wait w = mpi::broadcast(id, deadline, abortMessage);
  if (w != mpi::Wait::Done)
    return Status::error(w == mpi::Wait::Aborted
                             ? remoteFailure(abortMessage)
                             : "the NCCL id did not arrive from process 0 "
                               "within the timeout");
  if (id.empty() || id[0] != 1)
    return Status::error("process 0 could not start NCCL: " +
                         (id.empty() ? std::string("no reply")
                                     : std::string(id.begin() + 1, id.end())));
  id.erase(id.begin());
  Status s = device.ncclInit(id, me, int(meta.numWorkers()), deadline);
  if (s.ok() && meta.dataParallel > 1)
    s = device.ncclReplicaGroup(int(me % meta.numRanks()),
                                int(me / meta.numRanks()), deadline);
  if (!s.ok())
    return Status::error("process " + std::to_string(me) + ": " + s.message());
  return Status::success();
}

} // namespace

std::unique_ptr<Transport> makeNcclTransport(RunControl &run, Device &device,
                                             double timeoutSeconds) {
  return std::make_unique<NcclTransport>(run, device, timeoutSeconds);
}

} // namespace gpipe::rt
