"""Make the model zoo: tiny real models from pip packages, exported to ONNX.

Builds tiny configurations of eight real model families (the classes of
transformers and torchvision, randomly initialized, seeded, float32, every
dropout probability 0), exports each with both PyTorch exporters and writes
what PyTorch computes on them. Writes, into the folder this script lives in,
for each family F in gpt2, llama, bert, vit, resnet18, mobilenetv2, roberta,
bloom (or only the families named on the command line; the others' files
are left as they are):

  F.torchscript.onnx     -- torch.onnx.export(dynamo=False), default opset
  F.dynamo.onnx          -- torch.onnx.export(dynamo=True), default opset,
                            weights in the file, per-node metadata and doc
                            strings removed (not for resnet18: SKIPPED)
  F.ref.safetensors      -- PyTorch's reference: the inputs, labels, logits,
                            loss, first-step gradients, the parameters after
                            STEPS plain SGD steps on the same batch (and for
                            the batch-norm models the same with the batch
                            cut into M micro-batches); see write_reference
  F.ref.precision.txt    -- per reference tensor, how far PyTorch's float32
                            result is from the same computation in float64,
                            and whether all are within PRECISION
  F.<exporter>.names     -- each float initializer of the ONNX file and the
                            PyTorch parameter it holds; see map_initializers
  F.<exporter>.map       -- the same pairs for a two-column reader:
                            "<initializer> <parameter>[^T]" per line
  F.<exporter>.summary.txt
                         -- inputs, outputs, op types with counts, the
                            onnxruntime check and what the exporter changed

An exporter that fails on a family is reported and the family goes on with
the other. README.md describes the files and what the exporters did.

Needs the newest PyTorch and friends from PyPI (no pretrained weights are
downloaded):
  python3 -m venv /tmp/venv-torch
  /tmp/venv-torch/bin/pip install torch torchvision transformers onnx \\
      onnxscript onnxruntime safetensors
  /tmp/venv-torch/bin/python make_zoo.py [family...]

Deterministic: a second run writes the same references (bit for bit on the
same machine and package versions). CI never runs this script; the files it
writes are committed.
"""

import collections
import contextlib
import copy
import json
import os
import struct
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import safetensors
import safetensors.numpy
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
import transformers
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))

BATCH = 8          # the transformers' batch
SEQ = 16
VOCAB = 64
LR = 0.1           # the transformers' SGD learning rate
STEPS = 3
MICRO = 4          # micro-batches of the batch-norm models' m4.* reference
# The CNNs (batch norm, ReLU kinks), chosen by measurement (README.md,
# "Numerical conditioning"): for resnet18 small images and a learning rate
# well under 2 / (the largest Hessian eigenvalue magnitude at the start,
# about 370), where a float32-sized perturbation of the step-1 parameters
# moves the step-3 parameters by under 1e-4 (at 0.005 by 2e-3);
# mobilenetv2 meets PRECISION in no configuration tried, this one has its
# whole-batch references closest (its eigenvalue is about 6500).
CNNS = ("resnet18", "mobilenetv2")
CNN_BATCH = 8
CNN_IMAGE = {"resnet18": 40, "mobilenetv2": 64}   # square images
CNN_LR = {"resnet18": 0.001, "mobilenetv2": 3e-5}
PRECISION = 1e-5   # ||f32 - f64|| / ||f64|| bound of the CNN references
ZERO_NORM = 1e-10  # an f64 norm under this: zero in exact arithmetic
ZERO_FLOOR = 1e-5  # ... and then ||f32 - f64|| must be under this
JITTER = 0.02
SAMPLES = 4096     # a sampled tensor keeps this many elements
SAMPLE_OVER = {"resnet18": 4096}    # sample tensors with more elements
SAMPLE_OVER_DEFAULT = 65536

# One seed per family: the model's initialization and jitter use it, its
# data the seed + 1000 (a generator of its own).
SEEDS = {"gpt2": 1, "llama": 2, "bert": 3, "vit": 4, "resnet18": 5,
         "mobilenetv2": 6, "roberta": 7, "bloom": 8}
