/*
 * test_inductor.c - reading, verifying and pruning TorchInductor's cache
 * (vyre/inductor.h) on a real cache made on an H100 with torch 2.11 and
 * Triton 3.6 (tests/fixtures/inductor/cache: three kernels, one autotune
 * result, one FX graph and one AOTAutograd entry cut to 4 KiB, the Triton
 * group the autotune result names), copied into a fresh temp dir and
 * damaged there.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/foreign/foreign_internal.h"
#include "cache/foreign/inductor_internal.h"
#include "testutil.h"
#include "vyre/vyre.h"

#define TGROUP  "WK4TFEIYRLYBMYRR4OGQ3B4PZU7HIWIKPEAQ4WLIYKW5H6FJD57Q"
#define BEST    "bt/91dbf07d645711ebc936c694facd3254fa10be19624fe41233a31431373e3bf6.best_config"
#define KERNEL  "bt/cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui.py"
#define KERNEL2 "ug/cugu2wrvi42ympvxcz7cosp54cp4jpmt2zobtuqqtafqqyf77tfi.py"
#define KERNEL3 "un/cunlsrjymwphdyoeb6qufyczxlmlecbetfmuzlbcvcrshqsedqn6.py"
#define FXG     "fxgraph/bn/fbnlqq6fq3iox6th74jmtp2uqbhvexikquy3mso6gq6akgsj37sa"
#define AOT     "aotautograd/a6gouvpd7yz5xpg6ahzotcotlilphl7hdjx3eemvtoon4bci3vwg"

static char g_tmp[512];
static char g_cache[600];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    char src[512];
    snprintf(src, sizeof src, "%s/fixtures/inductor/cache", VYRE_TEST_SOURCE_DIR);
    tu_copy_tree(src, g_cache);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(inductor, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t disk_of(const char *rel);

static void cpath(char *out, size_t size, const char *rel)
{
    int n = snprintf(out, size, "%s/%s", g_cache, rel);
    cr_assert(n >= 0 && (size_t)n < size, "path too long: %s/%s", g_cache, rel);
}

static void put(const char *rel, const char *text)
{
    char p[1024];
    cpath(p, sizeof p, rel);
    tu_write_file(p, text, strlen(text));
}

static int exists(const char *rel)
{
    char p[1024];
    struct stat st;
    cpath(p, sizeof p, rel);
    return lstat(p, &st) == 0;
}

/* Sets atime and mtime of everything at and below a path, never through a
 * link (nftw FTW_PHYS). */
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

static void scan(vyre_inductor_cache *c)
{
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_inductor_cache_scan(g_cache, VYRE_INDUCTOR_SCAN_WRITE, c, &err), 0, "%s",
                 err.message);
}

static const vyre_inductor_entry *entry(const vyre_inductor_cache *c, const char *path)
{
    for (size_t i = 0; i < c->n_entries; i++)
        if (!strcmp(c->entries[i].path, path))
            return &c->entries[i];
    cr_assert_fail("no entry '%s'", path);
    return NULL;
}

static size_t count_kind(const vyre_inductor_cache *c, vyre_inductor_kind k)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_entries; i++)
        n += c->entries[i].kind == k;
    return n;
}

Test(inductor, scan_reads_a_real_cache_by_kind)
{
    vyre_inductor_cache c;
    scan(&c);
    cr_assert_eq(count_kind(&c, VYRE_INDUCTOR_KERNEL), 3);
    cr_assert_eq(count_kind(&c, VYRE_INDUCTOR_AUTOTUNE), 1);
    cr_assert_eq(count_kind(&c, VYRE_INDUCTOR_FXGRAPH), 1);
    cr_assert_eq(count_kind(&c, VYRE_INDUCTOR_AOTAUTOGRAD), 1);
    cr_assert_eq(count_kind(&c, VYRE_INDUCTOR_TRITON), 1);
    cr_assert_eq(count_kind(&c, VYRE_INDUCTOR_OTHER), 0);
    cr_assert_eq(c.n_entries, 7);
    /* Every file of the fixture, and every inode (find | wc -l, less the
     * cache folder itself); bytes on disk as du counts them, the apparent
     * bytes beside. */
    cr_assert_eq(c.bytes, disk_of(""), "du -s of the cache");
    cr_assert_eq(c.bytes, tu_du_sk(g_cache) * 1024);
    cr_assert_eq(c.apparent_bytes, 115165);
    cr_assert_eq(c.files, 25);
    const vyre_inductor_entry *e = entry(&c, "triton/0/" TGROUP);
    cr_assert(e->dir);
    cr_assert_eq(e->files, 9);
    cr_assert_eq(e->bytes, disk_of("triton/0/" TGROUP));
    cr_assert_eq(e->apparent_bytes, 1325 + 13280 + 1138 + 14822 + 22704 + 17086 + 9176 + 7942);
    e = entry(&c, FXG);
    cr_assert(e->dir && e->files == 2 && e->apparent_bytes == 4096);
    cr_assert_eq(e->bytes, disk_of(FXG));
    e = entry(&c, BEST);
    cr_assert(!e->dir && !e->link && e->files == 1 && e->apparent_bytes == 256);
    cr_assert_eq(e->bytes, disk_of(BEST));
    cr_assert_eq(c.n_triton, 1);
    cr_assert_str_eq(c.triton[0].device, "0");
    cr_assert_str_eq(c.triton[0].cache.groups[0].name, "triton_per_fused_prepare_softmax_online_0");
    cr_assert_str_eq(vyre_inductor_kind_name(VYRE_INDUCTOR_AOTAUTOGRAD), "aotautograd");
    vyre_inductor_cache_release(&c);
    vyre_inductor_cache_release(&c);
}

