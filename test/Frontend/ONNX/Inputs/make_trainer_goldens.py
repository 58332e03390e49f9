"""Make the golden data of gpipe-run's trainer: what PyTorch computes for
the same setups.

Writes, into the folder this script lives in:
  lr_schedules.json   -- torch.optim.lr_scheduler's learning rate at every
                         step for each --lr-schedule setup (make_lr_schedules)
  mlp.clip.golden.safetensors, gpt.clip.golden.safetensors
                      -- 5 AdamW steps on one batch with
                         clip_grad_norm_ at a bound that binds (the GPT also
                         with warmup and cosine decay), from the weights in
                         mlp.onnx and gpt.onnx: the batch, the norm before
                         each step's clipping and the parameters after the
                         last, by initializer name (make_clipping)
  mlp.eval.safetensors, gpt.eval.safetensors
                      -- an evaluation set of 12 samples (not a whole
                         number of mini-batches) drawn like the training
                         batch, and PyTorch's eval-mode loss (and accuracy)
                         over it after the 5 clipped AdamW steps
                         (make_clipping)
  mlp.clip.tfevents, tensorboard_check.txt
                      -- gpipe-run's TensorBoard event file for the clipped
                         MLP (needs the built gpipe-compile and gpipe-run:
                         GPIPE_BUILD=build-dir), and every scalar pip's
                         tensorboard read from it (make_tensorboard_check)

Needs pip's torch and tensorboard (what users run today):
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install torch numpy onnx tensorboard
  /tmp/venv/bin/python make_trainer_goldens.py [maker...]

CI never runs this script; the files it writes are committed.
"""

import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_models  # noqa: E402  (the models and the safetensors helpers)


def torch_schedule(optimizer, kind, lr, warmup, horizon, min_lr, step_size,
                   gamma):
    """The torch.optim.lr_scheduler chain equivalent to gpipe-run's
    --lr-schedule KIND --warmup-steps WARMUP --lr-decay-steps HORIZON
    --min-lr MIN_LR --lr-step-size STEP_SIZE --lr-gamma GAMMA."""
    sched = torch.optim.lr_scheduler
    decay_steps = horizon - warmup
    if kind == "constant":
        decay = sched.ConstantLR(optimizer, factor=1.0, total_iters=0)
    elif kind == "linear":
        decay = sched.LinearLR(optimizer, start_factor=1.0,
                               end_factor=min_lr / lr, total_iters=decay_steps)
    elif kind == "cosine":
        decay = sched.CosineAnnealingLR(optimizer, T_max=decay_steps,
                                        eta_min=min_lr)
    else:
        decay = sched.StepLR(optimizer, step_size=step_size, gamma=gamma)
    if warmup == 0:
        return decay
    # The warmup starts at lr / (W + 1) and reaches lr at step W + 1.
    warm = sched.LinearLR(optimizer, start_factor=1.0 / (warmup + 1),
                          end_factor=1.0, total_iters=warmup)
    return sched.SequentialLR(optimizer, [warm, decay], milestones=[warmup])