# Families whose reference also holds logits_nomask and loss_nomask: the
# same with an attention_mask of all ones.
NOMASK = ("bert", "roberta", "bloom")
EXPORTERS = ("torchscript", "dynamo")
# Exports not written, and why.
SKIPPED = {("resnet18", "dynamo"):
           "44.7 MB, and batch norm folded into the convolutions as for "
           "mobilenetv2.dynamo (which shows that, at 1 MB)"}


def batch_of(family):
    return CNN_BATCH if family in CNNS else BATCH


def lr_of(family):
    return CNN_LR[family] if family in CNNS else LR


def out_path(name):
    return os.path.join(HERE, name)


def first_line(err):
    text = str(err).strip() or type(err).__name__
    return f"{type(err).__name__}: {text.splitlines()[0]}"


# ---------------------------------------------------------------- models
#
# Each Hugging Face model gets a subclass of its own class whose forward
# takes the inputs positionally (in the ONNX input order) and returns only
# `.logits`; the parameters keep their Hugging Face names. torchvision
# models already return the logits.


def logits_forward(names, **fixed):
    def forward(self, *args):
        kwargs = dict(zip(names, args), **fixed)
        if getattr(self, "zoo_ones_mask", False):
            # See export_torchscript: an all-ones attention mask, built
            # inside the graph, is the same as no mask.
            kwargs["attention_mask"] = torch.ones_like(args[0])
        return type(self).__mro__[1].forward(self, **kwargs).logits
    return forward


def logits_only(model, names, **fixed):
    base = type(model)
    model.__class__ = type(base.__name__ + "Logits", (base,),
                           {"forward": logits_forward(names, **fixed)})
    return model


