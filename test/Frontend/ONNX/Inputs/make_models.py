"""Make the small ONNX models used by the ONNX frontend tests.

Writes, into the folder this script lives in:
  mlp.onnx, gpt.onnx, gpt_mha.onnx      -- good models exported from PyTorch
  mlp.golden.safetensors, gpt.golden.safetensors,
  gpt_mha.golden.safetensors            -- PyTorch input, labels, logits,
                                           loss and first-step gradients
                                           for each good model
  mlp.mse.golden.safetensors            -- the MLP as a regressor (MSE) in
                                           PyTorch
  mlp_dropout.onnx, mlp_dropout.data.safetensors
                                        -- an MLP with dropout exported in
                                           training mode, and a batch
  cnn.onnx, cnn.golden.safetensors      -- a residual CNN with batch norm
                                           exported in training mode, and
                                           PyTorch's training of it (see
                                           make_cnn)
  cnn_eval.onnx, cnn_eval.golden.safetensors
                                        -- a CNN with batch norm and dropout
                                           exported in inference mode, and
                                           PyTorch's eval-mode logits (see
                                           make_cnn_eval)
  truncated.onnx, not_onnx.onnx, unsupported_op.onnx, unsupported_ops.onnx,
  one_class.onnx, dynamic_dim.onnx,
  shape_mismatch.onnx, bad_initializer.onnx,
  bn_inference.onnx, conv_groups.onnx  -- deliberately bad inputs
  pad_nonzero.onnx, conv1d.onnx         -- a Pad and a 1-D Conv (once refused)
  seq_cnn.onnx, seq_cnn_dynamo.onnx, seq_cnn.golden.safetensors
                                        -- a 1-D CNN with every Pad mode, a
                                           flip and remainders, from both
                                           exporters, and PyTorch's first step
                                           (make_seq_cnn: needs pip's torch,
                                           for the torch.export-based one)

Needs Debian's python3-torch (1.13) and python3-onnx:
  apt-get install python3-torch python3-onnx python3-numpy
  /usr/bin/python3 make_models.py [maker...]   (e.g. make_cnn_eval: only
                                                 that maker's files)

CI never runs this script; the files it writes are committed.
"""

import copy
import json
import math
import os
import struct
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17

# GPT sizes.
VOCAB = 32
D_MODEL = 32
N_HEAD = 4
SEQ = 16
BATCH = 2


def out_path(name):
    return os.path.join(HERE, name)


def jitter(model):
    """Nudge every parameter so no two are equal.

    Fresh LayerNorm weights (all ones) and zero biases are identical across
    blocks, and the exporter would merge them into one shared initializer.
    """
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))


def export(model, example, name, fold=True, **options):
    """Jitter, then export model to name; returns the model."""
    model.eval()
    jitter(model)
    torch.onnx.export(
        model,
        (example,),
        out_path(name),
        input_names=["input"],
        output_names=["logits"],
        opset_version=OPSET,
        do_constant_folding=fold,
        **options,
    )
    onnx.checker.check_model(onnx.load(out_path(name)))
    return model


# ---------------------------------------------------------------- safetensors
#
# Debian has no python3-safetensors, so write the format by hand:
#   u64 little-endian N | N bytes of JSON header | raw tensor bytes
# The header maps each tensor name to {"dtype", "shape", "data_offsets"}
# (offsets relative to the first byte after the header) and holds string
# metadata under "__metadata__". Tensors are stored sorted by name and the
# header is padded with spaces to a multiple of 8 bytes.

ST_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}
ST_NUMPY = {"F32": np.dtype("<f4"), "I64": np.dtype("<i8")}


