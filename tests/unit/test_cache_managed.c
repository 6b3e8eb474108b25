/*
 * test_cache_managed.c - the managed-cache engine (cache/managed.h) on a
 * kind held in memory: what it takes and in which order, what it leaves
 * (young, not prunable, gone), a dry run, and the size limit; verify's
 * findings and repair (each unusable entry moved once, nothing else). The kinds on
 * disk (Triton, TorchInductor) are tested through it in test_triton_prune.c
 * and test_inductor.c.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/internal.h"
#include "cache/managed.h"
#include "testutil.h"
#include "vyre/vyre.h"

#define NOW    (INT64_C(1000000) * 1000000000)
#define MINUTE (INT64_C(60) * 1000000000)

typedef struct fake_entry {
    const char *name;
    uint64_t bytes;
    int64_t last_use_ns, touched_ns; /* touched -1: gone */
    unsigned flags;
    const char *own; /* its own reason, or NULL */
    int fail;        /* remove fails with VYRE_EIO */
    int removed;     /* remove was called */
} fake_entry;

typedef struct fake {
    fake_entry *e;
    size_t n;
    char log[512]; /* "name:reason:rc " per report */
} fake;

static size_t f_count(void *k)
{
    return ((fake *)k)->n;
}

static void f_describe(void *k, size_t i, vyre__managed_entry *out)
{
    const fake_entry *e = &((fake *)k)->e[i];
    out->name = e->name;
    out->bytes = e->bytes;
    out->last_use_ns = e->last_use_ns;
    out->flags = e->flags;
}

static const char *f_own(void *k, size_t i, const vyre__managed_opts *o)
{
    (void)o;
    return ((fake *)k)->e[i].own;
}

static int64_t f_touched(void *k, size_t i)
{
    return ((fake *)k)->e[i].touched_ns;
}

static int f_remove(void *k, size_t i, vyre_error *err)
{
    fake_entry *e = &((fake *)k)->e[i];
    e->removed = 1;
    return e->fail ? vyre__fail(err, VYRE_EIO, NULL, "cannot remove '%s'", e->name) : 0;
}

static int f_report(void *k, size_t i, const char *reason, int rc, const vyre_error *err)
{
    fake *f = k;
    size_t len = strlen(f->log);
    snprintf(f->log + len, sizeof f->log - len, "%s:%s:%d ", f->e[i].name, reason, rc != 0);
    if (rc)
        cr_assert(strstr(err->message, f->e[i].name), "%s", err->message);
    return 0;
}

static vyre__managed_ops ops = {f_count,  f_describe, f_own, f_touched, f_remove,
                                f_report, 0,          NULL,  0};

#define P      VYRE__MANAGED_PRUNABLE
#define OLD(s) (NOW - (int64_t)(s)*1000000000)

Test(cache_managed, size_limit_takes_least_recently_used_first_and_leaves_young_ones)
{
    fake_entry e[] = {
        {"a", 100, OLD(300), OLD(300), P, NULL, 0, 0},
        {"b", 100, OLD(900), OLD(900), P, NULL, 0, 0},
        {"c", 100, OLD(1000), OLD(10), P, NULL, 0, 0}, /* oldest use, written 10 s ago */
        {"d", 100, OLD(600), OLD(600), P, NULL, 0, 0},
    };
    fake f = {e, 4, ""};
    vyre__managed_opts o = {.max_bytes = 250, .now_ns = NOW};
    vyre__managed_result r;
    cr_assert_eq(vyre__managed_prune(&ops, &f, 400, &o, &r, NULL), 0);
    cr_assert_str_eq(f.log, "b:size:0 d:size:0 ");
    cr_assert_eq(r.removed, 2);
    cr_assert_eq(r.removed_bytes, 200);
    cr_assert_eq(r.young, 1, "c is young: left");
    cr_assert_eq(r.kept_bytes, 200);
    cr_assert(!e[2].removed && !e[0].removed);
    cr_assert_eq(r.state[2], VYRE__MANAGED_YOUNG);
    vyre__managed_result_release(&r);
}

