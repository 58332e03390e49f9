//===- FuzzCheckpoint.cpp - libFuzzer target for checkpoints ---*- C++ -*-===//
//
// Replaces the MANIFEST.json of a valid checkpoint with arbitrary bytes and
// reads the checkpoint back with readCheckpoint, as `gpipe-run --resume`
// does. The checkpoint (a one-parameter model trained with Adam) is written
// once per process into a fresh temporary directory, which is removed at
// exit; its own manifest (printed with GPIPE_FUZZ_PRINT_SEED=1) is the seed
// in fuzz/corpus/checkpoint.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Checkpoint.h"
#include "gpipe/Runtime/ModelMetadata.h"
#include "gpipe/Runtime/Program.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <unistd.h>

using namespace gpipe::rt;

namespace {

// The fixture spells the ABI version into its JSON: without Program.h's
// definition it would be the macro's name, and the fixture invalid.
#ifndef GPIPE_RT_ABI_VERSION
#error "GPIPE_RT_ABI_VERSION is not defined (gpipe/Runtime/Program.h)"
#endif
#define FUZZ_STRING(x) #x
#define FUZZ_EXPAND_STRING(x) FUZZ_STRING(x)

const char kMetadata[] = R"({
  "format": "gpipe-model", "abi_version": )" FUZZ_EXPAND_STRING(
    GPIPE_RT_ABI_VERSION) R"(, "producer": "fuzz",
  "source": "fuzz.onnx", "stages": 1, "microbatches": 1,
  "schedule": "gpipe", "remat": "none", "loss": "sum", "alignment": 64,
  "optimizer": "adam",
  "input": {"shape": [2, 2], "dtype": "f32"},
  "labels": null, "vocab": 0, "data_hint": "",
  "predicted": {"bubble": 0.0, "closed_form_bubble": 0.0,
                "step_seconds": 0.001},
  "parameters": [{"name": "w", "shape": [2], "dtype": "f32",
                  "init": "zeros"}],
  "stage_info": [{"index": 0, "rank": 0, "name": "s0", "layers": ["l"]}],
  "ranks": [{"rank": 0, "symbol": "gpipe_model_rank_0", "arena_bytes": 128,
             "peak_bytes": 48,
             "stages": [{"stage": 0, "params_offset": 0, "grads_offset": 16,
                         "state_offset": 32, "param_bytes": 8,
                         "params": [{"name": "w", "offset": 0,
                                     "elements": 2}]}],
             "actions": [{"kind": "forward", "stage": 0, "mb": 0},
                         {"kind": "step", "stage": 0, "mb": -1}]}],
  "sites": []
})";

struct Fixture {
  ModelMetadata meta;
  std::string root, checkpoint, manifest;

  Fixture() {
    Status s = ModelMetadata::parse(kMetadata, meta);
    if (!s.ok())
      die("fixture metadata: " + s.message());
    // In memory when the system has a tmpfs at /dev/shm: ext4 writes a
    // truncated and rewritten file back at close, which would make each
    // input cost a disk write.
    const char *tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp                       ? tmp
                       : ::access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                         : "/tmp";
    std::string pattern = base + "/gpipe-fuzz-checkpoint-XXXXXX";
    if (!::mkdtemp(pattern.data()))
      die("cannot create a temporary directory in " + base);
    root = pattern;
    TrainingState state;
    state.step = 3;
    state.seed = 7;
    state.optimizer = "adam";
    state.optimizerSteps = 3;
    state.source = "fuzz.onnx";
    state.parameters["w"] = {1.0f, -2.0f};
    state.optimizerState["exp_avg.w"] = {0.5f, 0.25f};
    state.optimizerState["exp_avg_sq.w"] = {0.125f, 4.0f};
    s = writeCheckpoint(root, state, meta, /*keep=*/1, &checkpoint);
    if (!s.ok())
      die("fixture checkpoint: " + s.message());
    manifest = checkpoint + "/MANIFEST.json";
    if (std::getenv("GPIPE_FUZZ_PRINT_SEED")) {
      std::string cmd = "cat " + manifest;
      if (std::system(cmd.c_str()) != 0)
        die("cannot print the seed manifest");
    }
  }
  ~Fixture() {
    std::string cmd = "rm -rf '" + root + "'";
    if (std::system(cmd.c_str()) != 0)
      std::fprintf(stderr, "cannot remove %s\n", root.c_str());
  }

  [[noreturn]] static void die(const std::string &message) {
    std::fprintf(stderr, "gpipe-fuzz-checkpoint: %s\n", message.c_str());
    std::abort();
  }
};

Fixture &fixture() {
  static Fixture f;
  return f;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Fixture &f = fixture();
  int fd = ::open(f.manifest.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    Fixture::die("cannot write " + f.manifest);
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0)
      Fixture::die("cannot write " + f.manifest);
    done += size_t(n);
  }
  ::close(fd);
  TrainingState state;
  Status s = readCheckpoint(f.checkpoint, f.meta, "adam", state);
  if (!s.ok() && s.message().empty())
    Fixture::die("rejected without a message");
  return 0;
}