def jitter(model):
    """Nudge every parameter: fresh LayerNorm / RMSNorm / BatchNorm weights
    (ones) and biases (zeros) are equal across layers, and the exporters
    would merge equal initializers (and a match by value would be
    ambiguous)."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(JITTER * torch.randn_like(p))


def check_no_dropout(model):
    for name, mod in model.named_modules():
        if isinstance(mod, nn.modules.dropout._DropoutNd) and mod.p != 0:
            raise RuntimeError(f"dropout {name} has p = {mod.p}")
    config = getattr(model, "config", None)
    if config is not None:
        for key, value in config.to_dict().items():
            if ("dropout" in key or "pdrop" in key) and value:
                raise RuntimeError(f"config {key} = {value}")


def tokens_and_next(gen):
    seq = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=gen)
    return {"input_ids": seq[:, :SEQ].contiguous()}, seq[:, 1:].contiguous()


def make_gpt2(gen):
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, n_positions=SEQ, vocab_size=VOCAB,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        summary_first_dropout=0.0, bos_token_id=VOCAB - 1,
        eos_token_id=VOCAB - 1, use_cache=False)
    model = logits_only(transformers.GPT2LMHeadModel(config), ["input_ids"],
                        use_cache=False)
    inputs, labels = tokens_and_next(gen)
    return model, inputs, labels


def make_llama(gen):
    config = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
        max_position_embeddings=32, tie_word_embeddings=False,
        attention_dropout=0.0, use_cache=False)
    model = logits_only(transformers.LlamaForCausalLM(config), ["input_ids"],
                        use_cache=False)
    inputs, labels = tokens_and_next(gen)
    return model, inputs, labels


def make_bert(gen):
    config = transformers.BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=32,
        num_labels=3, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, classifier_dropout=0.0)
    model = logits_only(transformers.BertForSequenceClassification(config),
                        ["input_ids", "attention_mask", "token_type_ids"])
    # Eight different lengths in [5, 16], 5 and 16 among them.
    middle = torch.randperm(10, generator=gen)[:6] + 6
    lengths = torch.cat([torch.tensor([5, SEQ]), middle])
    lengths = lengths[torch.randperm(BATCH, generator=gen)]
    ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=gen)
    pos = torch.arange(SEQ).expand(BATCH, SEQ)
    real = pos < lengths[:, None]
    inputs = {
        "input_ids": torch.where(real, ids, 0),
        "attention_mask": real.to(torch.int64),
        "token_type_ids": (real & (pos >= lengths[:, None] // 2)).to(
            torch.int64),
    }
    labels = torch.randint(0, 3, (BATCH,), generator=gen)
    return model, inputs, labels


def make_roberta(gen):
    # Position ids come from the input ids at run time: padding_idx (1) +
    # the cumulative sum of (input_ids != 1), 1 on padding; positions of
    # real tokens run 2..17, hence 32 + 2 positions (as roberta-base's
    # 512 + 2). One token type, as in the published RoBERTa checkpoints;
    # with no token_type_ids input the model reads its zeros buffer.
    config = transformers.RobertaConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=34,
        type_vocab_size=1, pad_token_id=1, num_labels=3,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        classifier_dropout=0.0)
    model = logits_only(
        transformers.RobertaForSequenceClassification(config),
        ["input_ids", "attention_mask"])
    # Eight different lengths in [5, 16], 5 and 16 among them (as bert's).
    middle = torch.randperm(10, generator=gen)[:6] + 6
    lengths = torch.cat([torch.tensor([5, SEQ]), middle])
    lengths = lengths[torch.randperm(BATCH, generator=gen)]
    ids = torch.randint(2, VOCAB, (BATCH, SEQ), generator=gen)
    real = torch.arange(SEQ).expand(BATCH, SEQ) < lengths[:, None]
    inputs = {
        "input_ids": torch.where(real, ids, config.pad_token_id),
        "attention_mask": real.to(torch.int64),
    }
    labels = torch.randint(0, 3, (BATCH,), generator=gen)
    return model, inputs, labels


def make_bloom(gen):
    # ALiBi: the bias of key j is slope * (cumsum(mask) - 1) * mask at j,
    # computed from attention_mask at run time. Tied embeddings (default).
    config = transformers.BloomConfig(
        hidden_size=32, n_layer=2, n_head=4, vocab_size=VOCAB,
        hidden_dropout=0.0, attention_dropout=0.0, pad_token_id=3,
        use_cache=False)
    model = logits_only(transformers.BloomForCausalLM(config),
                        ["input_ids", "attention_mask"], use_cache=False)
    # Right padding on half the samples: lengths 16 (four times), 5 and
    # three different ones in [6, 15].
    middle = torch.randperm(10, generator=gen)[:3] + 6
    lengths = torch.cat([torch.tensor([SEQ] * 4 + [5]), middle])
    lengths = lengths[torch.randperm(BATCH, generator=gen)]
    # A 17-token sequence per sample, pad tokens from its length on; the
    # input is tokens 0..15, the labels tokens 1..16 (the next token
    # everywhere, padding too: the loss is the mean over all 128).
    seq = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=gen)
    real = torch.arange(SEQ + 1).expand(BATCH, SEQ + 1) < lengths[:, None]
    seq = torch.where(real, seq, config.pad_token_id)
    inputs = {
        "input_ids": seq[:, :SEQ].contiguous(),
        "attention_mask": real[:, :SEQ].to(torch.int64),
    }
    return model, inputs, seq[:, 1:].contiguous()


def make_vit(gen):
    config = transformers.ViTConfig(
        image_size=16, patch_size=4, num_channels=3, hidden_size=32,
        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        num_labels=10, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)
    model = logits_only(transformers.ViTForImageClassification(config),
                        ["pixel_values"])
    inputs = {"pixel_values": torch.randn(BATCH, 3, 16, 16, generator=gen)}
    labels = torch.randint(0, 10, (BATCH,), generator=gen)
    return model, inputs, labels


def images(gen, size):
    shape = (CNN_BATCH, 3, size, size)
    inputs = {"input": torch.randn(shape, generator=gen)}
    return inputs, torch.randint(0, 10, (CNN_BATCH,), generator=gen)


def make_resnet18(gen):
    model = torchvision.models.resnet18(num_classes=10)
    return (model,) + images(gen, CNN_IMAGE["resnet18"])


def make_mobilenetv2(gen):
    model = torchvision.models.mobilenet_v2(num_classes=10, width_mult=0.25,
                                            dropout=0.0)
    return (model,) + images(gen, CNN_IMAGE["mobilenetv2"])


MAKERS = {"gpt2": make_gpt2, "llama": make_llama, "bert": make_bert,
          "vit": make_vit, "resnet18": make_resnet18,
          "mobilenetv2": make_mobilenetv2, "roberta": make_roberta,
          "bloom": make_bloom}


def has_batch_norm(model):
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm)
               for m in model.modules())


# ---------------------------------------------------------------- export


def buffers_of(model):
    return {n: b.detach().clone() for n, b in model.named_buffers()}


def restore_buffers(model, saved):
    with torch.no_grad():
        for n, b in model.named_buffers():
            b.copy_(saved[n])


@contextlib.contextmanager
def quiet_stdout():
    """Silence file descriptor 1 (the exporter logs from C++)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def export_torchscript(model, inputs, path, train, notes):
    kwargs = {"dynamo": False}
    if train:
        kwargs.update(training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    else:
        kwargs.update(do_constant_folding=True)

    def go():
        torch.onnx.export(model, tuple(inputs.values()), path,
                          input_names=list(inputs), output_names=["logits"],
                          **kwargs)
    try:
        # On failure the exporter prints both graphs to stdout.
        with quiet_stdout():
            go()
    except Exception as err:
        if "input_ids" not in inputs or "attention_mask" in inputs:
            raise
        # transformers' mask code looks for packed sequences with
        # torch.diff when no attention mask is given, and the TorchScript
        # exporter has no aten::diff. Retry with an all-ones mask built in
        # the graph (the same attention; the inputs stay the same).
        notes.append(f"plain export failed: {first_line(err)}; exported "
                     "with attention_mask=torch.ones_like(input_ids) built "
                     "inside the wrapper (same attention, same inputs)")
        model.zoo_ones_mask = True
        try:
            go()
        finally:
            model.zoo_ones_mask = False


def export_dynamo(model, inputs, path, train, notes):
    model.train(train)
    torch.onnx.export(model, tuple(inputs.values()), path,
                      input_names=list(inputs), output_names=["logits"],
                      dynamo=True, external_data=False)
    proto = onnx.load(path)
    # Per-node stack traces and FX names: a large part of the file, and
    # nothing an importer reads.
    for graph in [proto.graph] + list(proto.functions):
        for node in graph.node:
            del node.metadata_props[:]
            node.doc_string = ""
    onnx.save(proto, path)


EXPORT = {"torchscript": export_torchscript, "dynamo": export_dynamo}


# ---------------------------------------------------------------- names
#
# <family>.<exporter>.names: one line per float initializer,
#   <initializer> <parameter> same|transposed
#   <initializer> - buffer <buffer>[,<buffer>...]  (batch-norm statistics)
#   <initializer> - constant <shape>      (matches no parameter or buffer)
# matched by exact value (an initializer may hold a Linear weight
# transposed), and "# " comment lines for parameters held by no initializer
# or by several.
# <family>.<exporter>.map: only the initializers that hold a parameter, one
# line each, "<initializer> <parameter>" (same) or "<initializer>
# <parameter>^T" (transposed); nothing else.


def map_initializers(model, proto, buffer_snapshots):
    params = [(n, p.detach().numpy()) for n, p in model.named_parameters()]
    lines, held, constants = [], collections.defaultdict(list), []
    for init in proto.graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype.kind != "f":
            continue
        hits = []
        for pname, pa in params:
            if pa.shape == arr.shape and np.array_equal(pa, arr):
                hits.append((pname, "same"))
            elif pa.ndim == 2 and pa.T.shape == arr.shape and \
                    np.array_equal(pa.T, arr):
                hits.append((pname, "transposed"))
        if len(hits) > 1:
            raise RuntimeError(f"initializer {init.name} matches several "
                               f"parameters: {hits}")
        if hits:
            if init.name.split() != [init.name]:
                raise RuntimeError(f"initializer name {init.name!r} has "
                                   "white space")
            pname, layout = hits[0]
            held[pname].append((init.name, layout))
            lines.append(f"{init.name} {pname} {layout}")
            continue
        bufs = sorted({n for snap in buffer_snapshots
                       for n, b in snap.items()
                       if b.is_floating_point() and b.dim() > 0 and
                       tuple(b.shape) == arr.shape and
                       np.array_equal(b.numpy(), arr)})
        if bufs:
            lines.append(f"{init.name} - buffer {','.join(bufs)}")
        else:
            shape = list(arr.shape)
            lines.append(f"{init.name} - constant {shape}")
            constants.append((init.name, shape))
    unheld = [n for n, _ in params if n not in held]
    several = {n: h for n, h in held.items() if len(h) > 1}
    return lines, unheld, several, constants


def write_names(family, exporter, model, proto, buffer_snapshots):
    lines, unheld, several, constants = map_initializers(
        model, proto, buffer_snapshots)
    stem = f"{family}.{exporter}"
    with open(out_path(stem + ".names"), "w") as f:
        f.write(f"# {stem}.onnx float initializer -> PyTorch parameter "
                "(same|transposed), or - buffer|constant\n")
        for line in lines:
            f.write(line + "\n")
        for pname in unheld:
            f.write(f"# parameter {pname} is held by no initializer\n")
        for pname, h in several.items():
            f.write(f"# parameter {pname} is held by {len(h)} initializers: "
                    f"{', '.join(n + ' ' + l for n, l in h)}\n")
    # The same pairs for a two-column reader: "<initializer> <parameter>",
    # "^T" after the parameter where the initializer holds it transposed.
    with open(out_path(stem + ".map"), "w") as f:
        for line in lines:
            init, pname, layout = line.split(" ", 2)
            if pname != "-":
                suffix = {"same": "", "transposed": "^T"}[layout]
                f.write(f"{init} {pname}{suffix}\n")
    return {"unheld": unheld, "several": several, "constants": constants}


# ---------------------------------------------------------------- summary

ONNX_TYPES = {v: k.lower() for k, v in onnx.TensorProto.DataType.items()}


def value_text(value):
    t = value.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in t.shape.dim]
    return f"{value.name} {ONNX_TYPES[t.elem_type]} {dims}"


