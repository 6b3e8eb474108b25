#!/usr/bin/env bash
# The house-rule checker (.ci/check-conventions) on a small tree: clean, it
# passes; with one planted violation of each rule, it fails and names the
# file, line and rule of each. With the built libvyrecore.so, the public
# API rule also holds for this tree and that library (check-exports --so:
# every export declared, used outside libcore, at most the limit).
# Usage: test_check_conventions.sh CHECKER [LIBVYRECORE_SO]
set -u
checker="$1"
so="${2:-}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/vyre-test-conventions.XXXXXX")" || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/libcore/src/base" "$tmp/libcore/src/cache" "$tmp/libcore/include/vyre" \
         "$tmp/tools/common" "$tmp/tools/vyre-x" "$tmp/tests"
cat > "$tmp/libcore/src/base/clock.c" <<'C'
#include <time.h>
/* the one place: clock_gettime(CLOCK_MONOTONIC) */
long vyre__mono_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_nsec; }
C
cat > "$tmp/tools/common/tool_clock.c" <<'C'
#include <time.h>
long tool_now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_nsec; }
C
cat > "$tmp/libcore/src/cache/ok.c" <<'C'
/* a comment may name vyre-cachectl, or say "vyre-bench", or "%.560s" */
int ok(void) { return 0; }
void hex2(char *b, const char *h) { snprintf(b, 3, "%.2s", h); /* bounded: two hex digits */ }
/* bounded: a fixed-width column */
void col(char *b, const char *h) { snprintf(b, 8, "%.7s", h); }
C
cat > "$tmp/tests/t.c" <<'C'
int t(void) { char b[4]; strcpy(b, "x"); return clock_gettime(0, 0); }
C
# A public call that a tool calls.
cat > "$tmp/libcore/include/vyre/thing.h" <<'C'
/* vyre_thing_used: what a tool calls. */
VYRE_EXTERN int vyre_thing_used(void);
C
cat > "$tmp/tools/vyre-x/use.c" <<'C'
int vyre_thing_used(void);
int use(void) { return vyre_thing_used(); }
C
out="$("$checker" "$tmp" 2>&1)"; rc=$?
if [ "$rc" -ne 0 ]; then echo "a clean tree failed (exit $rc):"; echo "$out"; exit 1; fi

# One violation of each rule.
cat > "$tmp/libcore/src/cache/bad.c" <<'C'
#include <time.h>
static const char *hint(void) { return "run 'vyre-cachectl ls'"; }
long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_nsec; }
C
cat > "$tmp/tools/vyre-x/main.c" <<'C'
#include <string.h>
#include <time.h>
void copy(char *d, const char *s) { strcpy(d, s); }
long now2(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_nsec; }
void name(char *b, const char *url) { snprintf(b, 640, "remote %.560s hits", url); }
C
{
  echo "int long_one(int x)"; echo "{"
  for i in $(seq 1 125); do echo "    x += $i;"; done
  echo "    return x;"; echo "}"
} > "$tmp/tools/vyre-x/long.c"
# An upward call (base calls the cache) and a circle of two tool files.
cat > "$tmp/libcore/src/cache/low.c" <<'C'
int vyre__cache_thing(void) { return 1; }
C
cat > "$tmp/libcore/src/base/up.c" <<'C'
int vyre__cache_thing(void);
int vyre__base_up(void) { return vyre__cache_thing(); }
C
cat > "$tmp/tools/vyre-x/ping.c" <<'C'
int x_pong(int n);
int x_ping(int n) { return n ? x_pong(n - 1) : 0; }
C
cat > "$tmp/tools/vyre-x/pong.c" <<'C'
int x_ping(int n);
int x_pong(int n) { return n ? x_ping(n - 1) : 1; }
C
# An export no program outside libcore calls: a test's call and a tool's
# comment are no use.
cat >> "$tmp/libcore/include/vyre/thing.h" <<'C'
VYRE_EXTERN int vyre_thing_unused(void);
C
echo 'int t2(void) { return vyre_thing_unused(); }' >> "$tmp/tests/t.c"
echo '/* vyre_thing_unused() would help here */' >> "$tmp/tools/vyre-x/use.c"
out="$("$checker" "$tmp" 2>&1)"; rc=$?
fails=0
expect() {
  if ! grep -qF -- "$1" <<<"$out"; then echo "not reported: $1"; fails=1; fi
}
[ "$rc" -eq 1 ] || { echo "exit $rc, expected 1"; fails=1; }
expect "libcore/src/cache/bad.c:2:"
expect "libcore/src/cache/bad.c:3:"
expect "tools/vyre-x/main.c:3:"
expect "tools/vyre-x/main.c:4:"
expect "tools/vyre-x/main.c:5:"
expect "tools/vyre-x/long.c:1: long_one is 129 lines"
expect "libcore/src/base/up.c: calls vyre__cache_thing of libcore/src/cache/low.c (layer cache) from layer base"
expect "tools/vyre-x/ping.c: in a circle of 2 files"
expect "libcore/include/vyre/thing.h: vyre_thing_unused   <- exported, called by no tool"
if grep -qE "tests/t.c|ok.c|tool_clock.c|base/clock.c|vyre_thing_used" <<<"$out"; then
  echo "reported what the rules allow"; fails=1
fi
[ "$fails" -eq 0 ] || { echo "--- checker output:"; echo "$out"; exit 1; }
echo "check-conventions: clean tree passes; 9 planted violations reported"

# The source tree's public API against the library built from it.
if [ -n "$so" ]; then
  exports="$(dirname "$checker")/check-exports"
  if ! out="$("$exports" "$(dirname "$checker")/.." --so "$so" 2>&1)"; then
    echo "check-exports --so $so failed:"; echo "$out"; exit 1
  fi
  echo "check-exports: $(nm -D --defined-only "$so" | grep -c ' T vyre_') exports of $so, each declared and used"
fi
