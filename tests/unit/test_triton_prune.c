/*
 * test_triton_prune.c - vyre_triton_prune (vyre/triton.h) on a copy of the
 * real Triton 3.6 cache (tests/fixtures/triton/cache) plus clones of its
 * kernel group under other keys, with times set by utimensat: LRU order,
 * each limit, --dry-run, the one-minute guard, links never followed, a
 * dead pruner's trash finished, and a second process writing groups the
 * way Triton 3.6 does while prune runs.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "vyre/vyre.h"

#define KGROUP "PGIBWRPZ4BMLHZDHVLBI7YULCKTFFXOZWUDBQ2MQNOO22K3NXW4A"
#define LGROUP "3NW4CBFU6KRSIOXLLFMNULDCKOIZDJR3TDR3GR24VJ6NT3ILGGTA"
#define AKEY   "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define BKEY   "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
#define CKEY   "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"
/* Sizes are on disk, as du counts (st_blocks * 512: the kernel group's
 * eight files hold 27,114 bytes but take more, each a whole number of
 * blocks), measured in setup on the filesystem the test runs on. Clones
 * get keys as long as Triton's, so their files are as long. */
static uint64_t g_kbytes; /* the kernel group: its eight files and the directory */
static uint64_t g_lbytes; /* the launcher group: one .so and the directory */
static uint64_t g_top;    /* the cache directory's own blocks */
#define KBYTES g_kbytes
#define LBYTES g_lbytes

static char g_tmp[512];
static char g_cache[600];

static uint64_t disk_of(const char *key)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", g_cache, key);
    return tu_disk_bytes(p);
}

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    char src[512];
    snprintf(src, sizeof src, "%s/fixtures/triton/cache", VYRE_TEST_SOURCE_DIR);
    tu_copy_tree(src, g_cache);
    g_kbytes = disk_of(KGROUP);
    g_lbytes = disk_of(LGROUP);
    struct stat st;
    cr_assert_eq(lstat(g_cache, &st), 0);
    g_top = (uint64_t)st.st_blocks * 512;
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(triton_prune, .init = setup, .fini = teardown, .timeout = 120);

static char *gpath(char *out, size_t size, const char *key, const char *file)
{
    if (file)
        snprintf(out, size, "%s/%s/%s", g_cache, key, file);
    else
        snprintf(out, size, "%s/%s", g_cache, key);
    return out;
}

static int exists(const char *key)
{
    char p[1024];
    struct stat st;
    return lstat(gpath(p, sizeof p, key, NULL), &st) == 0;
}

/* Replaces every `from` in the file by `to`. */
static void edit(const char *path, const char *from, const char *to)
{
    size_t len;
    char *s = tu_read_file(path, &len);
    cr_assert(s, "%s", path);
    char out[8192];
    size_t o = 0;
    for (const char *p = s; *p;) {
        const char *at = strstr(p, from);
        size_t n = at ? (size_t)(at - p) : strlen(p);
        cr_assert(o + n + strlen(to) < sizeof out);
        memcpy(out + o, p, n);
        o += n;
        if (!at)
            break;
        memcpy(out + o, to, strlen(to));
        o += strlen(to);
        p = at + strlen(from);
    }
    tu_write_file(path, out, o);
    free(s);
}

/* A copy of the real kernel group under `key`, its manifest pointing at
 * it, its metadata saying arch and version (NULL: as it was; "" for the
 * version: the field left out, as Triton before 3.3 wrote it). */
static void clone_group(const char *key, const char *arch, const char *version)
{
    char src[1024], dst[1024], p[1024];
    gpath(src, sizeof src, KGROUP, NULL);
    gpath(dst, sizeof dst, key, NULL);
    tu_copy_tree(src, dst);
    edit(gpath(p, sizeof p, key, "__grp__scale_kernel.json"), KGROUP, key);
    gpath(p, sizeof p, key, "scale_kernel.json");
    if (arch) {
        char to[64];
        snprintf(to, sizeof to, "\"arch\": %s", arch);
        edit(p, "\"arch\": 90", to);
    }
    if (version && *version) {
        char to[64];
        snprintf(to, sizeof to, "\"triton_version\": \"%s\"", version);
        edit(p, "\"triton_version\": \"3.6.0\"", to);
    } else if (version)
        edit(p, "\"triton_version\": \"3.6.0\", ", "");
}