Test(inductor, last_use_is_the_newest_atime_of_files_not_of_folders)
{
    age(FXG, 7200, 7200);
    char f[1024];
    snprintf(f, sizeof f, "%s/" FXG "/nonobrnxqgtvks6z4nt3t76xoacreikfomjx6srs5yf76iklvmx",
             g_cache);
    time_t now = time(NULL);
    struct timespec t[2] = {{now - 600, 0}, {now - 7200, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, f, t, 0), 0);
    vyre_inductor_cache c;
    scan(&c);
    const vyre_inductor_entry *e = entry(&c, FXG);
    /* Listing the folder moves its atime; only the file's counts. */
    cr_assert_eq(e->last_use_ns / 1000000000, now - 600);
    cr_assert_eq(e->mtime_ns / 1000000000, now - 7200);
    vyre_inductor_cache_release(&c);
}

Test(inductor, missing_not_a_dir_and_empty)
{
    vyre_inductor_cache c;
    vyre_error err;
    vyre_error_clear(&err);
    char p[1024];
    snprintf(p, sizeof p, "%s/nope", g_tmp);
    cr_assert_eq(vyre_inductor_cache_scan(p, 0, &c, &err), VYRE_ENOENT);
    cr_assert(strstr(err.message, "does not exist"), "%s", err.message);
    cr_assert(strstr(err.hint, "TORCHINDUCTOR_CACHE_DIR"), "%s", err.hint);
    cpath(p, sizeof p, KERNEL);
    cr_assert_eq(vyre_inductor_cache_scan(p, 0, &c, &err), VYRE_EINVAL);
    snprintf(p, sizeof p, "%s/empty", g_tmp);
    cr_assert_eq(mkdir(p, 0700), 0);
    cr_assert_eq(vyre_inductor_cache_scan(p, 0, &c, &err), 0);
    cr_assert_eq(c.n_entries, 0);
    cr_assert_eq(c.files, 0);
    vyre_inductor_report r;
    cr_assert_eq(vyre_inductor_verify(&c, 0, &r, &err), 0);
    cr_assert_eq(r.n_problems, 0);
    vyre_inductor_report_release(&r);
    vyre_inductor_cache_release(&c);
}

static void verify(vyre_inductor_report *r)
{
    vyre_inductor_cache c;
    scan(&c);
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_inductor_verify(&c, 0, r, &err), 0, "%s", err.message);
    vyre_inductor_cache_release(&c);
}

static const vyre_inductor_problem *find_problem(const vyre_inductor_report *r, const char *kind,
                                                 const char *needle)
{
    for (size_t i = 0; i < r->n_problems; i++)
        if (!strcmp(r->problems[i].kind, kind) && strstr(r->problems[i].message, needle))
            return &r->problems[i];
    for (size_t i = 0; i < r->n_problems; i++)
        cr_log_error("%s: %s", r->problems[i].kind, r->problems[i].message);
    cr_assert_fail("no '%s' problem with '%s'", kind, needle);
    return NULL;
}

Test(inductor, verify_a_clean_cache_and_what_it_cannot_check)
{
    vyre_inductor_report r;
    verify(&r);
    for (size_t i = 0; i < r.n_problems; i++)
        cr_log_error("%s: %s", r.problems[i].kind, r.problems[i].message);
    cr_assert_eq(r.n_problems, 0);
    cr_assert_eq(r.checked[VYRE_INDUCTOR_KERNEL], 3);
    cr_assert_eq(r.checked[VYRE_INDUCTOR_AUTOTUNE], 1);
    cr_assert_eq(r.checked[VYRE_INDUCTOR_TRITON], 1);
    cr_assert_eq(r.not_checked[VYRE_INDUCTOR_FXGRAPH], 1);
    cr_assert_eq(r.not_checked[VYRE_INDUCTOR_AOTAUTOGRAD], 1);
    cr_assert_eq(r.hashes_unchecked, 0);
    vyre_inductor_report_release(&r);
}

Test(inductor, verify_a_truncated_autotune_result)
{
    char p[1024];
    cpath(p, sizeof p, BEST);
    cr_assert_eq(truncate(p, 100), 0);
    vyre_inductor_report r;
    verify(&r);
    const vyre_inductor_problem *q = find_problem(&r, "bad-autotune", "is not a JSON object");
    cr_assert(q->entry_bad);
    cr_assert_str_eq(q->entry, BEST);
    cr_assert_eq(r.n_problems, 1);
    vyre_inductor_report_release(&r);
}