def op_counts(proto):
    return collections.Counter(
        (n.domain + "::" if n.domain else "") + n.op_type
        for n in proto.graph.node)


def write_summary(family, exporter, proto, path, notes):
    counts = op_counts(proto)
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}"
                       for o in proto.opset_import)
    inits = list(proto.graph.initializer)
    out = [f"{family}.{exporter}.onnx: {os.path.getsize(path)} bytes",
           f"producer: {proto.producer_name} {proto.producer_version}, "
           f"ir_version {proto.ir_version}, opsets: {opsets}",
           "inputs:"]
    out += [f"  {value_text(v)}" for v in proto.graph.input]
    out += ["outputs:"]
    out += [f"  {value_text(v)}" for v in proto.graph.output]
    out += [f"initializers: {len(inits)}",
            f"functions: {len(proto.functions)}",
            f"nodes: {len(proto.graph.node)}",
            "op types:"]
    out += [f"  {op} {n}" for op, n in sorted(counts.items(),
                                                key=lambda kv: (-kv[1],
                                                                kv[0]))]
    bn = [n for n in proto.graph.node if n.op_type == "BatchNormalization"]
    if bn:
        modes = collections.Counter(
            next((a.i for a in n.attribute if a.name == "training_mode"), 0)
            for n in bn)
        out.append("BatchNormalization training_mode: " + ", ".join(
            f"{k}: {v} nodes" for k, v in sorted(modes.items())))
    for note in notes:
        out.append(f"note: {note}")
    with open(out_path(f"{family}.{exporter}.summary.txt"), "w") as f:
        f.write("\n".join(out) + "\n")


