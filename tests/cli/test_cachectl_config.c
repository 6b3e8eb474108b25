/*
 * test_cachectl_config.c - the cache's configuration, its size limit and
 * first use, through the real vyre-cachectl binary and libcore (issue 12,
 * points 3, 4 and 6):
 *   - configuration precedence: default < user file < the cache's
 *     vyre.conf < VYRE_CACHE_* < -o, each layer overriding the one below,
 *     and `config` saying where each value comes from;
 *   - errors naming the file and line (exit 2); `config KEY VALUE` keeping
 *     the other lines; read_only refusing writes;
 *   - automatic cleanup under max_size with 4 processes putting at once
 *     (verify clean and the limit held afterwards);
 *   - stats/ls/verify on a cache that does not exist (zeros, exit 0,
 *     nothing created); zero-stats and -z; prune --max-age 0s; quarantined
 *     files pruned by age.
 *   - issue 22: a size without a unit is GiB and fractions never become 0
 *     (point 3); a max_size that would empty the cache asks first; an
 *     unknown key in a file is a warning with a did-you-mean and `config`
 *     runs whatever the files hold (point 10); remote_storage (with its
 *     token file) is refused from a vyre.conf another user owns, and a
 *     umask that lets others write is refused (point 1).
 * Every test gets its own HOME, XDG_CACHE_HOME and XDG_CONFIG_HOME.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache_internal.h"
#include "servers.h"
#include "testutil.h"
#include "vyre/vyre.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

static char g_tmp[512];
static char g_cache[600];
static char g_conf_dir[600];  /* $XDG_CONFIG_HOME */
static char g_user_conf[700]; /* $XDG_CONFIG_HOME/vyre/vyre.conf */
static char g_cache_conf[700];
static char g_env_home[700];
static char g_env_xdg[700];

static const char *const k_conf_env[] = {"VYRE_CACHE_MAX_SIZE",
                                         "VYRE_CACHE_MAX_AGE",
                                         "VYRE_CACHE_UMASK",
                                         "VYRE_CACHE_READ_ONLY",
                                         "VYRE_CACHE_QUARANTINE_MAX_AGE",
                                         "VYRE_REMOTE_CACHE"};

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    snprintf(g_conf_dir, sizeof g_conf_dir, "%s/config", g_tmp);
    snprintf(g_user_conf, sizeof g_user_conf, "%s/vyre/vyre.conf", g_conf_dir);
    snprintf(g_cache_conf, sizeof g_cache_conf, "%s/vyre.conf", g_cache);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    /* This process opens caches too (libcore reads the configuration). */
    setenv("XDG_CONFIG_HOME", g_conf_dir, 1);
    setenv("HOME", g_tmp, 1);
    for (size_t i = 0; i < sizeof k_conf_env / sizeof k_conf_env[0]; i++)
        unsetenv(k_conf_env[i]);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_config, .init = setup, .fini = teardown, .timeout = 180);

static void run_env(tu_proc *p, const char *const *args, const char *const *extra)
{
    const char *const env[] = {g_env_home, g_env_xdg, "VYRE_PTX_CACHE_DIR", NULL};
    tu_run_bin(p, VYRE_CACHECTL_BIN, args, env, extra);
}

#define RUN_ENV(p, env, ...) run_env((p), (const char *const[]){__VA_ARGS__, NULL}, (env))
#define CC(p, ...)                                                                                 \
    run_env((p), (const char *const[]){"--cache-dir", g_cache, __VA_ARGS__, NULL}, NULL)
#define CC_ENV(p, env, ...)                                                                        \
    run_env((p), (const char *const[]){"--cache-dir", g_cache, __VA_ARGS__, NULL}, (env))

static void first_line(const char *text, char *buf, size_t size)
{
    const char *e = strchr(text, '\n');
    size_t n = e ? (size_t)(e - text) : strlen(text);
    if (n >= size)
        n = size - 1;
    memcpy(buf, text, n);
    buf[n] = '\0';
}

static void write_file(const char *path, const char *text)
{
    char dir[800];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    *slash = '\0';
    char cmd[900];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static json_t *parse_json(const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    cr_assert_not_null(o, "bad JSON (%s) in:\n%s", je.text, text);
    return o;
}

static json_int_t jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "'%s' is not an integer", key);
    return json_integer_value(v);
}

/* The listing's row for key: "KEY  VALUE  FROM" as the table prints it
 * (columns padded to the widest cell), checked cell by cell. */
static int config_row_is(const char *out, const char *key, const char *value, const char *where)
{
    size_t kl = strlen(key), vl = strlen(value), wl = strlen(where);
    for (const char *line = out; *line;
         line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
        if (strncmp(line, key, kl) != 0 || line[kl] != ' ')
            continue;
        const char *p = line + kl;
        p += strspn(p, " ");
        if (vl) {
            if (strncmp(p, value, vl) != 0 || strncmp(p + vl, "  ", 2) != 0)
                return 0;
            p += vl;
            p += strspn(p, " ");
        }
        return strncmp(p, where, wl) == 0 && (p[wl] == '\n' || p[wl] == '\0');
    }
    return 0;
}

#define assert_config_row(out, key, value, where)                                                  \
    cr_assert(config_row_is((out), (key), (value), (where)), "no row '%s' '%s' '%s' in:\n%s",      \
              (key), (value), (where), (out))

/* `config --json max_size` -> value and origin, checked. */
static void assert_key(const char *const *env, const char *key, const char *value,
                       const char *origin, const char *where)
{
    tu_proc p;
    const char *args[] = {"--cache-dir", g_cache, "config", "--json", key, NULL};
    const char *oargs[] = {"--cache-dir", g_cache,  "-o", "max_size=7G",
                           "config",      "--json", key,  NULL};
    run_env(&p, strcmp(origin, "option") == 0 ? oargs : args, env);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out);
    json_t *k = json_array_get(json_object_get(o, "keys"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(k, "key")), key);
    cr_assert_str_eq(json_string_value(json_object_get(k, "value")), value, "%s", p.out);
    cr_assert_str_eq(json_string_value(json_object_get(k, "origin")), origin, "%s", p.out);
    cr_assert_str_eq(json_string_value(json_object_get(k, "where")), where, "%s", p.out);
    json_decref(o);
    tu_proc_free(&p);
}

