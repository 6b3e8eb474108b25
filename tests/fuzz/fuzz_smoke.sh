#!/usr/bin/env bash
# fuzz_smoke.sh SOURCE_DIR BUILD_DIR - keeps the libFuzzer targets building
# and running: configures a clang build of fuzz/ in BUILD_DIR, builds every
# target and runs each over its seed corpus for a short, fixed number of
# executions (the long runs, a million executions each, are done by hand:
# see fuzz/CMakeLists.txt). New inputs go to a scratch folder inside
# BUILD_DIR, never into the repository's corpus.
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
  scratch="$build/scratch-$t"
  rm -rf "$scratch" && mkdir -p "$scratch"
  echo "fuzz_smoke: $t, $runs executions over $(ls "$corpus" | wc -l) seeds"
  # The exit status of the run itself (a "cmd | grep || true" pipeline would
  # report true's), and crash files in BUILD_DIR, not the working directory.
  rc=0
  "$build/fuzz/$t" -runs="$runs" -print_final_stats=1 -artifact_prefix="$build/" \
    "$scratch" "$corpus" >"$build/$t.log" 2>&1 || rc=$?
  grep -E "^(stat::number_of_executed_units|stat::new_units_added|INFO: Running|==[0-9]+==ERROR|SUMMARY)" \
    "$build/$t.log" || true
  rm -rf "$scratch"
  [ "$rc" -eq 0 ] || { echo "fuzz_smoke: $t failed (exit $rc)" >&2; exit 1; }
done
echo "fuzz_smoke: all targets ran clean"
