#!/usr/bin/env python3
"""Validates the REAL --json output of vyre-cachectl, vyre-top and vyre-bench
against the JSON Schemas in docs/schema/ (draft 2020-12, python3-jsonschema).

Everything runs in a fresh temporary directory, without a GPU: a cache
seeded from a cubin with `vyre-cachectl seed`, then damaged for `verify`;
two real `vyre-bench run --suite cache` runs; `vyre-bench devices` through
the fake libcuda; `vyre-top --json` reading the telemetry page of a
stand-in process (tests/schema/telemetry_publisher.c), with the fake NVML.
Every schema must be exercised by at least one real document, and a
document with a wrong unit key (or a string where axes must be an object)
must fail validation, so that this test can fail.

Registered in CTest by tests/CMakeLists.txt (test "json_schema").
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from tu_memdir import mkdtemp_mem  # noqa: E402

try:
    import jsonschema
except ImportError:
    print("check_json_schemas: error: the python3 'jsonschema' module is missing\n"
          "hint: install the Debian package python3-jsonschema", file=sys.stderr)
    sys.exit(1)

FAILURES = []
USED = set()


def du_bytes(path):
    """Bytes on disk of path and all below it, as du -s counts them
    (st_blocks * 512 from lstat, links not followed): what the tools'
    sizes count."""
    total = os.lstat(path).st_blocks * 512
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            total += os.lstat(os.path.join(root, n)).st_blocks * 512
    return total


def fail(msg):
    FAILURES.append(msg)
    print("FAIL " + msg)


class Env:
    def __init__(self, args, tmp, memtmp):
        self.args = args
        self.tmp = tmp
        self.cache = os.path.join(tmp, "ptx-cache")
        self.db = os.path.join(tmp, "results.sqlite3")
        self.base = dict(os.environ)
        for var in ("VYRE_TELEMETRY", "CUDA_CACHE_MAXSIZE", "CUDA_CACHE_DISABLE", "TMUX"):
            self.base.pop(var, None)
        self.base.update({
            "HOME": tmp,
            "XDG_CACHE_HOME": os.path.join(tmp, "xdg-cache"),
            "XDG_DATA_HOME": os.path.join(tmp, "xdg-data"),
            "XDG_CONFIG_HOME": os.path.join(tmp, "xdg-config"),
            "VYRE_PTX_CACHE_DIR": self.cache,
            "VYRE_TELEMETRY_DIR": os.path.join(tmp, "tel"),
            "CUDA_CACHE_PATH": os.path.join(tmp, "cuda-jit"),
            "VYRE_CUDA_LIBRARY": os.path.join(tmp, "no-libcuda.so.1"),
            "VYRE_NVML_LIBRARY": args.fakenvml,
            # vyre-bench's scratch (the cache suite's blobs, reference.fsync):
            # a memory filesystem where there is one (tu_memdir.py).
            "TMPDIR": memtmp,
        })

    def run(self, argv, want_rc=(0,), extra_env=None):
        env = dict(self.base)
        env.update(extra_env or {})
        for var in [k for k, v in env.items() if v is None]:
            del env[var]  # None: unset it
        p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=300)
        if p.returncode not in want_rc:
            fail("%s: exit %d, expected %s\nstdout: %s\nstderr: %s"
                 % (" ".join(argv[1:]), p.returncode, want_rc, p.stdout, p.stderr))
        return p


BAD_UNITS = {"ms", "us", "sec", "secs", "seconds", "kb", "mb", "gb", "mhz", "ghz", "pct", "percent"}


def bad_unit_key(key):
    """Keys in units other than the base ones (docs/JSON.md, rule 2)."""
    words = key.lower().split("_")
    if BAD_UNITS.intersection(words) or key.lower() == "hit_rate":
        return True
    return len(words) > 1 and words[-1] == "s" and words[-2] != "per"


def walk_keys(doc, path=""):
    """Every object key in doc, with the path of its object; not the names
    inside "axes", which are the user's parameter names."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield path, k
            if k != "axes":
                yield from walk_keys(v, path + "/" + k if path else k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from walk_keys(v, "%s/%d" % (path, i) if path else str(i))


class Schemas:
    def __init__(self, directory):
        self.validators = {}
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".schema.json"):
                continue
            with open(os.path.join(directory, name)) as f:
                schema = json.load(f)
            jsonschema.Draft202012Validator.check_schema(schema)
            if schema.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
                fail("%s: not a draft 2020-12 schema" % name)
            self.validators[name[: -len(".schema.json")]] = jsonschema.Draft202012Validator(schema)
        if not self.validators:
            fail("no schemas in %s" % directory)

    def errors(self, schema, doc):
        return sorted(self.validators[schema].iter_errors(doc), key=lambda e: list(e.path))

    def check(self, schema, what, text):
        """Parses text as one JSON document and validates it; returns it."""
        try:
            doc = json.loads(text)
        except ValueError as e:
            fail("%s: not JSON (%s): %r" % (what, e, text[:400]))
            return None
        if schema not in self.validators:
            fail("%s: no schema docs/schema/%s.schema.json" % (what, schema))
            return doc
        for path, key in walk_keys(doc):
            if bad_unit_key(key):
                fail("%s: key '%s' at /%s is not in base units (docs/JSON.md)"
                     % (what, key, path))
        errs = self.errors(schema, doc)
        for e in errs[:10]:
            fail("%s against %s.schema.json: at /%s: %s"
                 % (what, schema, "/".join(str(x) for x in e.path), e.message))
        if not errs:
            print("ok   %-44s %s.schema.json" % (what, schema))
        USED.add(schema)
        return doc

    def must_reject(self, schema, what, doc):
        if not self.errors(schema, doc):
            fail("%s.schema.json accepts a wrong document: %s" % (schema, what))
        else:
            print("ok   rejected: %s" % what)


