/*
 * test_cachectl_explain.c - "why did this miss?": `vyre-cachectl explain`
 * on a pipeline cache seeded with one PTX module for sm_90 and sm_90a
 * (through the fake nvJitLink, tests/fakes/fakejitlink.c: CI has no
 * toolkit libraries), and `vyre-cachectl triton explain` on a copy of the
 * real Triton cache fixture with a second group made from the first for
 * another architecture and warp count. Exact lines, JSON fields, exit codes.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda/compile_internal.h"
#include "testutil.h"
#include "vyre/compile.h"
#include "vyre/vyre.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

#define KGROUP  "PGIBWRPZ4BMLHZDHVLBI7YULCKTFFXOZWUDBQ2MQNOO22K3NXW4A"
#define KGROUP2 "ZZ2BWRPZ4BMLHZDHVLBI7YULCKTFFXOZWUDBQ2MQNOO22K3NXW4A"

static char g_tmp[512];
static char g_cache[600];
static char g_ptx[600];
static char g_env_home[700];
static char g_env_xdg[700];
static char g_env_conf[700];

static const char k_ptx[] = TU_PTX_SCALE;

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    snprintf(g_ptx, sizeof g_ptx, "%s/scale.ptx", g_tmp);
    tu_write_file(g_ptx, k_ptx, strlen(k_ptx));
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_conf, sizeof g_env_conf, "XDG_CONFIG_HOME=%s/config", g_tmp);
    /* Keys computed here must be the child's: the same fake nvJitLink. */
    setenv("VYRE_NVJITLINK_LIBRARY", FAKEJITLINK_LIB, 1);
    setenv("XDG_CONFIG_HOME", g_env_conf + strlen("XDG_CONFIG_HOME="), 1);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_explain, .init = setup, .fini = teardown, .timeout = 120);

static void run(tu_proc *p, const char *const *args)
{
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_conf,
                               "VYRE_NVJITLINK_LIBRARY=" FAKEJITLINK_LIB,
                               "VYRE_PTX_CACHE_DIR",
                               "VYRE_REMOTE_CACHE",
                               "TRITON_CACHE_DIR",
                               "TRITON_HOME",
                               NULL};
    tu_run_bin(p, VYRE_CACHECTL_BIN, args, env, NULL);
}

#define ARGS(...)  ((const char *const[]){__VA_ARGS__, NULL})
#define CC(p, ...) run((p), ARGS("--cache-dir", g_cache, __VA_ARGS__))

static json_t *json_of(const tu_proc *p)
{
    json_error_t je;
    json_t *j = json_loads(p->out, 0, &je);
    cr_assert(j, "not JSON (%s):\n%s", je.text, p->out);
    cr_assert_eq(json_integer_value(json_object_get(j, "schema_version")), 1);
    return j;
}

/* The key the run-time path computes for k_ptx on arch. */
static void ptx_key(const char *arch, const char *const *opts, size_t nopts,
                    char hex[VYRE_KEY_HEX_LEN + 1])
{
    vyre_compile_request req = {VYRE_SOURCE_PTX, k_ptx, strlen(k_ptx), arch, NULL, opts, nopts};
    vyre_key k;
    vyre_error err;
    cr_assert_eq(vyre_compile_key(&req, &k, &err), 0, "%s", err.message);
    vyre_key_to_hex(&k, hex);
}

static void seed(const char *archs)
{
    tu_proc p;
    CC(&p, "seed", g_ptx, "--arch", archs);
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
}

/* The "Key:" line of key hex. */
static void assert_key_line(const char *text, const char *hex)
{
    char want[1024];
    snprintf(want, sizeof want, "Key:            %s", hex);
    tu_assert_line(text, want);
}

/* ---- explain: the pipeline cache ------------------------------------------ */

