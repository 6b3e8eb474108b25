/*
 * runs_select.c - a baseline chosen by what matters rather than by id
 * (vyre_results_select_run in vyre/results.h): "gpu=H200 branch=main
 * last" is the newest done run on an H200 whose tree was on main, in a
 * store that many machines write. Also where a run's git branch or tag is
 * recorded (vyre_results_run_set_ref; db/results_v7.sql). "... last:K"
 * names the K newest matching runs, whose rounds a comparison's baseline
 * pools (vyre_results_select_pool).
 *
 * A selector becomes one parameterised query: values are bound, never
 * spliced, and LIKE's wildcards in them are escaped, so "gpu=H_00" matches
 * an underscore. Matching is the same on both engines: lower() on both
 * sides (SQLite's LIKE ignores ASCII case, PostgreSQL's does not).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/bench_internal.h"
#include "bench/results_internal.h"
#include "bench/runs_select.h"
#include "vyre/bench.h"

#define SELECT_HINT                                                                                \
    "write KEY=VALUE words (gpu, driver, cuda, host, branch, tag, rev) then 'last', 'last-N' or "  \
    "'last:K', e.g. 'gpu=H200 branch=main last'"

/* A term's SQL is pre, its parameter, post. */
static const struct {
    const char *key;
    const char *pre, *post;
    int like; /* 0 exact, 1 contains, 2 prefix */
} k_keys[] = {
    {"gpu", "lower(gpu_name) LIKE lower(", ") ESCAPE '\\'", 1},
    {"driver", "driver LIKE ", " ESCAPE '\\'", 2},
    {"cuda", "cuda_version LIKE ", " ESCAPE '\\'", 2},
    {"host", "host = ", "", 0},
    {"branch", "git_ref = ", "", 0},
    {"tag", "git_ref = ", "", 0},
    {"rev", "git_rev LIKE ", " ESCAPE '\\'", 2},
};

/* value as a LIKE pattern: wildcards escaped, then % around or after. */
static void like_pattern(const char *v, int like, char *out, size_t size)
{
    size_t o = 0;
    if (like == 1 && o + 1 < size)
        out[o++] = '%';
    for (; *v && o + 3 < size; v++) {
        if (*v == '%' || *v == '_' || *v == '\\')
            out[o++] = '\\';
        out[o++] = *v;
    }
    if (like && o + 1 < size)
        out[o++] = '%';
    out[o] = '\0';
}

/* One KEY=VALUE word into t. */
static int parse_term(const char *w, size_t n, term *t, vyre_error *err)
{
    const char *eq = memchr(w, '=', n);
    for (size_t k = 0; eq && k < VYRE_ARRAY_SIZE(k_keys); k++)
        if (strlen(k_keys[k].key) == (size_t)(eq - w) &&
            memcmp(w, k_keys[k].key, (size_t)(eq - w)) == 0) {
            size_t vn = n - (size_t)(eq - w) - 1;
            if (!vn || vn >= sizeof t->value)
                break;
            t->key = (int)k;
            memcpy(t->value, eq + 1, vn);
            t->value[vn] = '\0';
            return VYRE_OK;
        }
    return vyre__fail(err, VYRE_EINVAL, SELECT_HINT, "bad baseline selector word '%.*s'", (int)n,
                      w);
}

/* The last word: last (0), last-N (N), last:K (pool K, 1..VYRE_RESULTS_POOL_MAX). */
static int parse_last(const char *w, size_t n, long long *back, long long *pool, vyre_error *err)
{
    if (n == 4 && memcmp(w, "last", 4) == 0) {
        *back = 0;
        return VYRE_OK;
    }
    if (n > 5 && (memcmp(w, "last-", 5) == 0 || memcmp(w, "last:", 5) == 0)) {
        char buf[24];
        snprintf(buf, sizeof buf, "%.*s", (int)(n - 5), w + 5);
        char *end = NULL;
        long long v = strtoll(buf, &end, 10);
        int ok = *end == '\0' && v >= 0 && buf[0] >= '0' && buf[0] <= '9';
        if (ok && w[4] == '-') {
            *back = v;
            return VYRE_OK;
        }
        if (ok && v >= 1 && v <= VYRE_RESULTS_POOL_MAX) {
            *pool = v;
            return VYRE_OK;
        }
        if (ok)
            return vyre__fail(err, VYRE_EINVAL,
                              "K counts the newest matching runs whose rounds are pooled: 1 to "
                              "64, e.g. 'gpu=H200 branch=main last:5'",
                              "baseline '%.*s': K must be 1 to %d", (int)n, w,
                              VYRE_RESULTS_POOL_MAX);
    }
    return vyre__fail(err, VYRE_EINVAL, SELECT_HINT,
                      "baseline selector must end with 'last', 'last-N' or 'last:K', not '%.*s'",
                      (int)n, w);
}

