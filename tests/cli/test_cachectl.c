/*
 * test_cachectl.c - the real vyre-cachectl binary on real caches: exact
 * output lines, JSON fields and exit codes for every subcommand and every
 * bad-input case.
 *
 * Caches are populated through libcore (vyre_cache_put with synthetic
 * payloads, chosen keys, kinds, architectures, toolchains and creation
 * times) and through `seed` from CUDA C and PTX written here and compiled by
 * the toolkit's NVRTC / nvJitLink (skipped with a reason when they cannot be
 * loaded). Every run gets HOME and XDG_CACHE_HOME in a fresh temp directory
 * and no VYRE_PTX_CACHE_DIR / CUDA_CACHE_*; changes are made in the child
 * only (tu_run).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include "cuda/compile_internal.h"
#include "testutil.h"
#include "vyre/compile.h"
#include "vyre/vyre.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

static char g_tmp[512];
static char g_cache[600];
static char g_env_home[700];
static char g_env_xdg[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    /* The configuration (vyre/config.h) of this test alone, in this
     * process (which opens caches too) and in the children it runs. */
    char conf[600];
    snprintf(conf, sizeof conf, "%s/config", g_tmp);
    setenv("XDG_CONFIG_HOME", conf, 1);
    static const char *const conf_env[] = {"VYRE_CACHE_MAX_SIZE", "VYRE_CACHE_MAX_AGE",
                                           "VYRE_CACHE_UMASK", "VYRE_CACHE_READ_ONLY",
                                           "VYRE_CACHE_QUARANTINE_MAX_AGE"};
    for (size_t i = 0; i < sizeof conf_env / sizeof conf_env[0]; i++)
        unsetenv(conf_env[i]);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl, .init = setup, .fini = teardown, .timeout = 120);

/* ---- running the binary ---------------------------------------------------- */

/* Runs vyre-cachectl with the NULL-terminated args and extra environment
 * entries (may be NULL). */
static void run_env(tu_proc *p, const char *const *args, const char *const *extra)
{
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               "VYRE_PTX_CACHE_DIR",
                               "CUDA_CACHE_PATH",
                               "CUDA_CACHE_MAXSIZE",
                               "CUDA_CACHE_DISABLE",
                               NULL};
    tu_run_bin(p, VYRE_CACHECTL_BIN, args, env, extra);
}

#define RUN(p, ...)          run_env((p), (const char *const[]){__VA_ARGS__, NULL}, NULL)
#define RUN_ENV(p, env, ...) run_env((p), (const char *const[]){__VA_ARGS__, NULL}, (env))
/* With --cache-dir pointing at this test's cache. */
#define CC(p, ...) RUN(p, "--cache-dir", g_cache, __VA_ARGS__)

/* Line i (0-based) of text into buf. */
static const char *line_no(const char *text, int i, char *buf, size_t size)
{
    const char *p = text;
    for (; i > 0 && p; i--) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p || !*p) {
        buf[0] = '\0';
        return buf;
    }
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n >= size)
        n = size - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

/* Parses a --json document and checks its schema_version (docs/JSON.md). */
static json_t *parse_json(const char *text, json_int_t schema_version)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    cr_assert_not_null(o, "bad JSON (%s) in:\n%s", je.text, text);
    cr_assert_eq(json_integer_value(json_object_get(o, "schema_version")), schema_version);
    return o;
}

static json_int_t jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "'%s' is not an integer", key);
    return json_integer_value(v);
}

/* The three lines of a usage error. */
static void assert_usage_error(const tu_proc *p, const char *message, const char *hint,
                               const char *sub)
{
    char want[1024], buf[1024];
    cr_assert_eq(p->exit_code, 2, "exit %d, stderr:\n%s", p->exit_code, p->err);
    cr_assert_str_empty(p->out);
    snprintf(want, sizeof want, "vyre-cachectl: error: %s", message);
    cr_assert_str_eq(line_no(p->err, 0, buf, sizeof buf), want);
    int i = 1;
    if (hint) {
        snprintf(want, sizeof want, "hint: %s", hint);
        cr_assert_str_eq(line_no(p->err, i++, buf, sizeof buf), want);
    }
    if (sub)
        snprintf(want, sizeof want, "try 'vyre-cachectl %s --help'", sub);
    else
        snprintf(want, sizeof want, "try 'vyre-cachectl --help'");
    cr_assert_str_eq(line_no(p->err, i, buf, sizeof buf), want);
    cr_assert_eq(tu_count_lines(p->err), i + 1, "stderr:\n%s", p->err);
}

/* ---- populating caches through libcore ------------------------------------ */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define SEC  INT64_C(1000000000)
#define HOUR (3600 * SEC)
#define DAY  (24 * HOUR)

/* A key whose hex starts with `prefix`, then zeros. */
static vyre_key key_of(const char *prefix)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    memset(hex, '0', VYRE_KEY_HEX_LEN);
    hex[VYRE_KEY_HEX_LEN] = '\0';
    memcpy(hex, prefix, strlen(prefix));
    vyre_key k;
    cr_assert_eq(vyre_key_from_hex(hex, &k), 0, "bad key prefix %s", prefix);
    return k;
}

static void put_blob(vyre_cache *c, const char *prefix, uint32_t kind, const char *arch,
                     const char *toolchain, int64_t created, size_t len, uint64_t compile_ns)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = key_of(prefix);
    h.kind = kind;
    snprintf(h.arch, sizeof h.arch, "%s", arch);
    snprintf(h.toolchain, sizeof h.toolchain, "%s", toolchain);
    h.created_unix_ns = created;
    h.compile_ns = compile_ns;
    unsigned char *payload = malloc(len);
    cr_assert_not_null(payload);
    for (size_t i = 0; i < len; i++)
        payload[i] = (unsigned char)(i * 31 + (size_t)prefix[0]);
    vyre_error err;
    cr_assert_eq(vyre_cache_put(c, &h, payload, len, &err), 0, "put: %s", err.message);
    free(payload);
}

static vyre_cache *open_cache(void)
{
    vyre_cache *c = NULL;
    vyre_error err;
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &err), 0, "open: %s", err.message);
    return c;
}

#define K1 "1111"
#define K2 "2222"
#define K3 "abcd1"
#define K4 "abcd2"
static char g_hex[4][VYRE_KEY_HEX_LEN + 1];

/*
 * The standard cache (files are payload + 256 header bytes, 11024 in all):
 *   K1 cubin sm_80  nvrtc-13.0     created 40d ago  1000 B  never used
 *   K2 cubin sm_90a nvrtc-13.0     created 2d ago   2000 B  2 hits (now)
 *   K3 ptx   sm_90  nvrtc-12.4     created 3h ago   3000 B  never used
 *   K4 cubin sm_90  nvjitlink-13.0 created 10m ago  4000 B  never used
 * LRU order: K1, K3, K4, K2.
 */
static void populate(void)
{
    vyre_cache *c = open_cache();
    int64_t now = now_ns();
    put_blob(c, K1, VYRE_BLOB_CUBIN, "sm_80", "nvrtc-13.0", now - 40 * DAY, 1000, 5000000);
    put_blob(c, K2, VYRE_BLOB_CUBIN, "sm_90a", "nvrtc-13.0", now - 2 * DAY, 2000, 10000000);
    put_blob(c, K3, VYRE_BLOB_PTX, "sm_90", "nvrtc-12.4", now - 3 * HOUR, 3000, 0);
    put_blob(c, K4, VYRE_BLOB_CUBIN, "sm_90", "nvjitlink-13.0", now - 10 * 60 * SEC, 4000, 0);
    vyre_key k2 = key_of(K2);
    for (int i = 0; i < 2; i++) {
        vyre_blob *b = NULL;
        vyre_error err;
        cr_assert_eq(vyre_cache_get(c, &k2, &b, NULL, &err), 0, "get: %s", err.message);
        vyre_blob_free(b);
    }
    vyre_cache_close(c);
    const char *prefixes[4] = {K1, K2, K3, K4};
    for (int i = 0; i < 4; i++) {
        vyre_key k = key_of(prefixes[i]);
        vyre_key_to_hex(&k, g_hex[i]);
    }
}

static void blob_path(const char *hex, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s/blobs/%.2s/%s.vblob", g_cache, hex, hex);
    cr_assert(n > 0 && (size_t)n < size, "blob path too long");
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Sizes are on disk, as du counts them (st_blocks * 512), measured on the
 * filesystem the test runs on. The blob whose key is hex: */
static uint64_t blob_disk(const char *hex)
{
    char path[900];
    blob_path(hex, path, sizeof path);
    return tu_disk_bytes(path);
}

/* Every blob file of the cache, on disk. */
static uint64_t blobs_disk(void)
{
    return tu_blobs_disk(g_cache);
}

/* ---- help, version, unknown commands and options ---------------------------- */

Test(cachectl, help_and_version)
{
    tu_proc p;
    RUN(&p, "--help");
    cr_assert_eq(p.exit_code, 0);
    cr_assert(strncmp(p.out, "usage: vyre-cachectl ", 21) == 0, "%s", p.out);
    tu_assert_line(p.out, "exit status:");
    tu_assert_line(p.out, "  1  problems found (verify), or prune could not reach its size target");
    tu_proc_free(&p);

    static const char *const subs[] = {"stats",   "ls",   "show",  "verify", "prune",
                                       "reindex", "seed", "clear", "jit"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        RUN(&p, subs[i], "--help");
        cr_assert_eq(p.exit_code, 0, "%s --help", subs[i]);
        char want[64];
        snprintf(want, sizeof want, "usage: vyre-cachectl %s", subs[i]);
        cr_assert(strncmp(p.out, want, strlen(want)) == 0, "%s", p.out);
        cr_assert(strstr(p.out, "exit status: 0"), "%s --help lacks exit codes", subs[i]);
        cr_assert_str_empty(p.err);
        tu_proc_free(&p);
    }

    RUN(&p, "--version");
    char want[128];
    snprintf(want, sizeof want, "vyre-cachectl %s ", vyre_version());
    cr_assert_eq(p.exit_code, 0);
    cr_assert(strncmp(p.out, want, strlen(want)) == 0, "%s", p.out);
    tu_proc_free(&p);

    RUN(&p, "--cache-dir", g_cache);
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strncmp(p.err, "usage: vyre-cachectl", 20) == 0);
    tu_proc_free(&p);
}

Test(cachectl, unknown_command_suggests_nearest)
{
    tu_proc p;
    RUN(&p, "stat");
    assert_usage_error(&p, "unknown command 'stat'", "did you mean 'stats'?", NULL);
    tu_proc_free(&p);
    RUN(&p, "purne", "--max-size", "1M");
    assert_usage_error(&p, "unknown command 'purne'", "did you mean 'prune'?", NULL);
    tu_proc_free(&p);
    RUN(&p, "frobnicate");
    assert_usage_error(&p, "unknown command 'frobnicate'", NULL, NULL);
    tu_proc_free(&p);
}

Test(cachectl, unknown_option_suggests_nearest)
{
    tu_proc p;
    CC(&p, "prune", "--dry-rn", "--max-size", "1M");
    assert_usage_error(&p, "unknown option '--dry-rn' for 'prune'", "did you mean '--dry-run'?",
                       "prune");
    tu_proc_free(&p);
    RUN(&p, "--jsn", "stats");
    assert_usage_error(&p, "unknown option '--jsn'", "did you mean '--json'?", NULL);
    tu_proc_free(&p);
    CC(&p, "verify", "--repiar");
    assert_usage_error(&p, "unknown option '--repiar' for 'verify'", "did you mean '--repair'?",
                       "verify");
    tu_proc_free(&p);
    CC(&p, "ls", "-x");
    assert_usage_error(&p, "unknown option '-x' for 'ls'", NULL, "ls");
    tu_proc_free(&p);
    CC(&p, "ls", "--sort");
    assert_usage_error(&p, "option '--sort' needs a value", NULL, "ls");
    tu_proc_free(&p);
    CC(&p, "stats", "--json=yes");
    assert_usage_error(&p, "option '--json' takes no value", NULL, "stats");
    tu_proc_free(&p);
    CC(&p, "stats", "extra");
    assert_usage_error(&p, "unexpected argument 'extra'", NULL, "stats");
    tu_proc_free(&p);
}

/* ---- bad values and conflicting flags --------------------------------------- */

/* prune --max-size reads sizes as max_size does: a bare number is GiB. */
#define SIZE_HINT                                                                                  \
    "a size without a unit is GiB: write 5G, 500M, 1.5GiB or 750MB (K/M/G/T and KiB/MiB/GiB/TiB "  \
    "are powers of 1024; KB/MB/GB/TB of 1000)"
#define AGE_HINT "write an age such as 90m, 12h, 30d or 2w (units: s, m, h, d, w)"

