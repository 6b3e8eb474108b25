/*
 * test_config.c - the cache configuration (vyre/config.h, cache/config.c):
 * defaults, the file format, each value's grammar and range, layers and
 * where each value comes from, rewriting the cache's vyre.conf, and the
 * cache handle honouring it (read_only, bad files, symlinked vyre.conf).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache_internal.h"
#include "cache/config_internal.h"
#include "testutil.h"
#include "vyre/cache.h"
#include "vyre/config.h"
#include "vyre/results.h"
#include "vyre/units.h"

static char g_dir[1024];
static char g_root[1100];
static char g_xdg[1100];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_root, sizeof g_root, "%s/cache", g_dir);
    snprintf(g_xdg, sizeof g_xdg, "%s/config", g_dir);
    setenv("XDG_CONFIG_HOME", g_xdg, 1);
    static const char *const vars[] = {"VYRE_CACHE_MAX_SIZE",
                                       "VYRE_CACHE_MAX_AGE",
                                       "VYRE_CACHE_UMASK",
                                       "VYRE_CACHE_READ_ONLY",
                                       "VYRE_CACHE_QUARANTINE_MAX_AGE",
                                       "VYRE_REMOTE_CACHE",
                                       "VYRE_CACHE_TRITON_MAX_SIZE",
                                       "VYRE_CACHE_INDUCTOR_MAX_SIZE",
                                       "VYRE_RESULTS_DB"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

static void teardown(void)
{
    if (g_dir[0])
        tu_rm_rf(g_dir);
}

TestSuite(config, .init = setup, .fini = teardown);

static void put_text(const char *path, const char *text)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *get_text(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int parse(vyre_config *c, const char *text, vyre_error *e)
{
    vyre__config_init(c);
    vyre_error_clear(e);
    return vyre__config_parse(c, text, strlen(text), VYRE_CONF_FROM_CACHE_FILE, "f.conf", e);
}

static void value_of(const vyre_config *c, int k, char *buf, size_t size)
{
    vyre_config_format_value(c, k, buf, size);
}

Test(config, defaults)
{
    vyre_config c;
    vyre__config_init(&c);
    cr_assert_eq(c.max_size, UINT64_C(5) << 30);
    cr_assert_eq(c.max_age_ns, 0);
    cr_assert_eq(c.umask, -1);
    cr_assert_eq(c.read_only, 0);
    cr_assert_eq(c.quarantine_max_age_ns, INT64_C(7) * 86400 * 1000000000);
    char v[64], w[64];
    static const char *const want[] = {"5G", "0", "unset", "false", "7d", "", "0", "0", ""};
    cr_assert_eq(sizeof want / sizeof *want, VYRE_CONF_N_KEYS);
    for (int k = 0; k < VYRE_CONF_N_KEYS; k++) {
        value_of(&c, k, v, sizeof v);
        cr_assert_str_eq(v, want[k], "%s", vyre_config_key_name(k));
        vyre_config_format_where(&c, k, w, sizeof w);
        cr_assert_str_eq(w, "default");
    }
    char env[64];
    vyre__config_env_name(VYRE_CONF_QUARANTINE_MAX_AGE, env, sizeof env);
    cr_assert_str_eq(env, "VYRE_CACHE_QUARANTINE_MAX_AGE");
    vyre__config_env_name(VYRE_CONF_REMOTE_STORAGE, env, sizeof env);
    cr_assert_str_eq(env, "VYRE_REMOTE_CACHE");
    cr_assert_str_eq(c.remote_storage, "");
    cr_assert_eq(vyre_config_key_find("read_only"), VYRE_CONF_READ_ONLY);
    cr_assert_eq(vyre_config_key_find("readonly"), -1);
}

Test(config, file_format_and_values)
{
    vyre_config c;
    vyre_error e;
    cr_assert_eq(parse(&c,
                       "# comment\n\n   \t\n  max_size=1.5GiB  \r\n\tmax_age\t=\t12h\n"
                       "umask = 002\nread_only = YES\nquarantine_max_age = 0\n#max_size = 1K",
                       &e),
                 0, "%s", e.message);
    cr_assert_eq(c.max_size, UINT64_C(3) << 29);
    cr_assert_eq(c.max_age_ns, INT64_C(12) * 3600 * 1000000000);
    cr_assert_eq(c.umask, 02);
    cr_assert_eq(c.read_only, 1);
    cr_assert_eq(c.quarantine_max_age_ns, 0);
    cr_assert_eq(c.where[VYRE_CONF_MAX_SIZE].line, 4);
    cr_assert_eq(c.where[VYRE_CONF_QUARANTINE_MAX_AGE].line, 8);
    char w[1200];
    vyre_config_format_where(&c, VYRE_CONF_MAX_AGE, w, sizeof w);
    cr_assert_str_eq(w, "f.conf:5");
    char v[64];
    value_of(&c, VYRE_CONF_MAX_SIZE, v, sizeof v);
    cr_assert_str_eq(v, "1536M");
    value_of(&c, VYRE_CONF_UMASK, v, sizeof v);
    cr_assert_str_eq(v, "002");
    /* The last setting of a key wins; 0 is no limit; ages format exactly. */
    cr_assert_eq(parse(&c, "max_size = 1G\nmax_size = 0\nmax_age = 90m\n", &e), 0);
    cr_assert_eq(c.max_size, 0);
    cr_assert_eq(c.where[VYRE_CONF_MAX_SIZE].line, 2);
    value_of(&c, VYRE_CONF_MAX_AGE, v, sizeof v);
    cr_assert_str_eq(v, "90m");
    cr_assert_eq(parse(&c, "max_age = 1.5s\n", &e), 0);
    value_of(&c, VYRE_CONF_MAX_AGE, v, sizeof v);
    cr_assert_str_eq(v, "1.500000000s");
}

