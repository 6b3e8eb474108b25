/*
 * test_cachectl_triton.c - `vyre-cachectl triton stats|ls|verify|relocate`
 * on a real Triton 3.6 cache made on an H100 (tests/fixtures/triton/cache,
 * its manifests pointing at /nonexistent/origin/...), copied into a fresh
 * temp dir and damaged there as caches get damaged: a truncated cubin, a
 * manifest naming a missing file, metadata naming another kernel or
 * another architecture, orphans, Triton's temp files, a half-written group.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

#define KGROUP "PGIBWRPZ4BMLHZDHVLBI7YULCKTFFXOZWUDBQ2MQNOO22K3NXW4A"
#define LGROUP "3NW4CBFU6KRSIOXLLFMNULDCKOIZDJR3TDR3GR24VJ6NT3ILGGTA"

static char g_tmp[512];
static char g_cache[600];
static char g_env_home[700];

static void copy_dir(const char *src, const char *dst)
{
    cr_assert_eq(mkdir(dst, 0700), 0, "%s", dst);
    DIR *d = opendir(src);
    cr_assert(d, "%s", src);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char s[1300], t[1300];
        snprintf(s, sizeof s, "%s/%s", src, e->d_name);
        snprintf(t, sizeof t, "%s/%s", dst, e->d_name);
        struct stat st;
        cr_assert_eq(stat(s, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            copy_dir(s, t);
            continue;
        }
        size_t len;
        char *data = tu_read_file(s, &len);
        cr_assert(data, "%s", s);
        tu_write_file(t, data, len);
        free(data);
    }
    closedir(d);
}

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    char src[512];
    snprintf(src, sizeof src, "%s/fixtures/triton/cache", VYRE_TEST_SOURCE_DIR);
    copy_dir(src, g_cache);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_triton, .init = setup, .fini = teardown, .timeout = 120);

static void run(tu_proc *p, const char *const *args)
{
    const char *const env[] = {g_env_home, "TRITON_CACHE_DIR", "TRITON_HOME", NULL};
    tu_run_bin(p, VYRE_CACHECTL_BIN, args, env, NULL);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void gpath(char *out, size_t size, const char *key, const char *file)
{
    snprintf(out, size, "%s/%s/%s", g_cache, key, file);
}

static void put(const char *key, const char *file, const char *text)
{
    char p[1024];
    gpath(p, sizeof p, key, file);
    tu_write_file(p, text, strlen(text));
}

/* Edits the metadata: replaces the first `from` by `to`. */
static void edit_metadata(const char *from, const char *to)
{
    char p[1024];
    gpath(p, sizeof p, KGROUP, "scale_kernel.json");
    size_t len;
    char *s = tu_read_file(p, &len);
    char *at = strstr(s, from);
    cr_assert(at, "'%s' not in the metadata", from);
    char out[4096];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    tu_write_file(p, out, strlen(out));
    free(s);
}

static json_t *json_of(const tu_proc *p)
{
    json_error_t je;
    json_t *j = json_loads(p->out, 0, &je);
    cr_assert(j, "not JSON (%s):\n%s", je.text, p->out);
    return j;
}