Test(cachectl, malformed_sizes_and_ages)
{
    populate();
    tu_proc p;
    CC(&p, "prune", "--max-size", "10QB");
    assert_usage_error(&p, "--max-size: '10QB' has an unknown size unit 'QB'", SIZE_HINT, "prune");
    tu_proc_free(&p);
    CC(&p, "prune", "--max-size", "1e99G");
    assert_usage_error(&p, "--max-size: '1e99G' has an unknown size unit 'e99G'", SIZE_HINT,
                       "prune");
    tu_proc_free(&p);
    CC(&p, "prune", "--max-size", "99999999999T");
    assert_usage_error(&p, "--max-size: size '99999999999T' is too large", SIZE_HINT, "prune");
    tu_proc_free(&p);
    CC(&p, "prune", "--max-size", "-5M");
    assert_usage_error(&p, "--max-size: '-5M' is not a size", SIZE_HINT, "prune");
    tu_proc_free(&p);
    CC(&p, "prune", "--max-age", "-3d");
    assert_usage_error(&p, "--max-age: '-3d' is not an age", AGE_HINT, "prune");
    tu_proc_free(&p);
    CC(&p, "prune", "--max-age", "30");
    assert_usage_error(&p, "--max-age: age '30' has no unit", AGE_HINT, "prune");
    tu_proc_free(&p);
    CC(&p, "ls", "--older-than", "3y");
    assert_usage_error(&p, "--older-than: '3y' has an unknown age unit 'y'", AGE_HINT, "ls");
    tu_proc_free(&p);
    CC(&p, "prune", "--arch", "sm_9x");
    assert_usage_error(&p, "'sm_9x' is not an architecture",
                       "write an architecture such as sm_80, sm_90a or sm_100f", "prune");
    tu_proc_free(&p);
    CC(&p, "ls", "--limit", "0");
    assert_usage_error(&p, "--limit '0' is not a count", "give a positive whole number", "ls");
    tu_proc_free(&p);
    CC(&p, "ls", "--sort", "sise");
    assert_usage_error(&p, "unknown sort field 'sise'",
                       "did you mean 'size'? sort by lru, size, age, hits or key", "ls");
    tu_proc_free(&p);
    CC(&p, "ls", "--kind", "elf");
    assert_usage_error(&p, "unknown kind 'elf'", "kinds are cubin, ptx and fatbin", "ls");
    tu_proc_free(&p);

    /* Nothing was removed by any of these. */
    CC(&p, "ls", "-q");
    cr_assert_eq(tu_count_lines(p.out), 4);
    tu_proc_free(&p);
}

Test(cachectl, conflicting_flags)
{
    populate();
    tu_proc p;
    /* No option: the configured limits (5 GiB by default), nothing to do. */
    CC(&p, "prune");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Removed 0 blobs (0 B)");
    tu_proc_free(&p);
    CC(&p, "prune", "--dry-run");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Would remove 0 blobs (0 B)");
    tu_proc_free(&p);
    CC(&p, "prune", "--max-size", "1K", "--toolchain", "nvrtc-13.0");
    assert_usage_error(&p, "--toolchain only goes with --stale-toolchain",
                       "add --stale-toolchain to remove the other ones", "prune");
    tu_proc_free(&p);
    CC(&p, "--json", "-q", "stats");
    assert_usage_error(&p, "-q and --json conflict: -q silences the output --json asks for",
                       "use --json for machine output, or -q for none", "stats");
    tu_proc_free(&p);
    CC(&p, "ls", "-q", "-v");
    assert_usage_error(&p, "-q and -v conflict", "give one of them", "ls");
    tu_proc_free(&p);
    RUN(&p, "jit", "--yes");
    assert_usage_error(&p, "--yes only goes with --clear", "use 'vyre-cachectl jit --clear --yes'",
                       "jit");
    tu_proc_free(&p);
    CC(&p, "show");
    assert_usage_error(&p, "show needs a key or key prefix",
                       "list the keys with 'vyre-cachectl ls'", "show");
    tu_proc_free(&p);
    CC(&p, "show", "1111", "2222");
    assert_usage_error(&p, "unexpected argument '2222'", "show one blob at a time", "show");
    tu_proc_free(&p);
    CC(&p, "prune", "--max-size", "1K", "--dry-run");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    cr_assert_eq(tu_count_lines(p.out), 4, "dry run removed something");
    tu_proc_free(&p);
}

/* ---- the cache directory: missing, unsafe, corrupt index ---------------------- */

Test(cachectl, missing_cache_dir_is_not_created)
{
    /* stats, ls and verify show an empty cache there (first_use_*). */
    static const char *const cmds[][3] = {
        {"show", "abcd", NULL},  {"verify", "--repair", NULL}, {"prune", "--max-size", "1M"},
        {"reindex", NULL, NULL}, {"clear", "--yes", NULL},
    };
    char want[1024];
    snprintf(want, sizeof want, "vyre-cachectl: error: cache directory '%s' does not exist",
             g_cache);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        tu_proc p;
        const char *args[8] = {"--cache-dir", g_cache, cmds[i][0], cmds[i][1], cmds[i][2], NULL};
        run_env(&p, args, NULL);
        char buf[1024];
        cr_assert_eq(p.exit_code, 2, "%s: exit %d", cmds[i][0], p.exit_code);
        cr_assert_str_eq(line_no(p.err, 0, buf, sizeof buf), want);
        cr_assert_str_eq(line_no(p.err, 1, buf, sizeof buf),
                         "hint: nothing has been cached there yet; check --cache-dir / "
                         "VYRE_PTX_CACHE_DIR");
        cr_assert_str_empty(p.out);
        cr_assert(!exists(g_cache), "%s created the cache directory", cmds[i][0]);
        tu_proc_free(&p);
    }

    /* The default root comes from the environment. */
    char env_dir[700];
    snprintf(env_dir, sizeof env_dir, "VYRE_PTX_CACHE_DIR=%s", g_cache);
    const char *env[] = {env_dir, NULL};
    tu_proc p;
    RUN_ENV(&p, env, "prune", "--max-size", "1M");
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, g_cache));
    tu_proc_free(&p);
    const char *empty[] = {"VYRE_PTX_CACHE_DIR=", NULL};
    RUN_ENV(&p, empty, "stats");
    cr_assert_eq(p.exit_code, 2);
    tu_assert_line(p.err, "vyre-cachectl: error: VYRE_PTX_CACHE_DIR is set but empty");
    tu_proc_free(&p);
}

Test(cachectl, unsafe_cache_dir_refused)
{
    populate();
    cr_assert_eq(chmod(g_cache, 0777), 0);
    char l1[1024], l2[4096], buf[4096];
    snprintf(l1, sizeof l1,
             "vyre-cachectl: error: cache directory '%s' is writable by group or others (mode "
             "0777): refusing to load blobs others could plant",
             g_cache);
    snprintf(l2, sizeof l2,
             "hint: run 'chmod go-w %s' (vyre creates it 0700); to share the cache with a group "
             "instead: 'chgrp GROUP %s && chmod 2775 %s', and 'umask = 002' in %s/vyre.conf",
             g_cache, g_cache, g_cache, g_cache);
    static const char *const cmds[] = {"stats", "ls", "verify", "reindex"};
    for (size_t i = 0; i < 4; i++) {
        tu_proc p;
        CC(&p, cmds[i]);
        cr_assert_eq(p.exit_code, 2, "%s", cmds[i]);
        cr_assert_str_eq(line_no(p.err, 0, buf, sizeof buf), l1);
        cr_assert_str_eq(line_no(p.err, 1, buf, sizeof buf), l2);
        tu_proc_free(&p);
    }
    cr_assert_eq(chmod(g_cache, 0700), 0);
    tu_proc p;
    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
}

Test(cachectl, corrupt_index_then_reindex)
{
    populate();
    char idx[700];
    snprintf(idx, sizeof idx, "%s/index.sqlite3", g_cache);
    static const char garbage[] =
        "this is not an SQLite database, not at all, not even close....."
        "................................................................";
    tu_write_file(idx, garbage, sizeof garbage);
    static const char *const cmds[] = {"stats", "ls", "verify"};
    for (size_t i = 0; i < 3; i++) {
        tu_proc p;
        CC(&p, cmds[i]);
        cr_assert_eq(p.exit_code, 2, "%s: exit %d\n%s", cmds[i], p.exit_code, p.err);
        cr_assert(strncmp(p.err, "vyre-cachectl: error: ", 22) == 0, "%s", p.err);
        const char *hint = strstr(p.err, "\nhint: ");
        cr_assert_not_null(hint, "%s", p.err);
        cr_assert(strstr(hint, "vyre-cachectl reindex"), "hint lacks reindex: %s", p.err);
        tu_proc_free(&p);
    }
    tu_proc p;
    CC(&p, "reindex");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Blob files scanned:    4");
    tu_assert_line(p.out, tu_text("Indexed:               4 (%s)", tu_size_text(blobs_disk())));
    tu_assert_line(p.out, "Quarantined:           0");
    tu_assert_line(p.out, "Rows before:           0");
    tu_proc_free(&p);
    CC(&p, "--json", "stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out, 4);
    cr_assert_eq(jint(o, "entries"), 4);
    cr_assert_eq(jint(o, "bytes"), (json_int_t)blobs_disk(), "on disk, not the 11024 apparent");
    json_decref(o);
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
}

/* ---- stats ------------------------------------------------------------------- */

/* stats' table row of name: "NAME  ENTRIES  SIZE", the numbers
 * right-aligned to their columns' widest. */
static void assert_bucket(const char *out, const char *name, uint64_t entries, uint64_t bytes)
{
    size_t n = strlen(name);
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, name, n) != 0 || l[n] != ' ')
            continue;
        char *end = NULL;
        unsigned long long e = strtoull(l + n, &end, 10);
        const char *size = end + strspn(end, " ");
        const char *want = tu_size_text(bytes);
        if (e == entries && end > l + n && strncmp(size, want, strlen(want)) == 0 &&
            size[strlen(want)] == '\n')
            return;
    }
    cr_assert_fail("no row '%s %llu %s' in:\n%s", name, (unsigned long long)entries,
                   tu_size_text(bytes), out);
}

Test(cachectl, stats_text_and_json)
{
    populate();
    tu_proc p;
    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_empty(p.err);
    char want[700];
    snprintf(want, sizeof want, "Cache directory:       %s", g_cache);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Entries:               4");
    tu_assert_line(p.out, tu_text("Size on disk:          %s (10.8 KiB apparent)",
                                  tu_size_text(blobs_disk())));
    tu_assert_line(p.out, "Hits:                  2");
    tu_assert_line(p.out, "Compile time saved:    20.0 ms");
    /* Compact: no count that is 0, no empty bucket, no limits. */
    cr_assert(!strstr(p.out, "Quarantined:") && !strstr(p.out, "Misses:") &&
                  !strstr(p.out, "Stale:") && !strstr(p.out, "Limits:") &&
                  !strstr(p.out, "fatbin") && !strstr(p.out, "<30d"),
              "%s", p.out);
    tu_assert_line(p.out, "By kind:");
    uint64_t k1 = blob_disk(g_hex[0]), k2 = blob_disk(g_hex[1]), k3 = blob_disk(g_hex[2]),
             k4 = blob_disk(g_hex[3]);
    assert_bucket(p.out, "cubin", 3, k1 + k2 + k4);
    assert_bucket(p.out, "ptx", 1, k3);
    assert_bucket(p.out, "sm_90", 2, k3 + k4);
    assert_bucket(p.out, "sm_80", 1, k1);
    assert_bucket(p.out, "<1h", 1, k4);
    assert_bucket(p.out, ">=30d", 1, k1);
    tu_assert_line(p.out, tu_text("Cache size:            %s of 5.0 GiB (0%%)",
                                  tu_size_text(k1 + k2 + k3 + k4)));
    tu_proc_free(&p);

    /* -v: every line and row. */
    CC(&p, "stats", "-v");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Quarantined:           0 (0 B)");
    tu_assert_line(p.out, "Misses:                0");
    assert_bucket(p.out, "fatbin", 0, 0);
    assert_bucket(p.out, "<30d", 0, 0);
    tu_assert_line(p.out,
                   "  Size limit:          5.0 GiB (max_size, default; cleanup to 90%, LRU first)");
    tu_proc_free(&p);

    CC(&p, "stats", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out, 4);
    cr_assert_str_eq(json_string_value(json_object_get(o, "cache_dir")), g_cache);
    cr_assert_eq(jint(o, "entries"), 4);
    cr_assert_eq(jint(o, "bytes"), (json_int_t)blobs_disk(), "on disk, not the 11024 apparent");
    cr_assert_eq(jint(o, "hits"), 2);
    cr_assert_eq(jint(o, "compile_time_saved_ns"), 20000000);
    /* A fraction 0..1 of the lookups, not a percentage. */
    json_int_t misses = jint(o, "misses");
    cr_assert(json_is_real(json_object_get(o, "hit_ratio")));
    cr_assert_float_eq(json_real_value(json_object_get(o, "hit_ratio")),
                       2.0 / (2.0 + (double)misses), 1e-12);
    json_t *ages = json_object_get(o, "by_age");
    cr_assert_eq(json_array_size(ages), 5);
    static const json_int_t want_ages[5] = {1, 1, 1, 0, 1};
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(jint(json_array_get(ages, i), "entries"), want_ages[i], "age bucket %zu", i);
    cr_assert_eq(jint(json_array_get(ages, 0), "max_age_ns"), INT64_C(3600000000000));
    cr_assert(json_is_null(json_object_get(json_array_get(ages, 4), "max_age_ns")), "open bucket");
    cr_assert_eq(jint(json_object_get(o, "tmp"), "debris_age_ns"), VYRE_CACHE_DEBRIS_AGE_NS);
    json_t *kinds = json_object_get(o, "by_kind");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(kinds, 0), "kind")), "cubin");
    cr_assert_eq(jint(json_array_get(kinds, 0), "bytes"),
                 (json_int_t)(blob_disk(g_hex[0]) + blob_disk(g_hex[1]) + blob_disk(g_hex[3])),
                 "on disk, not 1256 + 2256 + 4256");
    cr_assert_eq(json_array_size(json_object_get(o, "by_arch")), 3);
    cr_assert_eq(jint(json_object_get(o, "quarantined"), "files"), 0);
    cr_assert_eq(jint(json_object_get(o, "tmp"), "debris"), 0);
    cr_assert_eq(jint(json_object_get(o, "limits"), "max_blob_payload_bytes"),
                 (json_int_t)VYRE_BLOB_MAX_PAYLOAD);
    cr_assert_eq(jint(json_object_get(o, "limits"), "max_cache_bytes"), INT64_C(5) << 30);
    cr_assert_eq(jint(o, "max_size_bytes"), INT64_C(5) << 30);
    cr_assert_float_eq(json_real_value(json_object_get(o, "fill_ratio")),
                       (double)blobs_disk() / (double)(INT64_C(5) << 30), 1e-15);
    json_decref(o);
    tu_proc_free(&p);

    /* -q prints nothing; read-only commands record no hits. */
    CC(&p, "-q", "stats");
    cr_assert_eq(p.exit_code, 0);
    cr_assert_str_empty(p.out);
    tu_proc_free(&p);
}

