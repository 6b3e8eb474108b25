/*
 * test_cachectl_triton_hostile.c - `vyre-cachectl triton` against caches
 * made to hurt it (issue 33): the cache swapped for a link to someone
 * else's folder while prune, clear, verify --repair and relocate run; a
 * cache another user controls; manifests of a megabyte and 93,000
 * children; a quarantine that cannot be made; planted trash names; child
 * paths that leave the group; a cache path that is not UTF-8.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

#define KA "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define KB "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"

static char g_tmp[512];
static char g_cache[600];
static char g_env_home[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    cr_assert_eq(mkdir(g_cache, 0755), 0);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_triton_hostile, .init = setup, .fini = teardown, .timeout = 240);

static const char *const k_env[] = {
    g_env_home,           "TRITON_CACHE_DIR",           "TRITON_HOME", "XDG_CONFIG_HOME",
    "VYRE_PTX_CACHE_DIR", "VYRE_CACHE_TRITON_MAX_SIZE", NULL};

static void run(tu_proc *p, const char *const *args)
{
    tu_run_bin(p, VYRE_CACHECTL_BIN, args, k_env, NULL);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void put_at(const char *dir, const char *key, const char *file, const char *text)
{
    char p[1400];
    snprintf(p, sizeof p, "%s/%s", dir, key);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s/%s", dir, key, file);
    tu_write_file(p, text, strlen(text));
}

/* Sets the times of dir/key and its files to two days ago. */
static void age(const char *dir, const char *key, const char *const *files)
{
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= 2 * 86400;
    t[1] = t[0];
    char p[1400];
    for (size_t i = 0; files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s/%s", dir, key, files[i]);
        cr_assert_eq(utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW), 0, "%s", p);
    }
    snprintf(p, sizeof p, "%s/%s", dir, key);
    cr_assert_eq(utimensat(AT_FDCWD, p, t, 0), 0, "%s", p);
}

static const char *const k_files_a[] = {"k.source", "k.cubin", "k.json", "__grp__k.json", NULL};
static const char *const k_files_b[] = {"b.cubin", "__grp__b.json", NULL};

/* Two old groups in dir: KA a kernel group whose manifest points where the
 * cache was (relocate rewrites it), KB one whose manifest is not JSON
 * (verify --repair moves it). `what` goes into every file. */
static void two_groups(const char *dir, const char *what)
{
    char manifest[1024];
    snprintf(manifest, sizeof manifest,
             "{\"child_paths\": {\"k.source\": \"/old/place/%s/k.source\", \"k.cubin\": "
             "\"/old/place/%s/k.cubin\", \"k.json\": \"/old/place/%s/k.json\"}}",
             KA, KA, KA);
    put_at(dir, KA, "k.source", what);
    put_at(dir, KA, "k.cubin", what);
    put_at(dir, KA, "k.json", "{\"name\": \"k\"}");
    put_at(dir, KA, "__grp__k.json", manifest);
    put_at(dir, KB, "b.cubin", what);
    put_at(dir, KB, "__grp__b.json", "{\"child_paths\": ");
    age(dir, KA, k_files_a);
    age(dir, KB, k_files_b);
}

/* ---- the cache swapped for a link while a command runs ------------------- */

/* Shared with the swapper process. */
typedef struct swap_ctl {
    int pause, paused, stop;
    unsigned long swaps;
} swap_ctl;

static int get(const int *v)
{
    return __atomic_load_n(v, __ATOMIC_SEQ_CST);
}

static void set(int *v, int x)
{
    __atomic_store_n(v, x, __ATOMIC_SEQ_CST);
}

/* Swaps g_cache for a link to decoy and back, as fast as it can, until
 * told to stop; when told to pause, leaves the cache in place and says so. */