Test(cache_managed, limits_never_take_what_is_not_prunable_but_own_reasons_do)
{
    fake_entry e[] = {
        {"foreign", 100, OLD(9000), OLD(9000), 0, NULL, 0, 0},
        {"trash", 50, OLD(9000), 0, 0, "trash", 0, 0},
        {"k", 100, OLD(9000), OLD(9000), P, NULL, 0, 0},
    };
    fake f = {e, 3, ""};
    vyre__managed_opts o = {.all = 1, .max_bytes = 1, .now_ns = NOW};
    vyre__managed_result r;
    cr_assert_eq(vyre__managed_prune(&ops, &f, 260, &o, &r, NULL), 0);
    cr_assert_str_eq(f.log, "trash:trash:0 k:clear:0 ");
    cr_assert(!e[0].removed, "a foreign name was removed");
    cr_assert_eq(r.kept_bytes, 110);
    vyre__managed_result_release(&r);
}

Test(cache_managed, age_gone_failed_and_dry_run)
{
    fake_entry e[] = {
        {"gone", 100, OLD(9000), -1, P, NULL, 0, 0},
        {"bad", 100, OLD(9000), OLD(9000), P, NULL, 1, 0},
        {"new", 100, OLD(30 * 60), OLD(30 * 60), P, NULL, 0, 0},
        {"old", 100, OLD(7200), OLD(7200), P, NULL, 0, 0},
    };
    fake f = {e, 4, ""};
    vyre__managed_opts o = {
        .max_bytes = UINT64_MAX, .max_age_ns = 60 * MINUTE, .now_ns = NOW, .dry_run = 1};
    vyre__managed_result r;
    cr_assert_eq(vyre__managed_prune(&ops, &f, 400, &o, &r, NULL), 0);
    cr_assert_str_eq(f.log, "bad:age:0 old:age:0 ", "a dry run reports what would go");
    for (size_t i = 0; i < 4; i++)
        cr_assert(!e[i].removed, "a dry run removed %s", e[i].name);
    vyre__managed_result_release(&r);
    f.log[0] = '\0';
    o.dry_run = 0;
    cr_assert_eq(vyre__managed_prune(&ops, &f, 400, &o, &r, NULL), 0);
    cr_assert_str_eq(f.log, "bad:age:1 old:age:0 ");
    cr_assert_eq(r.failed, 1);
    cr_assert_eq(r.removed, 1);
    cr_assert_eq(r.state[0], VYRE__MANAGED_GONE, "gone already is no failure");
    cr_assert_eq(r.kept_bytes, 200, "what is gone and what went no longer count");
    cr_assert(!e[2].removed);
    vyre__managed_result_release(&r);
}

Test(cache_managed, lru_order_walks_step_one_least_recently_used_first)
{
    fake_entry e[] = {
        {"a", 1, OLD(100), OLD(100), P, NULL, 0, 0},
        {"b", 1, OLD(300), OLD(300), P, NULL, 0, 0},
        {"c", 1, OLD(200), OLD(200), P, NULL, 0, 0},
    };
    fake f = {e, 3, ""};
    vyre__managed_ops lru = ops;
    lru.lru_order = 1;
    vyre__managed_opts o = {.max_bytes = UINT64_MAX, .all = 1, .now_ns = NOW};
    vyre__managed_result r;
    cr_assert_eq(vyre__managed_prune(&lru, &f, 3, &o, &r, NULL), 0);
    cr_assert_str_eq(f.log, "b:clear:0 c:clear:0 a:clear:0 ");
    vyre__managed_result_release(&r);
}

Test(cache_managed, quarantine_move_picks_a_free_name)
{
    char dir[512];
    tu_mkdtemp(dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    cr_assert(fd >= 0);
    cr_assert_eq(mkdirat(fd, "q", 0700), 0);
    int q = openat(fd, "q", O_RDONLY | O_DIRECTORY);
    vyre_error err;
    vyre_error_clear(&err);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(mkdirat(fd, "g", 0700), 0);
        cr_assert_eq(vyre__managed_quarantine_move(fd, "g", q, "g", "q", &err), 0, "%s",
                     err.message);
    }
    struct stat st;
    cr_assert_eq(fstatat(q, "g", &st, 0), 0);
    cr_assert_eq(fstatat(q, "g.1", &st, 0), 0, "the second went under a fresh name");
    cr_assert_eq(vyre__managed_quarantine_move(fd, "g", q, "g", "q", &err), VYRE_ENOENT);
    cr_assert(strstr(err.message, "'g'"), "%s", err.message);
    close(q);
    close(fd);
    tu_rm_rf(dir);
}