def fake_cubin(path, tag):
    # Stored as is by `seed` (no compiler): an ELF header and a tag.
    with open(path, "wb") as f:
        f.write(b"\x7fELF\x02\x01\x01\x00" + tag.encode() * 16)


def cachectl(env, sch):
    cc = [env.args.cachectl, "--cache-dir", env.cache]
    src = []
    for i in range(3):
        src.append(os.path.join(env.tmp, "k%d.cubin" % i))
        fake_cubin(src[-1], "kernel-%d" % i)
    p = env.run(cc + ["--json", "seed"] + src + ["--arch", "sm_80,sm_90", "--entry", "scale"])
    doc = sch.check("vyre-cachectl-seed", "vyre-cachectl seed", p.stdout)
    if doc and doc["seeded"] != 6:
        fail("seed: seeded %r blobs, expected 6" % doc["seeded"])
    p = env.run(cc + ["seed", src[0], "--arch", "sm_80", "--entry", "scale", "--json"])
    doc = sch.check("vyre-cachectl-seed", "vyre-cachectl seed (present)", p.stdout)
    if doc and [b["status"] for b in doc["blobs"]] != ["present"]:
        fail("seed again: %r" % doc["blobs"])

    p = env.run(cc + ["stats", "--json"])
    doc = sch.check("vyre-cachectl-stats", "vyre-cachectl stats", p.stdout)
    stats = doc
    p = env.run(cc + ["ls", "--json", "--sort", "size"])
    doc = sch.check("vyre-cachectl-ls", "vyre-cachectl ls", p.stdout)
    keys = [e["key"] for e in doc["entries"]] if doc else []
    if len(keys) != 6:
        fail("ls: %d entries, expected 6" % len(keys))
        return stats
    p = env.run(cc + ["show", keys[0][:12], "--json"])
    sch.check("vyre-cachectl-show", "vyre-cachectl show", p.stdout)
    # explain: a cubin seeded for sm_80 and sm_90, asked about for sm_90 (a
    # hit, the sm_80 entry one input apart) and for sm_90a (a miss).
    p = env.run(cc + ["explain", src[0], "--arch", "sm_90", "--json"])
    doc = sch.check("vyre-cachectl-explain", "vyre-cachectl explain (a hit)", p.stdout)
    if doc and (doc["state"], [e["differs"] for e in doc["entries"]]) != ("present", [["arch"]]):
        fail("explain: %r" % doc)
    p = env.run(cc + ["explain", src[0], "--arch", "sm_90a", "--json"], want_rc=(1,))
    sch.check("vyre-cachectl-explain", "vyre-cachectl explain (a miss)", p.stdout)

    # Remote stores: one nobody listens on (a refused connection), so that
    # every remote document is a real one without a server.
    sock = __import__("socket").socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    remote = {"VYRE_REMOTE_CACHE": "http://127.0.0.1:%d/vyre|connect-timeout=200" % port}
    p = env.run(cc + ["stats", "--json"], extra_env=remote)
    doc = sch.check("vyre-cachectl-stats", "vyre-cachectl stats (a remote)", p.stdout)
    if doc and len(doc["remotes"]) != 1:
        fail("stats with a remote: %r" % doc["remotes"])
    p = env.run(cc + ["remote", "check", "--json"], want_rc=(1,), extra_env=remote)
    doc = sch.check("vyre-cachectl-remote-check", "vyre-cachectl remote check", p.stdout)
    if doc and doc["remotes"][0]["reachable"] is not False:
        fail("remote check: %r" % doc)
    p = env.run(cc + ["remote", "push", keys[0], "--json"], want_rc=(1,), extra_env=remote)
    doc = sch.check("vyre-cachectl-remote-push", "vyre-cachectl remote push", p.stdout)
    if doc and (doc["blobs"], doc["failed"]) != (1, 1):
        fail("remote push: %r" % doc)
    p = env.run(cc + ["remote", "pull", keys[0], "--json"], want_rc=(1,), extra_env=remote)
    doc = sch.check("vyre-cachectl-remote-pull", "vyre-cachectl remote pull", p.stdout)
    if doc and doc["failed"] != 1:
        fail("remote pull: %r" % doc)
    p = env.run(cc + ["verify", "--json"])
    doc = sch.check("vyre-cachectl-verify", "vyre-cachectl verify (clean)", p.stdout)

    # Damage: flip a payload byte of one blob, leave a stray file.
    blob = os.path.join(env.cache, "blobs", keys[1][:2], keys[1] + ".vblob")
    with open(blob, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))
    # (A blob's name in the wrong shard: vyre's, so a repair quarantines
    # it; a file under another name is someone's and is left.)
    stray = keys[2] + ".vblob"
    with open(os.path.join(env.cache, "blobs", stray), "w") as f:
        f.write("not a blob\n")
    p = env.run(cc + ["verify", "--json"], want_rc=(1,))
    doc = sch.check("vyre-cachectl-verify", "vyre-cachectl verify (damaged)", p.stdout)
    if doc and len(doc["problems"]) < 2:
        fail("verify: expected the damaged blob and the stray file: %r" % doc["problems"])
    p = env.run(cc + ["--json", "verify", "--repair"])
    doc = sch.check("vyre-cachectl-verify", "vyre-cachectl verify --repair", p.stdout)
    if doc and doc["clean"] is not True:
        fail("verify --repair: not clean: %r" % doc)

    p = env.run(cc + ["prune", "--max-age", "1d", "--max-size", "1G", "--dry-run", "--json"])
    doc = sch.check("vyre-cachectl-prune", "vyre-cachectl prune --dry-run", p.stdout)
    if doc and doc["max_age_ns"] != 86400 * 10**9:
        fail("prune: max_age_ns %r, expected %d" % (doc["max_age_ns"], 86400 * 10**9))
    p = env.run(cc + ["prune", "--arch", "sm_80", "--json"])
    doc = sch.check("vyre-cachectl-prune", "vyre-cachectl prune --arch", p.stdout)
    if doc and doc["removed"] < 1:
        fail("prune --arch sm_80 removed nothing: %r" % doc)
    p = env.run(cc + ["reindex", "--json"])
    sch.check("vyre-cachectl-reindex", "vyre-cachectl reindex", p.stdout)

    p = env.run(cc + ["-o", "max_age=30d", "config", "--json"])
    doc = sch.check("vyre-cachectl-config", "vyre-cachectl config", p.stdout)
    if doc and [k["origin"] for k in doc["keys"]][:2] != ["default", "option"]:
        fail("config: origins %r" % doc["keys"])
    p = env.run(cc + ["config", "max_size", "20G", "--json"])
    doc = sch.check("vyre-cachectl-config", "vyre-cachectl config KEY VALUE", p.stdout)
    if doc and (doc["set"]["value"] != "20G" or doc["set"]["origin"] != "cache_file"):
        fail("config max_size 20G: %r" % doc)
    p = env.run(cc + ["zero-stats", "--json"])
    sch.check("vyre-cachectl-zero-stats", "vyre-cachectl zero-stats", p.stdout)

    jit = env.base["CUDA_CACHE_PATH"]
    # The driver's layout: an index and hashed subdirectories.
    os.makedirs(os.path.join(jit, "9", "5"), exist_ok=True)
    with open(os.path.join(jit, "index"), "wb") as f:
        f.write(b"0123456789" * 6 + b"0123")
    with open(os.path.join(jit, "9", "5", "69cec8efb74c57"), "wb") as f:
        f.write(b"\1" * 100)
    p = env.run([env.args.cachectl, "jit", "--json"])
    doc = sch.check("vyre-cachectl-jit", "vyre-cachectl jit", p.stdout)
    if doc and (doc["files"], doc["bytes"]) != (2, 164):
        fail("jit: %r files, %r bytes; expected 2 and 164" % (doc["files"], doc["bytes"]))
    # The driver's default (~/.nv/ComputeCache, HOME is tmp) beside vyre's,
    # with a CUDA_CACHE_MAXSIZE neither can use: warnings, exit 0.
    nv = os.path.join(env.tmp, ".nv", "ComputeCache", "a")
    os.makedirs(nv, exist_ok=True)
    with open(os.path.join(nv, "blob"), "wb") as f:
        f.write(b"\2" * 50)
    p = env.run([env.args.cachectl, "jit", "--json"],
                extra_env={"CUDA_CACHE_PATH": None, "CUDA_CACHE_MAXSIZE": "4G"})
    doc = sch.check("vyre-cachectl-jit", "vyre-cachectl jit (driver default, bad size)",
                    p.stdout)
    if doc and (doc["driver_default"]["bytes"], len(doc["warnings"])) != (50, 2):
        fail("jit: driver_default %r, warnings %r" % (doc["driver_default"], doc["warnings"]))
    p = env.run([env.args.cachectl, "--json", "jit", "--clear", "--yes"])
    doc = sch.check("vyre-cachectl-jit-clear", "vyre-cachectl jit --clear --yes", p.stdout)
    if doc and doc["removed_files"] != 2:
        fail("jit --clear: removed %r files, expected 2" % doc["removed_files"])
    return stats


