//===- MpiTransport.h - What the MPI-based transports share -----*- C++ -*-===//
//
// The mpi and nccl transports run one process per rank under mpirun; both
// check the same things before the ranks start. Internal to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_TRANSPORT_MPITRANSPORT_H
#define GPIPE_RUNTIME_LIB_TRANSPORT_MPITRANSPORT_H

#include "gpipe/Runtime/Status.h"
#include "gpipe/Runtime/Transport.h"

namespace gpipe::rt {

/// MPI is initialized, it started one process per rank of `meta`, and every
/// transfer tag fits this MPI's tag range.
Status checkMpiProcesses(const ModelMetadata &meta);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_LIB_TRANSPORT_MPITRANSPORT_H