/* ---- populating through libcore ------------------------------------------- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static vyre_key key_n(unsigned proc, unsigned n)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    snprintf(hex, sizeof hex, "%02x%06x%056d", proc, n, 0);
    vyre_key k;
    cr_assert_eq(vyre_key_from_hex(hex, &k), 0);
    return k;
}

/* Puts a blob of len payload bytes; returns the put's result. */
static int put_n(vyre_cache *c, unsigned proc, unsigned n, size_t len, vyre_error *err)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = key_n(proc, n);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.0");
    h.created_unix_ns = now_ns();
    unsigned char payload[8192];
    for (size_t i = 0; i < len && i < sizeof payload; i++)
        payload[i] = (unsigned char)(i * 7 + n + proc);
    return vyre_cache_put(c, &h, payload, len, err);
}

static vyre_cache *open_cache(void)
{
    vyre_cache *c = NULL;
    vyre_error err;
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &err), 0, "open: %s", err.message);
    return c;
}

static void populate(unsigned n)
{
    vyre_cache *c = open_cache();
    vyre_error err;
    for (unsigned i = 0; i < n; i++)
        cr_assert_eq(put_n(c, 0, i, 1000, &err), 0, "put: %s", err.message);
    vyre_cache_close(c);
}

static json_t *stats_json(void)
{
    tu_proc p;
    CC(&p, "stats", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out);
    tu_proc_free(&p);
    return o;
}

/* ---- configuration ------------------------------------------------------- */

Test(cachectl_config, precedence_each_layer_overrides_the_one_below)
{
    populate(1);
    /* 1. default */
    assert_key(NULL, "max_size", "5G", "default", "default");
    assert_key(NULL, "quarantine_max_age", "7d", "default", "default");
    /* 2. the user's file */
    write_file(g_user_conf, "# user settings\n\nmax_size = 2G\nmax_age = 30d\n");
    char where[900];
    snprintf(where, sizeof where, "%s:3", g_user_conf);
    assert_key(NULL, "max_size", "2G", "user_file", where);
    /* 3. the cache's own file wins over the user's */
    write_file(g_cache_conf, "max_size = 3G\n");
    snprintf(where, sizeof where, "%s:1", g_cache_conf);
    assert_key(NULL, "max_size", "3G", "cache_file", where);
    snprintf(where, sizeof where, "%s:4", g_user_conf);
    assert_key(NULL, "max_age", "30d", "user_file", where); /* not set by the cache's file */
    /* 4. the environment */
    const char *env[] = {"VYRE_CACHE_MAX_SIZE=4G", NULL};
    assert_key(env, "max_size", "4G", "env", "env VYRE_CACHE_MAX_SIZE");
    /* 5. -o on the command line */
    assert_key(env, "max_size", "7G", "option", "-o");

    /* The plain listing: a table of every key, its value and where from. */
    tu_proc p;
    CC_ENV(&p, env, "config");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_eq(tu_count_lines(p.out), 11, "%s", p.out);
    cr_assert(strncmp(p.out, "KEY                 VALUE  FROM\n", 32) == 0, "%s", p.out);
    assert_config_row(p.out, "max_size", "4G", "env VYRE_CACHE_MAX_SIZE");
    assert_config_row(p.out, "triton_max_size", "0", "default");
    assert_config_row(p.out, "inductor_max_size", "0", "default");
    snprintf(where, sizeof where, "%s:4", g_user_conf);
    assert_config_row(p.out, "max_age", "30d", where);
    assert_config_row(p.out, "umask", "unset", "default");
    assert_config_row(p.out, "read_only", "false", "default");
    assert_config_row(p.out, "quarantine_max_age", "7d", "default");
    assert_config_row(p.out, "remote_storage", "", "default");
    tu_proc_free(&p);
    CC(&p, "-o", "max_size=1500M", "config", "max_size");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "1500M\n");
    tu_proc_free(&p);

    /* The limit in force is what stats reports and libcore uses. */
    CC_ENV(&p, env, "stats", "--json");
    json_t *o = parse_json(p.out);
    cr_assert_eq(jint(o, "max_size_bytes"), INT64_C(4) << 30);
    json_decref(o);
    tu_proc_free(&p);
    vyre_cache *c = open_cache();
    cr_assert_eq((uint64_t)vyre_config_get_int(vyre_cache_config(c), VYRE_CONF_MAX_SIZE),
                 UINT64_C(3) << 30, "the cache's file, no env");
    vyre_cache_close(c);
}

Test(cachectl_config, errors_name_the_file_and_line)
{
    populate(1);
    tu_proc p;
    char want[1200], buf[1200];
    /* A bad value in the cache's file: every command that reads it says where. */
    write_file(g_cache_conf, "# ok\nmax_age = 30d\nmax_size = 5X\n");
    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    cr_assert_str_empty(p.out);
    first_line(p.err, buf, sizeof buf);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: %s:3: bad value '5X' for max_size: '5X' has an unknown size "
             "unit 'X'",
             g_cache_conf);
    cr_assert_str_eq(buf, want);
    tu_assert_line(p.err, "hint: a size without a unit is GiB: write a size such as 5G, 500M or "
                          "1.5GiB, or 0 for no limit");
    tu_proc_free(&p);
    /* libcore refuses it too. */
    vyre_cache *c = NULL;
    vyre_error err;
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &err), VYRE_ECONFIG);
    cr_assert(strstr(err.message, ":3: bad value '5X' for max_size"), "%s", err.message);

    /* An unknown key in the user's file: a warning, the line ignored
     * (issue 22: it was an error that locked the user out). */
    write_file(g_cache_conf, "");
    write_file(g_user_conf, "max_size = 1G\nmax_sise = 2G\n");
    CC(&p, "ls");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    first_line(p.err, buf, sizeof buf);
    snprintf(want, sizeof want,
             "vyre-cachectl: warning: %s:2: unknown configuration key 'max_sise' (the line is "
             "ignored)",
             g_user_conf);
    cr_assert_str_eq(buf, want);
    tu_assert_line(p.err, "hint: did you mean 'max_size'?");
    tu_proc_free(&p);

    /* A line that is not key = value. */
    write_file(g_user_conf, "\n\n  read_only\n");
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 2);
    first_line(p.err, buf, sizeof buf);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: %s:3: expected 'key = value', got 'read_only'", g_user_conf);
    cr_assert_str_eq(buf, want);
    tu_proc_free(&p);
    write_file(g_user_conf, "");

    /* Bad values of each kind, from the environment and from -o. */
    const char *env[] = {"VYRE_CACHE_UMASK=0999", NULL};
    CC_ENV(&p, env, "stats");
    cr_assert_eq(p.exit_code, 2);
    first_line(p.err, buf, sizeof buf);
    cr_assert_str_eq(buf, "vyre-cachectl: error: VYRE_CACHE_UMASK: bad value '0999' for umask");
    tu_assert_line(p.err, "hint: fix or unset VYRE_CACHE_UMASK");
    tu_proc_free(&p);
    CC(&p, "-o", "read_only=maybe", "stats");
    cr_assert_eq(p.exit_code, 2);
    first_line(p.err, buf, sizeof buf);
    cr_assert_str_eq(buf, "vyre-cachectl: error: -o: bad value 'maybe' for read_only");
    tu_proc_free(&p);
    CC(&p, "-o", "colour=blue", "stats");
    cr_assert_eq(p.exit_code, 2);
    first_line(p.err, buf, sizeof buf);
    cr_assert_str_eq(buf, "vyre-cachectl: error: -o: unknown configuration key 'colour'");
    tu_proc_free(&p);
    CC(&p, "-o", "max_size", "stats");
    cr_assert_eq(p.exit_code, 2);
    first_line(p.err, buf, sizeof buf);
    cr_assert_str_eq(buf, "vyre-cachectl: error: -o 'max_size': expected key=value");
    tu_proc_free(&p);
    CC(&p, "config", "max_age", "soon");
    cr_assert_eq(p.exit_code, 2);
    first_line(p.err, buf, sizeof buf);
    cr_assert_str_eq(buf, "vyre-cachectl: error: bad value 'soon' for max_age: 'soon' is not an "
                          "age");
    tu_proc_free(&p);
    CC(&p, "config", "max_sise");
    cr_assert_eq(p.exit_code, 2);
    first_line(p.err, buf, sizeof buf);
    cr_assert_str_eq(buf, "vyre-cachectl: error: unknown configuration key 'max_sise'");
    tu_assert_line(p.err, "hint: did you mean 'max_size'?");
    tu_proc_free(&p);
}