/* A kind that removes in batches (vyre's own: one commit per batch). */
static int g_batches, g_fail_batch;
/* Entries whose name is here come back changed since the scan (young),
 * and those in g_gone as gone already. */
static const char *g_young = "", *g_gone = "";
static int f_remove_batch(void *k, const size_t *idx, size_t n, unsigned char *state,
                          vyre_error *err)
{
    fake *f = k;
    if (++g_batches == g_fail_batch) {
        memset(state, VYRE__MANAGED_FAILED, n);
        return vyre__fail(err, VYRE_EBUSY, NULL, "index locked");
    }
    for (size_t j = 0; j < n; j++) {
        const char *name = f->e[idx[j]].name;
        if (strstr(g_young, name))
            state[j] = VYRE__MANAGED_YOUNG;
        else if (strstr(g_gone, name))
            state[j] = VYRE__MANAGED_GONE;
        else
            f->e[idx[j]].removed = 1;
    }
    return 0;
}

Test(cache_managed, batches_are_reported_once_removed_and_a_failed_one_stops_the_prune)
{
    fake_entry e[5];
    static const char *const names[5] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        e[i] = (fake_entry){names[i], 10, OLD(100 + i), 0, P, NULL, 0, 0};
    fake f = {e, 5, ""};
    vyre__managed_ops b = ops;
    b.remove_batch = f_remove_batch;
    b.batch = 2;
    vyre__managed_opts o = {.max_bytes = 15, .now_ns = NOW};
    vyre__managed_result r;
    g_batches = 0, g_fail_batch = 0;
    cr_assert_eq(vyre__managed_prune(&b, &f, 50, &o, &r, NULL), 0);
    cr_assert_str_eq(f.log, "e:size:0 d:size:0 c:size:0 b:size:0 ");
    cr_assert_eq(g_batches, 2, "two full batches, the last of two");
    cr_assert_eq(r.removed, 4);
    cr_assert_eq(r.kept_bytes, 10);
    vyre__managed_result_release(&r);
    for (int i = 0; i < 5; i++)
        e[i].removed = 0;
    f.log[0] = '\0';
    g_batches = 0, g_fail_batch = 2;
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre__managed_prune(&b, &f, 50, &o, &r, &err), VYRE_EBUSY);
    cr_assert(strstr(err.message, "index locked"), "%s", err.message);
    cr_assert_str_eq(f.log, "e:size:0 d:size:0 ", "the failed batch was reported");
    cr_assert_eq(r.removed, 2);
    cr_assert_eq(r.state[2], VYRE__MANAGED_FAILED);
    cr_assert_eq(r.failed, 2, "the failed batch's two entries");
    cr_assert_eq(r.kept_bytes, 30, "what failed still counts");
    vyre__managed_result_release(&r);
}

/* A batch may leave entries: one changed since the scan (a fresh put) is
 * young, neither reported nor counted gone; one another pruner took is
 * gone, not reported, and no longer counts. */
Test(cache_managed, a_batch_leaves_young_entries_and_skips_gone_ones)
{
    fake_entry e[4];
    static const char *const names[4] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        e[i] = (fake_entry){names[i], 10, OLD(100 + i), 0, P, NULL, 0, 0};
    fake f = {e, 4, ""};
    vyre__managed_ops b = ops;
    b.remove_batch = f_remove_batch;
    b.batch = 4;
    vyre__managed_opts o = {.max_bytes = UINT64_MAX, .all = 1, .now_ns = NOW};
    vyre__managed_result r;
    g_batches = 0, g_fail_batch = 0;
    g_young = "b", g_gone = "c";
    int rc = vyre__managed_prune(&b, &f, 40, &o, &r, NULL);
    g_young = "", g_gone = "";
    cr_assert_eq(rc, 0);
    cr_assert_str_eq(f.log, "a:clear:0 d:clear:0 ", "only what went is reported");
    cr_assert_eq(r.removed, 2);
    cr_assert_eq(r.removed_bytes, 20);
    cr_assert_eq(r.state[1], VYRE__MANAGED_YOUNG);
    cr_assert_eq(r.state[2], VYRE__MANAGED_GONE);
    cr_assert_eq(r.young, 1);
    cr_assert_eq(r.young_bytes, 10);
    cr_assert_eq(r.failed, 0);
    cr_assert_eq(r.kept_bytes, 10, "the young entry still counts, the gone one not");
    cr_assert(!e[1].removed && !e[2].removed);
    vyre__managed_result_release(&r);
}