static struct timespec ago(int64_t seconds)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    now.tv_sec -= seconds;
    return now;
}

/* Sets atime and mtime of every file of group key, then of its directory
 * (in that order: setting a file's times leaves the directory's alone). */
static void age_group(const char *key, int64_t mtime_ago, int64_t atime_ago)
{
    struct timespec t[2] = {ago(atime_ago), ago(mtime_ago)};
    char dir[1024];
    gpath(dir, sizeof dir, key, NULL);
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            cr_assert_eq(utimensat(dirfd(d), e->d_name, t, AT_SYMLINK_NOFOLLOW), 0);
    closedir(d);
    cr_assert_eq(utimensat(AT_FDCWD, dir, t, AT_SYMLINK_NOFOLLOW), 0);
}

static void prune(vyre_triton_prune_opts *o, vyre_triton_prune_result *r)
{
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_triton_prune(g_cache, o, r, &err), 0, "%s", err.message);
}

/* The keys removed, in order, separated by blanks. */
static const char *removed_keys(const vyre_triton_prune_result *r)
{
    static char s[2048];
    s[0] = '\0';
    for (size_t i = 0; i < r->n_removed; i++) {
        size_t n = strlen(s);
        snprintf(s + n, sizeof s - n, "%s%s:%s", i ? " " : "", r->removed[i].key,
                 r->removed[i].reason);
        cr_assert_eq(r->removed[i].error, 0, "%s", r->removed[i].message);
    }
    return s;
}

/* Four kernel groups and the launcher, last used 5h, 4h, 3h, 2h, 1h ago. */
static void five_groups(void)
{
    clone_group(AKEY, NULL, NULL);
    clone_group(BKEY, NULL, NULL);
    clone_group(CKEY, NULL, NULL);
    age_group(AKEY, 5 * 3600, 5 * 3600);
    age_group(KGROUP, 4 * 3600, 4 * 3600);
    age_group(BKEY, 3 * 3600, 3 * 3600);
    age_group(CKEY, 2 * 3600, 2 * 3600);
    age_group(LGROUP, 3600, 3600);
}

Test(triton_prune, max_size_removes_least_recently_used_first)
{
    five_groups();
    /* atime is last use where the filesystem keeps it: AAAA was read
     * 10 minutes ago, so BBBB and KGROUP are the oldest in use now. */
    age_group(AKEY, 5 * 3600, 600);
    vyre_triton_prune_opts o = {.max_size = g_top + 4 * KBYTES + LBYTES - 2 * KBYTES};
    vyre_triton_prune_result r;
    prune(&o, &r);
    cr_assert_str_eq(removed_keys(&r), KGROUP ":size " BKEY ":size");
    cr_assert_eq(r.removed_groups, 2);
    cr_assert_eq(r.removed_bytes, 2 * KBYTES);
    cr_assert_eq(r.removed_inodes, 2 * 9);
    cr_assert_eq(r.kept_groups, 3);
    cr_assert_eq(r.kept_bytes, g_top + 2 * KBYTES + LBYTES);
    cr_assert_eq(r.kept_inodes, 2 * 9 + 2);
    cr_assert(!exists(KGROUP) && !exists(BKEY));
    cr_assert(exists(AKEY) && exists(CKEY) && exists(LGROUP));
    vyre_triton_prune_result_release(&r);
    /* Under the limit now: nothing more goes. */
    prune(&o, &r);
    cr_assert_eq(r.n_removed, 0);
    vyre_triton_prune_result_release(&r);
}

Test(triton_prune, reading_the_cache_does_not_make_it_recently_used)
{
    /* A scan reads every manifest and metadata file; under relatime that
     * read would set their atime, and every group would look used just
     * now to the next prune (a daily timer would never see an old one). */
    five_groups();
    vyre_triton_cache c;
    vyre_error err;
    for (int pass = 0; pass < 2; pass++) {
        cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
        for (size_t i = 0; i < c.n_groups; i++) {
            int64_t age_s = (int64_t)ago(0).tv_sec - c.groups[i].last_use_ns / 1000000000;
            cr_assert_geq(age_s, 3600 - 5, "pass %d: '%s' last used %lld s ago", pass,
                          c.groups[i].key, (long long)age_s);
        }
        vyre_triton_cache_release(&c);
    }
}