Test(cachectl_config, set_keeps_the_other_lines_and_comments)
{
    populate(1);
    write_file(g_cache_conf, "# shared by the team\nmax_size = 10G   \n\n# age\nmax_age = 30d\n"
                             "umask = 002");
    tu_proc p;
    CC(&p, "config", "max_size", "20G");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want[900];
    snprintf(want, sizeof want, "max_size = 20G (%s:2)\n", g_cache_conf);
    cr_assert_str_eq(p.out, want);
    tu_proc_free(&p);
    cr_assert_str_eq(read_file(g_cache_conf), "# shared by the team\nmax_size = 20G\n\n# age\n"
                                              "max_age = 30d\numask = 002");
    CC(&p, "config", "read_only", "false");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_str_eq(read_file(g_cache_conf), "# shared by the team\nmax_size = 20G\n\n# age\n"
                                              "max_age = 30d\numask = 002\nread_only = false\n");
    CC(&p, "config", "--unset", "max_age");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_str_eq(read_file(g_cache_conf), "# shared by the team\nmax_size = 20G\n\n# age\n"
                                              "umask = 002\nread_only = false\n");
    /* Nothing left behind by the atomic rewrite. */
    char cmd[800];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c 'vyre.conf.tmp'", g_cache);
    cr_assert_neq(system(cmd), 0, "a temporary file was left in the cache directory");
    CC(&p, "config", "-v", "max_size");
    snprintf(want, sizeof want, "20G (%s:2)\n", g_cache_conf);
    cr_assert_str_eq(p.out, want);
    tu_proc_free(&p);
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s", path);
    return (unsigned)(st.st_mode & 07777);
}

/* vyre.conf takes the cache's umask, not 0600 nor the process's (issue
 * 33: 'config umask 002' wrote it 0600 and locked the group out), and is
 * never readable by others (it may hold remote_storage credentials). */
Test(cachectl_config, set_writes_vyre_conf_with_the_cache_umask)
{
    populate(1);
    mode_t old = umask(022); /* the children's: never the file's mode */
    tu_proc p;
    CC(&p, "config", "umask", "002");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_eq(mode_of(g_cache_conf), 0660, "%o", mode_of(g_cache_conf));
    CC(&p, "config", "max_age", "30d");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_eq(mode_of(g_cache_conf), 0660, "%o", mode_of(g_cache_conf));

    /* A file an older version wrote 0600 is given the cache's mode. */
    cr_assert_eq(chmod(g_cache_conf, 0600), 0);
    CC(&p, "config", "read_only", "false");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_eq(mode_of(g_cache_conf), 0660, "%o", mode_of(g_cache_conf));

    /* The umask in force wins, wherever it is set. */
    CC_ENV(&p, ((const char *const[]){"VYRE_CACHE_UMASK=027", NULL}), "config", "max_age", "7d");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_eq(mode_of(g_cache_conf), 0640, "%o", mode_of(g_cache_conf));

    /* No umask: a new file stays private. */
    cr_assert_eq(unlink(g_cache_conf), 0);
    CC(&p, "config", "max_age", "30d");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert_eq(mode_of(g_cache_conf), 0600, "%o", mode_of(g_cache_conf));
    umask(old);
}

Test(cachectl_config, read_only_refuses_puts_and_prunes)
{
    populate(3);
    tu_proc p;
    CC(&p, "-o", "read_only=true", "prune", "--max-size", "0");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    cr_assert(strstr(p.err, "is read-only by configuration (read_only = true, from -o)"), "%s",
              p.err);
    tu_proc_free(&p);
    CC(&p, "config", "read_only", "yes");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    /* libcore: gets work, puts are VYRE_EROFS. */
    vyre_cache *c = open_cache();
    cr_assert(vyre__cache_is_readonly(c));
    vyre_error err;
    cr_assert_eq(put_n(c, 0, 99, 100, &err), VYRE_EROFS);
    cr_assert(strstr(err.message, "read-only by configuration"), "%s", err.message);
    vyre_key k = key_n(0, 1);
    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, &err), 0, "%s", err.message);
    vyre_blob_free(b);
    vyre_cache_close(c);
    CC(&p, "prune", "--max-age", "0s");
    cr_assert_eq(p.exit_code, 2);
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    cr_assert_eq(tu_count_lines(p.out), 3);
    tu_proc_free(&p);
    /* -o overrides the file. */
    CC(&p, "-o", "read_only=false", "prune", "--max-age", "0s");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
}

/* ---- the size limit ------------------------------------------------------ */