Test(inductor, verify_autotune_fields)
{
    put(BEST, "{\"XBLOCK\": 1, \"num_warps\": \"2\", \"num_stages\": 1, \"configs_hash\": \"ab\"}");
    vyre_inductor_report r;
    verify(&r);
    find_problem(&r, "bad-autotune", "has no integer 'num_warps'");
    vyre_inductor_report_release(&r);
    put(BEST, "[1, 2]");
    verify(&r);
    find_problem(&r, "bad-autotune", "another JSON value");
    vyre_inductor_report_release(&r);
}

Test(inductor, verify_an_autotune_result_naming_a_missing_triton_group)
{
    put(BEST, "{\"num_warps\": 2, \"num_stages\": 1, \"configs_hash\": \"ab\", "
              "\"triton_cache_hash\": \"NOSUCHGROUP\"}");
    vyre_inductor_report r;
    verify(&r);
    const vyre_inductor_problem *q =
        find_problem(&r, "missing-triton-group", "names Triton group 'NOSUCHGROUP'");
    cr_assert(!q->entry_bad, "Inductor compiles the config again: the entry is usable");
    vyre_inductor_report_release(&r);
    /* Without a nested Triton cache (TRITON_CACHE_DIR was set), nothing to
     * look it up in: counted, not a problem. */
    char p[1024];
    cpath(p, sizeof p, "triton");
    tu_rm_rf(p);
    verify(&r);
    cr_assert_eq(r.n_problems, 0);
    cr_assert_eq(r.hashes_unchecked, 1);
    vyre_inductor_report_release(&r);
}

Test(inductor, verify_kernels_as_utf8_text)
{
    char p[1024];
    cpath(p, sizeof p, KERNEL);
    tu_write_file(p, "import x\n\xff\n", 11);
    cpath(p, sizeof p, KERNEL2);
    tu_write_file(p, "a\0b", 3);
    cpath(p, sizeof p, KERNEL3);
    tu_write_file(p, "\xe2\x82", 2); /* a character cut at the end */
    vyre_inductor_report r;
    verify(&r);
    find_problem(&r, "bad-kernel", "an invalid byte at byte 9");
    find_problem(&r, "bad-kernel", "a NUL byte at byte 1");
    find_problem(&r, "bad-kernel", "a cut character");
    vyre_inductor_report_release(&r);
}

Test(inductor, verify_links_and_files_it_cannot_read_without_blocking)
{
    char p[1024], outside[1024];
    snprintf(outside, sizeof outside, "%s/outside.py", g_tmp);
    tu_write_file(outside, "\xff", 1); /* would be bad-kernel if followed */
    cpath(p, sizeof p, "bt/linked.py");
    cr_assert_eq(symlink(outside, p), 0);
    cpath(p, sizeof p, "bt/fifo.best_config");
    cr_assert_eq(mkfifo(p, 0600), 0);
    char fx[1024];
    snprintf(fx, sizeof fx, "%s/" FXG "/link", g_cache);
    cr_assert_eq(symlink("/", fx), 0);
    vyre_inductor_report r;
    verify(&r);
    find_problem(&r, "link", "'bt/linked.py' is a symbolic link or special file");
    find_problem(&r, "link", "'bt/fifo.best_config' is a symbolic link or special file");
    find_problem(&r, "link", "'" FXG "' holds 1 symbolic link");
    cr_assert_eq(r.n_problems, 3);
    vyre_inductor_report_release(&r);
}

Test(inductor, verify_a_file_it_cannot_read)
{
    if (geteuid() == 0)
        cr_skip_test("root reads a mode-000 file");
    char p[1024];
    cpath(p, sizeof p, BEST);
    cr_assert_eq(chmod(p, 0), 0);
    vyre_inductor_report r;
    verify(&r);
    find_problem(&r, "unreadable", "cannot be read");
    vyre_inductor_report_release(&r);
}

Test(inductor, verify_the_nested_triton_cache)
{
    char p[1024];
    cpath(p, sizeof p, "triton/0/" TGROUP "/triton_per_fused_prepare_softmax_online_0.cubin");
    cr_assert_eq(truncate(p, 100), 0);
    vyre_inductor_report r;
    verify(&r);
    const vyre_inductor_problem *q = find_problem(&r, "bad-cubin", "triton/0: ");
    cr_assert(q->entry_bad);
    cr_assert_str_eq(q->entry, "triton/0/" TGROUP);
    vyre_inductor_report_release(&r);
}

