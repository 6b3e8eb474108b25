/*
 * test_jitcache.c - the driver JIT-cache contract (vyre/jitcache.h).
 *
 * vyre_jitcache_resolve() is pure and is exercised in-process case after
 * case; vyre_jitcache_setup() applies the contract once per process, and
 * Criterion runs every test in its own process, so each setup test starts
 * fresh. Every test works in a fresh temp directory used as HOME and
 * XDG_CACHE_HOME, and the fixture restores every variable it touches.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda/jitcache_internal.h"
#include "testutil.h"
#include "vyre/jitcache.h"

#define GIB UINT64_C(1073741824)

static const char *const g_vars[] = {
    "CUDA_CACHE_DISABLE", "CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE", "HOME", "XDG_CACHE_HOME",
};
#define NVARS (sizeof g_vars / sizeof g_vars[0])
static tu_env g_env;
static char g_tmp[512];
static char g_home[600];
static char g_xdg[600];
static char g_cwd[4096];

static void jc_setup(void)
{
    tu_env_save(&g_env, g_vars, NVARS);
    cr_assert_not_null(getcwd(g_cwd, sizeof g_cwd));
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_home, sizeof g_home, "%s/home", g_tmp);
    snprintf(g_xdg, sizeof g_xdg, "%s/xdg", g_tmp);
    cr_assert_eq(mkdir(g_home, 0700), 0);
    setenv("HOME", g_home, 1);
}

static void jc_teardown(void)
{
    tu_env_restore(&g_env);
    if (chdir(g_cwd) != 0)
        perror("chdir");
    tu_rm_rf(g_tmp);
}

TestSuite(jitcache, .init = jc_setup, .fini = jc_teardown);

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void expect_env(const char *name, const char *value)
{
    const char *v = getenv(name);
    cr_assert_not_null(v, "%s is unset, expected '%s'", name, value);
    cr_assert_str_eq(v, value, "%s", name);
}

/* Number of entries in a directory, ignoring . and .. */
static int dir_entries(const char *path)
{
    int n = 0;
    DIR *d = opendir(path);
    cr_assert_not_null(d, "opendir(%s): %s", path, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* --- resolve: paths ----------------------------------------------------- */

Test(jitcache, resolve_defaults_to_home_cache)
{
    vyre_jitcache_info info;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, &e), 0, "%s", e.message);
    char expected[700];
    snprintf(expected, sizeof expected, "%s/.cache/vyre/cuda-jit", g_home);
    cr_assert_str_eq(info.path, expected);
    cr_assert_eq(info.path_from_env, 0);
    cr_assert_eq(info.maxsize_bytes, GIB);
    cr_assert_eq(info.maxsize_from_env, 0);
    /* resolve changes neither the filesystem nor the environment. */
    cr_assert_eq(dir_entries(g_home), 0, "resolve created something under HOME");
    cr_assert_null(getenv("CUDA_CACHE_PATH"));
    cr_assert_null(getenv("CUDA_CACHE_MAXSIZE"));
    cr_assert_null(getenv("CUDA_CACHE_DISABLE"));
}

Test(jitcache, resolve_prefers_xdg_cache_home)
{
    setenv("XDG_CACHE_HOME", g_xdg, 1);
    vyre_jitcache_info info;
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, NULL), 0);
    char expected[700];
    snprintf(expected, sizeof expected, "%s/vyre/cuda-jit", g_xdg);
    cr_assert_str_eq(info.path, expected);
    cr_assert_eq(info.path_from_env, 0);
    cr_assert_not(exists(g_xdg), "resolve created %s", g_xdg);
}

Test(jitcache, resolve_ignores_empty_or_relative_xdg_cache_home)
{
    char expected[700];
    snprintf(expected, sizeof expected, "%s/.cache/vyre/cuda-jit", g_home);
    static const char *const ignored[] = {"", "relative/cache", "./cache"};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        setenv("XDG_CACHE_HOME", ignored[i], 1);
        vyre_jitcache_info info;
        cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, NULL), 0);
        cr_assert_str_eq(info.path, expected, "XDG_CACHE_HOME='%s'", ignored[i]);
    }
}

