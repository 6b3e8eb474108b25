/*
 * test_triton.c - reading Triton's kernel cache (vyre/triton.h) on a real
 * cache made on an H100 with Triton 3.6 (tests/fixtures/triton/cache: the
 * hand-written scale_kernel group and a compiled launcher; manifest paths
 * rewritten to /nonexistent/origin/...), copied into a fresh temp dir and
 * damaged there.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/foreign/triton_internal.h"
#include "testutil.h"
#include "vyre/vyre.h"

#define KGROUP "PGIBWRPZ4BMLHZDHVLBI7YULCKTFFXOZWUDBQ2MQNOO22K3NXW4A"
#define LGROUP "3NW4CBFU6KRSIOXLLFMNULDCKOIZDJR3TDR3GR24VJ6NT3ILGGTA"

static char g_tmp[512];
static char g_cache[600];

/* Copies the fixture to dst. */
static void copy_fixture(const char *dst)
{
    char src[512];
    snprintf(src, sizeof src, "%s/fixtures/triton/cache", VYRE_TEST_SOURCE_DIR);
    tu_copy_tree(src, dst);
}

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    copy_fixture(g_cache);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(triton, .init = setup, .fini = teardown, .timeout = 60);

static const vyre_triton_group *group(const vyre_triton_cache *c, const char *key)
{
    for (size_t i = 0; i < c->n_groups; i++)
        if (!strcmp(c->groups[i].key, key))
            return &c->groups[i];
    cr_assert_fail("no group '%s'", key);
    return NULL;
}

static void gpath(char *out, size_t size, const char *key, const char *file)
{
    snprintf(out, size, "%s/%s/%s", g_cache, key, file);
}

Test(triton, scan_reads_real_group)
{
    vyre_triton_cache c;
    vyre_error err;
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.n_groups, 2);
    const vyre_triton_group *g = group(&c, KGROUP);
    cr_assert_eq(g->kind, VYRE_TRITON_KERNEL);
    cr_assert(g->has_manifest && !*g->manifest_error, "%s", g->manifest_error);
    cr_assert(g->has_metadata && !*g->metadata_error, "%s", g->metadata_error);
    cr_assert_str_eq(g->name, "scale_kernel");
    cr_assert_str_eq(g->backend, "cuda");
    cr_assert_str_eq(g->arch, "90");
    cr_assert_str_eq(g->triton_version, "3.6.0");
    cr_assert_str_eq(g->hash, "79901b45f9e058b3e467aac28fe28b12a652ddd9b5061869906b9dad2b6dbdb8");
    cr_assert_eq(g->warp_size, 32);
    cr_assert_eq(g->num_warps, 4);
    cr_assert_eq(g->num_stages, 3);
    cr_assert_eq(g->shared, 0);
    cr_assert_eq(g->n_files, 8);
    cr_assert_eq(g->n_children, 7);
    cr_assert_eq(g->apparent_bytes, 27114); /* the eight files, as committed */
    char gdir[1024];
    snprintf(gdir, sizeof gdir, "%s/%s", g_cache, KGROUP);
    cr_assert_eq(g->bytes, tu_disk_bytes(gdir), "on disk: the files' blocks and the directory's");
    for (size_t i = 0; i < g->n_files; i++)
        cr_assert(g->files[i].named, "'%s' not named by the manifest", g->files[i].name);
    for (size_t i = 0; i < g->n_children; i++)
        cr_assert(!strncmp(g->children[i].path, "/nonexistent/origin/triton_cache/" KGROUP "/",
                           strlen("/nonexistent/origin/triton_cache/" KGROUP "/")),
                  "%s", g->children[i].path);
    const vyre_triton_group *l = group(&c, LGROUP);
    cr_assert_eq(l->kind, VYRE_TRITON_LAUNCHER);
    cr_assert(!l->has_manifest && !l->has_metadata);
    cr_assert_eq(l->n_files, 1);
    /* Inodes: two group directories and their nine files. */
    cr_assert_eq(c.files, 11);
    /* The groups and the cache directory's own blocks: du -s. */
    struct stat top;
    cr_assert_eq(lstat(g_cache, &top), 0);
    cr_assert_eq(c.bytes, g->bytes + l->bytes + (uint64_t)top.st_blocks * 512);
    cr_assert_eq(c.bytes, tu_du_sk(g_cache) * 1024);
    cr_assert_eq(c.apparent_bytes, g->apparent_bytes + l->apparent_bytes);
    vyre_triton_cache_release(&c);
    vyre_triton_cache_release(&c);
}

