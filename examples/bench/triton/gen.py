#!/usr/bin/env python3
"""Generate the PTX of the four example kernels with Triton, on a GPU.

Run on a machine with a GPU, PyTorch and Triton (3.x):

    python3 examples/bench/triton/gen.py

It compiles each kernel once with the configuration its spec assumes
(block sizes, num_warps, dtypes), writes the PTX Triton made into
examples/bench/, and checks the spec against what Triton
reports: the parameter count (Triton 3.x appends two scratch pointers,
passed as {"null": true}), no global scratch needed, and the dynamic shared
memory, which it writes into the spec's "shared" (Triton launches every
kernel with metadata.shared bytes of dynamic shared memory). Exit 1 when a
spec cannot describe the kernel.

Then run the specs:

    vyre-bench run --spec examples/bench/add.json
"""
import json
import os
import re
import sys

import torch
import triton
import triton.language as tl

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    out = numerator / denominator
    tl.store(output_ptr + row_idx * output_row_stride + col_offsets, out, mask=mask)


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * K + offs_k[None, :])
    b_ptrs = b_ptr + (offs_k[:, None] * N + offs_bn[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * N + offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def build():
    """(spec, ptx file, compiled kernel) for each example, run once."""
    dev = "cuda"
    out = []
    n = 1 << 20
    x = torch.rand(n, device=dev)
    y = torch.rand(n, device=dev)
    o = torch.empty_like(x)
    k = add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK_SIZE=1024, num_warps=4)
    out.append(("add.json", "add_kernel.ptx", k))

    rows, cols = 4096, 1024
    xs = torch.randn(rows, cols, device=dev)
    ys = torch.empty_like(xs)
    k = softmax_kernel[(rows,)](ys, xs, xs.stride(0), ys.stride(0), cols, BLOCK_SIZE=1024,
                                num_warps=4)
    out.append(("softmax.json", "softmax_kernel.ptx", k))

    m, nn = 4096, 1024
    xl = torch.randn(m, nn, device=dev, dtype=torch.bfloat16)
    yl = torch.empty_like(xl)
    w = torch.rand(nn, device=dev, dtype=torch.bfloat16)
    b = torch.rand(nn, device=dev, dtype=torch.bfloat16)
    mean = torch.empty(m, device=dev, dtype=torch.float32)
    rstd = torch.empty(m, device=dev, dtype=torch.float32)
    k = _layer_norm_fwd_fused[(m,)](xl, yl, w, b, mean, rstd, xl.stride(0), nn, 1e-5,
                                    BLOCK_SIZE=1024, num_warps=4)
    out.append(("layer_norm.json", "layer_norm.ptx", k))

    s = 4096
    a = torch.randn(s, s, device=dev, dtype=torch.float16)
    bm = torch.randn(s, s, device=dev, dtype=torch.float16)
    c = torch.empty(s, s, device=dev, dtype=torch.float16)
    grid = (triton.cdiv(s, 128) * triton.cdiv(s, 128),)
    k = matmul_kernel[grid](a, bm, c, s, s, s, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
                            num_warps=8, num_stages=3)
    out.append(("matmul.json", "matmul_kernel.ptx", k))
    torch.cuda.synchronize()
    return out


def ptx_params(ptx, entry):
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)", ptx, re.S)
    return 0 if not m else len(re.findall(r"\.param\b", m.group(1)))


def main():
    bad = 0
    for spec_name, ptx_name, k in build():
        spec_path = os.path.join(BENCH, spec_name)
        with open(spec_path) as f:
            text = f.read()
        spec = json.loads(text)
        # Debug file names relative, not this machine's paths.
        ptx = re.sub(r'(\.file\s+\d+\s+")[^"]*?/((?:examples/bench/)?triton/[^"]*")',
                     lambda mm: mm.group(1) + mm.group(2), k.asm["ptx"])
        ptx = ptx.replace(os.path.abspath(__file__), "examples/bench/triton/gen.py")
        md = k.metadata
        shared = int(getattr(md, "shared", 0))
        scratch = int(getattr(md, "global_scratch_size", 0) or 0)
        nparams = ptx_params(ptx, spec["entry"])
        with open(os.path.join(BENCH, ptx_name), "w") as f:
            f.write(ptx)
        target = re.search(r"^\.target\s+(\S+)", ptx, re.M)
        print(f"{ptx_name}: {len(ptx)} bytes, .target {target.group(1) if target else '?'}, "
              f"{nparams} parameters, num_warps {md.num_warps}, shared {shared} B, "
              f"global scratch {scratch} B")
        if nparams != len(spec["args"]):
            print(f"  {spec_name}: the kernel takes {nparams} parameters, the spec lists "
                  f"{len(spec['args'])}: fix \"args\"", file=sys.stderr)
            bad = 1
        if scratch:
            print(f"  {spec_name}: the kernel needs {scratch} B of global scratch; a null "
                  f"pointer will not do", file=sys.stderr)
            bad = 1
        if spec.get("shared") != shared:
            text = re.sub(r'("shared":\s*)\d+', lambda mm: mm.group(1) + str(shared), text)
            with open(spec_path, "w") as f:
                f.write(text)
            print(f"  {spec_name}: \"shared\" set to {shared}")
    return bad


if __name__ == "__main__":
    sys.exit(main())
