#!/usr/bin/env python3
"""Checks the docs against the binaries: every long option, synopsis,
default and schema_version that README.md, docs/*.md, the man pages
(docs/man/*.1) and each tool's --help name is compared with what the tools
accept and print.

For vyre-bench, vyre-cachectl, vyre-top and vyre-exporter it reads
`--help` and every subcommand's `CMD --help`, then checks:

  options    each long option of a --help is in the tool's man page, and
             each long option the man page names is in some --help (a few
             options of other programs the pages cite are listed in FOREIGN);
             each option README.md or a docs/*.md writes after a tool's name
             is the tool's
  synopsis   each option of a command's usage lines is in the man page's
             SYNOPSIS line(s) for that command (a tool's global options
             excepted), every synopsis line starts on a line of its own
  defaults   a default a --help states is the one its man page states, and
             the path defaults of --cache-dir and --db are
             where the binaries really go (exporter: the `dir` label of a
             scrape; cachectl: stats' cache_dir; bench: runs' db)
  schema     every `schema_version N` in README.md, docs/*.md, the man
             pages, --help and docs/JSON.md's table, against the schema_version the
             command prints, run on a temporary cache and results database
             (no GPU: the fake libcuda for `devices`, the fake NVML for
             vyre-top)
  meanings   what vyre-bench's run, show, export and compare schemas say a
             point's noise figures are, recomputed from a real run's
             exported samples (schema_meanings.py)
  front door README.md is at most 200 lines; its command 1 installs no
             server only the tests need (postgresql, nginx, redis-server,
             prometheus); its test command is .ci/run's, verbatim, and its
             two install lines name the packages .ci/run installs
  links      every relative link of README.md and docs/*.md reaches a file
             (and a heading, for #anchor), and README.md links every
             docs/*.md

Each mismatch is one line: `FILE[:LINE]: WHAT: what differs`. Exit 1 when
there is any, 0 when none. Registered in CTest as "docs" by
tests/CMakeLists.txt.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schema_meanings  # noqa: E402  (beside this file)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from tu_memdir import mkdtemp_mem  # noqa: E402  (tests/common)

TOOLS = ("vyre-bench", "vyre-cachectl", "vyre-top", "vyre-exporter")
# Options of other programs that a man page cites on purpose.
FOREIGN = {
    "vyre-cachectl": {"cleanup": "ccache", "evict-older-than": "ccache"},
    "vyre-bench": {"capture-range": "nsys", "capture-range-end": "nsys",
                   "lock-gpu-clocks": "nvidia-smi"},
}
MISMATCHES = []


def mismatch(where, what, differs):
    line = "%s: %s: %s" % (where, what, differs)
    MISMATCHES.append(line)
    print(line)


LONG_OPT = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:[.-][a-z0-9]+)*)")


def long_opts(text):
    return set(LONG_OPT.findall(text))


# --- roff -----------------------------------------------------------------

ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}


def roff_args(rest):
    """A request's arguments: split at blanks, "double quotes" group."""
    args, cur, quoted = [], "", False
    for c in rest:
        if c == '"':
            quoted = not quoted
        elif c in " \t" and not quoted:
            if cur:
                args.append(cur)
            cur = ""
        else:
            cur += c
    if cur:
        args.append(cur)
    return args


def roff_unescape(s):
    s = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\c", "", s)
    for a, b in (("\\-", "-"), ("\\e", "\\"), ("\\(aq", "'"), ("\\(dq", '"'),
                 ("\\(em", "\u2014"), ("\\(en", "-"), ("\\(ti", "~"), ("\\(+-", "+-"),
                 ("\\(mu", "x"), ("\\ ", " ")):
        s = s.replace(a, b)
    return s


def roff_line(line):
    """The text a roff line shows, without its request."""
    if line.startswith(".\\\"") or line.startswith("'\\\""):
        return ""
    if line.startswith("."):
        m = re.match(r"\.(\w+)\s*(.*)", line)
        if not m:
            return ""
        req, rest = m.group(1), m.group(2)
        if req in ALTERNATING:
            return roff_unescape("".join(roff_args(rest)))
        if req in ("B", "I", "SM", "SB"):
            return roff_unescape(" ".join(roff_args(rest)))
        return ""
    return roff_unescape(line)


