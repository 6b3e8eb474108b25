/*
 * test_loader.c - the run-time library loader (libcore/src/base/loader.c)
 * on libraries every machine has (libm) and on files that do not exist:
 * the override variable, the search order and its message, install roots,
 * the first choice, symbol tables (required and optional) and load-once.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/internal.h"
#include "base/loader.h"
#include "testutil.h"

static const char *const g_vars[] = {"VYRE_TEST_LIB", "VYRE_TEST_ROOT", "VYRE_TEST_FIRST"};
static tu_env g_env;
static char g_tmp[256];

static void setup(void)
{
    tu_env_save(&g_env, g_vars, VYRE_ARRAY_SIZE(g_vars));
    unsetenv("VYRE_TEST_LIB");
    unsetenv("VYRE_TEST_ROOT");
    unsetenv("VYRE_TEST_FIRST");
    tu_mkdtemp(g_tmp, sizeof g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
    tu_env_restore(&g_env);
}

TestSuite(loader, .init = setup, .fini = teardown);

static const char *const g_two[] = {"libvyre-nope-a.so.1", "libvyre-nope-b.so", NULL};
static const char *const g_one[] = {"libvyre-nope-a.so.1", NULL};
static const char *const g_link[] = {"libvyre-loader-test.so.1", NULL};
static const char *const g_subdirs[] = {"lib64", "extras/lib64", NULL};

static vyre__lib_spec spec_of(const char *const *names)
{
    vyre__lib_spec s = {
        .fail = "Test lib not available",
        .env = "VYRE_TEST_LIB",
        .env_named = 1,
        .names = names,
        .root_env = "VYRE_TEST_ROOT",
        .root_default = "/nonexistent-vyre-root",
        .subdirs = g_subdirs,
        .missing_code = VYRE_ENONVRTC,
        .hint = "install it",
        .env_hint = "fix VYRE_TEST_LIB",
        .empty_hint = "unset VYRE_TEST_LIB",
        .sym_lead = "Test lib not available: ",
        .sym_noun = "symbol '",
        .sym_tail = "' (too old)",
        .sym_hint = "update it",
    };
    return s;
}

/* The file libm was loaded from, through its 'cos'. */
static void libm_file(char *buf, size_t size)
{
    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    Dl_info info;
    cr_assert(dladdr(dlsym(h, "cos"), &info) && info.dli_fname, "dladdr(cos)");
    cr_assert_not_null(realpath(info.dli_fname, buf), "realpath '%s'", info.dli_fname);
    cr_assert_lt(strlen(buf), size);
}

Test(loader, empty_override_is_eenv_with_its_own_hint)
{
    setenv("VYRE_TEST_LIB", "", 1);
    vyre__lib_spec s = spec_of(g_two);
    void *h = (void *)&s;
    char path[64] = "x";
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), VYRE_EENV);
    cr_assert_null(h);
    cr_assert_str_eq(path, "");
    cr_assert_str_eq(e.message, "VYRE_TEST_LIB is set but empty");
    cr_assert_str_eq(e.hint, "unset VYRE_TEST_LIB");
}

Test(loader, override_that_does_not_load_is_final_and_named)
{
    setenv("VYRE_TEST_LIB", "/nonexistent/libvyre-x.so", 1);
    vyre__lib_spec s = spec_of(g_link);
    void *h = NULL;
    char path[64];
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), VYRE_ENONVRTC);
    const char *want = "Test lib not available: cannot load '/nonexistent/libvyre-x.so' (from "
                       "VYRE_TEST_LIB): /nonexistent/libvyre-x.so: ";
    cr_assert_eq(strncmp(e.message, want, strlen(want)), 0, "%s", e.message);
    cr_assert_str_eq(e.hint, "fix VYRE_TEST_LIB");

    s.env_named = 0;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), VYRE_ENONVRTC);
    want = "Test lib not available: cannot load '/nonexistent/libvyre-x.so': ";
    cr_assert_eq(strncmp(e.message, want, strlen(want)), 0, "%s", e.message);
}

Test(loader, search_tries_names_then_each_subdir_of_each_root_in_order)
{
    setenv("VYRE_TEST_ROOT", g_tmp, 1);
    vyre__lib_spec s = spec_of(g_two);
    void *h = NULL;
    char path[64];
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), VYRE_ENONVRTC);
    char want[2048];
    snprintf(want, sizeof want,
             "Test lib not available: tried 'libvyre-nope-a.so.1', 'libvyre-nope-b.so', "
             "'%s/lib64/libvyre-nope-a.so.1', '%s/lib64/libvyre-nope-b.so', "
             "'/nonexistent-vyre-root/lib64/libvyre-nope-a.so.1', "
             "'/nonexistent-vyre-root/lib64/libvyre-nope-b.so', '%s/extras/lib64/",
             g_tmp, g_tmp, g_tmp);
    cr_assert_eq(strncmp(e.message, want, strlen(want)), 0, "got:  %s\nwant: %s", e.message, want);
    cr_assert_str_eq(e.hint, "install it");

    /* An empty root variable counts as unset; one candidate and no roots
     * is "cannot load". */
    setenv("VYRE_TEST_ROOT", "", 1);
    s = spec_of(g_one);
    s.subdirs = NULL;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), VYRE_ENONVRTC);
    const char *one = "Test lib not available: cannot load 'libvyre-nope-a.so.1': ";
    cr_assert_eq(strncmp(e.message, one, strlen(one)), 0, "%s", e.message);
}

