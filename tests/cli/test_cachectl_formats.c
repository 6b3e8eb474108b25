/*
 * test_cachectl_formats.c - every vyre-cachectl listing (ls, triton ls,
 * inductor ls, remote check, and the tables of stats, triton stats and
 * inductor stats) prints every format from its one row model
 * (tools/common/tool_rows): --json a document, --csv a header of field
 * names, --md a markdown table, and --width 80 lines no wider than 80, on
 * the real torch.compile cache (tests/fixtures/torch_block) and on a vyre
 * cache whose names are long; stats compact by default and whole with -v;
 * triton ls's command for each kernel group, its directory quoted.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "servers.h"
#include "testutil.h"
#include "vyre/vyre.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

#define FIXTURE  VYRE_TEST_SOURCE_DIR "/fixtures/torch_block/cache"
#define TRITON   FIXTURE "/triton"
#define INDUCTOR FIXTURE "/inductor"

static char g_tmp[512];
static char g_cache[600];
static char g_env_home[700], g_env_xdg[700], g_env_conf[700], g_remote[300];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_conf, sizeof g_env_conf, "XDG_CONFIG_HOME=%s/config", g_tmp);
    /* A store with a long URL on a port nobody listens on: refused. */
    snprintf(g_remote, sizeof g_remote,
             "VYRE_REMOTE_CACHE=http://127.0.0.1:%d/team-gpu-fleet/pipeline-cache/production/"
             "a-rather-long-prefix-for-the-shared-store/v2|connect-timeout=200",
             ts_free_port());
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_formats, .init = setup, .fini = teardown, .timeout = 120);

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void cc(tu_proc *p, const char *const *args)
{
    const char *argv[TU_ARGS_MAX + 1] = {"--cache-dir", g_cache};
    size_t n = 2;
    for (; args[n - 2] && n < TU_ARGS_MAX; n++)
        argv[n] = args[n - 2];
    argv[n] = NULL;
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_conf,
                               g_remote,
                               "VYRE_PTX_CACHE_DIR",
                               "VYRE_CACHE_MAX_AGE",
                               "TRITON_CACHE_DIR",
                               "TORCHINDUCTOR_CACHE_DIR",
                               "COLUMNS",
                               NULL};
    tu_run_bin(p, VYRE_CACHECTL_BIN, argv, env, NULL);
}

/* A blob whose names are as long as the blob format keeps them. */
static void populate(void)
{
    vyre_cache *c = NULL;
    vyre_error err;
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &err), 0, "open: %s", err.message);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    cr_assert_eq(vyre_key_from_hex("abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
                                   "89",
                                   &h.key),
                 0);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90a");
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.0-with-a-long-toolchain-name");
    memset(h.source, 's', sizeof h.source - 4);
    memcpy(h.source + sizeof h.source - 4, ".cu", 4);
    static const char kernels[] = "flash_attention_forward_kernel_hdim128_causal_bf16\0"
                                  "flash_attention_forward_splitkv_kernel_hdim128_bf16\0"
                                  "flash_attention_forward_combine_kernel_hdim128_bf16";
    h.kernels = kernels;
    h.kernels_size = sizeof kernels;
    h.n_kernels = 3;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h.created_unix_ns = ((int64_t)ts.tv_sec - 3 * 86400) * 1000000000;
    static const unsigned char payload[700];
    cr_assert_eq(vyre_cache_put(c, &h, payload, sizeof payload, &err), 0, "put: %s", err.message);
    vyre_cache_close(c);
}

static size_t longest_line(const char *text)
{
    size_t best = 0;
    for (const char *p = text; *p;) {
        size_t l = strcspn(p, "\n");
        best = l > best ? l : best;
        p += l + (p[l] == '\n');
    }
    return best;
}

/* One listing: its arguments, its exit status, the JSON member its rows
 * are under and the first field of its CSV. */
typedef struct listing {
    const char *args[6];
    int exit_code;
    const char *member, *first_field;
} listing;

/* Copies of the fixtures, aged so that their "3d ago" stays the same
 * between two runs of a listing (a fresh clone's files say "12s ago"
 * and "13s ago" a moment later). */
static char g_triton[600], g_inductor[600];

static const listing k_listings[] = {
    {{"ls"}, 0, "entries", "key,"},
    {{"triton", "ls", "--dir", g_triton}, 0, "groups", "key,"},
    {{"inductor", "ls", "--dir", g_inductor}, 0, "entries", "path,"},
    {{"remote", "check"}, 1, "remotes", "url,"},
    {{"stats"}, 0, "by_kind", "field,value"},
    {{"triton", "stats", "--dir", g_triton}, 0, "by_arch", "field,value"},
    {{"inductor", "stats", "--dir", g_inductor}, 0, "by_kind", "field,value"},
};