/* ---- ls ---------------------------------------------------------------------- */

static void assert_keys(const char *out, int skip_header, const char *const *prefixes, int n)
{
    char buf[256];
    cr_assert_eq(tu_count_lines(out), n + skip_header, "%s", out);
    for (int i = 0; i < n; i++) {
        line_no(out, i + skip_header, buf, sizeof buf);
        cr_assert(strncmp(buf, prefixes[i], strlen(prefixes[i])) == 0, "line %d: %s\n%s", i, buf,
                  out);
    }
}

Test(cachectl, ls_lines_sorting_and_filters)
{
    populate();
    tu_proc p;
    CC(&p, "ls");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char buf[256];
    /* The shared table (tool_table.h): each column as wide as its widest
     * cell, numbers to the right; piped, nothing is cut. */
    cr_assert_str_eq(line_no(p.out, 0, buf, sizeof buf),
                     "KEY           KIND   ARCH       SIZE  AGE  LAST USE  HITS  SOURCE  KERNELS");
    cr_assert_str_eq(line_no(p.out, 1, buf, sizeof buf),
                     "------------  -----  ------  -------  ---  --------  ----  ------  -------");
    cr_assert_str_eq(line_no(p.out, 2, buf, sizeof buf),
                     tu_text("111100000000  cubin  sm_80   %s   5w     never     0  -       -",
                             tu_size_text(blob_disk(g_hex[0]))));
    cr_assert_str_eq(line_no(p.out, 3, buf, sizeof buf),
                     tu_text("abcd10000000  ptx    sm_90   %s   3h     never     0  -       -",
                             tu_size_text(blob_disk(g_hex[2]))));
    cr_assert_str_eq(line_no(p.out, 4, buf, sizeof buf),
                     tu_text("abcd20000000  cubin  sm_90   %s  10m     never     0  -       -",
                             tu_size_text(blob_disk(g_hex[3]))));
    cr_assert_str_eq(line_no(p.out, 5, buf, sizeof buf),
                     tu_text("222200000000  cubin  sm_90a  %s   2d        0s     2  -       -",
                             tu_size_text(blob_disk(g_hex[1]))));
    tu_proc_free(&p);

    /* Largest on disk first, then by key (apparent sizes order them abcd2,
     * abcd1, 2222, 1111; on disk most take one block). */
    const char *by_size[4] = {"1111", "2222", "abcd1", "abcd2"};
    const char *hex_of[4] = {g_hex[0], g_hex[1], g_hex[2], g_hex[3]};
    for (int i = 1; i < 4; i++) /* a stable insertion sort: ties stay in key order */
        for (int j = i; j > 0 && blob_disk(hex_of[j]) > blob_disk(hex_of[j - 1]); j--) {
            const char *t = by_size[j], *h = hex_of[j];
            by_size[j] = by_size[j - 1], hex_of[j] = hex_of[j - 1];
            by_size[j - 1] = t, hex_of[j - 1] = h;
        }
    CC(&p, "ls", "--sort", "size");
    assert_keys(p.out, 2, by_size, 4);
    tu_proc_free(&p);
    CC(&p, "ls", "--sort", "age");
    assert_keys(p.out, 2, (const char *const[]){"1111", "2222", "abcd1", "abcd2"}, 4);
    tu_proc_free(&p);
    CC(&p, "ls", "--sort", "hits", "--limit", "1");
    assert_keys(p.out, 2, (const char *const[]){"2222"}, 1);
    tu_proc_free(&p);
    CC(&p, "ls", "--sort", "key", "--limit", "2");
    assert_keys(p.out, 2, (const char *const[]){"1111", "2222"}, 2);
    tu_proc_free(&p);
    CC(&p, "ls", "--arch", "sm_90");
    assert_keys(p.out, 2, (const char *const[]){"abcd1", "abcd2"}, 2);
    tu_proc_free(&p);
    CC(&p, "ls", "--kind", "ptx");
    assert_keys(p.out, 2, (const char *const[]){"abcd1"}, 1);
    tu_proc_free(&p);
    /* Unused for longer than a day: K1 only (K2 is old but used now). */
    CC(&p, "ls", "--older-than", "1d");
    assert_keys(p.out, 2, (const char *const[]){"1111"}, 1);
    tu_proc_free(&p);
    CC(&p, "ls", "--arch", "sm_75");
    cr_assert_eq(p.exit_code, 0);
    cr_assert_eq(tu_count_lines(p.out), 2); /* the header and its rule */
    tu_proc_free(&p);

    CC(&p, "-q", "ls");
    char want[80];
    snprintf(want, sizeof want, "%s", g_hex[0]);
    cr_assert_str_eq(line_no(p.out, 0, buf, sizeof buf), want);
    cr_assert_eq(tu_count_lines(p.out), 4);
    tu_proc_free(&p);

    CC(&p, "ls", "-v", "--limit", "1");
    line_no(p.out, 2, buf, sizeof buf);
    cr_assert(strncmp(buf, g_hex[0], 64) == 0, "%s", buf);
    cr_assert(strstr(buf, "  nvrtc-13.0"), "%s", buf);
    tu_proc_free(&p);

    CC(&p, "ls", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out, 3);
    json_t *arr = json_object_get(o, "entries");
    cr_assert_eq(json_array_size(arr), 4);
    json_t *last = json_array_get(arr, 3);
    cr_assert_str_eq(json_string_value(json_object_get(last, "key")), g_hex[1]);
    cr_assert_str_eq(json_string_value(json_object_get(last, "kind")), "cubin");
    cr_assert_str_eq(json_string_value(json_object_get(last, "arch")), "sm_90a");
    cr_assert_eq(jint(last, "bytes"), (json_int_t)blob_disk(g_hex[1]));
    cr_assert_eq(jint(last, "apparent_bytes"), 2256);
    cr_assert_eq(jint(last, "payload_bytes"), 2000);
    cr_assert_eq(jint(last, "hits"), 2);
    cr_assert_eq(jint(last, "compile_ns"), 10000000);
    const json_int_t day_ns = INT64_C(86400000000000);
    cr_assert(jint(last, "age_ns") >= 2 * day_ns &&
                  jint(last, "age_ns") < 2 * day_ns + INT64_C(60000000000),
              "age_ns %lld", (long long)jint(last, "age_ns"));
    /* K2 was used just now; K1 never: idle since it was created. */
    cr_assert(jint(last, "idle_ns") >= 0 && jint(last, "idle_ns") < INT64_C(60000000000));
    json_t *first = json_array_get(arr, 0);
    cr_assert_eq(jint(first, "idle_ns"), jint(first, "age_ns"));
    cr_assert(json_is_integer(json_object_get(last, "last_access_unix_ns")));
    cr_assert(json_is_null(json_object_get(json_array_get(arr, 0), "last_access_unix_ns")));
    json_decref(o);
    tu_proc_free(&p);
}

/* ---- show -------------------------------------------------------------------- */

Test(cachectl, show_key_prefix_and_ambiguity)
{
    populate();
    tu_proc p;
    CC(&p, "show", "2222");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want[700];
    snprintf(want, sizeof want, "Key:               %s", g_hex[1]);
    tu_assert_line(p.out, want);
    snprintf(want, sizeof want, "File:              %s/blobs/22/%s.vblob", g_cache, g_hex[1]);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Status:            ok");
    tu_assert_line(p.out, "Format version:    1");
    tu_assert_line(p.out, "Kind:              cubin (1)");
    tu_assert_line(p.out, "Architecture:      sm_90a");
    tu_assert_line(p.out, "Toolchain:         nvrtc-13.0");
    tu_assert_line(p.out, "Raw size:          2.0 KiB (2000 bytes)");
    tu_assert_line(p.out, "Compile time:      10.000 ms");
    tu_assert_line(p.out, "Hits:              2");
    tu_proc_free(&p);

    /* A full key, upper case, and options after the operand. */
    char upper[VYRE_KEY_HEX_LEN + 1];
    for (int i = 0; i <= VYRE_KEY_HEX_LEN; i++)
        upper[i] = (char)(g_hex[2][i] >= 'a' ? g_hex[2][i] - 32 : g_hex[2][i]);
    CC(&p, "show", upper, "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out, 1);
    json_t *b = json_object_get(o, "blob");
    cr_assert_str_eq(json_string_value(json_object_get(b, "key")), g_hex[2]);
    cr_assert_str_eq(json_string_value(json_object_get(b, "kind")), "ptx");
    cr_assert_str_eq(json_string_value(json_object_get(b, "status")), "ok");
    cr_assert_str_eq(json_string_value(json_object_get(b, "toolchain")), "nvrtc-12.4");
    cr_assert_eq(jint(b, "payload_bytes"), 3000);
    cr_assert_eq(jint(b, "file_bytes"), 3256);
    cr_assert_eq(jint(b, "format_version"), 1);
    cr_assert_eq(strlen(json_string_value(json_object_get(b, "payload_xxh128"))), 32);
    json_decref(o);
    tu_proc_free(&p);

    CC(&p, "show", "abcd");
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_empty(p.out);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: key prefix 'abcd' is ambiguous: 2 blobs match (%.16s, %.16s)",
             g_hex[2], g_hex[3]);
    tu_assert_line(p.err, want);
    tu_assert_line(p.err, "hint: give more digits of the key");
    tu_proc_free(&p);

    CC(&p, "show", "ffff");
    cr_assert_eq(p.exit_code, 2);
    tu_assert_line(p.err, "vyre-cachectl: error: no blob with a key starting 'ffff'");
    tu_assert_line(p.err, "hint: list the keys with 'vyre-cachectl ls'");
    tu_proc_free(&p);
    CC(&p, "show", "abc");
    cr_assert_eq(p.exit_code, 2);
    tu_assert_line(p.err, "vyre-cachectl: error: 'abc' is not a key prefix");
    tu_proc_free(&p);
    CC(&p, "show", "xyzw");
    cr_assert_eq(p.exit_code, 2);
    tu_assert_line(p.err, "hint: keys are hexadecimal: use 0-9 and a-f");
    tu_proc_free(&p);
}

/* Flips one payload byte of the blob with this hex key. */
static void corrupt_payload(const char *hex)
{
    char path[800];
    blob_path(hex, path, sizeof path);
    size_t len = 0;
    char *data = tu_read_file(path, &len);
    cr_assert_not_null(data);
    cr_assert_gt(len, VYRE_BLOB_HEADER_SIZE + 10);
    data[VYRE_BLOB_HEADER_SIZE + 10] ^= 0x5a;
    tu_write_file(path, data, len);
    free(data);
}

Test(cachectl, show_damaged_blob_exit_1)
{
    populate();
    corrupt_payload(g_hex[0]);
    tu_proc p;
    CC(&p, "show", "1111");
    cr_assert_eq(p.exit_code, 1, "%s", p.err);
    tu_assert_line(p.out, "Status:            payload-checksum");
    tu_assert_line(p.out, "Architecture:      sm_80");
    cr_assert(strncmp(p.err, "vyre-cachectl: error: blob 111100000000 is damaged: ", 52) == 0, "%s",
              p.err);
    tu_assert_line(p.err, "hint: run 'vyre-cachectl verify --repair'");
    tu_proc_free(&p);
    /* show changes nothing: the file is still there for verify. */
    char path[800];
    blob_path(g_hex[0], path, sizeof path);
    cr_assert(exists(path));
}

/* ---- verify ------------------------------------------------------------------ */