Test(loader, finds_a_library_under_an_install_root)
{
    char libm[PATH_MAX], dir[512], link[600];
    libm_file(libm, sizeof libm);
    snprintf(dir, sizeof dir, "%s/extras", g_tmp);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(dir, sizeof dir, "%s/extras/lib64", g_tmp);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(link, sizeof link, "%s/libvyre-loader-test.so.1", dir);
    cr_assert_eq(symlink(libm, link), 0);
    setenv("VYRE_TEST_ROOT", g_tmp, 1);

    vyre__lib_spec s = spec_of(g_link);
    void *h = NULL;
    char path[VYRE__LIB_PATH_MAX];
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), 0, "%s", e.message);
    cr_assert_not_null(h);
    cr_assert_str_eq(path, link);

    struct {
        double (*cos)(double);
        double (*maybe)(double);
    } t = {NULL, NULL};
    const vyre__lib_sym syms[] = {
        {"cos", offsetof(__typeof__(t), cos), 0},
        {"vyre_no_such_symbol", offsetof(__typeof__(t), maybe), 1},
    };
    cr_assert_eq(vyre__lib_resolve(&s, h, path, syms, 2, &t, &e), 0, "%s", e.message);
    cr_assert_not_null(t.cos);
    cr_assert_null(t.maybe, "a missing optional symbol is NULL");
    cr_assert_float_eq(t.cos(0.0), 1.0, 1e-12);

    const vyre__lib_sym need[] = {{"vyre_no_such_symbol", offsetof(__typeof__(t), maybe), 0}};
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_resolve(&s, h, path, need, 1, &t, &e), VYRE_ENONVRTC);
    char want[2048];
    snprintf(want, sizeof want,
             "Test lib not available: '%s' has no symbol 'vyre_no_such_symbol' (too old)", link);
    cr_assert_str_eq(e.message, want);
    cr_assert_str_eq(e.hint, "update it");
    dlclose(h);
}

static const char *first_choice(void)
{
    return getenv("VYRE_TEST_FIRST");
}

Test(loader, first_choice_comes_before_the_search_but_not_before_the_override)
{
    vyre__lib_spec s = spec_of(g_two);
    s.first = first_choice;
    void *h = NULL;
    char path[64];
    vyre_error e;
    vyre_error_clear(&e);
    setenv("VYRE_TEST_FIRST", "libm.so.6", 1);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), 0, "%s", e.message);
    cr_assert_str_eq(path, "libm.so.6");
    dlclose(h);

    /* A first choice that does not load is skipped without a word. */
    setenv("VYRE_TEST_FIRST", "/nonexistent/libvyre-first.so", 1);
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), VYRE_ENONVRTC);
    cr_assert_null(strstr(e.message, "libvyre-first"), "%s", e.message);

    setenv("VYRE_TEST_FIRST", "libm.so.6", 1);
    setenv("VYRE_TEST_LIB", "/nonexistent/libvyre-x.so", 1);
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_open(&s, &h, path, sizeof path, &e), VYRE_ENONVRTC,
                 "the override is never replaced");
}

typedef struct cos_table {
    double (*cos)(double);
} cos_table;
static cos_table g_table;
static int g_ready_calls;

static int count_ready(void *handle, char *path, vyre_error *err)
{
    (void)handle;
    (void)err;
    g_ready_calls++;
    return strcmp(path, "libm.so.6") == 0 ? VYRE_OK : VYRE_EVERSION;
}

static const vyre__lib_sym g_cos_syms[] = {{"cos", offsetof(cos_table, cos), 0}};

Test(loader, load_once_keeps_the_first_answer)
{
    static vyre__lib_spec s;
    s = spec_of(g_two);
    static vyre__lib_once lib = {
        .spec = &s,
        .syms = g_cos_syms,
        .nsyms = 1,
        .table = &g_table,
        .table_size = sizeof g_table,
        .ready = count_ready,
        VYRE__LIB_ONCE_STATE,
    };
    setenv("VYRE_TEST_LIB", "libm.so.6", 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_load(&lib, &e), 0, "%s", e.message);
    cr_assert_str_eq(lib.path, "libm.so.6");
    cr_assert_not_null(g_table.cos);
    /* Later calls do not look at the environment again. */
    setenv("VYRE_TEST_LIB", "", 1);
    cr_assert_eq(vyre__lib_load(&lib, NULL), 0);
    cr_assert_eq(g_ready_calls, 1);
}

Test(loader, a_failed_check_clears_the_table_and_is_kept)
{
    static vyre__lib_spec s;
    s = spec_of(g_two);
    static vyre__lib_once lib = {
        .spec = &s,
        .syms = g_cos_syms,
        .nsyms = 1,
        .table = &g_table,
        .table_size = sizeof g_table,
        .ready = count_ready,
        VYRE__LIB_ONCE_STATE,
    };
    char libm[PATH_MAX];
    libm_file(libm, sizeof libm);
    setenv("VYRE_TEST_LIB", libm, 1); /* loads, but count_ready refuses it */
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__lib_load(&lib, &e), VYRE_EVERSION);
    cr_assert_null(g_table.cos, "the table is cleared on failure");
    cr_assert_str_eq(lib.path, "");
    setenv("VYRE_TEST_LIB", "libm.so.6", 1);
    cr_assert_eq(vyre__lib_load(&lib, NULL), VYRE_EVERSION, "the first answer stays");
    cr_assert_eq(g_ready_calls, 1);
}
