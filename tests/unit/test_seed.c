/*
 * test_seed.c - libcore's seeding, called directly: which files a walk
 * takes (Triton's cubin beside its PTX passed over, no symbolic link
 * followed below the named directory, a named link walked where it points,
 * the depth bound) and the threaded run handing files back in list order.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "vyre/compile.h"

static char g_tmp[512];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(seed, .init = setup, .fini = teardown, .timeout = 120);

/* g_tmp/rel, into a static buffer of the caller's. */
static const char *at(char *buf, size_t size, const char *rel)
{
    snprintf(buf, size, "%s/%s", g_tmp, rel);
    return buf;
}

static void mkdir_at(const char *rel)
{
    char p[1024];
    cr_assert_eq(mkdir(at(p, sizeof p, rel), 0700), 0, "mkdir %s", p);
}

/* What the cubin path checks: the ELF magic (seeding stores it as is). */
static void write_cubin(const char *rel, char tag)
{
    char p[1024], cubin[] = "\x7f"
                            "ELF\x02\x01\x01\x00 a stand-in cubin ?";
    cubin[sizeof cubin - 2] = tag;
    tu_write_file(at(p, sizeof p, rel), cubin, sizeof cubin - 1);
}

static void write_text(const char *rel, const char *text)
{
    char p[1024];
    tu_write_file(at(p, sizeof p, rel), text, strlen(text));
}

/* Asserts that l holds exactly the paths g_tmp/want[i], in order. */
static void assert_list(const vyre_seed_list *l, const char *const *want, size_t n)
{
    for (size_t i = 0; i < l->n; i++)
        cr_log_info("list[%zu] = %s", i, l->paths[i]);
    cr_assert_eq(l->n, n, "%zu files listed, want %zu", l->n, n);
    for (size_t i = 0; i < n; i++) {
        char p[1024];
        cr_assert_str_eq(l->paths[i], at(p, sizeof p, want[i]));
    }
}

Test(seed, a_cubin_beside_its_ptx_is_not_a_module_of_its_own)
{
    /* Triton's layout: one folder per key with the module's PTX and the
     * cubin Triton built from it. Only the PTX is a module; a cubin with
     * no PTX of its stem, and CUDA C, are modules; other files are not. */
    mkdir_at("cache");
    mkdir_at("cache/KEY1");
    mkdir_at("cache/KEY2");
    write_text("cache/KEY1/add_kernel.ptx", ".version 8.0\n.target sm_90a\n");
    write_cubin("cache/KEY1/add_kernel.cubin", '1');
    write_text("cache/KEY1/add_kernel.json", "{}");
    write_text("cache/KEY1/add_kernel.ttir", "");
    write_cubin("cache/KEY2/lone.cubin", '2');
    write_text("cache/KEY2/scale.cu", "__global__ void scale() {}\n");
    write_text("cache/KEY2/lone.ptx.bak", "");

    vyre_seed_list l = VYRE_SEED_LIST_INIT;
    vyre_error e;
    vyre_error_clear(&e);
    char dir[1024];
    int is_dir = 0;
    cr_assert_eq(vyre_seed_list_add(&l, at(dir, sizeof dir, "cache"), &is_dir, &e), 0, "%s",
                 e.message);
    cr_assert_eq(is_dir, 1);
    const char *want[] = {"cache/KEY1/add_kernel.ptx", "cache/KEY2/lone.cubin",
                          "cache/KEY2/scale.cu"};
    assert_list(&l, want, 3);
    cr_assert_eq(l.skipped, 1, "skipped %llu", (unsigned long long)l.skipped);

    /* Named as a file, the same cubin is what the user asked for. */
    char f[1024];
    cr_assert_eq(
        vyre_seed_list_add(&l, at(f, sizeof f, "cache/KEY1/add_kernel.cubin"), &is_dir, &e), 0);
    cr_assert_eq(is_dir, 0);
    cr_assert_eq(l.n, 4);
    cr_assert_str_eq(l.paths[3], f);
    cr_assert_eq(l.skipped, 1);
    vyre_seed_list_release(&l);
    cr_assert_eq(l.n, 0);
    cr_assert_null(l.paths);
}