Test(triton, bad_json_is_recorded_not_fatal)
{
    char p[1024];
    gpath(p, sizeof p, KGROUP, "scale_kernel.json");
    tu_write_file(p, "{\"name\": ", 9);
    gpath(p, sizeof p, KGROUP, "__grp__scale_kernel.json");
    tu_write_file(p, "[1]", 3);
    vyre_triton_cache c;
    vyre_error err;
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    const vyre_triton_group *g = group(&c, KGROUP);
    cr_assert(strstr(g->metadata_error, "'scale_kernel.json' is not JSON"), "%s",
              g->metadata_error);
    cr_assert(strstr(g->manifest_error, "holds an array, not an object"), "%s", g->manifest_error);
    vyre_triton_cache_release(&c);
}

Test(triton, symlink_and_huge_files_are_not_read)
{
    char p[1024], q[1024];
    gpath(p, sizeof p, KGROUP, "scale_kernel.json");
    cr_assert_eq(unlink(p), 0);
    snprintf(q, sizeof q, "%s/outside.json", g_tmp);
    tu_write_file(q, "{\"name\": \"evil\"}", 16);
    cr_assert_eq(symlink(q, p), 0);
    gpath(p, sizeof p, KGROUP, "__grp__scale_kernel.json");
    size_t n = (size_t)VYRE_TRITON_MANIFEST_MAX + 1;
    char *big = malloc(n);
    memset(big, ' ', n);
    tu_write_file(p, big, n);
    free(big);
    vyre_triton_cache c;
    vyre_error err;
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    const vyre_triton_group *g = group(&c, KGROUP);
    cr_assert(strstr(g->metadata_error, "a symbolic link"), "%s", g->metadata_error);
    cr_assert_str_eq(g->name, "");
    cr_assert(strstr(g->manifest_error, "more than the 65536 read"), "%s", g->manifest_error);
    vyre_triton_cache_release(&c);
}

Test(triton, temp_and_stray_entries)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/tmp.pid_123_abc", g_cache);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/stray.txt", g_cache);
    tu_write_file(p, "x", 1);
    gpath(p, sizeof p, KGROUP, "scale_kernel.ptx.tmp.pid_9_ff");
    tu_write_file(p, "x", 1);
    vyre_triton_cache c;
    vyre_error err;
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.n_groups, 4);
    cr_assert_eq(group(&c, "tmp.pid_123_abc")->kind, VYRE_TRITON_TEMP);
    cr_assert_eq(group(&c, "stray.txt")->kind, VYRE_TRITON_OTHER);
    const vyre_triton_group *g = group(&c, KGROUP);
    int seen = 0;
    for (size_t i = 0; i < g->n_files; i++)
        if (!strcmp(g->files[i].name, "scale_kernel.ptx.tmp.pid_9_ff"))
            seen = g->files[i].temp && !g->files[i].named;
    cr_assert(seen);
    vyre_triton_cache_release(&c);
}

Test(triton, missing_dir)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/none", g_tmp);
    vyre_triton_cache c;
    vyre_error err;
    cr_assert_eq(vyre_triton_cache_scan(p, &c, &err), VYRE_ENOENT);
    cr_assert(strstr(err.message, "/none' does not exist"), "%s", err.message);
    cr_assert_eq(c.n_groups, 0);
}

Test(triton, cache_dir_as_triton_finds_it)
{
    static const char *const names[] = {"TRITON_CACHE_DIR", "TRITON_HOME", "HOME"};
    tu_env e;
    tu_env_save(&e, names, 3);
    char out[256];
    const char *src;
    setenv("HOME", "/h", 1);
    cr_assert_eq(vyre_triton_cache_dir(out, sizeof out, &src, NULL), 0);
    cr_assert_str_eq(out, "/h/.triton/cache");
    cr_assert_str_eq(src, "HOME");
    setenv("TRITON_HOME", "/t", 1);
    cr_assert_eq(vyre_triton_cache_dir(out, sizeof out, &src, NULL), 0);
    cr_assert_str_eq(out, "/t/.triton/cache");
    cr_assert_str_eq(src, "TRITON_HOME");
    setenv("TRITON_CACHE_DIR", "/c", 1);
    cr_assert_eq(vyre_triton_cache_dir(out, sizeof out, &src, NULL), 0);
    cr_assert_str_eq(out, "/c");
    cr_assert_str_eq(src, "TRITON_CACHE_DIR");
    tu_env_restore(&e);
}