Test(cachectl, verify_clean_problems_and_repair)
{
    populate();
    tu_proc p;
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "Blobs checked:         4 (10.8 KiB)");
    tu_assert_line(p.out, "Bad blobs:             0");
    tu_assert_line(p.out, "The cache is clean.");
    cr_assert_str_empty(p.err);
    tu_proc_free(&p);

    /* Three problems: a damaged blob, a blob whose file is gone, debris. */
    corrupt_payload(g_hex[0]);
    char path[800];
    blob_path(g_hex[3], path, sizeof path);
    cr_assert_eq(unlink(path), 0);
    char debris[800];
    snprintf(debris, sizeof debris, "%s/tmp/2222000000000000.4242.7.0123456789abcdef.tmp", g_cache);
    tu_write_file(debris, "x", 1);
    struct timeval old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    cr_assert_eq(utimes(debris, old), 0);

    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    char want[800];
    snprintf(want, sizeof want, "bad-blob          blobs/11/%s.vblob (payload-checksum)", g_hex[0]);
    tu_assert_line(p.out, want);
    snprintf(want, sizeof want, "row-without-file  blobs/ab/%s.vblob", g_hex[3]);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "debris            tmp/2222000000000000.4242.7.0123456789abcdef.tmp");
    tu_assert_line(p.out, "Bad blobs:             1");
    tu_assert_line(p.out, "Rows without file:     1");
    tu_assert_line(p.out, "Debris in tmp/:        1");
    tu_assert_line(p.out, "3 problems found. Run 'vyre-cachectl verify --repair' to fix them.");
    tu_proc_free(&p);

    CC(&p, "verify", "--json");
    cr_assert_eq(p.exit_code, 1);
    json_t *o = parse_json(p.out, 1);
    cr_assert(json_is_false(json_object_get(o, "clean")));
    json_t *sum = json_object_get(o, "summary");
    cr_assert_eq(jint(sum, "problems"), 3);
    cr_assert_eq(jint(sum, "bad_blobs"), 1);
    cr_assert_eq(jint(sum, "blobs_checked"), 3);
    json_t *probs = json_object_get(o, "problems");
    cr_assert_eq(json_array_size(probs), 3);
    json_t *first = json_array_get(probs, 0);
    cr_assert_str_eq(json_string_value(json_object_get(first, "kind")), "bad-blob");
    cr_assert_str_eq(json_string_value(json_object_get(first, "reason")), "payload-checksum");
    cr_assert(json_is_false(json_object_get(first, "repaired")));
    json_decref(o);
    tu_proc_free(&p);

    CC(&p, "-q", "verify");
    cr_assert_eq(p.exit_code, 1);
    cr_assert_str_empty(p.out);
    tu_proc_free(&p);

    CC(&p, "verify", "--repair");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    snprintf(want, sizeof want,
             "bad-blob          blobs/11/%s.vblob (payload-checksum): quarantined", g_hex[0]);
    tu_assert_line(p.out, want);
    snprintf(want, sizeof want, "row-without-file  blobs/ab/%s.vblob: row deleted", g_hex[3]);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out,
                   "debris            tmp/2222000000000000.4242.7.0123456789abcdef.tmp: removed");
    tu_assert_line(p.out, "Repaired:              3 of 3");
    tu_assert_line(p.out, "Repaired 3 problems; the cache is clean.");
    tu_proc_free(&p);
    cr_assert(!exists(debris));

    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_assert_line(p.out, "Quarantined:           1 (kept for inspection)");
    tu_assert_line(p.out, "The cache is clean.");
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    cr_assert_eq(tu_count_lines(p.out), 2);
    tu_proc_free(&p);
}

/* ---- prune ------------------------------------------------------------------- */

Test(cachectl, prune_by_size_lru_first)
{
    populate();
    tu_proc p;
    /* 11024 bytes (more on disk) to at most 5 KiB: K1, K3, K4 go (LRU),
     * K2 stays; sizes on disk, as du counts. */
    CC(&p, "prune", "--max-size", "5K", "--dry-run");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, tu_text("Would remove 3 blobs (%s): 3 by size\n"
                                    "Would leave 1 blob (%s)\n",
                                    tu_size_text(blobs_disk() - blob_disk(g_hex[1])),
                                    tu_size_text(blob_disk(g_hex[1]))));
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    cr_assert_eq(tu_count_lines(p.out), 4);
    tu_proc_free(&p);

    uint64_t k1 = blob_disk(g_hex[0]), k2 = blob_disk(g_hex[1]), k3 = blob_disk(g_hex[2]),
             k4 = blob_disk(g_hex[3]);
    CC(&p, "prune", "--max-size", "5K", "-v");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, tu_text("removed 111100000000  cubin   sm_80     %10s  (size)\n"
                                    "removed abcd10000000  ptx     sm_90     %10s  (size)\n"
                                    "removed abcd20000000  cubin   sm_90     %10s  (size)\n"
                                    "Removed 3 blobs (%s): 3 by size\n"
                                    "Left 1 blob (%s)\n",
                                    tu_size_text(k1), tu_size_text(k3), tu_size_text(k4),
                                    tu_size_text(k1 + k3 + k4), tu_size_text(k2)));
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    char want[80];
    snprintf(want, sizeof want, "%s\n", g_hex[1]);
    cr_assert_str_eq(p.out, want);
    tu_proc_free(&p);
    char path[800];
    blob_path(g_hex[0], path, sizeof path);
    cr_assert(!exists(path), "pruned blob file still there");

    /* Already under the target: nothing to do, still exit 0. */
    CC(&p, "prune", "--max-size", "500M");
    cr_assert_eq(p.exit_code, 0);
    cr_assert_str_eq(p.out, tu_text("Removed 0 blobs (0 B)\nLeft 1 blob (%s)\n",
                                    tu_size_text(blob_disk(g_hex[1]))));
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_proc_free(&p);
}

/* ccache's spellings (issue 36): -s is stats, -M SIZE sets max_size,
 * --evict-older-than AGE is prune --max-age AGE; with -z they run in the
 * order given, then the command if any. */
Test(cachectl, ccache_spellings_do_what_they_do_in_ccache)
{
    populate();
    tu_proc p, q;
    CC(&p, "stats");
    CC(&q, "-s");
    cr_assert_eq(q.exit_code, 0, "%s", q.err);
    cr_assert_str_eq(q.out, p.out, "-s is stats");
    tu_proc_free(&p);
    tu_proc_free(&q);

    CC(&p, "-M", "3G");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "config", "max_size");
    cr_assert_str_eq(p.out, "3G\n");
    tu_proc_free(&p);

    uint64_t k1 = blob_disk(g_hex[0]), all = blobs_disk();
    CC(&p, "--evict-older-than", "1d");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, tu_text("Removed 1 blob (%s): 1 by age\nLeft 3 blobs (%s)\n",
                                    tu_size_text(k1), tu_size_text(all - k1)));
    tu_proc_free(&p);

    CC(&p, "-z", "-s");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strncmp(p.out, "Statistics zeroed.\n", 19) == 0, "-z first: %s", p.out);
    cr_assert(strstr(p.out, "Entries:               3\n"), "then -s: %s", p.out);
    tu_proc_free(&p);

    CC(&p, "--evict-older-than", "soon");
    cr_assert_eq(p.exit_code, 2, "a bad age is prune's usage error: %s", p.out);
    tu_proc_free(&p);
}

Test(cachectl, prune_by_age_arch_and_json)
{
    populate();
    tu_proc p;
    uint64_t k1 = blob_disk(g_hex[0]), all = blobs_disk();
    CC(&p, "prune", "--max-age", "1d");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, tu_text("Removed 1 blob (%s): 1 by age\nLeft 3 blobs (%s)\n",
                                    tu_size_text(k1), tu_size_text(all - k1)));
    tu_proc_free(&p);

    uint64_t k2 = blob_disk(g_hex[1]), k3 = blob_disk(g_hex[2]), k4 = blob_disk(g_hex[3]);
    CC(&p, "prune", "--arch", "sm_90", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out, 3);
    cr_assert_eq(jint(o, "removed"), 2);
    cr_assert_eq(jint(o, "removed_bytes"), (json_int_t)(k3 + k4), "on disk, not 3256 + 4256");
    cr_assert_eq(jint(o, "kept"), 1);
    cr_assert_eq(jint(o, "kept_bytes"), (json_int_t)k2);
    cr_assert(json_is_true(json_object_get(o, "target_reached")));
    cr_assert(json_is_false(json_object_get(o, "dry_run")));
    cr_assert_str_eq(json_string_value(json_object_get(o, "arch")), "sm_90");
    cr_assert(json_is_null(json_object_get(o, "max_age_ns")), "no --max-age: null");
    cr_assert_eq(jint(json_object_get(o, "removed_by_reason"), "arch"), 2);
    json_t *ents = json_object_get(o, "removed_entries");
    cr_assert_eq(json_array_size(ents), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(ents, 0), "key")), g_hex[2]);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(ents, 0), "reason")), "arch");
    json_decref(o);
    tu_proc_free(&p);
}

Test(cachectl, prune_stale_toolchain)
{
    populate();
    tu_proc p;
    /* An explicit identity to keep: K3 (nvrtc-12.4) and K4 (nvjitlink) go. */
    CC(&p, "prune", "--stale-toolchain", "--toolchain", "nvrtc-13.0", "-v", "--dry-run");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    uint64_t k3 = blob_disk(g_hex[2]), k4 = blob_disk(g_hex[3]);
    cr_assert_str_eq(p.out, tu_text("would remove abcd10000000  ptx     sm_90     %10s  "
                                    "(stale-toolchain)\n"
                                    "would remove abcd20000000  cubin   sm_90     %10s  "
                                    "(stale-toolchain)\n"
                                    "Would remove 2 blobs (%s): 2 by stale-toolchain\n"
                                    "Would leave 2 blobs (%s)\n",
                                    tu_size_text(k3), tu_size_text(k4), tu_size_text(k3 + k4),
                                    tu_size_text(blobs_disk() - k3 - k4)));
    tu_proc_free(&p);

    /* The current identities, from libcore (needs NVRTC and nvJitLink). */
    char nvrtc[VYRE_BLOB_TOOLCHAIN_MAX], jitlink[VYRE_BLOB_TOOLCHAIN_MAX];
    vyre_error err;
    if (vyre_compile_toolchain(VYRE_SOURCE_CUDA_C, nvrtc, sizeof nvrtc, &err) ||
        vyre_compile_toolchain(VYRE_SOURCE_PTX, jitlink, sizeof jitlink, &err))
        cr_skip_test("NVRTC or nvJitLink cannot be loaded: %s", err.message);
    if (strcmp(nvrtc, "nvrtc-13.0") == 0 && strcmp(jitlink, "nvjitlink-13.0") == 0) {
        /* Blobs of both current toolchains and a stale one: both current
         * identities are kept, only K3 (nvrtc-12.4) goes. */
        CC(&p, "prune", "--stale-toolchain", "-v", "--dry-run");
        cr_assert_eq(p.exit_code, 0, "%s", p.err);
        cr_assert_str_eq(p.out, tu_text("would remove abcd10000000  ptx     sm_90     %10s  "
                                        "(stale-toolchain)\n"
                                        "Would remove 1 blob (%s): 1 by stale-toolchain\n"
                                        "Would leave 3 blobs (%s)\n",
                                        tu_size_text(k3), tu_size_text(k3),
                                        tu_size_text(blobs_disk() - k3)));
        tu_proc_free(&p);
        /* Several identities to keep may be named. */
        CC(&p, "prune", "--stale-toolchain", "--toolchain", "nvrtc-13.0", "--toolchain",
           "nvjitlink-13.0", "--dry-run");
        cr_assert_eq(p.exit_code, 0, "%s", p.err);
        cr_assert_str_eq(p.out, tu_text("Would remove 1 blob (%s): 1 by stale-toolchain\n"
                                        "Would leave 3 blobs (%s)\n",
                                        tu_size_text(k3), tu_size_text(blobs_disk() - k3)));
        tu_proc_free(&p);
    }

    /* A cache of the current NVRTC toolchain plus a stale one. */
    snprintf(g_cache, sizeof g_cache, "%.500s/other", g_tmp);
    vyre_cache *c = open_cache();
    int64_t now = now_ns();
    put_blob(c, "cafe", VYRE_BLOB_CUBIN, "sm_90", nvrtc, now, 100, 0);
    put_blob(c, "dead", VYRE_BLOB_CUBIN, "sm_90", "nvrtc-1.0", now, 100, 0);
    vyre_cache_close(c);
    const char *one = tu_size_text(blobs_disk() / 2); /* two blobs of 356 bytes, on disk */
    CC(&p, "prune", "--stale-toolchain", "-v");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out,
                     tu_text("removed dead00000000  cubin   sm_90     %10s  (stale-toolchain)\n"
                             "Removed 1 blob (%s): 1 by stale-toolchain\n"
                             "Left 1 blob (%s)\n",
                             one, one, one));
    tu_proc_free(&p);
    CC(&p, "prune", "--stale-toolchain");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, tu_text("Removed 0 blobs (0 B)\nLeft 1 blob (%s)\n", one));
    tu_proc_free(&p);
}

/* Prune while another process keeps storing: both succeed, verify is
 * clean afterwards. */
Test(cachectl, prune_while_another_process_stores)
{
    populate();
    fflush(NULL);
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        vyre_cache *c = NULL;
        if (vyre_cache_open(g_cache, NULL, &c, NULL))
            _exit(10);
        unsigned char payload[2048];
        for (int i = 0; i < 400; i++) {
            memset(payload, i, sizeof payload);
            vyre_blob_header h;
            memset(&h, 0, sizeof h);
            char hex[VYRE_KEY_HEX_LEN + 1];
            snprintf(hex, sizeof hex, "%08x%056d", 0xc0000000u + (unsigned)i, 0);
            if (vyre_key_from_hex(hex, &h.key))
                _exit(11);
            h.kind = VYRE_BLOB_CUBIN;
            snprintf(h.arch, sizeof h.arch, "sm_90");
            snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.0");
            vyre_error err;
            if (vyre_cache_put(c, &h, payload, sizeof payload, &err)) {
                fprintf(stderr, "put %d: %s\n", i, err.message);
                _exit(12);
            }
        }
        vyre_cache_close(c);
        _exit(0);
    }
    int prunes = 0;
    for (;;) {
        tu_proc p;
        CC(&p, "prune", "--max-size", "20K");
        cr_assert_eq(p.exit_code, 0, "prune %d: %s", prunes, p.err);
        tu_proc_free(&p);
        prunes++;
        int status = 0;
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child) {
            cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "storer failed: status %d",
                      status);
            break;
        }
        cr_assert_lt(prunes, 2000, "storer did not finish");
    }
    cr_assert_geq(prunes, 1);
    tu_proc p;
    CC(&p, "prune", "--max-size", "20K");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "verify after concurrent prune:\n%s%s", p.out, p.err);
    tu_assert_line(p.out, "The cache is clean.");
    tu_proc_free(&p);
    CC(&p, "--json", "stats");
    json_t *o = parse_json(p.out, 4);
    cr_assert_leq(jint(o, "bytes"), 20 * 1024);
    json_decref(o);
    tu_proc_free(&p);
}

