"""Export the GPT of gpt.onnx with the newest PyTorch from PyPI.

Writes, into the folder this script lives in, the GPT of make_models.py
with the very weights stored in gpt.onnx, exported by
  gpt_opset18.onnx           -- the TorchScript exporter at opset 18
                                (Debian's PyTorch 1.13 stops at opset 17)
  gpt_torchscript.onnx       -- the TorchScript exporter, its default opset
  gpt_dynamo.onnx            -- the default, torch.export-based exporter,
                                its default opset
  gpt_dynamo_opset18.onnx    -- the torch.export-based exporter at opset 18
                                (GELU decomposed, Python numbers stored as
                                scalar initializers)
(the torch.export-based files without the per-node metadata, stack traces
and FX node names, that the exporter adds) and <stem>.names for each (initializer -> gpt.onnx initializer, see
make_models.py). Made with torch 2.15.0, onnx 1.23.2, onnxscript 0.7.2:

  python3 -m venv /tmp/venv-torch
  /tmp/venv-torch/bin/pip install torch onnx onnxscript
  /tmp/venv-torch/bin/python make_pip_exports.py

Run it after make_models.py (it reads gpt.onnx). CI never runs this
script; the files it writes are committed.
"""

import os
import sys

import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_models as mm  # noqa: E402

# file name -> (dynamo?, opset or None for the exporter's default)
EXPORTS = {
    "gpt_opset18.onnx": (False, 18),
    "gpt_torchscript.onnx": (False, None),
    "gpt_dynamo.onnx": (True, None),
    "gpt_dynamo_opset18.onnx": (True, 18),
}


def main():
    model = mm.gpt_from_onnx()
    example = (mm.example_tokens_fixed(),)
    for name, (dynamo, opset) in EXPORTS.items():
        kwargs = {"dynamo": dynamo}
        if opset is not None:
            kwargs["opset_version"] = opset
        if dynamo:
            # gpipe reads weights stored in the model file only.
            kwargs["external_data"] = False
        else:
            kwargs["do_constant_folding"] = True
        torch.onnx.export(model, example, mm.out_path(name),
                          input_names=["input"], output_names=["logits"],
                          **kwargs)
        proto = onnx.load(mm.out_path(name))
        if dynamo:
            # Per-node stack traces and FX names: a third of the file, and
            # nothing an importer reads.
            for node in proto.graph.node:
                del node.metadata_props[:]
                node.doc_string = ""
            onnx.save(proto, mm.out_path(name))
        onnx.checker.check_model(proto)
        mm.write_gpt_names(name)
        version = [o.version for o in proto.opset_import if o.domain == ""]
        print(f"{name}: torch {torch.__version__}, opset {version}, "
              f"{len(proto.functions)} functions, "
              f"{os.path.getsize(mm.out_path(name))} bytes")


if __name__ == "__main__":
    main()