/* ---- verify ------------------------------------------------------------- */

/* A kind held in memory for verify: per entry, what its check finds. */
typedef struct vfake {
    const char *name[4];
    int bad[4];   /* 1 unusable, 2 a foreign name (reported, never unusable) */
    int fail[4];  /* its quarantine fails */
    int moved[4]; /* quarantine calls */
} vfake;

static size_t v_count(const void *k)
{
    (void)k;
    return 4;
}

static void v_check(const void *k, size_t i, vyre__managed_verdict *v)
{
    const vfake *f = k;
    if (f->bad[i] == 1) {
        vyre__managed_found(v, "a.cubin", "bad-cubin", 1, "'%s' is no cubin", f->name[i]);
        vyre__managed_found(v, NULL, "orphan", 0, "'%s' has an orphan", f->name[i]);
        vyre__managed_found(v, "a.json", "bad-metadata", 1, "'%s' no metadata", f->name[i]);
    } else if (f->bad[i] == 2) {
        vyre__managed_found(v, NULL, "foreign", 0, "'%s' is not ours", f->name[i]);
    }
}

static int v_quarantine(const void *k, size_t i, vyre_error *err)
{
    vfake *f = (vfake *)(uintptr_t)k;
    f->moved[i]++;
    return f->fail[i] ? vyre__fail(err, VYRE_EIO, "make room", "cannot move '%s'", f->name[i]) : 0;
}

static const vyre__managed_check_ops v_ops = {v_count, v_check, v_quarantine, NULL};

Test(cache_managed, verify_reports_every_entry_and_moves_nothing_without_repair)
{
    vfake f = {{"a", "b", "c", "d"}, {1, 2, 0, 1}, {0}, {0}};
    vyre__managed_verdict v;
    cr_assert_eq(vyre__managed_verify(&v_ops, &f, 0, "fake", &v, NULL), 0);
    cr_assert_eq(v.n, 7);
    cr_assert_eq(v.unusable, 2); /* a and d, once each */
    cr_assert_eq(v.moved, 0);
    for (size_t k = 0; k < v.n; k++)
        cr_assert_eq(v.p[k].quarantined, 0);
    cr_assert(!f.moved[0] && !f.moved[1] && !f.moved[2] && !f.moved[3]);
    /* In entry order, each naming its entry and file. */
    cr_assert_eq(v.p[0].entry, 0);
    cr_assert_str_eq(v.p[0].file, "a.cubin");
    cr_assert_str_eq(v.p[3].kind, "foreign");
    cr_assert_eq(v.p[3].entry, 1);
    cr_assert_eq(v.p[4].entry, 3);
    vyre__managed_verdict_release(&v);
}

Test(cache_managed, verify_repair_moves_each_unusable_entry_once_and_says_so)
{
    vfake f = {{"a", "b", "c", "d"}, {1, 2, 0, 1}, {0, 0, 0, 1}, {0}};
    vyre__managed_verdict v;
    cr_assert_eq(vyre__managed_verify(&v_ops, &f, 1, "fake", &v, NULL), 0);
    /* Two problems make a unusable: one move. A foreign name is never
     * moved; d's move failed and stays reported. */
    cr_assert_eq(f.moved[0], 1);
    cr_assert_eq(f.moved[1], 0);
    cr_assert_eq(f.moved[2], 0);
    cr_assert_eq(f.moved[3], 1);
    cr_assert_eq(v.unusable, 2);
    cr_assert_eq(v.moved, 1);
    cr_assert_eq(v.n_errors, 1);
    cr_assert_eq(v.p[0].quarantined, 1);
    cr_assert_eq(v.p[1].quarantined, 0, "an orphan does not make its entry unusable");
    cr_assert_eq(v.p[2].quarantined, 1);
    cr_assert_eq(v.p[3].quarantined, 0);
    cr_assert_eq(v.p[4].quarantined, -1);
    cr_assert_str_eq(v.errors[v.p[4].error].message, "cannot move 'd'");
    cr_assert_str_eq(v.errors[v.p[6].error].hint, "make room");
    vyre__managed_verdict_release(&v);
}