Test(cachectl_explain, sm_90a_lists_the_sm_90_entry_with_only_the_architecture_differing)
{
    seed("sm_90,sm_90a");
    char k90[VYRE_KEY_HEX_LEN + 1], k90a[VYRE_KEY_HEX_LEN + 1];
    ptx_key("sm_90", NULL, 0, k90);
    ptx_key("sm_90a", NULL, 0, k90a);

    tu_proc p;
    CC(&p, "explain", g_ptx, "--arch", "sm_90a");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert_str_empty(p.err);
    char want[1024];
    snprintf(want, sizeof want, "Source:         %s (ptx, %zu bytes)", g_ptx, strlen(k_ptx));
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Key inputs, in the order they are hashed:");
    tu_assert_line(p.out, "  key_version    2");
    tu_assert_line(p.out, "  backend        cuda");
    tu_assert_line(p.out, "  toolchain      nvjitlink-13.0");
    tu_assert_line(p.out, "  arch           sm_90a");
    tu_assert_line(p.out, "  features       0x0");
    tu_assert_line(p.out, "  options        (none)");
    tu_assert_line(p.out, "  entry          (none)");
    tu_assert_line(p.out, "  source_kind    ptx");
    assert_key_line(p.out, k90a);
    tu_assert_line(p.out, "In the cache:   yes (a lookup hits)");
    tu_assert_line(p.out, "Entries of the same source or kernel: 1");
    snprintf(want, sizeof want, "  %.12s  scale.ptx  [scale]  1 input differs:", k90);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "      arch           sm_90  (this key: sm_90a)");
    tu_proc_free(&p);

    CC(&p, "explain", g_ptx, "--arch", "sm_90a", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    cr_assert_str_eq(json_string_value(json_object_get(j, "key")), k90a);
    cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "present");
    json_t *in = json_object_get(j, "inputs");
    cr_assert_str_eq(json_string_value(json_object_get(in, "arch")), "sm_90a");
    cr_assert_eq(json_array_size(json_object_get(in, "options")), 0);
    json_t *es = json_object_get(j, "entries");
    cr_assert_eq(json_array_size(es), 1);
    json_t *e = json_array_get(es, 0);
    cr_assert_str_eq(json_string_value(json_object_get(e, "key")), k90);
    cr_assert_eq(json_is_true(json_object_get(e, "inputs_recorded")), 1);
    json_t *d = json_object_get(e, "differs");
    cr_assert_eq(json_array_size(d), 1, "%s", p.out);
    cr_assert_str_eq(json_string_value(json_array_get(d, 0)), "arch");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "inputs"), "arch")),
                     "sm_90");
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(e, "inputs"), "source_sha256")),
        json_string_value(json_object_get(in, "source_sha256")));
    json_decref(j);
    tu_proc_free(&p);
}

Test(cachectl_explain, a_miss_names_what_differs_options_included)
{
    seed("sm_90");
    char k90[VYRE_KEY_HEX_LEN + 1], ko[VYRE_KEY_HEX_LEN + 1];
    ptx_key("sm_90", NULL, 0, k90);
    const char *opts[] = {"-O3", "-lineinfo"};
    ptx_key("sm_90", opts, 2, ko);

    /* Options after "--", as seed takes them: the one input that differs. */
    tu_proc p;
    CC(&p, "explain", g_ptx, "--arch", "sm_90", "--", "-O3", "-lineinfo");
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    assert_key_line(p.out, ko);
    tu_assert_line(p.out, "  options        '-O3' '-lineinfo'");
    tu_assert_line(p.out, "In the cache:   no (a lookup misses and compiles)");
    char want[256];
    snprintf(want, sizeof want, "  %.12s  scale.ptx  [scale]  1 input differs:", k90);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "      options        (none)  (this key: '-O3' '-lineinfo')");
    tu_proc_free(&p);

    /* No --arch: the PTX's own .target (sm_80), as seed takes it; the
     * sm_90 entry then differs in the architecture alone. */
    CC(&p, "explain", g_ptx);
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "  arch           sm_80");
    tu_assert_line(p.out, "      arch           sm_90  (this key: sm_80)");
    tu_proc_free(&p);

    /* Found by kernel alone: another file name, other bytes. */
    char other[700];
    snprintf(other, sizeof other, "%s/edited.ptx", g_tmp);
    char src[sizeof k_ptx + 32];
    snprintf(src, sizeof src, "%s// edited\n", k_ptx);
    tu_write_file(other, src, strlen(src));
    CC(&p, "explain", other, "--arch", "sm_90", "--entry", "scale");
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "Entries of the same source or kernel: 1");
    snprintf(want, sizeof want, "  %.12s  scale.ptx  [scale]  1 input differs:", k90);
    tu_assert_line(p.out, want);
    cr_assert(strstr(p.out, "      source_sha256  "), "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "explain", other, "--arch", "sm_90");
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "Entries of the same source or kernel: none");
    tu_proc_free(&p);
}