static void copy_aged_fixtures(void)
{
    snprintf(g_triton, sizeof g_triton, "%s/triton", g_tmp);
    snprintf(g_inductor, sizeof g_inductor, "%s/inductor", g_tmp);
    tu_copy_tree(TRITON, g_triton);
    tu_copy_tree(INDUCTOR, g_inductor);
    /* Half a day from a change of the unit's count either way. */
    tu_age_tree(g_triton, 3 * 86400 + 43200);
    tu_age_tree(g_inductor, 3 * 86400 + 43200);
    tu_proc p;
    cc(&p, (const char *const[]){"triton", "stats", "--dir", g_triton, NULL});
    cr_assert(strstr(p.out, "\nOldest group:            3d ago\n"), "not aged:\n%s", p.out);
    tu_proc_free(&p);
}

/* args of l, then the format's options (up to 3). */
static void run_listing(tu_proc *p, const listing *l, const char *a, const char *b, const char *c)
{
    const char *argv[12];
    size_t n = 0;
    for (; l->args[n]; n++)
        argv[n] = l->args[n];
    argv[n++] = a;
    argv[n++] = b;
    argv[n++] = c;
    argv[n] = NULL;
    cc(p, argv);
}

Test(cachectl_formats, every_listing_prints_every_format_and_fits_80)
{
    populate();
    copy_aged_fixtures();
    for (size_t i = 0; i < sizeof k_listings / sizeof *k_listings; i++) {
        const listing *l = &k_listings[i];
        const char *name = tu_text("%s %s", l->args[0], l->args[1] ? l->args[1] : "");
        tu_proc p;
        run_listing(&p, l, "--json", NULL, NULL);
        cr_assert_eq(p.exit_code, l->exit_code, "%s --json: %s%s", name, p.out, p.err);
        json_error_t je;
        json_t *j = json_loads(p.out, 0, &je);
        cr_assert(j, "%s --json: not JSON (%s):\n%s", name, je.text, p.out);
        cr_assert(json_is_integer(json_object_get(j, "schema_version")), "%s", p.out);
        cr_assert(json_array_size(json_object_get(j, l->member)) > 0, "%s: %s", name, p.out);
        json_decref(j);
        tu_proc_free(&p);

        run_listing(&p, l, "--csv", NULL, NULL);
        cr_assert_eq(p.exit_code, l->exit_code, "%s --csv: %s", name, p.err);
        cr_assert(strncmp(p.out, l->first_field, strlen(l->first_field)) == 0, "%s --csv:\n%s",
                  name, p.out);
        cr_assert(tu_count_lines(p.out) >= 2, "%s --csv:\n%s", name, p.out);
        tu_proc_free(&p);

        run_listing(&p, l, "--md", NULL, NULL);
        cr_assert_eq(p.exit_code, l->exit_code, "%s --md: %s", name, p.err);
        cr_assert(strncmp(p.out, "| ", 2) == 0 && strstr(p.out, "\n|--"), "%s --md:\n%s", name,
                  p.out);
        tu_proc_free(&p);

        /* The table, markdown, and -v's columns: fitted to 80. */
        static const char *const more[] = {NULL, "--md", "-v"};
        for (size_t f = 0; f < 3; f++) {
            run_listing(&p, l, "--width", "80", more[f]);
            cr_assert_eq(p.exit_code, l->exit_code, "%s --width 80: %s", name, p.err);
            cr_assert_leq(longest_line(p.out), 80, "%s --width 80 %s: a line over 80:\n%s", name,
                          more[f] ? more[f] : "", p.out);
            /* -w is --width, as in every tool (issue 36). */
            tu_proc w;
            run_listing(&w, l, "-w", "80", more[f]);
            cr_assert_eq(w.exit_code, l->exit_code, "%s -w 80: %s", name, w.err);
            if (strcmp(l->args[0], "remote") != 0) /* remote check's latency column varies */
                cr_assert_str_eq(w.out, p.out, "%s: -w 80 is not --width 80", name);
            tu_proc_free(&w);
            tu_proc_free(&p);
        }
        /* Two formats at once: one usage error. */
        run_listing(&p, l, "--csv", "--md", NULL);
        cr_assert_eq(p.exit_code, 2, "%s --csv --md: %s", name, p.out);
        cr_assert(strstr(p.err, "--csv and --md cannot be combined"), "%s", p.err);
        tu_proc_free(&p);
    }
}

