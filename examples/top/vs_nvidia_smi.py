#!/usr/bin/env python3
"""vyre-top and vyre-exporter against nvidia-smi, with a real PyTorch
process on the GPU (issue 37).

Run on a machine with an NVIDIA GPU, its driver and PyTorch:

    python3 examples/top/vs_nvidia_smi.py

with VYRE_TOP and VYRE_EXPORTER naming the binaries (default: on PATH).
A child process allocates memory on every GPU (plain torch.empty, 1 GiB
more on each GPU than the one before) and waits; then, while it holds it:

- `nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory` (MiB) and
  `nvidia-smi --query-gpu=uuid,memory.used` (MiB),
- `vyre-top --json -n 1`: each GPU's `processes[].used_bytes` by pid, and
  the GPU's `mem_used_bytes`,
- `vyre-exporter --collector.dcgm-compat` scraped once:
  `vyre_gpu_process_memory_used_bytes{pid=...}`, `vyre_gpu_memory_used_bytes`
  and `DCGM_FI_DEV_FB_USED` (MiB, as dcgm-exporter exports it),

and prints one table row per GPU and process. Exit 1 when a figure of
vyre's differs from nvidia-smi's by more than 1 MiB for the child (its
allocations do not change while it waits), or is missing; the GPU's total
used memory may move between the readings by what other processes do, so it
is printed, not judged.
"""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

TOP = os.environ.get("VYRE_TOP", "vyre-top")
EXPORTER = os.environ.get("VYRE_EXPORTER", "vyre-exporter")
MIB = 1 << 20

HOLDER = r"""
import sys, time, torch
held = []
for i in range(torch.cuda.device_count()):
    held.append(torch.empty((i + 1) << 30, dtype=torch.uint8, device="cuda:%d" % i))
    held[-1].fill_(1)
torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.read()
"""


def smi(query, what):
    out = subprocess.run(["nvidia-smi", "--query-%s=%s" % (query, what),
                          "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    """One scrape of the exporter, once it answers (at most 10 s)."""
    url = "http://127.0.0.1:%d/metrics" % port
    deadline = time.monotonic() + 10
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def samples(text, family):
    """{labels dict as a sorted tuple: value} of one metric family."""
    got = {}
    for line in text.splitlines():
        m = re.match(r"^%s\{(.*)\} (\S+)$" % re.escape(family), line)
        if m:
            labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1))))
            got[labels] = float(m.group(2))
    return got


def label(labels, name):
    return dict(labels).get(name)


def main():
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    bad = 0
    try:
        if holder.stdout.readline().strip() != "ready":
            sys.exit("the PyTorch process did not start")
        pid = holder.pid
        apps = smi("compute-apps", "gpu_uuid,pid,used_memory")
        gpus = smi("gpu", "index,uuid,name,memory.used")
        top = json.loads(subprocess.run([TOP, "--json", "-n", "1"], capture_output=True,
                                        text=True, check=True).stdout.splitlines()[0])
        port = free_port()
        exp = subprocess.Popen([EXPORTER, "--web.listen-address", "127.0.0.1:%d" % port,
                                "--collector.dcgm-compat", "--no-cache"],
                               stderr=subprocess.PIPE, text=True)
        try:
            text = scrape(port)
        finally:
            exp.terminate()
            exp.wait(10)
        by_uuid = {g["uuid"]: g for g in top["gpus"]}
        proc_mem = samples(text, "vyre_gpu_process_memory_used_bytes")
        gpu_mem = samples(text, "vyre_gpu_memory_used_bytes")
        fb_used = samples(text, "DCGM_FI_DEV_FB_USED")
        print("driver %s; the PyTorch process: pid %d\n" % (top["gpu_monitor"]["driver_version"],
                                                           pid))
        print("| GPU | pid | nvidia-smi MiB | vyre-top MiB | exporter MiB | DCGM_FI_DEV_FB_USED |")
        print("|---|---|---:|---:|---:|---:|")
        for index, uuid, name, used in gpus:
            g = by_uuid.get(uuid)
            idx = str(g["index"]) if g else None
            top_used = "%.0f" % (g["mem_used_bytes"] / MIB) if g else "missing"
            exp_used = [v for k, v in gpu_mem.items() if label(k, "gpu") == idx]
            fb = [v for k, v in fb_used.items() if label(k, "UUID") == uuid]
            print("| %s %s | (GPU) | %s | %s | %s | %s |" % (
                index, name, used, top_used, "%.0f" % (exp_used[0] / MIB) if exp_used else "-",
                "%.0f" % fb[0] if fb else "-"))
            for a_uuid, a_pid, a_mib in apps:
                if a_uuid != uuid:
                    continue
                t = [p["used_bytes"] for p in (g["processes"] if g else [])
                     if str(p["pid"]) == a_pid]
                e = [v for k, v in proc_mem.items()
                     if label(k, "gpu") == idx and label(k, "pid") == a_pid]
                t_mib = t[0] / MIB if t and t[0] is not None else None
                e_mib = e[0] / MIB if e else None
                print("| %s | %s | %s | %s | %s | |" % (
                    index, a_pid, a_mib, "%.0f" % t_mib if t_mib is not None else "missing",
                    "%.0f" % e_mib if e_mib is not None else "missing"))
                if a_pid == str(pid):
                    for v in (t_mib, e_mib):
                        if v is None or abs(v - float(a_mib)) > 1:
                            bad += 1
        print("\n%s" % ("vyre-top and the exporter agree with nvidia-smi on the PyTorch process"
                        if not bad else "%d figures differ from nvidia-smi's" % bad))
    finally:
        holder.stdin.close()
        holder.wait(30)
    return 1 if bad else 0


sys.exit(main())