Test(cachectl_explain, entries_stored_before_inputs_were_recorded)
{
    seed("sm_90");
    char path[700];
    snprintf(path, sizeof path, "%s/index.sqlite3", g_cache);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "UPDATE blobs SET inputs = 0", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    char k90[VYRE_KEY_HEX_LEN + 1];
    ptx_key("sm_90", NULL, 0, k90);
    tu_proc p;
    CC(&p, "explain", g_ptx, "--arch", "sm_90a");
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    char want[256];
    snprintf(want, sizeof want,
             "  %.12s  scale.ptx  [scale]  inputs not recorded; of key_version, toolchain and "
             "arch, 1 differs:",
             k90);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "      arch           sm_90  (this key: sm_90a)");
    tu_proc_free(&p);
    CC(&p, "explain", g_ptx, "--arch", "sm_90a", "--json");
    json_t *j = json_of(&p);
    json_t *e = json_array_get(json_object_get(j, "entries"), 0);
    cr_assert_eq(json_is_false(json_object_get(e, "inputs_recorded")), 1);
    cr_assert(json_is_null(json_object_get(json_object_get(e, "inputs"), "options")));
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "differs"), 0)), "arch");
    json_decref(j);
    tu_proc_free(&p);
}

Test(cachectl_explain, bad_input_is_one_message_with_a_hint)
{
    tu_proc p;
    CC(&p, "explain");
    cr_assert_eq(p.exit_code, 2);
    tu_assert_line(p.err, "vyre-cachectl: error: explain needs a source file");
    tu_proc_free(&p);
    CC(&p, "explain", g_ptx, "--arch", "compute_90");
    cr_assert_eq(p.exit_code, 2);
    tu_assert_line(p.err, "vyre-cachectl: error: 'compute_90' is not an architecture");
    tu_assert_line(p.err, "hint: write an architecture such as sm_90 or sm_90a");
    tu_proc_free(&p);
    char missing[700];
    snprintf(missing, sizeof missing, "%s/nope.ptx", g_tmp);
    CC(&p, "explain", missing);
    cr_assert_eq(p.exit_code, 2);
    char want[900];
    snprintf(want, sizeof want, "vyre-cachectl: error: cannot read '%s': No such file or directory",
             missing);
    tu_assert_line(p.err, want);
    tu_proc_free(&p);
    char cu[700];
    snprintf(cu, sizeof cu, "%s/k.cu", g_tmp);
    tu_write_file(cu, "__global__ void k() {}\n", 23);
    CC(&p, "explain", cu);
    cr_assert_eq(p.exit_code, 2);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: '%s' is CUDA C, which names no target architecture", cu);
    tu_assert_line(p.err, want);
    tu_assert_line(p.err, "hint: give the architecture it is compiled for: --arch sm_90");
    tu_proc_free(&p);
    CC(&p, "explain", g_ptx, g_ptx);
    cr_assert_eq(p.exit_code, 2);
    snprintf(want, sizeof want, "vyre-cachectl: error: unexpected argument '%s'", g_ptx);
    tu_assert_line(p.err, want);
    tu_proc_free(&p);

    /* A cache that does not exist yet: nothing is in it, nothing is made. */
    CC(&p, "explain", g_ptx, "--arch", "sm_90");
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "In the cache:   no (a lookup misses and compiles)");
    tu_assert_line(p.out, "Entries of the same source or kernel: none");
    struct stat st;
    cr_assert_neq(stat(g_cache, &st), 0);
    tu_proc_free(&p);
}

/* ---- triton explain ----------------------------------------------------------- */