#define PROCS         4
#define PUTS_PER_PROC 150
#define PAYLOAD       3000 /* + 256 header bytes = 3256 on disk */

Test(cachectl_config, automatic_cleanup_under_the_limit_with_4_processes)
{
    /* 600 blobs of 3256 bytes (1.9 MB) into a 500 KB cache. */
    populate(0);
    write_file(g_cache_conf, "max_size = 500K\n");
    pid_t pids[PROCS];
    for (unsigned i = 0; i < PROCS; i++) {
        pids[i] = fork();
        cr_assert_geq(pids[i], 0);
        if (pids[i] == 0) {
            vyre_cache *c = NULL;
            vyre_error err;
            if (vyre_cache_open(g_cache, NULL, &c, &err))
                _exit(10);
            for (unsigned n = 0; n < PUTS_PER_PROC; n++)
                if (put_n(c, i + 1, n, PAYLOAD, &err)) {
                    fprintf(stderr, "child %u put %u: %s\n", i, n, err.message);
                    _exit(11);
                }
            vyre_cache_close(c);
            _exit(0);
        }
    }
    for (unsigned i = 0; i < PROCS; i++) {
        int st = 0;
        cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %u: status %d", i, st);
    }
    tu_proc p;
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "verify:\n%s%s", p.out, p.err);
    tu_assert_line(p.out, "The cache is clean.");
    tu_proc_free(&p);
    json_t *o = stats_json();
    json_int_t bytes = jint(o, "bytes"), entries = jint(o, "entries");
    cr_assert_leq(bytes, 500 * 1024, "the cache is %lld bytes, over its 500K limit",
                  (long long)bytes);
    cr_assert_gt(entries, 0);
    cr_assert_lt(entries, PROCS * PUTS_PER_PROC);
    cr_assert_eq(jint(o, "max_size_bytes"), 500 * 1024);
    double fill = json_real_value(json_object_get(o, "fill_ratio"));
    cr_assert_float_eq(fill, (double)bytes / (500.0 * 1024), 1e-9);
    json_decref(o);
    /* The files agree with the index: as many blobs as rows. */
    char cmd[800];
    snprintf(cmd, sizeof cmd, "test $(find '%s/blobs' -name '*.vblob' | wc -l) -eq %lld", g_cache,
             (long long)entries);
    cr_assert_eq(system(cmd), 0, "files and rows disagree");
    cr_assert(exists(g_cache_conf));
}

Test(cachectl_config, cleanup_goes_to_90_percent_lru_first_and_stats_show_the_fill)
{
    /* 30 blobs of 1256 bytes, each `blob` bytes on disk (measured: what
     * the limit counts); limit 31.5 blobs: the 32nd put cleans to 90%,
     * least recently used first (blob 0 was read: kept). */
    vyre_cache *c = open_cache();
    vyre_error err;
    for (unsigned i = 0; i < 30; i++)
        cr_assert_eq(put_n(c, 0, i, 1000, &err), 0, "%s", err.message);
    vyre_key k0 = key_n(0, 0);
    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &k0, &b, NULL, &err), 0);
    vyre_blob_free(b);
    cr_assert_eq(vyre__cache_flush(c, &err), 0);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, &err), 0);
    cr_assert_eq(st.entries, 30);
    vyre_cache_close(c);
    uint64_t on_disk = tu_blobs_disk(g_cache), blob = on_disk / 30;
    cr_assert_eq(st.bytes, on_disk);
    cr_assert_eq(blob * 30, on_disk, "blobs of one size take the same blocks");
    uint64_t limit = 31 * blob + blob / 2, target = limit / 10 * 9;
    write_file(g_cache_conf, tu_text("max_size = %lluB\n", (unsigned long long)limit));
    c = open_cache();
    for (unsigned i = 30; i < 32; i++)
        cr_assert_eq(put_n(c, 0, i, 1000, &err), 0, "%s", err.message);
    cr_assert_eq(vyre_cache_stats_get(c, &st, &err), 0);
    cr_assert_leq(st.bytes, target);
    cr_assert_leq(tu_blobs_disk(g_cache), target, "on disk, as du counts");
    cr_assert_eq(st.entries, target / blob);
    cr_assert_eq(vyre_cache_get(c, &k0, &b, NULL, &err), 0, "the recently used blob went");
    vyre_blob_free(b);
    vyre_key k1 = key_n(0, 1);
    cr_assert_eq(vyre_cache_get(c, &k1, &b, NULL, &err), VYRE_ENOENT, "the LRU blob stayed");
    vyre_cache_close(c);

    tu_proc p;
    CC(&p, "stats");
    tu_assert_line(p.out,
                   tu_text("Cache size:            %s of %s (%.0f%%)", tu_size_text(st.bytes),
                           tu_size_text(limit), 100.0 * (double)st.bytes / (double)limit));
    tu_proc_free(&p);

    /* A second cleanup at once is skipped: the lock is held. */
    char lock[800];
    snprintf(lock, sizeof lock, "%s/" VYRE_CACHE_CLEANUP_LOCK, g_cache);
    int fd = open(lock, O_RDWR);
    cr_assert_geq(fd, 0);
    cr_assert_eq(flock(fd, LOCK_EX), 0);
    c = open_cache();
    vyre__cache_cleanup_result res;
    cr_assert_eq(vyre__cache_cleanup(c, 1, &res, &err), 0);
    cr_assert_eq(res.ran, 0);
    close(fd);
    cr_assert_eq(vyre__cache_cleanup(c, 1, &res, &err), 0);
    cr_assert_eq(res.ran, 1);
    vyre_cache_close(c);
}

/* ---- first use, zero-stats, max-age 0s, quarantine age --------------------- */