def top(env, sch):
    pub = subprocess.Popen([env.args.publisher, "60"], env=env.base, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, text=True)
    try:
        line = pub.stdout.readline()
        if line != "ready\n":
            fail("telemetry_publisher did not start: %r" % line)
            return None
        # A GPU process without telemetry (nvitop's view) beside the
        # publisher, both listed by the fake NVML with SM utilisation.
        other = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL)
        extra = {
            "FAKENVML_PROCS": "0:%d:1048576,0:%d:2097152" % (pub.pid, other.pid),
            "FAKENVML_PROC_UTIL": "0:%d:40:5,0:%d:60:7" % (pub.pid, other.pid),
            # this script as a graphics-only process
            "FAKENVML_GRAPHICS_PROCS": "0:%d:4096" % os.getpid(),
            # A remote store listed (never contacted by vyre-top: it only
            # reads the counters the cache's index holds for it).
            "VYRE_REMOTE_CACHE": "http://127.0.0.1:9/vyre|read-only",
            "TRITON_CACHE_DIR": os.path.join(env.tmp, "triton"),
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(env.tmp, "inductor"),
        }
        os.makedirs(os.path.join(env.tmp, "triton", "KEY"), exist_ok=True)
        with open(os.path.join(env.tmp, "triton", "KEY", "k.json"), "w") as f:
            f.write("{}\n\n\n")
        try:
            p = env.run([env.args.top, "--json", "-n", "2", "-d", "0.3"], extra_env=extra)
        finally:
            other.kill()
            other.wait()
        lines = p.stdout.splitlines()
        if len(lines) != 2:
            fail("vyre-top --json -n 2: %d lines" % len(lines))
        last = None
        for i, text in enumerate(lines):
            last = sch.check("vyre-top-batch", "vyre-top --json (line %d)" % (i + 1), text) or last
        if last:
            # The parts of the schema a process, a range, a kernel and a GPU
            # exercise must have been seen for real.
            procs = [x for x in last["processes"] if x["pid"] == pub.pid]
            if not procs or not procs[0]["ranges"] or not procs[0]["kernels"]:
                fail("vyre-top: the publisher's process, range and kernel are missing: %s"
                     % json.dumps(last)[:800])
            if not last["gpus"]:
                fail("vyre-top: no GPU from the fake NVML: %r" % last["gpu_monitor"])
            types = {x["pid"]: x["type"] for x in last["gpus"][0]["processes"] or []}
            if types.get(os.getpid()) != "graphics" or types.get(other.pid) != "compute":
                fail("vyre-top: GPU process types %r" % types)
            bare = [x for x in last["processes"] if x["pid"] == other.pid]
            if not bare or bare[0]["telemetry"] or bare[0]["sm_util_ratio"] is None:
                fail("vyre-top: the GPU process without telemetry is missing: %s"
                     % json.dumps(last["processes"])[:800])
            if last["cache"]["state"] == "ok" and len(last["cache"]["remotes"]) != 1:
                fail("vyre-top: the remote store is missing: %r" % last["cache"])
            if last["cache"]["state"] != "ok":
                fail("vyre-top: cache state %r" % last["cache"]["state"])
            # The caches' sizes (on by default): four rows, Triton's the
            # one made here, through TRITON_CACHE_DIR.
            usage = last["cache_usage"] or {}
            rows = {x["name"]: x for x in usage.get("caches", [])}
            t = rows.get("triton") or {}
            if sorted(rows) != ["cuda_jit", "inductor", "triton", "vyre"] or \
                    (t.get("bytes"), t.get("files"), t.get("path_from")) != \
                    (du_bytes(extra["TRITON_CACHE_DIR"]), 2, "TRITON_CACHE_DIR"):
                fail("vyre-top: cache_usage %s" % json.dumps(usage)[:800])
            p = env.run([env.args.top, "--json", "-n", "1", "-d", "0.1", "--no-cache-usage"],
                        extra_env=extra)
            off = sch.check("vyre-top-batch", "vyre-top --json --no-cache-usage", p.stdout)
            if off and off["cache_usage"] is not None:
                fail("vyre-top --no-cache-usage: cache_usage %r" % off["cache_usage"])
        return last
    finally:
        pub.kill()
        pub.wait()
        pub.stdout.close()


