#!/usr/bin/env bash
# fuzz_smoke.sh SOURCE_DIR BUILD_DIR - keeps the libFuzzer targets building
# and running: configures a clang build of fuzz/ in BUILD_DIR, builds every
# target and runs each over its seed corpus for a short, fixed number of
# executions, as many targets at once as there are CPUs (the long runs, a
# million executions each, are done by hand: see fuzz/CMakeLists.txt). New
# inputs go to a scratch folder inside BUILD_DIR, never into the
# repository's corpus.
set -euo pipefail
src=$(cd "${1:?usage: fuzz_smoke.sh SOURCE_DIR BUILD_DIR}" && pwd)
build=${2:?usage: fuzz_smoke.sh SOURCE_DIR BUILD_DIR}
runs=${FUZZ_SMOKE_RUNS:-20000}
if ! command -v clang >/dev/null; then
  echo "fuzz_smoke: clang not found: install clang (CI does)" >&2
  exit 1
fi
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DVYRE_FUZZ=ON -DVYRE_BUILD_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVYRE_WERROR=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log" >&2; exit 1; }
targets=(fuzz_blob_header fuzz_telemetry_page fuzz_sweep_spec fuzz_cubin_kernels fuzz_config
         fuzz_sweep_binding fuzz_remote_spec fuzz_redis_reply)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
for t in "${targets[@]}"; do
  corpus="$src/fuzz/corpus/${t#fuzz_}"
  [ -d "$corpus" ] || { echo "fuzz_smoke: no seed corpus $corpus" >&2; exit 1; }
done
# One target's run: its exit status (not a pipeline's) into $build/$t.rc,
# crash files in BUILD_DIR, not the working directory.
run_one() {
  local t=$1 corpus="$src/fuzz/corpus/${1#fuzz_}" scratch="$build/scratch-$1" rc=0
  rm -rf "$scratch" && mkdir -p "$scratch"
  "$build/fuzz/$t" -runs="$runs" -print_final_stats=1 -artifact_prefix="$build/" \
    "$scratch" "$corpus" >"$build/$t.log" 2>&1 || rc=$?
  rm -rf "$scratch"
  echo "$rc" >"$build/$t.rc"
}
# The targets are independent (own scratch folder, log and status file): as
# many run at once as there are CPUs, the slowest two first (telemetry_page
# took 35 s of the 65, config 16, the six others 15 together).
jobs_max=$(nproc)
order=(fuzz_telemetry_page fuzz_config)
for t in "${targets[@]}"; do
  case " ${order[*]} " in *" $t "*) ;; *) order+=("$t") ;; esac
done
for t in "${order[@]}"; do
  rm -f "$build/$t.rc"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  run_one "$t" &
done
wait
failed=0
for t in "${targets[@]}"; do
  echo "fuzz_smoke: $t, $runs executions over $(ls "$src/fuzz/corpus/${t#fuzz_}" | wc -l) seeds"
  grep -E "^(stat::number_of_executed_units|stat::new_units_added|INFO: Running|==[0-9]+==ERROR|SUMMARY)" \
    "$build/$t.log" || true
  rc=$(cat "$build/$t.rc" 2>/dev/null || echo "none")
  [ "$rc" = 0 ] || { echo "fuzz_smoke: $t failed (exit $rc)" >&2; failed=1; }
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz_smoke: all targets ran clean"