Test(cachectl_config, first_use_shows_an_empty_cache_and_creates_nothing)
{
    tu_proc p;
    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_empty(p.err);
    tu_assert_line(p.out, "Entries:               0");
    tu_assert_line(p.out, "Cache size:            0 B of 5.0 GiB (0%)");
    /* Compact: no hits yet, no line for them; -v shows it. */
    cr_assert(!strstr(p.out, "Hits:"), "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "stats", "-v");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Hits:                  0");
    tu_proc_free(&p);
    CC(&p, "stats", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out);
    cr_assert_eq(jint(o, "entries"), 0);
    cr_assert_eq(jint(o, "bytes"), 0);
    cr_assert_eq(jint(o, "misses"), 0);
    cr_assert_float_eq(json_real_value(json_object_get(o, "fill_ratio")), 0.0, 1e-12);
    json_decref(o);
    tu_proc_free(&p);
    CC(&p, "ls");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_eq(tu_count_lines(p.out), 2, "only the header and its rule:\n%s", p.out);
    tu_proc_free(&p);
    CC(&p, "ls", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    o = parse_json(p.out);
    cr_assert_eq(json_array_size(json_object_get(o, "entries")), 0);
    json_decref(o);
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Blobs checked:         0 (0 B)");
    tu_assert_line(p.out, "The cache is clean.");
    tu_proc_free(&p);
    CC(&p, "zero-stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    /* The default root (XDG_CACHE_HOME) too. */
    run_env(&p, (const char *const[]){"stats", NULL}, NULL);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert(!exists(g_cache), "the cache directory was created");
    char xdg[700];
    snprintf(xdg, sizeof xdg, "%s/xdg", g_tmp);
    cr_assert(!exists(xdg), "the default cache directory was created");
    /* libcore: a read-only open with VYRE_CACHE_MISSING_EMPTY. */
    vyre_cache *c = NULL;
    vyre_error err;
    cr_assert_eq(vyre_cache_open(g_cache,
                                 TU_OPEN_FLAGS(VYRE_CACHE_READONLY | VYRE_CACHE_MISSING_EMPTY), &c,
                                 &err),
                 0, "%s", err.message);
    cr_assert(vyre_cache_is_missing(c));
    vyre_key k = key_n(0, 0);
    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, &err), VYRE_ENOENT);
    vyre_cache_close(c);
    cr_assert(!exists(g_cache));
}

Test(cachectl_config, zero_stats_resets_hits_and_misses_and_keeps_lru)
{
    populate(3);
    vyre_cache *c = open_cache();
    vyre_error err;
    vyre_key k = key_n(0, 0), missing = key_n(9, 9);
    vyre_blob *b = NULL;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, &err), 0);
        vyre_blob_free(b);
    }
    cr_assert_eq(vyre_cache_get(c, &missing, &b, NULL, &err), VYRE_ENOENT);
    vyre_cache_close(c);
    json_t *o = stats_json();
    cr_assert_eq(jint(o, "hits"), 3);
    cr_assert_eq(jint(o, "misses"), 1);
    cr_assert(json_is_null(json_object_get(o, "stats_zeroed_unix_ns")));
    json_decref(o);
    tu_proc p;
    CC(&p, "ls", "-q");
    char before[4096];
    snprintf(before, sizeof before, "%s", p.out);
    tu_proc_free(&p);

    CC(&p, "zero-stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "Statistics zeroed.\n");
    tu_proc_free(&p);
    o = stats_json();
    cr_assert_eq(jint(o, "hits"), 0);
    cr_assert_eq(jint(o, "misses"), 0);
    cr_assert_eq(jint(o, "entries"), 3);
    cr_assert_gt(jint(o, "stats_zeroed_unix_ns"), 0);
    json_decref(o);
    CC(&p, "ls", "-q");
    cr_assert_str_eq(p.out, before, "LRU order changed");
    tu_proc_free(&p);
    CC(&p, "stats");
    cr_assert(strstr(p.out, "\nStats zeroed:"), "%s", p.out);
    tu_proc_free(&p);

    /* -z and --zero-stats, alone and before a command. */
    c = open_cache();
    cr_assert_eq(vyre_cache_get(c, &k, &b, NULL, &err), 0);
    vyre_blob_free(b);
    vyre_cache_close(c);
    CC(&p, "-z");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    o = stats_json();
    cr_assert_eq(jint(o, "hits"), 0);
    json_decref(o);
    CC(&p, "--zero-stats", "stats", "-v");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "Hits:                  0");
    tu_proc_free(&p);
}

Test(cachectl_config, prune_max_age_0s_means_everything)
{
    populate(5);
    tu_proc p;
    CC(&p, "prune", "--max-age", "0s", "--dry-run");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    const char *all = tu_size_text(tu_blobs_disk(g_cache)); /* 5 * 1256 bytes, on disk */
    tu_assert_line(p.out, tu_text("Would remove 5 blobs (%s): 5 by age", all));
    tu_proc_free(&p);
    CC(&p, "prune", "--max-age", "0s");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, tu_text("Removed 5 blobs (%s): 5 by age", all));
    tu_assert_line(p.out, "Left 0 blobs (0 B)");
    tu_proc_free(&p);
    CC(&p, "ls", "-q");
    cr_assert_str_empty(p.out);
    tu_proc_free(&p);
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_proc_free(&p);
}

/* Quarantine names as vyre writes them (<blob>.<reason>.<secs>): the only
 * names quarantine expiry removes (anything else there is someone's). */
#define Q_OLD                                                                                      \
    "1111111111111111111111111111111111111111111111111111111111111111.vblob.payload-checksum."     \
    "1700000000"
#define Q_RECENT                                                                                   \
    "2222222222222222222222222222222222222222222222222222222222222222.vblob.payload-checksum."     \
    "1700000000"
#define Q_OLD2                                                                                     \
    "3333333333333333333333333333333333333333333333333333333333333333.vblob.bad-magic.1700000000"
#define Q_OLD3                                                                                     \
    "4444444444444444444444444444444444444444444444444444444444444444.vblob.bad-magic.1700000000"