int vyre__select_parse(const char *sel, int need_last, vyre__select *out, vyre_error *err)
{
    memset(out, 0, sizeof *out);
    term *t = out->t;
    size_t *nt = &out->n;
    long long *back = &out->back;
    *nt = 0;
    int have_last = 0;
    for (const char *p = sel; *p;) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        if (!n)
            break;
        int rc;
        if (have_last)
            return vyre__fail(err, VYRE_EINVAL, SELECT_HINT,
                              "baseline selector: '%.*s' after 'last'", (int)n, p);
        if (!need_last && !memchr(p, '=', n))
            return vyre__fail(err, VYRE_EINVAL,
                              "a filter is KEY=VALUE words (gpu, driver, cuda, host, branch, tag, "
                              "rev), e.g. 'gpu=H200 branch=main'",
                              "bad filter word '%.*s'", (int)n, p);
        if (memchr(p, '=', n)) {
            if (*nt == VYRE__SELECT_MAX)
                return vyre__fail(err, VYRE_EINVAL, SELECT_HINT, "too many selector words");
            rc = parse_term(p, n, &t[(*nt)++], err);
        } else {
            rc = parse_last(p, n, back, &out->pool, err);
            have_last = 1;
        }
        if (rc)
            return rc;
        p += n;
    }
    if (!have_last && need_last)
        return vyre__fail(err, VYRE_EINVAL, SELECT_HINT,
                          "baseline selector '%s' does not end with 'last', 'last-N' or 'last:K'",
                          sel);
    return VYRE_OK;
}

size_t vyre__select_sql(const vyre__select *f, int first, char *sql, size_t size, size_t o)
{
    for (size_t i = 0; i < f->n && o < size; i++)
        o += (size_t)snprintf(sql + o, size - o, " AND %s?%d%s", k_keys[f->t[i].key].pre,
                              first + (int)i, k_keys[f->t[i].key].post);
    return o;
}

void vyre__select_bind(const vyre__select *f, int first, vyre__stmt *st)
{
    for (size_t i = 0; i < f->n; i++) {
        char pat[600];
        const term *t = &f->t[i];
        if (k_keys[t->key].like)
            like_pattern(t->value, k_keys[t->key].like, pat, sizeof pat);
        else
            vyre__strlcpy(pat, t->value, sizeof pat);
        vyre__stmt_text(st, first + (int)i, pat, strlen(pat));
    }
}

/* The ids of up to cap done runs that match f, newest first, from the
 * back-th on, run exclude (0: none) left out; *n of them. */
static int select_ids(vyre_results *db, const vyre__select *f, const char *selector, size_t cap,
                      int64_t exclude, int64_t *ids, size_t *n, vyre_error *err)
{
    char sql[2048];
    size_t o = (size_t)snprintf(sql, sizeof sql, "SELECT id FROM runs WHERE status = 'done'");
    o = vyre__select_sql(f, 1, sql, sizeof sql, o);
    if (o < sizeof sql)
        snprintf(sql + o, sizeof sql - o,
                 " AND id <> ?%d ORDER BY started_ns DESC, id DESC LIMIT ?%d OFFSET ?%d",
                 (int)f->n + 3, (int)f->n + 1, (int)f->n + 2);
    vyre_error ignored;
    vyre_error_clear(&ignored);
    vyre__bench_runs_reap(db, NULL, &ignored); /* a dead 'running' run is no baseline either */
    vyre__results_lock(db);
    vyre__stmt *st = NULL;
    *n = 0;
    int rc = vyre__results_prepare(db, sql, &st, err);
    if (!rc) {
        vyre__select_bind(f, 1, st);
        vyre__stmt_int64(st, (int)f->n + 1, (int64_t)cap);
        vyre__stmt_int64(st, (int)f->n + 2, f->back);
        vyre__stmt_int64(st, (int)f->n + 3, exclude);
        int s = 0;
        while (*n < cap && (s = vyre__stmt_step(st, "read", err)) == 1)
            ids[(*n)++] = vyre__stmt_col_int64(st, 0);
        if (*n == 0 && s == 0)
            rc = vyre__remedy(err, VYRE_REMEDY_BENCH_RUNS,
                              vyre__fail(err, VYRE_ENOENT,
                                         "check the selector against the stored runs' GPU, host "
                                         "and branch; only done runs count",
                                         "no done run matches '%s' in '%s'", selector,
                                         vyre_results_path(db)));
        else if (s < 0)
            rc = s;
    }
    vyre__stmt_finalize(st);
    vyre__results_unlock(db);
    return rc;
}