# ---------------------------------------------------------------- references


def cross_entropy(logits, labels):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           labels.reshape(-1))


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params.values():
            p -= lr * p.grad


def train(model, inputs, labels, chunks, lr):
    """STEPS SGD steps (learning rate lr) on one batch; each step's loss is
    the mean cross-entropy over the whole batch, computed in `chunks`
    micro-batches (each chunk's mean weighted by its share of the batch,
    gradients accumulated). Returns (losses, first gradients, final
    parameters)."""
    params = dict(model.named_parameters())
    losses, first = [], None
    xs = list(inputs.values())
    for _ in range(STEPS):
        model.zero_grad(set_to_none=True)
        total = 0
        parts = zip(*[x.chunk(chunks) for x in xs], labels.chunk(chunks))
        for *x, y in parts:
            loss = cross_entropy(model(*x), y) * (y.numel() / labels.numel())
            loss.backward()
            total = total + loss.detach()
        losses.append(total)
        missing = [n for n, p in params.items() if p.grad is None]
        if missing:
            raise RuntimeError(f"no gradient for {missing}")
        if first is None:
            first = {n: p.grad.detach().clone() for n, p in params.items()}
        sgd_step(params, lr)
    final = {n: p.detach().clone() for n, p in params.items()}
    return losses, first, final