/* Replaces the first `from` by `to` in file path. */
static void edit(const char *path, const char *from, const char *to)
{
    size_t len;
    char *s = tu_read_file(path, &len);
    cr_assert(s, "%s", path);
    char *at = strstr(s, from);
    cr_assert(at, "'%s' not in %s", from, path);
    size_t n = len - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    snprintf(out, n + 1, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    tu_write_file(path, out, n);
    free(out);
    free(s);
}

/* <tmp>/triton: the fixture, plus KGROUP2 made from KGROUP as Triton
 * makes it for sm_80 with 8 warps (another hash, the same source). */
static void triton_cache(char *dir, size_t size)
{
    snprintf(dir, size, "%s/triton", g_tmp);
    char src[700], g1[1200], g2[1200], meta[1300];
    snprintf(src, sizeof src, "%s/fixtures/triton/cache", VYRE_TEST_SOURCE_DIR);
    tu_copy_tree(src, dir);
    snprintf(g1, sizeof g1, "%s/%s", dir, KGROUP);
    snprintf(g2, sizeof g2, "%s/%s", dir, KGROUP2);
    tu_copy_tree(g1, g2);
    snprintf(meta, sizeof meta, "%s/scale_kernel.json", g2);
    edit(meta, "\"arch\": 90", "\"arch\": 80");
    edit(meta, "\"num_warps\": 4", "\"num_warps\": 8");
    edit(meta, "\"hash\": \"79901b45", "\"hash\": \"12345678");
}

Test(cachectl_explain, triton_explain_names_the_fields_that_differ)
{
    char dir[700];
    triton_cache(dir, sizeof dir);
    tu_proc p;
    /* By default each differing field's distinct values, with the groups
     * that have each; no key. */
    run(&p, ARGS("triton", "explain", "scale_kernel", "--dir", dir));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert_str_empty(p.err);
    char want[1024];
    snprintf(want, sizeof want, "Triton kernel 'scale_kernel': 2 groups in %s", dir);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Differs between them (3 fields; each value with the groups that have "
                          "it):");
    tu_assert_line(p.out, "  target.arch       80 (1 group), 90 (1 group)");
    tu_assert_line(p.out, "  num_warps         4 (1 group), 8 (1 group)");
    tu_assert_line(
        p.out, "  hash              12345678f9e058b3... (1 group), 79901b45f9e058b3... (1 group)");
    tu_assert_line(p.out, "Same in every group:");
    tu_assert_line(p.out, "  num_stages        3");
    tu_assert_line(p.out, "'--all' lists the 2 groups and each one's values.");
    cr_assert_null(strstr(p.out, KGROUP), "%s", p.out);
    tu_proc_free(&p);

    /* --all: every group's key, the values side by side. */
    run(&p, ARGS("triton", "explain", "scale_kernel", "--all", "--dir", dir));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert_str_empty(p.err);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "  " KGROUP);
    tu_assert_line(p.out, "  " KGROUP2);
    tu_assert_line(p.out, "Differs between them (3 fields):");
    tu_assert_line(p.out, "  target.arch       90  |  80");
    tu_assert_line(p.out, "  num_warps         4  |  8");
    tu_assert_line(p.out, "  hash              79901b45f9e058b3...  |  12345678f9e058b3...");
    tu_assert_line(p.out, "Same in every group:");
    tu_assert_line(p.out, "  target.backend    cuda");
    tu_assert_line(p.out, "  target.warp_size  32");
    tu_assert_line(p.out, "  num_stages        3");
    tu_assert_line(p.out, "  shared            0");
    tu_assert_line(p.out, "  triton_version    3.6.0");
    cr_assert(strstr(p.out, "\n  source_sha256     "), "%s", p.out);
    tu_proc_free(&p);

    run(&p, ARGS("triton", "explain", "scale_kernel", "--dir", dir, "--json"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    cr_assert_str_eq(json_string_value(json_object_get(j, "kernel")), "scale_kernel");
    json_t *gs = json_object_get(j, "groups");
    cr_assert_eq(json_array_size(gs), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(gs, 0), "key")), KGROUP);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(gs, 1), "key")), KGROUP2);
    json_t *f1 = json_object_get(json_array_get(gs, 1), "fields");
    cr_assert_str_eq(json_string_value(json_object_get(f1, "target.arch")), "80");
    cr_assert_str_eq(json_string_value(json_object_get(f1, "num_warps")), "8");
    json_t *d = json_object_get(j, "differs");
    cr_assert_eq(json_array_size(d), 3, "%s", p.out);
    cr_assert_str_eq(json_string_value(json_array_get(d, 0)), "target.arch");
    cr_assert_str_eq(json_string_value(json_array_get(d, 1)), "num_warps");
    cr_assert_str_eq(json_string_value(json_array_get(d, 2)), "hash");
    json_decref(j);
    tu_proc_free(&p);

    /* One group: nothing differs. */
    char g2[1200];
    snprintf(g2, sizeof g2, "%s/%s", dir, KGROUP2);
    tu_rm_rf(g2);
    run(&p, ARGS("triton", "explain", "scale_kernel", "--dir", dir));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    snprintf(want, sizeof want, "Triton kernel 'scale_kernel': 1 group in %s", dir);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Differs between them: nothing (one group)");
    tu_proc_free(&p);
}

