#!/usr/bin/env python3
"""`vyre-bench run --triton NAME` against triton.testing.do_bench (issue 38).

Run on a GPU machine with PyTorch and Triton, on a cache that gen.py made
(tests/fixtures/torch_block/gen.py OUTDIR: OUTDIR/triton and
OUTDIR/inductor):

    python3 examples/bench/triton/vs_do_bench.py OUTDIR NAME|KEY [NAME|KEY...]

with VYRE_BENCH naming the vyre-bench binary (default: vyre-bench on PATH).
A KEY (a group's folder name) picks one group where a name has several
(a kernel compiled again in another process gets a group of its own).
For each kernel:

- its spec is inferred by `vyre-bench run --triton NAME --emit-spec`, and
  its tensors and scalars are made from that spec at the sizes the model
  used (each buffer the size of the tensor the model passed);
- the kernel is launched through TorchInductor's own launcher (the
  CachingAutotuner the compiled graph's output code defines, `.run(...)`)
  and timed by triton.testing.do_bench (cold: L2 cleared before each
  launch) and do_bench_cudagraph (hot: a CUDA graph of launches), medians;
- `vyre-bench run --triton NAME --mode both --json` measures it too.

Prints a markdown table (times in microseconds, the GPU named) with
vyre / do_bench for each. Timings are figures to read, not a pass/fail.
"""
import glob
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

out = os.path.abspath(sys.argv[1])
names = sys.argv[2:]
TRITON_DIR = os.path.join(out, "triton")
INDUCTOR_DIR = os.path.join(out, "inductor")
os.environ["TRITON_CACHE_DIR"] = TRITON_DIR
os.environ["TORCHINDUCTOR_CACHE_DIR"] = INDUCTOR_DIR
VYRE = os.environ.get("VYRE_BENCH", "vyre-bench")

import torch  # noqa: E402
import triton.testing  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "f64": torch.float64, "i8": torch.int8, "i32": torch.int32, "i64": torch.int64,
          "u8": torch.uint8}
EXPR = {"ceil": math.ceil, "floor": math.floor, "min": min, "max": max}


def vyre(*args):
    cmd = [VYRE, "run", "--triton"] + list(args) + ["--dir", TRITON_DIR,
                                                    "--inductor-dir", INDUCTOR_DIR]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stderr))
    return r


def spec_of(which, tmp):
    path = os.path.join(tmp, which + ".json")
    vyre(which, "--emit-spec", path)
    with open(path) as fh:
        return json.load(fh)


def arguments(spec):
    """The kernel's arguments at the spec's first point, scratch pointers
    left out (Inductor's launcher passes Triton's own)."""
    axes = {k: (v[0] if isinstance(v, list) else v) for k, v in spec["axes"].items()}
    args = []
    for a in spec["args"]:
        if "null" in a:
            continue
        if "buffer" in a:
            n = int(eval(str(a["buffer"]), dict(EXPR), dict(axes)))  # the spec's own expression
            dt = DTYPES[a.get("type", "f32")]
            if dt.is_floating_point:
                t = torch.randn(n, device="cuda").to(dt)
            else:
                t = torch.randint(0, 128, (n,), device="cuda").to(dt)
            args.append(t)
        elif "int" in a:
            args.append(int(eval(str(a["int"]), dict(EXPR), dict(axes))))
        else:
            args.append(float(axes.get(a["float"], a["float"])))
    return args, axes


def launcher(name):
    """Inductor's CachingAutotuner for kernel name, from the output code."""
    for path in sorted(glob.glob(os.path.join(INDUCTOR_DIR, "*", "*.py"))):
        with open(path) as fh:
            text = fh.read()
        if "def call(" in text and (name + ".run(") in text:
            spec = importlib.util.spec_from_file_location("vyre_out_" + name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return getattr(mod, name)
    sys.exit("no output code launches %s in %s" % (name, INDUCTOR_DIR))


def vyre_times(which, tmp):
    db = os.path.join(tmp, "results.sqlite3")
    r = vyre(which, "--mode", "both", "--json", "-q", "--db", db)
    doc = json.loads(r.stdout)
    t = {}
    for p in doc["points"]:  # the kernel's, not the run's reference points
        if p.get("suite") == "sweep":
            t[p["mode"]] = p
    return t


def us(ns):
    return "%.2f" % (ns / 1e3) if ns else "-"


def main():
    print("GPU: %s (torch %s, Triton %s)\n" % (torch.cuda.get_device_name(0), torch.__version__,
                                               triton.__version__))
    print("| kernel | sizes | do_bench cold | vyre cold | ratio | do_bench graph (hot) "
          "| vyre hot (gpu / batch / kernel) | ratio (batch) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    notes = []
    with tempfile.TemporaryDirectory(prefix="vyre-vs-") as tmp:
        for which in names:
            spec = spec_of(which, tmp)
            name = spec["entry"]
            args, axes = arguments(spec)
            kern = launcher(name)

            def fn():
                # The stream of the moment: do_bench_cudagraph captures on
                # a stream of its own.
                kern.run(*args, stream=torch.cuda.current_stream().cuda_stream)

            fn()
            torch.cuda.synchronize()
            cold = triton.testing.do_bench(fn, return_mode="median") * 1e6  # ms -> ns
            hot = triton.testing.do_bench_cudagraph(fn, return_mode="median") * 1e6
            v = vyre_times(which, tmp)
            vc, vh = v.get("cold", {}), v.get("hot", {})
            sizes = " ".join("%s=%s" % kv for kv in axes.items())
            print("| %s | %s | %s | %s | %.3f | %s | %s / %s / %s | %.3f |" % (
                name, sizes, us(cold), us(vc.get("median_ns")),
                (vc.get("median_ns") or 0) / cold, us(hot), us(vh.get("median_ns")),
                us(vh.get("batch_ns")), us(vh.get("kernel_ns")),
                (vh.get("batch_ns") or 0) / hot))
            for mode, p in (("cold", vc), ("hot", vh)):
                if p.get("note"):
                    notes.append("%s, %s: %s" % (name, mode, p["note"]))
    if notes:
        print("\nvyre's notes:\n" + "\n".join("- " + n for n in notes))


main()
