/*
 * test_cachectl_triton.c - `vyre-cachectl triton stats|ls|show|verify|relocate|prune|clear`
 * on a real Triton 3.6 cache made on an H100 (tests/fixtures/triton/cache,
 * its manifests pointing at /nonexistent/origin/...), copied into a fresh
 * temp dir and damaged there as caches get damaged: a truncated cubin, a
 * manifest naming a missing file, metadata naming another kernel or
 * another architecture, orphans, Triton's temp files, a half-written group;
 * groups aged with utimensat for prune (tests/unit/test_triton_prune.c
 * covers the library's rules, a writer beside prune included).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    char src[512];
    snprintf(src, sizeof src, "%s/fixtures/triton/cache", VYRE_TEST_SOURCE_DIR);
    tu_copy_tree(src, g_cache);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

/* Sizes are on disk, as du counts them (st_blocks * 512), measured on the
 * filesystem the test runs on: key "" is the whole cache. */
static uint64_t disk(const char *key)
{
    char p[1024];
    snprintf(p, sizeof p, "%s%s%s", g_cache, *key ? "/" : "", key);
    return tu_disk_bytes(p);
}

static uint64_t top_dir(void)
{
    struct stat st;
    cr_assert_eq(lstat(g_cache, &st), 0);
    return (uint64_t)st.st_blocks * 512;
}

TestSuite(cachectl_triton, .init = setup, .fini = teardown, .timeout = 120);

static void run(tu_proc *p, const char *const *args)
{
    const char *const env[] = {
        g_env_home,           "TRITON_CACHE_DIR",           "TRITON_HOME", "XDG_CONFIG_HOME",
        "VYRE_PTX_CACHE_DIR", "VYRE_CACHE_TRITON_MAX_SIZE", NULL};
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

/* stats' table row of name: "NAME  COUNT  SIZE[  INODES]", the numbers
 * right-aligned to their columns' widest; inodes < 0: no such column. */
static void assert_bucket(const char *out, const char *name, uint64_t count, uint64_t bytes,
                          long long inodes)
{
    size_t n = strlen(name);
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, name, n) != 0 || l[n] != ' ')
            continue;
        char *end = NULL;
        unsigned long long e = strtoull(l + n, &end, 10);
        const char *size = end + strspn(end, " ");
        const char *want = tu_size_text(bytes);
        if (e != count || end == l + n || strncmp(size, want, strlen(want)) != 0)
            continue;
        const char *rest = size + strlen(want);
        if (inodes < 0 ? *rest == '\n' : strtoll(rest, &end, 10) == inodes && *end == '\n')
            return;
    }
    cr_assert_fail("no row '%s %llu %s' in:\n%s", name, (unsigned long long)count,
                   tu_size_text(bytes), out);
}