Test(config, errors_name_the_line_and_leave_earlier_keys)
{
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"max_size = 1G\nmax_age = 3y\n", "f.conf:2: bad value '3y' for max_age"},
        {"read_only\n", "f.conf:1: expected 'key = value', got 'read_only'"},
        {"= 1G\n", "f.conf:1: missing key before '='"},
        {"max_size =\n", "f.conf:1: max_size has no value"},
        {"umask = 1000\n", "f.conf:1: bad value '1000' for umask"},
        {"umask = 8\n", "f.conf:1: bad value '8' for umask"},
        {"read_only = 2\n", "f.conf:1: bad value '2' for read_only"},
        {"max_size = -1\n", "f.conf:1: bad value '-1' for max_size"},
        {"quarantine_max_age = 7\n", "f.conf:1: bad value '7' for quarantine_max_age"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_config c;
        vyre_error e;
        cr_assert_eq(parse(&c, cases[i].text, &e), VYRE_ECONFIG, "%s", cases[i].text);
        cr_assert_eq(e.code, VYRE_ECONFIG);
        cr_assert(strncmp(e.message, cases[i].message, strlen(cases[i].message)) == 0,
                  "'%s' -> '%s'", cases[i].text, e.message);
        cr_assert(e.hint[0], "no hint for '%s'", cases[i].text);
        if (i == 0)
            cr_assert_eq(c.max_size, UINT64_C(1) << 30, "the key before the bad line stays");
    }
    vyre_config c;
    vyre_error e;
    const char nul[] = "max_size = 1G\0\n";
    vyre__config_init(&c);
    cr_assert_eq(vyre__config_parse(&c, nul, sizeof nul - 1, VYRE_CONF_FROM_USER_FILE, "n", &e),
                 VYRE_ECONFIG);
    cr_assert_str_eq(e.message, "n:1: NUL byte in the line");
}