Test(inductor, quarantine_moves_never_deletes)
{
    vyre_error err;
    vyre_error_clear(&err);
    vyre_inductor_cache q;
    scan(&q);
    cr_assert_eq(vyre__inductor_quarantine(&q, BEST, &err), 0, "%s", err.message);
    cr_assert(!exists(BEST));
    cr_assert(exists(".vyre-quarantine/" BEST));
    put(BEST, "{}");
    cr_assert_eq(vyre__inductor_quarantine(&q, BEST, &err), 0, "%s", err.message);
    cr_assert(exists(".vyre-quarantine/" BEST ".1"));
    cr_assert_eq(vyre__inductor_quarantine(&q, "triton/0/" TGROUP, &err), 0, "%s", err.message);
    cr_assert(exists(".vyre-quarantine/triton/0/" TGROUP "/triton_per_fused_prepare_softmax_"
                     "online_0.cubin"));
    cr_assert_eq(vyre__inductor_quarantine(&q, "../x", &err), VYRE_EINVAL);
    cr_assert_eq(vyre__inductor_quarantine(&q, "bt/nope.py", &err), VYRE_ENOENT);
    /* Through a link: refused, nothing moved. */
    char p[1024];
    cpath(p, sizeof p, "zz");
    cr_assert_eq(symlink(g_tmp, p), 0);
    cr_assert_eq(vyre__inductor_quarantine(&q, "zz/cache", &err), VYRE_EINVAL);
    vyre_inductor_cache_release(&q);
    /* The quarantine is vyre's: not an entry. */
    vyre_inductor_cache c;
    scan(&c);
    for (size_t i = 0; i < c.n_entries; i++)
        cr_assert(strncmp(c.entries[i].path, ".vyre", 5), "%s", c.entries[i].path);
    vyre_inductor_cache_release(&c);
}

static void prune(const vyre_inductor_prune_opts *o, vyre_inductor_prune_result *res)
{
    vyre_inductor_cache c;
    scan(&c);
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_inductor_prune(&c, o, NULL, NULL, res, &err), 0, "%s", err.message);
    vyre_inductor_cache_release(&c);
}

/* Everything modified 2 hours ago; last uses in this order, oldest first:
 * the Triton group, the AOTAutograd entry, kernel 3, the FX graph, the
 * autotune result, kernels 2 and 1. */
static void age_all(void)
{
    age("", 3600, 7200);
    age("triton/0/" TGROUP, 7000, 7200);
    age(AOT, 6000, 7200);
    age(KERNEL3, 5000, 7200);
    age(FXG, 4000, 7200);
    age(BEST, 3000, 7200);
    age(KERNEL2, 2000, 7200);
}

Test(inductor, prune_by_size_least_recently_used_first)
{
    age_all();
    vyre_inductor_prune_result res;
    /* Sizes on disk, as du counts: removing the Triton group alone fits. */
    uint64_t total = disk_of(""), group = disk_of("triton/0/" TGROUP);
    uint64_t aot = disk_of(AOT), k3 = disk_of(KERNEL3);
    vyre_inductor_prune_opts o = {.max_bytes = total - group, .dry_run = 1};
    prune(&o, &res);
    cr_assert_eq(res.removed, 1);
    cr_assert(exists("triton/0/" TGROUP), "--dry-run removed it");
    o.dry_run = 0;
    prune(&o, &res);
    cr_assert_eq(res.removed, 1, "removed %llu young %llu kept %llu",
                 (unsigned long long)res.removed, (unsigned long long)res.young,
                 (unsigned long long)res.kept);
    cr_assert_eq(res.removed_by_kind[VYRE_INDUCTOR_TRITON], 1);
    cr_assert_eq(res.removed_bytes, group);
    cr_assert_eq(res.kept, 6);
    cr_assert_eq(res.kept_bytes, total - group);
    cr_assert_eq(tu_du_sk(g_cache) * 1024, total - group, "the report says what du counts");
    cr_assert(!exists("triton/0/" TGROUP));
    cr_assert(exists("triton/0"));
    /* Down to this takes the AOTAutograd entry and kernel 3, the next
     * least recently used. */
    o.max_bytes = total - group - aot - k3;
    prune(&o, &res);
    cr_assert_eq(res.removed, 2);
    cr_assert(!exists(AOT) && !exists(KERNEL3));
    cr_assert(exists(FXG) && exists(BEST) && exists(KERNEL2) && exists(KERNEL));
    /* No trash left behind. */
    static const char *const dirs[] = {"un", "aotautograd", "triton/0"};
    for (size_t i = 0; i < 3; i++) {
        char p[1024];
        cpath(p, sizeof p, dirs[i]);
        DIR *d = opendir(p);
        cr_assert(d, "%s", p);
        for (struct dirent *e; (e = readdir(d));)
            cr_assert(strncmp(e->d_name, ".vyre-trash.", 12), "%s/%s", dirs[i], e->d_name);
        closedir(d);
    }
}

Test(inductor, prune_by_age_never_touches_young_entries_or_others)
{
    age_all();
    age(KERNEL, 10, 10); /* written 10 s ago: a compile may be running */
    put("locks", "x");   /* Inductor's: "other", never removed */
    age("locks", 99999, 99999);
    vyre_inductor_prune_result res;
    vyre_inductor_prune_opts o = {.max_age_ns = INT64_C(4500) * 1000000000};
    prune(&o, &res);
    cr_assert_eq(res.removed, 3); /* Triton group, AOTAutograd, kernel 3 */
    cr_assert(exists(FXG) && exists(KERNEL));
    vyre_inductor_prune_opts all = {.all = 1};
    prune(&all, &res);
    cr_assert_eq(res.young, 1);
    cr_assert_eq(res.removed, 3);
    cr_assert(exists(KERNEL), "a young entry was removed");
    cr_assert(exists("locks"), "an entry of another kind was removed");
    cr_assert(!exists(FXG) && !exists(BEST) && !exists(KERNEL2));
}

