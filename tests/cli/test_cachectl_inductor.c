/*
 * test_cachectl_inductor.c - `vyre-cachectl inductor stats|ls|verify|
 * prune|clear` on a real TorchInductor cache made on an H100 with torch
 * 2.11 and Triton 3.6 (tests/fixtures/inductor/cache, paths neutralised to
 * /nonexistent/origin/...), copied into a fresh temp dir and damaged there:
 * a truncated .best_config, one naming a missing Triton group, symlinks, a
 * FIFO and a file vyre cannot read, an empty cache and a missing one.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
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

#define TGROUP "WK4TFEIYRLYBMYRR4OGQ3B4PZU7HIWIKPEAQ4WLIYKW5H6FJD57Q"
#define BEST   "bt/91dbf07d645711ebc936c694facd3254fa10be19624fe41233a31431373e3bf6.best_config"
#define KERNEL "bt/cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui.py"
#define FXG    "fxgraph/bn/fbnlqq6fq3iox6th74jmtp2uqbhvexikquy3mso6gq6akgsj37sa"
#define AOT    "aotautograd/a6gouvpd7yz5xpg6ahzotcotlilphl7hdjx3eemvtoon4bci3vwg"
#define BIG    "un/b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1.best_config"

static char g_tmp[512];
static char g_cache[600];
static char g_env_tmpdir[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    char src[512];
    snprintf(src, sizeof src, "%s/fixtures/inductor/cache", VYRE_TEST_SOURCE_DIR);
    tu_copy_tree(src, g_cache);
    snprintf(g_env_tmpdir, sizeof g_env_tmpdir, "TMPDIR=%s", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_inductor, .init = setup, .fini = teardown, .timeout = 120);

static void run(tu_proc *p, const char *const *args)
{
    const char *const env[] = {g_env_tmpdir, "TORCHINDUCTOR_CACHE_DIR", "USER=vyretest",
                               "LOGNAME",    "TRITON_CACHE_DIR",        NULL};
    tu_run_bin(p, VYRE_CACHECTL_BIN, args, env, NULL);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void cpath(char *out, size_t size, const char *rel)
{
    snprintf(out, size, "%s/%s", g_cache, rel);
}

static void put(const char *rel, const char *text)
{
    char p[1024];
    cpath(p, sizeof p, rel);
    tu_write_file(p, text, strlen(text));
}

/* Bytes on disk of rel ("" the whole cache), as du counts them: measured
 * on the filesystem the test runs on. */
static uint64_t disk(const char *rel)
{
    char p[1024];
    cpath(p, sizeof p, rel);
    return tu_disk_bytes(p);
}

static int exists(const char *rel)
{
    char p[1024];
    struct stat st;
    cpath(p, sizeof p, rel);
    return lstat(p, &st) == 0;
}

static json_t *json_of(const tu_proc *p)
{
    json_error_t je;
    json_t *j = json_loads(p->out, 0, &je);
    cr_assert(j, "not JSON (%s):\n%s", je.text, p->out);
    return j;
}

/* Sets atime and mtime at and below rel, never through a link. */
static struct timespec g_times[2];
static int set_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    cr_assert_eq(utimensat(AT_FDCWD, path, g_times, AT_SYMLINK_NOFOLLOW), 0, "%s", path);
    return 0;
}

static void age(const char *rel, long used_s_ago, long modified_s_ago)
{
    char p[1024];
    cpath(p, sizeof p, rel);
    time_t now = time(NULL);
    g_times[0] = (struct timespec){now - used_s_ago, 0};
    g_times[1] = (struct timespec){now - modified_s_ago, 0};
    cr_assert_eq(nftw(p, set_one, 16, FTW_PHYS), 0);
}

/* ls's line of path: it starts with head, then the size (right-aligned:
 * its column is as wide as the widest), and ends with the path. */