Test(config, layers_lowest_first)
{
    char user[1200], cache_conf[1200];
    snprintf(user, sizeof user, "%s/vyre/vyre.conf", g_xdg);
    snprintf(cache_conf, sizeof cache_conf, "%s/vyre.conf", g_root);
    put_text(user, "max_size = 1G\nmax_age = 1d\numask = 077\nread_only = true\n");
    put_text(cache_conf, "max_age = 2d\numask = 007\nread_only = true\n");
    setenv("VYRE_CACHE_UMASK", "002", 1);
    setenv("VYRE_CACHE_READ_ONLY", "true", 1);
    const char *ov[] = {"read_only=false"};
    vyre_config c;
    vyre_error e;
    cr_assert_eq(vyre_config_load(&c, g_root, ov, 1, 0, &e), 0, "%s", e.message);
    cr_assert_eq(c.max_size, UINT64_C(1) << 30);
    cr_assert_eq(c.where[VYRE_CONF_MAX_SIZE].origin, VYRE_CONF_FROM_USER_FILE);
    cr_assert_eq(c.max_age_ns, INT64_C(2) * 86400 * 1000000000);
    cr_assert_eq(c.where[VYRE_CONF_MAX_AGE].origin, VYRE_CONF_FROM_CACHE_FILE);
    cr_assert_eq(c.umask, 02);
    cr_assert_eq(c.where[VYRE_CONF_UMASK].origin, VYRE_CONF_FROM_ENV);
    cr_assert_eq(c.read_only, 0);
    cr_assert_eq(c.where[VYRE_CONF_READ_ONLY].origin, VYRE_CONF_FROM_OVERRIDE);
    cr_assert_eq(c.where[VYRE_CONF_QUARANTINE_MAX_AGE].origin, VYRE_CONF_FROM_DEFAULT);
    char w[1300];
    vyre_config_format_where(&c, VYRE_CONF_UMASK, w, sizeof w);
    cr_assert_str_eq(w, "env VYRE_CACHE_UMASK");
    vyre_config_format_where(&c, VYRE_CONF_MAX_AGE, w, sizeof w);
    char want[1300];
    snprintf(want, sizeof want, "%s:1", cache_conf);
    cr_assert_str_eq(w, want);
    /* A bad override is the error, naming -o. */
    const char *bad[] = {"max_size"};
    cr_assert_eq(vyre_config_load(&c, g_root, bad, 1, 0, &e), VYRE_ECONFIG);
    cr_assert_str_eq(e.message, "-o 'max_size': expected key=value");
}

Test(config, write_keeps_lines_creates_the_directory_and_refuses_bad_values)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/vyre.conf", g_root);
    vyre_error e;
    /* No cache directory yet: created 0700, file created. */
    cr_assert_eq(vyre_config_write(g_root, "max_size", "2G", -1, &e), 0, "%s", e.message);
    struct stat st;
    cr_assert_eq(stat(g_root, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700);
    cr_assert_str_eq(get_text(path), "max_size = 2G\n");
    /* No final newline; the key set twice: the last line is the one. */
    put_text(path, "# x\nmax_size = 1G\nmax_age=1d\nmax_size = 3G");
    cr_assert_eq(vyre_config_write(g_root, "max_size", "4G", -1, &e), 0);
    cr_assert_str_eq(get_text(path), "# x\nmax_size = 1G\nmax_age=1d\nmax_size = 4G");
    cr_assert_eq(vyre_config_write(g_root, "umask", "002", -1, &e), 0);
    cr_assert_str_eq(get_text(path),
                     "# x\nmax_size = 1G\nmax_age=1d\nmax_size = 4G\numask = 002\n");
    cr_assert_eq(vyre_config_write(g_root, "max_age", NULL, -1, &e), 0);
    cr_assert_str_eq(get_text(path), "# x\nmax_size = 1G\nmax_size = 4G\numask = 002\n");
    /* Bad values and keys change nothing. */
    cr_assert_eq(vyre_config_write(g_root, "umask", "9", -1, &e), VYRE_ECONFIG);
    cr_assert_eq(vyre_config_write(g_root, "colour", "blue", -1, &e), VYRE_ECONFIG);
    cr_assert_eq(vyre_config_write(g_root, "colour", NULL, -1, &e), VYRE_ECONFIG);
    cr_assert_str_eq(get_text(path), "# x\nmax_size = 1G\nmax_size = 4G\numask = 002\n");
    /* The file keeps its mode. */
    cr_assert_eq(chmod(path, 0640), 0);
    cr_assert_eq(vyre_config_write(g_root, "read_only", "true", -1, &e), 0);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0640);
}