def write_safetensors(path, tensors, metadata):
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        arr = np.asarray(tensors[name])
        if arr.dtype not in ST_DTYPES:
            raise TypeError(f"{path}: {name} has dtype {arr.dtype}")
        dtype = ST_DTYPES[arr.dtype]
        data = np.ascontiguousarray(arr, dtype=ST_NUMPY[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def read_safetensors(path):
    """Return ({name: numpy array}, metadata); strict about the layout."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    if n % 8 or 8 + n > len(raw):
        raise ValueError(f"{path}: bad header length {n}")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    body = raw[8 + n:]
    tensors = {}
    expect = 0
    for name in sorted(header, key=lambda k: header[k]["data_offsets"][0]):
        info = header[name]
        begin, end = info["data_offsets"]
        dtype = ST_NUMPY[info["dtype"]]
        count = int(np.prod(info["shape"], dtype=np.int64))
        if begin != expect or end - begin != count * dtype.itemsize:
            raise ValueError(f"{path}: bad data_offsets for {name}")
        tensors[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(
            info["shape"])
        expect = end
    if expect != len(body):
        raise ValueError(f"{path}: {len(body) - expect} trailing bytes")
    return tensors, metadata


# ---------------------------------------------------------------- golden data
#
# For each good model: one input batch, labels, the PyTorch logits, the mean
# cross-entropy loss and d loss / d initializer for every trainable ONNX
# initializer, all computed on the very module instance that was exported.
# Inputs come from their own generator so the global RNG stream, and hence
# the .onnx files, are the same as without golden data.

GOLDEN_SEED = 1234


def map_initializers(model, onnx_file):
    """Map ONNX initializers to the PyTorch parameters they hold.

    Returns (mapping, skipped): mapping is a list of
    (onnx name, parameter name, transposed?) and skipped a list of
    (onnx name, reason). Matching is by exact value, as the exporter
    renames and transposes parameters (Linear weights on 3-D inputs become
    "onnx::MatMul_N" = weight.T).
    """
    params = [(n, p.detach().numpy()) for n, p in model.named_parameters()
              if p.requires_grad]
    buffers = [(n, b.detach().numpy()) for n, b in model.named_buffers()]
    mapping, skipped = [], []
    for init in onnx.load(onnx_file).graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype.kind != "f":
            skipped.append((init.name, f"{arr.dtype} {list(arr.shape)}, "
                            "not a float"))
            continue
        if not np.isfinite(arr).all():
            skipped.append((init.name, f"{arr.dtype} {list(arr.shape)}, "
                            "non-finite float buffer (additive mask)"))
            continue
        hits = []
        for pname, pa in params:
            if pa.shape == arr.shape and np.array_equal(pa, arr):
                hits.append((init.name, pname, False))
            if pa.ndim == 2 and pa.T.shape == arr.shape and \
                    np.array_equal(pa.T, arr):
                hits.append((init.name, pname, True))
        if not hits:
            bufs = [b for b, ba in buffers
                    if ba.shape == arr.shape and np.array_equal(ba, arr)]
            if bufs:  # equal buffers (every block's mask) share one
                skipped.append((init.name, f"float buffer {bufs[0]}"))
                continue
            raise RuntimeError(
                f"{onnx_file}: float initializer {init.name} "
                f"{list(arr.shape)} matches no parameter")
        if len(hits) > 1:
            raise RuntimeError(
                f"{onnx_file}: initializer {init.name} matches several "
                f"parameters: {hits}")
        onnx_name, pname, transposed = hits[0]
        if onnx_name in dict(params) and onnx_name != pname:
            raise RuntimeError(
                f"{onnx_file}: initializer {onnx_name} matches {pname}")
        mapping.append(hits[0])
    used = [pname for _, pname, _ in mapping]
    for pname, _ in params:
        if used.count(pname) != 1:
            raise RuntimeError(
                f"{onnx_file}: parameter {pname} is held by "
                f"{used.count(pname)} initializers, want exactly one")
    return mapping, skipped


def write_golden(model, onnx_name, inputs, labels):
    """Write <stem>.golden.safetensors next to <stem>.onnx."""
    stem = onnx_name[:-len(".onnx")]
    mapping, skipped = map_initializers(model, out_path(onnx_name))

    named = dict(model.named_parameters())
    logits = model(inputs)
    loss = nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    pnames = [pname for _, pname, _ in mapping]
    grads = torch.autograd.grad(loss, [named[p] for p in pnames])

    tensors = {
        "input": inputs.numpy(),
        "labels": labels.numpy(),
        "logits": logits.detach().numpy(),
        "loss": loss.detach().numpy(),
    }
    for (oname, pname, transposed), g in zip(mapping, grads):
        g = g.detach().numpy()
        tensors["grad." + oname] = np.ascontiguousarray(g.T if transposed
                                                        else g)
    for name, arr in tensors.items():
        if arr.dtype == np.float32 and not np.isfinite(arr).all():
            raise RuntimeError(f"{stem}: {name} is not finite")

    path = out_path(stem + ".golden.safetensors")
    metadata = {"producer": "make_models.py", "torch": torch.__version__}
    write_safetensors(path, tensors, metadata)

    # Round trip: the reader must give back every tensor bit for bit.
    back, back_meta = read_safetensors(path)
    if back_meta != metadata or sorted(back) != sorted(tensors):
        raise RuntimeError(f"{path}: round trip lost names or metadata")
    for name, arr in tensors.items():
        got = back[name]
        if got.dtype != arr.dtype or got.shape != arr.shape or \
                got.tobytes() != arr.tobytes():
            raise RuntimeError(f"{path}: round trip changed {name}")

    print(f"{stem}.golden.safetensors: loss {loss.item():.6f}, "
          f"{len(mapping)} gradients, {os.path.getsize(path)} bytes")
    for oname, pname, transposed in mapping:
        if oname != pname or transposed:
            print(f"  grad.{oname} <- {pname}{'.T' if transposed else ''}")
    for oname, why in skipped:
        print(f"  skipped {oname}: {why}")


# ---------------------------------------------------------------- MLP


def make_mlp():
    model = nn.Sequential(
        nn.Linear(16, 32),
        nn.ReLU(),
        nn.Linear(32, 32),
        nn.Tanh(),
        nn.Linear(32, 32),
        nn.Sigmoid(),
        nn.Linear(32, 32),
        nn.GELU(),  # default: exact erf form
        nn.Linear(32, 10),
    )
    export(model, torch.randn(8, 16), "mlp.onnx")
    gen = torch.Generator().manual_seed(GOLDEN_SEED)
    inputs = torch.randn(8, 16, generator=gen)
    labels = torch.randint(0, 10, (8,), generator=gen)
    write_golden(model, "mlp.onnx", inputs, labels)


# ---------------------------------------------------------------- GPT


class CausalSelfAttention(nn.Module):
    """Hand-written attention: one qkv Linear, split, masked softmax."""

    def __init__(self, d, n_head, seq):
        super().__init__()
        self.d = d
        self.n_head = n_head
        self.head_dim = d // n_head
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, x):
        B, T, C = x.shape
        H, hd = self.n_head, self.head_dim
        q, k, v = self.qkv(x).split(self.d, dim=-1)
        q = q.reshape(B, T, H, hd).transpose(1, 2)
        k = k.reshape(B, T, H, hd).transpose(1, 2)
        v = v.reshape(B, T, H, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.mask == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class MHAttention(nn.Module):
    """Attention through nn.MultiheadAttention with a causal mask."""

    def __init__(self, d, n_head, seq, float_mask):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, n_head, batch_first=True)
        upper = torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1)
        if float_mask:
            mask = torch.zeros(seq, seq).masked_fill(upper, float("-inf"))
        else:
            mask = upper
        self.register_buffer("mask", mask)

    def forward(self, x):
        y, _ = self.mha(x, x, x, attn_mask=self.mask, need_weights=False)
        return y


class MLPBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.proj(self.act(self.fc(x)))


class Block(nn.Module):
    def __init__(self, attn, d):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = attn
        self.ln2 = nn.LayerNorm(d)
        self.mlp = MLPBlock(d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, make_attn, n_layer):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, D_MODEL)
        self.pos_emb = nn.Parameter(0.02 * torch.randn(SEQ, D_MODEL))
        # A ModuleList (not a Sequential) so node names read
        # "/blocks.0/ln1/LayerNormalization" rather than
        # "/blocks/blocks.0/ln1/LayerNormalization".
        self.blocks = nn.ModuleList(
            [Block(make_attn(), D_MODEL) for _ in range(n_layer)]
        )
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def example_tokens():
    return torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.int64)


def golden_tokens(seed):
    """Token ids [BATCH, SEQ] and their next-token labels [BATCH, SEQ]."""
    gen = torch.Generator().manual_seed(seed)
    seq = torch.randint(0, VOCAB, (BATCH, SEQ + 1), dtype=torch.int64,
                        generator=gen)
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def make_gpt():
    model = GPT(lambda: CausalSelfAttention(D_MODEL, N_HEAD, SEQ), n_layer=4)
    export(model, example_tokens(), "gpt.onnx")
    write_golden(model, "gpt.onnx", *golden_tokens(GOLDEN_SEED + 1))


def make_gpt_tied():
    """GPT-2's weight tying: the head's weight is the token embedding, one
    parameter read by the first layer and the last (gpt_tied.onnx holds it
    once, read by the Gather and, through a Transpose, the head's MatMul).
    Exported without constant folding: folding writes the head's transposed
    weight as an initializer of its own, which unties the two."""
    torch.manual_seed(GOLDEN_SEED + 40)
    model = GPT(lambda: CausalSelfAttention(D_MODEL, N_HEAD, SEQ), n_layer=2)
    model.head.weight = model.tok_emb.weight
    export(model, example_tokens(), "gpt_tied.onnx", fold=False)
    write_golden(model, "gpt_tied.onnx", *golden_tokens(GOLDEN_SEED + 41))


def make_gpt_mha():
    """Try the boolean causal mask first, fall back to a float -inf mask."""
    for float_mask in (False, True):
        model = GPT(lambda: MHAttention(D_MODEL, N_HEAD, SEQ, float_mask),
                    n_layer=2)
        try:
            export(model, example_tokens(), "gpt_mha.onnx")
        except Exception as err:  # exporter or checker failure
            print(f"gpt_mha (float_mask={float_mask}) failed: {err}")
            continue
        print(f"gpt_mha exported with {'float' if float_mask else 'bool'} mask")
        write_golden(model, "gpt_mha.onnx", *golden_tokens(GOLDEN_SEED + 2))
        return
    raise RuntimeError("could not export gpt_mha.onnx")


# ---------------------------------------------------------------- GPT, other opsets
#
# The GPT of gpt.onnx exported again, at other opsets and by other
# exporters (make_pip_exports.py), with the very weights stored in gpt.onnx:
# a gradient test compares gpipe's training of each export with its training
# of gpt.onnx. Each export gets <stem>.names, the lines
# "<initializer> <gpt.onnx initializer>" for every trainable initializer,
# as the exporters name the transposed Linear weights differently
# (compare-safetensors.py --map).

GPT_OPSETS = (14, 16)


def gpt_from_onnx(onnx_file=None):
    """The GPT of make_gpt with the weights stored in gpt.onnx.

    Initializers named like a parameter hold it as is; the others are the
    transposed weights of Linear layers, found through the MatMul node that
    reads them ("/blocks.0/attn/qkv/MatMul" reads blocks.0.attn.qkv.weight.T).
    Leaves the global RNG as it was.
    """
    onnx_file = onnx_file or out_path("gpt.onnx")
    with torch.random.fork_rng():
        model = GPT(lambda: CausalSelfAttention(D_MODEL, N_HEAD, SEQ),
                    n_layer=4)
    graph = onnx.load(onnx_file).graph
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    params = dict(model.named_parameters())
    loaded = set()
    with torch.no_grad():
        for init in graph.initializer:
            arr = numpy_helper.to_array(init)
            if arr.dtype.kind != "f" or not np.isfinite(arr).all():
                continue
            if init.name in params:
                pname, value = init.name, arr
            else:
                users = [n for n in readers.get(init.name, [])
                         if n.op_type == "MatMul" and n.input[1] == init.name]
                if len(users) != 1:
                    raise RuntimeError(f"{onnx_file}: cannot place "
                                       f"initializer {init.name}")
                scope = users[0].name.strip("/").split("/")[:-1]
                pname, value = ".".join(scope) + ".weight", arr.T
            params[pname].copy_(torch.from_numpy(np.ascontiguousarray(value)))
            loaded.add(pname)
    if loaded != set(params):
        raise RuntimeError(f"{onnx_file}: no value for "
                           f"{sorted(set(params) - loaded)}")
    model.eval()
    return model


def write_gpt_names(file_name):
    """Writes <stem>.names: each trainable initializer of file_name and the
    initializer of gpt.onnx holding the same value."""
    def trainable(path):
        out = []
        for init in onnx.load(path).graph.initializer:
            arr = numpy_helper.to_array(init)
            if arr.dtype.kind == "f" and arr.ndim > 0 and \
                    np.isfinite(arr).all():
                out.append((init.name, arr))
        return out
    ref = trainable(out_path("gpt.onnx"))
    lines = []
    for name, arr in trainable(out_path(file_name)):
        hits = [r for r, ra in ref
                if ra.shape == arr.shape and np.array_equal(ra, arr)]
        if len(hits) != 1:
            raise RuntimeError(f"{file_name}: initializer {name} matches "
                               f"{len(hits)} initializers of gpt.onnx")
        lines.append(f"{name} {hits[0]}\n")
    if len(lines) != len(ref):
        raise RuntimeError(f"{file_name}: {len(lines)} trainable "
                           f"initializers, gpt.onnx has {len(ref)}")
    stem = file_name[:-len(".onnx")]
    with open(out_path(stem + ".names"), "w") as f:
        f.write(f"# {file_name} initializer -> gpt.onnx initializer\n")
        f.writelines(lines)


def make_gpt_opsets():
    """gpt_opset14.onnx, gpt_opset16.onnx: before opset 17 the exporter
    decomposes LayerNorm into ReduceMean, Sub, Pow, Sqrt, Div."""
    model = gpt_from_onnx()
    for opset in GPT_OPSETS:
        name = f"gpt_opset{opset}.onnx"
        torch.onnx.export(model, (example_tokens_fixed(),), out_path(name),
                          input_names=["input"], output_names=["logits"],
                          opset_version=opset, do_constant_folding=True)
        onnx.checker.check_model(onnx.load(out_path(name)))
        write_gpt_names(name)
        print(f"{name}: {os.path.getsize(out_path(name))} bytes")


def example_tokens_fixed():
    """An export example that does not touch the global RNG."""
    return torch.arange(BATCH * SEQ, dtype=torch.int64).reshape(
        BATCH, SEQ) % VOCAB


# ---------------------------------------------------------------- LogSoftmax, NLL
#
# An MLP with LeakyReLUs whose scores end in LogSoftmax, three ways:
#   mlp_logsoftmax.onnx -- the LogSoftmax is the output: gpipe trains it as
#                          logits with its cross-entropy (the same loss:
#                          cross-entropy of log-probabilities is the NLL);
#   mlp_sce.onnx        -- exported with nll_loss: the exporter fuses
#                          LogSoftmax + NLL into SoftmaxCrossEntropyLoss
#                          (ignore_index -100), with the labels as a second
#                          graph input: the graph's own loss;
#   mlp_nll.onnx        -- mlp_logsoftmax.onnx with a
#                          NegativeLogLikelihoodLoss of its output and a
#                          labels input added by hand (what exporters that
#                          do not fuse write).
# Golden data: PyTorch's cross-entropy of the LogSoftmax output, which
# equals nll_loss(log_softmax(scores)); mlp_nll.onnx shares the initializer
# names, and so the golden file, of mlp_logsoftmax.onnx.


class NLLWrapper(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, labels):
        return nn.functional.nll_loss(self.net(x), labels)


def make_mlp_nll():
    torch.manual_seed(GOLDEN_SEED + 40)
    net = nn.Sequential(
        nn.Linear(16, 32),
        nn.LeakyReLU(0.1),
        nn.Linear(32, 32),
        nn.LeakyReLU(),
        nn.Linear(32, 10),
        nn.LogSoftmax(dim=-1),
    )
    jitter(net)
    net.eval()
    example = torch.randn(8, 16)
    gen = torch.Generator().manual_seed(GOLDEN_SEED + 4)
    inputs = torch.randn(8, 16, generator=gen)
    labels = torch.randint(0, 10, (8,), generator=gen)
    torch.onnx.export(net, (example,), out_path("mlp_logsoftmax.onnx"),
                      input_names=["input"], output_names=["logits"],
                      opset_version=14, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(out_path("mlp_logsoftmax.onnx")))
    write_golden(net, "mlp_logsoftmax.onnx", inputs, labels)
    torch.onnx.export(NLLWrapper(net), (example, labels),
                      out_path("mlp_sce.onnx"),
                      input_names=["input", "labels"], output_names=["loss"],
                      opset_version=14, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(out_path("mlp_sce.onnx")))
    write_golden(net, "mlp_sce.onnx", inputs, labels)

    model = onnx.load(out_path("mlp_logsoftmax.onnx"))
    graph = model.graph
    graph.node.append(helper.make_node(
        "NegativeLogLikelihoodLoss", ["logits", "labels"], ["loss"],
        name="/loss/NegativeLogLikelihoodLoss"))
    graph.input.append(helper.make_tensor_value_info(
        "labels", TensorProto.INT64, [8]))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info(
        "loss", TensorProto.FLOAT, []))
    onnx.checker.check_model(model)
    onnx.save(model, out_path("mlp_nll.onnx"))


# ---------------------------------------------------------------- new ops, by hand


def save_model(nodes, name, inputs, outputs, initializers, file_name, opset,
               functions=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset),
                              helper.make_opsetid("local", 1)],
        producer_name="make_models.py", functions=list(functions))
    onnx.save(model, out_path(file_name))


def make_op_inputs():
    """Small graphs for the import tests of the reductions, LeakyRelu,
    LogSoftmax, Gelu, local functions and the NLL loss's refusals."""
    # Opset 13: ReduceMean's axes an attribute, ReduceSum's an input.
    axes = numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes")
    save_model(
        [helper.make_node("ReduceMean", ["input"], ["m"], name="/mean",
                          axes=[-1]),
         helper.make_node("ReduceSum", ["input", "axes"], ["s"], name="/sum",
                          keepdims=0),
         helper.make_node("ReduceSum", ["input"], ["all"], name="/sumall"),
         helper.make_node("Sub", ["input", "m"], ["c"], name="/center"),
         helper.make_node("LeakyRelu", ["c"], ["l"], name="/leaky",
                          alpha=0.2),
         helper.make_node("LogSoftmax", ["l"], ["output"], name="/logsm")],
        "reduce13", [float_input("input", [4, 6])],
        [float_input("output", [4, 6]), float_input("s", [4]),
         float_input("all", [1, 1])],
        [axes], "reduce_opset13.onnx", 13)
    # Opset 18: ReduceMean's axes an input; noop_with_empty_axes.
    axes = numpy_helper.from_array(np.array([0, 2], dtype=np.int64), "axes")
    save_model(
        [helper.make_node("ReduceMean", ["input", "axes"], ["m"],
                          name="/mean", keepdims=0),
         helper.make_node("ReduceMean", ["input"], ["same"], name="/noop",
                          noop_with_empty_axes=1),
         helper.make_node("Add", ["same", "input"], ["output"], name="/add")],
        "reduce18", [float_input("input", [2, 3, 4])],
        [float_input("m", [3]), float_input("output", [2, 3, 4])],
        [axes], "reduce_opset18.onnx", 18)
    # The axes attribute where opset 18 wants an input.
    save_model(
        [helper.make_node("ReduceMean", ["input"], ["output"], name="/mean",
                          axes=[1])],
        "reduce18_attr", [float_input("input", [2, 3])],
        [float_input("output", [2, 1])], [], "reduce_axes_attr.onnx", 18)
    # Opset 20's Gelu, exact and tanh.
    save_model(
        [helper.make_node("Gelu", ["input"], ["g"], name="/gelu"),
         helper.make_node("Gelu", ["g"], ["output"], name="/gelu_tanh",
                          approximate="tanh")],
        "gelu20", [float_input("input", [2, 3])],
        [float_input("output", [2, 3])], [], "gelu_tanh.onnx", 20)
    # A local function (LeakyRelu's alpha by reference) called twice, one
    # call nested in another function.
    leaky_node = helper.make_node("LeakyRelu", ["h"], ["y"], name="LeakyRelu")
    leaky_node.attribute.add(name="alpha", ref_attr_name="alpha",
                             type=onnx.AttributeProto.FLOAT)
    leaky = helper.make_function(
        "local", "ScaledLeaky", ["x", "w"], ["y"],
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="MatMul"),
         leaky_node],
        [helper.make_opsetid("", 17)], ["alpha"])
    outer = helper.make_function(
        "local", "Block", ["x", "w"], ["y"],
        [helper.make_node("ScaledLeaky", ["x", "w"], ["t"], domain="local",
                          name="inner", alpha=0.3),
         helper.make_node("Add", ["t", "x"], ["y"], name="Add")],
        [helper.make_opsetid("", 17)])
    w = numpy_helper.from_array(
        ((np.arange(64) % 5 - 2) / 10).astype(np.float32).reshape(8, 8), "w")
    save_model(
        [helper.make_node("ScaledLeaky", ["input", "w"], ["a"],
                          domain="local", name="/l0", alpha=0.1),
         helper.make_node("Block", ["a", "w"], ["output"], domain="local",
                          name="/b1")],
        "functions", [float_input("input", [4, 8])],
        [float_input("output", [4, 8])], [w], "functions.onnx", 17,
        [leaky, outer])
    # A function that calls itself.
    loop = helper.make_function(
        "local", "Loop", ["x"], ["y"],
        [helper.make_node("Loop", ["x"], ["y"], domain="local", name="again")],
        [helper.make_opsetid("", 17)])
    save_model(
        [helper.make_node("Loop", ["input"], ["output"], domain="local",
                          name="/loop")],
        "recursive", [float_input("input", [2])], [float_input("output", [2])],
        [], "recursive_function.onnx", 17, [loop])
    # Each function calls the one below it twice: 2^21 Relu nodes once
    # inlined, past the importer's limit.
    funcs = [helper.make_function(
        "local", "F0", ["x"], ["y"],
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_opsetid("", 17)])]
    for k in range(1, 22):
        funcs.append(helper.make_function(
            "local", f"F{k}", ["x"], ["y"],
            [helper.make_node(f"F{k - 1}", ["x"], ["t"], domain="local",
                              name="a"),
             helper.make_node(f"F{k - 1}", ["t"], ["y"], domain="local",
                              name="b")],
            [helper.make_opsetid("", 17)]))
    save_model(
        [helper.make_node("F21", ["input"], ["output"], domain="local",
                          name="/top")],
        "blowup", [float_input("input", [2])], [float_input("output", [2])],
        [], "function_blowup.onnx", 17, funcs)
    # NegativeLogLikelihoodLoss with a sum reduction: not gpipe's loss.
    w = numpy_helper.from_array(
        ((np.arange(40) % 7 - 3) / 10).astype(np.float32).reshape(8, 5), "w")
    labels = helper.make_tensor_value_info("labels", TensorProto.INT64, [4])
    loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
    save_model(
        [helper.make_node("MatMul", ["input", "w"], ["h"], name="/fc/MatMul"),
         helper.make_node("LogSoftmax", ["h"], ["lp"], name="/LogSoftmax",
                          axis=1),
         helper.make_node("NegativeLogLikelihoodLoss", ["lp", "labels"],
                          ["loss"], name="/nll", reduction="sum")],
        "nll_sum", [float_input("input", [4, 8]), labels], [loss], [w],
        "nll_sum.onnx", 14)
    # NLL over [N, C, T] scores: gpipe's classes are the last axis.
    shape = numpy_helper.from_array(np.array([4, 5, 1], dtype=np.int64),
                                    "shape")
    save_model(
        [helper.make_node("MatMul", ["input", "w"], ["h"], name="/fc/MatMul"),
         helper.make_node("Reshape", ["h", "shape"], ["h3"], name="/reshape"),
         helper.make_node("LogSoftmax", ["h3"], ["lp"], name="/LogSoftmax",
                          axis=1),
         helper.make_node("NegativeLogLikelihoodLoss", ["lp", "labels"],
                          ["loss"], name="/nll")],
        "nll_3d", [float_input("input", [4, 8]),
                   helper.make_tensor_value_info("labels", TensorProto.INT64,
                                                 [4, 1])],
        [loss], [w, shape], "nll_3d.onnx", 14)