Test(inductor, prune_never_follows_links_and_finishes_trash)
{
    age_all();
    char outside[900], p[1024];
    snprintf(outside, sizeof outside, "%s/outside", g_tmp);
    cr_assert_eq(mkdir(outside, 0700), 0);
    put("../outside/keep.py", "x");
    cpath(p, sizeof p, "aotautograd/linked");
    cr_assert_eq(symlink(outside, p), 0);
    cpath(p, sizeof p, "bt/linked.py");
    cr_assert_eq(symlink("../../outside/keep.py", p), 0);
    /* Inside an entry: the link goes with it, never what it names. */
    cpath(p, sizeof p, FXG "/link");
    cr_assert_eq(symlink(outside, p), 0);
    /* A pruner that died between rename and removal. */
    cpath(p, sizeof p, "fxgraph/bn/.vyre-trash.old.1.1");
    cr_assert_eq(mkdir(p, 0700), 0);
    put("fxgraph/bn/.vyre-trash.old.1.1/f", "x");
    age("", 3600, 7200);
    vyre_inductor_prune_opts all = {.all = 1};
    vyre_inductor_prune_result res;
    prune(&all, &res);
    cr_assert_eq(res.trash, 1);
    cr_assert_eq(res.removed, 7);
    cr_assert(!exists("fxgraph/bn/.vyre-trash.old.1.1"));
    cr_assert(exists("aotautograd/linked") && exists("bt/linked.py"));
    snprintf(p, sizeof p, "%s/keep.py", outside);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0, "what a link named was removed");
}

Test(inductor, remove_file_renames_then_unlinks_only_regular_files)
{
    char p[1024];
    cpath(p, sizeof p, "bt");
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    cr_assert(fd >= 0);
    cr_assert_eq(symlinkat("cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui.py", fd, "l"), 0);
    vyre_error err;
    vyre_error_clear(&err);
    unsigned long long bytes = 0;
    uint64_t kernel_disk = disk_of(KERNEL);
    cr_assert_eq(vyre__foreign_remove_file(fd, "l", &bytes, &err), VYRE_EINVAL);
    cr_assert(strstr(err.message, "not a regular file"), "%s", err.message);
    cr_assert_eq(mkdirat(fd, "d", 0700), 0);
    cr_assert_eq(vyre__foreign_remove_file(fd, "d", &bytes, &err), VYRE_EINVAL);
    cr_assert_eq(vyre__foreign_remove_file(fd, "../x", &bytes, &err), VYRE_EINVAL);
    cr_assert_eq(vyre__foreign_remove_file(fd, "nope", &bytes, &err), VYRE_ENOENT);
    cr_assert_eq(vyre__foreign_remove_file(
                     fd, "cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui.py", &bytes, &err),
                 0, "%s", err.message);
    cr_assert_eq(bytes, kernel_disk, "its blocks on disk, not its 3136 bytes");
    close(fd);
    cr_assert(!exists(KERNEL));
    cr_assert(exists("bt/l") && exists("bt/d"), "what it refused was touched");
    DIR *d = opendir(p);
    for (struct dirent *e; (e = readdir(d));)
        cr_assert(strncmp(e->d_name, ".vyre-trash.", 12), "left %s", e->d_name);
    closedir(d);
}

/* A writer making entries as Inductor does (a temp file renamed into
 * place; a folder, then its file) while clear runs again and again: the
 * writer sees no error, every entry it made is there at the end (young:
 * never touched), the old ones are gone and no trash is left. */
static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Inductor's key for the i-th entry: prefix, "zz" (its folder), then 49
 * more base32 characters. */
static void zz_key(char prefix, int i, char key[53])
{
    static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
    key[0] = prefix, key[1] = key[2] = 'z';
    for (int k = 3; k < 52; k++, i /= 32)
        key[k] = b32[i % 32];
    key[52] = '\0';
}

static int writer(const char *cache, int64_t until_ns)
{
    char p[1100], t[1200], key[53];
    int errors = 0;
    for (int i = 0; mono_ns() < until_ns; i++) {
        snprintf(t, sizeof t, "%s/zz/.%d.tmp", cache, i);
        zz_key('c', i, key);
        snprintf(p, sizeof p, "%s/zz/%s.py", cache, key);
        FILE *f = fopen(t, "w");
        errors += !f || fputs("import triton\n", f) < 0 || fclose(f) != 0 || rename(t, p) != 0;
        zz_key('f', i, key);
        snprintf(p, sizeof p, "%s/fxgraph/zz/%s", cache, key);
        errors += mkdir(p, 0700) != 0;
        snprintf(t, sizeof t, "%s/entry", p);
        f = fopen(t, "w");
        errors += !f || fputs("pickle", f) < 0 || fclose(f) != 0;
    }
    return errors ? 1 : 0;
}