Test(config, the_cache_honours_its_file)
{
    vyre_cache *c = NULL;
    vyre_error e;
    cr_assert_eq(vyre_cache_open(g_root, NULL, &c, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_cache_config(c)->max_size, UINT64_C(5) << 30);
    vyre_cache_close(c);
    char path[1200];
    snprintf(path, sizeof path, "%s/vyre.conf", g_root);
    put_text(path, "read_only = true\nmax_size = 64M\n");
    cr_assert_eq(vyre_cache_open(g_root, NULL, &c, &e), 0, "%s", e.message);
    cr_assert(vyre__cache_is_readonly(c));
    cr_assert_eq(vyre_cache_config(c)->max_size, UINT64_C(64) << 20);
    cr_assert_eq(vyre_cache_zero_stats(c, &e), VYRE_EROFS);
    cr_assert_eq(e.remedy, VYRE_REMEDY_CACHE_CONFIG);
    vyre_cache_close(c);
    /* The caller's configuration instead of the files. */
    vyre_config mine;
    vyre__config_init(&mine);
    vyre_cache_open_opts o;
    vyre_cache_open_opts_init(&o);
    cr_assert_eq(o.umask, -1);
    o.config = &mine;
    cr_assert_eq(vyre_cache_open(g_root, &o, &c, &e), 0, "%s", e.message);
    cr_assert(!vyre__cache_is_readonly(c));
    vyre_cache_close(c);
    /* A bad file fails the open, with the line. */
    put_text(path, "max_size = lots\n");
    cr_assert_eq(vyre_cache_open(g_root, NULL, &c, &e), VYRE_ECONFIG);
    cr_assert_not_null(strstr(e.message, "vyre.conf:1: bad value 'lots' for max_size"), "%s",
                       e.message);
    /* A symlink as the cache's vyre.conf is never followed. */
    char target[1200];
    snprintf(target, sizeof target, "%s/elsewhere.conf", g_dir);
    put_text(target, "max_size = 1G\n");
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink(target, path), 0);
    cr_assert_eq(vyre_cache_open(g_root, NULL, &c, &e), VYRE_EUNSAFE);
    cr_assert_not_null(strstr(e.message, "is a symlink"), "%s", e.message);
    cr_assert_eq(vyre_config_write(g_root, "max_size", "2G", -1, &e), VYRE_EUNSAFE);
    cr_assert_str_eq(get_text(target), "max_size = 1G\n");
}

/* remote_storage (issue 16): each layer overrides the one below (the
 * user's file < the cache's file < $VYRE_REMOTE_CACHE < -o), shown with
 * passwords masked; the cache opens the stores of the configuration. */