# ---------------------------------------------------------------- bad inputs


def save_graph(nodes, name, inputs, outputs, initializers, file_name):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="make_models.py")
    # No onnx.checker here: these models are wrong on purpose.
    onnx.save(model, out_path(file_name))


def float_input(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def make_bad_inputs():
    with open(out_path("mlp.onnx"), "rb") as f:
        head = f.read(100)
    with open(out_path("truncated.onnx"), "wb") as f:
        f.write(head)

    with open(out_path("not_onnx.onnx"), "w") as f:
        f.write("this is not an onnx model\n")

    rng = np.random.default_rng(0)

    # Relu followed by an op the importer does not handle.
    save_graph(
        [helper.make_node("Relu", ["input"], ["r"], name="relu0"),
         helper.make_node("Hardmax", ["r"], ["output"], name="/hard/Hardmax")],
        "unsupported_op",
        [float_input("input", [4, 8])],
        [float_input("output", [4, 8])],
        [],
        "unsupported_op.onnx")

    # Three ops the importer does not handle, one of them twice: one error
    # lists them all.
    save_graph(
        [helper.make_node("Hardmax", ["input"], ["a"], name="/a/Hardmax"),
         helper.make_node("Relu", ["a"], ["b"], name="/b/Relu"),
         helper.make_node("Det", ["b"], ["c"], name="/c/Det"),
         helper.make_node("Hardmax", ["c"], ["d"], name="/d/Hardmax"),
         helper.make_node("Mod", ["d", "d"], ["output"], name="/e/Mod")],
        "unsupported_ops",
        [float_input("input", [4, 8])],
        [float_input("output", [4, 8])],
        [],
        "unsupported_ops.onnx")

    # An output whose last dimension is 1: a cross-entropy would take it as
    # one class (refused; --loss mse trains it).
    w = numpy_helper.from_array(
        ((np.arange(160) % 7 - 3) / 10).astype(np.float32).reshape(16, 10), "w")
    shape = numpy_helper.from_array(np.array([8, 10, 1], dtype=np.int64),
                                    "shape")
    save_graph(
        [helper.make_node("MatMul", ["input", "w"], ["h"], name="/fc/MatMul"),
         helper.make_node("Relu", ["h"], ["r"], name="/fc/Relu"),
         helper.make_node("Reshape", ["r", "shape"], ["output"],
                          name="/out/Reshape")],
        "one_class",
        [float_input("input", [8, 16])],
        [float_input("output", [8, 10, 1])],
        [w, shape],
        "one_class.onnx")

    # Symbolic batch dimension.
    w = numpy_helper.from_array(
        rng.standard_normal((8, 4)).astype(np.float32), "w")
    save_graph(
        [helper.make_node("MatMul", ["input", "w"], ["output"],
                          name="/fc/MatMul")],
        "dynamic_dim",
        [float_input("input", ["batch", 8])],
        [float_input("output", ["batch", 4])],
        [w],
        "dynamic_dim.onnx")

    # [4,8] x [5,3]: inner dimensions disagree.
    w = numpy_helper.from_array(
        rng.standard_normal((5, 3)).astype(np.float32), "w")
    save_graph(
        [helper.make_node("MatMul", ["input", "w"], ["output"],
                          name="/bad/MatMul")],
        "shape_mismatch",
        [float_input("input", [4, 8])],
        [float_input("output", [4, 3])],
        [w],
        "shape_mismatch.onnx")

    # Initializer claims [8,4] (32 floats) but holds only 10.
    # helper.make_tensor refuses a size mismatch, so fill the proto by hand.
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([8, 4])
    w.raw_data = rng.standard_normal(10).astype(np.float32).tobytes()
    save_graph(
        [helper.make_node("MatMul", ["input", "w"], ["output"],
                          name="/fc/MatMul")],
        "bad_initializer",
        [float_input("input", [4, 8])],
        [float_input("output", [4, 4])],
        [w],
        "bad_initializer.onnx")


def make_bad_cnn_inputs():
    rng = np.random.default_rng(1)

    def init(name, *shape):
        return numpy_helper.from_array(
            rng.standard_normal(shape).astype(np.float32), name)

    # A batch norm exported for inference (running statistics fixed).
    bn = [init("g", 4), init("b", 4), init("m", 4),
          numpy_helper.from_array(np.ones(4, np.float32), "v")]
    save_graph(
        [helper.make_node("BatchNormalization", ["input", "g", "b", "m", "v"],
                          ["output"], name="/bn/BatchNormalization",
                          training_mode=0)],
        "bn_inference", [float_input("input", [2, 4, 6, 6])],
        [float_input("output", [2, 4, 6, 6])], bn, "bn_inference.onnx")

    # Real padding in a Pad node.
    pads = numpy_helper.from_array(
        np.array([0, 0, 1, 1, 0, 0, 1, 1], dtype=np.int64), "pads")
    save_graph(
        [helper.make_node("Pad", ["input", "pads"], ["output"],
                          name="/pad/Pad")],
        "pad_nonzero", [float_input("input", [2, 4, 6, 6])],
        [float_input("output", [2, 4, 8, 8])], [pads], "pad_nonzero.onnx")

    # A 1-D convolution.
    save_graph(
        [helper.make_node("Conv", ["input", "w"], ["output"],
                          name="/conv/Conv", kernel_shape=[3])],
        "conv1d", [float_input("input", [2, 4, 10])],
        [float_input("output", [2, 8, 8])], [init("w", 8, 4, 3)],
        "conv1d.onnx")

    # Groups that do not divide the channels.
    save_graph(
        [helper.make_node("Conv", ["input", "w"], ["output"],
                          name="/conv/Conv", kernel_shape=[3, 3], group=3)],
        "conv_groups", [float_input("input", [2, 4, 6, 6])],
        [float_input("output", [2, 6, 4, 4])], [init("w", 6, 2, 3, 3)],
        "conv_groups.onnx")


# ---------------------------------------------------------------- CNN
#
# A small residual CNN with BatchNorm (the paper's image workload in
# miniature), exported in training mode. Its golden file holds, for one
# batch of CNN_BATCH images trained CNN_STEPS SGD steps at CNN_LR:
#   grad.<p>            first-step gradients, whole batch (M = 1)
#   param.<p>           parameters and running statistics after the steps
#   grad_m4.<p>, param_m4.<p>
#                       the same with the batch cut into 4 micro-batches:
#                       each chunk normalized with its own statistics and
#                       the loss the mean over the chunks of their mean
#                       cross-entropy (GPipe's semantics); each batch norm's
#                       running statistics follow everything it saw in the
#                       step (torchgpipe's deferred batch norm)
#   stats.<s>           running statistics after the first step (M = 1:
#                       PyTorch's own, on the full batch)

CNN_BATCH = 8
CNN_STEPS = 3
CNN_LR = 0.1


class CnnBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            # A projection with a bias and no batch norm (a bias before a
            # batch norm has a zero gradient, useless for a relative check).
            self.down = nn.Conv2d(cin, cout, 1, stride)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.block1 = CnnBlock(8, 8, 1)
        self.block2 = CnnBlock(8, 16, 2)
        self.pool = nn.AvgPool2d(2)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(self.block2(self.block1(self.stem(x))))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)