/* ---- reindex and clear ----------------------------------------------------------- */

Test(cachectl, reindex_keeps_usage_and_adopts_files)
{
    populate();
    tu_proc p;
    CC(&p, "reindex", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out, 2);
    cr_assert_eq(jint(o, "scanned"), 4);
    cr_assert_eq(jint(o, "indexed"), 4);
    cr_assert_eq(jint(o, "bytes"), (json_int_t)blobs_disk(), "on disk, not the 11024 apparent");
    cr_assert_eq(jint(o, "rows_before"), 4);
    cr_assert_eq(jint(o, "quarantined"), 0);
    cr_assert_eq(jint(o, "links_removed"), 0);
    json_decref(o);
    tu_proc_free(&p);
    CC(&p, "--json", "stats");
    o = parse_json(p.out, 4);
    cr_assert_eq(jint(o, "hits"), 2, "usage lost by reindex");
    json_decref(o);
    tu_proc_free(&p);

    /* A missing index is rebuilt; a foreign file in blobs/ is quarantined. */
    char path[800];
    snprintf(path, sizeof path, "%s/index.sqlite3", g_cache);
    cr_assert_eq(unlink(path), 0);
    /* (A damaged file under a blob's name: a file of another name is not
     * vyre's and stays where it is, see files_vyre_did_not_write_are_left.) */
    snprintf(path, sizeof path, "%s/blobs/11/11%062d.vblob", g_cache, 7);
    tu_write_file(path, "junk", 4);
    CC(&p, "reindex");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Blob files scanned:    5");
    tu_assert_line(p.out, tu_text("Indexed:               4 (%s)", tu_size_text(blobs_disk())));
    tu_assert_line(p.out, "Quarantined:           1");
    cr_assert_null(strstr(p.out, "Links/special files:"), "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_proc_free(&p);

    /* A symlink where a blob belongs is unlinked and counted; its target
     * stays as it was. */
    char target[800];
    snprintf(target, sizeof target, "%s/target.txt", g_tmp);
    tu_write_file(target, "theirs", 6);
    snprintf(path, sizeof path, "%s/blobs/11/%s.vblob", g_cache, g_hex[0]);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink(target, path), 0);
    CC(&p, "reindex");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, tu_text("Indexed:               3 (%s)", tu_size_text(blobs_disk())));
    tu_assert_line(p.out, "Links/special files:   1 (unlinked, never followed)");
    tu_proc_free(&p);
    struct stat lst;
    cr_assert_neq(lstat(path, &lst), 0, "the link is still there");
    size_t tlen = 0;
    char *t = tu_read_file(target, &tlen);
    cr_assert(t && tlen == 6 && memcmp(t, "theirs", 6) == 0, "the link's target changed");
    free(t);
}

Test(cachectl, clear_needs_yes)
{
    populate();
    tu_proc p;
    char msg[800];
    snprintf(msg, sizeof msg, "clear would remove every blob in '%s'; refusing without --yes",
             g_cache);
    CC(&p, "clear");
    assert_usage_error(&p, msg, "run 'vyre-cachectl clear --yes' if you mean it", "clear");
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    cr_assert_eq(tu_count_lines(p.out), 4);
    tu_proc_free(&p);

    uint64_t on_disk = blobs_disk();
    CC(&p, "clear", "--yes");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    snprintf(msg, sizeof msg, "Removed 4 blobs (%s) from %s\n", tu_size_text(on_disk), g_cache);
    cr_assert_str_eq(p.out, msg);
    tu_proc_free(&p);
    CC(&p, "--json", "clear", "--yes"); /* an empty cache: nothing left to remove */
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *c = parse_json(p.out, 2);
    cr_assert_eq(jint(c, "removed"), 0);
    cr_assert_eq(jint(c, "removed_bytes"), 0);
    cr_assert_eq(jint(c, "left"), 0);
    json_decref(c);
    tu_proc_free(&p);
    CC(&p, "--json", "stats");
    json_t *o = parse_json(p.out, 4);
    cr_assert_eq(jint(o, "entries"), 0);
    json_decref(o);
    tu_proc_free(&p);
    /* (verify of the now-empty cache is not run here: libcore's verify
     * passes NULL to qsort for an empty index, which UBSan aborts on.) */
}

/* ---- nothing outside the cache is touched------------------------------------ */

/* The defect as reported: one shard under blobs/ made a symlink to an outside
 * directory holding two files. verify called them stray, verify --repair
 * moved them into quarantine/ and clear --yes deleted them. Now the link is
 * the problem, repair and clear remove the link itself, and the two files
 * stay as they were. */
Test(cachectl, shard_symlink_to_outside_dir_is_reported_and_outside_files_survive)
{
    populate();
    char outside[700], shard[800], f1[800], f2[800], want[900];
    snprintf(outside, sizeof outside, "%s/outside", g_tmp);
    cr_assert_eq(mkdir(outside, 0700), 0);
    /* Two files: one named as a blob of that shard, one not. */
    snprintf(f1, sizeof f1, "%s/%s.vblob", outside, g_hex[0]);
    snprintf(f2, sizeof f2, "%s/notes.txt", outside);
    tu_write_file(f1, "someone else's data", 19);
    tu_write_file(f2, "precious\n", 9);
    snprintf(shard, sizeof shard, "%s/blobs/11", g_cache);
    tu_rm_rf(shard);
    cr_assert_eq(symlink(outside, shard), 0);

    tu_proc p;
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "foreign           blobs/11 (symlink)");
    snprintf(want, sizeof want, "row-without-file  blobs/11/%s.vblob", g_hex[0]);
    tu_assert_line(p.out, want);
    cr_assert_null(strstr(p.out, "stray"), "outside files listed:\n%s", p.out);
    tu_assert_line(p.out, "Links/special files:   1");
    tu_assert_line(p.out, "2 problems found. Run 'vyre-cachectl verify --repair' to fix them.");
    tu_proc_free(&p);

    CC(&p, "verify", "--repair");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "foreign           blobs/11 (symlink): removed");
    snprintf(want, sizeof want, "row-without-file  blobs/11/%s.vblob: row deleted", g_hex[0]);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Repaired 2 problems; the cache is clean.");
    tu_proc_free(&p);
    cr_assert(!exists(shard), "the link is still there");

    /* Put the link back: clear removes the link, not what it points to. */
    cr_assert_eq(symlink(outside, shard), 0);
    uint64_t on_disk = blobs_disk();
    CC(&p, "clear", "--yes");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    snprintf(want, sizeof want, "Removed 3 blobs (%s) from %s", tu_size_text(on_disk), g_cache);
    tu_assert_line(p.out, want);
    tu_proc_free(&p);
    cr_assert(!exists(shard), "the link survived clear");

    size_t len = 0;
    char *b = tu_read_file(f1, &len);
    cr_assert_not_null(b, "'%s' is gone", f1);
    cr_assert(len == 19 && memcmp(b, "someone else's data", 19) == 0, "'%s' changed", f1);
    free(b);
    b = tu_read_file(f2, &len);
    cr_assert_not_null(b, "'%s' is gone", f2);
    cr_assert(len == 9 && memcmp(b, "precious\n", 9) == 0, "'%s' changed", f2);
    free(b);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "Quarantined:           0 (kept for inspection)");
    tu_proc_free(&p);
}

/* show reads a blob from the cache's own directories only: with its shard
 * made a symlink to an outside folder holding a good copy of the blob, the
 * copy is not read as the cache's (the status is not "ok"), and nothing
 * there changes. */
Test(cachectl, show_never_reads_through_a_symlinked_shard)
{
    populate();
    char outside[700], shard[800], blob[800], copy[900];
    snprintf(outside, sizeof outside, "%s/outside", g_tmp);
    cr_assert_eq(mkdir(outside, 0700), 0);
    blob_path(g_hex[0], blob, sizeof blob);
    size_t len = 0;
    char *data = tu_read_file(blob, &len);
    cr_assert_not_null(data);
    snprintf(copy, sizeof copy, "%s/%s.vblob", outside, g_hex[0]);
    tu_write_file(copy, data, len);
    snprintf(shard, sizeof shard, "%s/blobs/11", g_cache);
    tu_rm_rf(shard);
    cr_assert_eq(symlink(outside, shard), 0);

    tu_proc p;
    CC(&p, "show", "1111");
    cr_log_info("show through a symlinked shard: exit %d\n%s%s", p.exit_code, p.out, p.err);
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    cr_assert_null(strstr(p.out, "Status:            ok"), "read through the link:\n%s", p.out);
    tu_assert_line(p.out, "Status:            missing");
    tu_proc_free(&p);
    size_t len2 = 0;
    char *after = tu_read_file(copy, &len2);
    cr_assert(after && len2 == len && memcmp(after, data, len) == 0, "the outside copy changed");
    free(after);
    free(data);
}

/* An index that is a symlink is refused with a message and a hint; reindex
 * replaces the link (its target is untouched). */
Test(cachectl, index_symlink_refused_then_reindex_replaces_the_link)
{
    populate();
    char target[700], index[800], want[1000];
    snprintf(target, sizeof target, "%s/not-an-index", g_tmp);
    tu_write_file(target, "keep", 4);
    snprintf(index, sizeof index, "%s/index.sqlite3", g_cache);
    cr_assert_eq(unlink(index), 0);
    cr_assert_eq(symlink(target, index), 0);

    tu_proc p;
    CC(&p, "ls");
    cr_assert_eq(p.exit_code, 2, "%s%s", p.out, p.err);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: index file '%s' is a symlink, not a regular file: refusing to "
             "open it",
             index);
    tu_assert_line(p.err, want);
    tu_assert_line(p.err, "hint: rebuilding the index removes the entry (never what a link points "
                          "to) and writes a new index from the blobs");
    tu_assert_line(p.err, "hint: rebuild it from the blobs with 'vyre-cachectl reindex'");
    tu_proc_free(&p);

    CC(&p, "reindex");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert_eq(tu_count_lines(p.out), 4);
    tu_proc_free(&p);
    size_t len = 0;
    char *b = tu_read_file(target, &len);
    cr_assert_not_null(b);
    cr_assert(len == 4 && memcmp(b, "keep", 4) == 0, "the link's target changed");
    free(b);
}

/* ---- jit ----------------------------------------------------------------------- */

/* A driver JIT cache as driver 580 lays it out: index + <hex>/<hex>/<file>. */
static void make_jit_cache(const char *dir)
{
    char p[800];
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(p, sizeof p, "%s/index", dir);
    tu_write_file(p, "0123456789012345678901234567890123456789012345678901234567890123", 64);
    snprintf(p, sizeof p, "%s/9", dir);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/9/5", dir);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/9/5/69cec8efb74c57", dir);
    char data[100];
    memset(data, 'j', sizeof data);
    tu_write_file(p, data, sizeof data);
}

