"""A small PyTorch workload for libvyre-inject.so: a matmul loop and an MLP
training step, fixed amounts of work, timed in-process.

    CUDA_INJECTION64_PATH=/path/to/libvyre-inject.so python3 train.py

Prints one JSON line: seconds spent in each part (after a warm-up), so runs
with and without the injection can be compared. --nvtx wraps parts in NVTX
ranges (seen by the injection with VYRE_INJECT=full and
NVTX_INJECTION64_PATH=<libcupti.so>).
"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--matmuls", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--nvtx", action="store_true")
    a = ap.parse_args()
    nvtx = torch.cuda.nvtx
    dev = torch.device("cuda")

    # Matmul loop: GPU-bound.
    x = torch.randn(a.size, a.size, device=dev, dtype=torch.bfloat16)
    w = torch.randn(a.size, a.size, device=dev, dtype=torch.bfloat16)
    for _ in range(20):
        y = x @ w
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(a.matmuls):
        if a.nvtx and i % 100 == 0:
            nvtx.range_push("vyre.bench.point")
        y = x @ w
        if a.nvtx and i % 100 == 99:
            torch.cuda.synchronize()
            nvtx.range_pop()
    torch.cuda.synchronize()
    t_matmul = time.perf_counter() - t0
    del x, w, y

    # Training step: a small MLP, launch-bound; batches come from pinned host
    # memory (H2D traffic), the loss is read back every 50 steps (D2H, sync).
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 2048), torch.nn.GELU(),
        torch.nn.Linear(2048, 2048), torch.nn.GELU(),
        torch.nn.Linear(2048, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    xs = torch.randn(8, 256, 1024).pin_memory()
    ys = torch.randint(0, 10, (8, 256)).pin_memory()

    def step(i):
        xb = xs[i % 8].to(dev, non_blocking=True)
        yb = ys[i % 8].to(dev, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for i in range(50):
        step(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    last = 0.0
    for i in range(a.steps):
        if a.nvtx:
            nvtx.range_push("train_step")
        loss = step(i)
        if a.nvtx:
            nvtx.range_pop()
        if i % 50 == 49:
            last = loss.item()
    torch.cuda.synchronize()
    t_train = time.perf_counter() - t0
    print(json.dumps({"matmul_s": round(t_matmul, 4), "train_s": round(t_train, 4),
                      "total_s": round(t_matmul + t_train, 4), "loss": round(last, 4),
                      "device": torch.cuda.get_device_name(0)}), flush=True)


if __name__ == "__main__":
    main()