Test(config, remote_storage_layers_and_masking)
{
    char user[1200], cache_conf[1200];
    snprintf(user, sizeof user, "%s/vyre/vyre.conf", g_xdg);
    snprintf(cache_conf, sizeof cache_conf, "%s/vyre.conf", g_root);
    put_text(user, "remote_storage = http://user:s3cret@127.0.0.1:1/user|read-only\n");
    vyre_config c;
    vyre_error e;
    char v[VYRE_CONFIG_LONG_VALUE_MAX], w[1300], want[1300];
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), 0, "%s", e.message);
    cr_assert_str_eq(c.remote_storage, "http://user:s3cret@127.0.0.1:1/user|read-only");
    cr_assert_eq(c.where[VYRE_CONF_REMOTE_STORAGE].origin, VYRE_CONF_FROM_USER_FILE);
    vyre_config_format_value(&c, VYRE_CONF_REMOTE_STORAGE, v, sizeof v);
    cr_assert_str_eq(v, "http://user:***@127.0.0.1:1/user|read-only");
    cr_assert_null(strstr(c.where[VYRE_CONF_REMOTE_STORAGE].text, "s3cret"));

    put_text(cache_conf, "# the fleet's store\nremote_storage = http://127.0.0.1:1/cache "
                         "redis://:pw@127.0.0.1:1/2|read-only\n");
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), 0, "%s", e.message);
    cr_assert_eq(c.where[VYRE_CONF_REMOTE_STORAGE].origin, VYRE_CONF_FROM_CACHE_FILE);
    vyre_config_format_where(&c, VYRE_CONF_REMOTE_STORAGE, w, sizeof w);
    snprintf(want, sizeof want, "%s:2", cache_conf);
    cr_assert_str_eq(w, want);
    vyre_config_format_value(&c, VYRE_CONF_REMOTE_STORAGE, v, sizeof v);
    cr_assert_str_eq(v, "http://127.0.0.1:1/cache redis://:***@127.0.0.1:1/2|read-only");

    /* The cache opens the stores of the configuration in force. */
    vyre_cache *h = NULL;
    cr_assert_eq(vyre_cache_open(g_root, NULL, &h, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_cache_remote_count(h), 2);
    vyre_remote_info ri;
    cr_assert_eq(vyre_cache_remote_get(h, 1, 0, &ri, NULL, NULL), 0);
    cr_assert_eq(ri.scheme, VYRE_REMOTE_REDIS);
    cr_assert(ri.read_only);
    vyre_cache_close(h);
    cr_assert_eq(vyre_cache_open(g_root, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &h, &e), 0, "%s",
                 e.message);
    cr_assert_eq(vyre_cache_remote_count(h), 0);
    vyre_cache_close(h);

    setenv("VYRE_REMOTE_CACHE", "http://127.0.0.1:1/env", 1);
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), 0, "%s", e.message);
    cr_assert_str_eq(c.remote_storage, "http://127.0.0.1:1/env");
    vyre_config_format_where(&c, VYRE_CONF_REMOTE_STORAGE, w, sizeof w);
    cr_assert_str_eq(w, "env VYRE_REMOTE_CACHE");
    cr_assert_eq(vyre_cache_open(g_root, NULL, &h, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_cache_remote_count(h), 1);
    vyre_cache_close(h);

    const char *ov[] = {"remote_storage=redis://127.0.0.1:1"};
    cr_assert_eq(vyre_config_load(&c, g_root, ov, 1, 0, &e), 0, "%s", e.message);
    cr_assert_str_eq(c.remote_storage, "redis://127.0.0.1:1");
    cr_assert_eq(c.where[VYRE_CONF_REMOTE_STORAGE].origin, VYRE_CONF_FROM_OVERRIDE);
    /* An empty value is none, at any layer. */
    const char *none[] = {"remote_storage="};
    cr_assert_eq(vyre_config_load(&c, g_root, none, 1, 0, &e), 0, "%s", e.message);
    cr_assert_str_eq(c.remote_storage, "");
    vyre_cache_open_opts o;
    vyre_cache_open_opts_init(&o);
    o.config = &c;
    cr_assert_eq(vyre_cache_open(g_root, &o, &h, &e), 0, "%s", e.message);
    cr_assert_eq(vyre_cache_remote_count(h), 0);
    vyre_cache_close(h);

    /* A bad store in the environment or in -o names it. */
    setenv("VYRE_REMOTE_CACHE", "http://h|bogus", 1);
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), VYRE_ECONFIG);
    cr_assert_str_eq(e.message, "VYRE_REMOTE_CACHE: bad value for remote_storage: remote store "
                                "'http://h|bogus': unknown attribute 'bogus'");
    cr_assert_str_eq(e.hint, "fix or unset VYRE_REMOTE_CACHE");
    unsetenv("VYRE_REMOTE_CACHE");
    const char *bad[] = {"remote_storage=ftp://x:pw@h/"};
    cr_assert_eq(vyre_config_load(&c, g_root, bad, 1, 0, &e), VYRE_ECONFIG);
    cr_assert(strncmp(e.message, "-o: bad value for remote_storage: ", 34) == 0, "%s", e.message);
    cr_assert_null(strstr(e.message, "pw"), "%s", e.message);
}

/* A bad URL in the cache's vyre.conf: VYRE_ECONFIG with the file and line,
 * from the configuration and from the open alike; no password shown. */
Test(config, a_bad_remote_storage_names_the_file_and_line)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/vyre.conf", g_root);
    put_text(path, "max_size = 1G\n\nremote_storage = http://127.0.0.1:1/ok "
                   "http://al:hunter2@cache.lan/vyre|bogus\n");
    vyre_config c;
    vyre_error e;
    char want[1600];
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), VYRE_ECONFIG);
    snprintf(want, sizeof want, "%s:3: bad value for remote_storage: ", path);
    cr_assert(strncmp(e.message, want, strlen(want)) == 0, "%s", e.message);
    cr_assert_null(strstr(e.message, "hunter2"), "%s", e.message);
    cr_assert(e.hint[0], "no hint");
    vyre_cache *h = (vyre_cache *)1;
    cr_assert_eq(vyre_cache_open(g_root, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &h, &e),
                 VYRE_ECONFIG);
    cr_assert_null(h);
    cr_assert(strncmp(e.message, want, strlen(want)) == 0, "%s", e.message);
    /* Writing a bad one is refused, the file unchanged. */
    put_text(path, "remote_storage = http://127.0.0.1:1/ok\n");
    cr_assert_eq(vyre_config_write(g_root, "remote_storage", "gopher://h", -1, &e), VYRE_ECONFIG);
    cr_assert_str_eq(get_text(path), "remote_storage = http://127.0.0.1:1/ok\n");
    cr_assert_eq(
        vyre_config_write(g_root, "remote_storage", "redis://127.0.0.1:1|read-only", -1, &e), 0,
        "%s", e.message);
    cr_assert_str_eq(get_text(path), "remote_storage = redis://127.0.0.1:1|read-only\n");
}