Test(cachectl, jit_report_and_clear)
{
    char dir[700], env_path[800];
    snprintf(dir, sizeof dir, "%s/jit", g_tmp);
    make_jit_cache(dir);
    snprintf(env_path, sizeof env_path, "CUDA_CACHE_PATH=%s", dir);
    const char *env[] = {env_path, "CUDA_CACHE_MAXSIZE=2147483648", NULL};
    tu_proc p;
    RUN_ENV(&p, env, "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want[900];
    snprintf(want, sizeof want, "JIT cache path:        %s (from CUDA_CACHE_PATH)", dir);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Files:                 2");
    tu_assert_line(p.out, "Size on disk:          164 B");
    tu_assert_line(p.out,
                   "CUDA_CACHE_MAXSIZE:    2.0 GiB (2147483648 bytes, from the environment)");
    tu_assert_line(p.out, "Fill:                  0.0%");
    tu_proc_free(&p);

    RUN_ENV(&p, env, "--json", "jit");
    json_t *o = parse_json(p.out, 2);
    cr_assert_str_eq(json_string_value(json_object_get(o, "path")), dir);
    cr_assert_eq(jint(o, "files"), 2);
    cr_assert_eq(jint(o, "bytes"), 164);
    cr_assert_eq(jint(o, "max_bytes"), INT64_C(2147483648));
    cr_assert(json_is_true(json_object_get(o, "exists")));
    cr_assert_float_eq(json_real_value(json_object_get(o, "fill_ratio")), 164.0 / 2147483648.0,
                       1e-12);
    json_decref(o);
    tu_proc_free(&p);

    char msg[900];
    snprintf(msg, sizeof msg, "--clear would empty the JIT cache '%s'; refusing without --yes",
             dir);
    RUN_ENV(&p, env, "jit", "--clear");
    assert_usage_error(&p, msg, "run 'vyre-cachectl jit --clear --yes' if you mean it", "jit");
    tu_proc_free(&p);

    RUN_ENV(&p, env, "jit", "--clear", "--yes");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    snprintf(msg, sizeof msg, "Removed 2 files (164 B) from %s\n", dir);
    cr_assert_str_eq(p.out, msg);
    tu_proc_free(&p);
    cr_assert(exists(dir), "the directory itself must stay");
    RUN_ENV(&p, env, "--json", "jit");
    o = parse_json(p.out, 2);
    cr_assert_eq(jint(o, "files"), 0);
    json_decref(o);
    tu_proc_free(&p);
}

Test(cachectl, jit_default_path_bad_env_and_foreign_dir)
{
    tu_proc p;
    RUN(&p, "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want[900];
    snprintf(want, sizeof want, "JIT cache path:        %s/xdg/vyre/cuda-jit (vyre default)",
             g_tmp);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Exists:                no (created by the first vyre program)");
    tu_assert_line(p.out, "CUDA_CACHE_MAXSIZE:    1.0 GiB (1073741824 bytes, vyre default)");
    tu_proc_free(&p);

    /* A size vyre cannot use is a finding, not a reason to stop. */
    const char *small[] = {"CUDA_CACHE_MAXSIZE=5", NULL};
    RUN_ENV(&p, small, "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.err, "vyre-cachectl: warning: CUDA_CACHE_MAXSIZE='5' is below the floor of "
                          "1073741824 bytes: real kernels would be evicted and re-JITed: vyre "
                          "programs refuse to start with it");
    tu_assert_line(p.out, "CUDA_CACHE_MAXSIZE:    unusable ('5', see the warning)");
    tu_assert_line(p.out, "Fill:                  -");
    tu_proc_free(&p);

    /* CUDA_CACHE_PATH pointing at something that is not a JIT cache. */
    char dir[700], note[800], env_path[800];
    snprintf(dir, sizeof dir, "%s/precious", g_tmp);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(note, sizeof note, "%s/notes.txt", dir);
    tu_write_file(note, "keep me", 7);
    snprintf(env_path, sizeof env_path, "CUDA_CACHE_PATH=%s", dir);
    const char *env[] = {env_path, NULL};
    RUN_ENV(&p, env, "jit", "--clear", "--yes");
    cr_assert_eq(p.exit_code, 2);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: '%s' does not look like a CUDA JIT cache (unexpected entry "
             "'notes.txt'): refusing to empty it",
             dir);
    tu_assert_line(p.err, want);
    tu_proc_free(&p);
    cr_assert(exists(note), "a foreign directory was emptied");
}

/* The driver's default JIT cache, ~/.nv/ComputeCache (HOME is g_tmp), is
 * reported beside vyre's, with its own size and fill; CUDA_CACHE_MAXSIZE
 * values vyre or the driver cannot use are warnings (exit 0). */
Test(cachectl, jit_driver_default_compute_cache)
{
    char nv[700];
    snprintf(nv, sizeof nv, "%s/.nv", g_tmp);
    cr_assert_eq(mkdir(nv, 0700), 0);
    snprintf(nv, sizeof nv, "%s/.nv/ComputeCache", g_tmp);
    make_jit_cache(nv);

    tu_proc p;
    RUN(&p, "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.err, "");
    char want[900];
    snprintf(want, sizeof want,
             "Driver default path:   %s (driver default, for CUDA programs not using vyre)", nv);
    tu_assert_line(p.out, want);
    tu_assert_line(p.out, "Driver files:          2");
    tu_assert_line(p.out, "Driver size on disk:   164 B");
    tu_assert_line(p.out, "Driver max size:       1.0 GiB (1073741824 bytes, driver default)");
    tu_assert_line(p.out, "Driver fill:           0.0%");
    tu_assert_line(p.out, "Files:                 0"); /* vyre's own is still empty */
    tu_proc_free(&p);

    RUN(&p, "--json", "jit");
    json_t *o = parse_json(p.out, 2);
    json_t *d = json_object_get(o, "driver_default");
    cr_assert_str_eq(json_string_value(json_object_get(d, "path")), nv);
    cr_assert_str_eq(json_string_value(json_object_get(d, "path_source")), "default");
    cr_assert(json_is_false(json_object_get(d, "same_as_vyre")));
    cr_assert_eq(jint(d, "files"), 2);
    cr_assert_eq(jint(d, "bytes"), 164);
    cr_assert_eq(jint(d, "max_bytes"), INT64_C(1073741824));
    cr_assert_eq(json_array_size(json_object_get(o, "warnings")), 0);
    json_decref(o);
    tu_proc_free(&p);

    /* "4G": neither vyre nor the driver reads it. */
    const char *g4[] = {"CUDA_CACHE_MAXSIZE=4G", NULL};
    RUN_ENV(&p, g4, "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.err, "vyre-cachectl: warning: CUDA_CACHE_MAXSIZE='4G' is not a number of "
                          "bytes: vyre programs refuse to start with it");
    tu_assert_line(p.err, "vyre-cachectl: warning: CUDA_CACHE_MAXSIZE='4G' is not a number of "
                          "bytes the driver reads: its default of 1073741824 bytes is assumed for "
                          "CUDA programs");
    tu_assert_line(p.out, "CUDA_CACHE_MAXSIZE:    unusable ('4G', see the warning)");
    tu_assert_line(p.out, "Driver max size:       1.0 GiB (1073741824 bytes, driver default)");
    tu_proc_free(&p);
    RUN_ENV(&p, g4, "--json", "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    o = parse_json(p.out, 2);
    cr_assert(json_is_null(json_object_get(o, "max_bytes")));
    cr_assert(json_is_null(json_object_get(o, "fill_ratio")));
    cr_assert_eq(json_array_size(json_object_get(o, "warnings")), 2);
    json_decref(o);
    tu_proc_free(&p);

    /* "100": the driver takes it (and the cache is over it); vyre refuses. */
    const char *hundred[] = {"CUDA_CACHE_MAXSIZE=100", NULL};
    RUN_ENV(&p, hundred, "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Driver max size:       100 B (100 bytes, from the environment)");
    tu_assert_line(p.out, "Driver fill:           164.0%");
    cr_assert(strstr(p.err, "CUDA_CACHE_MAXSIZE='100' is below the floor"), "%s", p.err);
    tu_proc_free(&p);

    /* Junk, and a size above the driver's 4 GiB maximum. */
    const char *junk[] = {"CUDA_CACHE_MAXSIZE=lots", NULL};
    RUN_ENV(&p, junk, "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.err, "CUDA_CACHE_MAXSIZE='lots' is not a number"), "%s", p.err);
    tu_proc_free(&p);
    const char *big[] = {"CUDA_CACHE_MAXSIZE=8589934592", NULL};
    RUN_ENV(&p, big, "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.err, "vyre-cachectl: warning: CUDA_CACHE_MAXSIZE='8589934592' is above the "
                          "driver's maximum of 4294967296 bytes (4 GiB)");
    tu_proc_free(&p);

    /* CUDA_CACHE_PATH set: one directory for every program. */
    char env_path[800];
    snprintf(env_path, sizeof env_path, "CUDA_CACHE_PATH=%s", nv);
    const char *same[] = {env_path, NULL};
    RUN_ENV(&p, same, "--json", "jit");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    o = parse_json(p.out, 2);
    d = json_object_get(o, "driver_default");
    cr_assert(json_is_true(json_object_get(d, "same_as_vyre")));
    cr_assert_eq(jint(o, "bytes"), 164);
    cr_assert_eq(jint(d, "bytes"), 164);
    json_decref(o);
    tu_proc_free(&p);
}

/* ---- seed ---------------------------------------------------------------------- */

static const char k_cuda_src[] = "extern \"C\" __global__ void scale(float *x, float a)\n"
                                 "{\n"
                                 "    x[threadIdx.x] *= a;\n"
                                 "}\n";

static const char k_ptx_src[] = TU_PTX_SCALE;

static void need_compilers(void)
{
    char tc[VYRE_BLOB_TOOLCHAIN_MAX];
    vyre_error err;
    if (vyre_compile_toolchain(VYRE_SOURCE_CUDA_C, tc, sizeof tc, &err) ||
        vyre_compile_toolchain(VYRE_SOURCE_PTX, tc, sizeof tc, &err))
        cr_skip_test("NVRTC or nvJitLink cannot be loaded: %s", err.message);
}

/* The key the run-time path computes for this source. */
static void runtime_key(vyre_source_kind kind, const char *src, const char *arch,
                        const char *const *opts, size_t nopts, char hex[VYRE_KEY_HEX_LEN + 1])
{
    vyre_compile_request req = {kind, src, strlen(src), arch, "scale", opts, nopts};
    vyre_key k;
    vyre_error err;
    cr_assert_eq(vyre_compile_key(&req, &k, &err), 0, "%s", err.message);
    vyre_key_to_hex(&k, hex);
}

Test(cachectl, seed_cuda_c_and_ptx)
{
    need_compilers();
    char cu[700], ptx[700];
    snprintf(cu, sizeof cu, "%s/scale.cu", g_tmp);
    snprintf(ptx, sizeof ptx, "%s/scale.ptx", g_tmp);
    tu_write_file(cu, k_cuda_src, strlen(k_cuda_src));
    tu_write_file(ptx, k_ptx_src, strlen(k_ptx_src));

    tu_proc p;
    CC(&p, "seed", cu, ptx, "--arch", "sm_80,sm_90a", "--entry", "scale");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_empty(p.err);
    cr_assert_eq(tu_count_lines(p.out), 5, "%s", p.out);
    tu_assert_line(p.out, "Seeded 4 modules (4 kernels), already present 0, failed 0");
    struct {
        vyre_source_kind kind;
        const char *src, *arch, *file, *kind_name;
    } want[4] = {
        {VYRE_SOURCE_CUDA_C, k_cuda_src, "sm_80", cu, "cuda-c"},
        {VYRE_SOURCE_CUDA_C, k_cuda_src, "sm_90a", cu, "cuda-c"},
        {VYRE_SOURCE_PTX, k_ptx_src, "sm_80", ptx, "ptx"},
        {VYRE_SOURCE_PTX, k_ptx_src, "sm_90a", ptx, "ptx"},
    };
    for (int i = 0; i < 4; i++) {
        char hex[VYRE_KEY_HEX_LEN + 1], buf[1024], head[128];
        runtime_key(want[i].kind, want[i].src, want[i].arch, NULL, 0, hex);
        snprintf(head, sizeof head, "seeded   %.12s  %-7s  %-6s  ", hex, want[i].arch,
                 want[i].kind_name);
        line_no(p.out, i, buf, sizeof buf);
        cr_assert(strncmp(buf, head, strlen(head)) == 0, "line %d: '%s', want '%s...'", i, buf,
                  head);
        char tail[800];
        snprintf(tail, sizeof tail, "  %s  [scale]", want[i].file);
        size_t bl = strlen(buf), tl = strlen(tail);
        cr_assert(bl > tl && strcmp(buf + bl - tl, tail) == 0, "%s", buf);
    }
    tu_proc_free(&p);

    /* The seeded blobs are cubins under the run-time keys, and valid. */
    char hex[VYRE_KEY_HEX_LEN + 1];
    runtime_key(VYRE_SOURCE_PTX, k_ptx_src, "sm_90a", NULL, 0, hex);
    CC(&p, "show", hex, "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out, 1);
    json_t *b = json_object_get(o, "blob");
    cr_assert_str_eq(json_string_value(json_object_get(b, "kind")), "cubin");
    cr_assert_str_eq(json_string_value(json_object_get(b, "arch")), "sm_90a");
    cr_assert(strncmp(json_string_value(json_object_get(b, "toolchain")), "nvjitlink-", 10) == 0);
    cr_assert_gt(jint(b, "compile_ns"), 0);
    json_decref(o);
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_proc_free(&p);

    /* Again: everything present, nothing compiled. */
    CC(&p, "--json", "seed", cu, ptx, "--arch", "sm_80,sm_90a,sm_80", "--entry", "scale");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    o = parse_json(p.out, 2);
    cr_assert_eq(jint(o, "seeded"), 0);
    cr_assert_eq(jint(o, "present"), 4);
    cr_assert_eq(json_array_size(json_object_get(o, "blobs")), 4);
    json_decref(o);
    tu_proc_free(&p);

    /* Compiler options after "--" are part of the key. */
    CC(&p, "seed", cu, "--arch", "sm_90", "--entry", "scale", "--", "-lineinfo");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    const char *opts[] = {"-lineinfo"};
    runtime_key(VYRE_SOURCE_CUDA_C, k_cuda_src, "sm_90", opts, 1, hex);
    char head[64];
    snprintf(head, sizeof head, "seeded   %.12s  sm_90  ", hex);
    cr_assert(strncmp(p.out, head, strlen(head)) == 0, "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    cr_assert_eq(tu_count_lines(p.out), 5);
    tu_proc_free(&p);
}

Test(cachectl, seed_errors)
{
    char cu[700], bad[700];
    snprintf(cu, sizeof cu, "%s/scale.cu", g_tmp);
    tu_write_file(cu, k_cuda_src, strlen(k_cuda_src));
    tu_proc p;
    CC(&p, "seed", "--arch", "sm_90", "--entry", "scale");
    assert_usage_error(&p, "seed needs at least one file",
                       "name CUDA C (.cu), PTX (.ptx) or cubin files, or directories of them",
                       "seed");
    tu_proc_free(&p);
    CC(&p, "seed", cu, "--arch", "sm_80,compute_90", "--entry", "scale");
    assert_usage_error(&p, "'compute_90' is not an architecture",
                       "write architectures such as sm_80,sm_90,sm_90a", "seed");
    tu_proc_free(&p);
    CC(&p, "seed", cu, "--entry", "");
    assert_usage_error(&p, "empty --entry", "give a kernel name, such as --entry scale", "seed");
    tu_proc_free(&p);
    CC(&p, "seed", cu, "--jobs", "0");
    assert_usage_error(&p, "--jobs '0' is not a number of jobs",
                       "give a whole number from 1 to 256", "seed");
    tu_proc_free(&p);
    cr_assert(!exists(g_cache), "usage errors must not create the cache");

    /* CUDA C and cubins name no target: one clear error each, exit 2. */
    char cubin[700];
    snprintf(cubin, sizeof cubin, "%s/m.cubin", g_tmp);
    tu_write_file(cubin,
                  "\x7f"
                  "ELF\x02\x01\x01",
                  7);
    CC(&p, "seed", cu, cubin);
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    char want[2000];
    snprintf(want, sizeof want,
             "vyre-cachectl: error: seeding '%s': CUDA C source names no target architecture: "
             "seeding it needs --arch",
             cu);
    tu_assert_line(p.err, want);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: seeding '%s': a cubin names no target architecture: "
             "seeding it needs --arch",
             cubin);
    tu_assert_line(p.err, want);
    tu_assert_line(p.err, "hint: give --arch sm_90 (or a list: sm_80,sm_90a): only PTX names its "
                          "own target");
    tu_assert_line(p.out, "Seeded 0 modules (0 kernels), already present 0, failed 2");
    tu_proc_free(&p);

    need_compilers();
    snprintf(bad, sizeof bad, "%s/broken.cu", g_tmp);
    static const char broken[] = "extern \"C\" __global__ void scale(float *x)\n"
                                 "{\n"
                                 "    x[0] = not_declared_anywhere;\n"
                                 "}\n";
    tu_write_file(bad, broken, strlen(broken));
    char missing[700];
    snprintf(missing, sizeof missing, "%s/nope.cu", g_tmp);
    CC(&p, "seed", bad, missing, cu, "--arch", "sm_80", "--entry", "scale");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    snprintf(want, sizeof want, "vyre-cachectl: error: seeding '%s' for sm_80: ", bad);
    cr_assert(strncmp(p.err, want, strlen(want)) == 0, "%s", p.err);
    snprintf(want, sizeof want, "compiler log for '%s' (sm_80):", bad);
    tu_assert_line(p.err, want);
    cr_assert(strstr(p.err, "not_declared_anywhere"), "log lacks the error: %s", p.err);
    /* NVRTC's log names the file seeded (issue 25: it said "kernel.cu(3)"). */
    snprintf(want, sizeof want, "%s(3): error", bad);
    cr_assert(strstr(p.err, want), "the log names '%s': %s", want, p.err);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: seeding '%s': cannot read '%s': No such file or directory",
             missing, missing);
    tu_assert_line(p.err, want);
    /* The good file was still seeded. */
    tu_assert_line(p.out, "Seeded 1 module (1 kernel), already present 0, failed 2");
    tu_proc_free(&p);
}

/* ---- seeding as users first try (issue 12) ---------------------------------------- */

/* PTX modules with several kernels, as Triton writes them: the target is
 * arch-specific and comments come first. */
static const char k_ptx_mod1[] = "//\n// Generated by LLVM NVPTX Back-End\n// .target sm_52\n//\n\n"
                                 ".version 8.7\n"
                                 ".target sm_90a\n"
                                 ".address_size 64\n"
                                 ".visible .entry k1(.param .u64 p)\n{\n ret;\n}\n"
                                 ".visible .entry k2(.param .u64 p)\n{\n ret;\n}\n";
static const char k_ptx_mod2[] = ".version 8.0\n"
                                 "/* a block comment .target sm_60 */\n"
                                 ".target sm_80\n"
                                 ".address_size 64\n"
                                 ".visible .entry k3(.param .u64 p)\n{\n ret;\n}\n"
                                 ".visible .entry k4(.param .u64 p)\n{\n ret;\n}\n"
                                 ".visible .entry k5(.param .u64 p)\n{\n ret;\n}\n";

static const char *g_fake_env[2];

/* Every seed below links through the fake nvJitLink (tests/fakes/
 * fakejitlink.c), in the child and here: CI has no toolkit libraries. */
static void use_fake_jitlink(void)
{
    g_fake_env[0] = "VYRE_NVJITLINK_LIBRARY=" FAKEJITLINK_LIB;
    g_fake_env[1] = NULL;
    setenv("VYRE_NVJITLINK_LIBRARY", FAKEJITLINK_LIB, 1);
}

#define CCF(p, ...) RUN_ENV(p, g_fake_env, "--cache-dir", g_cache, __VA_ARGS__)

/* <tmp>/triton: a/mod1.ptx (sm_90a: k1 k2), a/mod1.cubin (the PTX's
 * sibling: skipped), b/mod2.ptx (sm_80: k3 k4 k5), files to skip, and a
 * link to a directory outside with a PTX file (never followed). */
static void make_ptx_tree(char *dir, size_t size)
{
    char path[800];
    snprintf(dir, size, "%s/triton", g_tmp);
    snprintf(path, sizeof path, "%s/a", dir);
    cr_assert_eq(mkdir(dir, 0700) == 0 && mkdir(path, 0700) == 0, 1);
    snprintf(path, sizeof path, "%s/b", dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/a/mod1.ptx", dir);
    tu_write_file(path, k_ptx_mod1, strlen(k_ptx_mod1));
    snprintf(path, sizeof path, "%s/a/mod1.cubin", dir);
    tu_write_file(path, "not really", 10);
    snprintf(path, sizeof path, "%s/a/mod1.json", dir);
    tu_write_file(path, "{}", 2);
    snprintf(path, sizeof path, "%s/b/mod2.ptx", dir);
    tu_write_file(path, k_ptx_mod2, strlen(k_ptx_mod2));
    snprintf(path, sizeof path, "%s/README", dir);
    tu_write_file(path, "hello\n", 6);
    char outside[700];
    snprintf(outside, sizeof outside, "%s/outside", g_tmp);
    cr_assert_eq(mkdir(outside, 0700), 0);
    snprintf(path, sizeof path, "%s/evil.ptx", outside);
    tu_write_file(path, k_ptx_mod1, strlen(k_ptx_mod1) - 2);
    snprintf(path, sizeof path, "%s/link", dir);
    cr_assert_eq(symlink(outside, path), 0);
    snprintf(path, sizeof path, "%s/c.ptx", dir);
    cr_assert_eq(symlink("../outside/evil.ptx", path), 0);
}

static void module_key(const char *src, const char *arch, char hex[VYRE_KEY_HEX_LEN + 1])
{
    vyre_compile_request req = {VYRE_SOURCE_PTX, src, strlen(src), arch, NULL, NULL, 0};
    vyre_key k;
    vyre_error err;
    cr_assert_eq(vyre_compile_key(&req, &k, &err), 0, "%s", err.message);
    vyre_key_to_hex(&k, hex);
}

Test(cachectl, seed_a_directory_of_ptx_modules_with_no_flags)
{
    use_fake_jitlink();
    char dir[700], k1[VYRE_KEY_HEX_LEN + 1], k2[VYRE_KEY_HEX_LEN + 1];
    make_ptx_tree(dir, sizeof dir);
    module_key(k_ptx_mod1, "sm_90a", k1);
    module_key(k_ptx_mod2, "sm_80", k2);

    tu_proc p;
    CCF(&p, "seed", dir);
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert_str_empty(p.err);
    cr_assert_eq(tu_count_lines(p.out), 3, "%s", p.out);
    char want[1200], buf[1200];
    snprintf(want, sizeof want, "seeded   %.12s  sm_90a   ptx        %s  %s/a/mod1.ptx  [k1, k2]",
             k1, "1.1 KiB", dir);
    line_no(p.out, 0, buf, sizeof buf);
    /* The size depends on the fake's cubin: compare around it. */
    cr_assert(strncmp(buf, want, 40) == 0, "%s\nwant %s", buf, want);
    snprintf(want, sizeof want, "  %s/a/mod1.ptx  [k1, k2]", dir);
    cr_assert(strstr(buf, want), "%s", buf);
    line_no(p.out, 1, buf, sizeof buf);
    snprintf(want, sizeof want, "seeded   %.12s  sm_80    ptx   ", k2);
    cr_assert(strncmp(buf, want, strlen(want)) == 0, "%s\nwant %s", buf, want);
    snprintf(want, sizeof want, "  %s/b/mod2.ptx  [k3, k4, k5]", dir);
    cr_assert(strstr(buf, want), "%s", buf);
    tu_assert_line(p.out, "Seeded 2 modules (5 kernels), already present 0, failed 0");
    tu_proc_free(&p);

    /* ls and show tell which kernels and which source each blob holds. */
    CC(&p, "--json", "ls", "--sort", "key");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out, 3);
    json_t *es = json_object_get(o, "entries");
    cr_assert_eq(json_array_size(es), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *e = json_array_get(es, i);
        const char *key = json_string_value(json_object_get(e, "key"));
        int first = strcmp(key, k1) == 0;
        cr_assert(first || strcmp(key, k2) == 0, "%s", key);
        cr_assert_str_eq(json_string_value(json_object_get(e, "source")),
                         first ? "mod1.ptx" : "mod2.ptx");
        cr_assert_eq(jint(e, "n_kernels"), first ? 2 : 3);
        json_t *ks = json_object_get(e, "kernels");
        cr_assert_eq(json_array_size(ks), first ? 2 : 3);
        cr_assert_str_eq(json_string_value(json_array_get(ks, 0)), first ? "k1" : "k3");
        cr_assert(json_is_false(json_object_get(e, "stale")));
        cr_assert(json_is_true(json_object_get(e, "kernels_complete")));
    }
    json_decref(o);
    tu_proc_free(&p);
    CC(&p, "ls");
    snprintf(want, sizeof want, "mod2.ptx  k3,k4,k5\n");
    cr_assert(strstr(p.out, want), "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "show", k1);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Source:            mod1.ptx");
    tu_assert_line(p.out, "Kernels:           2: k1, k2");
    tu_assert_line(p.out, "Architecture:      sm_90a");
    tu_proc_free(&p);
    CC(&p, "--json", "show", k2);
    o = parse_json(p.out, 1);
    json_t *b = json_object_get(o, "blob");
    cr_assert_str_eq(json_string_value(json_object_get(b, "source")), "mod2.ptx");
    cr_assert_eq(json_array_size(json_object_get(b, "kernels")), 3);
    cr_assert_eq(jint(b, "key_version"), 2);
    json_decref(o);
    tu_proc_free(&p);

    /* Again, in parallel: every module present, output in the same order. */
    CCF(&p, "seed", dir, "--jobs", "3");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    snprintf(want, sizeof want, "present  %.12s  sm_90a", k1);
    cr_assert(strncmp(p.out, want, strlen(want)) == 0, "%s", p.out);
    tu_assert_line(p.out, "Seeded 0 modules (0 kernels), already present 2, failed 0");
    tu_proc_free(&p);
    CCF(&p, "--json", "seed", dir);
    o = parse_json(p.out, 2);
    cr_assert_eq(jint(o, "files"), 2);
    cr_assert_eq(jint(o, "skipped"), 1);
    cr_assert_eq(jint(o, "present"), 2);
    cr_assert_eq(jint(o, "failed"), 0);
    json_t *bl = json_array_get(json_object_get(o, "blobs"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(bl, "arch")), "sm_90a");
    cr_assert_eq(json_array_size(json_object_get(bl, "kernels")), 2);
    json_decref(o);
    tu_proc_free(&p);

    /* Many files at once: every one seeded, once. */
    char many[700], path[800];
    snprintf(many, sizeof many, "%s/many", g_tmp);
    cr_assert_eq(mkdir(many, 0700), 0);
    for (int i = 0; i < 24; i++) {
        char src[600];
        snprintf(src, sizeof src, "%s// variant %d\n", k_ptx_mod1, i);
        snprintf(path, sizeof path, "%s/m%02d.ptx", many, i);
        tu_write_file(path, src, strlen(src));
    }
    CCF(&p, "seed", many, "--jobs", "8");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Seeded 24 modules (48 kernels), already present 0, failed 0");
    snprintf(want, sizeof want, "%s/m00.ptx", many);
    cr_assert(strstr(p.out, want) < strstr(p.out, "m23.ptx"), "in name order:\n%s", p.out);
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_proc_free(&p);

    /* A directory that is a link (as ~/.triton/cache often is) is walked,
     * its files named under the link; an empty one is said to be empty. */
    char link[700], empty[700];
    snprintf(link, sizeof link, "%s/cache-link", g_tmp);
    cr_assert_eq(symlink(dir, link), 0);
    snprintf(empty, sizeof empty, "%s/empty", g_tmp);
    cr_assert_eq(mkdir(empty, 0700), 0);
    snprintf(path, sizeof path, "%s/", link);
    CCF(&p, "seed", path, empty);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    snprintf(want, sizeof want, "  %s/a/mod1.ptx  [k1, k2]", link);
    cr_assert(strstr(p.out, want), "%s", p.out);
    tu_assert_line(p.out, "Seeded 0 modules (0 kernels), already present 2, failed 0");
    snprintf(want, sizeof want, "vyre-cachectl: note: no .ptx, .cu or .cubin file under '%s'",
             empty);
    tu_assert_line(p.err, want);
    tu_proc_free(&p);
}

Test(cachectl, seed_refuses_a_module_without_the_entry)
{
    use_fake_jitlink();
    char dir[700], k2[VYRE_KEY_HEX_LEN + 1];
    make_ptx_tree(dir, sizeof dir);
    module_key(k_ptx_mod2, "sm_80", k2);
    tu_proc p;
    CCF(&p, "seed", dir, "--entry", "k3", "--entry", "k5");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    char want[1200];
    snprintf(want, sizeof want,
             "vyre-cachectl: error: seeding '%s/a/mod1.ptx' for sm_90a: the module has no kernel "
             "'k3'; it defines 2: k1, k2",
             dir);
    tu_assert_line(p.err, want);
    tu_assert_line(p.out, "Seeded 1 module (3 kernels), already present 0, failed 1");
    tu_proc_free(&p);
    /* Nothing was stored for mod1; mod2 has both kernels and was. */
    CC(&p, "-q", "ls");
    snprintf(want, sizeof want, "%s", k2);
    cr_assert_eq(tu_count_lines(p.out), 1, "%s", p.out);
    tu_assert_line(p.out, want);
    tu_proc_free(&p);

    /* An entry that is nowhere: every file fails (the present one too),
     * nothing new is stored. */
    CCF(&p, "--json", "seed", dir, "--entry", "does_not_exist");
    cr_assert_eq(p.exit_code, 2);
    json_t *o = parse_json(p.out, 2);
    cr_assert_eq(jint(o, "failed"), 2, "mod2 is present, and checked against its kernels");
    json_t *f = json_array_get(json_object_get(o, "failures"), 0);
    cr_assert(strstr(json_string_value(json_object_get(f, "error")), "no kernel 'does_not_exist'"));
    json_decref(o);
    tu_proc_free(&p);
    CC(&p, "-q", "ls");
    cr_assert_eq(tu_count_lines(p.out), 1, "%s", p.out);
    tu_proc_free(&p);

    /* A PTX without a target needs --arch; with it, it seeds. */
    char notarget[800];
    snprintf(notarget, sizeof notarget, "%s/notarget.ptx", g_tmp);
    static const char src[] = ".version 8.0\n.address_size 64\n"
                              ".visible .entry z(.param .u64 p)\n{\n ret;\n}\n";
    tu_write_file(notarget, src, strlen(src));
    CCF(&p, "seed", notarget);
    cr_assert_eq(p.exit_code, 2);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: seeding '%s': the PTX names no real architecture in a "
             "'.target' directive",
             notarget);
    tu_assert_line(p.err, want);
    tu_proc_free(&p);
    CCF(&p, "seed", notarget, "--arch", "sm_90,sm_100a", "--entry", "z");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Seeded 2 modules (2 kernels), already present 0, failed 0");
    tu_proc_free(&p);
}

#define assert_prefix(text, want)                                                                  \
    cr_assert(strncmp((text), (want), strlen(want)) == 0, "want '%s' first in:\n%s", (want), (text))

/* Writes a key-version-1 blob (what builds before key v2 stored). */
static void write_v1_blob(const char *prefix, size_t len)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.format_version = VYRE_BLOB_FORMAT_VERSION;
    h.key_version = 1;
    h.key = key_of(prefix);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_80");
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-12.4");
    h.stored_size = h.raw_size = len;
    h.created_unix_ns = now_ns() - DAY;
    h.compile_ns = 1000;
    unsigned char *buf = calloc(1, VYRE_BLOB_HEADER_SIZE + len);
    cr_assert_not_null(buf);
    vyre_blob_payload_sum(buf + VYRE_BLOB_HEADER_SIZE, len, h.payload_xxh128);
    cr_assert_eq(vyre_blob_header_encode(&h, buf, NULL), 0);
    char path[800], dir[800];
    vyre_blob_path(g_cache, &h.key, path, sizeof path, NULL);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdir(dir, 0700);
    tu_write_file(path, buf, VYRE_BLOB_HEADER_SIZE + len);
    free(buf);
}

Test(cachectl, v1_blobs_are_stale_reported_and_pruned)
{
    populate();
    write_v1_blob("5a1e", 744);
    write_v1_blob("5a2e", 1744);
    tu_proc p;
    /* Before the index knows them: verify counts them stale (not bad) and
     * its repair indexes them. */
    CC(&p, "verify", "--repair");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "Bad blobs:             0");
    tu_assert_line(p.out, "Quarantined:           0 (kept for inspection)");
    tu_assert_line(p.out, "Stale blobs:           2 (older key format, never hit; 'prune --stale' "
                          "removes them)");
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_assert_line(p.out, "The cache is clean.");
    tu_proc_free(&p);
    CC(&p, "--json", "verify");
    json_t *o = parse_json(p.out, 1);
    json_t *s = json_object_get(o, "summary");
    cr_assert_eq(jint(s, "stale"), 2);
    cr_assert_eq(jint(s, "bad_blobs"), 0);
    json_decref(o);
    tu_proc_free(&p);

    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Entries:               6");
    uint64_t fresh = 0;
    for (int i = 0; i < 4; i++)
        fresh += blob_disk(g_hex[i]);
    tu_assert_line(p.out, tu_text("Stale:                 2 (%s, older key format: never hit)",
                                  tu_size_text(blobs_disk() - fresh)));
    tu_assert_line(p.out, "hint: run 'vyre-cachectl prune --stale' to remove the stale blobs");
    tu_proc_free(&p);
    CC(&p, "--json", "stats");
    o = parse_json(p.out, 4);
    s = json_object_get(o, "stale");
    cr_assert_eq(jint(s, "entries"), 2);
    cr_assert_eq(jint(s, "bytes"), (json_int_t)(blobs_disk() - fresh),
                 "on disk, not their 2 * %d + 744 + 1744 bytes", VYRE_BLOB_HEADER_SIZE);
    cr_assert_eq(jint(s, "key_version"), VYRE_KEY_VERSION);
    json_decref(o);
    tu_proc_free(&p);
    CC(&p, "ls", "--sort", "key");
    cr_assert(strstr(p.out, "  -       (stale: key v1)\n"), "%s", p.out);
    tu_proc_free(&p);

    CC(&p, "prune", "--stale", "--dry-run");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_prefix(p.out, tu_text("Would remove 2 blobs (%s): 2 by stale\n",
                                 tu_size_text(blobs_disk() - fresh)));
    tu_proc_free(&p);
    uint64_t stale = blobs_disk() - fresh;
    CC(&p, "prune", "--stale");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_prefix(p.out, tu_text("Removed 2 blobs (%s): 2 by stale\n", tu_size_text(stale)));
    tu_proc_free(&p);
    CC(&p, "--json", "stats");
    o = parse_json(p.out, 4);
    cr_assert_eq(jint(json_object_get(o, "stale"), "entries"), 0);
    cr_assert_eq(jint(o, "entries"), 4);
    json_decref(o);
    tu_proc_free(&p);

    /* --stale-toolchain removes them too (the identities it keeps aside). */
    write_v1_blob("5a3e", 100);
    CC(&p, "reindex");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    stale = blobs_disk() - fresh;
    CC(&p, "prune", "--stale-toolchain", "--toolchain", "nvrtc-13.0", "--toolchain", "nvrtc-12.4",
       "--toolchain", "nvjitlink-13.0");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_prefix(p.out, tu_text("Removed 1 blob (%s): 1 by stale\n", tu_size_text(stale)));
    tu_proc_free(&p);
    CC(&p, "-q", "ls");
    cr_assert_eq(tu_count_lines(p.out), 4, "%s", p.out);
    tu_proc_free(&p);
}

/* ---- own only what is ours -------------------------------------------------- */

/* The audit's '--cache-dir ~/work verify --repair', which printed 'debris
 * tmp/thesis.tex: removed': a directory that is not a cache is refused,
 * with the way to adopt a real old one, and nothing in it changes. */
Test(cachectl, directory_that_is_not_a_cache_is_refused)
{
    char work[700], p[800];
    snprintf(work, sizeof work, "%s/work", g_tmp);
    cr_assert_eq(mkdir(work, 0700), 0);
    snprintf(p, sizeof p, "%s/tmp", work);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/tmp/thesis.tex", work);
    tu_write_file(p, "mine", 4);
    struct timeval old[2] = {{time(NULL) - 7200, 0}, {time(NULL) - 7200, 0}};
    cr_assert_eq(utimes(p, old), 0);
    static const char *const cmds[][2] = {{"verify", "--repair"}, {"verify", NULL},
                                          {"clear", "--yes"},     {"prune", "--max-age=0s"},
                                          {"stats", NULL},        {"reindex", NULL}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        tu_proc r;
        RUN(&r, "--cache-dir", work, cmds[i][0], cmds[i][1]);
        cr_assert_eq(r.exit_code, 2, "%s: exit %d\n%s%s", cmds[i][0], r.exit_code, r.out, r.err);
        char want[900];
        snprintf(want, sizeof want, "'%s'", work);
        cr_assert_neq(strstr(r.err, want), NULL, "%s: stderr:\n%s", cmds[i][0], r.err);
        cr_assert_neq(strstr(r.err, "vyre-cachectl reindex --adopt"), NULL, "%s: stderr:\n%s",
                      cmds[i][0], r.err);
        tu_proc_free(&r);
        cr_assert(exists(p), "%s removed the user's file", cmds[i][0]);
    }
    snprintf(p, sizeof p, "%s/blobs", work);
    cr_assert(!exists(p), "the directory was set up as a cache");
}

/* 'clear --yes' said "Removed 2 blobs" for blobs/ab/photo.jpg and
 * blobs/photos/a.jpg. Now it counts and removes vyre's blobs only, and
 * verify names the user's files as left. */
Test(cachectl, files_vyre_did_not_write_are_left_and_not_counted)
{
    populate();
    char photo[800], dir[800], a[900];
    snprintf(photo, sizeof photo, "%s/blobs/ab/photo.jpg", g_cache);
    tu_write_file(photo, "jpg", 3);
    snprintf(dir, sizeof dir, "%s/blobs/photos", g_cache);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(a, sizeof a, "%s/a.jpg", dir);
    tu_write_file(a, "jpg", 3);
    tu_proc p;
    CC(&p, "verify", "--repair");
    cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
    tu_assert_line(p.out, "stray             blobs/ab/photo.jpg (not written by vyre): left");
    tu_assert_line(p.out, "stray             blobs/photos (not written by vyre): left");
    tu_assert_line(p.out, "2 problems could not be repaired.");
    tu_proc_free(&p);
    uint64_t on_disk = blobs_disk();
    CC(&p, "clear", "--yes");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char msg[900];
    snprintf(msg, sizeof msg, "Removed 4 blobs (%s) from %s", tu_size_text(on_disk), g_cache);
    tu_assert_line(p.out, msg);
    tu_assert_line(p.out, "Left 2 entries vyre did not write (see 'vyre-cachectl verify').");
    tu_proc_free(&p);
    cr_assert(exists(photo) && exists(a), "clear removed the user's files");
}

/* reindex replaced a foreign SQLite file named index.sqlite3 although
 * stats had told the user to move it away: now it is kept, and said so. */
Test(cachectl, reindex_keeps_a_foreign_index_and_says_where)
{
    populate();
    char idx[800];
    snprintf(idx, sizeof idx, "%s/index.sqlite3", g_cache);
    static const char *const sfx[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char q[820];
        snprintf(q, sizeof q, "%s%s", idx, sfx[i]);
        unlink(q);
    }
    char sql[1000];
    snprintf(sql, sizeof sql, "sqlite3 '%s' 'CREATE TABLE notes(t); PRAGMA user_version=7;'", idx);
    if (system(sql) != 0)
        cr_skip_test("no sqlite3 command to make a foreign database");
    tu_proc p;
    CC(&p, "reindex");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, tu_text("Indexed:               4 (%s)", tu_size_text(blobs_disk())));
    cr_assert_neq(strstr(p.out, "Foreign index kept:    index.sqlite3.foreign-"), NULL, "%s",
                  p.out);
    tu_proc_free(&p);
}

/* A cache of the previous version that lost its index has nothing that
 * says it is a vyre cache: it is refused until the user adopts it. */
Test(cachectl, reindex_adopt_takes_an_old_cache_back)
{
    populate();
    char q[800];
    static const char *const gone[] = {"index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm",
                                       VYRE_CACHE_MARKER};
    for (size_t i = 0; i < 4; i++) {
        snprintf(q, sizeof q, "%s/%s", g_cache, gone[i]);
        unlink(q);
    }
    tu_proc p;
    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 2, "%s%s", p.out, p.err);
    tu_assert_line(p.err, "hint: if it is a cache made by an earlier vyre, adopt it with "
                          "'vyre-cachectl reindex --adopt'");
    tu_proc_free(&p);
    CC(&p, "reindex", "--adopt");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_assert_line(p.out, tu_text("Indexed:               4 (%s)", tu_size_text(blobs_disk())));
    tu_proc_free(&p);
    snprintf(q, sizeof q, "%s/%s", g_cache, VYRE_CACHE_MARKER);
    cr_assert(exists(q), "no marker after adopting");
    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
}