Test(jitcache, resolve_keeps_operator_cache_path)
{
    char path[700];
    snprintf(path, sizeof path, "%s/operator/jit", g_tmp);
    setenv("CUDA_CACHE_PATH", path, 1);
    setenv("XDG_CACHE_HOME", g_xdg, 1);
    vyre_jitcache_info info;
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, NULL), 0);
    cr_assert_str_eq(info.path, path);
    cr_assert_eq(info.path_from_env, 1);
    cr_assert_not(exists(path));
}

Test(jitcache, resolve_empty_cache_path_is_eenv)
{
    setenv("CUDA_CACHE_PATH", "", 1);
    vyre_jitcache_info info;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, &e), VYRE_EENV);
    cr_assert_eq(e.code, VYRE_EENV);
    cr_assert(strstr(e.message, "CUDA_CACHE_PATH"), "message: %s", e.message);
    cr_assert_neq(e.hint[0], '\0');
    cr_assert(strstr(e.hint, "CUDA_CACHE_PATH"), "hint: %s", e.hint);
}

Test(jitcache, resolve_too_long_cache_path_is_eenv)
{
    char *path = malloc(VYRE_JITCACHE_PATH_MAX + 1);
    cr_assert_not_null(path);
    path[0] = '/';
    memset(path + 1, 'a', VYRE_JITCACHE_PATH_MAX - 1);
    path[VYRE_JITCACHE_PATH_MAX] = '\0'; /* strlen == PATH_MAX: one too many */
    setenv("CUDA_CACHE_PATH", path, 1);
    vyre_jitcache_info info;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, &e), VYRE_EENV);
    cr_assert_neq(e.hint[0], '\0');
    /* One byte shorter fits exactly. */
    path[VYRE_JITCACHE_PATH_MAX - 1] = '\0';
    setenv("CUDA_CACHE_PATH", path, 1);
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, NULL), 0);
    cr_assert_str_eq(info.path, path);
    free(path);
}

Test(jitcache, resolve_without_home_or_xdg_is_eenv)
{
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    vyre_jitcache_info info;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, &e), VYRE_EENV);
    cr_assert_eq(e.code, VYRE_EENV);
    cr_assert(strstr(e.message, "HOME"), "message: %s", e.message);
    cr_assert(strstr(e.hint, "CUDA_CACHE_PATH"), "hint: %s", e.hint);

    /* A relative HOME is no better. */
    setenv("HOME", "relative/home", 1);
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, NULL), VYRE_EENV);

    /* An operator CUDA_CACHE_PATH needs neither. */
    unsetenv("HOME");
    setenv("CUDA_CACHE_PATH", g_xdg, 1);
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, NULL), 0);
    cr_assert_str_eq(info.path, g_xdg);
}

/* --- resolve: size ------------------------------------------------------ */

Test(jitcache, resolve_maxsize_kept_at_or_above_floor)
{
    static const struct {
        const char *text;
        uint64_t value;
    } ok[] = {
        {"1073741824", GIB},                  /* exactly the floor */
        {"1073741825", GIB + 1},              /* one above */
        {"4294967296", UINT64_C(4294967296)}, /* 4 GiB */
        {"01073741824", GIB},                 /* leading zero: still decimal */
        {"18446744073709551615", UINT64_MAX}, /* the largest uint64 */
        {"10000000000000000000", UINT64_C(10000000000000000000)},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        setenv("CUDA_CACHE_MAXSIZE", ok[i].text, 1);
        vyre_jitcache_info info;
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, &e), 0, "'%s': %s",
                     ok[i].text, e.message);
        cr_assert_eq(info.maxsize_bytes, ok[i].value, "'%s'", ok[i].text);
        cr_assert_eq(info.maxsize_from_env, 1);
    }
}