Test(inductor, clear_beside_a_writer_touches_nothing_it_writes)
{
    age("", 3600, 7200);
    char p[1024];
    cpath(p, sizeof p, "zz");
    cr_assert_eq(mkdir(p, 0700), 0);
    cpath(p, sizeof p, "fxgraph/zz");
    cr_assert_eq(mkdir(p, 0700), 0);
    int64_t until = mono_ns() + INT64_C(500000000);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(writer(g_cache, until));
    int runs = 0;
    while (mono_ns() < until || runs < 3) {
        vyre_inductor_prune_opts all = {.all = 1};
        vyre_inductor_prune_result res;
        prune(&all, &res);
        cr_assert_eq(res.failed, 0);
        runs++;
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer saw an error");
    vyre_inductor_cache c;
    scan(&c);
    size_t made = 0;
    for (size_t i = 0; i < c.n_entries; i++) {
        const vyre_inductor_entry *e = &c.entries[i];
        cr_assert(!e->trash, "trash left: %s", e->path);
        cr_assert(!strncmp(e->path, "zz/", 3) || !strncmp(e->path, "fxgraph/zz/", 11),
                  "an old entry was left: %s", e->path);
        made += e->kind == VYRE_INDUCTOR_KERNEL || e->kind == VYRE_INDUCTOR_FXGRAPH;
        if (e->kind == VYRE_INDUCTOR_FXGRAPH)
            cr_assert_eq(e->files, 2, "half an entry: %s", e->path);
    }
    cr_assert_gt(made, 2);
    vyre_inductor_cache_release(&c);
}

Test(inductor, vyre_trash_in_the_nested_triton_cache_is_not_checked_and_prune_finishes_it)
{
    /* A Triton group being removed by a prune (renamed, half gone), and
     * `vyre-cachectl triton --dir .../triton/0 verify --repair`'s quarantine:
     * both vyre's, neither a group to check or count. */
    char src[1024], dst[1024];
    cpath(src, sizeof src, "triton/0/" TGROUP);
    cpath(dst, sizeof dst, "triton/0/.vyre-trash." TGROUP ".99999.1");
    tu_copy_tree(src, dst);
    cpath(dst, sizeof dst,
          "triton/0/.vyre-trash." TGROUP
          ".99999.1/triton_per_fused_prepare_softmax_online_0.cubin");
    cr_assert_eq(unlink(dst), 0);
    cpath(dst, sizeof dst, "triton/0/.vyre-quarantine");
    cr_assert_eq(mkdir(dst, 0700), 0);
    cpath(dst, sizeof dst, "triton/0/.vyre-quarantine/" TGROUP);
    tu_copy_tree(src, dst);
    vyre_inductor_report r;
    verify(&r);
    for (size_t i = 0; i < r.n_problems; i++)
        cr_log_error("%s: %s", r.problems[i].kind, r.problems[i].message);
    cr_assert_eq(r.n_problems, 0);
    cr_assert_eq(r.checked[VYRE_INDUCTOR_TRITON], 1);
    vyre_inductor_report_release(&r);
    vyre_inductor_cache c;
    scan(&c);
    cr_assert_eq(c.n_triton, 1);
    const vyre_inductor_entry *t = entry(&c, "triton/0/.vyre-trash." TGROUP ".99999.1");
    cr_assert(t && t->trash && t->kind == VYRE_INDUCTOR_OTHER);
    cr_assert_eq(count_kind(&c, VYRE_INDUCTOR_TRITON), 1);
    vyre_inductor_cache_release(&c);
    /* A pruner that died between rename and removal: the next one finishes it. */
    age("", 3600, 7200);
    vyre_inductor_prune_opts o = {.max_age_ns = INT64_C(86400) * 1000000000};
    vyre_inductor_prune_result res;
    prune(&o, &res);
    cr_assert_eq(res.trash, 1);
    cr_assert(!exists("triton/0/.vyre-trash." TGROUP ".99999.1"));
    cr_assert(exists("triton/0/" TGROUP) && exists("triton/0/.vyre-quarantine/" TGROUP));
}

/* Names Inductor never writes, in the places it writes kernels, autotune
 * results and entries (issue 33: `go/main.py` went as a "kernel"): each
 * is foreign, reported, never removed. */
static const char *const g_foreign[] = {
    "go/main.py",
    "bt/helper.py",
    "zz/cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui.py", /* not its folder */
    "bt/cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5u.py",  /* one short */
    "bt/cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5u1.py", /* '1': not base32 */
    "bt/notes.best_config",
    "fxgraph/bn/thesis/chapter1",
    "aotautograd/mine/notes",
};
#define N_FOREIGN (sizeof g_foreign / sizeof *g_foreign)

Test(inductor, names_inductor_never_writes_are_foreign_and_survive_prune_and_clear)
{
    for (size_t i = 0; i < N_FOREIGN; i++) {
        char p[1024];
        cpath(p, sizeof p, g_foreign[i]);
        char *slash = strrchr(p, '/');
        *slash = '\0';
        mkdir(p, 0700);
        *slash = '/';
        put(g_foreign[i], "mine\n");
    }
    age("", 3600, 7200);
    vyre_inductor_prune_result res;
    vyre_inductor_prune_opts o = {.max_age_ns = INT64_C(60) * 1000000000};
    prune(&o, &res);
    cr_assert_eq(res.removed, 7, "the fixture's entries go");
    vyre_inductor_prune_opts all = {.all = 1};
    prune(&all, &res);
    cr_assert_eq(res.removed, 0);
    cr_assert_eq(res.foreign, N_FOREIGN);
    for (size_t i = 0; i < N_FOREIGN; i++)
        cr_assert(exists(g_foreign[i]), "'%s' was removed", g_foreign[i]);
    vyre_inductor_cache c;
    scan(&c);
    for (size_t i = 0; i < N_FOREIGN; i++) {
        /* the entry is the file, or the folder for fxgraph/ and aotautograd/ */
        char e[256];
        snprintf(e, sizeof e, "%s", g_foreign[i]);
        if (!strncmp(e, "fxgraph/", 8) || !strncmp(e, "aotautograd/", 12))
            *strrchr(e, '/') = '\0';
        const vyre_inductor_entry *x = entry(&c, e);
        cr_assert(x->foreign && x->kind == VYRE_INDUCTOR_OTHER, "%s", e);
    }
    cr_assert_eq(count_kind(&c, VYRE_INDUCTOR_KERNEL), 0);
    vyre_error err;
    vyre_error_clear(&err);
    vyre_inductor_report r;
    cr_assert_eq(vyre_inductor_verify(&c, 0, &r, &err), 0, "%s", err.message);
    cr_assert_eq(r.n_problems, N_FOREIGN);
    for (size_t i = 0; i < r.n_problems; i++)
        cr_assert(!strcmp(r.problems[i].kind, "foreign") && !r.problems[i].entry_bad, "%s: %s",
                  r.problems[i].kind, r.problems[i].message);
    vyre_inductor_report_release(&r);
    vyre_inductor_cache_release(&c);
}

/* Inductor's own names, as codecache.py makes them, and near misses. */
Test(inductor, kernel_names_are_c_and_51_base32_characters_in_their_folder)
{
    static const char *const ok[] = {KERNEL, KERNEL2, KERNEL3, BEST,
                                     "bt/cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui"
                                     ".best_config"};
    static const char *const no[] = {
        "bt/Cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui.py",  /* capital */
        "bt/cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5uii.py", /* one long */
        "bt/cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui.pyc",
        "bt/91dbf07d645711ebc936c694facd3254fa10be19624fe41233a31431373e3bfg.best_config",
        "bt/.cbt5f6oy37l3kzne33hqnm2trssreyonzvzlzgepeaykslvlx5ui.py",
    };
    char bucket[3] = "bt";
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        const char *n = ok[i] + 3;
        memcpy(bucket, ok[i], 2);
        cr_assert(vyre__inductor_is_kernel_name(bucket, n) ||
                      vyre__inductor_is_autotune_name(bucket, n),
                  "%s", ok[i]);
    }
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        cr_assert(!vyre__inductor_is_kernel_name("bt", no[i] + 3) &&
                      !vyre__inductor_is_autotune_name("bt", no[i] + 3),
                  "%s", no[i]);
    cr_assert(vyre__inductor_is_fxgraph_key("bn", FXG + 11));
    cr_assert(!vyre__inductor_is_fxgraph_key("bo", FXG + 11));
    cr_assert(vyre__inductor_is_aot_key(AOT + 12));
    cr_assert(!vyre__inductor_is_aot_key("mine"));
}