static void assert_row(const char *out, const char *head, uint64_t bytes, const char *path)
{
    const char *end = strstr(out, tu_text("  %s\n", path));
    cr_assert(end, "%s", out);
    const char *start = end;
    while (start > out && start[-1] != '\n')
        start--;
    cr_assert(strncmp(start, head, strlen(head)) == 0, "%s", out);
    const char *size = start + strlen(head);
    while (*size == ' ')
        size++;
    const char *want = tu_size_text(bytes);
    cr_assert(strncmp(size, want, strlen(want)) == 0 && size[strlen(want)] == ' ', "%s", out);
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

Test(cachectl_inductor, stats_and_ls_on_a_real_cache)
{
    tu_proc p;
    run(&p, ARGS("inductor", "stats", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Entries:                 7");
    tu_assert_line(p.out, "Files (inodes):          25");
    tu_assert_line(p.out, tu_text("Size:                    %s on disk (112.5 KiB apparent)",
                                  tu_size_text(disk(""))));
    tu_assert_line(p.out, "By kind:");
    assert_bucket(p.out, "kernel", 3,
                  disk(KERNEL) +
                      disk("un/cunlsrjymwphdyoeb6qufyczxlmlecbetfmuzlbcvcrshqsedqn6.py") +
                      disk("ug/cugu2wrvi42ympvxcz7cosp54cp4jpmt2zobtuqqtafqqyf77tfi.py"),
                  3);
    assert_bucket(p.out, "autotune", 1, disk(BEST), 1);
    assert_bucket(p.out, "fxgraph", 1, disk(FXG), 2);
    assert_bucket(p.out, "triton", 1, disk("triton/0/" TGROUP), 9);
    tu_proc_free(&p);
    run(&p, ARGS("inductor", "ls", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    /* The row model's table: a header, its rule, a line per entry; sizes
     * right-aligned to the widest. */
    cr_assert_eq(tu_count_lines(p.out), 9, "%s", p.out);
    cr_assert(strncmp(p.out, "KIND         FILES", 18) == 0, "%s", p.out);
    assert_row(p.out, "triton           9  ", disk("triton/0/" TGROUP), "triton/0/" TGROUP);
    assert_row(p.out, "autotune         1  ", disk(BEST), BEST);
    tu_proc_free(&p);
    run(&p, ARGS("inductor", "ls", "-q", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, FXG);
    cr_assert_eq(tu_count_lines(p.out), 7, "%s", p.out);
    tu_proc_free(&p);
}

Test(cachectl_inductor, json_and_the_default_location)
{
    char env[700];
    snprintf(env, sizeof env, "TORCHINDUCTOR_CACHE_DIR=%s", g_cache);
    const char *const extra[] = {env, NULL};
    const char *const base[] = {g_env_tmpdir, NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_CACHECTL_BIN, ARGS("inductor", "ls", "--json"), base, extra);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_of(&p);
    cr_assert_str_eq(json_string_value(json_object_get(j, "inductor_cache_dir_source")),
                     "TORCHINDUCTOR_CACHE_DIR");
    json_t *e = json_array_get(json_object_get(j, "entries"), 1);
    cr_assert_str_eq(json_string_value(json_object_get(e, "path")), BEST);
    cr_assert_str_eq(json_string_value(json_object_get(e, "kind")), "autotune");
    cr_assert_eq(json_integer_value(json_object_get(e, "bytes")), (json_int_t)disk(BEST));
    cr_assert_eq(json_integer_value(json_object_get(e, "apparent_bytes")), 256);
    json_decref(j);
    tu_proc_free(&p);
    tu_run_bin(&p, VYRE_CACHECTL_BIN, ARGS("inductor", "stats", "--json"), base, extra);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    j = json_of(&p);
    cr_assert_eq(json_integer_value(json_object_get(j, "bytes")), (json_int_t)disk(""));
    cr_assert_eq(json_integer_value(json_object_get(j, "apparent_bytes")), 115165);
    cr_assert_eq(json_integer_value(json_object_get(j, "files")), 25);
    json_t *k = json_array_get(json_object_get(j, "by_kind"), 4);
    cr_assert_str_eq(json_string_value(json_object_get(k, "kind")), "triton");
    cr_assert_eq(json_integer_value(json_object_get(k, "bytes")),
                 (json_int_t)disk("triton/0/" TGROUP));
    json_decref(j);
    tu_proc_free(&p);
    /* Nothing set: <TMPDIR>/torchinductor_<user>, which does not exist. */
    run(&p, ARGS("inductor", "stats"));
    cr_assert_eq(p.exit_code, 2);
    char want[800];
    snprintf(want, sizeof want, "'%s/torchinductor_vyretest' does not exist", g_tmp);
    cr_assert(strstr(p.err, want), "%s", p.err);
    cr_assert(strstr(p.err, "hint: "), "%s", p.err);
    tu_proc_free(&p);
}

Test(cachectl_inductor, empty_and_missing_caches)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/empty", g_tmp);
    cr_assert_eq(mkdir(dir, 0700), 0);
    tu_proc p;
    run(&p, ARGS("inductor", "stats", "--dir", dir));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Entries:                 0");
    tu_proc_free(&p);
    run(&p, ARGS("inductor", "verify", "--dir", dir));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "0 kernels, 0 autotune results, 0 Triton groups checked: 0 unusable, "
                          "0 problems");
    tu_proc_free(&p);
    /* The empty folder's own block (du counts it) is within the limit. */
    run(&p, ARGS("inductor", "prune", "--max-size", "64K", "--dir", dir));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    snprintf(dir, sizeof dir, "%s/nope", g_tmp);
    run(&p, ARGS("inductor", "verify", "--dir", dir));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "/nope' does not exist"), "%s", p.err);
    cr_assert(strstr(p.err, "hint: Inductor creates it on its first compile"), "%s", p.err);
    tu_proc_free(&p);
}

Test(cachectl_inductor, usage_errors)
{
    static const char *const cases[][4] = {
        {"stat", NULL, NULL, "unknown action 'stat'"},
        {"ls", "--repair", NULL, "--repair is for 'inductor verify'"},
        {"verify", "--dry-run", NULL, "--dry-run is for 'inductor prune' and 'clear'"},
        {"prune", NULL, NULL, "prune needs a bound"},
        {"prune", "--max-size", "lots", "--max-size"},
        {"prune", "--max-age", "soon", "--max-age"},
        {"clear", NULL, NULL, "refusing without --yes"},
        {"ls", "--yes", NULL, "--yes is for 'inductor clear'"},
        {"stats", "--max-size", "1G", "are for 'inductor prune'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tu_proc p;
        const char *args[7] = {"inductor", cases[i][0], "--dir", g_cache, NULL, NULL, NULL};
        args[4] = cases[i][1];
        args[5] = cases[i][2];
        run(&p, args);
        cr_assert_eq(p.exit_code, 2, "%s: %s", cases[i][0], p.err);
        cr_assert(strstr(p.err, cases[i][3]), "%s", p.err);
        cr_assert(strstr(p.err, "try 'vyre-cachectl inductor --help'"), "%s", p.err);
        tu_proc_free(&p);
    }
    tu_proc p;
    run(&p, ARGS("inductor"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "inductor needs an action"), "%s", p.err);
    tu_proc_free(&p);
}

static void verify_finds(const char *kind, const char *needle)
{
    tu_proc p;
    run(&p, ARGS("inductor", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    char line[128];
    snprintf(line, sizeof line, "%s: ", kind);
    const char *at = strstr(p.out, line);
    cr_assert(at && strstr(at, needle), "no '%s' problem with '%s' in:\n%s", kind, needle, p.out);
    tu_proc_free(&p);
}

Test(cachectl_inductor, verify_clean_says_what_it_cannot_check)
{
    tu_proc p;
    run(&p, ARGS("inductor", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "3 kernels, 1 autotune result, 1 Triton group checked: 0 unusable, "
                          "0 problems");
    cr_assert(strstr(p.out, "not checked: 1 FX graph entry (pickles"), "%s", p.out);
    cr_assert(strstr(p.out, "not checked: 1 AOTAutograd entry (pickles"), "%s", p.out);
    tu_assert_line(p.out, "not parsed: kernels are checked as UTF-8 text, not as Python");
    tu_proc_free(&p);
}

Test(cachectl_inductor, verify_a_truncated_autotune_result)
{
    char path[1024];
    cpath(path, sizeof path, BEST);
    cr_assert_eq(truncate(path, 100), 0);
    verify_finds("bad-autotune", "'" BEST "' is not a JSON object");
}

Test(cachectl_inductor, verify_an_autotune_result_naming_a_missing_triton_group)
{
    char path[1024];
    cpath(path, sizeof path, "triton/0/" TGROUP);
    tu_rm_rf(path);
    verify_finds("missing-triton-group", "names Triton group '" TGROUP "', which is not in the "
                                         "nested Triton cache");
}

Test(cachectl_inductor, verify_links_and_files_it_cannot_read)
{
    char path[1024];
    cpath(path, sizeof path, "bt/link.py");
    cr_assert_eq(symlink("../nothing", path), 0);
    cpath(path, sizeof path, "ug/pipe.best_config");
    cr_assert_eq(mkfifo(path, 0600), 0);
    /* More than verify reads of a .best_config (1 MiB): not read, said so. */
    cpath(path, sizeof path, BIG);
    char *big = calloc(1, (1 << 20) + 2);
    memset(big, ' ', (1 << 20) + 1);
    tu_write_file(path, big, (1 << 20) + 1);
    free(big);
    verify_finds("unreadable", "'" BIG "' cannot be read: more than the 1 MiB read");
    verify_finds("link", "'bt/link.py' is a symbolic link or special file, not followed");
    verify_finds("link", "'ug/pipe.best_config' is a symbolic link or special file");
    if (geteuid() != 0) { /* root reads a mode-000 file */
        cpath(path, sizeof path, KERNEL);
        cr_assert_eq(chmod(path, 0), 0);
        verify_finds("unreadable", "kernel '" KERNEL "' cannot be read");
    }
}

Test(cachectl_inductor, verify_a_bad_kernel_and_the_nested_triton_cache)
{
    char path[1024];
    cpath(path, sizeof path, KERNEL);
    tu_write_file(path, "x = '\xc3'\n", 8);
    cpath(path, sizeof path, "triton/0/" TGROUP "/triton_per_fused_prepare_softmax_online_0.cubin");
    cr_assert_eq(truncate(path, 100), 0);
    verify_finds("bad-kernel", "kernel '" KERNEL "' is not UTF-8 text");
    verify_finds("bad-cubin", "triton/0: ");
}

/* A nested Triton group is an entry of its own: its check is Triton's
 * (each message naming the device), and --repair moves the whole group
 * under the path it had, as it moves a kernel. */
Test(cachectl_inductor, verify_repair_moves_a_bad_nested_triton_group_whole)
{
    char path[1024];
    cpath(path, sizeof path, "triton/0/" TGROUP "/triton_per_fused_prepare_softmax_online_0.cubin");
    cr_assert_eq(truncate(path, 100), 0);
    age("triton/0/" TGROUP, 120, 120); /* damaged long ago: no writer is at it */
    tu_proc p;
    run(&p, ARGS("inductor", "verify", "--repair", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    const char *l =
        strstr(p.out, "bad-cubin: triton/0: 'triton_per_fused_prepare_softmax_online_0");
    cr_assert(l && strstr(l, " (moved to .vyre-quarantine)\n"), "%s", p.out);
    tu_assert_line(p.out, "1 entry moved to .vyre-quarantine, 0 could not be moved");
    tu_proc_free(&p);
    cr_assert(!exists("triton/0/" TGROUP), "the bad group is still where Triton looks");
    cr_assert(exists(".vyre-quarantine/triton/0/" TGROUP "/triton_per_fused_prepare_softmax_"
                     "online_0.cubin"),
              "the group was not kept whole in the quarantine");
    /* What is left: the autotune result names the moved group, a miss
     * Inductor compiles again, not an unusable entry. */
    run(&p, ARGS("inductor", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "missing-triton-group: '" BEST "' names Triton group '" TGROUP "'"),
              "%s", p.out);
    cr_assert(strstr(p.out, "0 Triton groups checked: 0 unusable, 1 problem\n"), "%s", p.out);
    tu_proc_free(&p);
}

/* A move that fails is said, never claimed: the one report of verify
 * (verify_print.c) says it as triton verify does, and the exit is 1. */
Test(cachectl_inductor, verify_repair_says_a_failed_move)
{
    put(BEST, "{\"num_warps\": 2}");
    age(BEST, 120, 120); /* written long ago: no writer is at it */
    char q[1024];
    cpath(q, sizeof q, ".vyre-quarantine");
    tu_write_file(q, "in the way", 10);
    tu_proc p;
    run(&p, ARGS("inductor", "verify", "--repair", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(!strstr(p.out, "(moved to"), "%s", p.out);
    cr_assert(strstr(p.out, "bad-autotune: '" BEST "' has no integer 'num_stages'\n"), "%s", p.out);
    const char *f = strstr(p.out, "quarantine-failed: " BEST ": ");
    cr_assert(f && strstr(f, " (not moved: Inductor still finds it)\n"), "%s", p.out);
    tu_assert_line(p.out, "0 entries moved to .vyre-quarantine, 1 could not be moved");
    tu_proc_free(&p);
    cr_assert(exists(BEST), "the entry moved after all");
}

/* Issue 35: an entry written just now (a writer may still be at it) is
 * reported and left where it is, as prune leaves it; aged, it is moved. */
Test(cachectl_inductor, verify_repair_leaves_an_entry_changed_less_than_a_minute_ago)
{
    put(BEST, "{\"num_warps\": 2}");
    tu_proc p;
    run(&p, ARGS("inductor", "verify", "--repair", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "bad-autotune: '" BEST "' has no integer 'num_stages' (left alone: "
                            "changed less than a minute ago)\n"),
              "%s", p.out);
    tu_assert_line(p.out, "1 entry left alone: changed less than a minute ago (a writer may "
                          "still be creating it; run 'vyre-cachectl inductor verify --repair' "
                          "again later)");
    tu_proc_free(&p);
    cr_assert(exists(BEST), "the entry being written was moved");
    age(BEST, 120, 120);
    run(&p, ARGS("inductor", "verify", "--repair", "--dir", g_cache));
    cr_assert(strstr(p.out, "has no integer 'num_stages' (moved to .vyre-quarantine)"), "%s",
              p.out);
    tu_proc_free(&p);
    cr_assert(!exists(BEST));
}

Test(cachectl_inductor, verify_repair_quarantines_never_deletes)
{
    put(BEST, "{\"num_warps\": 2}");
    age(BEST, 120, 120); /* written long ago: no writer is at it */
    tu_proc p;
    run(&p, ARGS("inductor", "verify", "--repair", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "has no integer 'num_stages' (moved to .vyre-quarantine)"), "%s",
              p.out);
    tu_proc_free(&p);
    cr_assert(!exists(BEST));
    char path[1024];
    cpath(path, sizeof path, ".vyre-quarantine/" BEST);
    size_t len;
    char *kept = tu_read_file(path, &len);
    cr_assert(kept, "the bad entry was not kept in the quarantine");
    cr_assert_str_eq(kept, "{\"num_warps\": 2}");
    free(kept);
    run(&p, ARGS("inductor", "verify", "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    json_t *j = json_of(&p);
    cr_assert(json_is_true(json_object_get(j, "clean")));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "checked"), "autotune")), 0);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "not_checked"), "fxgraph")),
                 1);
    json_decref(j);
    tu_proc_free(&p);
}

/* Everything modified 2 hours ago; the Triton group used least recently,
 * the kernel most recently. */
static void age_all(void)
{
    age("", 3600, 7200);
    age("triton/0/" TGROUP, 7000, 7200);
    age(AOT, 6000, 7200);
    age(KERNEL, 60, 7200);
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

Test(cachectl_inductor, prune_by_size_least_recently_used_first)
{
    age_all();
    tu_proc p;
    /* Sizes on disk, as du counts: the cache less the Triton group fits. */
    uint64_t total = disk(""), group = disk("triton/0/" TGROUP), aot = disk(AOT);
    char limit[32];
    snprintf(limit, sizeof limit, "%lluB", (unsigned long long)(total - group));
    run(&p, ARGS("inductor", "prune", "--max-size", limit, "--dry-run", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, tu_text("would remove triton      %10s  triton/0/" TGROUP,
                                    tu_size_text(group))),
              "%s", p.out);
    tu_assert_line(p.out, tu_text("Would remove 1 entry (%s); would leave 6 (%s)",
                                  tu_size_text(group), tu_size_text(total - group)));
    tu_proc_free(&p);
    cr_assert(exists("triton/0/" TGROUP), "--dry-run removed it");
    /* Then the AOTAutograd entry, used next least recently. */
    snprintf(limit, sizeof limit, "%lluB", (unsigned long long)(total - group - aot));
    run(&p, ARGS("inductor", "prune", "--max-size", limit, "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, tu_text("Removed 2 entries (%s); left 5 (%s)", tu_size_text(group + aot),
                                  tu_size_text(total - group - aot)));
    cr_assert_eq(tu_du_sk(g_cache) * 1024, total - group - aot, "the report says what du counts");
    tu_proc_free(&p);
    /* The same counts in --json, under the kind's names. */
    run(&p, ARGS("inductor", "prune", "--max-size", limit, "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    json_t *j = json_of(&p);
    static const char *const counts[] = {"removed_entries", "removed_bytes",  "kept_entries",
                                         "kept_bytes",      "young_entries",  "failed_entries",
                                         "trash_finished",  "foreign_entries"};
    assert_keys_in_order(j, counts, sizeof counts / sizeof *counts);
    cr_assert_eq(json_integer_value(json_object_get(j, "removed_entries")), 0, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(j, "kept_bytes")),
                 (json_int_t)(total - group - aot), "%s", p.out);
    json_decref(j);
    tu_proc_free(&p);
    cr_assert(!exists("triton/0/" TGROUP) && !exists(AOT));
    cr_assert(exists(KERNEL) && exists(FXG) && exists(BEST));
}

Test(cachectl_inductor, prune_by_age_and_clear_leave_young_entries_links_and_others)
{
    age_all();
    age(FXG, 10, 10); /* written 10 s ago: a compile may be running */
    put("locks", "x");
    char outside[800], path[1024];
    snprintf(outside, sizeof outside, "%s/outside", g_tmp);
    cr_assert_eq(mkdir(outside, 0700), 0);
    snprintf(path, sizeof path, "%s/keep.py", outside);
    tu_write_file(path, "x", 1);
    cpath(path, sizeof path, "zz");
    cr_assert_eq(symlink(outside, path), 0);
    age("locks", 99999, 99999);
    tu_proc p;
    run(&p, ARGS("inductor", "prune", "--max-age", "90m", "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    json_t *j = json_of(&p);
    cr_assert_eq(json_integer_value(json_object_get(j, "removed_entries")), 2, "%s", p.out);
    cr_assert_eq(json_integer_value(json_object_get(j, "young_entries")), 1, "%s", p.out);
    json_decref(j);
    tu_proc_free(&p);
    run(&p, ARGS("inductor", "clear", "--yes", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "Left 1 entry modified in the last minute (a compile may be writing it)");
    tu_proc_free(&p);
    cr_assert(exists(FXG), "a young entry was removed");
    cr_assert(exists("locks"), "an entry of another kind was removed");
    cr_assert(exists("zz"), "a link was removed");
    snprintf(path, sizeof path, "%s/keep.py", outside);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "what a link named was removed");
    cr_assert(!exists(KERNEL) && !exists(BEST) && !exists("triton/0/" TGROUP));
    /* Over --max-size with only what may not go: said, exit 1. */
    run(&p, ARGS("inductor", "prune", "--max-size", "1K", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(strstr(p.err, "could not bring the TorchInductor cache under --max-size 1.0 KiB"),
              "%s", p.err);
    tu_proc_free(&p);
}

/* Issue 33: a cache others may write is not one vyre changes: every command
 * that removes or moves files refuses it with the hint; the read-only ones
 * still read it. */
Test(cachectl_inductor, a_cache_others_may_write_is_refused_for_every_change)
{
    age_all();
    cr_assert_eq(chmod(g_cache, 0757), 0);
    static const char *const cmds[][4] = {
        {"prune", "--max-age", "1d", NULL},
        {"clear", "--yes", NULL, NULL},
        {"verify", "--repair", NULL, NULL},
    };
    char want[1400];
    snprintf(want, sizeof want,
             "vyre-cachectl: error: TorchInductor cache '%s' is writable by group or others "
             "(mode 0757): refusing to change files others could plant",
             g_cache);
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        tu_proc p;
        run(&p, ARGS("inductor", "--dir", g_cache, cmds[i][0], cmds[i][1], cmds[i][2]));
        cr_assert_eq(p.exit_code, 2, "%s: %s%s", cmds[i][0], p.out, p.err);
        tu_assert_line(p.err, want);
        cr_assert(strstr(p.err, "hint: run 'chmod go-w' on it"), "%s", p.err);
        cr_assert_str_eq(p.out, "");
        tu_proc_free(&p);
    }
    cr_assert(exists(KERNEL) && exists(FXG) && exists(AOT) && exists(BEST));
    cr_assert(!exists(".vyre-quarantine"));
    static const char *const reads[] = {"stats", "ls", "verify"};
    for (size_t i = 0; i < 3; i++) {
        tu_proc p;
        run(&p, ARGS("inductor", "--dir", g_cache, reads[i]));
        cr_assert_eq(p.exit_code, 0, "%s: %s%s", reads[i], p.out, p.err);
        tu_proc_free(&p);
    }
}

Test(cachectl_inductor, a_cache_of_another_user_is_refused_for_prune)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give the cache to another user (uid 65534); the mode "
                     "check is tested above");
    age_all();
    cr_assert_eq(chown(g_cache, 65534, 65534), 0);
    tu_proc p;
    run(&p, ARGS("inductor", "--dir", g_cache, "prune", "--max-age", "1d"));
    cr_assert_eq(p.exit_code, 2, "%s%s", p.out, p.err);
    char want[1400];
    snprintf(want, sizeof want,
             "vyre-cachectl: error: TorchInductor cache '%s' is owned by uid 65534, not by you "
             "(uid 0): refusing to change files another user controls",
             g_cache);
    tu_assert_line(p.err, want);
    cr_assert(strstr(p.err, "hint: run the command as the cache's owner"), "%s", p.err);
    tu_proc_free(&p);
    cr_assert(exists(KERNEL) && exists(FXG) && exists(AOT));
}

/* Issue 33: `go/main.py` went as a "kernel". Names Inductor never writes
 * are foreign: prune and clear leave them and say so; verify reports them. */
Test(cachectl_inductor, foreign_names_survive_prune_and_clear_and_are_reported)
{
    char go[1024];
    cpath(go, sizeof go, "go");
    cr_assert_eq(mkdir(go, 0700), 0);
    put("go/main.py", "package main\n");
    put("bt/helper.py", "x = 1\n");
    age_all();
    age("go", 9000, 9000);
    age("bt/helper.py", 9000, 9000);
    tu_proc p;
    run(&p, ARGS("inductor", "--dir", g_cache, "clear", "--yes"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert(exists("go/main.py") && exists("bt/helper.py"));
    cr_assert(!exists(KERNEL), "Inductor's kernels still go");
    tu_assert_line(p.out,
                   tu_text("left foreign     %10s  go/main.py", tu_size_text(disk("go/main.py"))));
    tu_assert_line(
        p.out, tu_text("left foreign     %10s  bt/helper.py", tu_size_text(disk("bt/helper.py"))));
    tu_assert_line(p.out, "Left 2 foreign entries: not names TorchInductor writes, never removed");
    for (const char *l = p.out; (l = strstr(l, "removed ")); l++)
        cr_assert(strncmp(strchr(l, '\n') - 10, "go/main.py", 10) &&
                      strncmp(strchr(l, '\n') - 9, "helper.py", 9),
                  "a foreign file was removed:\n%s", p.out);
    tu_proc_free(&p);
    run(&p, ARGS("inductor", "--dir", g_cache, "clear", "--yes", "--json"));
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    json_t *j = json_of(&p);
    cr_assert_eq(json_integer_value(json_object_get(j, "foreign_entries")), 2, "%s", p.out);
    json_decref(j);
    tu_proc_free(&p);
    run(&p, ARGS("inductor", "--dir", g_cache, "verify", "--repair"));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "foreign: 'go/main.py' is not a name TorchInductor gives a kernel, an "
                          "autotune result or an entry: not its file, left alone");
    cr_assert(!strstr(p.out, "moved to"), "a foreign file was moved:\n%s", p.out);
    tu_proc_free(&p);
    run(&p, ARGS("inductor", "--dir", g_cache, "ls"));
    cr_assert(
        strstr(p.out, "go/main.py  (foreign: not a name TorchInductor writes, never removed)"),
        "%s", p.out);
    tu_proc_free(&p);
    cr_assert(exists("go/main.py") && exists("bt/helper.py"));
}