Test(jitcache, resolve_maxsize_defaults_to_floor)
{
    vyre_jitcache_info info;
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, &info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, UINT64_C(1073741824));
    cr_assert_eq(info.maxsize_from_env, 0);
    cr_assert_eq(vyre_jitcache_resolve(4096, &info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, 4096);
    cr_assert_eq(vyre_jitcache_resolve(1, &info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, 1);
}

static void expect_maxsize_rejected(const char *value, uint64_t floor_bytes)
{
    setenv("CUDA_CACHE_MAXSIZE", value, 1);
    vyre_jitcache_info info;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_jitcache_resolve(floor_bytes, &info, &e);
    cr_assert_eq(rc, VYRE_EENV, "CUDA_CACHE_MAXSIZE='%s' floor %llu gave %s", value,
                 (unsigned long long)floor_bytes, vyre_err_name(rc));
    cr_assert_eq(e.code, VYRE_EENV);
    char quoted[400];
    snprintf(quoted, sizeof quoted, "CUDA_CACHE_MAXSIZE='%s'", value);
    cr_assert(strstr(e.message, quoted), "message: %s", e.message);
    cr_assert_neq(e.hint[0], '\0', "no hint for '%s'", value);
    cr_assert(strstr(e.hint, "CUDA_CACHE_MAXSIZE"), "hint: %s", e.hint);
    char floor_text[32];
    snprintf(floor_text, sizeof floor_text, "%llu", (unsigned long long)floor_bytes);
    cr_assert(strstr(e.hint, floor_text), "hint should give the floor: %s", e.hint);
}

Test(jitcache, resolve_maxsize_not_a_number_is_eenv)
{
    static const char *const bad[] = {
        "abc",          "12MB",         "-5",          " 1",          "",    "1e9",
        "1 ",           "+1073741824",  "0x40000000",  "1073741824k", "1.5", "1,073,741,824",
        "\t1073741824", "1073741824\n", "2147483648 ", "GiB",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_maxsize_rejected(bad[i], VYRE_JITCACHE_FLOOR_BYTES);
}

Test(jitcache, resolve_maxsize_below_floor_is_eenv)
{
    static const char *const small[] = {"0",         "1",          "12",
                                        "268435456", "1073741823", "0000000000000001073741823"};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        expect_maxsize_rejected(small[i], VYRE_JITCACHE_FLOOR_BYTES);
    /* The floor is a parameter: 4095 is below 4096, 4096 is not. */
    expect_maxsize_rejected("4095", 4096);
    setenv("CUDA_CACHE_MAXSIZE", "4096", 1);
    vyre_jitcache_info info;
    cr_assert_eq(vyre_jitcache_resolve(4096, &info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, 4096);
}

Test(jitcache, resolve_maxsize_overflow_is_eenv)
{
    static const char *const huge[] = {
        "18446744073709551616",  /* UINT64_MAX + 1 */
        "18446744073709551620",  /* overflows in the last digit */
        "18446744073709551710",  /* overflows in the tens */
        "99999999999999999999",  /* 20 digits */
        "184467440737095516150", /* UINT64_MAX * 10 */
        "100000000000000000000000000000000000000000",
    };
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++)
        expect_maxsize_rejected(huge[i], VYRE_JITCACHE_FLOOR_BYTES);
}

Test(jitcache, resolve_zero_floor_is_einval)
{
    vyre_jitcache_info info;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_resolve(0, &info, &e), VYRE_EINVAL);
    cr_assert_eq(e.code, VYRE_EINVAL);
    cr_assert_neq(e.message[0], '\0');
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, NULL, &e), VYRE_EINVAL);
    cr_assert_eq(vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, NULL, NULL), VYRE_EINVAL);
}

/* --- setup: applies the contract ---------------------------------------- */

Test(jitcache, setup_applies_defaults_and_creates_directory)
{
    setenv("XDG_CACHE_HOME", g_xdg, 1);
    vyre_jitcache_info info;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_setup(&info, &e), 0, "%s", e.message);
    char expected[700];
    snprintf(expected, sizeof expected, "%s/vyre/cuda-jit", g_xdg);
    cr_assert_str_eq(info.path, expected);
    cr_assert_eq(info.maxsize_bytes, GIB);
    expect_env("CUDA_CACHE_DISABLE", "0");
    expect_env("CUDA_CACHE_PATH", expected);
    expect_env("CUDA_CACHE_MAXSIZE", "1073741824");
    struct stat st;
    cr_assert_eq(stat(expected, &st), 0, "%s was not created", expected);
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(st.st_mode & 077, 0, "cache directory mode %o is open to others",
                 (unsigned)(st.st_mode & 0777));
    /* HOME was not used. */
    cr_assert_eq(dir_entries(g_home), 0);
}