/* The audit: with the index locked past the busy timeout, 'prune
 * --max-age 0s' exited 2 after deleting all the blobs. Now it exits 2
 * saying nothing was removed, and every blob is still there. */
Test(cachectl, prune_with_locked_index_fails_and_removes_nothing)
{
    populate();
    char idx[800];
    snprintf(idx, sizeof idx, "%s/index.sqlite3", g_cache);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(idx, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    tu_proc p;
    CC(&p, "-v", "prune", "--max-age", "0s");
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    cr_assert_eq(p.exit_code, 2, "exit %d\n%s%s", p.exit_code, p.out, p.err);
    cr_assert_neq(strstr(p.err, "database is locked"), NULL, "stderr:\n%s", p.err);
    cr_assert_neq(strstr(p.err, "nothing was removed"), NULL, "stderr:\n%s", p.err);
    cr_assert_neq(strstr(p.err, "hint: "), NULL, "stderr:\n%s", p.err);
    cr_assert_null(strstr(p.out, "removed"), "stdout claims removals:\n%s", p.out);
    tu_proc_free(&p);
    for (int i = 0; i < 4; i++) {
        char path[800];
        blob_path(g_hex[i], path, sizeof path);
        cr_assert(exists(path), "blob %d deleted by a prune that failed", i);
    }
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_proc_free(&p);
}