Test(cachectl_triton, stats_and_ls_on_a_real_cache)
{
    tu_proc p;
    run(&p, ARGS("triton", "stats", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Kernel groups:           1");
    tu_assert_line(p.out, "Launcher groups:         1");
    tu_assert_line(p.out, "Files (inodes):          11");
    tu_assert_line(p.out, "By architecture:         90         1 group, 26.5 KiB");
    tu_assert_line(p.out, "By Triton version:       3.6.0      1 group, 26.5 KiB");
    tu_proc_free(&p);
    run(&p, ARGS("triton", "ls", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "PGIBWRPZ4BML  scale_kernel                      90      3.6.0    "
                            "    4       3      8    26.5 KiB"),
              "%s", p.out);
    cr_assert(strstr(p.out, "3NW4CBFU6KRS  launcher "), "%s", p.out);
    tu_proc_free(&p);
}

Test(cachectl_triton, ls_json_and_the_default_location)
{
    /* No --dir: $TRITON_CACHE_DIR, as Triton finds it. */
    char env[700];
    snprintf(env, sizeof env, "TRITON_CACHE_DIR=%s", g_cache);
    const char *const extra[] = {env, NULL};
    const char *const base[] = {g_env_home, NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_CACHECTL_BIN, ARGS("triton", "ls", "--json"), base, extra);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    cr_assert_str_eq(json_string_value(json_object_get(j, "triton_cache_dir_source")),
                     "TRITON_CACHE_DIR");
    json_t *g = json_array_get(json_object_get(j, "groups"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(g, "name")), "scale_kernel");
    cr_assert_str_eq(json_string_value(json_object_get(g, "arch")), "90");
    cr_assert_eq(json_integer_value(json_object_get(g, "num_warps")), 4);
    cr_assert_eq(json_integer_value(json_object_get(g, "bytes")), 27114);
    json_decref(j);
    tu_proc_free(&p);
    /* Nothing set: ~/.triton/cache, which does not exist here. */
    run(&p, ARGS("triton", "stats"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "/.triton/cache' does not exist"), "%s", p.err);
    cr_assert(strstr(p.err, "hint: "), "%s", p.err);
    tu_proc_free(&p);
}

Test(cachectl_triton, usage_errors)
{
    tu_proc p;
    run(&p, ARGS("triton", "stat"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "unknown action 'stat'"), "%s", p.err);
    cr_assert(strstr(p.err, "did you mean 'stats'?"), "%s", p.err);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "ls", "--repair"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "--repair is for 'triton verify'"), "%s", p.err);
    tu_proc_free(&p);
    run(&p, ARGS("triton"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "triton needs an action"), "%s", p.err);
    tu_proc_free(&p);
}