Test(triton_prune, verifying_the_cache_does_not_make_it_recently_used)
{
    /* verify reads every group's .cubin (and the scan its JSON files):
     * without O_NOATIME, under relatime (atime <= mtime here), checking a
     * cache would make every group look used just now to the next prune. */
    five_groups();
    vyre_triton_cache c;
    vyre_error err;
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    vyre_triton_problem *p;
    size_t n;
    cr_assert_eq(vyre_triton_verify(&c, 0, &p, &n, &err), 0, "%s", err.message);
    cr_assert_eq(n, 0, "%s", n ? p[0].message : "");
    free(p);
    vyre_triton_cache_release(&c);
    cr_assert_eq(vyre_triton_cache_scan(g_cache, &c, &err), 0, "%s", err.message);
    for (size_t i = 0; i < c.n_groups; i++) {
        int64_t age_s = (int64_t)ago(0).tv_sec - c.groups[i].last_use_ns / 1000000000;
        cr_assert_geq(age_s, 3600 - 5, "after verify: '%s' last used %lld s ago", c.groups[i].key,
                      (long long)age_s);
        for (size_t f = 0; f < c.groups[i].n_files; f++) {
            const vyre_triton_file *x = &c.groups[i].files[f];
            cr_assert_leq(x->atime_ns, x->mtime_ns, "verify read '%s/%s' and moved its atime",
                          c.groups[i].key, x->name);
        }
    }
    vyre_triton_cache_release(&c);
}

Test(triton_prune, max_age)
{
    five_groups();
    vyre_triton_prune_opts o = {.max_age_ns = INT64_C(150) * 60 * 1000000000}; /* 2h30 */
    vyre_triton_prune_result r;
    prune(&o, &r);
    cr_assert_str_eq(removed_keys(&r), AKEY ":age " BKEY ":age " KGROUP ":age");
    cr_assert(exists(CKEY) && exists(LGROUP));
    vyre_triton_prune_result_release(&r);
}

Test(triton_prune, keep_arch_and_triton_version)
{
    clone_group("ARCH120", "120", NULL);
    clone_group("OLDVER", NULL, "3.5.1");
    clone_group("NOVER", NULL, "");
    const char *keys[] = {KGROUP, LGROUP, "ARCH120", "OLDVER", "NOVER"};
    for (size_t i = 0; i < 5; i++)
        age_group(keys[i], 7200, 7200);
    const char *keep[] = {"sm_90"};
    vyre_triton_prune_opts o = {.keep_arch = keep, .n_keep_arch = 1};
    vyre_triton_prune_result r;
    prune(&o, &r);
    cr_assert_str_eq(removed_keys(&r), "ARCH120:arch");
    vyre_triton_prune_result_release(&r);
    /* Keep-semantics: groups of any other Triton version go, and those
     * recording none (before 3.3); the launcher has no version: kept. */
    o = (vyre_triton_prune_opts){.triton_version = "3.6.0"};
    prune(&o, &r);
    cr_assert_str_eq(removed_keys(&r), "NOVER:triton-version OLDVER:triton-version");
    cr_assert(exists(KGROUP) && exists(LGROUP));
    vyre_triton_prune_result_release(&r);
}

/* Every entry of the cache, with sizes and times, as one string. */
static void snapshot(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    cr_assert(d, "%s", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[1300];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        cr_assert_eq(lstat(p, &st), 0);
        size_t n = strlen(out);
        snprintf(out + n, size - n, "%s %lld %lld %lld\n", p, (long long)st.st_size,
                 (long long)st.st_mtim.tv_sec, (long long)st.st_mtim.tv_nsec);
        if (S_ISDIR(st.st_mode))
            snapshot(p, out, size);
    }
    closedir(d);
}

Test(triton_prune, dry_run_touches_nothing)
{
    five_groups();
    char trash[1024];
    snprintf(trash, sizeof trash, "%s/.vyre-trash.DEAD.1.1", g_cache);
    cr_assert_eq(mkdir(trash, 0700), 0);
    static char before[65536], after[65536];
    before[0] = after[0] = '\0';
    snapshot(g_cache, before, sizeof before);
    vyre_triton_prune_opts o = {.max_size = 1, .dry_run = 1};
    o.now_ns = ((int64_t)ago(-120).tv_sec) * 1000000000; /* the trash is two minutes old */
    vyre_triton_prune_result r;
    prune(&o, &r);
    cr_assert_str_eq(removed_keys(&r), ".vyre-trash.DEAD.1.1:trash " AKEY ":size " KGROUP
                                       ":size " BKEY ":size " CKEY ":size " LGROUP ":size");
    cr_assert_eq(r.removed_groups, 6); /* the trash counts: it would go */
    cr_assert_eq(r.removed_bytes, 4 * KBYTES + LBYTES + tu_disk_bytes(trash));
    cr_assert_eq(r.kept_bytes, g_top, "the cache directory itself is left");
    cr_assert_eq(r.kept_groups, 0);
    snapshot(g_cache, after, sizeof after);
    cr_assert_str_eq(after, before, "--dry-run changed the cache");
    vyre_triton_prune_result_release(&r);
}