def sampled(tensors, limit):
    """Tensors over `limit` elements become SAMPLES strided elements, under
    their name + '@s4096'."""
    out = {}
    for name, arr in tensors.items():
        n = arr.size
        if n > limit:
            idx = np.arange(SAMPLES, dtype=np.int64) * n // SAMPLES
            out[f"{name}@s{SAMPLES}"] = np.ascontiguousarray(
                arr.reshape(-1)[idx])
        else:
            out[name] = arr.copy()  # keeps 0-d arrays 0-d
    return out


def versions():
    return {"torch": torch.__version__,
            "transformers": transformers.__version__,
            "torchvision": torchvision.__version__,
            "onnx": onnx.__version__}


ST_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}


def write_safetensors(path, tensors, metadata):
    """Plain safetensors, byte for byte the same for the same tensors
    (the safetensors package orders the metadata as a hash map does):
      u64 little-endian N | N bytes of JSON header | raw tensor bytes
    tensors sorted by name, the header padded with spaces to a multiple
    of 8 bytes."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        arr = tensors[name]
        if arr.dtype not in ST_DTYPES:
            raise TypeError(f"{path}: {name} has dtype {arr.dtype}")
        data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"),
                                                copy=False).tobytes()
        header[name] = {"dtype": ST_DTYPES[arr.dtype],
                        "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = dict(sorted(metadata.items()))
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def compute(family, model, inputs, labels, train_mode):
    """Everything the reference holds that PyTorch computes, as numpy
    arrays of the model's dtype. Trains `model` itself (STEPS SGD steps)."""
    computed = {}
    model.train(train_mode)
    micro = copy.deepcopy(model) if train_mode else None

    with torch.no_grad():
        computed["logits"] = model(*inputs.values()).numpy()
    if family in NOMASK:
        nomask = dict(inputs, attention_mask=torch.ones_like(
            inputs["attention_mask"]))
        with torch.no_grad():
            logits = model(*nomask.values())
        computed["logits_nomask"] = logits.numpy()
        computed["loss_nomask"] = cross_entropy(logits, labels).numpy()
    lr = lr_of(family)
    losses, grads, final = train(model, inputs, labels, 1, lr)
    computed["loss"] = losses[0].numpy()
    for k, loss in enumerate(losses):
        computed[f"loss3.{k}"] = loss.numpy()
    computed.update({f"grad.{n}": g.numpy() for n, g in grads.items()})
    computed.update({f"param3.{n}": p.numpy() for n, p in final.items()})
    if micro is not None:
        losses, grads, final = train(micro, inputs, labels, MICRO, lr)
        computed["m4.loss"] = losses[0].numpy()
        for k, loss in enumerate(losses):
            computed[f"m4.loss3.{k}"] = loss.numpy()
        computed.update({f"m4.grad.{n}": g.numpy() for n, g in grads.items()})
        computed.update({f"m4.param3.{n}": p.numpy()
                         for n, p in final.items()})
    return computed


def drop_non_finite(family, computed):
    """The 3-step results of the micro-batched run may blow up (batch norm
    over 2 values per channel); drop those, and fail on anything else that
    is not finite. Returns a sentence for the metadata, or None."""
    bad = [k for k, a in computed.items() if not np.isfinite(a).all()]
    if not bad:
        return None
    if any(not k.startswith(("m4.param3.", "m4.loss3.")) for k in bad):
        raise RuntimeError(f"{family}: not finite: {bad}")
    drop = [k for k in computed if k.startswith("m4.param3.")] + \
        [k for k in bad if k.startswith("m4.loss3.")]
    for k in drop:
        del computed[k]
    losses = sorted(k for k in bad if k.startswith("m4.loss3."))
    return (f"m4.param3.* and {', '.join(losses) or 'no loss'} omitted: "
            f"not finite in float32 ({len(bad)} tensors)")


