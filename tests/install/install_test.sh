#!/usr/bin/env bash
# install_test.sh - the installed tree works for an outside program.
#
#   install_test.sh BUILD_DIR SOURCE_DIR CMAKE CC PKG_CONFIG VERSION [SANITIZE_FLAGS]
#
# Installs BUILD_DIR into a fresh temporary prefix (cmake --install), checks
# what must be there (headers, libvyrecore.so with its soname links, .a, .pc,
# CMake package, tools, injection library, man pages, bash completions),
# builds examples/ against the prefix twice, through pkg-config (its
# Makefile) and through find_package(vyrecore) (its CMakeLists.txt), then
# runs them: nvtx_telemetry must show up in the installed vyre-top's --json
# and --batch output with its ranges, and compile_launch must say there is
# no NVIDIA driver and exit 3 when there is none. Registered in CTest by
# tests/CMakeLists.txt, which passes the compiler and, in a sanitized build,
# the -fsanitize flags: a program linked with a sanitized libvyrecore needs
# them too. Removes its temporary directory.
set -u

if [ $# -lt 6 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR CMAKE CC PKG_CONFIG VERSION [SANITIZE_FLAGS]" >&2
    exit 2
fi
BUILD=$1 SRC=$2 CMAKE=$3 CC=$4 PKG_CONFIG=$5 VERSION=$6 SAN=${7:-}
# The soname's number is the ABI's (libcore/CMakeLists.txt), not the release's.
MAJOR=$(sed -n 's/^set(VYRE_SOVERSION \([0-9][0-9]*\))$/\1/p' "$SRC/libcore/CMakeLists.txt")
if [ -z "$MAJOR" ]; then
    echo "FAIL: no set(VYRE_SOVERSION N) in $SRC/libcore/CMakeLists.txt" >&2
    exit 2
fi

fails=0 mark=0
fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}
pass() { # says "ok" for a group of checks only when none of them failed
    [ $fails -eq $mark ] && echo "ok: $*"
    mark=$fails
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/vyre-install-test.XXXXXX") || exit 2
BG_PID=
cleanup() {
    if [ -n "$BG_PID" ] && kill -0 "$BG_PID" 2>/dev/null; then
        kill "$BG_PID" 2>/dev/null
        wait "$BG_PID" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
P=$TMP/prefix

# Everything the programs under test do stays in the temporary directory.
export HOME=$TMP/home XDG_CACHE_HOME=$TMP/home/.cache XDG_DATA_HOME=$TMP/home/.local/share
export VYRE_TELEMETRY_DIR=$TMP/telemetry VYRE_PTX_CACHE_DIR=$TMP/ptx-cache
unset VYRE_TELEMETRY VYRE_RANGE_TIMING VYRE_CUDA_LIBRARY
mkdir -p "$HOME"
# cuInit under ASan needs the shadow gap unprotected (a GPU machine only).
case $SAN in *address*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}protect_shadow_gap=0 ;; esac

# ---- cmake --install ------------------------------------------------------
if ! "$CMAKE" --install "$BUILD" --prefix "$P" >"$TMP/install.log" 2>&1; then
    cat "$TMP/install.log" >&2
    echo "FAIL: cmake --install $BUILD --prefix $P" >&2
    exit 1
fi
pass "cmake --install into a fresh prefix"

# ---- installed files --------------------------------------------------------
for h in "$SRC"/libcore/include/vyre/*.h; do
    [ -f "$P/include/vyre/${h##*/}" ] || fail "header include/vyre/${h##*/} not installed"
done
if grep -l '#include <\(cuda\|cupti\|nvrtc\|nvJitLink\|nvml\|nvtx3\)' "$P"/include/vyre/*.h; then
    fail "a public header above includes a CUDA header: the .pc would need the CUDA include dir"
fi
for f in "$P"/include/vyre/*.h; do
    # A public header may include only the other public headers.
    for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
        [ -f "$P/include/vyre/$inc" ] || fail "${f##*/} includes '$inc', which is not installed"
    done