static void quarantine_file(const char *name, int64_t age_days)
{
    char path[900];
    snprintf(path, sizeof path, "%s/quarantine/%s", g_cache, name);
    write_file(path, "not a blob\n");
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= age_days * 86400;
    ts[1] = ts[0];
    cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static int in_quarantine(const char *name)
{
    char path[900];
    snprintf(path, sizeof path, "%s/quarantine/%s", g_cache, name);
    return exists(path);
}

Test(cachectl_config, quarantined_files_older_than_quarantine_max_age_are_pruned)
{
    populate(2);
    quarantine_file(Q_OLD, 8);
    quarantine_file(Q_RECENT, 6);
    tu_proc p;
    /* quarantine_max_age = 0 keeps them. */
    CC(&p, "-o", "quarantine_max_age=0", "prune");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    cr_assert(in_quarantine(Q_OLD));
    /* Any prune removes those older than 7 days (the default); their 11
     * bytes each take a block on disk. */
    char q[900];
    snprintf(q, sizeof q, "%s/quarantine/%s", g_cache, Q_OLD);
    uint64_t q_disk = tu_disk_bytes(q);
    CC(&p, "prune", "--arch", "sm_52");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, tu_text("Removed 1 quarantined file older than quarantine_max_age (%s)",
                                  tu_size_text(q_disk)));
    tu_proc_free(&p);
    cr_assert(!in_quarantine(Q_OLD));
    cr_assert(in_quarantine(Q_RECENT));
    CC(&p, "-o", "quarantine_max_age=5d", "prune", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out);
    cr_assert_eq(jint(o, "quarantine_removed"), 1);
    cr_assert_eq(jint(o, "quarantine_removed_bytes"), (json_int_t)q_disk);
    cr_assert_eq(jint(o, "removed"), 0);
    json_decref(o);
    tu_proc_free(&p);
    cr_assert(!in_quarantine(Q_RECENT));

    /* Automatic cleanup removes them too (a put over the limit). */
    quarantine_file(Q_OLD2, 30);
    write_file(g_cache_conf, "max_size = 2K\n");
    vyre_cache *c = open_cache();
    vyre_error err;
    cr_assert_eq(put_n(c, 0, 50, 1000, &err), 0, "%s", err.message);
    vyre_cache_close(c);
    cr_assert(!in_quarantine(Q_OLD2));
    /* And the hourly age-only cleanup: a put under the limit once the last
     * cleanup is over an hour old. */
    quarantine_file(Q_OLD3, 30);
    write_file(g_cache_conf, "");
    char lock[800];
    snprintf(lock, sizeof lock, "%s/" VYRE_CACHE_CLEANUP_LOCK, g_cache);
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= 2 * 3600;
    ts[1] = ts[0];
    cr_assert_eq(utimensat(AT_FDCWD, lock, ts, 0), 0);
    c = open_cache();
    cr_assert_eq(put_n(c, 0, 51, 100, &err), 0, "%s", err.message);
    vyre_cache_close(c);
    cr_assert(!in_quarantine(Q_OLD3));
}

/* remote_storage (issue 16 pt 1): the cache's vyre.conf carries the fleet
 * store; VYRE_REMOTE_CACHE overrides it, -o overrides both; `config` and
 * its JSON never show a password; a bad URL in the file names file:line. */
Test(cachectl_config, remote_storage_precedence_masking_and_errors)
{
    populate(1);
    char where[900];
    write_file(g_cache_conf,
               "max_size = 3G\nremote_storage = http://al:hunter2@127.0.0.1:1/fleet\n");
    snprintf(where, sizeof where, "%s:2", g_cache_conf);
    assert_key(NULL, "remote_storage", "http://al:***@127.0.0.1:1/fleet", "cache_file", where);
    tu_proc p;
    CC(&p, "config");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_config_row(p.out, "remote_storage", "http://al:***@127.0.0.1:1/fleet", where);
    cr_assert_null(strstr(p.out, "hunter2"), "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "config", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_null(strstr(p.out, "hunter2"), "%s", p.out);
    tu_proc_free(&p);
    /* stats lists the stores of the configuration in force. */
    CC(&p, "stats", "--json");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_t *o = parse_json(p.out);
    json_t *r = json_array_get(json_object_get(o, "remotes"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(r, "url")),
                     "http://al:***@127.0.0.1:1/fleet", "%s", p.out);
    json_decref(o);
    tu_proc_free(&p);

    const char *env[] = {"VYRE_REMOTE_CACHE=redis://127.0.0.1:1|read-only", NULL};
    assert_key(env, "remote_storage", "redis://127.0.0.1:1|read-only", "env",
               "env VYRE_REMOTE_CACHE");
    CC_ENV(&p, env, "-o", "remote_storage=http://127.0.0.1:1/cli", "config", "-v",
           "remote_storage");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "http://127.0.0.1:1/cli (-o)\n");
    tu_proc_free(&p);

    /* Set through config: checked first, then written. */
    CC(&p, "config", "remote_storage", "http://127.0.0.1:1/v|bogus");
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "bad value for remote_storage: remote store "
                            "'http://127.0.0.1:1/v|bogus': unknown attribute 'bogus'"),
              "%s", p.err);
    tu_proc_free(&p);

    /* A bad URL in the cache's file: every command says where. */
    write_file(g_cache_conf,
               "# fleet\nmax_size = 3G\nremote_storage = http://al:hunter2@h|ttl=5\n");
    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    char want[1600], buf[1600];
    first_line(p.err, buf, sizeof buf);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: %s:3: bad value for remote_storage: remote store "
             "'http://***@h|ttl=5': unknown attribute 'ttl=5'",
             g_cache_conf);
    cr_assert_str_eq(buf, want);
    cr_assert_null(strstr(p.err, "hunter2"), "%s", p.err);
    tu_proc_free(&p);
}

/* ---- issue 22 ------------------------------------------------------------ */

/* Point 3: "config max_size 10" was 10 bytes, and the next seed emptied the
 * cache; "0.4" and "0.0000001K" were 0, no limit. */
Test(cachectl_config, a_size_without_a_unit_is_gib_and_never_silently_0)
{
    populate(6);
    tu_proc p;
    CC(&p, "config", "max_size", "10");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want[900];
    snprintf(want, sizeof want, "max_size = 10G (%s:1)\n", g_cache_conf);
    cr_assert_str_eq(p.out, want);
    tu_proc_free(&p);
    json_t *o = stats_json();
    cr_assert_eq(jint(o, "max_size_bytes"), INT64_C(10) << 30);
    cr_assert_eq(jint(o, "entries"), 6);
    json_decref(o);
    /* A put runs the cleanup under the new limit: nothing goes. */
    vyre_cache *c = open_cache();
    vyre_error err;
    cr_assert_eq(put_n(c, 1, 1, 1000, &err), 0, "put: %s", err.message);
    vyre_cache_close(c);
    o = stats_json();
    cr_assert_eq(jint(o, "entries"), 7);
    json_decref(o);

    /* Fractions round to bytes; what is shown reads back the same. */
    CC(&p, "-o", "max_size=0.4", "config", "max_size");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "429496730B\n");
    tu_proc_free(&p);
    const char *env[] = {"VYRE_CACHE_MAX_SIZE=2", NULL};
    CC_ENV(&p, env, "config", "max_size");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "2G\n");
    tu_proc_free(&p);
    CC(&p, "-o", "max_size=0.0000001K", "stats");
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "-o: bad value '0.0000001K' for max_size: size '0.0000001K' is less "
                            "than one byte\n"),
              "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "config", "max_size", "0");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "config", "max_size");
    cr_assert_str_eq(p.out, "0\n");
    tu_proc_free(&p);
    /* prune --max-size reads sizes the same way: 1 is 1 GiB, nothing goes. */
    CC(&p, "prune", "--max-size", "1");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    o = stats_json();
    cr_assert_eq(jint(o, "entries"), 7);
    json_decref(o);
    /* And the help says so. */
    CC(&p, "config", "--help");
    cr_assert(strstr(p.out, "without a unit is GiB"), "%s", p.out);
    tu_proc_free(&p);
    RUN_ENV(&p, NULL, "--help");
    cr_assert(strstr(p.out, "without a unit is GiB"), "%s", p.out);
    tu_proc_free(&p);
}