Test(triton_prune, a_group_younger_than_a_minute_is_never_touched)
{
    five_groups();
    /* Triton renamed a file into BBBB just now: the directory is new. */
    char dir[1024];
    struct timespec t[2] = {ago(3 * 3600), ago(10)};
    cr_assert_eq(utimensat(AT_FDCWD, gpath(dir, sizeof dir, BKEY, NULL), t, 0), 0);
    /* CCCC's directory is old, but one file in it is 30 s old. */
    char f[1024];
    t[1] = ago(30);
    cr_assert_eq(utimensat(AT_FDCWD, gpath(f, sizeof f, CKEY, "scale_kernel.ptx"), t, 0), 0);
    vyre_triton_prune_opts o = {.all = 1};
    vyre_triton_prune_result r;
    prune(&o, &r);
    cr_assert_str_eq(removed_keys(&r), LGROUP ":clear " AKEY ":clear " KGROUP ":clear");
    cr_assert_eq(r.young_groups, 2);
    cr_assert_eq(r.young_bytes, 2 * KBYTES);
    cr_assert_eq(r.kept_groups, 2);
    cr_assert(exists(BKEY) && exists(CKEY));
    vyre_triton_prune_result_release(&r);
}

Test(triton_prune, links_are_never_followed)
{
    five_groups();
    /* Outside the cache: a file and a folder a link in a group names. */
    char victim[1024], vdir[1024], vfile[1100], p[1024];
    snprintf(victim, sizeof victim, "%s/victim", g_tmp);
    tu_write_file(victim, "keep me", 7);
    snprintf(vdir, sizeof vdir, "%s/victim-dir", g_tmp);
    cr_assert_eq(mkdir(vdir, 0700), 0);
    snprintf(vfile, sizeof vfile, "%s/inside", vdir);
    tu_write_file(vfile, "keep me too", 11);
    cr_assert_eq(symlink(victim, gpath(p, sizeof p, AKEY, "scale_kernel.ptx.link")), 0);
    cr_assert_eq(symlink(vdir, gpath(p, sizeof p, AKEY, "subdir")), 0);
    age_group(AKEY, 5 * 3600, 5 * 3600);
    /* A link at the top, named like a group, to a folder outside. */
    cr_assert_eq(symlink(vdir, gpath(p, sizeof p, "LINKGROUP", NULL)), 0);
    vyre_triton_prune_opts o = {.all = 1};
    vyre_triton_prune_result r;
    prune(&o, &r);
    cr_assert(!exists(AKEY));
    cr_assert(exists("LINKGROUP"), "a link at the top was removed");
    struct stat st;
    cr_assert_eq(stat(victim, &st), 0, "a file a link named was removed");
    cr_assert_eq(stat(vfile, &st), 0, "a folder a link named was emptied");
    cr_assert_eq(r.kept_groups, 0);
    vyre_triton_prune_result_release(&r);
}