Test(seed, the_walk_follows_no_symbolic_link_below_the_named_directory)
{
    mkdir_at("outside");
    write_text("outside/evil.ptx", ".target sm_90\n");
    write_text("outside/evil.cu", "");
    mkdir_at("tree");
    mkdir_at("tree/sub");
    write_text("tree/sub/good.ptx", ".target sm_90\n");
    char p[1024], q[1024];
    /* A link to a directory outside, one to a directory inside, and one
     * to a file with a seedable name: none is followed. */
    cr_assert_eq(symlink(at(q, sizeof q, "outside"), at(p, sizeof p, "tree/link")), 0);
    cr_assert_eq(symlink("sub", at(p, sizeof p, "tree/again")), 0);
    cr_assert_eq(symlink("../outside/evil.ptx", at(p, sizeof p, "tree/c.ptx")), 0);

    vyre_seed_list l = VYRE_SEED_LIST_INIT;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_seed_list_add(&l, at(p, sizeof p, "tree"), NULL, &e), 0, "%s", e.message);
    const char *want[] = {"tree/sub/good.ptx"};
    assert_list(&l, want, 1);
    vyre_seed_list_release(&l);
}

Test(seed, a_named_link_is_walked_where_it_points_under_its_own_name)
{
    /* ~/.triton/cache is often a link; "link/" names the link too. */
    mkdir_at("real");
    write_text("real/k.ptx", ".target sm_90\n");
    char p[1024], q[1024];
    cr_assert_eq(symlink(at(q, sizeof q, "real"), at(p, sizeof p, "link")), 0);
    vyre_seed_list l = VYRE_SEED_LIST_INIT;
    vyre_error e;
    vyre_error_clear(&e);
    snprintf(q, sizeof q, "%s/link//", g_tmp);
    int is_dir = 0;
    cr_assert_eq(vyre_seed_list_add(&l, q, &is_dir, &e), 0, "%s", e.message);
    cr_assert_eq(is_dir, 1);
    const char *want[] = {"link/k.ptx"};
    assert_list(&l, want, 1);
    vyre_seed_list_release(&l);
}

/* g_tmp/deep/d/d/.../d with `levels` levels of d below deep, and a PTX
 * file at the bottom. */
static void make_deep(int levels)
{
    char rel[1024] = "deep";
    mkdir_at(rel);
    for (int i = 0; i < levels; i++) {
        size_t n = strlen(rel);
        snprintf(rel + n, sizeof rel - n, "/d");
        mkdir_at(rel);
    }
    size_t n = strlen(rel);
    snprintf(rel + n, sizeof rel - n, "/k.ptx");
    write_text(rel, ".target sm_90\n");
}

Test(seed, the_walk_is_bounded_in_depth)
{
    char p[1024];
    vyre_seed_list l = VYRE_SEED_LIST_INIT;
    vyre_error e;
    vyre_error_clear(&e);
    make_deep(VYRE_SEED_MAX_DEPTH);
    cr_assert_eq(vyre_seed_list_add(&l, at(p, sizeof p, "deep"), NULL, &e), 0, "%s", e.message);
    cr_assert_eq(l.n, 1);

    /* One level more: an error naming the directory, nothing added. */
    tu_rm_rf(at(p, sizeof p, "deep"));
    make_deep(VYRE_SEED_MAX_DEPTH + 1);
    int rc = vyre_seed_list_add(&l, at(p, sizeof p, "deep"), NULL, &e);
    cr_assert_eq(rc, VYRE_ETOOBIG, "%s", vyre_err_name(rc));
    char want[1200];
    snprintf(want, sizeof want, "cannot walk '%s': more than %d levels of directories under it", p,
             VYRE_SEED_MAX_DEPTH);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "name a directory nearer its files");
    cr_assert_eq(l.n, 1, "the list keeps what it had");
    vyre_seed_list_release(&l);
}

/* ---- the run ---------------------------------------------------------------- */

typedef struct seen {
    size_t n, progress;
    size_t index[8];
    vyre_seed_status status[8][2];
    size_t n_outcomes[8];
    char arch0[8][16];
    char error0[8][VYRE_ERROR_MESSAGE_MAX];
    char hint0[8][VYRE_ERROR_HINT_MAX];
} seen;

static void on_file(void *ctx, const vyre_seed_file *f)
{
    seen *s = ctx;
    cr_assert_lt(s->n, 8);
    size_t k = s->n++;
    s->index[k] = f->index;
    s->n_outcomes[k] = f->n_outcomes;
    for (size_t i = 0; i < f->n_outcomes && i < 2; i++)
        s->status[k][i] = f->outcomes[i].status;
    if (f->n_outcomes) {
        snprintf(s->arch0[k], sizeof s->arch0[k], "%s",
                 f->outcomes[0].arch ? f->outcomes[0].arch : "(none)");
        snprintf(s->error0[k], sizeof s->error0[k], "%s", f->outcomes[0].error.message);
        snprintf(s->hint0[k], sizeof s->hint0[k], "%s", f->outcomes[0].error.hint);
        if (f->outcomes[0].status != VYRE_SEED_FAILED)
            cr_assert_not_null(f->outcomes[0].blob);
    }
}

