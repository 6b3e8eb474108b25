#!/usr/bin/env bash
# gpu_check.sh BUNDLE_DIR - libvyre-inject.so on the GPU machine:
# runtime with and without the injection (counters mode, median of 3,
# interleaved), then the page seen from outside (vyre-top --batch and
# inject_peek) while train.py runs in kernels and full modes.
# BUNDLE_DIR holds bin/ (libvyre-inject.so, vyre-top, inject_peek) and lib/.
# PARTS (default "timing peek fork") picks what runs.
set -u
PARTS=${PARTS:-timing peek fork}
B=$(cd "${1:?usage: gpu_check.sh BUNDLE_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
INJ=$B/bin/libvyre-inject.so
T=$(mktemp -d)
export VYRE_TELEMETRY_DIR=$T/tel
ARGS=${TRAIN_ARGS:-}
tool() { LD_LIBRARY_PATH=$B/lib "$@"; }   # python keeps the machine's own libraries

nvidia-smi -L
if [[ $PARTS == *timing* ]]; then
echo "== timing (counters mode), interleaved"
for i in 1 2 3; do
  s=$(date +%s.%N); python3 "$HERE/train.py" $ARGS > $T/base$i 2>$T/base$i.err; e=$(date +%s.%N)
  echo "base $i: $(cat $T/base$i) wall $(awk "BEGIN{print $e - $s}")"
  s=$(date +%s.%N); CUDA_INJECTION64_PATH=$INJ python3 "$HERE/train.py" $ARGS > $T/inj$i 2>$T/inj$i.err; e=$(date +%s.%N)
  echo "inj  $i: $(cat $T/inj$i) wall $(awk "BEGIN{print $e - $s}")"
  head -c 600 $T/inj$i.err
done
python3 - "$T" <<'PY'
import json, statistics, sys
t = sys.argv[1]
def med(kind, key):
    return statistics.median(json.load(open(f"{t}/{kind}{i}"))[key] for i in (1, 2, 3))
for key in ("matmul_s", "train_s", "total_s"):
    b, j = med("base", key), med("inj", key)
    print(f"{key}: base {b:.3f} s, injected {j:.3f} s, ratio {j / b:.4f}")
PY
VYRE_INJECT=kernels CUDA_INJECTION64_PATH=$INJ python3 "$HERE/train.py" $ARGS > $T/kern 2>$T/kern.err
echo "kernels mode, one run: $(cat $T/kern)"
fi

peek() { # mode, extra env...
  local mode=$1; shift
  echo "== VYRE_INJECT=$mode $*"
  env "$@" VYRE_INJECT=$mode CUDA_INJECTION64_PATH=$INJ python3 "$HERE/train.py" $ARGS --nvtx > $T/$mode.out 2> $T/$mode.err &
  local pid=$!
  sleep ${PEEK_AFTER:-9}
  tool "$B/bin/inject_peek"
  tool "$B/bin/vyre-top" --batch -n 2 -d 1 --width 200 2>&1 | tail -40
  wait $pid; echo "exit $?"; cat $T/$mode.out; head -c 600 $T/$mode.err
}
if [[ $PARTS == *peek* ]]; then
peek kernels
CUPTI=$(ls /usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13 /usr/local/cuda/lib64/libcupti.so.13 2>/dev/null | head -1)
peek full NVTX_INJECTION64_PATH=$CUPTI
fi
if [[ $PARTS == *fork* ]]; then
  echo "== fork: DataLoader workers forked after CUDA is initialised, then exit 7"
  for inj in "" "$INJ"; do
    CUDA_INJECTION64_PATH=$inj python3 - <<'PY'
import os, sys, threading, torch
from torch.utils.data import DataLoader, TensorDataset
x = torch.ones(4, device="cuda")          # CUDA (and the injection) first
ds = TensorDataset(torch.arange(64.0))
n = sum(int(b[0].sum()) for b in DataLoader(ds, batch_size=8, num_workers=3))
ts = [threading.Thread(target=lambda: [torch.ones(256, device="cuda").sum().item() for _ in range(200)])
      for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print("sum", n, "pid-ok", os.getpid() > 0, flush=True)
sys.exit(7)
PY
    echo "exit $? (injection: ${inj:+on}${inj:-off})"
  done
fi
echo "== pages left behind: $(ls $T/tel | wc -l)"
rm -rf "$T"