Test(cachectl_triton, stats_and_ls_on_a_real_cache)
{
    tu_proc p;
    run(&p, ARGS("triton", "stats", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Kernel groups:           1");
    tu_assert_line(p.out, "Launcher groups:         1");
    tu_assert_line(p.out, "Files (inodes):          11");
    tu_assert_line(p.out, "By architecture:");
    tu_assert_line(p.out, "By Triton version:");
    assert_bucket(p.out, "90", 1, disk(KGROUP), -1);
    assert_bucket(p.out, "3.6.0", 1, disk(KGROUP), -1);
    tu_assert_line(p.out, tu_text("Size:                    %s on disk (%s apparent)",
                                  tu_size_text(disk("")), tu_size_text(27114 + 21712)));
    tu_proc_free(&p);
    run(&p, ARGS("triton", "ls", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    /* The row model's table: each column as wide as its widest cell,
     * numbers and sizes to the right. */
    char ks[32], ls[32];
    snprintf(ks, sizeof ks, "%s", tu_size_text(disk(KGROUP)));
    snprintf(ls, sizeof ls, "%s", tu_size_text(disk(LGROUP)));
    int w = (int)(strlen(ks) > strlen(ls) ? strlen(ks) : strlen(ls));
    w = w < 4 ? 4 : w;
    cr_assert(
        strstr(p.out, tu_text("\nPGIBWRPZ4BML  scale_kernel  90    3.6.0       4       3      8"
                              "  %*s  ",
                              w, ks)),
        "%s", p.out);
    cr_assert(
        strstr(p.out, tu_text("\n3NW4CBFU6KRS  launcher      -     -           -       -      1"
                              "  %*s  ",
                              w, ls)),
        "%s", p.out);
    tu_proc_free(&p);
}

/* What `triton prune` leaves between its rename and the removal (or a
 * pruner that died there): a trash name with half the group gone; and
 * verify --repair's quarantine with a group in it. Both are vyre's. */
static void vyre_own_entries(void)
{
    char src[700], dst[1024];
    snprintf(src, sizeof src, "%s/%s", g_cache, KGROUP);
    snprintf(dst, sizeof dst, "%s/.vyre-trash.%s.99999.1", g_cache, KGROUP);
    tu_copy_tree(src, dst);
    snprintf(dst, sizeof dst, "%s/.vyre-trash.%s.99999.1/scale_kernel.cubin", g_cache, KGROUP);
    cr_assert_eq(unlink(dst), 0);
    snprintf(dst, sizeof dst, "%s/.vyre-quarantine", g_cache);
    cr_assert_eq(mkdir(dst, 0700), 0);
    snprintf(dst, sizeof dst, "%s/.vyre-quarantine/%s", g_cache, KGROUP);
    tu_copy_tree(src, dst);
}

Test(cachectl_triton, vyre_trash_and_quarantine_are_not_triton_groups)
{
    vyre_own_entries();
    tu_proc p;
    run(&p, ARGS("triton", "stats", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Kernel groups:           1");
    tu_assert_line(p.out, "Launcher groups:         1");
    tu_assert_line(p.out, "Files (inodes):          11");
    assert_bucket(p.out, "90", 1, disk(KGROUP), -1);
    cr_assert(!strstr(p.out, "Other entries:"), "%s", p.out);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "ls", "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    cr_assert_eq(json_array_size(json_object_get(j, "groups")), 2, "%s", p.out);
    /* The cache is not the one vyre-bench finds itself: --dir in the command. */
    json_t *kg = json_array_get(json_object_get(j, "groups"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(kg, "command")),
                     tu_text("vyre-bench run --triton " KGROUP " --dir %s", g_cache));
    json_decref(j);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "ls", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(!strstr(p.out, ".vyre-"), "%s", p.out);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "2 groups checked, 0 unusable, 0 problems");
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
    /* The cache vyre-bench finds itself: no --dir; a launcher has no command. */
    cr_assert_str_eq(json_string_value(json_object_get(g, "command")),
                     "vyre-bench run --triton " KGROUP);
    cr_assert(
        json_is_null(json_object_get(json_array_get(json_object_get(j, "groups"), 0), "command")),
        "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(g, "num_warps")), 4);
    cr_assert_eq(json_integer_value(json_object_get(g, "bytes")), (json_int_t)disk(KGROUP));
    cr_assert_eq(json_integer_value(json_object_get(g, "apparent_bytes")), 27114);
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

/* Issue 36: every problem line of the text output names its group (the
 * key), as --json does, whatever the problem's own message says. */
Test(cachectl_triton, verify_names_the_group_on_every_line)
{
    edit_metadata("\"arch\": 90", "\"arch\": 120");
    put(KGROUP, "stray.bin", "x");
    char path[1024];
    snprintf(path, sizeof path, "%s/tmp.pid_77_abcd", g_cache);
    cr_assert_eq(mkdir(path, 0700), 0);
    tu_proc p;
    run(&p, ARGS("triton", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "wrong-arch: " KGROUP ": 'scale_kernel.cubin' is built for sm_90, the "
                          "metadata's target.arch is '120'");
    tu_assert_line(p.out, "orphan: " KGROUP ": '" KGROUP "/stray.bin' is named by no manifest");
    tu_assert_line(p.out, "temp: tmp.pid_77_abcd: 'tmp.pid_77_abcd' is a temp directory Triton "
                          "left");
    tu_assert_line(p.out, "3 groups checked, 1 unusable, 3 problems");
    tu_proc_free(&p);
}

/* -q prints no problem line for any kind of cache (vyre's own verify's
 * rule, one report for the three): the exit status says it all. */
Test(cachectl_triton, verify_quiet_prints_nothing_the_exit_status_says_it)
{
    put(KGROUP, "stray.bin", "x");
    tu_proc p;
    run(&p, ARGS("triton", "verify", "-q", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "");
    tu_proc_free(&p);
}

static void age_group(const char *key, int64_t seconds);

Test(cachectl_triton, verify_repair_quarantines_never_deletes)
{
    char path[1024];
    gpath(path, sizeof path, KGROUP, "scale_kernel.cubin");
    cr_assert_eq(truncate(path, 100), 0);
    age_group(KGROUP, 120); /* damaged long ago: no writer is at it */
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

/* Issue 35: a group Triton is writing right now (kernel files, the
 * manifest last) is reported, said to be left alone and not moved, in
 * text and --json; two minutes later it is moved. */
Test(cachectl_triton, verify_repair_leaves_a_group_changed_less_than_a_minute_ago)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/HALFWRITTENGROUP", g_cache);
    cr_assert_eq(mkdir(path, 0700), 0);
    put("HALFWRITTENGROUP", "k.cubin", "x");
    put("HALFWRITTENGROUP", "k.json", "{\"name\": \"k\"}");
    tu_proc p;
    run(&p, ARGS("triton", "verify", "--repair", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "half-written: HALFWRITTENGROUP: group 'HALFWRITTENGROUP' has kernel "
                          "files but no manifest (__grp__NAME.json, which Triton writes last) "
                          "(left alone: changed less than a minute ago)");
    tu_assert_line(p.out, "0 groups moved to .vyre-quarantine, 0 could not be moved");
    tu_assert_line(p.out, "1 group left alone: changed less than a minute ago (a writer may "
                          "still be creating it; run 'vyre-cachectl triton verify --repair' "
                          "again later)");
    tu_proc_free(&p);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "the group being written was moved");
    run(&p, ARGS("triton", "verify", "--repair", "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    json_t *j = json_loads(p.out, 0, NULL);
    cr_assert(j, "%s", p.out);
    json_t *e = NULL, *x;
    size_t i;
    json_array_foreach(json_object_get(j, "problems"), i, x)
    {
        if (!strcmp(json_string_value(json_object_get(x, "kind")), "half-written"))
            e = x;
    }
    cr_assert(e, "%s", p.out);
    cr_assert(json_is_true(json_object_get(e, "left_young")), "%s", p.out);
    cr_assert(json_is_false(json_object_get(e, "quarantined")), "%s", p.out);
    cr_assert_null(json_object_get(e, "quarantine_error"));
    json_decref(j);
    tu_proc_free(&p);

    age_group("HALFWRITTENGROUP", 120);
    run(&p, ARGS("triton", "verify", "--repair", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "half-written: HALFWRITTENGROUP: group 'HALFWRITTENGROUP' has kernel "
                          "files but no manifest (__grp__NAME.json, which Triton writes last) "
                          "(moved to .vyre-quarantine)");
    cr_assert(!strstr(p.out, "left alone"), "%s", p.out);
    tu_proc_free(&p);
    cr_assert_neq(stat(path, &st), 0, "the old half-written group was not moved");
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

/* ---- prune, clear, show ------------------------------------------------- */

/* Sets atime and mtime of group key's files, then of its directory. */
static void age_group(const char *key, int64_t seconds)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", g_cache, key);
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            cr_assert_eq(utimensat(dirfd(d), e->d_name, t, AT_SYMLINK_NOFOLLOW), 0);
    closedir(d);
    cr_assert_eq(utimensat(AT_FDCWD, dir, t, AT_SYMLINK_NOFOLLOW), 0);
}

static int group_exists(const char *key)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", g_cache, key);
    return lstat(p, &st) == 0;
}

Test(cachectl_triton, prune_max_size_dry_run_then_for_real)
{
    age_group(KGROUP, 3600);     /* used an hour ago */
    age_group(LGROUP, 2 * 3600); /* two hours ago: the first to go */
    tu_proc p;
    /* The kernel group and the cache directory fit; the launcher does not. */
    char limit[32];
    snprintf(limit, sizeof limit, "%lluB", (unsigned long long)(top_dir() + disk(KGROUP)));
    const char *lsize = tu_size_text(disk(LGROUP)), *ksize = tu_size_text(disk(KGROUP));
    run(&p, ARGS("triton", "prune", "--max-size", limit, "--dry-run", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "would remove 3NW4CBFU6KRS  -  "), "%s", p.out);
    cr_assert(strstr(p.out, tu_text("%s      2 inodes  (size)", lsize)), "%s", p.out);
    tu_assert_line(p.out, tu_text("Would remove 1 group (%s, 2 inodes)", lsize));
    tu_assert_line(p.out, tu_text("Would keep 1 group (the cache: %s, 9 inodes)",
                                  tu_size_text(top_dir() + disk(KGROUP))));
    cr_assert(group_exists(LGROUP), "--dry-run removed a group");
    tu_proc_free(&p);
    run(&p, ARGS("triton", "prune", "--max-size", limit, "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, tu_text("Removed 1 group (%s, 2 inodes)", lsize));
    cr_assert(!group_exists(LGROUP) && group_exists(KGROUP));
    cr_assert_leq(tu_du_sk(g_cache) * 1024, top_dir() + disk(KGROUP), "du -sk within the limit");
    (void)ksize;
    tu_proc_free(&p);
    /* The rest is within the limit: nothing more. */
    run(&p, ARGS("triton", "prune", "--max-size", limit, "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Removed 0 groups (0 B, 0 inodes)");
    tu_proc_free(&p);
}

Test(cachectl_triton, prune_leaves_young_groups_and_says_so)
{
    /* Copied just now: both groups are younger than a minute. */
    tu_proc p;
    run(&p, ARGS("triton", "prune", "--max-size", "1K", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "still over the limit: %s%s", p.out, p.err);
    tu_assert_line(p.out, "Removed 0 groups (0 B, 0 inodes)");
    tu_assert_line(p.out, tu_text("Left 2 groups younger than a minute (%s): Triton may be "
                                  "writing them",
                                  tu_size_text(disk(KGROUP) + disk(LGROUP))));
    cr_assert(group_exists(LGROUP) && group_exists(KGROUP));
    tu_proc_free(&p);
}

Test(cachectl_triton, prune_max_age_keep_arch_and_version_json)
{
    age_group(KGROUP, 3 * 3600);
    age_group(LGROUP, 600);
    uint64_t kbytes = disk(KGROUP);
    tu_proc p;
    run(&p, ARGS("triton", "prune", "--max-age", "2h", "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    json_t *r = json_array_get(json_object_get(j, "removed"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(r, "key")), KGROUP);
    cr_assert_str_eq(json_string_value(json_object_get(r, "reason")), "age");
    cr_assert_str_eq(json_string_value(json_object_get(r, "name")), "scale_kernel");
    cr_assert_eq(json_integer_value(json_object_get(r, "bytes")), (json_int_t)kbytes);
    cr_assert_eq(json_integer_value(json_object_get(j, "removed_inodes")), 9);
    cr_assert_eq(json_integer_value(json_object_get(j, "kept_groups")), 1);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "limits"), "max_age_ns")),
                 INT64_C(7200) * 1000000000);
    json_decref(j);
    tu_proc_free(&p);
}

Test(cachectl_triton, prune_keep_arch_and_triton_version)
{
    edit_metadata("\"arch\": 90", "\"arch\": 120");
    age_group(KGROUP, 3600);
    age_group(LGROUP, 3600);
    tu_proc p;
    run(&p, ARGS("triton", "prune", "--keep-arch", "sm_90", "--keep-arch", "100", "--dry-run",
                 "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "would remove PGIBWRPZ4BML  scale_kernel "), "%s", p.out);
    cr_assert(strstr(p.out, "(arch)"), "%s", p.out);
    tu_assert_line(p.out,
                   tu_text("Would remove 1 group (%s, 9 inodes)", tu_size_text(disk(KGROUP))));
    tu_proc_free(&p);
    run(&p, ARGS("triton", "prune", "--triton-version", "3.6.0", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Removed 0 groups (0 B, 0 inodes)");
    tu_proc_free(&p);
    run(&p, ARGS("triton", "prune", "--triton-version", "3.7.0", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "(triton-version)"), "%s", p.out);
    cr_assert(!group_exists(KGROUP) && group_exists(LGROUP), "the launcher has no version");
    tu_proc_free(&p);
}

Test(cachectl_triton, prune_and_clear_usage_errors)
{
    static const struct {
        const char *args[8];
        const char *message, *hint;
    } cases[] = {
        {{"triton", "prune"}, "triton prune needs a limit", "--max-size"},
        {{"triton", "prune", "--max-size", "lots"}, "'lots'", "500M"},
        {{"triton", "prune", "--max-size", "0"}, "--max-size '0' is no limit", "triton clear"},
        {{"triton", "prune", "--max-age", "soon"}, "'soon'", NULL},
        {{"triton", "prune", "--keep-arch", "sm 90"}, "'sm 90' is not an architecture", "gfx942"},
        {{"triton", "prune", "--auto", "--max-size", "1G"}, "--auto takes its limit", NULL},
        {{"triton", "prune", "--print-timer"}, "--print-timer prints a timer for --auto", NULL},
        {{"triton", "ls", "--max-size", "1G"}, "are for 'triton prune'", NULL},
        {{"triton", "prune", "--max-size", "1G", "--yes"}, "--yes is for 'triton clear'", NULL},
        {{"triton", "clear"}, "refusing without --yes", "triton clear --yes"},
        {{"triton", "show"}, "triton show needs a KEY or KERNEL_NAME", "triton ls"},
        {{"triton", "show", ""}, "no Triton group ''", "triton ls"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *args[12];
        size_t n = 0;
        for (; cases[i].args[n]; n++)
            args[n] = cases[i].args[n];
        args[n++] = "--dir";
        args[n++] = g_cache;
        args[n] = NULL;
        tu_proc p;
        run(&p, args);
        cr_assert_eq(p.exit_code, 2, "case %zu: exit %d\n%s", i, p.exit_code, p.err);
        cr_assert(strstr(p.err, cases[i].message), "case %zu:\n%s", i, p.err);
        cr_assert(!cases[i].hint || strstr(p.err, cases[i].hint), "case %zu:\n%s", i, p.err);
        tu_proc_free(&p);
    }
    cr_assert(group_exists(KGROUP) && group_exists(LGROUP));
}

/* The keys of o include names[0..n) in this order (tally.c sets a kind's
 * counts from its table: a slip there moves or drops one). */
static void assert_keys_in_order(json_t *o, const char *const *names, size_t n)
{
    size_t k = 0;
    for (void *it = json_object_iter(o); it && k < n; it = json_object_iter_next(o, it))
        if (!strcmp(json_object_iter_key(it), names[k]))
            k++;
    cr_assert_eq(k, n, "'%s' missing or out of order", k < n ? names[k] : "");
}

Test(cachectl_triton, clear_dry_run_then_yes)
{
    age_group(KGROUP, 3600);
    uint64_t kdisk = disk(KGROUP), ldisk = disk(LGROUP); /* before they go */
    tu_proc p;
    run(&p, ARGS("triton", "clear", "--dry-run", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out,
                   tu_text("Would remove 1 group (%s, 9 inodes)", tu_size_text(disk(KGROUP))));
    /* The launcher was copied just now: the one-minute guard keeps it. */
    tu_assert_line(p.out,
                   tu_text("Left 1 group younger than a minute (%s): Triton may be writing it",
                           tu_size_text(disk(LGROUP))));
    cr_assert(group_exists(KGROUP));
    tu_proc_free(&p);
    run(&p, ARGS("triton", "clear", "--yes", "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    cr_assert_str_eq(json_string_value(json_object_get(j, "action")), "clear");
    cr_assert_eq(json_integer_value(json_object_get(j, "removed_groups")), 1);
    cr_assert_eq(json_integer_value(json_object_get(j, "young_groups")), 1);
    cr_assert(json_is_true(json_object_get(json_object_get(j, "limits"), "all")));
    static const char *const counts[] = {
        "removed_groups", "removed_bytes", "removed_inodes", "kept_groups", "kept_bytes",
        "kept_inodes",    "young_groups",  "young_bytes",    "failed",      "total_bytes"};
    assert_keys_in_order(j, counts, sizeof counts / sizeof *counts);
    cr_assert_eq(json_integer_value(json_object_get(j, "removed_bytes")), (json_int_t)kdisk);
    cr_assert_eq(json_integer_value(json_object_get(j, "removed_inodes")), 9);
    cr_assert_eq(json_integer_value(json_object_get(j, "young_bytes")), (json_int_t)ldisk);
    cr_assert_eq(json_integer_value(json_object_get(j, "failed")), 0);
    json_decref(j);
    tu_proc_free(&p);
    cr_assert(!group_exists(KGROUP) && group_exists(LGROUP));
}

Test(cachectl_triton, prune_auto_applies_triton_max_size)
{
    age_group(KGROUP, 3600);
    age_group(LGROUP, 2 * 3600);
    tu_proc p;
    /* Default 0: nothing to do, nothing touched, exit 0. */
    run(&p, ARGS("triton", "prune", "--auto", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "triton_max_size is 0 (no limit"), "%s", p.out);
    cr_assert(strstr(p.out, "nothing to do"), "%s", p.out);
    tu_proc_free(&p);
    cr_assert(group_exists(LGROUP) && group_exists(KGROUP));
    /* From the environment (and from -o, and the user's file). */
    char env[64];
    snprintf(env, sizeof env, "VYRE_CACHE_TRITON_MAX_SIZE=%lluB",
             (unsigned long long)(top_dir() + disk(KGROUP)));
    const char *lsize = tu_size_text(disk(LGROUP)), *ksize = tu_size_text(disk(KGROUP));
    const char *const extra[] = {env, NULL};
    const char *const base[] = {g_env_home, "TRITON_CACHE_DIR", "XDG_CONFIG_HOME", NULL};
    tu_run_bin(&p, VYRE_CACHECTL_BIN, ARGS("triton", "prune", "--auto", "--dir", g_cache), base,
               extra);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, tu_text("Removed 1 group (%s, 2 inodes)", lsize));
    tu_proc_free(&p);
    cr_assert(!group_exists(LGROUP) && group_exists(KGROUP));
    /* The empty cache directory keeps its own block (du counts it): 8K, not 1K. */
    run(&p, ARGS("-o", "triton_max_size=8K", "triton", "prune", "--auto", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, tu_text("Removed 1 group (%s, 9 inodes)", ksize));
    tu_proc_free(&p);
    /* A bad value is an error naming it. */
    snprintf(env, sizeof env, "VYRE_CACHE_TRITON_MAX_SIZE=huge");
    tu_run_bin(&p, VYRE_CACHECTL_BIN, ARGS("triton", "prune", "--auto", "--dir", g_cache), base,
               extra);
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    cr_assert(strstr(p.err, "bad value 'huge' for triton_max_size"), "%s", p.err);
    tu_proc_free(&p);
}

Test(cachectl_triton, print_timer_prints_and_installs_nothing)
{
    tu_proc p;
    run(&p, ARGS("triton", "prune", "--auto", "--print-timer", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char line[2048];
    snprintf(line, sizeof line, "ExecStart=%s triton prune --auto --dir %s", VYRE_CACHECTL_BIN,
             g_cache);
    tu_assert_line(p.out, line);
    tu_assert_line(p.out, "OnCalendar=daily");
    tu_assert_line(p.out, "Persistent=true");
    tu_assert_line(p.out, "WantedBy=timers.target");
    snprintf(line, sizeof line, "#   17 3 * * * %s triton prune --auto --dir %s -q",
             VYRE_CACHECTL_BIN, g_cache);
    tu_assert_line(p.out, line);
    tu_proc_free(&p);
    char dir[700];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/.config/systemd", g_tmp);
    cr_assert_neq(stat(dir, &st), 0, "--print-timer installed something");
    /* The path must stand unquoted in a unit and a crontab line. */
    char odd[700];
    snprintf(odd, sizeof odd, "%s/a %%b", g_tmp);
    run(&p, ARGS("triton", "prune", "--auto", "--print-timer", "--dir", odd));
    cr_assert_eq(p.exit_code, 2, "%s", p.out);
    cr_assert(strstr(p.err, "quoted"), "%s", p.err);
    tu_proc_free(&p);
}

Test(cachectl_triton, show_a_group_by_key_prefix_or_kernel_name)
{
    char path[1024];
    gpath(path, sizeof path, KGROUP, "scale_kernel.ptx");
    cr_assert_eq(unlink(path), 0);
    tu_proc p;
    run(&p, ARGS("triton", "show", "PGIBWRPZ", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Group:           " KGROUP);
    tu_assert_line(p.out, "Kernel:          scale_kernel");
    tu_assert_line(p.out, "Architecture:    90");
    tu_assert_line(p.out, "Triton version:  3.6.0");
    tu_assert_line(p.out, "Warps:           4");
    const char *cubin = tu_size_text(disk(KGROUP "/scale_kernel.cubin"));
    cr_assert(strstr(p.out, tu_text("%s     0s  scale_kernel.cubin", cubin)) ||
                  strstr(p.out, tu_text("%s     1s  scale_kernel.cubin", cubin)),
              "%s", p.out);
    /* The manifest's paths point at the origin: never looked up; each says
     * whether the group has the file. */
    cr_assert(strstr(p.out, "  scale_kernel.cubin -> /nonexistent/origin/triton_cache/" KGROUP
                            "/scale_kernel.cubin  where the cache was, not looked at (in the "
                            "group: 'triton relocate' points it here)"),
              "%s", p.out);
    cr_assert(strstr(p.out, "/scale_kernel.ptx  where the cache was, not looked at (missing from "
                            "the group)\n"),
              "%s", p.out);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "relocate", "--dir", g_cache));
    tu_proc_free(&p);
    run(&p, ARGS("triton", "show", "scale_kernel", "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    json_t *g = json_array_get(json_object_get(j, "groups"), 0);
    cr_assert_eq(json_array_size(json_object_get(j, "groups")), 1);
    cr_assert_eq(json_array_size(json_object_get(g, "file_list")), 7);
    json_t *ch;
    size_t i, present = 0;
    json_array_foreach(json_object_get(g, "children"), i, ch) present +=
        json_is_true(json_object_get(ch, "exists"));
    cr_assert_eq(present, 6, "all but the deleted ptx exist after relocate");
    json_decref(j);
    tu_proc_free(&p);
}

Test(cachectl_triton, show_lists_every_group_of_a_kernel_and_refuses_an_unknown_one)
{
    /* A second group of scale_kernel (another key). */
    char src[1024], dst[1024];
    snprintf(src, sizeof src, "%s/%s", g_cache, KGROUP);
    snprintf(dst, sizeof dst, "%s/SECONDGROUPKEY", g_cache);
    cr_assert_eq(rename(src, dst), 0);
    char fix[512];
    snprintf(fix, sizeof fix, "%s/fixtures/triton/cache/%s", VYRE_TEST_SOURCE_DIR, KGROUP);
    tu_copy_tree(fix, src);
    tu_proc p;
    run(&p, ARGS("triton", "show", "scale_kernel", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out,
                   "2 groups of 'scale_kernel' ('vyre-cachectl triton show KEY' shows one):");
    cr_assert(strstr(p.out, "PGIBWRPZ4BML  scale_kernel "), "%s", p.out);
    cr_assert(strstr(p.out, "SECONDGROUPK  scale_kernel "), "%s", p.out);
    tu_assert_line(p.out, tu_text("Benchmark one: vyre-bench run --triton KEY --dir %s", g_cache));
    tu_proc_free(&p);
    run(&p, ARGS("triton", "show", "no_such_kernel", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "no Triton group 'no_such_kernel'"), "%s", p.err);
    cr_assert(strstr(p.err, "hint: "), "%s", p.err);
    tu_proc_free(&p);
}

/* ---- show: the command that benchmarks a group ------------------------------ */

/* The value of line "<label> VALUE" of out, into buf. */
static const char *line_value(const char *out, const char *label, char *buf, size_t size)
{
    const char *at = strstr(out, label);
    cr_assert(at, "no '%s' in:\n%s", label, out);
    at += strlen(label);
    at += strspn(at, " ");
    size_t n = strcspn(at, "\n");
    cr_assert_lt(n, size);
    memcpy(buf, at, n);
    buf[n] = '\0';
    return buf;
}

Test(cachectl_triton, show_gives_the_command_that_benchmarks_a_kernel_group)
{
    tu_proc p;
    char cmd[2048];
    run(&p, ARGS("triton", "show", "PGIBWRPZ", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    /* Not the default cache: --dir names it. */
    cr_assert_str_eq(line_value(p.out, "\nBenchmark:", cmd, sizeof cmd),
                     tu_text("vyre-bench run --triton " KGROUP " --dir %s", g_cache));
    tu_proc_free(&p);
    run(&p, ARGS("triton", "show", "PGIBWRPZ", "--dir", g_cache, "--json"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    json_t *g = json_array_get(json_object_get(j, "groups"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(g, "command")), cmd);
    json_decref(j);
    tu_proc_free(&p);

    /* The default cache (TRITON_CACHE_DIR, as vyre-bench finds it): no --dir. */
    char env_dir[700];
    snprintf(env_dir, sizeof env_dir, "TRITON_CACHE_DIR=%s", g_cache);
    const char *const extra[] = {env_dir, NULL};
    const char *const env[] = {g_env_home, "TRITON_HOME", "XDG_CONFIG_HOME", "VYRE_PTX_CACHE_DIR",
                               NULL};
    tu_run_bin(&p, VYRE_CACHECTL_BIN, ARGS("triton", "show", KGROUP), env, extra);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Benchmark:       vyre-bench run --triton " KGROUP);
    tu_proc_free(&p);
    /* --dir naming the default cache is the default too. */
    tu_run_bin(&p, VYRE_CACHECTL_BIN, ARGS("triton", "show", KGROUP, "--dir", g_cache), env, extra);
    tu_assert_line(p.out, "Benchmark:       vyre-bench run --triton " KGROUP);
    tu_proc_free(&p);

    /* A launcher is no kernel: run --triton cannot name it. */
    run(&p, ARGS("triton", "show", LGROUP, "--dir", g_cache, "--json"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    j = json_of(&p);
    g = json_array_get(json_object_get(j, "groups"), 0);
    cr_assert(json_is_null(json_object_get(g, "command")), "%s", p.out);
    json_decref(j);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "show", LGROUP, "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_null(strstr(p.out, "Benchmark:"), "%s", p.out);
    tu_proc_free(&p);
}

/* The printed command, pasted into a shell with --dry-run added, infers
 * the kernel's spec: on a torch.compile cache in a folder whose name a
 * shell must have quoted (a space, a quote), TorchInductor's cache in the
 * environment as the model ran. */
Test(cachectl_triton, the_printed_command_runs_with_dry_run)
{
    char odd[700], ind[700], path_env[1200], bench_dir[600];
    snprintf(odd, sizeof odd, "%s/it's a cache", g_tmp);
    tu_copy_tree(VYRE_TEST_SOURCE_DIR "/fixtures/torch_block/cache/triton", odd);
    snprintf(ind, sizeof ind, "TORCHINDUCTOR_CACHE_DIR=%s/fixtures/torch_block/cache/inductor",
             VYRE_TEST_SOURCE_DIR);
    tu_proc p;
    run(&p, ARGS("triton", "show", "6K5JAYXE", "--dir", odd));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char cmd[2048];
    line_value(p.out, "\nBenchmark:", cmd, sizeof cmd);
    cr_assert_str_eq(cmd, tu_text("vyre-bench run --triton "
                                  "6K5JAYXEFU2OZXGO2XPHFA7EI56XJBMCNCTNQ2TE4VZF7DJMFJEQ --dir "
                                  "'%s/it'\\''s a cache'",
                                  g_tmp));
    tu_proc_free(&p);

    snprintf(bench_dir, sizeof bench_dir, "%s", VYRE_BENCH_BIN);
    *strrchr(bench_dir, '/') = '\0';
    snprintf(path_env, sizeof path_env, "PATH=%s:/usr/bin:/bin", bench_dir);
    char script[2400];
    snprintf(script, sizeof script, "%s --dry-run", cmd);
    char sh[] = "/bin/sh", c[] = "-c";
    char *const argv[] = {sh, c, script, NULL};
    const char *const env[] = {g_env_home,
                               path_env,
                               ind,
                               "TRITON_CACHE_DIR",
                               "TRITON_HOME",
                               "VYRE_CUDA_LIBRARY=/nonexistent",
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               NULL};
    tu_run(&p, argv, env);
    cr_assert_eq(p.exit_code, 0, "%s\n%s", p.out, p.err);
    tu_assert_line(p.out, "  group: 6K5JAYXEFU2OZXGO2XPHFA7EI56XJBMCNCTNQ2TE4VZF7DJMFJEQ of kernel "
                          "triton_per_fused_native_layer_norm_0 (Triton 3.6.0, sm_90): named by "
                          "its key");
    tu_assert_line(p.out, "dry run: 1 point would run; nothing was launched");
    tu_proc_free(&p);
}