Test(jitcache, setup_uses_home_when_xdg_is_unset)
{
    cr_assert_eq(vyre_jitcache_setup(NULL, NULL), 0);
    char expected[700];
    snprintf(expected, sizeof expected, "%s/.cache/vyre/cuda-jit", g_home);
    expect_env("CUDA_CACHE_PATH", expected);
    cr_assert(is_dir(expected), "%s was not created", expected);
}

Test(jitcache, setup_forces_cache_on_when_disabled)
{
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    cr_assert_eq(vyre_jitcache_setup(NULL, NULL), 0);
    expect_env("CUDA_CACHE_DISABLE", "0");
}

Test(jitcache, setup_forces_cache_on_whatever_the_value)
{
    setenv("CUDA_CACHE_DISABLE", "yes please", 1);
    cr_assert_eq(vyre_jitcache_setup(NULL, NULL), 0);
    expect_env("CUDA_CACHE_DISABLE", "0");
}

Test(jitcache, setup_keeps_operator_path_and_creates_it)
{
    char path[700];
    snprintf(path, sizeof path, "%s/operator/deep/jit", g_tmp);
    setenv("CUDA_CACHE_PATH", path, 1);
    setenv("XDG_CACHE_HOME", g_xdg, 1);
    vyre_jitcache_info info;
    cr_assert_eq(vyre_jitcache_setup(&info, NULL), 0);
    cr_assert_str_eq(info.path, path);
    cr_assert_eq(info.path_from_env, 1);
    expect_env("CUDA_CACHE_PATH", path);
    cr_assert(is_dir(path), "%s was not created", path);
    cr_assert_not(exists(g_xdg), "the default location was created as well");
}

Test(jitcache, setup_keeps_operator_maxsize)
{
    setenv("CUDA_CACHE_MAXSIZE", "4294967296", 1);
    vyre_jitcache_info info;
    cr_assert_eq(vyre_jitcache_setup(&info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, UINT64_C(4294967296));
    cr_assert_eq(info.maxsize_from_env, 1);
    expect_env("CUDA_CACHE_MAXSIZE", "4294967296");
}

Test(jitcache, setup_rejects_small_maxsize_and_changes_nothing)
{
    setenv("CUDA_CACHE_MAXSIZE", "12", 1);
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    setenv("XDG_CACHE_HOME", g_xdg, 1);
    vyre_jitcache_info info;
    memset(&info, 0x5a, sizeof info);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_setup(&info, &e), VYRE_EENV);
    cr_assert(strstr(e.message, "CUDA_CACHE_MAXSIZE='12'"), "message: %s", e.message);
    cr_assert(strstr(e.hint, "1073741824"), "hint: %s", e.hint);
    expect_env("CUDA_CACHE_MAXSIZE", "12");
    expect_env("CUDA_CACHE_DISABLE", "1");
    cr_assert_null(getenv("CUDA_CACHE_PATH"));
    cr_assert_not(exists(g_xdg), "a failed setup created the cache directory");
}

Test(jitcache, setup_empty_cache_path_is_eenv)
{
    setenv("CUDA_CACHE_PATH", "", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_setup(NULL, &e), VYRE_EENV);
    cr_assert_neq(e.hint[0], '\0');
    cr_assert(strstr(e.message, "CUDA_CACHE_PATH"), "message: %s", e.message);
}