class Man:
    """A man page as (lineno, request, text) and its sections and .TP items."""

    def __init__(self, path, rel):
        self.rel = rel
        with open(path) as f:
            self.raw = f.read().splitlines()
        self.lines = []
        self.tags = set()  # indexes into lines of each .TP item's tag
        section, item, tag_next = "", None, False
        for n, line in enumerate(self.raw, 1):
            m = re.match(r"\.(\w+)", line)
            req = m.group(1) if m else ""
            if req == "SH":
                section = roff_unescape(" ".join(roff_args(line[3:].strip())))
                item = None
            elif req == "TP":
                tag_next = True
                continue
            elif req in ("PP", "P", "LP"):
                item = None
            text = roff_line(line)
            if tag_next:
                item, tag_next = text, False
                self.tags.add(len(self.lines))
            self.lines.append((n, req, text, section, item))

    def items(self):
        """(tag, body, section, line number of the tag) of every .TP item."""
        out = []
        for i, (n, req, text, section, item) in enumerate(self.lines):
            if i in self.tags:
                out.append([text, [], section, n])
            elif item is not None and out and out[-1][2] == section:
                out[-1][1].append(text)
        return [(tag, " ".join(body), section, n) for tag, body, section, n in out]


# --- the tools' --help -----------------------------------------------------

class Env:
    def __init__(self, args, tmp, memtmp):
        self.args, self.tmp = args, tmp
        self.env = dict(os.environ)
        for var in ("VYRE_TELEMETRY", "VYRE_PTX_CACHE_DIR", "CUDA_CACHE_MAXSIZE", "TMUX",
                    "VYRE_REMOTE_CACHE", "COLUMNS"):
            self.env.pop(var, None)
        self.env.update({
            # TMPDIR: vyre-bench's scratch (the cache suite's blobs,
            # reference.fsync), on a memory filesystem where there is one.
            "HOME": tmp, "TMPDIR": memtmp,
            "XDG_CACHE_HOME": os.path.join(tmp, "xdg-cache"),
            "XDG_DATA_HOME": os.path.join(tmp, "xdg-data"),
            "XDG_CONFIG_HOME": os.path.join(tmp, "xdg-config"),
            "VYRE_TELEMETRY_DIR": os.path.join(tmp, "tel"),
            "CUDA_CACHE_PATH": os.path.join(tmp, "cuda-jit"),
            "VYRE_CUDA_LIBRARY": os.path.join(tmp, "no-libcuda.so.1"),
            "VYRE_NVML_LIBRARY": args.fakenvml,
        })
        os.makedirs(self.env["VYRE_TELEMETRY_DIR"], mode=0o700)

    def bin(self, tool):
        return getattr(self.args, tool.split("-")[1])

    def run(self, argv, extra=None, timeout=300):
        env = dict(self.env)
        env.update(extra or {})
        return subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)


def commands_of(help_text):
    """The subcommands a top-level --help lists under 'commands:'."""
    out, inside = [], False
    for line in help_text.splitlines():
        if line.strip() == "commands:":
            inside = True
            continue
        if inside:
            m = re.match(r"  ([a-z][a-z-]*)\s", line)
            if not m:
                break
            out.append(m.group(1))
    return out


def collect_help(env):
    """{tool: {cmd: help text}}, cmd '' for the tool's own --help."""
    helps = {}
    for tool in TOOLS:
        p = env.run([env.bin(tool), "--help"])
        if p.returncode != 0:
            mismatch(tool, "--help", "exit %d: %s" % (p.returncode, p.stderr.strip()))
        helps[tool] = {"": p.stdout}
        for cmd in commands_of(p.stdout):
            q = env.run([env.bin(tool), cmd, "--help"])
            if q.returncode != 0:
                mismatch(tool, cmd + " --help", "exit %d: %s" % (q.returncode, q.stderr.strip()))
            helps[tool][cmd] = q.stdout
    return helps