def bench(env, sch):
    b = env.args.bench
    fast = ["--min-samples", "3", "--min-time", "0", "--max-noise", "100", "--timeout", "5"]
    run_doc = None
    for i in range(2):
        p = env.run([b, "run", "--suite", "cache", "--db", env.db, "-q", "--json"] + fast)
        run_doc = sch.check("vyre-bench-run", "vyre-bench run --json (run %d)" % (i + 1),
                            p.stdout) or run_doc
    p = env.run([b, "runs", "--db", env.db, "--json"])
    doc = sch.check("vyre-bench-runs", "vyre-bench runs", p.stdout)
    if doc and len(doc["runs"]) != 2:
        fail("runs: %d runs, expected 2" % len(doc["runs"]))
    p = env.run([b, "history", "--db", env.db, "--json", "cache.hit"])
    doc = sch.check("vyre-bench-history", "vyre-bench history", p.stdout)
    if doc and len({x["run_id"] for x in doc["points"]}) != 2:
        fail("history: the points of %d runs, expected 2" % len({x["run_id"] for x in doc["points"]}))
    p = env.run([b, "show", "--db", env.db, "--json", "last"])
    sch.check("vyre-bench-show", "vyre-bench show", p.stdout)
    p = env.run([b, "show", "--db", env.db, "--kernels", "--json", "1"])
    doc = sch.check("vyre-bench-show", "vyre-bench show --kernels", p.stdout)
    if doc and not all("kernels" in x for x in doc["points"]):
        fail("show --kernels --json: points without 'kernels'")
    p = env.run([b, "export", "--db", env.db, "--json", "last"])
    doc = sch.check("vyre-bench-export", "vyre-bench export --json", p.stdout)
    if doc and not all(len(x["samples"]) == x["n"] for x in doc["points"]):
        fail("export: sample counts differ from n")
    # Any verdict is possible on real timings; the exit status must
    # follow the document: 1 exactly when a point is SLOWER (fail), 4 when
    # the comparison is inconclusive, 0 when it passes.
    p = env.run([b, "compare", "--db", env.db, "--json", "last-1", "last"], want_rc=(0, 1, 4))
    doc = sch.check("vyre-bench-compare", "vyre-bench compare", p.stdout)
    if doc:
        slower = sum(x["verdict"] == "slower" for x in doc["points"])
        want = {"pass": 0, "fail": 1, "inconclusive": 4}[doc["verdict"]]
        if (slower != doc["summary"]["slower"] or p.returncode != want
                or (doc["verdict"] == "fail") != (slower > 0)):
            fail("compare: exit %d, verdict %s with %d slower points"
                 % (p.returncode, doc["verdict"], slower))
    # An A/B run (run --vs) over the fake driver: a fake cubin whose
    # launches take 10 ms of the fake's virtual GPU time, against itself.
    # Leak checking stays on: LeakSanitizer's tracer died at exit here
    # (signal 11 reading the main thread's DTLS) until the fake driver's
    # thread-local moved to static TLS (tests/fakes/fakecuda.c).
    cubin = os.path.join(env.tmp, "ab.cubin")
    with open(cubin, "wb") as f:
        f.write(b"\x7fELF fakecubin:add_one;ns=10000000\0")
    p = env.run([b, "run", cubin, "--entry", "add_one", "-a", "N=1K", "--vs", cubin, "--db",
                 os.path.join(env.tmp, "ab.sqlite3"), "--no-kernels", "-q", "--json"] + fast,
                extra_env={"VYRE_CUDA_LIBRARY": env.args.fakecuda, "FAKECUDA_DEVICES": "1"})
    doc = sch.check("vyre-bench-run", "vyre-bench run --vs --json", p.stdout)
    if doc and (len(doc.get("ab", [])) != 1 or
                sorted(x["variant"] for x in doc["points"] if x["suite"] == "sweep") != ["A", "B"]):
        fail("run --vs --json: ab %r, variants %r" % (doc.get("ab"),
             [x["variant"] for x in doc["points"]]))
    p = env.run([b, "devices", "--json"], extra_env={
        "VYRE_CUDA_LIBRARY": env.args.fakecuda, "FAKECUDA_DEVICES": "2"})
    doc = sch.check("vyre-bench-devices", "vyre-bench devices (fake driver)", p.stdout)
    if doc and len(doc["devices"]) != 2:
        fail("devices: %d devices, expected 2" % len(doc["devices"]))
    p = env.run([b, "devices", "--json"], want_rc=(3,))
    sch.check("vyre-bench-devices", "vyre-bench devices (no driver)", p.stdout)
    p = env.run([b, "rm", "--db", env.db, "--json", "last-1"])
    doc = sch.check("vyre-bench-rm", "vyre-bench rm", p.stdout)
    if doc and [x["id"] for x in doc["removed"]] != [1]:
        fail("rm: removed %s, expected run 1" % [x["id"] for x in doc["removed"]])
    p = env.run([b, "runs", "--db", env.db, "--json"])
    doc = sch.check("vyre-bench-runs", "vyre-bench runs after rm", p.stdout)
    if doc and [x["id"] for x in doc["runs"]] != [2]:
        fail("runs after rm: %s, expected [2]" % [x["id"] for x in doc["runs"]])
    return run_doc