Test(triton, quarantine_keeps_both_never_deletes)
{
    char p[1024];
    vyre_error err;
    vyre_triton_cache q;
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &q, &err), 0, "%s", err.message);
    cr_assert_eq(vyre__triton_quarantine(&q, KGROUP, &err), 0, "%s", err.message);
    /* A second group of the same name (Triton compiled it again). */
    snprintf(p, sizeof p, "%s/%s", g_cache, KGROUP);
    cr_assert_eq(mkdir(p, 0700), 0);
    gpath(p, sizeof p, KGROUP, "x.cubin");
    tu_write_file(p, "x", 1);
    cr_assert_eq(vyre__triton_quarantine(&q, KGROUP, &err), 0, "%s", err.message);
    struct stat st;
    snprintf(p, sizeof p, "%s/.vyre-quarantine/%s/scale_kernel.cubin", g_cache, KGROUP);
    cr_assert_eq(stat(p, &st), 0, "%s", p);
    snprintf(p, sizeof p, "%s/.vyre-quarantine/%s.1/x.cubin", g_cache, KGROUP);
    cr_assert_eq(stat(p, &st), 0, "%s", p);
    cr_assert_eq(vyre__triton_quarantine(&q, "../x", &err), VYRE_EINVAL);
    cr_assert_eq(vyre__triton_quarantine(&q, KGROUP, &err), VYRE_ENOENT);
    vyre_triton_cache_release(&q);
    /* The quarantine is not a group of the cache. */
    vyre_triton_cache c;
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.n_groups, 1);
    vyre_triton_cache_release(&c);
}

Test(triton, relocate_needs_a_scanned_cache_and_a_manifest)
{
    vyre_triton_cache c;
    vyre_error err;
    memset(&c, 0, sizeof c); /* holds no directory: refused, fd 0 never used */
    int changed = 0;
    cr_assert_eq(vyre_triton_relocate(&c, NULL, 0, &changed, &err), VYRE_EINVAL);
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.abs_dir[0], '/', "%s", c.abs_dir);
    cr_assert_eq(vyre_triton_relocate(&c, group(&c, LGROUP), 0, &changed, &err), VYRE_EINVAL);
    cr_assert_eq(vyre_triton_relocate(&c, group(&c, KGROUP), 1, &changed, &err), 0, "%s",
                 err.message);
    cr_assert_eq(changed, 1);
    vyre_triton_cache_release(&c);
}

/* Where a child points is decided on its text alone (show and verify never
 * look a recorded path up): the group's own file under the cache as named
 * or as resolved, the same group under the root a copy came from, or
 * anything else. */