Test(cachectl_formats, wide_lines_without_width_are_wider_than_80)
{
    /* So that the test above can fail: the same listings, not fitted. */
    populate();
    tu_proc p;
    cc(&p, ARGS("ls", "--wide", "-v"));
    cr_assert_gt(longest_line(p.out), 80, "%s", p.out);
    tu_proc_free(&p);
    cc(&p, ARGS("triton", "ls", "--dir", TRITON));
    cr_assert_gt(longest_line(p.out), 80, "%s", p.out);
    tu_proc_free(&p);
    cc(&p, ARGS("inductor", "ls", "--dir", INDUCTOR));
    cr_assert_gt(longest_line(p.out), 80, "%s", p.out);
    tu_proc_free(&p);
}

/* ---- stats: compact, -v ------------------------------------------------------ */

Test(cachectl_formats, stats_compact_by_default_and_whole_with_v)
{
    populate();
    tu_proc p, v;
    cc(&p, ARGS("stats"));
    cc(&v, ARGS("stats", "-v"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_eq(v.exit_code, 0, "%s", v.err);
    /* One blob, never hit: no zero counts, no empty kinds, no limits. */
    static const char *const gone[] = {
        "Hits:", "Misses:", "Quarantined:", "Stale:", "Limits:", "\nptx ", "\nfatbin ", "\n<1h "};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++) {
        cr_assert(!strstr(p.out, gone[i]), "'%s' in compact stats:\n%s", gone[i], p.out);
        cr_assert(strstr(v.out, gone[i]), "'%s' not in stats -v:\n%s", gone[i], v.out);
    }
    static const char *const kept[] = {"Entries:               1", "\ncubin ", "\nsm_90a "};
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        cr_assert(strstr(p.out, kept[i]) && strstr(v.out, kept[i]), "'%s':\n%s\n%s", kept[i], p.out,
                  v.out);
    /* 7 zero counts, 5 lines of limits and 6 empty buckets fewer. */
    cr_assert_eq(tu_count_lines(p.out) + 18, tu_count_lines(v.out), "%s\n%s", p.out, v.out);
    tu_proc_free(&p);
    tu_proc_free(&v);

    /* A read-only cache says so, compact or not. */
    cc(&p, ARGS("-o", "read_only=true", "stats"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Read-only:             yes (read_only)");
    tu_proc_free(&p);

    /* The foreign kinds the same way. */
    cc(&p, ARGS("inductor", "stats", "--dir", INDUCTOR));
    cc(&v, ARGS("inductor", "stats", "--dir", INDUCTOR, "-v"));
    cr_assert(strstr(p.out, "\nkernel ") && strstr(v.out, "\nkernel "), "%s", p.out);
    cr_assert(!strstr(p.out, "\nfxgraph ") && strstr(v.out, "\nfxgraph "), "%s\n%s", p.out, v.out);
    tu_proc_free(&p);
    tu_proc_free(&v);
    cc(&p, ARGS("triton", "stats", "--dir", TRITON));
    cc(&v, ARGS("triton", "stats", "--dir", TRITON, "-v"));
    cr_assert(!strstr(p.out, "Launcher groups:") && strstr(v.out, "Launcher groups:         0"),
              "%s\n%s", p.out, v.out);
    tu_proc_free(&p);
    tu_proc_free(&v);

    /* JSON keeps every row either way. */
    cc(&p, ARGS("inductor", "stats", "--dir", INDUCTOR, "--json"));
    json_t *j = json_loads(p.out, 0, NULL);
    cr_assert(j, "%s", p.out);
    cr_assert_eq(json_array_size(json_object_get(j, "by_kind")), VYRE_INDUCTOR_KINDS);
    json_decref(j);
    tu_proc_free(&p);
}

/* ---- triton ls: the command that benchmarks each group ------------------------ */

Test(cachectl_formats, triton_ls_gives_each_kernel_group_its_bench_command)
{
    char dir[800];
    snprintf(dir, sizeof dir, "%s/it's a cache", g_tmp);
    tu_copy_tree(TRITON, dir);
    tu_proc p;
    cc(&p, ARGS("triton", "ls", "--dir", dir, "--json"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_loads(p.out, 0, NULL);
    cr_assert(j, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(j, "schema_version")), 3);
    json_t *groups = json_object_get(j, "groups");
    cr_assert_eq(json_array_size(groups), 11, "%s", p.out);
    for (size_t i = 0; i < json_array_size(groups); i++) {
        json_t *g = json_array_get(groups, i);
        const char *key = json_string_value(json_object_get(g, "key"));
        /* Quoted for a shell: the space and the quote survive. */
        cr_assert_str_eq(
            json_string_value(json_object_get(g, "command")),
            tu_text("vyre-bench run --triton %s --dir '%s/it'\\''s a cache'", key, g_tmp));
    }
    json_decref(j);
    tu_proc_free(&p);
}