/* Point 3: a max_size that makes the next cleanup remove more than half of
 * the cache is printed with what goes, and needs --yes off a terminal. */
Test(cachectl_config, a_max_size_that_empties_the_cache_needs_yes)
{
    populate(6);
    write_file(g_cache_conf, "max_size = 5G\n");
    /* Limits in blobs on disk (what max_size counts): `five` keeps one blob
     * after the cleanup to 90%, `two` keeps four. */
    uint64_t blob = tu_blobs_disk(g_cache) / 6;
    char five[32], two[32];
    snprintf(five, sizeof five, "%lluK", (unsigned long long)((blob * 5 / 3 + 1023) / 1024));
    snprintf(two, sizeof two, "%lluK", (unsigned long long)((blob * 5 + 1023) / 1024));
    tu_proc p;
    CC(&p, "config", "max_size", five);
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    cr_assert(strstr(p.err, tu_text("vyre-cachectl: error: max_size %s: the next cleanup removes 5 "
                                    "of 6 blobs (",
                                    five)),
              "%s", p.err);
    cr_assert(strstr(p.err, "), least recently used first: more than half of the cache\n"
                            "hint: give --yes to set it anyway"),
              "%s", p.err);
    tu_proc_free(&p);
    cr_assert_str_eq(read_file(g_cache_conf), "max_size = 5G\n", "the file was changed");
    /* A limit that removes less than half is printed and set (90% of it
     * keeps 4). */
    CC(&p, "config", "max_size", two);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.err, tu_text("max_size %s: the next cleanup removes 2 of 6 blobs (", two)),
              "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "config", "--yes", "max_size", five);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.err, tu_text("max_size %s: the next cleanup removes 5 of 6 blobs (", five)),
              "%s", p.err);
    tu_proc_free(&p);
    cr_assert_str_eq(read_file(g_cache_conf), tu_text("max_size = %s\n", five));
}

/* Runs `vyre-cachectl --cache-dir CACHE config max_size VALUE` on a
 * terminal (a pty), answers `answer` to the question and returns the exit
 * status; what it printed is in out. */