/* A cache scanned only to be read is never changed through. */
Test(inductor, prune_and_quarantine_refuse_a_cache_scanned_read_only)
{
    age("", 3600, 7200);
    vyre_inductor_cache c;
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_inductor_cache_scan(g_cache, 0, &c, &err), 0, "%s", err.message);
    vyre_inductor_prune_opts all = {.all = 1};
    vyre_inductor_prune_result res;
    cr_assert_eq(vyre_inductor_prune(&c, &all, NULL, NULL, &res, &err), VYRE_EINVAL);
    cr_assert(strstr(err.message, "was not opened to be changed"), "%s", err.message);
    cr_assert_eq(vyre__inductor_quarantine(&c, BEST, &err), VYRE_EINVAL);
    vyre_inductor_cache_release(&c);
    cr_assert(exists(KERNEL) && exists(BEST));
}

/* The scan's check, as the CLI's: a root others may write is refused. */
Test(inductor, a_root_others_may_write_is_refused_for_a_change)
{
    cr_assert_eq(chmod(g_cache, 0757), 0);
    vyre_inductor_cache c;
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_inductor_cache_scan(g_cache, VYRE_INDUCTOR_SCAN_WRITE, &c, &err),
                 VYRE_EUNSAFE);
    cr_assert(strstr(err.message, "writable by group or others (mode 0757)"), "%s", err.message);
    cr_assert(strstr(err.hint, "chmod go-w"), "%s", err.hint);
    vyre_inductor_cache_release(&c);
    cr_assert_eq(vyre_inductor_cache_scan(g_cache, 0, &c, &err), 0, "reading stays allowed");
    vyre_inductor_cache_release(&c);
}