/* ---- issue 22 ------------------------------------------------------------ */

/* Point 10: an unknown key in a file is a warning with the nearest key,
 * kept for the caller (libcore prints nothing), and the line is ignored. */
Test(config, an_unknown_key_in_a_file_is_a_warning_with_a_did_you_mean)
{
    vyre_config c;
    vyre_error e;
    cr_assert_eq(parse(&c, "\n\nsize = 1G\nmax_sze = 2G\nmax_age = 1d\n", &e), 0, "%s", e.message);
    cr_assert_eq(c.n_problems, 2);
    cr_assert_eq(c.problems[0].is_error, 0);
    cr_assert_str_eq(c.problems[0].error.message,
                     "f.conf:3: unknown configuration key 'size' (the line is ignored)");
    cr_assert(strstr(c.problems[0].error.hint, "the keys are max_size"), "%s",
              c.problems[0].error.hint);
    cr_assert_str_eq(c.problems[1].error.message,
                     "f.conf:4: unknown configuration key 'max_sze' (the line is ignored)");
    cr_assert_str_eq(c.problems[1].error.hint, "did you mean 'max_size'?");
    cr_assert_eq(c.max_size, UINT64_C(5) << 30, "the default stays");
    cr_assert_eq(c.max_age_ns, INT64_C(86400) * 1000000000, "the line after is read");
    /* More than fit are counted. */
    char many[1024] = "";
    for (int i = 0; i < VYRE_CONFIG_MAX_PROBLEMS + 3; i++)
        strncat(many, "colour = blue\n", sizeof many - strlen(many) - 1);
    cr_assert_eq(parse(&c, many, &e), 0);
    cr_assert_eq(c.n_problems, VYRE_CONFIG_MAX_PROBLEMS + 3);
    /* The command line's did-you-mean, now in libcore. */
    const char *const words[] = {"max_size", "max_age", "umask"};
    cr_assert_str_eq(vyre_nearest_word("max_sise", words, 3), "max_size");
    cr_assert_str_eq(vyre_nearest_word("umsk", words, 3), "umask");
    cr_assert_null(vyre_nearest_word("colour", words, 3));
}

/* Point 10: VYRE_CONFIG_KEEP_GOING loads everything else and keeps each bad
 * value as an error (vyre-cachectl config shows them); the first one is
 * returned. */
Test(config, keep_going_loads_the_rest_and_keeps_each_error)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/vyre.conf", g_root);
    put_text(path, "max_size = 3X\numask = 000\nmax_age = 2d\nread_only = yes\n");
    vyre_config c;
    vyre_error e;
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), VYRE_ECONFIG);
    cr_assert(strstr(e.message, ":1: bad value '3X' for max_size"), "%s", e.message);
    const char *ov[] = {"umask=0777", "max_age=3d"};
    cr_assert_eq(vyre_config_load(&c, g_root, ov, 2, VYRE_CONFIG_KEEP_GOING, &e), VYRE_ECONFIG);
    cr_assert(strstr(e.message, ":1: bad value '3X' for max_size"), "%s", e.message);
    cr_assert_eq(c.n_problems, 3);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(c.problems[i].is_error, 1);
    cr_assert(strstr(c.problems[1].error.message, ":2: bad value '000' for umask: it lets other "
                                                  "users write the cache"),
              "%s", c.problems[1].error.message);
    cr_assert_str_eq(c.problems[2].error.message,
                     "-o: bad value '0777' for umask: it takes the owner's own permissions away");
    cr_assert_eq(c.max_size, UINT64_C(5) << 30);
    cr_assert_eq(c.umask, -1);
    cr_assert_eq(c.read_only, 1);
    cr_assert_eq(c.max_age_ns, INT64_C(3) * 86400 * 1000000000);
    cr_assert_eq(c.problems[0].key, VYRE_CONF_MAX_SIZE);
    cr_assert_eq(c.problems[1].key, VYRE_CONF_UMASK);
    cr_assert_eq(c.problems[2].key, VYRE_CONF_UMASK);
}

/* Issue 35 point 4: a problem carries its key, so the results store finds
 * results_db's own problems by key. It used to look for "results_db" in
 * every message, and a bad max_size whose value read "results_db" stopped
 * the results store with the cache's problem. */