def make_lr_schedules():
    setups = [
        # kind, lr, warmup, horizon, min_lr, step_size, gamma, steps
        ("constant", 0.01, 0, 20, 0.0, 1, 0.1, 20),
        ("constant", 0.003, 5, 20, 0.0, 1, 0.1, 20),
        ("linear", 0.1, 0, 30, 0.0, 1, 0.1, 30),
        ("linear", 0.1, 4, 30, 0.01, 1, 0.1, 30),
        ("cosine", 0.001, 0, 25, 0.0, 1, 0.1, 25),
        ("cosine", 0.001, 10, 50, 1e-5, 1, 0.1, 50),
        ("cosine", 0.5, 1, 7, 0.05, 1, 0.1, 7),
        ("step", 0.1, 0, 30, 0.0, 7, 0.5, 30),
        ("step", 0.2, 3, 40, 0.0, 10, 0.1, 40),
    ]
    out = []
    for kind, lr, warmup, horizon, min_lr, step_size, gamma, steps in setups:
        param = torch.nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.SGD([param], lr=lr)
        scheduler = torch_schedule(optimizer, kind, lr, warmup, horizon,
                                   min_lr, step_size, gamma)
        lrs = []
        for _ in range(steps):
            lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        out.append({"schedule": kind, "lr": lr, "warmup_steps": warmup,
                    "decay_steps": horizon, "min_lr": min_lr,
                    "step_size": step_size, "gamma": gamma, "lrs": lrs})
    doc = {"producer": "make_trainer_goldens.py, torch " + torch.__version__,
           "setups": out}
    with open(os.path.join(HERE, "lr_schedules.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def onnx_parameters(model, onnx_file):
    """(initializer, parameter name, transposed) for every trainable
    initializer of onnx_file: by name, or a Linear weight stored transposed
    for a MatMul (found through the node that reads it)."""
    graph = onnx.load(onnx_file).graph
    params = dict(model.named_parameters())
    out = []
    for init in graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype.kind != "f" or not np.isfinite(arr).all():
            continue
        if init.name in params:
            out.append((init.name, init.name, False))
            continue
        users = [n for n in graph.node
                 if n.op_type == "MatMul" and n.input[1] == init.name]
        scope = users[0].name.strip("/").split("/")[:-1]
        out.append((init.name, ".".join(scope) + ".weight", True))
    if sorted(p for _, p, _ in out) != sorted(params):
        raise RuntimeError(f"{onnx_file}: initializers do not cover the "
                           "parameters")
    return out


def mlp_from_onnx():
    model = nn.Sequential(
        nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
        nn.Linear(32, 32), nn.Sigmoid(), nn.Linear(32, 32), nn.GELU(),
        nn.Linear(32, 10))
    graph = onnx.load(os.path.join(HERE, "mlp.onnx")).graph
    with torch.no_grad():
        params = dict(model.named_parameters())
        for init in graph.initializer:
            params[init.name].copy_(torch.from_numpy(
                numpy_helper.to_array(init).copy()))
    return model


def evaluation_set(batch, samples, seed):
    """`samples` samples like `batch`'s: inputs drawn like its inputs
    (normal floats, or token ids below its largest), labels below its
    classes."""
    rng = np.random.default_rng(seed)
    inputs, labels = batch["input"], batch["labels"]
    shape = (samples,) + inputs.shape[1:]
    if inputs.dtype.kind == "f":
        x = rng.standard_normal(shape).astype(inputs.dtype)
    else:
        x = rng.integers(0, int(inputs.max()) + 1, shape).astype(inputs.dtype)
    classes = int(labels.max()) + 1
    y = rng.integers(0, classes, (samples,) + labels.shape[1:]).astype(
        labels.dtype)
    return x, y


def clipped_training(model, stem, clip_fraction, steps, lr, warmup=0,
                     min_lr=None):
    """AdamW (torch's defaults but lr) with clip_grad_norm_ on the batch of
    <stem>.golden.safetensors, `steps` times; the bound is clip_fraction of
    the first gradient norm, so it binds. Then the eval-mode loss on an
    evaluation set (<stem>.eval.safetensors)."""
    onnx_file = os.path.join(HERE, stem + ".onnx")
    mapping = onnx_parameters(model, onnx_file)
    batch, _ = make_models.read_safetensors(
        os.path.join(HERE, stem + ".golden.safetensors"))
    inputs = torch.from_numpy(batch["input"])
    labels = torch.from_numpy(batch["labels"])
    params = [p for p in model.parameters()]
    optimizer = torch.optim.AdamW(params, lr=lr)
    scheduler = None
    if min_lr is not None:
        scheduler = torch_schedule(optimizer, "cosine", lr, warmup, steps,
                                   min_lr, 1, 0.1)

    def loss_of():
        logits = model(inputs)
        return nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    loss = loss_of()
    loss.backward()
    bound = clip_fraction * torch.nn.utils.get_total_norm(
        [p.grad for p in params]).item()
    optimizer.zero_grad()
    norms, losses = [], []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of()
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(params, bound).item())
        losses.append(loss.item())
        optimizer.step()
        if scheduler:
            scheduler.step()
    named = dict(model.named_parameters())
    tensors = {"input": batch["input"], "labels": batch["labels"],
               "norm": np.array(norms, dtype=np.float32)}
    for oname, pname, transposed in mapping:
        value = named[pname].detach().numpy()
        tensors["param." + oname] = np.ascontiguousarray(
            value.T if transposed else value)
    path = os.path.join(HERE, stem + ".clip.golden.safetensors")
    make_models.write_safetensors(path, tensors, {
        "producer": "make_trainer_goldens.py", "torch": torch.__version__,
        "clip_grad_norm": repr(bound), "lr": repr(lr),
        "warmup_steps": str(warmup), "min_lr": repr(min_lr),
        "steps": str(steps)})
    print(f"{os.path.basename(path)}: bound {bound!r}, norms "
          f"{[round(n, 4) for n in norms]}, losses "
          f"{[round(x, 4) for x in losses]}")

    x, y = evaluation_set(batch, 12, 7)
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(x)).double()
        flat = logits.reshape(-1, logits.shape[-1])
        target = torch.from_numpy(y).reshape(-1)
        loss = nn.functional.cross_entropy(flat, target).item()
        accuracy = (flat.argmax(-1) == target).double().mean().item()
    path = os.path.join(HERE, stem + ".eval.safetensors")
    make_models.write_safetensors(path, {"input": x, "labels": y}, {
        "producer": "make_trainer_goldens.py", "torch": torch.__version__,
        "eval_loss": repr(loss), "eval_accuracy": repr(accuracy),
        "after": f"{steps} steps of {stem}.clip.golden.safetensors"})
    print(f"{os.path.basename(path)}: eval loss {loss!r}, accuracy "
          f"{accuracy!r}")