static uint64_t disk_of(const char *rel)
{
    char p[1024];
    cpath(p, sizeof p, rel);
    return tu_disk_bytes(p);
}

/* Issue 35: a TorchInductor cache of many small files pruned to a size
 * holds at most that size by du -sk (its sizes counted by st_size, a
 * prune left far more on disk than asked). */
Test(inductor, a_cache_pruned_to_a_size_holds_at_most_that_size_by_du)
{
    char rel[128], zz[1024];
    cpath(zz, sizeof zz, "zz");
    cr_assert_eq(mkdir(zz, 0700), 0, "%s", zz);
    age_all();
    for (int i = 0; i < 200; i++) {
        /* Kernels of 100 bytes, named as Inductor names them in bucket
         * "zz" (a key is 'c' and 51 base32 characters). */
        snprintf(rel, sizeof rel, "zz/czz%.47d%c%c.py", 0, 'a' + i / 26, 'a' + i % 26);
        for (char *q = rel + 6; *q == '0'; q++)
            *q = 'a';
        char body[101];
        memset(body, '#', 99);
        body[99] = '\n';
        body[100] = '\0';
        put(rel, body);
        age(rel, 9000 + i, 9000 + i);
    }
    uint64_t before = tu_du_sk(g_cache) * 1024;
    cr_assert_eq(disk_of(""), before, "du -sk and lstat's st_blocks agree");
    uint64_t limit = before / 2;
    vyre_inductor_prune_opts o = {.max_bytes = limit};
    vyre_inductor_prune_result res;
    prune(&o, &res);
    uint64_t after = tu_du_sk(g_cache) * 1024;
    cr_assert_leq(after, limit, "pruned to %llu bytes, du -sk counts %llu",
                  (unsigned long long)limit, (unsigned long long)after);
    cr_assert_gt(res.removed, 0);
    cr_assert_eq(res.kept_bytes, after, "the report says what du counts");
}

/* verify --repair on the cache: the problem of `kind` in entry `path`. */
static vyre_inductor_problem repaired(const char *path, const char *kind)
{
    vyre_inductor_cache c;
    scan(&c);
    vyre_error err;
    vyre_error_clear(&err);
    vyre_inductor_report r;
    cr_assert_eq(vyre_inductor_verify(&c, 1, &r, &err), 0, "%s", err.message);
    vyre_inductor_problem found = {0};
    for (size_t i = 0; i < r.n_problems; i++)
        if (!strcmp(r.problems[i].entry, path) && !strcmp(r.problems[i].kind, kind))
            found = r.problems[i];
    cr_assert(found.kind, "no %s problem in '%s' (%zu problems)", kind, path, r.n_problems);
    vyre_inductor_report_release(&r);
    vyre_inductor_cache_release(&c);
    return found;
}

/* Issue 35: an entry being written right now (a Triton group without its
 * manifest yet, an autotune result half written) is reported but left in
 * place by verify --repair, as prune leaves it; two minutes old, moved. */
Test(inductor, verify_repair_leaves_entries_changed_less_than_a_minute_ago)
{
    char p[1024];
    cpath(p, sizeof p, BEST);
    cr_assert_eq(truncate(p, 100), 0);
    cpath(p, sizeof p, "triton/0/" TGROUP "/__grp__triton_per_fused_prepare_softmax_online_0.json");
    cr_assert_eq(unlink(p), 0);
    const char *const paths[] = {BEST, "triton/0/" TGROUP};
    const char *const kinds[] = {"bad-autotune", "half-written"};
    for (size_t i = 0; i < 2; i++) {
        vyre_inductor_problem q = repaired(paths[i], kinds[i]);
        cr_assert(q.entry_bad, "%s", q.message);
        cr_assert_eq(q.quarantined, 0, "'%s', being written, was moved", paths[i]);
        cr_assert_eq(q.repair_error.code, VYRE_EBUSY);
        cr_assert_str_eq(q.repair_error.message, "left alone: changed less than a minute ago");
        cr_assert(exists(paths[i]));
    }
    for (size_t i = 0; i < 2; i++) {
        age(paths[i], 120, 120);
        vyre_inductor_problem q = repaired(paths[i], kinds[i]);
        cr_assert_eq(q.quarantined, 1, "'%s': %s", paths[i], q.repair_error.message);
        cr_assert(!exists(paths[i]), "'%s' two minutes old was not moved", paths[i]);
        char moved[1024];
        snprintf(moved, sizeof moved, VYRE_INDUCTOR_QUARANTINE "/%s", paths[i]);
        cr_assert(exists(moved), "%s", moved);
    }
}