def precision(computed, shadow, limit):
    """Per stored key (key, ||f32 - f64|| / ||f64||, ||f64||,
    ||f32 - f64||), the float64 run being the same computation on a float64
    copy of the model; then a one-line verdict against PRECISION (tensors
    with ||f64|| < ZERO_NORM, zero in exact arithmetic, are held to
    ||f32 - f64|| < ZERO_FLOOR instead) and the keys over it."""
    rows = []
    for name in sorted(computed):
        a = computed[name].astype(np.float64)
        b = shadow[name]
        key = name if a.size <= limit else f"{name}@s{SAMPLES}"
        norm = float(np.linalg.norm(b))
        diff = float(np.linalg.norm(a - b))
        rel = diff / norm if norm > 0 else diff
        rows.append((key, rel, norm, diff))
    zero = [r for r in rows if r[2] < ZERO_NORM]
    rest = [r for r in rows if r[2] >= ZERO_NORM]
    over = [r[0] for r in rest if not r[1] < PRECISION] + \
        [r[0] for r in zero if not r[3] < ZERO_FLOOR]
    worst = max(rest, key=lambda r: r[1])
    verdict = (f"worst {worst[1]:.3e} ({worst[0]}); {len(zero)} keys zero in "
               f"exact arithmetic (||f64|| < {ZERO_NORM:g})")
    if zero:
        verdict += f", max ||f32 - f64|| {max(r[3] for r in zero):.3e}"
    verdict += (f"; bound {PRECISION:g} (those: ||f32 - f64|| < "
                f"{ZERO_FLOOR:g}) " +
                (f"exceeded by {len(over)} of {len(rows)} keys" if over
                 else f"met by all {len(rows)} keys"))
    return rows, verdict, over


def write_reference(family, model, inputs, labels, train_mode):
    """<family>.ref.safetensors: computed on `model` itself (the exported
    instance), which ends STEPS SGD steps further. Also
    <family>.ref.precision.txt: how far each float32 result is from the same
    computation in float64 (what a tolerance can hope for)."""
    limit = SAMPLE_OVER.get(family, SAMPLE_OVER_DEFAULT)
    fed = {k: v.numpy() for k, v in inputs.items()}
    fed["labels"] = labels.numpy()
    wide = copy.deepcopy(model).double()
    wide_inputs = {k: v.double() if v.is_floating_point() else v
                   for k, v in inputs.items()}
    computed = compute(family, model, inputs, labels, train_mode)
    shadow = compute(family, wide, wide_inputs, labels, train_mode)
    omitted = drop_non_finite(family, computed)

    tensors = dict(fed, **sampled(computed, limit))
    metadata = dict(versions(), family=family, lr=str(lr_of(family)),
                    steps=str(STEPS), batch=str(batch_of(family)),
                    seed=str(SEEDS[family]),
                    sampling=f"tensors over {limit} elements (inputs and "
                    f"labels excepted): x.flatten()[i * n // {SAMPLES}] for "
                    f"i < {SAMPLES}, name + '@s{SAMPLES}'")
    if train_mode:
        metadata["micro_batches"] = str(MICRO)
    if omitted:
        metadata["omitted"] = omitted
    path = out_path(f"{family}.ref.safetensors")
    write_safetensors(path, tensors, metadata)
    # Read back with the safetensors package: every tensor bit for bit.
    back = safetensors.numpy.load_file(path)
    with safetensors.safe_open(path, "np") as f:
        back_meta = f.metadata()
    if back_meta != metadata or sorted(back) != sorted(tensors) or any(
            back[k].dtype != tensors[k].dtype or
            back[k].shape != tensors[k].shape or
            back[k].tobytes() != tensors[k].tobytes() for k in tensors):
        raise RuntimeError(f"{path}: round trip changed the tensors")

    rows, verdict, over = precision(computed, shadow, limit)
    with open(out_path(f"{family}.ref.precision.txt"), "w") as f:
        f.write(f"# {family}.ref.safetensors key, ||f32 - f64|| / ||f64||, "
                "||f64||, ||f32 - f64|| (f64: the same computation on a "
                "float64 copy of the model; sampled keys measured on the "
                "whole tensor)\n")
        f.write(f"# {verdict}\n")
        if omitted:
            f.write(f"# {omitted}\n")
        for key, rel, norm, diff in rows:
            f.write(f"{key} {rel:.3e} {norm:.3e} {diff:.3e}\n")
    return computed, omitted, verdict, over