def make_clipping():
    clipped_training(mlp_from_onnx(), "mlp", 0.4, 5, 1e-2)
    model = make_models.gpt_from_onnx()
    model.train()
    clipped_training(model, "gpt", 0.4, 5, 3e-3, warmup=2, min_lr=3e-4)


def make_tensorboard_check():
    """Trains the clipped MLP 5 steps with gpipe-run --tensorboard, keeps the
    event file, and records what TensorBoard itself reads from it, in
    read-tfevents.py's format ("step N tag value")."""
    import shutil
    import subprocess
    import tempfile
    from tensorboard.backend.event_processing.event_accumulator import \
        EventAccumulator
    import tensorboard

    build = os.environ.get("GPIPE_BUILD", os.path.join(HERE, "../../../../build"))
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "mlp.so")
        subprocess.run([os.path.join(build, "bin/gpipe-compile"),
                        os.path.join(HERE, "mlp.onnx"), "--stages", "2",
                        "--optimizer", "adam", "--clip-grad-norm", "0.25",
                        "--quiet", "-o", model], check=True)
        subprocess.run([os.path.join(build, "bin/gpipe-run"), model,
                        "--data", os.path.join(HERE, "mlp.golden.safetensors"),
                        "--steps", "5", "--lr", "0.01", "--lr-schedule",
                        "linear", "--tensorboard", os.path.join(tmp, "tb"),
                        "--quiet"], check=True, stdout=subprocess.DEVNULL)
        (name,) = os.listdir(os.path.join(tmp, "tb"))
        shutil.copy(os.path.join(tmp, "tb", name),
                    os.path.join(HERE, "mlp.clip.tfevents"))
    accumulator = EventAccumulator(os.path.join(HERE, "mlp.clip.tfevents"))
    accumulator.Reload()
    lines = []
    for tag in accumulator.Tags()["scalars"]:
        for event in accumulator.Scalars(tag):
            lines.append((event.step, tag, event.value))
    lines.sort(key=lambda x: x[0])
    with open(os.path.join(HERE, "tensorboard_check.txt"), "w") as f:
        f.write(f"# mlp.clip.tfevents as pip's tensorboard "
                f"{tensorboard.__version__} reads it\n")
        for step, tag, value in lines:
            f.write(f"step {step} {tag} {value:.6g}\n")
    print(f"tensorboard_check.txt: {len(lines)} scalars")


MAKERS = {"make_lr_schedules": make_lr_schedules,
          "make_clipping": make_clipping,
          "make_tensorboard_check": make_tensorboard_check}


def main():
    names = sys.argv[1:] or list(MAKERS)
    for name in names:
        MAKERS[name]()


if __name__ == "__main__":
    main()