done
# Test hooks live in private headers under libcore/src (vyre__, reached
# through vyrecore_internal), never fenced in an installed one.
if grep -n 'VYRE_TESTING\|VYRE_TEST_API' "$P"/include/vyre/*.h; then
    fail "an installed header above declares a test hook: move it to a private header under libcore/src"
fi
# Structs that grow are opaque: vyre_config is declared, never defined, in
# an installed header (its layout is libcore/src/cache/config_internal.h's).
if grep -n 'struct vyre_config *{' "$P"/include/vyre/*.h; then
    fail "an installed header above defines struct vyre_config: it is opaque"
fi
pass "public headers under include/vyre/, self-contained, no CUDA headers, no test hooks"

[ -f "$P/lib/libvyrecore.so.$VERSION" ] || fail "lib/libvyrecore.so.$VERSION missing"
[ "$(readlink "$P/lib/libvyrecore.so.$MAJOR")" = "libvyrecore.so.$VERSION" ] ||
    fail "lib/libvyrecore.so.$MAJOR is not a link to libvyrecore.so.$VERSION"
[ "$(readlink "$P/lib/libvyrecore.so")" = "libvyrecore.so.$MAJOR" ] ||
    fail "lib/libvyrecore.so is not a link to libvyrecore.so.$MAJOR"
soname=$(readelf -d "$P/lib/libvyrecore.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libvyrecore.so.$MAJOR" ] || fail "soname is '$soname', not libvyrecore.so.$MAJOR"
# Hidden visibility: the public API is exported, vyre__ internals are not.
syms=$(nm -D --defined-only "$P/lib/libvyrecore.so.$VERSION")
grep -q ' T vyre_pipeline_compile$' <<<"$syms" || fail "libvyrecore.so does not export vyre_pipeline_compile"
grep -q ' vyre__' <<<"$syms" && fail "libvyrecore.so exports vyre__ internals"
ar t "$P/lib/libvyrecore.a" | grep -q 'pipeline\.c\.o$' || fail "lib/libvyrecore.a lacks pipeline.c.o"
pass "libvyrecore.so (soname libvyrecore.so.$MAJOR, links) and libvyrecore.a"

for f in bin/vyre-bench bin/vyre-cachectl bin/vyre-top bin/vyre-exporter; do
    [ -x "$P/$f" ] || fail "$f not installed"
done
[ -f "$P/lib/libvyre-inject.so" ] || fail "lib/libvyre-inject.so not installed"
"$P/bin/vyre-bench" --version | grep -q "^vyre-bench $VERSION " || fail "installed vyre-bench --version"
pass "tools and libvyre-inject.so"

export PKG_CONFIG_PATH=$P/lib/pkgconfig
pc_version=$("$PKG_CONFIG" --modversion vyrecore) || fail "pkg-config finds no vyrecore in $PKG_CONFIG_PATH"
[ "$pc_version" = "$VERSION" ] || fail "vyrecore.pc says version '$pc_version', not $VERSION"
cflags=$("$PKG_CONFIG" --cflags vyrecore)
libs=$("$PKG_CONFIG" --libs vyrecore)
static_libs=$("$PKG_CONFIG" --static --libs vyrecore)
case $cflags in *cuda*) fail "pkg-config --cflags names a CUDA directory: $cflags" ;; esac
[ "$(cd "$("$PKG_CONFIG" --variable=includedir vyrecore)" && pwd -P)" = "$(cd "$P/include" && pwd -P)" ] ||
    fail "vyrecore.pc's includedir is not $P/include"
case $libs in *-lvyrecore*) ;; *) fail "pkg-config --libs: '$libs'" ;; esac
for l in -lsqlite3 -lcrypto -lxxhash -ljansson -ldl -lm; do
    case " $static_libs " in *" $l "*) ;; *) fail "pkg-config --static --libs lacks $l: $static_libs" ;; esac
done
pass "vyrecore.pc: $cflags $libs"

for f in vyrecoreConfig.cmake vyrecoreConfigVersion.cmake vyrecoreTargets.cmake; do
    [ -f "$P/lib/cmake/vyrecore/$f" ] || fail "lib/cmake/vyrecore/$f missing"
done
pass "CMake package files"

# Man pages: they parse without a warning, and name every option the tool's
# own --help (and each command's) names, so the two cannot drift apart.
help_options() { # TOOL [COMMAND...]: the --long options of the help texts
    local tool=$1 c
    shift
    {
        "$P/bin/$tool" --help
        for c in "$@"; do "$P/bin/$tool" "$c" --help; done
    } 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u
}
check_man() { # TOOL COMMANDS...
    local tool=$1 page=$P/share/man/man1/$1.1 o
    if [ ! -f "$page" ]; then
        fail "share/man/man1/$tool.1 not installed"
        return
    fi
    grep -q "^\.TH ${tool^^} 1 " "$page" || fail "$tool.1 has no '.TH ${tool^^} 1' line"
    if command -v groff >/dev/null; then
        local warn
        warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
        [ -z "$warn" ] || fail "groff warns on $tool.1: $warn"
    else
        echo "note: groff is not installed: $tool.1 is not parsed, only read"
    fi
    local text
    text=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$page")
    for o in $(help_options "$@"); do
        grep -q -F -- "$o" <<<"$text" || fail "$tool.1 does not mention $o (from $tool --help)"
    done
}
check_man vyre-bench devices run runs show compare export
check_man vyre-cachectl stats ls show verify prune reindex seed clear jit
check_man vyre-top
check_man vyre-exporter
pass "man pages"

# Bash completions: each sources cleanly in a bare bash (no bash-completion
# package), registers its tool and completes a command word.
check_completion() { # TOOL WORD EXPECTED
    local f=$P/share/bash-completion/completions/$1 out
    if [ ! -f "$f" ]; then
        fail "share/bash-completion/completions/$1 not installed"
        return
    fi
    out=$(bash --norc --noprofile -c '
        source "$1" || exit 1
        complete -p "$2" >/dev/null || exit 1
        fn=$(complete -p "$2" | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
        COMP_WORDS=("$2" "$3") COMP_CWORD=1
        PATH=$4:$PATH "$fn"
        echo "${COMPREPLY[*]}"' _ "$f" "$1" "$2" "$P/bin" 2>&1)
    [ "$out" = "$3" ] || fail "completion of '$1 $2' gave '$out', expected '$3'"
}
check_completion vyre-bench ru "run runs"
check_completion vyre-cachectl pr "prune"
check_completion vyre-top --no "--no-color --no-gpu --no-cache-usage"
check_completion vyre-exporter --no "--no-gpu --no-cache --no-cache-usage"
pass "bash completions"

# ---- build the examples against the prefix ---------------------------------
mkdir -p "$TMP/ex-pc"
if make -s -C "$TMP/ex-pc" -f "$SRC/examples/Makefile" CC="$CC" \
    CFLAGS="-O1 -g -Wall -Wextra -Werror $SAN" LDFLAGS="$SAN" >"$TMP/make.log" 2>&1; then
    pass "examples built through pkg-config (examples/Makefile)"
else
    cat "$TMP/make.log" >&2
    fail "examples do not build through pkg-config"
fi

# An outside program linked with the static library through
# `pkg-config --static --libs` (libvyrecore.a in place of -lvyrecore, the
# system's libraries as they come). Debian's libcurl.pc lists its own
# static-only dependencies (-llber, -lzstd, ...) in Libs.private, which
# `--static` used to pull in through Requires.private: libcurl, and the
# link failed on "cannot find -llber" without the -dev packages of every
# library curl was built with.
mkdir -p "$TMP/ex-static"
static_link=$(printf '%s\n' $static_libs | sed "s|^-lvyrecore\$|$P/lib/libvyrecore.a|" | tr '\n' ' ')
if "$CC" -std=c11 $cflags $SAN "$SRC/examples/compile_launch.c" -o "$TMP/ex-static/compile_launch" \
    $static_link $SAN >"$TMP/static.log" 2>&1; then
    ldd "$TMP/ex-static/compile_launch" | grep -q 'libvyrecore' &&
        fail "ex-static/compile_launch is linked with libvyrecore.so, not libvyrecore.a"
    pass "an outside program linked statically through pkg-config --static --libs"
else
    cat "$TMP/static.log" >&2
    fail "pkg-config --static --libs vyrecore does not link: $static_libs"
fi

# PKG_CONFIG_PATH is left out here: find_package must find the package alone.
if env -u PKG_CONFIG_PATH "$CMAKE" -S "$SRC/examples" -B "$TMP/ex-cmake" -DCMAKE_PREFIX_PATH="$P" \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror $SAN" \
    -DCMAKE_EXE_LINKER_FLAGS="$SAN" >"$TMP/cmake.log" 2>&1 &&
    "$CMAKE" --build "$TMP/ex-cmake" >>"$TMP/cmake.log" 2>&1; then
    found=$(sed -n 's/^vyrecore_DIR:PATH=//p' "$TMP/ex-cmake/CMakeCache.txt")
    [ "$found" = "$P/lib/cmake/vyrecore" ] || fail "find_package(vyrecore) found '$found', not the prefix"
    pass "examples built through find_package(vyrecore) (examples/CMakeLists.txt)"
else
    cat "$TMP/cmake.log" >&2
    fail "examples do not build through find_package(vyrecore)"
fi

# ---- config_show: the opaque configuration through its getters -------------
if [ -x "$TMP/ex-pc/config_show" ]; then
    mkdir -p "$TMP/cfg-cache"
    printf 'max_age = 30d\nno_such_key = 1\n' >"$TMP/cfg-cache/vyre.conf"
    out=$("$TMP/ex-pc/config_show" "$TMP/cfg-cache" umask=022 2>&1) ||
        fail "config_show exited $?: $out"
    grep -q "^max_age  *30d  *(2592000000000000) from $TMP/cfg-cache/vyre.conf:1\$" <<<"$out" ||
        fail "config_show does not show max_age from the cache's file: $out"
    grep -q '^umask  *022  *(18) from -o$' <<<"$out" || fail "config_show does not show -o umask: $out"
    grep -q "^warning: .*no_such_key" <<<"$out" || fail "config_show does not show the unknown key: $out"
    grep -q '^set in memory: max_size = 1073741824 bytes' <<<"$out" ||
        fail "config_show could not set max_size: $out"
    pass "config_show reads the opaque vyre_config through its getters"
fi

# ---- cache_stats: a cache read-only, its problems and remotes ---------------
if [ -x "$TMP/ex-pc/cache_stats" ]; then
    out=$(env -u VYRE_REMOTE_CACHE "$TMP/ex-pc/cache_stats" "$TMP/no-cache" 2>&1) ||
        fail "cache_stats exited $?: $out"
    grep -q "^cache $TMP/no-cache (not created yet)\$" <<<"$out" && grep -q '^0 entries, 0 B on disk' <<<"$out" ||
        fail "cache_stats does not show an empty cache: $out"
    [ ! -e "$TMP/no-cache" ] || fail "cache_stats created the cache it only reads"
    mkdir -p "$TMP/stats-cache"
    printf 'max_size = 2G\nno_such_key = 1\n' >"$TMP/stats-cache/vyre.conf"
    out=$(VYRE_REMOTE_CACHE="http://127.0.0.1:9/x" "$TMP/ex-pc/cache_stats" "$TMP/stats-cache" 2>&1) ||
        fail "cache_stats exited $?: $out"
    grep -q '(limit 2.0 GiB)$' <<<"$out" || fail "cache_stats does not show the limit: $out"
    grep -q "^configuration warning: .*no_such_key" <<<"$out" ||
        fail "cache_stats does not show the unknown key: $out"
    grep -q '^remote 1: http://127.0.0.1:9/x: 0 hits, 0 misses, 0 errors$' <<<"$out" ||
        fail "cache_stats does not show the remote's totals: $out"
    pass "cache_stats reads a cache read-only: size, limit, problems, remote totals"
fi

# ---- nvtx_telemetry, seen by the installed vyre-top ------------------------
N=250
if [ -x "$TMP/ex-pc/nvtx_telemetry" ]; then
    "$TMP/ex-pc/nvtx_telemetry" $N 120 >"$TMP/tel.out" 2>"$TMP/tel.err" &
    BG_PID=$!
    for _ in $(seq 1 300); do # up to 30 s for the loop to finish and publish
        grep -q '^published to ' "$TMP/tel.out" && break
        kill -0 $BG_PID 2>/dev/null || break
        sleep 0.1
    done
    page=$VYRE_TELEMETRY_DIR/$BG_PID.vtel
    if ! grep -q "^published to $page; holding" "$TMP/tel.out"; then
        fail "nvtx_telemetry did not publish $page: $(cat "$TMP/tel.out" "$TMP/tel.err")"
    else
        grep -q "^range vyre.cuda.codegen: $N timed, " "$TMP/tel.out" ||
            fail "nvtx_telemetry did not time $N ranges: $(cat "$TMP/tel.out")"
        json=$("$P/bin/vyre-top" --json -n 1 -d 0.1 --no-gpu 2>"$TMP/top.err")
        rc=$?
        [ $rc -eq 0 ] || fail "vyre-top --json exited $rc: $(cat "$TMP/top.err")"
        grep -q -F "\"pid\":$BG_PID,\"name\":\"nvtx_telemetry\"" <<<"$json" ||
            fail "vyre-top --json does not list process $BG_PID (nvtx_telemetry): $json"
        grep -q -F "\"published\":true" <<<"$json" ||
            fail "vyre-top --json: the page is not published: $json"
        grep -q -F "{\"name\":\"vyre.cuda.codegen\",\"count\":$N," <<<"$json" ||
            fail "vyre-top --json does not show $N vyre.cuda.codegen ranges: $json"
        batch=$("$P/bin/vyre-top" --batch -n 1 -d 0.1 --width 160 --no-gpu 2>&1)
        grep -q "nvtx_telemetry" <<<"$batch" && grep -q "vyre.cuda.codegen" <<<"$batch" ||
            fail "vyre-top --batch does not show nvtx_telemetry and its range: $batch"
        pass "vyre-top shows nvtx_telemetry's page and its $N vyre.cuda.codegen ranges"
    fi
    kill -TERM $BG_PID 2>/dev/null
    wait $BG_PID
    rc=$?
    BG_PID=
    [ $rc -eq 0 ] || fail "nvtx_telemetry exited $rc after SIGTERM: $(cat "$TMP/tel.err")"
    [ ! -e "$page" ] || fail "nvtx_telemetry left its page $page behind"
    pass "nvtx_telemetry ends on SIGTERM with status 0 and removes its page"
fi
if [ -x "$TMP/ex-cmake/nvtx_telemetry" ]; then
    out=$("$TMP/ex-cmake/nvtx_telemetry" 20 0 2>&1)
    rc=$?
    [ $rc -eq 0 ] && grep -q '^range vyre.cuda.codegen: 20 timed, ' <<<"$out" ||
        fail "nvtx_telemetry (CMake build) exited $rc: $out"
    out=$("$TMP/ex-cmake/nvtx_telemetry" 12x 2>&1)
    rc=$?
    [ $rc -eq 2 ] && [ "$out" = "nvtx_telemetry: error: invalid iteration count '12x'
hint: give a number from 0 to 100000000, e.g. 'nvtx_telemetry 1000'" ] ||
        fail "nvtx_telemetry 12x: exit $rc, '$out'"
    pass "nvtx_telemetry (CMake build) runs; bad input is one message and exit 2"
fi

# ---- compile_launch: no driver is exit 3 with a clear message ---------------
for build in ex-pc ex-cmake ex-static; do
    exe=$TMP/$build/compile_launch
    [ -x "$exe" ] || continue
    # A driver that cannot be loaded, on any machine.
    VYRE_CUDA_LIBRARY=$TMP/no-such-dir/libcuda.so.1 "$exe" >"$TMP/cl.out" 2>"$TMP/cl.err"
    rc=$?
    [ $rc -eq 3 ] || fail "$build/compile_launch without a driver exited $rc, not 3: $(cat "$TMP/cl.err")"
    [ "$(head -n 1 "$TMP/cl.err")" = "compile_launch: no NVIDIA driver: nothing can be launched on this machine" ] ||
        fail "$build/compile_launch without a driver: $(cat "$TMP/cl.err")"
    grep -q "^hint: " "$TMP/cl.err" || fail "$build/compile_launch without a driver gives no hint"
    [ ! -s "$TMP/cl.out" ] || fail "$build/compile_launch without a driver printed on stdout: $(cat "$TMP/cl.out")"
done
pass "compile_launch without a driver: 'no NVIDIA driver', a hint, exit 3"

# This machine as it is: no GPU in CI (exit 3 again); on a GPU machine the
# first run compiles and the second is a disk-cache hit.
if [ -x "$TMP/ex-pc/compile_launch" ]; then
    "$TMP/ex-pc/compile_launch" 100003 >"$TMP/cl.out" 2>"$TMP/cl.err"
    rc=$?
    case $rc in
    3)
        grep -q "^compile_launch: no NVIDIA \(driver\|GPU\): " "$TMP/cl.err" ||
            fail "compile_launch exited 3 without saying why: $(cat "$TMP/cl.err")"
        pass "compile_launch: $(head -n 1 "$TMP/cl.err")"
        ;;
    0)
        grep -q '^first compile: compiled ' "$TMP/cl.out" &&
            grep -q '^second compile: module cache' "$TMP/cl.out" &&
            grep -q 'all 100003 results correct$' "$TMP/cl.out" ||
            fail "compile_launch on a GPU: $(cat "$TMP/cl.out" "$TMP/cl.err")"
        "$TMP/ex-pc/compile_launch" 1000 >"$TMP/cl.out" 2>"$TMP/cl.err"
        rc=$?
        [ $rc -eq 0 ] && grep -q '^first compile: disk cache hit ' "$TMP/cl.out" ||
            fail "compile_launch, second run (exit $rc): $(cat "$TMP/cl.out" "$TMP/cl.err")"
        pass "compile_launch on a GPU: compiled, then a disk-cache hit; results correct"
        ;;
    *)
        fail "compile_launch exited $rc: $(cat "$TMP/cl.out" "$TMP/cl.err")"
        ;;
    esac
fi

if [ $fails -ne 0 ]; then
    echo "install test: $fails check(s) failed" >&2
    exit 1
fi
echo "install test: all checks passed"
