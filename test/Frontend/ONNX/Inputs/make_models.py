"""Make the small ONNX models used by the ONNX frontend tests.

Writes, into the folder this script lives in:
  mlp.onnx, gpt.onnx, gpt_mha.onnx      -- good models exported from PyTorch
  truncated.onnx, not_onnx.onnx, unsupported_op.onnx, dynamic_dim.onnx,
  shape_mismatch.onnx, bad_initializer.onnx
                                        -- deliberately bad inputs

Needs Debian's python3-torch (1.13) and python3-onnx:
  apt-get install python3-torch python3-onnx python3-numpy
  /usr/bin/python3 make_models.py

CI never runs this script; the .onnx files it writes are committed.
"""

import math
import os

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


def export(model, example, name):
    model.eval()
    jitter(model)
    torch.onnx.export(
        model,
        (example,),
        out_path(name),
        input_names=["input"],
        output_names=["logits"],
        opset_version=OPSET,
        do_constant_folding=True,
    )
    onnx.checker.check_model(onnx.load(out_path(name)))


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


def make_gpt():
    model = GPT(lambda: CausalSelfAttention(D_MODEL, N_HEAD, SEQ), n_layer=4)
    export(model, example_tokens(), "gpt.onnx")


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
        return
    raise RuntimeError("could not export gpt_mha.onnx")


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


def main():
    torch.manual_seed(0)
    make_mlp()
    make_gpt()
    make_gpt_mha()
    make_bad_inputs()


if __name__ == "__main__":
    main()