Test(cachectl_explain, triton_explain_of_an_unknown_kernel_names_the_nearest)
{
    char dir[700];
    triton_cache(dir, sizeof dir);
    tu_proc p;
    run(&p, ARGS("triton", "explain", "scale_kernl", "--dir", dir));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    char want[1024];
    snprintf(want, sizeof want, "No Triton kernel 'scale_kernl' in %s", dir);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Nearest kernel names there: scale_kernel");
    tu_proc_free(&p);
    run(&p, ARGS("triton", "explain", "scale_kernl", "--dir", dir, "--json"));
    cr_assert_eq(p.exit_code, 1, "%s", p.err);
    json_t *j = json_of(&p);
    cr_assert_eq(json_array_size(json_object_get(j, "groups")), 0);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "nearest"), 0)),
                     "scale_kernel");
    json_decref(j);
    tu_proc_free(&p);

    run(&p, ARGS("triton", "explain", "--dir", dir));
    cr_assert_eq(p.exit_code, 2);
    tu_assert_line(p.err, "vyre-cachectl: error: triton explain needs a kernel name");
    tu_proc_free(&p);
    run(&p, ARGS("triton", "explain", "a", "b", "--dir", dir));
    cr_assert_eq(p.exit_code, 2);
    tu_assert_line(p.err, "vyre-cachectl: error: unexpected argument 'b'");
    tu_proc_free(&p);
}

