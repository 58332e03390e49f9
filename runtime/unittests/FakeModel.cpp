//===- FakeModel.cpp - A hand-written model library for tests ---*- C++ -*-===//
//
// The smallest model library Program.h allows, built as a loadable module
// so the tests exercise ModelImage::load (dlopen, ABI check, symbols) and
// gpipe-run end to end: one rank, one stage, one micro-batch. The forward
// loads the input x [2, 2], reports loss = sum of x * w (w broadcast over
// rows) and writes the gradient sum over rows of x; the step applies the
// run's optimizer. FAKE_ABI_VERSION overrides the ABI version it claims and
// FAKE_NOT_A_MODEL leaves the model symbols out.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Program.h"

#ifndef FAKE_ABI_VERSION
#define FAKE_ABI_VERSION GPIPE_RT_ABI_VERSION
#endif

#ifdef FAKE_NOT_A_MODEL
extern "C" int32_t fake_unrelated_function(void) { return 42; }
#else

namespace {

#define FAKE_STRING(x) #x
#define FAKE_EXPAND_STRING(x) FAKE_STRING(x)

const char kMetadata[] = R"({
  "format": "gpipe-model", "abi_version": )" FAKE_EXPAND_STRING(
    GPIPE_RT_ABI_VERSION) R"(, "producer": "fake 1.0",
  "source": "fake.onnx", "stages": 1, "microbatches": 1,
  "schedule": "gpipe", "remat": "none", "loss": "sum", "alignment": 64,
  "optimizer": "sgd",
  "input": {"shape": [2, 2], "dtype": "f32"},
  "labels": null, "vocab": 0, "data_hint": "",
  "predicted": {"bubble": 0.0, "closed_form_bubble": 0.0,
                "step_seconds": 0.001},
  "parameters": [{"name": "w", "shape": [2], "dtype": "f32",
                  "init": "data", "data_offset": 0}],
  "stage_info": [{"index": 0, "rank": 0, "name": "s0", "layers": ["l"]}],
  "ranks": [{"rank": 0, "symbol": "gpipe_model_rank_0", "arena_bytes": 64,
             "peak_bytes": 48,
             "stages": [{"stage": 0, "params_offset": 0, "grads_offset": 16,
                         "state_offset": -1, "param_bytes": 8,
                         "params": [{"name": "w", "offset": 0,
                                     "elements": 2}]}],
             "actions": [{"kind": "forward", "stage": 0, "mb": 0},
                         {"kind": "step", "stage": 0, "mb": -1}]}],
  "sites": []
})";

const float kInitial[2] = {1.0f, -2.0f};

} // namespace

extern "C" int32_t gpipe_model_abi_version(void) { return FAKE_ABI_VERSION; }

extern "C" const char *gpipe_model_metadata(void) { return kMetadata; }

extern "C" const uint8_t *gpipe_model_data(void) {
  return reinterpret_cast<const uint8_t *>(kInitial);
}

extern "C" int32_t gpipe_model_rank_0(gpipe_rt_rank *rank, uint8_t *arena) {
  float *w = reinterpret_cast<float *>(arena);
  float *g = reinterpret_cast<float *>(arena + 16);
  float *x = reinterpret_cast<float *>(arena + 32);
  if (gpipe_rt_action_begin(rank, 0))
    return 1;
  if (gpipe_rt_load_input(rank, 0, x, 16))
    return 1;
  float loss = 0.0f;
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 2; ++j)
      loss += x[r * 2 + j] * w[j];
  if (gpipe_rt_report_loss(rank, 0, &loss))
    return 1;
  for (int j = 0; j < 2; ++j)
    g[j] = x[j] + x[2 + j];
  gpipe_rt_action_end(rank, 0);
  if (gpipe_rt_action_begin(rank, 1))
    return 1;
  if (gpipe_rt_optimizer_step(rank, 0, w, g, nullptr, 2))
    return 1;
  gpipe_rt_action_end(rank, 1);
  return 0;
}

#endif