static void verify_finds(const char *kind, const char *needle)
{
    tu_proc p;
    run(&p, ARGS("triton", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    char line[128];
    snprintf(line, sizeof line, "%s: ", kind);
    const char *at = strstr(p.out, line);
    cr_assert(at && strstr(at, needle), "no '%s' problem with '%s' in:\n%s", kind, needle, p.out);
    tu_proc_free(&p);
}

Test(cachectl_triton, verify_clean)
{
    tu_proc p;
    run(&p, ARGS("triton", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "2 groups checked, 0 unusable, 0 problems");
    tu_proc_free(&p);
}

Test(cachectl_triton, verify_truncated_cubin)
{
    char path[1024];
    gpath(path, sizeof path, KGROUP, "scale_kernel.cubin");
    cr_assert_eq(truncate(path, 100), 0);
    verify_finds("bad-cubin", "'scale_kernel.cubin' is not a readable cubin");
}

Test(cachectl_triton, verify_manifest_names_missing_file)
{
    char path[1024];
    gpath(path, sizeof path, KGROUP, "scale_kernel.ttgir");
    cr_assert_eq(unlink(path), 0);
    verify_finds("missing-file", "names 'scale_kernel.ttgir', which is missing");
}

Test(cachectl_triton, verify_metadata_names_another_kernel)
{
    edit_metadata("\"name\": \"scale_kernel\"", "\"name\": \"other_kernel\"");
    verify_finds("wrong-kernel", "defines no kernel 'other_kernel'");
}

Test(cachectl_triton, verify_another_architecture)
{
    edit_metadata("\"arch\": 90", "\"arch\": 120");
    verify_finds("wrong-arch", "built for sm_90, the metadata's target.arch is '120'");
}

Test(cachectl_triton, verify_bad_json)
{
    put(KGROUP, "__grp__scale_kernel.json", "{\"child_paths\": ");
    verify_finds("bad-manifest", "'__grp__scale_kernel.json' is not JSON");
}

Test(cachectl_triton, verify_orphans_temp_and_half_written)
{
    put(KGROUP, "stray.bin", "x");
    put(KGROUP, "scale_kernel.ptx.tmp.pid_77_abcd", "x");
    char path[1024];
    snprintf(path, sizeof path, "%s/tmp.pid_77_abcd", g_cache);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/HALFWRITTENGROUP", g_cache);
    cr_assert_eq(mkdir(path, 0700), 0);
    put("HALFWRITTENGROUP", "k.cubin", "x");
    put("HALFWRITTENGROUP", "k.json", "{\"name\": \"k\"}");
    verify_finds("orphan", "'" KGROUP "/stray.bin' is named by no manifest");
    verify_finds("temp", "scale_kernel.ptx.tmp.pid_77_abcd' is a temp file Triton left");
    verify_finds("temp", "'tmp.pid_77_abcd' is a temp directory Triton left");
    verify_finds("half-written", "group 'HALFWRITTENGROUP' has kernel files but no manifest");
}

Test(cachectl_triton, verify_repair_quarantines_never_deletes)
{
    char path[1024];
    gpath(path, sizeof path, KGROUP, "scale_kernel.cubin");
    cr_assert_eq(truncate(path, 100), 0);
    tu_proc p;
    run(&p, ARGS("triton", "verify", "--repair", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "(moved to .vyre-quarantine)"), "%s", p.out);
    tu_proc_free(&p);
    snprintf(path, sizeof path, "%s/.vyre-quarantine/%s/scale_kernel.cubin", g_cache, KGROUP);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "the group was not kept in the quarantine");
    cr_assert_eq(st.st_size, 100);
    snprintf(path, sizeof path, "%s/%s", g_cache, KGROUP);
    cr_assert_neq(stat(path, &st), 0, "the bad group is still where Triton looks");
    /* The quarantine is vyre's: not a group, not an orphan. */
    run(&p, ARGS("triton", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "1 group checked, 0 unusable, 0 problems");
    tu_proc_free(&p);
}

Test(cachectl_triton, relocate_points_manifests_here)
{
    char mpath[1024];
    gpath(mpath, sizeof mpath, KGROUP, "__grp__scale_kernel.json");
    size_t len;
    char *before = tu_read_file(mpath, &len);
    cr_assert(strstr(before, "/nonexistent/origin/triton_cache/" KGROUP "/scale_kernel.cubin"));
    tu_proc p;
    run(&p, ARGS("triton", "relocate", "--dry-run", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char line[1024];
    snprintf(line, sizeof line, "1 manifest would point to %s", g_cache);
    tu_assert_line(p.out, line);
    char *same = tu_read_file(mpath, &len);
    cr_assert_str_eq(same, before, "--dry-run changed the manifest");
    free(same);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "relocate", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "rewrote " KGROUP "/__grp__scale_kernel.json");
    tu_proc_free(&p);
    char *after = tu_read_file(mpath, &len);
    char want[2048];
    /* Triton's own layout (json.dumps), every child under the cache now. */
    snprintf(want, sizeof want,
             "{\"child_paths\": {\"scale_kernel.source\": \"%s/%s/scale_kernel.source\", ", g_cache,
             KGROUP);
    cr_assert(!strncmp(after, want, strlen(want)), "%s", after);
    cr_assert(!strstr(after, "/nonexistent/"), "%s", after);
    json_t *j = json_loads(after, 0, NULL);
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach(json_object_get(j, "child_paths"), k, v)
    {
        struct stat st;
        cr_assert_eq(stat(json_string_value(v), &st), 0, "'%s' does not exist",
                     json_string_value(v));
        n++;
    }
    cr_assert_eq(n, 7);
    json_decref(j);
    free(after);
    free(before);
    /* Every child path now exists; a second run has nothing to do. */
    run(&p, ARGS("triton", "relocate", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    snprintf(line, sizeof line, "0 manifests now point to %s", g_cache);
    tu_assert_line(p.out, line);
    tu_proc_free(&p);
}