Test(cachectl_explain, triton_explain_of_foreign_names_stays_one_document)
{
    /* A group whose directory name is not UTF-8 and holds a terminal
     * escape: printed cleaned, and the JSON document still parses. */
    char dir[700], g1[1200], bad[1200];
    triton_cache(dir, sizeof dir);
    snprintf(g1, sizeof g1, "%s/%s", dir, KGROUP);
    snprintf(bad, sizeof bad, "%s/BAD\xff\x1b[2J", dir);
    tu_copy_tree(g1, bad);
    tu_proc p;
    run(&p, ARGS("triton", "explain", "scale_kernel", "--dir", dir, "--all"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert_null(strchr(p.out, '\x1b'), "%s", p.out);
    cr_assert(strstr(p.out, "\n  BAD"), "the key is listed, cleaned: %s", p.out);
    char want[1024];
    snprintf(want, sizeof want, "Triton kernel 'scale_kernel': 3 groups in %s", dir);
    tu_assert_line(p.out, want);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "explain", "scale_kernel", "--dir", dir, "--json"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    cr_assert_eq(json_array_size(json_object_get(j, "groups")), 3);
    json_decref(j);
    tu_proc_free(&p);
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* A kernel recompiled 200 times more, as torch.compile does over shapes and
 * GPUs: group i of 200 made from KGROUP for sm_80 (i < 50) or sm_90, 8
 * warps (i < 100) or 4, 10 + i % 8 stages, a hash of its own. The summary
 * names the kernel once and no key, each differing field in one short
 * line; --all lists them all. */
Test(cachectl_explain, triton_explain_summarises_many_groups)
{
    char dir[700], g1[1200];
    triton_cache(dir, sizeof dir);
    snprintf(g1, sizeof g1, "%s/%s", dir, KGROUP);
    tu_rm_rf(tu_text("%s/%s", dir, KGROUP2));
    for (int i = 0; i < 200; i++) {
        char g[1200], meta[1300], v[64];
        snprintf(g, sizeof g, "%s/GEN%03dWRPZ4BMLHZDHVLBI7YULCKTFFXOZWUDBQ2MQNOO22K3NXW4A", dir, i);
        tu_copy_tree(g1, g);
        snprintf(meta, sizeof meta, "%s/scale_kernel.json", g);
        if (i < 50)
            edit(meta, "\"arch\": 90", "\"arch\": 80");
        if (i < 100)
            edit(meta, "\"num_warps\": 4", "\"num_warps\": 8");
        snprintf(v, sizeof v, "\"num_stages\": %d", 10 + i % 8);
        edit(meta, "\"num_stages\": 3", v);
        snprintf(v, sizeof v, "\"hash\": \"%08d", i);
        edit(meta, "\"hash\": \"79901b45", v);
    }
    tu_proc p;
    run(&p, ARGS("triton", "explain", "scale_kernel", "--dir", dir));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    char want[1024];
    snprintf(want, sizeof want, "Triton kernel 'scale_kernel': 201 groups in %s", dir);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Differs between them (4 fields; each value with the groups that have "
                          "it):");
    tu_assert_line(p.out, "  target.arch       90 (151 groups), 80 (50 groups)");
    tu_assert_line(p.out, "  num_warps         4 (101 groups), 8 (100 groups)");
    tu_assert_line(p.out, "  num_stages        10 (25 groups), 11 (25 groups), 12 (25 groups), "
                          "13 (25 groups), 14 (25 groups), 15 (25 groups), and 3 more values "
                          "('--all' lists them)");
    tu_assert_line(p.out, "  hash              201 values, one in each group ('--all' lists them)");
    tu_assert_line(p.out, "  triton_version    3.6.0");
    tu_assert_line(p.out, "'--all' lists the 201 groups and each one's values.");
    /* The kernel once, no key, every line short. */
    cr_assert_eq(count(p.out, "scale_kernel"), 1, "%s", p.out);
    cr_assert_null(strstr(p.out, "GEN0"), "%s", p.out);
    size_t lines = 0;
    for (const char *l = p.out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0')) {
        cr_assert_leq(strcspn(l, "\n"), 160, "a long line: %.*s", (int)strcspn(l, "\n"), l);
        lines++;
    }
    cr_assert_leq(lines, 16, "%s", p.out);
    tu_proc_free(&p);

    run(&p, ARGS("triton", "explain", "scale_kernel", "--dir", dir, "--all"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "  " KGROUP);
    tu_assert_line(p.out, "  GEN199WRPZ4BMLHZDHVLBI7YULCKTFFXOZWUDBQ2MQNOO22K3NXW4A");
    tu_assert_line(p.out, "Differs between them (4 fields):");
    /* In key order: GEN000..GEN099 (8 warps), GEN100..GEN199, KGROUP (4). */
    cr_assert(strstr(p.out, "\n  num_warps         8  |  8  |"), "%s", p.out);
    cr_assert(strstr(p.out, "  |  8  |  4  |"), "%s", p.out);
    cr_assert_eq(count(strstr(p.out, "\n  num_warps "), "  |  ") >= 200, 1, "%s", p.out);
    tu_proc_free(&p);
}

/* The real torch.compile cache: two groups of one kernel (two autotuning
 * configs), told apart by their hash only. */
Test(cachectl_explain, triton_explain_on_a_torch_compile_cache)
{
    static const char dir[] = VYRE_TEST_SOURCE_DIR "/fixtures/torch_block/cache/triton";
    tu_proc p;
    run(&p, ARGS("triton", "explain", "triton_poi_fused_addmm_clone_split_transpose_view_2",
                 "--dir", dir));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, tu_text("Triton kernel 'triton_poi_fused_addmm_clone_split_transpose_"
                                  "view_2': 2 groups in %s",
                                  dir));
    tu_assert_line(p.out, "Differs between them (1 field; each value with the groups that have "
                          "it):");
    tu_assert_line(
        p.out, "  hash              16ca72563b2ea5d1... (1 group), 8eee8b7f3edfc258... (1 group)");
    tu_assert_line(p.out, "  num_warps         8");
    tu_assert_line(p.out, "  shared            16384");
    cr_assert_null(strstr(p.out, "C3FHEVR3F2S5"), "%s", p.out);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "explain", "triton_poi_fused_addmm_clone_split_transpose_view_2",
                 "--dir", dir, "--all"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "  C3FHEVR3F2S5CA43DLHE4GY7N5ZWG4Q3DSR3NIARSG2MXV67RAJQ");
    tu_assert_line(p.out, "  hash              16ca72563b2ea5d1...  |  8eee8b7f3edfc258...");
    tu_proc_free(&p);
}