Test(config, each_problem_carries_its_key)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/vyre/vyre.conf", g_xdg);
    put_text(path, "max_size = results_db\nnot a line\nresults_dbx = 1\n");
    const char *ov[] = {"read_only=maybe", "nope=1", "=2"};
    vyre_config c;
    vyre_error e;
    cr_assert_eq(vyre_config_load(&c, NULL, ov, 3, VYRE_CONFIG_KEEP_GOING, &e), VYRE_ECONFIG);
    cr_assert_eq(c.n_problems, 6);
    static const int keys[] = {VYRE_CONF_MAX_SIZE, -1, -1, VYRE_CONF_READ_ONLY, -1, -1};
    static const int errors[] = {1, 1, 0, 1, 1, 1};
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(c.problems[i].key, keys[i], "problem %zu (%s): key %d", i,
                     c.problems[i].error.message, c.problems[i].key);
        cr_assert_eq(c.problems[i].is_error, errors[i], "problem %zu: %s", i,
                     c.problems[i].error.message);
    }
    cr_assert(strstr(c.problems[0].error.message, "'results_db'"), "%s",
              c.problems[0].error.message);
    /* Not results_db's problem: the results store goes to its default. */
    char where[VYRE_RESULTS_LOCATION_MAX];
    int is_default = 0;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_results_locate(where, sizeof where, &is_default, &e), 0, "%s", e.message);
    cr_assert_eq(is_default, 1);
    /* results_db's own problem still stops it, by key. */
    put_text(path, "max_size = results_db\nresults_db = mysql://h/db\n");
    cr_assert_neq(vyre_results_locate(where, sizeof where, &is_default, &e), 0);
    cr_assert(strstr(e.message, "results_db"), "%s", e.message);
    cr_assert(!strstr(e.message, "max_size"), "the cache's problem was taken: %s", e.message);
}

/* Point 3: sizes as ccache writes them, shown so that they read back. */
Test(config, max_size_without_a_unit_is_gib_and_reads_back)
{
    vyre_config c;
    vyre_error e;
    char v[64];
    cr_assert_eq(parse(&c, "max_size = 10\n", &e), 0, "%s", e.message);
    cr_assert_eq(c.max_size, UINT64_C(10) << 30);
    cr_assert_eq(parse(&c, "max_size = 0.4\n", &e), 0, "%s", e.message);
    cr_assert_eq(c.max_size, UINT64_C(429496730));
    value_of(&c, VYRE_CONF_MAX_SIZE, v, sizeof v);
    cr_assert_str_eq(v, "429496730B");
    vyre_config back;
    vyre__config_init(&back);
    cr_assert_eq(vyre__config_set(&back, "max_size", v, VYRE_CONF_FROM_OVERRIDE, "-o", 0, &e), 0);
    cr_assert_eq(back.max_size, c.max_size);
    cr_assert_eq(parse(&c, "max_size = 0.0000001K\n", &e), VYRE_ECONFIG);
    cr_assert(strstr(e.message, "is less than one byte"), "%s", e.message);
    cr_assert_eq(parse(&c, "max_size = 0\n", &e), 0);
    cr_assert_eq(c.max_size, 0);
}

/* Point 1: remote_storage is taken only from a file the user or root owns.
 * Refused before its value is parsed: the token file (missing here) would
 * otherwise be read, and the message would be about it. */
Test(config, remote_storage_from_a_foreign_file_is_refused_before_it_is_read)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give a file to another user (CI runs as root)");
    char path[1200], user[1200], text[1600];
    snprintf(path, sizeof path, "%s/vyre.conf", g_root);
    snprintf(user, sizeof user, "%s/vyre/vyre.conf", g_xdg);
    snprintf(text, sizeof text,
             "max_size = 3G\nremote_storage = http://127.0.0.1:1/v|token-file=%s/missing\n", g_dir);
    put_text(path, text);
    cr_assert_eq(chown(path, 65534, 65534), 0);
    vyre_config c;
    vyre_error e;
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), VYRE_EUNSAFE);
    cr_assert(strstr(e.message, "vyre.conf:2: remote_storage refused: the file is owned by "), "%s",
              e.message);
    cr_assert(strstr(e.message, "(uid 65534), not by you or root"), "%s", e.message);
    cr_assert(strstr(e.hint, "chown root"), "%s", e.hint);
    /* The rest of a foreign file is read (a group cache's max_size). */
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, VYRE_CONFIG_KEEP_GOING, &e), VYRE_EUNSAFE);
    cr_assert_eq(c.max_size, UINT64_C(3) << 30);
    cr_assert_str_eq(c.remote_storage, "");
    /* The user's own file follows the same rule (sudo keeping HOME). */
    unlink(path);
    put_text(user, text);
    cr_assert_eq(chown(user, 65534, 65534), 0);
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), VYRE_EUNSAFE);
    /* Owned by root: trusted, so the value is parsed (and its missing
     * token file reported). */
    cr_assert_eq(chown(user, 0, 0), 0);
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), VYRE_ECONFIG);
    cr_assert(strstr(e.message, "missing"), "%s", e.message);
}

