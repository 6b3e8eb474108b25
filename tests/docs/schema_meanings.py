"""What the vyre-bench JSON schemas say a field is, checked against a real run.

check_docs.py's schema check compares schema_version numbers; this one
compares meanings (issue 34: the run schema described `noise_ratio` as
"stddev / mean" and `rel_stddev_ratio` as "1.4826 * MAD / median", the
reverse of what `run --json` prints). For the per-point objects of the run,
show, export and compare schemas, a field whose description names one of
FORMULAS is recomputed from the samples `export --json` gives for the same
point and compared with the value the command printed. Each schema must
have at least one such field, and the run must hold a point where the two
figures differ by far more than the tolerance, so that a swapped
description cannot pass.

The run: two runs of a fake cubin through the fake libcuda with one round
each (a point's noise over several rounds may be the round medians'
spread, which the samples alone cannot give back), whose host references
(reference.cpu, .cpus, .fsync) are real measurements with real outliers.
"""
import json
import math
import os

FORMULAS = ("stddev / mean", "1.4826 * MAD / median")


def _median(xs):
    """Type-7 median, as libcore's vyre_stats_percentile_sorted(.., 50)."""
    s = sorted(xs)
    h = (len(s) - 1) * 0.5
    lo = int(math.floor(h))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def recompute(formula, xs):
    """The figure `formula` names, of samples xs (ns); None when undefined."""
    if len(xs) < 2:
        return None
    if formula == "stddev / mean":
        mean = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
        return sd / mean if mean > 0 else None
    med = _median(xs)
    mad = _median([abs(x - med) for x in xs])
    return 1.4826 * mad / med if med > 0 else None


def _resolve(schema, node):
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        node = schema
        for part in ref[2:].split("/"):
            node = node[part]
    return node


def claims(schema):
    """{field: formula} of the point objects' fields whose description names
    exactly one formula; fields naming both are returned as 'ambiguous'."""
    point = _resolve(schema, _resolve(schema, schema["properties"]["points"])["items"])
    out = {}
    for name, prop in point.get("properties", {}).items():
        desc = prop.get("description", "")
        named = [f for f in FORMULAS if f in desc]
        if len(named) == 1:
            out[name] = named[0]
        elif len(named) > 1:
            out[name] = "ambiguous"
    return out


def _tolerance(xs):
    # JSON samples are whole ns: rounding moves the MAD or the stddev by at
    # most 1 ns, so the figure by about 1.4826 / median.
    return 2.0 / max(_median(xs), 1.0) + 1e-9


def _check_doc(mismatch, what, schema, doc, samples_of, distinct):
    """Every claimed field of every point of doc against its samples."""
    fields = claims(schema)
    where = "docs/schema/%s.schema.json" % what
    if not fields:
        mismatch(where, "meaning", "no point field's description names %s or %s" % FORMULAS)
        return
    checked, wrong = 0, {}
    for pt in doc.get("points", []):
        for field, formula in sorted(fields.items()):
            if formula == "ambiguous":
                wrong.setdefault(field, ["the description names both %s and %s" % FORMULAS])
                continue
            xs = samples_of(pt, field)
            if xs is None or field not in pt or pt[field] is None:
                continue
            want = recompute(formula, xs)
            if want is None:
                continue
            other = recompute([f for f in FORMULAS if f != formula][0], xs)
            tol = _tolerance(xs)
            if other is not None and abs(other - want) > 20 * tol:
                distinct.add(what)
            checked += 1
            if abs(pt[field] - want) > tol:
                wrong.setdefault(field, ["described as %s, but %s prints %.6g for %s, whose "
                                         "samples' %s is %.6g" % (formula, what, pt[field],
                                                                  pt.get("benchmark"), formula,
                                                                  want)]).append(pt)
    for field, (text, *pts) in sorted(wrong.items()):
        mismatch(where, field, text + (" (and %d more points)" % (len(pts) - 1)
                                       if len(pts) > 1 else ""))
    if not checked:
        mismatch(where, "meaning", "no point of the real run to check %s against"
                 % ", ".join(sorted(fields)))


def check(env, source, mismatch):
    """Runs the check; mismatch(where, what, differs) reports."""
    bench = env.args.bench
    db = os.path.join(env.tmp, "meanings.sqlite3")
    cubin = os.path.join(env.tmp, "meanings.cubin")
    with open(cubin, "wb") as f:
        f.write(b"\x7fELF fakecubin:add_one;ns=100000\0")
    fake = {"VYRE_CUDA_LIBRARY": env.args.fakecuda, "FAKECUDA_DEVICES": "1",
            "VYRE_NVML_LIBRARY": os.path.join(env.tmp, "no-nvml.so")}
    docs = {}
    for i in (1, 2):
        p = env.run([bench, "run", cubin, "--entry", "add_one", "-a", "N=1K,4K", "--db", db,
                     "--rounds", "1", "--min-samples", "20", "--min-time", "0", "--timeout",
                     "5", "--no-kernels", "--json"], extra=fake)
        if p.returncode != 0:
            mismatch("vyre-bench run", "meaning", "exit %d: %s" % (p.returncode, p.stderr))
            return
        docs[("vyre-bench-run", i)] = json.loads(p.stdout)
    samples = {}
    for i in (1, 2):
        p = env.run([bench, "export", "--db", db, "--json", str(i)])
        exp = json.loads(p.stdout)
        docs[("vyre-bench-export", i)] = exp
        for pt in exp["points"]:
            samples[pt["id"]] = [s["value_ns"] for s in pt["samples"]]
    p = env.run([bench, "show", "--db", db, "--json", "2"])
    docs[("vyre-bench-show", 2)] = json.loads(p.stdout)
    p = env.run([bench, "compare", "--db", db, "--json", "1", "2"])
    docs[("vyre-bench-compare", 0)] = json.loads(p.stdout)

    def by_id(pt, field):
        if "point_a_id" in pt:  # compare: each side's own point
            return samples.get(pt["point_b_id" if field.endswith("_b_ratio") else "point_a_id"])
        return samples.get(pt.get("id"))

    distinct = set()
    for (what, _), doc in sorted(docs.items()):
        with open(os.path.join(source, "docs", "schema", what + ".schema.json")) as f:
            schema = json.load(f)
        _check_doc(mismatch, what, schema, doc, by_id, distinct)
    for what in sorted({w for w, _ in docs} - distinct):
        mismatch("docs/schema/%s.schema.json" % what, "meaning",
                 "no point of the run tells %s from %s: the check has no teeth" % FORMULAS)