def cnn_loss(model, inputs, labels, chunks):
    """Mean over `chunks` equal chunks of each chunk's mean cross-entropy."""
    loss = 0.0
    for x, y in zip(inputs.chunk(chunks), labels.chunk(chunks)):
        loss = loss + nn.functional.cross_entropy(model(x), y) / chunks
    return loss


def cnn_train(model, inputs, labels, chunks):
    """CNN_STEPS SGD steps on one batch; returns (first gradients, running
    statistics after the first step, state after the last step).

    With one chunk the running statistics are PyTorch's own. With several,
    each batch norm's are updated once per step from every input it saw in
    the step's chunks (torchgpipe's deferred batch norm): the mean and the
    unbiased variance over all of them, with PyTorch's momentum."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    seen = {bn: [] for bn in bns}
    hooks = [bn.register_forward_pre_hook(
        lambda mod, args: seen[mod].append(args[0].detach().clone()))
        for bn in bns]
    first, stats = None, None
    for step in range(CNN_STEPS):
        before = {bn: (bn.running_mean.clone(), bn.running_var.clone())
                  for bn in bns}
        for bn in bns:
            seen[bn].clear()
        model.zero_grad()
        loss = cnn_loss(model, inputs, labels, chunks)
        loss.backward()
        with torch.no_grad():
            if first is None:
                first = {n: p.grad.detach().clone()
                         for n, p in model.named_parameters()}
                first["loss"] = loss.detach().clone()
            for p in model.parameters():
                p -= CNN_LR * p.grad
            if chunks > 1:
                for bn in bns:
                    x = torch.cat(seen[bn])
                    mean = x.mean(dim=(0, 2, 3))
                    var = x.var(dim=(0, 2, 3), unbiased=True)
                    m = bn.momentum
                    bn.running_mean.copy_((1 - m) * before[bn][0] + m * mean)
                    bn.running_var.copy_((1 - m) * before[bn][1] + m * var)
        if stats is None:
            stats = {n: b.detach().clone() for n, b in model.named_buffers()
                     if "running" in n}
    for h in hooks:
        h.remove()
    state = {n: t.detach().clone() for n, t in model.state_dict().items()
             if t.dtype == torch.float32}
    return first, stats, state


def make_cnn():
    # Its own seed: the file does not depend on the models made before it.
    torch.manual_seed(GOLDEN_SEED + 30)
    model = Cnn()
    jitter(model)
    with torch.no_grad():
        for name, b in model.named_buffers():
            if "running_mean" in name:
                b.add_(0.1 * torch.randn_like(b))
            elif "running_var" in name:
                b.mul_(1.0 + 0.2 * torch.rand_like(b))
    initial = copy.deepcopy(model.state_dict())
    example = torch.randn(CNN_BATCH, 3, 16, 16)
    torch.onnx.export(
        model, (example,), out_path("cnn.onnx"), input_names=["input"],
        output_names=["logits"], opset_version=OPSET,
        training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    onnx.checker.check_model(onnx.load(out_path("cnn.onnx")))
    # Exporting ran the model: start every run from the exported values.
    inits = {i.name: numpy_helper.to_array(i)
             for i in onnx.load(out_path("cnn.onnx")).graph.initializer}
    for name, t in initial.items():
        if t.dtype == torch.float32:
            if name not in inits:
                raise RuntimeError(f"cnn.onnx lacks initializer {name}")
            t.copy_(torch.from_numpy(inits[name]))
    gen = torch.Generator().manual_seed(GOLDEN_SEED + 3)
    inputs = torch.randn(CNN_BATCH, 3, 16, 16, generator=gen)
    labels = torch.randint(0, 10, (CNN_BATCH,), generator=gen)

    tensors = {"input": inputs.numpy(), "labels": labels.numpy()}
    for chunks, suffix in ((1, ""), (4, "_m4")):
        m = Cnn()
        m.load_state_dict(initial)
        m.train()
        first, stats, state = cnn_train(m, inputs, labels, chunks)
        if chunks == 1:
            tensors["loss"] = first["loss"].numpy()
            for n, t in stats.items():
                tensors["stats." + n] = t.numpy()
        for n, t in first.items():
            if n != "loss":
                tensors[f"grad{suffix}." + n] = t.numpy()
        for n, t in state.items():
            tensors[f"param{suffix}." + n] = t.numpy()
    path = out_path("cnn.golden.safetensors")
    write_safetensors(path, tensors, {"producer": "make_models.py",
                                      "torch": torch.__version__,
                                      "lr": str(CNN_LR),
                                      "steps": str(CNN_STEPS)})
    print(f"cnn.golden.safetensors: loss {tensors['loss']:.6f}, "
          f"{os.path.getsize(path)} bytes")


# ---------------------------------------------------------------- CNN, eval
#
# A small CNN with batch norm and dropout exported in inference mode
# (training=TrainingMode.EVAL: BatchNormalization with training_mode 0 and
# no extra outputs; the dropout left out), for gpipe-compile --inference.
# The eval export folds a batch norm that directly follows a convolution
# into it, so these normalize after a ReLU and after a residual add, where
# they stay batch norms. Running statistics are set away from their initial
# 0 and 1. cnn_eval.golden.safetensors holds CNN_EVAL_SAMPLES images,
# `input`, and PyTorch's eval-mode logits for them, `output` (the export's
# batch is CNN_EVAL_BATCH: the samples fill two batches and part of a
# third).

CNN_EVAL_BATCH = 4
CNN_EVAL_SAMPLES = 10


class CnnEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        h = self.bn1(torch.relu(self.conv1(x)))
        h = self.bn2(torch.relu(self.conv2(h)) + h)
        h = nn.functional.max_pool2d(h, 2)
        h = torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1)
        return self.head(self.drop(h))


def make_cnn_eval():
    torch.manual_seed(GOLDEN_SEED + 50)
    model = CnnEval()
    jitter(model)
    with torch.no_grad():
        for name, b in model.named_buffers():
            if "running_mean" in name:
                b.copy_(0.2 * torch.randn_like(b))
            elif "running_var" in name:
                b.copy_(0.5 + torch.rand_like(b))
    model.eval()
    example = torch.randn(CNN_EVAL_BATCH, 3, 8, 8)
    torch.onnx.export(
        model, (example,), out_path("cnn_eval.onnx"), input_names=["input"],
        output_names=["logits"], opset_version=OPSET,
        training=torch.onnx.TrainingMode.EVAL, do_constant_folding=False)
    graph = onnx.load(out_path("cnn_eval.onnx"))
    onnx.checker.check_model(graph)
    kinds = [node.op_type for node in graph.graph.node]
    if kinds.count("BatchNormalization") != 2 or "Dropout" in kinds:
        raise RuntimeError(f"cnn_eval.onnx has unexpected nodes: {kinds}")
    gen = torch.Generator().manual_seed(GOLDEN_SEED + 51)
    inputs = torch.randn(CNN_EVAL_SAMPLES, 3, 8, 8, generator=gen)
    with torch.no_grad():
        logits = model(inputs)
    path = out_path("cnn_eval.golden.safetensors")
    write_safetensors(path, {"input": inputs.numpy(),
                             "output": logits.numpy()},
                      {"producer": "make_models.py",
                       "torch": torch.__version__})
    print(f"cnn_eval.golden.safetensors: {CNN_EVAL_SAMPLES} samples, "
          f"{os.path.getsize(path)} bytes")


# ---------------------------------------------------------------- dropout
#
# An MLP with two dropouts exported in training mode (Dropout nodes with a
# constant training_mode true) and a batch to train it on. PyTorch's masks
# come from its own generator, so there is no golden gradient: the tests
# check gpipe's own guarantees (bitwise across K, schedules and remat; the
# seed changes the masks).


def make_mlp_dropout():
    torch.manual_seed(GOLDEN_SEED + 40)
    model = nn.Sequential(
        nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.25),
        nn.Linear(32, 32), nn.GELU(), nn.Dropout(0.1),
        nn.Linear(32, 10))
    jitter(model)
    model.train()
    torch.onnx.export(
        model, (torch.randn(8, 16),), out_path("mlp_dropout.onnx"),
        input_names=["input"], output_names=["logits"], opset_version=OPSET,
        training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    onnx.checker.check_model(onnx.load(out_path("mlp_dropout.onnx")))
    gen = torch.Generator().manual_seed(GOLDEN_SEED + 41)
    write_safetensors(out_path("mlp_dropout.data.safetensors"),
                      {"input": torch.randn(8, 16, generator=gen).numpy(),
                       "labels": torch.randint(0, 10, (8,),
                                               generator=gen).numpy()},
                      {"producer": "make_models.py"})


# ---------------------------------------------------------------- MSE
#
# The shipped MLP trained as a regressor: float targets of the logits' shape
# and PyTorch's MSELoss (mean over every element). The golden file holds the
# input, the targets (as labels), the loss and the first-step gradients.


def make_mlp_mse():
    model = nn.Sequential(
        nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
        nn.Linear(32, 32), nn.Sigmoid(), nn.Linear(32, 32), nn.GELU(),
        nn.Linear(32, 10))
    inits = {i.name: numpy_helper.to_array(i)
             for i in onnx.load(out_path("mlp.onnx")).graph.initializer}
    model.load_state_dict({n: torch.from_numpy(inits[n].copy())
                           for n in model.state_dict()})
    gen = torch.Generator().manual_seed(GOLDEN_SEED + 50)
    inputs = torch.randn(8, 16, generator=gen)
    targets = torch.randn(8, 10, generator=gen)
    loss = nn.functional.mse_loss(model(inputs), targets)
    names = [n for n, _ in model.named_parameters()]
    grads = torch.autograd.grad(loss, [p for _, p in model.named_parameters()])
    tensors = {"input": inputs.numpy(), "labels": targets.numpy(),
               "loss": loss.detach().numpy()}
    for n, g in zip(names, grads):
        tensors["grad." + n] = g.numpy()
    write_safetensors(out_path("mlp.mse.golden.safetensors"), tensors,
                      {"producer": "make_models.py",
                       "torch": torch.__version__})
    print(f"mlp.mse.golden.safetensors: loss {loss.item():.6f}")


def make_adversarial_inputs():
    """Inputs scripts/adversarial.py found mishandled, for errors.test."""
    w = numpy_helper.from_array(
        np.arange(32, dtype=np.float32).reshape(8, 4) / 32, "w")
    matmul = helper.make_node("MatMul", ["input", "w"], ["logits"],
                              name="/fc/MatMul")
    # An initializer whose shape claims 2^40 elements and holds no data (the
    # importer reserved the shape's bytes first: LLVM ERROR: out of memory).
    huge = TensorProto()
    huge.name, huge.data_type = "w", TensorProto.FLOAT
    huge.dims.extend([1 << 20, 1 << 20])
    save_graph([matmul], "adversarial", [float_input("input", [4, 8])],
               [float_input("logits", [4, 4])], [huge],
               "huge_initializer.onnx")
    # A graph without outputs (imported as a network computing nothing).
    save_graph([matmul], "adversarial", [float_input("input", [4, 8])], [],
               [w], "no_outputs.onnx")
    # A Gemm with alpha NaN and a LayerNormalization with a negative
    # epsilon (both imported as they were).
    save_graph([helper.make_node("Gemm", ["input", "w"], ["logits"],
                                 name="/fc/Gemm", alpha=float("nan"))],
               "adversarial", [float_input("input", [4, 8])],
               [float_input("logits", [4, 4])], [w], "gemm_alpha_nan.onnx")
    save_graph([helper.make_node("LayerNormalization", ["input", "g"],
                                 ["logits"], name="/ln/LayerNormalization",
                                 epsilon=-1.0)],
               "adversarial", [float_input("input", [4, 8])],
               [float_input("logits", [4, 8])],
               [numpy_helper.from_array(np.ones(8, np.float32), "g")],
               "layernorm_negative_epsilon.onnx")


class SeqCNN(nn.Module):
    """A 1-D CNN over sequences [N, C, L] with the padding and indexing
    forms exporters write as their own nodes: Conv1d, every F.pad mode
    (constant, reflect, replicate = ONNX edge, circular = ONNX wrap, and a
    negative pad that crops), MaxPool1d and AvgPool1d, a flip (Slice with
    step -1) and torch.remainder and torch.fmod of data (Mod)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 6, 3, padding=1)
        self.conv2 = nn.Conv1d(6, 6, 3, groups=2)
        self.head = nn.Linear(6 * 5, 5)

    def forward(self, x):
        h = torch.relu(self.conv1(x))                       # [N, 6, 24]
        h = nn.functional.pad(h, (2, 1), mode="reflect")    # 27
        h = nn.functional.max_pool1d(h, 3, stride=2)        # 13
        h = nn.functional.pad(h, (1, 2), mode="replicate")  # 16
        h = torch.flip(h, dims=[2])
        h = h + 0.5 * torch.remainder(h, 0.75) - 0.25 * torch.fmod(h, 0.6)
        h = nn.functional.pad(h, (1, 1), mode="circular")   # 18
        h = torch.tanh(self.conv2(h))                       # 16
        h = nn.functional.pad(h, (1, -2), value=0.3)        # 15
        h = nn.functional.avg_pool1d(h, 3)                  # 5
        return self.head(h.flatten(1))