Test(config, triton_and_inductor_max_size_from_each_layer)
{
    /* Default 0: no limit; Triton and Inductor never evict by themselves. */
    vyre_config c;
    vyre_error e;
    vyre__config_init(&c);
    cr_assert_eq(c.triton_max_size, 0);
    cr_assert_eq(c.inductor_max_size, 0);
    char v[64], w[1200];
    /* A file, with the ccache rule: a size without a unit is GiB. */
    cr_assert_eq(parse(&c, "triton_max_size = 20\ninductor_max_size = 500M\n", &e), 0, "%s",
                 e.message);
    cr_assert_eq(c.triton_max_size, UINT64_C(20) << 30);
    cr_assert_eq(c.inductor_max_size, UINT64_C(500) << 20);
    value_of(&c, VYRE_CONF_TRITON_MAX_SIZE, v, sizeof v);
    cr_assert_str_eq(v, "20G");
    value_of(&c, VYRE_CONF_INDUCTOR_MAX_SIZE, v, sizeof v);
    cr_assert_str_eq(v, "500M");
    vyre_config_format_where(&c, VYRE_CONF_INDUCTOR_MAX_SIZE, w, sizeof w);
    cr_assert_str_eq(w, "f.conf:2");
    /* The environment over the file, -o over both. */
    char env[64];
    vyre__config_env_name(VYRE_CONF_TRITON_MAX_SIZE, env, sizeof env);
    cr_assert_str_eq(env, "VYRE_CACHE_TRITON_MAX_SIZE");
    vyre__config_env_name(VYRE_CONF_INDUCTOR_MAX_SIZE, env, sizeof env);
    cr_assert_str_eq(env, "VYRE_CACHE_INDUCTOR_MAX_SIZE");
    char conf[1300];
    snprintf(conf, sizeof conf, "%s/vyre.conf", g_root);
    put_text(conf, "triton_max_size = 1G\ninductor_max_size = 2G\n");
    setenv("VYRE_CACHE_TRITON_MAX_SIZE", "3G", 1);
    const char *const over[] = {"inductor_max_size=4G"};
    cr_assert_eq(vyre_config_load(&c, g_root, over, 1, 0, &e), 0, "%s", e.message);
    cr_assert_eq(c.triton_max_size, UINT64_C(3) << 30);
    cr_assert_eq(c.inductor_max_size, UINT64_C(4) << 30);
    vyre_config_format_where(&c, VYRE_CONF_TRITON_MAX_SIZE, w, sizeof w);
    cr_assert_str_eq(w, "env VYRE_CACHE_TRITON_MAX_SIZE");
    unsetenv("VYRE_CACHE_TRITON_MAX_SIZE");
    /* A bad value names the file and line, with a hint; nothing changes. */
    cr_assert_neq(parse(&c, "triton_max_size = lots\n", &e), 0);
    cr_assert(strstr(e.message, "f.conf:1: bad value 'lots' for triton_max_size"), "%s", e.message);
    cr_assert(strstr(e.hint, "10G"), "%s", e.hint);
    cr_assert_eq(c.triton_max_size, 0);
    /* And it reads back what it shows, through the cache's file. */
    cr_assert_eq(vyre_config_write(g_root, "inductor_max_size", "1.5G", -1, &e), 0, "%s",
                 e.message);
    cr_assert(strstr(get_text(conf), "inductor_max_size = 1.5G"), "%s", get_text(conf));
    cr_assert_eq(vyre_config_load(&c, g_root, NULL, 0, 0, &e), 0, "%s", e.message);
    cr_assert_eq(c.inductor_max_size, UINT64_C(1536) << 20);
}