def usage_entries(tool, text):
    """[(command key, usage text)] from the usage: lines of a --help."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines) and not lines[i].startswith("usage:"):
        i += 1
    while i < len(lines) and lines[i].strip():
        line = lines[i][len("usage:"):] if lines[i].startswith("usage:") else lines[i]
        s = line.strip()
        if s.startswith(tool):
            out.append([command_key(tool, s), s])
        elif out:
            out[-1][1] += " " + s
        i += 1
    return [tuple(e) for e in out]


def command_key(tool, s):
    words = []
    for w in s[len(tool):].split():
        if not re.fullmatch(r"[a-z][a-z-]*", w):
            break
        words.append(w)
    return " ".join(words)


# --- options and synopses --------------------------------------------------

def check_options(tool, helps, man):
    in_help = {}
    for cmd, text in helps.items():
        for o in long_opts(text):
            in_help.setdefault(o, cmd)
    in_man = {}
    for n, _, text, _, _ in man.lines:
        for o in long_opts(text):
            in_man.setdefault(o, n)
    foreign = FOREIGN.get(tool, {})
    for o in sorted(set(in_help) - set(in_man)):
        where = "'%s --help'" % (tool + (" " + in_help[o] if in_help[o] else ""))
        mismatch(man.rel, "--" + o, "in %s but not in the man page" % where)
    for o in sorted(set(in_man) - set(in_help) - set(foreign)):
        mismatch("%s:%d" % (man.rel, in_man[o]), "--" + o,
                 "named in the man page but in no --help of %s" % tool)
    return set(in_help)


def man_synopsis(tool, man):
    """{command key: options} of the SYNOPSIS lines; also flags a line that
    runs into the one before it (no .br or .PP between them)."""
    out, cur, prev_req = {}, None, "SH"
    for n, req, text, section, _ in man.lines:
        if section != "SYNOPSIS" or req == "SH":
            continue
        if req == "B" and (text == tool or text.startswith(tool + " ")):
            if prev_req not in ("br", "PP", "SH", "P", "LP"):
                mismatch("%s:%d" % (man.rel, n), "SYNOPSIS",
                         "'%s' runs into the line before it (no .br)" % text)
            cur = command_key(tool, text)
            out.setdefault(cur, set())
        if cur is not None:
            out[cur] |= long_opts(text)
        prev_req = req
    return out


def check_synopsis(tool, helps, man):
    syn = man_synopsis(tool, man)
    entries = [e for text in helps.values() for e in usage_entries(tool, text)]
    glob = set()
    for key, text in entries:
        if key == "":
            glob |= long_opts(text)
    for key, text in entries:
        want = long_opts(text) - (glob if key else set())
        if key not in syn:
            mismatch(man.rel, "SYNOPSIS", "no line for '%s' (--help: %s)"
                     % ((tool + " " + key).strip(), text))
            continue
        for o in sorted(want - syn[key]):
            mismatch(man.rel, "SYNOPSIS '%s'" % (tool + " " + key).strip(),
                     "lacks --%s, which its --help's usage has" % o)


def readme_options(readme, help_opts, rel="README.md"):
    """Options a markdown file (README.md, docs/*.md) writes after a tool's
    name, on one command line."""
    logical, start = [], None
    lines = readme.splitlines()
    buf = ""
    for n, line in enumerate(lines, 1):
        if start is None:
            start = n
        buf += line.rstrip("\\") + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            logical.append((start, buf))
            buf, start = "", None
    for n, line in logical:
        for m in re.finditer(r"(?<![\w/.-])(vyre-(?:bench|cachectl|top|exporter))(?![\w.-])", line):
            seg = line[m.end():]
            cut = re.search(r"`|&&|;|#|>|\$\(|\|\s+[a-z]|\)\s", seg)
            seg = seg[:cut.start()] if cut else seg
            for o in sorted(long_opts(seg) - help_opts[m.group(1)]):
                mismatch("%s:%d" % (rel, n), "--" + o,
                         "written after '%s', which has no such option" % m.group(1))


# --- defaults ---------------------------------------------------------------

def value_tokens(text):
    """The value-like words of a default: paths, variables, numbers."""
    out = set()
    for w in re.split(r"[\s,;]+", text):
        w = w.strip(".()'\"")
        if w and (re.search(r"[$/0-9]", w) or w.startswith(":")):
            out.add(w)
    return out


def help_defaults(helps):
    """{(option, cmd): default text} from the option lines of every --help."""
    out = {}
    for cmd, text in helps.items():
        entries = []
        for line in text.splitlines():
            if re.match(r"\s+(-\w, )?--[a-z]", line):
                entries.extend(re.split(r"\s{2,}(?=--[a-z])", line.strip()))
            elif entries and re.match(r"\s{6,}\S", line) and not line.strip().startswith("-"):
                entries[-1] += " " + line.strip()
            else:
                entries.append("")
        for e in entries:
            m = re.match(r"(?:-\w, )?--([a-z][a-z0-9.-]*)(?: [A-Z][A-Z|._]*)? \[([^\]]+)\]", e)
            d = re.search(r"\(default:? ([^)]*)\)", e)
            o = re.match(r"(?:-\w, )?--([a-z][a-z0-9.-]*)", e)
            if m:
                out.setdefault((m.group(1), cmd), m.group(2))
            elif o and d:
                out.setdefault((o.group(1), cmd), d.group(1))
    return out


def man_defaults(man, subs):
    """{(option, cmd or None): (default text, line)}: cmd where the item is
    in a 'CMD OPTIONS' section."""
    out = {}
    for tag, body, section, n in man.items():
        opts = long_opts(tag)
        d = re.search(r"[Dd]efault:?\s+(.*?)(?:\)|;|\.\s|\.$|$)", body)
        m = re.match(r"(\w+) OPTIONS$", section)
        cmd = m.group(1).lower() if m and m.group(1).lower() in subs else None
        if len(opts) == 1 and d:
            out[(opts.pop(), cmd)] = (d.group(1), n)
    return out


def check_defaults(tool, helps, man):
    hd, md = help_defaults(helps), man_defaults(man, subs_of(helps))
    for (o, cmd), text in sorted(hd.items()):
        got = md.get((o, cmd)) or md.get((o, None))
        if got is None:
            continue
        if value_tokens(text) != value_tokens(got[0]):
            mismatch("%s:%d" % (man.rel, got[1]), "--" + o + " default",
                     "the man page says '%s', '%s --help' says '%s'"
                     % (got[0], (tool + " " + cmd).strip(), text))
    return hd


def expected_path(env, default_text):
    """The path a default like '$A, else $B/x, else ~/.y' means in env."""
    for w in re.split(r",?\s+else\s+|,\s*", default_text.strip()):
        w = w.strip()
        m = re.match(r"\$(\w+)(.*)", w)
        if m:
            if env.env.get(m.group(1)):
                return env.env[m.group(1)] + m.group(2)
            continue
        if w.startswith("~/"):
            return os.path.join(env.env["HOME"], w[2:])
        return w
    return None


def scrape_cache_dir(env):
    p = subprocess.Popen([env.args.exporter, "--web.listen-address", "127.0.0.1:0", "--no-gpu"],
                         env=env.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        seen = ""
        for _ in range(20):  # a warning may come first
            line = p.stderr.readline()
            seen += line
            m = re.search(r"listening on (\S+),", line)
            if m or not line:
                break
        if not m:
            mismatch("vyre-exporter", "start", "no 'listening on' line: %r" % seen)
            return None
        body = ""
        for _ in range(50):
            try:
                with urllib.request.urlopen("http://%s/metrics" % m.group(1), timeout=10) as r:
                    body = r.read().decode()
                break
            except OSError:
                time.sleep(0.1)
        m = re.search(r'^vyre_cache_\w+\{dir="([^"]*)"', body, re.M)
        return m.group(1) if m else None
    finally:
        p.terminate()
        p.wait(timeout=30)
        p.stderr.close()


def json_key(env, argv, key):
    p = env.run(argv + ["--json"])
    try:
        return json.loads(p.stdout)[key]
    except (ValueError, KeyError):
        mismatch(os.path.basename(argv[0]), " ".join(argv[1:]) + " --json",
                 "no '%s' (exit %d): %s" % (key, p.returncode, p.stderr.strip()[:300]))
        return None


def check_path_defaults(env, hd, actual):
    """hd: {tool: help defaults}; actual: {(tool, option): path the binary used}."""
    for (tool, opt), got in sorted(actual.items()):
        stated = [(cmd, text) for (o, cmd), text in hd[tool].items() if o == opt]
        if not stated:
            mismatch(tool, "--" + opt, "no default stated in --help")
            continue
        cmd, text = stated[0]
        want = expected_path(env, text)
        if want != got:
            mismatch(tool, "--" + opt + " default",
                     "'%s --help' says '%s' (here %s), the binary uses %s"
                     % ((tool + " " + cmd).strip(), text, want, got))


# --- schema_version ----------------------------------------------------------

def fake_cubin(path, tag):
    with open(path, "wb") as f:
        f.write(b"\x7fELF\x02\x01\x01\x00" + tag.encode() * 16)


def version_of(what, p, versions):
    try:
        doc = json.loads(p.stdout.splitlines()[0] if what == "vyre-top" else p.stdout)
        versions[what] = doc["schema_version"]
    except (ValueError, KeyError, IndexError):
        mismatch(what, "--json", "no document (exit %d): %s %s"
                 % (p.returncode, p.stdout[:200], p.stderr[:300]))


def actual_versions(env):
    """{'vyre-cachectl stats': 3, ...}: what each --json prints now."""
    v, tmp = {}, env.tmp
    cc = [env.args.cachectl, "--cache-dir", os.path.join(tmp, "cache")]
    src = os.path.join(tmp, "k.cubin")
    fake_cubin(src, "kernel")
    version_of("vyre-cachectl seed", env.run(cc + ["seed", src, "--arch", "sm_80", "--json"]), v)
    for cmd in ("stats", "ls", "verify", "reindex", "config", "zero-stats", "jit"):
        version_of("vyre-cachectl " + cmd, env.run(cc + [cmd, "--json"]), v)
    version_of("vyre-cachectl prune", env.run(cc + ["prune", "--max-size", "1G", "--json"]), v)
    key = json.loads(env.run(cc + ["ls", "--json"]).stdout)["entries"][0]["key"]
    version_of("vyre-cachectl show", env.run(cc + ["show", key, "--json"]), v)
    version_of("vyre-cachectl explain",
               env.run(cc + ["explain", src, "--arch", "sm_80", "--json"]), v)
    # Read only: the fixture itself.
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "triton",
                           "cache")
    version_of("vyre-cachectl triton explain",
               env.run([env.args.cachectl, "triton", "explain", "scale_kernel", "--dir", fixture,
                        "--json"]), v)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    remote = {"VYRE_REMOTE_CACHE": "http://127.0.0.1:%d/v|connect-timeout=200"
              % s.getsockname()[1]}
    s.close()
    for sub in (["check"], ["push", key], ["pull", key]):
        version_of("vyre-cachectl remote " + sub[0],
                   env.run(cc + ["remote"] + sub + ["--json"], extra=remote), v)
    version_of("vyre-cachectl jit --clear", env.run(cc + ["jit", "--clear", "--yes", "--json"]), v)
    version_of("vyre-cachectl clear", env.run(cc + ["clear", "--yes", "--json"]), v)
    ind = os.path.join(tmp, "inductor-cache")  # TorchInductor's, empty: the documents' shape
    os.makedirs(ind, exist_ok=True)
    for sub in (["stats"], ["ls"], ["verify"], ["prune", "--max-size", "1G"], ["clear", "--yes"]):
        version_of("vyre-cachectl inductor " + sub[0],
                   env.run([env.args.cachectl, "inductor"] + sub + ["--dir", ind, "--json"]), v)
    tc = os.path.join(tmp, "triton-cache")
    shutil.copytree(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                                 "triton", "cache"), tc)
    tt = [env.args.cachectl, "triton"]
    for sub in ("stats", "ls", "verify", "relocate"):
        version_of("vyre-cachectl triton " + sub, env.run(tt + [sub, "--dir", tc, "--json"]), v)
    version_of("vyre-cachectl triton show",
               env.run(tt + ["show", "scale_kernel", "--dir", tc, "--json"]), v)
    version_of("vyre-cachectl triton prune",
               env.run(tt + ["prune", "--max-size", "1G", "--dir", tc, "--json"]), v)
    version_of("vyre-cachectl triton clear",
               env.run(tt + ["clear", "--yes", "--dir", tc, "--json"]), v)

    version_of("vyre-top", env.run([env.args.top, "--json", "-n", "1", "-d", "0.1"]), v)

    # The default database (XDG_DATA_HOME is under tmp): `runs` then says
    # where the default is.
    b, db = env.args.bench, []
    fast = ["--min-samples", "3", "--min-time", "0", "--max-noise", "100", "--timeout", "5",
            "--rounds", "1", "-q"]
    for _ in range(2):
        version_of("vyre-bench run", env.run([b, "run", "--suite", "cache", "--json"] + db + fast), v)
    for cmd in (["runs"], ["show", "last"], ["export", "last"], ["compare", "last-1", "last"],
                ["history", "cache.hit"],
                ["rm", "last-1"]):
        version_of("vyre-bench " + cmd[0], env.run([b] + cmd + db + ["--json"]), v)
    version_of("vyre-bench devices", env.run([b, "devices", "--json"], extra={
        "VYRE_CUDA_LIBRARY": env.args.fakecuda, "FAKECUDA_DEVICES": "1"}), v)
    return v


SV = re.compile(r"schema_version\W{0,4}(\d+)")


def subs_of(tool_helps):
    return [c for c in tool_helps if c]


def attribute_man(tool, helps, man, idx):
    """The document a schema_version at man.lines[idx] is about."""
    n, req, text, section, item = man.lines[idx]
    subs = subs_of(helps[tool])
    if not subs:
        return tool
    m = re.match(r"(\w+) OPTIONS$", section)
    if m and m.group(1).lower() in subs:
        return tool + " " + m.group(1).lower()
    if section == "COMMANDS" and item and item.split()[0] in subs:
        return tool + " " + item.split()[0]
    return None


def readme_attribute(readme_lines, idx, col, helps):
    """Nearest command before the claim, within its heading's section."""
    start = idx
    while start > 0 and not readme_lines[start].startswith("#"):
        start -= 1
    text = "\n".join(readme_lines[start:idx] + [readme_lines[idx][:col]])
    best = None
    for tool in TOOLS:
        subs = "|".join(re.escape(s) for s in subs_of(helps[tool]))
        pats = [r"%s(?:\s+(%s))?(?![\w-])" % (tool, subs)] if subs else [tool + r"(?![\w-])"]
        for pat in pats:
            for m in re.finditer(pat, text):
                key = tool + (" " + m.group(1) if subs and m.group(1) else "")
                if best is None or m.end() >= best[0]:
                    best = (m.end(), key, tool)
    if best is None:
        return None
    # A later `sub` (in backticks, `sub.json`, `sub --json`) of the same tool.
    tool = best[2]
    subs = subs_of(helps[tool])
    if subs:
        pat = r"(?<![\w-])(%s)(?=\.json|`| --json)" % "|".join(re.escape(s) for s in subs)
        for m in re.finditer(pat, text[best[0]:]):
            best = (best[0] + m.end(), tool + " " + m.group(1), tool)
    return best[1]


def check_claim(where, key, n, versions):
    if key is None:
        mismatch(where, "schema_version %s" % n, "cannot tell which command's document it is")
    elif key not in versions:
        mismatch(where, "schema_version %s" % n, "'%s' printed no document to compare" % key)
    elif versions[key] != int(n):
        mismatch(where, "schema_version %s" % n, "stated for '%s --json', which prints %d"
                 % (key, versions[key]))
    else:
        print("ok   %s: schema_version %s of '%s --json'" % (where, n, key))


def check_versions(src, helps, mans, versions):
    for tool in TOOLS:
        for cmd, text in helps[tool].items():
            for m in SV.finditer(text):
                key = tool + (" " + cmd if cmd else "")
                check_claim("'%s --help'" % key, key, m.group(1), versions)
        man = mans[tool]
        for idx, (n, _, text, _, _) in enumerate(man.lines):
            for m in SV.finditer(text):
                check_claim("%s:%d" % (man.rel, n), attribute_man(tool, helps, man, idx),
                            m.group(1), versions)
    for rel in markdown_files(src):
        with open(os.path.join(src, rel)) as f:
            lines = f.read().splitlines()
        for idx, line in enumerate(lines):
            for m in SV.finditer(line):
                check_claim("%s:%d" % (rel, idx + 1),
                            readme_attribute(lines, idx, m.start(), helps), m.group(1), versions)
    with open(os.path.join(src, "docs", "JSON.md")) as f:
        rows = f.read().splitlines()
    seen = set()
    for n, line in enumerate(rows, 1):
        m = re.match(r"\| `(vyre-[a-z]+)((?: [a-z][a-z-]*)*)([^`]*)` .*\| (\d+) \|$", line)
        if not m:
            continue
        key = m.group(1) + m.group(2)
        if "--clear" in m.group(3):
            key += " --clear"
        seen.add(key)
        check_claim("docs/JSON.md:%d" % n, key, m.group(4), versions)
    for key in sorted(set(versions) - seen):
        mismatch("docs/JSON.md", key + " --json", "prints schema_version %d; no row in the table"
                 % versions[key])


# --- the front door and the links ---------------------------------------------

def markdown_files(src):
    """README.md and every docs/*.md, as paths relative to src."""
    docs = sorted(f for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
    return ["README.md"] + ["docs/" + f for f in docs]


README_MAX_LINES = 200
TEST_SERVERS = ("postgresql", "nginx", "redis-server", "prometheus")
CI_TEST_BEGIN, CI_TEST_END = "# --- test command ---", "# --- end test command ---"


def sh_blocks(text):
    """[(line number of its first line, [lines])] of each ```sh block."""
    out, cur = [], None
    for n, line in enumerate(text.splitlines(), 1):
        if cur is None and line.strip() == "```sh":
            cur = (n + 1, [])
        elif cur is not None and line.strip() == "```":
            out.append(cur)
            cur = None
        elif cur is not None:
            cur[1].append(line)
    return out


def apt_packages(line):
    """The packages an `apt-get install` on this line names, in order."""
    m = re.search(r"apt-get install((?:\s+[^\s'\"&;|]+)+)", line)
    return [w for w in m.group(1).split() if not w.startswith("-")] if m else []


def readme_commands(readme):
    """{1: (line, [lines]), 2: ...}: the sh blocks whose first line is
    '# 1. ...' and '# 2. ...'."""
    out = {}
    for n, lines in sh_blocks(readme):
        m = re.match(r"#\s*(\d+)\.", lines[0]) if lines else None
        if m:
            out[int(m.group(1))] = (n, lines)
    return out


def ci_run_lists(ci_text):
    """(build packages, test packages, test command) of .ci/run."""
    lists = {}
    for name in ("build_packages", "test_packages"):
        m = re.search(r"^%s=\(([^)]*)\)" % name, ci_text, re.M)
        lists[name] = m.group(1).replace("\\", " ").split() if m else None
    m = re.search(re.escape(CI_TEST_BEGIN) + r"\n(.*?)\n" + re.escape(CI_TEST_END), ci_text, re.S)
    return lists["build_packages"], lists["test_packages"], m.group(1).strip() if m else None


def check_front_door(readme, ci_text, report):
    """README.md's length, its commands' packages, and .ci/run beside them.
    report(where, what, differs) is called once per problem."""
    n_lines = len(readme.splitlines())
    if n_lines > README_MAX_LINES:
        report("README.md", "length", "%d lines, more than %d: move the reference to docs/*.md"
               % (n_lines, README_MAX_LINES))
    cmds = readme_commands(readme)
    if 1 not in cmds or 2 not in cmds:
        report("README.md", "commands", "no ```sh block starting '# 1.' and one '# 2.'")
        return
    build = [p for line in cmds[1][1] for p in apt_packages(line)]
    if not build:
        report("README.md:%d" % cmds[1][0], "command 1", "installs nothing (no apt-get install)")
    for p in TEST_SERVERS:
        if p in build:
            report("README.md:%d" % cmds[1][0], "command 1",
                   "installs %s, which only the tests need: install it beside command 2" % p)
    test = [p for line in cmds[2][1] for p in apt_packages(line)]
    test_cmd = [line for line in cmds[2][1] if line.startswith("cmake ")]
    ci_build, ci_test, ci_cmd = ci_run_lists(ci_text)
    if ci_build is None or ci_test is None or ci_cmd is None:
        report(".ci/run", "lists", "no build_packages=(...), test_packages=(...) or test command"
               " between '%s' and '%s'" % (CI_TEST_BEGIN, CI_TEST_END))
        return
    if sorted(build) != sorted(ci_build):
        report(".ci/run", "build_packages", "differ from README command 1's: %s"
               % " ".join(sorted(set(build) ^ set(ci_build))))
    if sorted(test) != sorted(ci_test):
        report(".ci/run", "test_packages", "differ from README command 2's install line: %s"
               % " ".join(sorted(set(test) ^ set(ci_test))))
    if test_cmd != [ci_cmd]:
        report(".ci/run", "test command", "is not README command 2's, verbatim: %r vs %r"
               % (ci_cmd, test_cmd))


def github_slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def anchors(text):
    """The #anchors of a markdown file's headings, as GitHub makes them."""
    out, seen, fence = set(), {}, False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*$", line)
        if m:
            slug = github_slug(m.group(1))
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            out.add(slug if k == 0 else "%s-%d" % (slug, k))
    return out


LINK = re.compile(r"\]\(([^)\s]+)\)")


def check_links(src, files, report, read=None):
    """Every relative link of the markdown files reaches a file, and a
    heading for #anchor; README.md links every docs/*.md. read(rel) gives a
    file's text (tests plant files through it)."""
    def default_read(rel):
        with open(os.path.join(src, rel)) as f:
            return f.read()
    read = read or default_read
    exists = lambda rel: (read(rel) is not None) if read is not default_read \
        else os.path.exists(os.path.join(src, rel))
    texts = {rel: read(rel) for rel in files}
    linked_from_readme = set()
    for rel, text in texts.items():
        fence = False
        for n, line in enumerate(text.splitlines(), 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue  # https:, mailto:
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(rel), path)) if path else rel
                if rel == "README.md":
                    linked_from_readme.add(dest)
                if dest.startswith(".."):
                    report("%s:%d" % (rel, n), "link", "'%s' leads out of the repository" % target)
                elif not exists(dest):
                    report("%s:%d" % (rel, n), "link", "'%s': no such file" % target)
                elif anchor and dest.endswith(".md") and anchor not in anchors(
                        texts[dest] if dest in texts else read(dest)):
                    report("%s:%d" % (rel, n), "link", "'%s': %s has no heading '#%s'"
                           % (target, dest, anchor))
    for rel in files:
        if rel.startswith("docs/") and rel not in linked_from_readme:
            report("README.md", "link", "%s is linked from nowhere in the README" % rel)


def self_test():
    """The front-door and link checks find what is planted in them (the real
    files must then pass them): returns the problems they missed."""
    missed = []

    def expect(what, fn, *args):
        found = []
        fn(*args, lambda *a: found.append(a))
        if not found:
            missed.append(what)
        return found

    cmd2 = "cmake -S . -B t && ctest"
    ci = ("build_packages=(cmake libpq-dev)\ntest_packages=(nginx)\n%s\n%s\n%s\n"
          % (CI_TEST_BEGIN, cmd2, CI_TEST_END))
    good = ("# x\n```sh\n# 1. build\nsudo apt-get install -y cmake libpq-dev && cmake\n```\n"
            "```sh\n# 2. test\nsudo apt-get install -y -qq nginx\n%s\n```\n" % cmd2)
    clean = []
    check_front_door(good, ci, lambda *a: clean.append(a))
    if clean:
        missed.append("a clean README was reported: %r" % clean)
    expect("a 201-line README", check_front_door, good + "x\n" * 201, ci)
    for server in TEST_SERVERS:
        expect("%s in command 1" % server, check_front_door,
               good.replace("libpq-dev &&", "libpq-dev %s &&" % server), ci)
    expect("a test command unlike .ci/run's", check_front_door, good.replace(cmd2, cmd2 + " -V"), ci)
    expect("a build list unlike .ci/run's", check_front_door, good, ci.replace("libpq-dev", ""))
    files = {"README.md": "[a](docs/A.md#two) [b](docs/B.md)\n", "docs/A.md": "# One\n## Two\n",
             "docs/B.md": "[up](../README.md) [x](X.md)\n", "docs/C.md": "# C\n"}
    found = []
    check_links("", sorted(files), lambda *a: found.append(a), lambda rel: files.get(rel))
    # Exactly the missing X.md and the unlinked C.md.
    whats = sorted(f[2] for f in found)
    if len(found) != 2 or "X.md" not in whats[0] + whats[1] or "docs/C.md" not in " ".join(whats):
        missed.append("links: %r" % found)
    return missed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for opt in ("source", "bench", "cachectl", "top", "exporter", "fakecuda", "fakenvml"):
        ap.add_argument("--" + opt, required=True)
    args = ap.parse_args()
    for what in self_test():
        mismatch("tests/docs/check_docs.py", "self-test", "the check missed %s" % what)
    tmp = tempfile.mkdtemp(prefix="vyre-test-docs-")
    memtmp = mkdtemp_mem(tmp)
    try:
        env = Env(args, tmp, memtmp)
        helps = collect_help(env)
        mans = {t: Man(os.path.join(args.source, "docs", "man", t + ".1"), "docs/man/%s.1" % t)
                for t in TOOLS}
        help_opts, hd = {}, {}
        for tool in TOOLS:
            help_opts[tool] = check_options(tool, helps[tool], mans[tool])
            check_synopsis(tool, helps[tool], mans[tool])
            hd[tool] = check_defaults(tool, helps[tool], mans[tool])
        for rel in markdown_files(args.source):
            with open(os.path.join(args.source, rel)) as f:
                readme_options(f.read(), help_opts, rel)
        with open(os.path.join(args.source, "README.md")) as f:
            readme = f.read()
        with open(os.path.join(args.source, ".ci", "run")) as f:
            check_front_door(readme, f.read(), mismatch)
        check_links(args.source, markdown_files(args.source), mismatch)
        versions = actual_versions(env)
        actual = {("vyre-exporter", "cache-dir"): scrape_cache_dir(env)}
        actual[("vyre-cachectl", "cache-dir")] = json_key(env, [args.cachectl, "stats"], "cache_dir")
        actual[("vyre-bench", "db")] = json_key(env, [args.bench, "runs"], "db")
        check_path_defaults(env, hd, actual)
        check_versions(args.source, helps, mans, versions)
        schema_meanings.check(env, args.source, mismatch)
    finally:
        shutil.rmtree(memtmp, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    if MISMATCHES:
        print("%d mismatch(es) between the docs and the binaries" % len(MISMATCHES))
        return 1
    print("docs: every option, synopsis, default, schema_version and schema field meaning "
          "matches the binaries; the README's front door and every link hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
