#!/usr/bin/env python3
"""A cooperative and a PDL launch of Triton kernels through
`vyre-bench run --triton` (issue 38).

Run on a GPU machine (Hopper or newer for PDL) with PyTorch and Triton 3.x:

    python3 examples/bench/triton/coop_pdl.py OUTDIR

with VYRE_BENCH naming the vyre-bench binary (default: vyre-bench on PATH).
Triton compiles two small kernels into OUTDIR/triton: coop_scale_kernel
launched with launch_cooperative_grid=True and pdl_scale_kernel with
launch_pdl=True (the latter waits on the grid it depends on with
gdc_wait where Triton has it). Each is checked (y == 2x), then
`vyre-bench run --triton NAME --dry-run` shows the launch its spec asks for
and `vyre-bench run --triton NAME` runs it on the GPU. Exit 1 when a step
fails.
"""
import os
import subprocess
import sys
import tempfile

out = os.path.abspath(sys.argv[1])
os.environ["TRITON_CACHE_DIR"] = os.path.join(out, "triton")
VYRE = os.environ.get("VYRE_BENCH", "vyre-bench")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

try:
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
except ImportError:  # an older Triton: the launch attribute alone
    gdc_wait = gdc_launch_dependents = None

BLOCK = 1024


@triton.jit
def coop_scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


if gdc_wait is not None:
    @triton.jit
    def pdl_scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        gdc_wait()
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        gdc_launch_dependents()
        tl.store(y_ptr + offs, x * 2.0, mask=m)
else:
    @triton.jit
    def pdl_scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def vyre(*args):
    cmd = [VYRE, "run"] + list(args)
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, text=True, capture_output=True)
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    print("(exit %d)\n" % r.returncode, flush=True)
    return r.returncode


def main():
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    bad = 0
    for kernel, option in ((coop_scale_kernel, "launch_cooperative_grid"),
                           (pdl_scale_kernel, "launch_pdl")):
        name = kernel.fn.__name__
        y = torch.empty_like(x)
        grid = (triton.cdiv(n, BLOCK),)
        try:
            kernel[grid](x, y, n, BLOCK=BLOCK, **{option: True})
            torch.cuda.synchronize()
            ok = torch.equal(y, x * 2)
        except Exception as e:  # this Triton has no such launch option
            print("%s with %s=True through Triton failed: %r" % (name, option, e))
            bad += 1
            continue
        print("%s with %s=True through Triton: %s" % (name, option, "right" if ok else "WRONG"))
        bad += not ok
        with tempfile.TemporaryDirectory(prefix="vyre-coop-") as tmp:
            common = ["--triton", name, "--dir", os.environ["TRITON_CACHE_DIR"],
                      "-a", "n=%d" % n, "--grid", "ceil(n/%d)" % BLOCK,
                      "--buffer", "x_ptr=n", "--buffer", "y_ptr=n"]
            bad += vyre(*common, "--dry-run") != 0
            bad += vyre(*common, "--quick", "-q", "--db", os.path.join(tmp, "r.sqlite3")) != 0
    return 1 if bad else 0


sys.exit(main())