Test(triton_prune, a_dead_pruners_trash_is_finished_when_old)
{
    char trash[1024], p[1100];
    snprintf(trash, sizeof trash, "%s/.vyre-trash." KGROUP ".99999.1", g_cache);
    char src[1024];
    cr_assert_eq(rename(gpath(src, sizeof src, KGROUP, NULL), trash), 0);
    snprintf(p, sizeof p, "%s/scale_kernel.cubin", trash);
    cr_assert_eq(unlink(p), 0); /* half removed when its pruner died */
    /* Just renamed: another pruner may be removing it now. */
    vyre_triton_prune_opts o = {.max_size = 0};
    vyre_triton_prune_result r;
    prune(&o, &r);
    cr_assert_eq(r.n_removed, 0);
    cr_assert_eq(r.young_groups, 1);
    vyre_triton_prune_result_release(&r);
    struct stat st;
    cr_assert_eq(stat(trash, &st), 0);
    /* Two minutes later (the clock given), it is finished. */
    o.now_ns = ((int64_t)ago(-120).tv_sec) * 1000000000;
    prune(&o, &r);
    cr_assert_eq(r.n_removed, 1);
    cr_assert_str_eq(r.removed[0].reason, "trash");
    cr_assert_eq(r.removed[0].error, 0, "%s", r.removed[0].message);
    cr_assert_neq(stat(trash, &st), 0, "the trash is still there");
    vyre_triton_prune_result_release(&r);
    /* Nothing of it left under any name. */
    DIR *d = opendir(g_cache);
    struct dirent *e;
    while ((e = readdir(d)))
        cr_assert(strncmp(e->d_name, ".vyre-trash.", 12), "left: %s", e->d_name);
    closedir(d);
}

Test(triton_prune, old_temp_directories_go_young_ones_stay)
{
    char p[1024], f[1100];
    gpath(p, sizeof p, "tmp.pid_77_old", NULL);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(f, sizeof f, "%s/scale_kernel.ptx", p);
    tu_write_file(f, "x", 1);
    age_group("tmp.pid_77_old", 2 * 3600, 2 * 3600);
    gpath(p, sizeof p, "tmp.pid_78_new", NULL);
    cr_assert_eq(mkdir(p, 0700), 0);
    age_group("tmp.pid_78_new", 600, 600); /* a compile might still be using it */
    vyre_triton_prune_opts o = {0};
    vyre_triton_prune_result r;
    prune(&o, &r);
    cr_assert_str_eq(removed_keys(&r), "tmp.pid_77_old:temp");
    cr_assert(exists("tmp.pid_78_new") && exists(KGROUP) && exists(LGROUP));
    vyre_triton_prune_result_release(&r);
}

/* ---- a second process writing groups while prune runs ------------------ */