/* The one run 'last' / 'last-N' of f names, or, when that is candidate
 * (the run compared with it), the matching run before it: a baseline that
 * is the candidate compares a run with itself, a gate that cannot fail
 * (issue 33: 'branch=main last' on main). None before it: VYRE_ENOENT. */
static int select_one(vyre_results *db, const vyre__select *f, const char *selector,
                      int64_t candidate, int64_t *id, vyre_error *err)
{
    int64_t two[2] = {0, 0};
    size_t n = 0;
    int rc = select_ids(db, f, selector, candidate > 0 ? 2 : 1, 0, two, &n, err);
    if (rc)
        return rc;
    if (candidate <= 0 || two[0] != candidate) {
        *id = two[0];
        return VYRE_OK;
    }
    if (n == 2) {
        *id = two[1];
        return VYRE_OK;
    }
    return vyre__fail(err, VYRE_ENOENT,
                      "a run is never its own baseline: measure the baseline first (e.g. a run on "
                      "main), or choose it by id or with another selector",
                      "baseline '%s' is run %" PRId64
                      ", the run compared, and no done run before it matches",
                      selector, candidate);
}

int vyre_results_select_run(vyre_results *db, const char *selector, int64_t *id, vyre_error *err)
{
    if (!db || !selector || !id)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_select_run: NULL argument");
    vyre__select f;
    int rc = vyre__select_parse(selector, 1, &f, err);
    if (rc)
        return rc;
    if (f.pool)
        return vyre__fail(err, VYRE_EINVAL,
                          "name one run with 'last' or 'last-N'; 'last:K' pools the rounds of K "
                          "runs and is only a comparison's baseline",
                          "'%s' names %lld runs where one run is needed", selector, f.pool);
    return select_one(db, &f, selector, 0, id, err);
}

int vyre_results_select_pool(vyre_results *db, const char *selector, int64_t candidate,
                             int64_t ids[VYRE_RESULTS_POOL_MAX], size_t *n, size_t *asked,
                             vyre_error *err)
{
    if (!db || !selector || !ids || !n || !asked)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_select_pool: NULL argument");
    *n = *asked = 0;
    vyre__select f;
    int rc = vyre__select_parse(selector, 1, &f, err);
    if (rc)
        return rc;
    *asked = f.pool ? (size_t)f.pool : 1;
    /* A baseline never is the run compared with it: a gate run on main
     * would otherwise count itself among main's last K, or be main's
     * last. */
    if (!f.pool) {
        rc = select_one(db, &f, selector, candidate, ids, err);
        *n = rc ? 0 : 1;
        return rc;
    }
    return select_ids(db, &f, selector, *asked, candidate, ids, n, err);
}

/* vyre_results_run_set_ref's arguments. */
typedef struct {
    int64_t run_id;
    const char *ref;
} run_ref;

static int set_ref_tx(vyre_results *db, void *arg, vyre_error *err)
{
    const run_ref *a = arg;
    int64_t run_id = a->run_id;
    const char *ref = a->ref;
    vyre__stmt *st = NULL;
    int rc = vyre__results_prepare(db, "UPDATE runs SET git_ref = ?2 WHERE id = ?1 RETURNING id",
                                   &st, err);
    if (!rc) {
        vyre__stmt_int64(st, 1, run_id);
        if (ref && *ref)
            vyre__stmt_text(st, 2, ref, strlen(ref));
        else
            vyre__stmt_null(st, 2);
        int s = vyre__stmt_step(st, "record a run's git ref in", err);
        rc = s < 0    ? s
             : s == 0 ? vyre__fail(err, VYRE_ENOENT, NULL, "no run %" PRId64 " in '%s'", run_id,
                                   vyre_results_path(db))
                      : VYRE_OK;
    }
    vyre__stmt_finalize(st);
    return rc;
}

int vyre_results_run_set_ref(vyre_results *db, int64_t run_id, const char *ref, vyre_error *err)
{
    if (!db || run_id <= 0)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_results_run_set_ref: bad arguments");
    run_ref a = {run_id, ref};
    return vyre__results_tx(db, "record a run's git ref in", set_ref_tx, &a, err);
}