static void on_progress(void *ctx, size_t done, size_t total)
{
    seen *s = ctx;
    cr_assert_leq(done, total);
    s->progress = done;
}

static vyre_cache *open_cache(void)
{
    char root[1024];
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(at(root, sizeof root, "cache"), NULL, &c, &e);
    cr_assert_eq(rc, 0, "open '%s': %s", root, e.message);
    return c;
}

Test(seed, a_run_hands_files_back_in_list_order_and_counts_them)
{
    mkdir_at("in");
    for (int i = 0; i < 5; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "in/m%d.cubin", i);
        write_cubin(rel, (char)('a' + i));
    }
    vyre_seed_list l = VYRE_SEED_LIST_INIT;
    vyre_error e;
    vyre_error_clear(&e);
    char p[1024];
    cr_assert_eq(vyre_seed_list_add(&l, at(p, sizeof p, "in"), NULL, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_seed_list_add(&l, at(p, sizeof p, "in/missing.cubin"), NULL, &e), 0);
    cr_assert_eq(l.n, 6);

    vyre_cache *c = open_cache();
    const char *archs[] = {"sm_80", "sm_90"};
    seen s;
    memset(&s, 0, sizeof s);
    vyre_seed_opts o;
    memset(&o, 0, sizeof o);
    o.archs = archs;
    o.n_archs = 2;
    o.jobs = 4;
    o.on_file = on_file;
    o.on_progress = on_progress;
    o.ctx = &s;
    vyre_seed_totals t;
    cr_assert_eq(vyre_seed_run(c, &l, &o, &t, &e), 0, "%s", e.message);
    cr_assert_eq(t.jobs, 4);
    cr_assert_eq(s.n, 6);
    cr_assert_eq(s.progress, 6);
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(s.index[i], i, "file %zu handed back as %zu", i, s.index[i]);
        cr_assert_eq(s.n_outcomes[i], 2);
        cr_assert_eq(s.status[i][0], VYRE_SEED_SEEDED);
        cr_assert_eq(s.status[i][1], VYRE_SEED_SEEDED);
        cr_assert_str_eq(s.arch0[i], "sm_80");
    }
    /* The missing file fails once, before any architecture. */
    cr_assert_eq(s.index[5], 5);
    cr_assert_eq(s.n_outcomes[5], 1);
    cr_assert_eq(s.status[5][0], VYRE_SEED_FAILED);
    cr_assert_str_eq(s.arch0[5], "(none)");
    cr_assert(strstr(s.error0[5], "missing.cubin"), "%s", s.error0[5]);
    cr_assert_str_eq(s.hint0[5], "check the file name");
    cr_assert_eq(t.seeded, 10);
    cr_assert_eq(t.present, 0);
    cr_assert_eq(t.fetched, 0);
    cr_assert_eq(t.failed, 1);

    /* Again: every blob is there. */
    memset(&s, 0, sizeof s);
    cr_assert_eq(vyre_seed_run(c, &l, &o, &t, &e), 0, "%s", e.message);
    cr_assert_eq(t.seeded, 0);
    cr_assert_eq(t.present, 10);
    cr_assert_eq(s.status[3][1], VYRE_SEED_PRESENT);

    /* Without architectures a cubin names none: it fails, saying so. */
    memset(&s, 0, sizeof s);
    memset(&o, 0, sizeof o);
    o.on_file = on_file;
    o.ctx = &s;
    cr_assert_eq(vyre_seed_run(c, &l, &o, &t, &e), 0, "%s", e.message);
    cr_assert_eq(t.failed, 6);
    cr_assert_str_eq(s.error0[0], "a cubin names no target architecture: seeding it needs --arch");

    /* A bad architecture is the caller's error, before anything is done. */
    const char *bad[] = {"sm_9"};
    o.archs = bad;
    o.n_archs = 1;
    memset(&s, 0, sizeof s);
    cr_assert_eq(vyre_seed_run(c, &l, &o, &t, &e), VYRE_EINVAL);
    cr_assert_str_eq(e.message, "'sm_9' is not an architecture");
    cr_assert_eq(s.n, 0);
    vyre_cache_close(c);
    vyre_seed_list_release(&l);
}