static int config_on_a_terminal(const char *value, const char *answer, char *out, size_t size)
{
    int master = -1;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    cr_assert(pid >= 0, "forkpty");
    if (pid == 0) {
        setenv("HOME", g_tmp, 1);
        char xdg[700];
        snprintf(xdg, sizeof xdg, "%s/xdg", g_tmp);
        setenv("XDG_CACHE_HOME", xdg, 1);
        execl(VYRE_CACHECTL_BIN, VYRE_CACHECTL_BIN, "--cache-dir", g_cache, "config", "max_size",
              value, (char *)NULL);
        _exit(127);
    }
    size_t n = 0;
    int answered = 0;
    out[0] = '\0';
    for (int i = 0; i < 200; i++) { /* 20 s at most */
        struct pollfd pfd = {master, POLLIN, 0};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        ssize_t r = read(master, out + n, size - 1 - n);
        if (r <= 0)
            break; /* EIO: the child closed the terminal */
        n += (size_t)r;
        out[n] = '\0';
        if (!answered && strstr(out, "[y/N] ")) {
            cr_assert_eq(write(master, answer, strlen(answer)), (ssize_t)strlen(answer));
            answered = 1;
        }
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    close(master);
    cr_assert(answered, "no question asked:\n%s", out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

Test(cachectl_config, a_max_size_that_empties_the_cache_asks_on_a_terminal)
{
    populate(6);
    write_file(g_cache_conf, "max_size = 5G\n");
    uint64_t blob = tu_blobs_disk(g_cache) / 6; /* on disk: what max_size counts */
    char five[32];
    snprintf(five, sizeof five, "%lluK", (unsigned long long)((blob * 5 / 3 + 1023) / 1024));
    char out[4096];
    cr_assert_eq(config_on_a_terminal(five, "n\n", out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, tu_text("max_size %s: the next cleanup removes 5 of 6 blobs (", five)),
              "%s", out);
    cr_assert(strstr(out, "max_size not changed"), "%s", out);
    cr_assert_str_eq(read_file(g_cache_conf), "max_size = 5G\n");
    cr_assert_eq(config_on_a_terminal(five, "y\n", out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(read_file(g_cache_conf), tu_text("max_size = %s\n", five));
}

/* Point 10: a typo in the user's file locked everybody out, `config`
 * included; a bad value is still an error, but `config` shows it, and can
 * fix it. */
Test(cachectl_config, config_always_runs_and_shows_the_problem)
{
    populate(1);
    write_file(g_user_conf, "max_sze = 3G\nmax_age = 2d\n");
    tu_proc p;
    CC(&p, "stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "config");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char line[1200];
    snprintf(line, sizeof line,
             "vyre-cachectl: warning: %s:1: unknown configuration key 'max_sze' (the line is "
             "ignored)",
             g_user_conf);
    tu_assert_line(p.err, line);
    tu_assert_line(p.err, "hint: did you mean 'max_size'?");
    snprintf(line, sizeof line, "%s:2", g_user_conf);
    assert_config_row(p.out, "max_age", "2d", line);
    tu_proc_free(&p);
    /* A bad value: every other command stops, config lists and says why. */
    write_file(g_cache_conf, "max_size = 3X\n");
    CC(&p, "ls");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "config");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    cr_assert_eq(tu_count_lines(p.out), 11, "%s", p.out); /* the header, its rule, 9 keys */
    snprintf(line, sizeof line, "%s:2", g_user_conf);
    assert_config_row(p.out, "max_age", "2d", line);
    snprintf(line, sizeof line,
             "vyre-cachectl: error: %s:1: bad value '3X' for max_size: '3X' has an unknown size "
             "unit 'X'",
             g_cache_conf);
    tu_assert_line(p.err, line);
    tu_proc_free(&p);
    CC(&p, "config", "max_size", "3G");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "ls");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
}

/* Point 10: the cache benchmark uses a temporary cache; the user's file
 * (a typo, or a bad value) has nothing to say about it. */
Test(cachectl_config, the_cache_benchmark_ignores_the_users_file)
{
    write_file(g_user_conf, "max_sze = 3G\nmax_size = 3X\n");
    char env_data[800], env_tmp[800], db[800], mem[512];
    snprintf(env_data, sizeof env_data, "XDG_DATA_HOME=%s/data", g_tmp);
    /* The suite's scratch cache (fsync'ed puts, nothing inspected) on a
     * memory filesystem where there is one: on the disk it took 26 s. */
    tu_mkdtemp_mem(mem, sizeof mem);
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", mem);
    snprintf(db, sizeof db, "%s/r.sqlite3", g_tmp);
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               env_data,
                               env_tmp,
                               "VYRE_CUDA_LIBRARY=/nonexistent",
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               "NVTX_INJECTION64_PATH",
                               NULL};
    const char *const args[] = {"run",           "--suite",   "cache",      "--db", db,
                                "--min-samples", "3",         "--min-time", "0",    "--max-noise",
                                "100",           "--timeout", "5",          "-q",   NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_BENCH_BIN, args, env, NULL);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    tu_rm_rf(mem);
}

/* Point 1: umask = 000 in a shared vyre.conf made blobs and the index
 * 0666; 0777 made the cache unusable. */
Test(cachectl_config, a_umask_must_keep_the_owners_rwx_and_deny_others_write)
{
    populate(1);
    static const struct {
        const char *v;
        const char *why;
    } bad[] = {{"000", "it lets other users write the cache"},
               {"020", "it lets other users write the cache"},
               {"0777", "it takes the owner's own permissions away"},
               {"0200", "it takes the owner's own permissions away"}};
    tu_proc p;
    char o[64], want[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(o, sizeof o, "umask=%s", bad[i].v);
        CC(&p, "-o", o, "stats");
        cr_assert_eq(p.exit_code, 2, "%s: %s", bad[i].v, p.err);
        snprintf(want, sizeof want, "vyre-cachectl: error: -o: bad value '%s' for umask: %s\n",
                 bad[i].v, bad[i].why);
        cr_assert(strstr(p.err, want), "%s", p.err);
        cr_assert(strstr(p.err, "hint: a umask must keep the owner's rwx and deny others write: "
                                "write 002 for a group's cache, 022 or 077 otherwise\n"),
                  "%s", p.err);
        tu_proc_free(&p);
    }
    const char *env[] = {"VYRE_CACHE_UMASK=000", NULL};
    CC_ENV(&p, env, "stats");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    tu_proc_free(&p);
    write_file(g_cache_conf, "umask = 000\n");
    CC(&p, "verify");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    snprintf(want, sizeof want, "%s:1: bad value '000' for umask", g_cache_conf);
    cr_assert(strstr(p.err, want), "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "config", "umask", "0777");
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    tu_proc_free(&p);
    write_file(g_cache_conf, "");
    static const char *const good[] = {"002", "022", "077", "007", "0027"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(o, sizeof o, "umask=%s", good[i]);
        CC(&p, "-o", o, "config", "umask");
        cr_assert_eq(p.exit_code, 0, "%s: %s", good[i], p.err);
        tu_proc_free(&p);
    }
}

/* Point 1: a group member wrote remote_storage with token-file= into the
 * shared cache's vyre.conf; the next member to use the cache sent his
 * token to the member's listener. As root (CI), the file is given to
 * uid 65534 (nobody): foreign to the user running. */
Test(cachectl_config, remote_storage_from_a_file_another_user_owns_is_refused)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give vyre.conf to another user (CI runs as root)");
    populate(1);
    char secret[700];
    snprintf(secret, sizeof secret, "%s/vault-token", g_tmp);
    write_file(secret, "s3cr3t-t0ken-of-the-user\n");
    cr_assert_eq(chmod(secret, 0600), 0);
    ts_fault f;
    memset(&f, 0, sizeof f);
    ts_fault_start(&f, TS_FAULT_STATUS_500);
    char text[1600];
    snprintf(text, sizeof text,
             "max_size = 3G\nremote_storage = http://127.0.0.1:%d/vyre|token-file=%s\n", f.port,
             secret);
    write_file(g_cache_conf, text);
    cr_assert_eq(chown(g_cache_conf, 65534, 65534), 0);

    tu_proc p;
    char want[1600];
    snprintf(want, sizeof want,
             "vyre-cachectl: error: %s:2: remote_storage refused: the file is owned by ",
             g_cache_conf);
    const char *const cmds[][2] = {{"remote", "check"}, {"stats", NULL}, {"config", NULL}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *args[] = {"--cache-dir", g_cache, cmds[i][0], cmds[i][1], NULL};
        run_env(&p, args, NULL);
        cr_assert_eq(p.exit_code, 2, "%s: %s%s", cmds[i][0], p.out, p.err);
        cr_assert(strstr(p.err, want), "%s", p.err);
        cr_assert(strstr(p.err, "(uid 65534), not by you or root\n"), "%s", p.err);
        cr_assert(strstr(p.err, "hint: a vyre.conf may name remote stores and token files only "
                                "when you or root own it"),
                  "%s", p.err);
        cr_assert_null(strstr(p.out, "s3cr3t"), "%s", p.out);
        cr_assert_null(strstr(p.err, "s3cr3t"), "%s", p.err);
        tu_proc_free(&p);
    }
    cr_assert_eq(f.requests, 0, "the listener got %d requests", f.requests);
    /* config still shows the rest of the file. */
    CC(&p, "config", "max_size");
    cr_assert_str_eq(p.out, "3G\n");
    tu_proc_free(&p);
    /* libcore refuses it too, and names the file. */
    vyre_cache *c = NULL;
    vyre_error err;
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &err), VYRE_EUNSAFE);
    cr_assert(strstr(err.message, "remote_storage refused"), "%s", err.message);
    /* The same file owned by root (trusted) is used: the listener is
     * reachable, so the zero above is not an accident of the setup. */
    cr_assert_eq(chown(g_cache_conf, 0, 0), 0);
    CC(&p, "remote", "check");
    tu_proc_free(&p);
    cr_assert_gt(f.requests, 0, "the trusted file's store was not contacted");
    ts_fault_stop(&f);
}