Test(triton, where_a_child_points_from_its_text_alone)
{
    vyre_triton_cache c;
    vyre_error err;
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    const vyre_triton_group *g = group(&c, KGROUP);
    char here[4200], real[4200], name[] = "k.cubin";
    snprintf(here, sizeof here, "%s/%s/k.cubin", c.abs_dir, KGROUP);
    snprintf(real, sizeof real, "%s/%s/k.cubin", c.real_dir, KGROUP);
    static const struct {
        const char *name, *path;
        vyre_triton_child_place want;
    } cases[] = {
        {"k.cubin", "/old/place/" KGROUP "/k.cubin", VYRE_TRITON_CHILD_MOVED},
        {"k.cubin", "/" KGROUP "/k.cubin", VYRE_TRITON_CHILD_OUTSIDE},
        {"k.cubin", "/etc/passwd", VYRE_TRITON_CHILD_OUTSIDE},
        {"k.cubin", "/old/place/" KGROUP "/other.cubin", VYRE_TRITON_CHILD_OUTSIDE},
        {"k.cubin", "/old/../etc/" KGROUP "/k.cubin", VYRE_TRITON_CHILD_OUTSIDE},
        {"k.cubin", "/old/./" KGROUP "/k.cubin", VYRE_TRITON_CHILD_OUTSIDE},
        {"k.cubin", "/old//" KGROUP "/k.cubin", VYRE_TRITON_CHILD_OUTSIDE},
        {"k.cubin", "old/" KGROUP "/k.cubin", VYRE_TRITON_CHILD_OUTSIDE},
        {"k.cubin", "/old/X" KGROUP "/k.cubin", VYRE_TRITON_CHILD_OUTSIDE},
        {"../k.cubin", "/old/" KGROUP "/../k.cubin", VYRE_TRITON_CHILD_OUTSIDE},
        {"..", "/old/" KGROUP "/..", VYRE_TRITON_CHILD_OUTSIDE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vyre_triton_child ch = {(char *)(uintptr_t)cases[i].name, (char *)(uintptr_t)cases[i].path};
        cr_assert_eq(vyre_triton_child_where(&c, g, &ch), cases[i].want, "'%s' at '%s'",
                     cases[i].name, cases[i].path);
    }
    vyre_triton_child ch = {name, here};
    cr_assert_eq(vyre_triton_child_where(&c, g, &ch), VYRE_TRITON_CHILD_HERE, "%s", here);
    cr_assert(c.real_dir[0] == '/', "no resolved path: '%s'", c.real_dir);
    ch.path = real;
    cr_assert_eq(vyre_triton_child_where(&c, g, &ch), VYRE_TRITON_CHILD_HERE, "%s", real);
    vyre_triton_cache_release(&c);
    vyre_triton_cache_release(&c); /* twice: closes the directory once */
}

/* A Triton cache inside a root the caller holds (Inductor's): opened
 * relative to that descriptor, never through a link, and held. */
Test(triton, scan_at_opens_below_a_held_root_never_through_a_link)
{
    int at = open(g_tmp, O_RDONLY | O_DIRECTORY);
    cr_assert_geq(at, 0);
    vyre_triton_cache c;
    vyre_error err;
    cr_assert_eq(vyre__triton_scan_at(at, "cache", g_cache, 0, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.n_groups, 2);
    cr_assert(c.fd_held && c.fd >= 0);
    cr_assert_eq(c.unsafe.code, 0, "%s", c.unsafe.message);
    cr_assert_eq(vyre_triton_cache_check_writable(&c, &err), 0, "%s", err.message);
    vyre_triton_cache_release(&c);
    char link[700];
    snprintf(link, sizeof link, "%s/link", g_tmp);
    cr_assert_eq(symlink("cache", link), 0);
    cr_assert_eq(vyre__triton_scan_at(at, "link", link, 0, &c, &err), VYRE_EINVAL);
    cr_assert(strstr(err.message, "is a symlink, not a directory"), "%s", err.message);
    cr_assert_eq(c.fd_held, 0);
    /* Writable by others: read, never changed. */
    cr_assert_eq(chmod(g_cache, 0777), 0);
    cr_assert_eq(vyre__triton_scan_at(at, "cache", g_cache, 0, &c, &err), 0, "%s", err.message);
    cr_assert_eq(c.unsafe.code, VYRE_EUNSAFE);
    cr_assert_eq(vyre_triton_cache_check_writable(&c, &err), VYRE_EUNSAFE);
    cr_assert_eq(vyre__triton_quarantine(&c, KGROUP, &err), VYRE_EUNSAFE);
    vyre_triton_cache_release(&c);
    close(at);
}

/* Sets atime and mtime of the files of dir, then of dir, to `ago` s back. */
static void age_dir(const char *dir, int64_t ago)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= ago;
    t[0].tv_nsec = 0;
    t[1] = t[0];
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            cr_assert_eq(utimensat(dirfd(d), e->d_name, t, AT_SYMLINK_NOFOLLOW), 0);
    closedir(d);
    cr_assert_eq(utimensat(AT_FDCWD, dir, t, AT_SYMLINK_NOFOLLOW), 0);
}

/* verify --repair on the cache; the half-written group's problem. */
static vyre_triton_problem half_written_after_repair(void)
{
    vyre_triton_cache c;
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    vyre_triton_problem *p, found = {0};
    size_t n;
    cr_assert_eq(vyre_triton_verify(&c, 1, &p, &n, &err), 0, "%s", err.message);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].key, "HALFWRITTENGROUP") && !strcmp(p[i].kind, "half-written"))
            found = p[i];
    cr_assert(found.kind, "no half-written problem (%zu problems)", n);
    free(p);
    vyre_triton_cache_release(&c);
    return found;
}

/* Issue 35: a group Triton is writing right now (kernel files, the
 * manifest not yet) is reported but left where it is by verify --repair,
 * as prune leaves it; the same group two minutes old is moved. */
Test(triton, verify_repair_leaves_a_group_changed_less_than_a_minute_ago)
{
    char dir[1024], q[1024], f[1100];
    snprintf(dir, sizeof dir, "%s/HALFWRITTENGROUP", g_cache);
    snprintf(q, sizeof q, "%s/%s/HALFWRITTENGROUP", g_cache, VYRE_TRITON_QUARANTINE);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(f, sizeof f, "%s/k.cubin", dir);
    tu_write_file(f, "x", 1);
    snprintf(f, sizeof f, "%s/k.json", dir);
    tu_write_file(f, "{\"name\": \"k\"}", 13);
    vyre_triton_problem p = half_written_after_repair();
    struct stat st;
    cr_assert(p.group_bad);
    cr_assert_eq(p.quarantined, 0, "a group being written was moved");
    cr_assert_eq(p.repair_error.code, VYRE_EBUSY);
    cr_assert_str_eq(p.repair_error.message, "left alone: changed less than a minute ago");
    cr_assert_eq(lstat(dir, &st), 0, "the group is no longer where Triton writes it");
    cr_assert_neq(lstat(q, &st), 0);

    age_dir(dir, 120);
    p = half_written_after_repair();
    cr_assert_eq(p.quarantined, 1, "%s", p.repair_error.message);
    cr_assert_neq(lstat(dir, &st), 0, "the old half-written group was not moved");
    cr_assert_eq(lstat(q, &st), 0);
}