def make_seq_cnn():
    torch.manual_seed(GOLDEN_SEED + 60)
    model = SeqCNN()
    example = torch.randn(4, 3, 24)
    export(model, example, "seq_cnn.onnx", dynamo=False)
    gen = torch.Generator().manual_seed(GOLDEN_SEED + 61)
    inputs = torch.randn(4, 3, 24, generator=gen)
    labels = torch.randint(0, 5, (4,), generator=gen)
    write_golden(model, "seq_cnn.onnx", inputs, labels)
    # The same model (the same weights: no second jitter) from the
    # torch.export-based exporter: opset 18, Pad with an axes input,
    # remainder as Floor of a Div.
    torch.onnx.export(model, (example,), out_path("seq_cnn_dynamo.onnx"),
                      input_names=["input"], output_names=["logits"],
                      dynamo=True, external_data=False)


def main():
    torch.manual_seed(0)
    make_mlp()
    make_gpt()
    make_gpt_mha()
    make_bad_inputs()
    make_cnn()
    make_bad_cnn_inputs()
    make_mlp_dropout()
    # Added later, each with its own seed or none: the files above do not
    # depend on them.
    make_gpt_opsets()
    make_mlp_nll()
    make_op_inputs()
    make_mlp_mse()
    make_cnn_eval()
    make_gpt_tied()
    make_adversarial_inputs()
    make_seq_cnn()


if __name__ == "__main__":
    # `make_models.py make_cnn_eval ...` remakes only the files of the
    # makers named.
    if len(sys.argv) > 1:
        for maker in sys.argv[1:]:
            globals()[maker]()
    else:
        main()