Test(jitcache, setup_without_home_or_xdg_fails_and_creates_nothing)
{
    /* Run from an empty directory so that a relative fallback would show. */
    char work[700];
    snprintf(work, sizeof work, "%s/cwd", g_tmp);
    cr_assert_eq(mkdir(work, 0700), 0);
    cr_assert_eq(chdir(work), 0);
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    const char *tmpdir = getenv("TMPDIR");
    char tmp_guess[3][700];
    snprintf(tmp_guess[0], sizeof tmp_guess[0], "/tmp/vyre/cuda-jit");
    snprintf(tmp_guess[1], sizeof tmp_guess[1], "/tmp/.cache/vyre/cuda-jit");
    snprintf(tmp_guess[2], sizeof tmp_guess[2], "%s/vyre/cuda-jit",
             tmpdir && *tmpdir ? tmpdir : "/tmp");
    int existed[3];
    for (int i = 0; i < 3; i++)
        existed[i] = exists(tmp_guess[i]);

    vyre_jitcache_info info;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_setup(&info, &e), VYRE_EENV);
    cr_assert_eq(e.code, VYRE_EENV);
    cr_assert_neq(e.hint[0], '\0');
    cr_assert(strstr(e.hint, "HOME"), "hint: %s", e.hint);
    cr_assert_null(getenv("CUDA_CACHE_PATH"), "CUDA_CACHE_PATH='%s' was set anyway",
                   getenv("CUDA_CACHE_PATH"));
    cr_assert_eq(dir_entries(work), 0, "something was created in the working directory");
    for (int i = 0; i < 3; i++)
        if (!existed[i])
            cr_assert_not(exists(tmp_guess[i]), "silent fallback to %s", tmp_guess[i]);
}

Test(jitcache, setup_reports_a_file_in_the_way)
{
    setenv("XDG_CACHE_HOME", g_xdg, 1);
    cr_assert_eq(mkdir(g_xdg, 0700), 0);
    char vyre_dir[700];
    snprintf(vyre_dir, sizeof vyre_dir, "%s/vyre", g_xdg);
    tu_write_file(vyre_dir, "x", 1); /* a file where a directory must go */
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_jitcache_setup(NULL, &e);
    cr_assert_neq(rc, 0, "setup succeeded with a file in the way");
    cr_assert_neq(e.message[0], '\0');
    cr_assert_null(getenv("CUDA_CACHE_PATH"));
}