static int put_file(int gfd, const char *tmpdir, const char *name, const char *data)
{
    /* Triton 3.6 FileCacheManager.put: write into <group>/tmp.pid_<pid>_<uuid>/
     * <name>, os.replace it into the group, os.removedirs the temp dir. */
    if (mkdirat(gfd, tmpdir, 0700) != 0 && errno != EEXIST)
        return -1;
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/%s", tmpdir, name);
    int fd = openat(gfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t n = strlen(data);
    int bad = write(fd, data, n) != (ssize_t)n;
    bad |= close(fd) != 0;
    bad |= renameat(gfd, tmp, gfd, name) != 0;
    bad |= unlinkat(gfd, tmpdir, AT_REMOVEDIR) != 0;
    return bad ? -1 : 0;
}

static const char *const k_children[] = {"k.source", "k.ptx", "k.cubin", "k.json"};

/* One group the way Triton writes it: the children, the manifest last. */
static int write_group(const char *key, unsigned i)
{
    char dir[1024], tmpdir[64], body[4096];
    if (mkdir(gpath(dir, sizeof dir, key, NULL), 0700) != 0)
        return -1;
    int gfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (gfd < 0)
        return -1;
    snprintf(tmpdir, sizeof tmpdir, "tmp.pid_%ld_%u", (long)getpid(), i);
    int bad = 0;
    for (size_t c = 0; c < 4; c++)
        bad |= put_file(gfd, tmpdir, k_children[c],
                        c == 3 ? "{\"name\": \"k\", \"target\": {\"arch\": 90}, "
                                 "\"triton_version\": \"3.6.0\"}"
                               : "some kernel text of a few bytes") != 0;
    int n = snprintf(body, sizeof body, "{\"child_paths\": {");
    for (size_t c = 0; c < 4; c++)
        n += snprintf(body + n, sizeof body - (size_t)n, "%s\"%s\": \"%s/%s\"", c ? ", " : "",
                      k_children[c], dir, k_children[c]);
    snprintf(body + n, sizeof body - (size_t)n, "}}");
    bad |= put_file(gfd, tmpdir, "__grp__k.json", body) != 0;
    close(gfd);
    return bad ? -1 : 0;
}

/* 1 when group key is whole: its manifest and every child it names. */
static int group_whole(const char *key)
{
    char p[1024];
    size_t len;
    char *m = tu_read_file(gpath(p, sizeof p, key, "__grp__k.json"), &len);
    if (!m)
        m = tu_read_file(gpath(p, sizeof p, key, "__grp__scale_kernel.json"), &len);
    if (!m)
        return 0;
    json_error_t je;
    json_t *j = json_loads(m, 0, &je);
    free(m);
    const char *k;
    json_t *v;
    int whole = j != NULL;
    json_object_foreach(json_object_get(j, "child_paths"), k, v)
    {
        struct stat st;
        whole &= lstat(gpath(p, sizeof p, key, k), &st) == 0;
    }
    json_decref(j);
    return whole;
}

Test(triton_prune, a_writer_beside_prune_sees_no_error_and_no_half_group)
{
    /* Twenty old groups to prune, then a second process writes new ones
     * (Triton's way) while prune --max-size runs again and again. */
    char key[32];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "OLD%02d", i);
        clone_group(key, NULL, NULL);
        age_group(key, 7200 - i * 60, 7200 - i * 60);
    }
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int errors = 0;
        for (unsigned i = 0; i < 300; i++) {
            snprintf(key, sizeof key, "NEW%03u", i);
            errors += write_group(key, i) != 0;
        }
        _exit(errors > 255 ? 255 : errors);
    }
    vyre_triton_prune_opts o = {.max_size = g_top + 5 * KBYTES};
    int runs = 0, status = 0, reaped = 0;
    while (!reaped || runs < 5) {
        reaped = reaped || waitpid(pid, &status, WNOHANG) == pid;
        vyre_triton_prune_result r;
        prune(&o, &r);
        for (size_t i = 0; i < r.n_removed; i++) {
            cr_assert_eq(r.removed[i].error, 0, "%s", r.removed[i].message);
            cr_assert(!strncmp(r.removed[i].key, "OLD", 3), "a new group went: %s",
                      r.removed[i].key);
        }
        vyre_triton_prune_result_release(&r);
        runs++;
    }
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer met %d errors",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    /* Every group is whole or gone; the old ones went, the new ones stay. */
    DIR *d = opendir(g_cache);
    struct dirent *e;
    int new_groups = 0, old_groups = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, LGROUP))
            continue;
        cr_assert(strncmp(e->d_name, ".vyre-trash.", 12), "trash left: %s", e->d_name);
        cr_assert(group_whole(e->d_name), "half a group: %s", e->d_name);
        new_groups += !strncmp(e->d_name, "NEW", 3);
        old_groups += !strncmp(e->d_name, "OLD", 3);
    }
    closedir(d);
    cr_assert_eq(new_groups, 300);
    cr_assert_eq(old_groups, 0, "%d old groups left (prune ran %d times)", old_groups, runs);
}

/* Issue 35: a real Triton cache pruned to a size holds at most that size
 * by du -sk. The fixture's kernel group is eight files of 60 to 11,000
 * bytes, most under a block: counted by st_size, a prune to a size left
 * more than that on disk. */
Test(triton_prune, a_cache_pruned_to_a_size_holds_at_most_that_size_by_du)
{
    char key[64];
    for (int i = 0; i < 24; i++) {
        snprintf(key, sizeof key, "%s%02d", AKEY + 2, i); /* as long as Triton's keys */
        clone_group(key, NULL, NULL);
        age_group(key, 3600 + i * 60, 3600 + i * 60);
    }
    age_group(KGROUP, 7200, 7200);
    age_group(LGROUP, 600, 600);
    uint64_t before = tu_du_sk(g_cache) * 1024;
    cr_assert_eq(tu_disk_bytes(g_cache), before, "du -sk and lstat's st_blocks agree");
    uint64_t limit = before / 2;
    vyre_triton_prune_opts o = {.max_size = limit};
    vyre_triton_prune_result r;
    prune(&o, &r);
    uint64_t after = tu_du_sk(g_cache) * 1024;
    cr_assert_leq(after, limit, "pruned to %llu bytes, du -sk counts %llu",
                  (unsigned long long)limit, (unsigned long long)after);
    cr_assert_gt(r.removed_groups, 0);
    cr_assert_eq(r.total_bytes, before, "the cache's size is what du counts");
    cr_assert_eq(r.kept_bytes, after, "the report says what du counts");
    /* Not pruned further than needed: one more group would have fit. */
    cr_assert_gt(after + KBYTES, limit);
    vyre_triton_prune_result_release(&r);
}