def negatives(sch, stats, top_doc, run_doc):
    """Documents with a wrong unit or shape must be rejected."""
    for key in ("hit_rate", "compile_saved_s", "h2d_mb_per_s", "age_seconds", "util_gpu_pct",
                "sm_clock_mhz", "time_unix_s", "interval_s"):
        if not bad_unit_key(key):
            fail("the unit-key check lets '%s' through" % key)
    if stats:
        d = copy.deepcopy(stats)
        d["compile_time_saved_s"] = d.pop("compile_time_saved_ns") / 1e9
        sch.must_reject("vyre-cachectl-stats", "stats with compile_time_saved_s", d)
        d = copy.deepcopy(stats)
        d["hit_rate"] = 0.5
        sch.must_reject("vyre-cachectl-stats", "stats with a bare hit_rate", d)
        d = copy.deepcopy(stats)
        d["by_age"][0]["max_age_seconds"] = d["by_age"][0].pop("max_age_ns")
        sch.must_reject("vyre-cachectl-stats", "stats with max_age_seconds", d)
    if top_doc:
        d = copy.deepcopy(top_doc)
        p = d["processes"][0]
        p["cache_hit_rate_pct"] = p.pop("cache_hit_ratio")
        sch.must_reject("vyre-top-batch", "vyre-top with cache_hit_rate_pct", d)
        d = copy.deepcopy(top_doc)
        d["cache"]["hit_ratio"] = 75.0
        sch.must_reject("vyre-top-batch", "vyre-top with a percentage as hit_ratio", d)
        if top_doc.get("cache_usage") and top_doc["cache_usage"]["caches"]:
            d = copy.deepcopy(top_doc)
            d["cache_usage"]["caches"][0]["fs_full_pct"] = 19.0
            sch.must_reject("vyre-top-batch", "vyre-top with a cache's fs_full_pct", d)
            d = copy.deepcopy(top_doc)
            d["cache_usage"]["caches"][0]["fs_full_ratio"] = 19.0
            sch.must_reject("vyre-top-batch", "vyre-top with a percentage as fs_full_ratio", d)
    if run_doc:
        d = copy.deepcopy(run_doc)
        d["points"][0]["axes"] = "size=4096"
        sch.must_reject("vyre-bench-run", "a point whose axes are a string", d)
        d = copy.deepcopy(run_doc)
        d["points"][0]["median_ns"] = 1234.5
        sch.must_reject("vyre-bench-run", "a fractional duration in ns", d)
        d = copy.deepcopy(run_doc)
        d["run"]["started_ns"] = d["run"].pop("started_unix_ns")
        sch.must_reject("vyre-bench-run", "a timestamp without _unix_ns", d)
        d = copy.deepcopy(run_doc)
        del d["schema_version"]
        sch.must_reject("vyre-bench-run", "a document without schema_version", d)