# ---------------------------------------------------------------- main


def run_onnxruntime(path, inputs):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options,
                                   providers=["CPUExecutionProvider"])
    feed = {k: v.numpy() for k, v in inputs.items()}
    (logits,) = session.run(["logits"], feed)
    return logits


def make_family(family):
    torch.manual_seed(SEEDS[family])
    gen = torch.Generator().manual_seed(SEEDS[family] + 1000)
    model, inputs, labels = MAKERS[family](gen)
    jitter(model)
    check_no_dropout(model)
    train_mode = has_batch_norm(model)
    model.train(train_mode)

    exports = {}
    start = buffers_of(model)
    for exporter in EXPORTERS:
        path = out_path(f"{family}.{exporter}.onnx")
        stale = [path] + [out_path(f"{family}.{exporter}.{ext}")
                          for ext in ("names", "map", "summary.txt")]
        for old in stale:
            if os.path.exists(old):
                os.remove(old)
        if (family, exporter) in SKIPPED:
            print(f"{family}.{exporter}.onnx: not written: "
                  f"{SKIPPED[family, exporter]}")
            continue
        notes = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                EXPORT[exporter](model, inputs, path, train_mode, notes)
        except Exception as err:
            print(f"{family}.{exporter}.onnx: FAILED: {first_line(err)}")
            for old in stale:
                if os.path.exists(old):
                    os.remove(old)
            continue
        finally:
            after = buffers_of(model)
            restore_buffers(model, start)
            model.train(train_mode)
        proto = onnx.load(path)
        onnx.checker.check_model(proto)
        found = write_names(family, exporter, model, proto, [start, after])
        if train_mode and not any(n.op_type == "BatchNormalization"
                                  for n in proto.graph.node):
            notes.append("no BatchNormalization left: batch norm exported "
                         "in inference mode and folded into the Conv "
                         "weights and biases (training semantics lost)")
        if found["unheld"]:
            notes.append("parameters held by no initializer: " +
                         ", ".join(found["unheld"]))
        for pname, held in found["several"].items():
            notes.append(f"parameter {pname} held by {len(held)} "
                         "initializers: " +
                         ", ".join(f"{n} ({l})" for n, l in held))
        exports[exporter] = (path, proto, notes)

    computed, omitted, verdict, over = write_reference(
        family, model, inputs, labels, train_mode)
    if omitted:
        print(f"{family}.ref.safetensors: {omitted}")
    print(f"{family}.ref.precision.txt: {verdict}")
    if over:
        print(f"  over the bound: {', '.join(over[:8])}"
              f"{' ...' if len(over) > 8 else ''}")
    for exporter, (path, proto, notes) in exports.items():
        got = run_onnxruntime(path, inputs)
        want = computed["logits"]
        diff = float(np.abs(got - want).max())
        notes.insert(0, f"onnxruntime {ort.__version__} vs PyTorch logits: "
                     f"max |diff| {diff:.3g} (max |logits| "
                     f"{float(np.abs(want).max()):.3g})")
        write_summary(family, exporter, proto, path, notes)
        print(f"{family}.{exporter}.onnx: {os.path.getsize(path)} bytes")
        for note in notes:
            print(f"  {note}")
    print(f"{family}.ref.safetensors: loss {float(computed['loss']):.6f}, "
          f"{os.path.getsize(out_path(family + '.ref.safetensors'))} bytes")


def main():
    families = sys.argv[1:] or list(MAKERS)
    unknown = [f for f in families if f not in MAKERS]
    if unknown:
        sys.exit(f"unknown families {unknown}; known: {list(MAKERS)}")
    torch.set_num_threads(1)
    print(", ".join(f"{k} {v}" for k, v in versions().items()) +
          f", onnxscript {__import__('onnxscript').__version__}, "
          f"onnxruntime {ort.__version__}")
    for family in families:
        make_family(family)


if __name__ == "__main__":
    main()
