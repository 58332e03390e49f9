#!/usr/bin/env python3
#===- torch_gpt_eager.py - The gpt preset in PyTorch eager, timed ---------===#
#
# The reference of scripts/gpu-check.sh's PyTorch ratio: the same
# pre-LayerNorm decoder as gpipe's `gpt` preset (token and position
# embeddings, blocks of LayerNorm, causal self-attention through a fused qkv
# Linear, LayerNorm, GELU MLP of width 4d, final LayerNorm, bias-free head;
# 65-symbol vocabulary) trained with plain SGD on random tokens, in eager
# mode on one GPU. Prints the median samples/s over the timed steps:
#
#   torch_gpt_eager.py --depth 8 --width 1024 --heads 16 --seq-len 256 \
#       --batch 64 [--dtype fp32|bf16] [--steps 12] [--warmup 3]
#
# fp32 runs with TF32 off (gpipe's fp32 GEMMs are full fp32); bf16 runs
# under autocast with fp32 master weights.
#
#===-----------------------------------------------------------------------===#
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn

VOCAB = 65


class Attention(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        mask = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, seq)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(self.act(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, depth, d, heads, seq):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, d)
        self.pos_emb = nn.Parameter(0.02 * torch.randn(seq, d))
        self.blocks = nn.ModuleList(Block(d, heads, seq) for _ in range(depth))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb[: idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = GPT(a.depth, a.width, a.heads, a.seq_len).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    idx = torch.randint(0, VOCAB, (a.batch, a.seq_len), device=dev)
    labels = torch.randint(0, VOCAB, (a.batch, a.seq_len), device=dev)

    times = []
    for step in range(a.warmup + a.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16,
                            enabled=a.dtype == "bf16"):
            logits = model(idx)
            loss = nn.functional.cross_entropy(
                logits.float().view(-1, VOCAB), labels.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    print(f"torch eager {a.dtype}: {a.batch / seconds:.1f} samples/s "
          f"({seconds * 1e3:.2f} ms/step, loss {loss.item():.4f})")


if __name__ == "__main__":
    main()