def triton(env, sch):
    """vyre-cachectl triton on a copy of the real Triton cache fixture, one
    group damaged (another architecture) so that verify has a problem."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "triton",
                       "cache")
    cache = os.path.join(env.tmp, "triton-cache")
    shutil.copytree(src, cache)
    for act, rc in (("stats", (0,)), ("ls", (0,)), ("relocate", (0,))):
        p = env.run([env.args.cachectl, "triton", act, "--dir", cache, "--json"], want_rc=rc)
        sch.check("vyre-cachectl-triton-" + act, "vyre-cachectl triton " + act, p.stdout)
    meta = os.path.join(cache, "PGIBWRPZ4BMLHZDHVLBI7YULCKTFFXOZWUDBQ2MQNOO22K3NXW4A",
                        "scale_kernel.json")
    with open(meta) as f:
        text = f.read()
    with open(meta, "w") as f:
        f.write(text.replace('"arch": 90', '"arch": 120', 1))
    for kernel, rc in (("scale_kernel", (0,)), ("scale_kernl", (1,))):
        p = env.run([env.args.cachectl, "triton", "explain", kernel, "--dir", cache, "--json"],
                    want_rc=rc)
        sch.check("vyre-cachectl-triton-explain", "vyre-cachectl triton explain " + kernel,
                  p.stdout)
    p = env.run([env.args.cachectl, "triton", "verify", "--dir", cache, "--json"], want_rc=(1,))
    doc = sch.check("vyre-cachectl-triton-verify", "vyre-cachectl triton verify", p.stdout)
    if doc and [x["kind"] for x in doc["problems"]] != ["wrong-arch"]:
        fail("triton verify: problems %r, expected one wrong-arch" % doc["problems"])
    p = env.run([env.args.cachectl, "triton", "show", "scale_kernel", "--dir", cache, "--json"])
    sch.check("vyre-cachectl-triton-show", "vyre-cachectl triton show", p.stdout)
    # Groups an hour old, so that prune and clear remove them (younger
    # than a minute they are left).
    old = time.time() - 3600
    for root, dirs, files in os.walk(cache, topdown=False):
        for n in files + dirs:
            os.utime(os.path.join(root, n), (old, old))
    # One byte under the cache's size on disk: any one group brings it under.
    limit = "%dB" % (du_bytes(cache) - 1)
    p = env.run([env.args.cachectl, "triton", "prune", "--max-size", limit, "--dry-run", "--dir",
                 cache, "--json"])
    doc = sch.check("vyre-cachectl-triton-prune", "vyre-cachectl triton prune", p.stdout)
    if doc and len(doc["removed"]) != 1:
        fail("triton prune: removed %r, expected one group" % doc["removed"])
    p = env.run([env.args.cachectl, "triton", "prune", "--auto", "--dir", cache, "--json"])
    sch.check("vyre-cachectl-triton-prune", "vyre-cachectl triton prune --auto", p.stdout)
    p = env.run([env.args.cachectl, "triton", "clear", "--yes", "--dir", cache, "--json"])
    doc = sch.check("vyre-cachectl-triton-clear", "vyre-cachectl triton clear", p.stdout)
    if doc and doc["removed_groups"] != 2:
        fail("triton clear: removed_groups %r, expected 2" % doc["removed_groups"])


def inductor(env, sch):
    """vyre-cachectl inductor on a copy of the real TorchInductor cache
    fixture: stats, ls, verify (one truncated .best_config), then prune and
    clear with every entry aged past the minute they leave alone."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "inductor",
                       "cache")
    cache = os.path.join(env.tmp, "inductor-cache")
    shutil.copytree(src, cache)
    for act in ("stats", "ls"):
        p = env.run([env.args.cachectl, "inductor", act, "--dir", cache, "--json"])
        sch.check("vyre-cachectl-inductor-" + act, "vyre-cachectl inductor " + act, p.stdout)
    best = os.path.join(cache, "bt", "91dbf07d645711ebc936c694facd3254fa10be19624fe41233a31431"
                        "373e3bf6.best_config")
    os.truncate(best, 100)
    p = env.run([env.args.cachectl, "inductor", "verify", "--dir", cache, "--json"], want_rc=(1,))
    doc = sch.check("vyre-cachectl-inductor-verify", "vyre-cachectl inductor verify", p.stdout)
    if doc and [x["kind"] for x in doc["problems"]] != ["bad-autotune"]:
        fail("inductor verify: problems %r, expected one bad-autotune" % doc["problems"])
    old = 1_000_000_000  # 2001: older than any minute
    for root, dirs, files in os.walk(cache):
        for name in dirs + files:
            os.utime(os.path.join(root, name), (old, old), follow_symlinks=False)
    p = env.run([env.args.cachectl, "inductor", "prune", "--max-size", "64K", "--dir", cache,
                 "--json"])
    doc = sch.check("vyre-cachectl-inductor-prune", "vyre-cachectl inductor prune", p.stdout)
    if doc and not doc["entries"]:
        fail("inductor prune --max-size 64K: removed nothing")
    p = env.run([env.args.cachectl, "inductor", "clear", "--yes", "--dir", cache, "--json"])
    sch.check("vyre-cachectl-inductor-prune", "vyre-cachectl inductor clear", p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for opt in ("schemas", "cachectl", "bench", "top", "publisher", "fakecuda", "fakenvml"):
        ap.add_argument("--" + opt, required=True)
    args = ap.parse_args()
    sch = Schemas(args.schemas)
    tmp = tempfile.mkdtemp(prefix="vyre-json-schema-")
    memtmp = mkdtemp_mem(tmp)
    try:
        env = Env(args, tmp, memtmp)
        stats = cachectl(env, sch)
        top_doc = top(env, sch)
        p = env.run([args.cachectl, "--cache-dir", env.cache, "--json", "clear", "--yes"])
        sch.check("vyre-cachectl-clear", "vyre-cachectl clear --yes", p.stdout)
        run_doc = bench(env, sch)
        triton(env, sch)
        inductor(env, sch)
        negatives(sch, stats, top_doc, run_doc)
    finally:
        shutil.rmtree(memtmp, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    for name in sorted(set(sch.validators) - USED):
        fail("docs/schema/%s.schema.json: no real output was validated against it" % name)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("all %d schemas exercised by real output" % len(sch.validators))
    return 0


if __name__ == "__main__":
    sys.exit(main())
