#!/usr/bin/env bash
# Makes the README's two pictures with the project's own binaries, on a
# machine without a GPU (what this repository's CI and development machines
# are): docs/img/bench-plot.png and docs/img/vyre-top.png.
#
# usage: docs/img/make-pictures.sh BUILD_DIR   (a non-sanitized build: the
#        README's command 1 makes ./build)
#
# bench-plot.png: `vyre-bench run --suite cache --quick` into a temporary
# database, then `vyre-bench plot last -o bench-plot.png` (gnuplot).
# vyre-top.png: vyre-top in a 120x28 tmux pane, beside two
# telemetry_publisher processes of the build's tests (stand-ins for
# instrumented programs: counters, an NVTX range, a kernel) and the tests'
# fake NVML (tests/fakes/fakenvml.c: two "NVIDIA Fake GPU"s, the publishers
# listed on them as compute processes), a copy of the Triton cache fixture as
# Triton's cache and one seeded blob in vyre's; the pane is captured with
# its colours (`tmux capture-pane -e`) and drawn cell by cell through gnuplot
# (docs/img/ansi2png.py). Every figure in it is the fakes', not a GPU's.
set -euo pipefail
build=$(cd "${1:?usage: make-pictures.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
out="$src/docs/img"
# A short fixed home, so the paths the picture shows say what they are.
tmp="/tmp/vyre-demo-$(id -un)"
if ! mkdir -m 700 "$tmp"; then
  echo "make-pictures.sh: $tmp exists (a run in progress, or left by a killed one): remove it first" >&2
  exit 2
fi
sock="vyre-pictures-$$"
pids=()
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

export HOME="$tmp" XDG_DATA_HOME="$tmp/.local/share" XDG_CACHE_HOME="$tmp/.cache"
export XDG_CONFIG_HOME="$tmp/.config" TMPDIR="$tmp"

# The plot: a real run of the cache suite on this machine.
"$build/tools/vyre-bench" run --suite cache --quick -q >/dev/null
"$build/tools/vyre-bench" plot last -o "$out/bench-plot.png"

# vyre-top, beside stand-ins.
export VYRE_TELEMETRY_DIR="$tmp/tel" TRITON_CACHE_DIR="$tmp/.triton/cache"
mkdir -m 700 "$VYRE_TELEMETRY_DIR"
mkdir -p "$(dirname "$TRITON_CACHE_DIR")"
cp -r "$src/tests/fixtures/triton/cache" "$TRITON_CACHE_DIR"
printf '\177ELF\002\001\001\000%0512d' 0 >"$tmp/k.cubin"
"$build/tools/vyre-cachectl" seed "$tmp/k.cubin" --arch sm_90 -q >/dev/null
cd "$build/tests"  # the COMMAND column then shows no path of this machine
for _ in 1 2; do
  ./telemetry_publisher 60 >/dev/null &
  pids+=($!)
done
sleep 1
export VYRE_NVML_LIBRARY="$build/tests/libfakenvml.so" FAKENVML_GPUS=2 FAKENVML_THROTTLE=0
export FAKENVML_PROCS="0:${pids[0]}:12884901888,1:${pids[1]}:4294967296"
export FAKENVML_PROC_UTIL="0:${pids[0]}:71:38,1:${pids[1]}:23:9"
tmux -L "$sock" new-session -d -s top -x 120 -y 28 \
  "env TERM=xterm-256color $build/tools/vyre-top -d 1"
sleep 8
tmux -L "$sock" capture-pane -t top -e -p >"$tmp/top.ansi"
python3 "$src/docs/img/ansi2png.py" "$tmp/top.ansi" "$out/vyre-top.png" --cols 120 --rows 28
echo "wrote $out/bench-plot.png and $out/vyre-top.png"