Test(jitcache, setup_floor_sets_a_custom_floor)
{
    vyre_jitcache_info info;
    cr_assert_eq(vyre__jitcache_setup_floor(4096, &info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, 4096);
    expect_env("CUDA_CACHE_MAXSIZE", "4096");
    /* Only the first call's floor matters. */
    cr_assert_eq(vyre_jitcache_setup(&info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, 4096);
    cr_assert_eq(vyre__jitcache_setup_floor(GIB * 4, &info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, 4096);
}

Test(jitcache, setup_floor_exact_value_accepted)
{
    setenv("CUDA_CACHE_MAXSIZE", "8192", 1);
    vyre_jitcache_info info;
    cr_assert_eq(vyre__jitcache_setup_floor(8192, &info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, 8192);
    cr_assert_eq(info.maxsize_from_env, 1);
}

Test(jitcache, setup_floor_below_custom_floor_rejected)
{
    setenv("CUDA_CACHE_MAXSIZE", "8191", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__jitcache_setup_floor(8192, NULL, &e), VYRE_EENV);
    cr_assert(strstr(e.hint, "8192"), "hint: %s", e.hint);
}

Test(jitcache, setup_zero_floor_is_einval_and_does_not_count)
{
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__jitcache_setup_floor(0, NULL, &e), VYRE_EINVAL);
    cr_assert_eq(e.code, VYRE_EINVAL);
    cr_assert_neq(e.message[0], '\0');
    cr_assert_null(getenv("CUDA_CACHE_PATH"), "a rejected call applied the contract");
    /* The rejected call was not "the first call": a real one still works. */
    vyre_jitcache_info info;
    cr_assert_eq(vyre_jitcache_setup(&info, NULL), 0);
    cr_assert_eq(info.maxsize_bytes, GIB);
}

/* --- once per process --------------------------------------------------- */

Test(jitcache, second_setup_returns_first_success)
{
    setenv("XDG_CACHE_HOME", g_xdg, 1);
    vyre_jitcache_info first, second;
    cr_assert_eq(vyre_jitcache_setup(&first, NULL), 0);
    /* Break every variable: nothing is resolved again. */
    setenv("CUDA_CACHE_MAXSIZE", "abc", 1);
    setenv("CUDA_CACHE_PATH", "", 1);
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    memset(&second, 0, sizeof second);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_jitcache_setup(&second, &e), 0, "%s", e.message);
    cr_assert_eq(memcmp(&first, &second, sizeof first), 0);
    cr_assert_eq(e.code, 0, "success must leave err untouched");
}

Test(jitcache, second_setup_returns_first_failure)
{
    setenv("CUDA_CACHE_MAXSIZE", "12MB", 1);
    vyre_error first, second;
    vyre_error_clear(&first);
    cr_assert_eq(vyre_jitcache_setup(NULL, &first), VYRE_EENV);
    /* Fixing the variable later does not help this process. */
    unsetenv("CUDA_CACHE_MAXSIZE");
    vyre_error_clear(&second);
    vyre_jitcache_info info;
    cr_assert_eq(vyre_jitcache_setup(&info, &second), VYRE_EENV);
    cr_assert_eq(second.code, VYRE_EENV);
    cr_assert_str_eq(second.message, first.message);
    cr_assert_str_eq(second.hint, first.hint);
    cr_assert_null(getenv("CUDA_CACHE_PATH"));
}

#define NTHREADS 32

struct setup_thread {
    pthread_barrier_t *barrier;
    uint64_t floor_bytes;
    int rc;
    vyre_jitcache_info info;
    vyre_error err;
};

static void *setup_thread_main(void *arg)
{
    struct setup_thread *t = arg;
    vyre_error_clear(&t->err);
    pthread_barrier_wait(t->barrier);
    t->rc = vyre__jitcache_setup_floor(t->floor_bytes, &t->info, &t->err);
    return NULL;
}

static void run_threads(struct setup_thread *t, int vary_floor)
{
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].barrier = &barrier;
        t[i].rc = -999;
        t[i].floor_bytes = vary_floor ? UINT64_C(4096) * (uint64_t)(i + 1) : GIB;
        cr_assert_eq(pthread_create(&th[i], NULL, setup_thread_main, &t[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
}

Test(jitcache, concurrent_setup_gives_everyone_the_same_success)
{
    setenv("XDG_CACHE_HOME", g_xdg, 1);
    struct setup_thread t[NTHREADS];
    run_threads(t, 0);
    char expected[700];
    snprintf(expected, sizeof expected, "%s/vyre/cuda-jit", g_xdg);
    for (int i = 0; i < NTHREADS; i++) {
        cr_assert_eq(t[i].rc, 0, "thread %d: %s", i, t[i].err.message);
        cr_assert_str_eq(t[i].info.path, expected);
        cr_assert_eq(memcmp(&t[i].info, &t[0].info, sizeof t[0].info), 0, "thread %d", i);
    }
    expect_env("CUDA_CACHE_PATH", expected);
    cr_assert(is_dir(expected));
}

Test(jitcache, concurrent_setup_with_different_floors_agrees_on_one)
{
    struct setup_thread t[NTHREADS];
    run_threads(t, 1);
    uint64_t chosen = t[0].info.maxsize_bytes;
    int from_a_caller = 0;
    for (int i = 0; i < NTHREADS; i++) {
        cr_assert_eq(t[i].rc, 0, "thread %d: %s", i, t[i].err.message);
        cr_assert_eq(t[i].info.maxsize_bytes, chosen, "thread %d saw another floor", i);
        from_a_caller |= chosen == t[i].floor_bytes;
    }
    cr_assert(from_a_caller, "floor %llu was nobody's", (unsigned long long)chosen);
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)chosen);
    expect_env("CUDA_CACHE_MAXSIZE", num);
}

Test(jitcache, concurrent_setup_gives_everyone_the_same_failure)
{
    setenv("CUDA_CACHE_MAXSIZE", "1e9", 1);
    struct setup_thread t[NTHREADS];
    run_threads(t, 0);
    for (int i = 0; i < NTHREADS; i++) {
        cr_assert_eq(t[i].rc, VYRE_EENV, "thread %d: %s", i, vyre_err_name(t[i].rc));
        cr_assert_eq(t[i].err.code, VYRE_EENV);
        cr_assert_str_eq(t[i].err.message, t[0].err.message);
        cr_assert_str_eq(t[i].err.hint, t[0].err.hint);
    }
    cr_assert(strstr(t[0].err.message, "'1e9'"), "message: %s", t[0].err.message);
}