Test(cache_managed, verify_prefix_names_a_nested_cache)
{
    vyre__managed_verdict v;
    memset(&v, 0, sizeof v);
    v.at = 5;
    v.prefix = "triton/0: ";
    vyre__managed_found(&v, "x", "temp", 0, "'%s' is a temp file", "k/x");
    cr_assert_eq(v.n, 1);
    cr_assert_eq(v.p[0].entry, 5);
    cr_assert_str_eq(v.p[0].message, "triton/0: 'k/x' is a temp file");
    vyre__managed_verdict_release(&v);
}

/* verify --repair keeps prune's guard: an unusable entry touched within
 * the last minute (a writer may be creating it: Triton writes a group's
 * manifest last) is reported, marked young, and not moved; one touched
 * longer ago is moved; a kind with no guard (touched 0) is moved. */
static int64_t g_v_touched[4];
static int64_t v_touched(const void *k, size_t i)
{
    (void)k;
    return g_v_touched[i];
}

Test(cache_managed, verify_repair_leaves_an_entry_changed_less_than_a_minute_ago)
{
    static const vyre__managed_check_ops young_ops = {v_count, v_check, v_quarantine, v_touched};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    g_v_touched[0] = now - 5 * 1000000000LL; /* a: young */
    g_v_touched[1] = now;                    /* b: foreign only, never moved */
    g_v_touched[2] = now;                    /* c: clean */
    g_v_touched[3] = now - 2 * MINUTE;       /* d: old */
    vfake f = {{"a", "b", "c", "d"}, {1, 2, 0, 1}, {0}, {0}};
    vyre__managed_verdict v;
    cr_assert_eq(vyre__managed_verify(&young_ops, &f, 1, "fake", &v, NULL), 0);
    cr_assert_eq(f.moved[0], 0, "a young entry was moved");
    cr_assert_eq(f.moved[3], 1);
    cr_assert_eq(v.unusable, 2);
    cr_assert_eq(v.moved, 1);
    cr_assert_eq(v.young, 1);
    cr_assert_eq(v.n, 7, "a young entry's problems are still reported");
    cr_assert(v.p[0].young && v.p[2].young, "its unusable problems say why it stayed");
    cr_assert(!v.p[1].young, "the orphan does not make it unusable");
    cr_assert_eq(v.p[0].quarantined, 0);
    cr_assert_eq(v.p[4].quarantined, 1);
    cr_assert(!v.p[4].young);
    vyre__managed_verdict_release(&v);
    /* Without repair nothing is young: nothing would have been moved. */
    memset(f.moved, 0, sizeof f.moved);
    cr_assert_eq(vyre__managed_verify(&young_ops, &f, 0, "fake", &v, NULL), 0);
    cr_assert_eq(v.young, 0);
    cr_assert(!f.moved[0] && !f.moved[3]);
    vyre__managed_verdict_release(&v);
    /* Touched 0: no guard (vyre's own blobs, written whole). */
    g_v_touched[0] = 0;
    cr_assert_eq(vyre__managed_verify(&young_ops, &f, 1, "fake", &v, NULL), 0);
    cr_assert_eq(f.moved[0], 1);
    cr_assert_eq(v.young, 0);
    vyre__managed_verdict_release(&v);
    vyre_error e;
    vyre_error_clear(&e);
    vyre__managed_young_error(&e);
    cr_assert_eq(e.code, VYRE_EBUSY);
    cr_assert_str_eq(e.message, "left alone: changed less than a minute ago");
}