static void swapper(swap_ctl *ctl, const char *decoy, pid_t parent)
{
    /* Dies with the test, a failed assertion included. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0);
    char real[700];
    snprintf(real, sizeof real, "%s/cache.real", g_tmp);
    while (!get(&ctl->stop)) {
        if (get(&ctl->pause)) {
            set(&ctl->paused, 1);
            while (get(&ctl->pause) && !get(&ctl->stop))
                usleep(100);
            set(&ctl->paused, 0);
            continue;
        }
        if (rename(g_cache, real) == 0) {
            if (symlink(decoy, g_cache) == 0) {
                usleep(20);
                unlink(g_cache);
            }
            rename(real, g_cache);
            __atomic_add_fetch(&ctl->swaps, 1, __ATOMIC_SEQ_CST);
        }
        usleep(20);
    }
    _exit(0);
}

static void pause_swapper(swap_ctl *ctl)
{
    set(&ctl->pause, 1);
    for (int i = 0; i < 200000 && !get(&ctl->paused); i++)
        usleep(50);
    cr_assert(get(&ctl->paused), "the swapper did not pause");
    struct stat st;
    cr_assert_eq(lstat(g_cache, &st), 0);
    cr_assert(S_ISDIR(st.st_mode), "the cache is not in place");
}

/* Runs the CLI with output thrown away: its exit code (99: a sanitizer
 * report). */
static int run_quiet(const char *const *args)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        setenv("HOME", g_tmp, 1);
        for (size_t i = 1; k_env[i]; i++)
            unsetenv(k_env[i]);
        /* Output is thrown away: a sanitizer report must still fail. */
        static const char *const san[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS"};
        for (size_t i = 0; i < 2; i++) {
            char v[1024];
            const char *old = getenv(san[i]);
            snprintf(v, sizeof v, "%s%sexitcode=99:halt_on_error=1", old ? old : "",
                     old && *old ? ":" : "");
            setenv(san[i], v, 1);
        }
        char *argv[16];
        size_t n = 0;
        argv[n++] = strdup(VYRE_CACHECTL_BIN);
        for (size_t i = 0; args[i] && n < 15; i++)
            argv[n++] = strdup(args[i]);
        argv[n] = NULL;
        execv(VYRE_CACHECTL_BIN, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The decoy: another user's folder with entries named as the cache's
 * groups, each file's text recorded to be checked after. */
static const char *const k_decoy_files[] = {KA "/k.source",      KA "/k.cubin", KA "/k.json",
                                            KA "/__grp__k.json", KB "/b.cubin", KB "/__grp__b.json",
                                            "thesis.txt",        NULL};

static void make_decoy(const char *decoy)
{
    cr_assert_eq(mkdir(decoy, 0755), 0);
    two_groups(decoy, "the other user's work");
    char p[1400];
    snprintf(p, sizeof p, "%s/thesis.txt", decoy);
    tu_write_file(p, "chapter one", 11);
    /* Another user's: chown where we may (root), else a folder others may
     * write, which vyre refuses to change just the same. */
    if (geteuid() == 0) {
        for (size_t i = 0; k_decoy_files[i]; i++) {
            snprintf(p, sizeof p, "%s/%s", decoy, k_decoy_files[i]);
            cr_assert_eq(lchown(p, 65534, 65534), 0, "%s", p);
        }
        snprintf(p, sizeof p, "%s/%s", decoy, KA);
        cr_assert_eq(chown(p, 65534, 65534), 0);
        snprintf(p, sizeof p, "%s/%s", decoy, KB);
        cr_assert_eq(chown(p, 65534, 65534), 0);
        cr_assert_eq(chown(decoy, 65534, 65534), 0);
    } else {
        cr_assert_eq(chmod(decoy, 0777), 0);
    }
}

static void check_decoy(const char *decoy, int round, const char *cmd)
{
    char p[1400];
    for (size_t i = 0; k_decoy_files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", decoy, k_decoy_files[i]);
        size_t len;
        char *s = tu_read_file(p, &len);
        cr_assert(s, "round %d, after '%s': the other user's '%s' is gone", round, cmd,
                  k_decoy_files[i]);
        free(s);
    }
    snprintf(p, sizeof p, "%s/%s/__grp__k.json", decoy, KA);
    size_t len;
    char *s = tu_read_file(p, &len);
    cr_assert(strstr(s, "/old/place/"),
              "round %d, after '%s': the other user's manifest was "
              "rewritten:\n%s",
              round, cmd, s);
    free(s);
    snprintf(p, sizeof p, "%s/.vyre-quarantine", decoy);
    struct stat st;
    cr_assert_neq(lstat(p, &st), 0,
                  "round %d, after '%s': a quarantine in the other user's "
                  "folder",
                  round, cmd);
}

/* Empties the cache and puts the two groups back. */
static void refill(void)
{
    char p[1400];
    snprintf(p, sizeof p, "rm -rf '%s'/* '%s'/.vyre-*", g_cache, g_cache);
    cr_assert_eq(system(p), 0);
    two_groups(g_cache, "triton's own");
}

Test(cachectl_triton_hostile, swapping_the_cache_for_a_link_never_touches_the_folder_it_names)
{
    char decoy[700];
    snprintf(decoy, sizeof decoy, "%s/decoy", g_tmp);
    make_decoy(decoy);
    swap_ctl *ctl =
        mmap(NULL, sizeof *ctl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(ctl, MAP_FAILED);
    memset(ctl, 0, sizeof *ctl);
    set(&ctl->pause, 1);
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0)
        swapper(ctl, decoy, parent);
    const char *const *const cmds[] = {
        ARGS("triton", "prune", "--max-age", "1d", "--dir", g_cache),
        ARGS("triton", "clear", "--yes", "--dir", g_cache),
        ARGS("triton", "verify", "--repair", "--dir", g_cache),
        ARGS("triton", "relocate", "--dir", g_cache),
    };
    int rounds = 400, worked[4] = {0};
    for (int r = 0; r < rounds; r++) {
        pause_swapper(ctl);
        refill();
        set(&ctl->pause, 0);
        const char *const *cmd = cmds[r % 4];
        int code = run_quiet(cmd);
        cr_assert(code <= 2, "round %d: '%s %s' ended with %d", r, cmd[0], cmd[1], code);
        worked[r % 4] += code < 2;
        check_decoy(decoy, r, cmd[1]);
    }
    set(&ctl->stop, 1);
    int st;
    waitpid(pid, &st, 0);
    cr_log_info("%lu swaps in %d rounds; commands that ran on the real cache: prune %d, clear "
                "%d, verify --repair %d, relocate %d",
                ctl->swaps, rounds, worked[0], worked[1], worked[2], worked[3]);
    /* The race was run: the cache moved under the commands, and each
     * command also got the real cache (so each had something to do). */
    cr_assert_gt(ctl->swaps, (unsigned long)rounds);
    for (int i = 0; i < 4; i++)
        cr_assert_gt(worked[i], 0, "command %d never ran on the real cache", i);
    munmap(ctl, sizeof *ctl);
}

/* ---- a cache another user controls --------------------------------------- */

static void assert_untouched(void)
{
    char p[1400];
    struct stat st;
    for (size_t i = 0; k_files_a[i]; i++) {
        snprintf(p, sizeof p, "%s/%s/%s", g_cache, KA, k_files_a[i]);
        cr_assert_eq(lstat(p, &st), 0, "'%s' was removed", p);
    }
    snprintf(p, sizeof p, "%s/%s/__grp__k.json", g_cache, KA);
    size_t len;
    char *s = tu_read_file(p, &len);
    cr_assert(strstr(s, "/old/place/"), "the manifest was rewritten: %s", s);
    free(s);
    snprintf(p, sizeof p, "%s/%s", g_cache, KB);
    cr_assert_eq(lstat(p, &st), 0, "the bad group was moved");
}

/* Every command that changes files refuses; reading still works. */
static void refused_everywhere(const char *reason, const char *hint)
{
    const char *const *const changes[] = {
        ARGS("triton", "prune", "--max-age", "1d", "--dir", g_cache),
        ARGS("triton", "clear", "--yes", "--dir", g_cache),
        ARGS("triton", "verify", "--repair", "--dir", g_cache),
        ARGS("triton", "relocate", "--dir", g_cache),
    };
    for (size_t i = 0; i < 4; i++) {
        tu_proc p;
        run(&p, changes[i]);
        cr_assert_eq(p.exit_code, 2, "'%s' exit %d\n%s%s", changes[i][1], p.exit_code, p.out,
                     p.err);
        cr_assert(strstr(p.err, reason), "'%s':\n%s", changes[i][1], p.err);
        cr_assert(strstr(p.err, hint), "'%s':\n%s", changes[i][1], p.err);
        tu_proc_free(&p);
        assert_untouched();
    }
    tu_proc p;
    run(&p, ARGS("triton", "ls", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "AAAAAAAAAAAA"), "%s", p.out);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "prune", "--max-age", "1d", "--dry-run", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    assert_untouched();
}

Test(cachectl_triton_hostile, a_cache_others_can_write_is_not_changed)
{
    two_groups(g_cache, "x");
    cr_assert_eq(chmod(g_cache, 0757), 0);
    refused_everywhere("is writable by group or others (mode 0757)", "hint: run 'chmod go-w'");
}

Test(cachectl_triton_hostile, another_users_cache_is_not_changed)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give the cache to another uid (65534)");
    two_groups(g_cache, "x");
    cr_assert_eq(chown(g_cache, 65534, 65534), 0);
    refused_everywhere("is owned by uid 65534, not by you (uid 0)",
                       "hint: run the command as the cache's owner");
}

/* ---- manifests made to cost memory and time ------------------------------ */

/* A manifest of about `bytes` bytes naming as many children as fit: the
 * issue's 1 MiB held 93,197 ("abc":"/x", about 11 bytes each). */
static void big_manifest(const char *key, size_t bytes, size_t *children)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    char *s = malloc(bytes + 256);
    size_t n = (size_t)snprintf(s, bytes, "{\"child_paths\": {");
    size_t count = 0;
    while (n + 64 < bytes) {
        size_t c = count;
        char name[4] = {digits[c % 62], digits[c / 62 % 62], digits[c / 3844 % 62], 0};
        n += (size_t)snprintf(s + n, 64, "%s\"%s\":\"/x\"", count ? "," : "", name);
        count++;
    }
    n += (size_t)snprintf(s + n, 8, "}}");
    put_at(g_cache, key, "__grp__k.json", s);
    free(s);
    put_at(g_cache, key, "k.json", "{\"name\": \"k\"}");
    *children = count;
}

/* Runs the CLI with output thrown away in a child that reports the CLI's
 * peak RSS (getrusage(RUSAGE_CHILDREN): the CLI is its only child) and the
 * wall time. */
static void measure(const char *const *args, long *rss_kb, double *seconds, int *code)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t mid = fork();
    cr_assert_neq(mid, -1);
    if (mid == 0) {
        close(fds[0]);
        int c = run_quiet(args);
        struct rusage ru;
        getrusage(RUSAGE_CHILDREN, &ru);
        long v[2] = {ru.ru_maxrss, c};
        ssize_t w = write(fds[1], v, sizeof v);
        _exit(w == (ssize_t)sizeof v ? 0 : 1);
    }
    close(fds[1]);
    long v[2] = {0, -1};
    ssize_t r = read(fds[0], v, sizeof v);
    close(fds[0]);
    int st;
    waitpid(mid, &st, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    cr_assert_eq(r, (ssize_t)sizeof v);
    *rss_kb = v[0];
    *code = (int)v[1];
    *seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

Test(cachectl_triton_hostile, huge_manifests_cost_little_memory_and_time)
{
    /* The baseline: the same commands on a cache of one ordinary group. */
    two_groups(g_cache, "x");
    long base_kb = 0, kb;
    double s;
    int code;
    const char *const *const cmds[] = {
        ARGS("triton", "ls", "--dir", g_cache),
        ARGS("triton", "stats", "--dir", g_cache),
        ARGS("triton", "verify", "--dir", g_cache),
    };
    for (size_t i = 0; i < 3; i++) {
        measure(cmds[i], &kb, &s, &code);
        base_kb = kb > base_kb ? kb : base_kb;
    }
    /* The cache: 12 groups each with a 1 MiB manifest of ~93,000
     * children (over the size cap), and 12 more just under the size cap
     * with ~5,900 children each (over the children cap). */
    size_t big = 0, under = 0;
    for (int i = 0; i < 24; i++) {
        char key[64];
        snprintf(key, sizeof key, "HOSTILE%02dXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", i);
        if (i < 12)
            big_manifest(key, 1 << 20, &big);
        else
            big_manifest(key, (64 << 10) - 512, &under);
    }
    cr_assert_gt(big, 90000, "%zu children", big);
    cr_assert_gt(under, 1024, "%zu children", under);
    for (size_t i = 0; i < 3; i++) {
        measure(cmds[i], &kb, &s, &code);
        cr_log_info("triton %s: %.2f s, max RSS %ld KiB (baseline %ld KiB)", cmds[i][1], s, kb,
                    base_kb);
        cr_assert_leq(code, 1, "'%s' exit %d", cmds[i][1], code);
        cr_assert_lt(s, 2.0, "'triton %s' took %.2f s", cmds[i][1], s);
        cr_assert_lt(kb - base_kb, 100 * 1024, "'triton %s' peaked at %ld KiB, %ld over baseline",
                     cmds[i][1], kb, kb - base_kb);
    }
    /* Over the caps: each group's own problem, named. */
    tu_proc p;
    run(&p, ARGS("triton", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s", p.err);
    cr_assert(strstr(p.out, "bad-manifest: HOSTILE00XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX: "
                            "cannot read '__grp__k.json': "),
              "%.2000s", p.out);
    cr_assert(strstr(p.out, "more than the 65536 read"), "%.2000s", p.out);
    cr_assert(strstr(p.out, "bad-manifest: HOSTILE12XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX: "
                            "'__grp__k.json' names "),
              "%.2000s", p.out);
    cr_assert(strstr(p.out, "children, more than the 1024 read"), "%.2000s", p.out);
    tu_proc_free(&p);
}

/* ---- reports that tell the truth ----------------------------------------- */

Test(cachectl_triton_hostile, a_quarantine_that_cannot_be_made_is_no_move)
{
    two_groups(g_cache, "x");
    char q[700];
    snprintf(q, sizeof q, "%s/.vyre-quarantine", g_cache);
    tu_write_file(q, "in the way", 10);
    tu_proc p;
    run(&p, ARGS("triton", "verify", "--repair", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(!strstr(p.out, "(moved to"), "%s", p.out);
    cr_assert(strstr(p.out, "bad-manifest: " KB ": '__grp__b.json' is not JSON"), "%s", p.out);
    char line[1400];
    snprintf(line, sizeof line,
             "quarantine-failed: " KB ": '%s/.vyre-quarantine' is not a directory (not moved: "
             "Triton still finds it)",
             g_cache);
    cr_assert(tu_has_line(p.out, line), "no line '%s' in:\n%s", line, p.out);
    /* KA's cubin is no cubin either: two groups, neither moved. */
    tu_assert_line(p.out, "0 groups moved to .vyre-quarantine, 2 could not be moved");
    tu_proc_free(&p);
    run(&p, ARGS("triton", "verify", "--repair", "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    json_t *j = json_loads(p.out, 0, NULL);
    cr_assert(j, "%s", p.out);
    size_t i, bad = 0;
    json_t *e;
    json_array_foreach(json_object_get(j, "problems"), i, e)
    {
        cr_assert(json_is_false(json_object_get(e, "quarantined")), "%s", p.out);
        if (json_is_true(json_object_get(e, "group_unusable"))) {
            bad++;
            cr_assert(strstr(json_string_value(json_object_get(e, "quarantine_error")),
                             "is not a directory"),
                      "%s", p.out);
        }
    }
    cr_assert_eq(bad, 3, "%s", p.out); /* KA bad-cubin, KB bad-manifest, bad-metadata */
    json_decref(j);
    tu_proc_free(&p);
    char g[700];
    snprintf(g, sizeof g, "%s/%s/__grp__b.json", g_cache, KB);
    struct stat st;
    cr_assert_eq(lstat(g, &st), 0, "the group moved after all");
}

/* ---- smaller things ------------------------------------------------------ */

Test(cachectl_triton_hostile, planted_trash_names_are_listed_and_left)
{
    two_groups(g_cache, "x");
    char p1[700], p2[700], p3[700];
    snprintf(p1, sizeof p1, "%s/.vyre-trash.file", g_cache);
    snprintf(p2, sizeof p2, "%s/.vyre-trash.link", g_cache);
    snprintf(p3, sizeof p3, "%s/.vyre-trash.fifo", g_cache);
    tu_write_file(p1, "planted", 7);
    cr_assert_eq(symlink(g_tmp, p2), 0);
    cr_assert_eq(mkfifo(p3, 0600), 0);
    for (int round = 0; round < 2; round++) {
        tu_proc p;
        run(&p, ARGS("triton", "prune", "--max-age", "1d", "--dir", g_cache));
        cr_assert_eq(p.exit_code, 0, "round %d:\n%s%s", round, p.out, p.err);
        tu_proc_free(&p);
    }
    struct stat st;
    cr_assert_eq(lstat(p1, &st), 0);
    cr_assert_eq(lstat(p2, &st), 0);
    cr_assert_eq(lstat(p3, &st), 0);
    tu_proc p;
    run(&p, ARGS("triton", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert(strstr(p.out, "orphan: .vyre-trash.fifo: '.vyre-trash.fifo' is not a group "
                            "directory"),
              "%s", p.out);
    tu_proc_free(&p);
}

Test(cachectl_triton_hostile, show_and_verify_never_follow_a_child_out_of_the_group)
{
    two_groups(g_cache, "x");
    put_at(g_cache, KA, "__grp__k.json",
           "{\"child_paths\": {\"k.source\": \"/old/place/" KA "/k.source\", \"k.cubin\": "
           "\"/etc/passwd\", \"k.json\": \"/old/place/" KA "/../../etc/k.json\"}}");
    tu_proc p;
    run(&p, ARGS("triton", "show", KA, "--json", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *j = json_loads(p.out, 0, NULL);
    cr_assert(j, "%s", p.out);
    json_t *ch = json_object_get(json_array_get(json_object_get(j, "groups"), 0), "children");
    cr_assert_eq(json_array_size(ch), 3, "%s", p.out);
    size_t i;
    json_t *c;
    json_array_foreach(ch, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        cr_assert(json_is_false(json_object_get(c, "exists")), "%s", p.out);
        cr_assert_str_eq(json_string_value(json_object_get(c, "place")),
                         strcmp(name, "k.source") ? "outside" : "moved", "%s", name);
    }
    json_decref(j);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "show", KA, "--dir", g_cache));
    cr_assert(strstr(p.out, "k.cubin -> /etc/passwd  outside the group, not looked at"), "%s",
              p.out);
    tu_proc_free(&p);
    run(&p, ARGS("triton", "verify", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 1, "%s", p.err);
    cr_assert(strstr(p.out, "outside-group: " KA ": '__grp__k.json' points 2 of its 3 children "
                            "outside the group (first: "),
              "%s", p.out);
    tu_proc_free(&p);
}

Test(cachectl_triton_hostile, relocate_never_writes_a_path_out_of_the_group)
{
    two_groups(g_cache, "x");
    const char *text = "{\"child_paths\": {\"k.cubin\": \"/old/place/" KA
                       "/k.cubin\", \"../../escape\": \"/old/place/x\"}}";
    put_at(g_cache, KA, "__grp__k.json", text);
    tu_proc p;
    run(&p, ARGS("triton", "relocate", "--dir", g_cache));
    cr_assert_eq(p.exit_code, 2, "%s%s", p.out, p.err);
    cr_assert(strstr(p.err, "names a child '../../escape' that is not a file of the group"), "%s",
              p.err);
    tu_proc_free(&p);
    char m[1400];
    snprintf(m, sizeof m, "%s/%s/__grp__k.json", g_cache, KA);
    size_t len;
    char *s = tu_read_file(m, &len);
    cr_assert_str_eq(s, text);
    free(s);
}

Test(cachectl_triton_hostile, relocate_in_a_path_that_is_not_utf8_says_so)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/cach\xe9", g_tmp); /* Latin-1 e-acute */
    cr_assert_eq(mkdir(dir, 0755), 0);
    two_groups(dir, "x");
    tu_proc p;
    run(&p, ARGS("triton", "relocate", "--dir", dir));
    cr_assert_eq(p.exit_code, 2, "%s%s", p.out, p.err);
    cr_assert(strstr(p.err, "is not UTF-8: a JSON manifest cannot hold it"), "%s", p.err);
    cr_assert(strstr(p.err, "hint: move or link the cache to a UTF-8"), "%s", p.err);
    cr_assert(!strstr(p.err, "out of memory"), "%s", p.err);
    tu_proc_free(&p);
}
