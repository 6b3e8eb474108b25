/*
 * test_top_options.c - vyre-top's --cache-dir: the same option as
 * vyre-cachectl's and vyre-exporter's names the pipeline cache it shows
 * (issue 36: one word for the same thing in all four tools); an empty one
 * is a usage error.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#ifndef VYRE_TOP_BIN
#error "tests/CMakeLists.txt must define VYRE_TOP_BIN"
#endif

Test(top_options, cache_dir_names_the_cache_shown)
{
    char dir[512], cache[600];
    tu_mkdtemp(dir, sizeof dir);
    snprintf(cache, sizeof cache, "%s/elsewhere", dir);
    const char *args[] = {"--json",           "-n",          "1",   "-d", "0.1", "--no-gpu",
                          "--no-cache-usage", "--cache-dir", cache, NULL};
    const char *env[] = {"VYRE_PTX_CACHE_DIR", NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_TOP_BIN, args, env, NULL);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    json_error_t je;
    json_t *doc = json_loads(p.out, JSON_DISABLE_EOF_CHECK, &je);
    cr_assert_not_null(doc, "not JSON: %s", p.out);
    const char *root = json_string_value(json_object_get(json_object_get(doc, "cache"), "root"));
    cr_assert_str_eq(root, cache);
    json_decref(doc);
    tu_proc_free(&p);
    tu_rm_rf(dir);
}

Test(top_options, an_empty_cache_dir_is_a_usage_error)
{
    const char *args[] = {"--batch", "-n", "1", "--no-gpu", "--cache-dir", "", NULL};
    tu_proc p;
    tu_run_bin(&p, VYRE_TOP_BIN, args, NULL, NULL);
    cr_assert_eq(p.exit_code, 2, "%s", p.err);
    cr_assert(tu_has_line(p.err, "vyre-top: error: --cache-dir is empty"), "stderr: %s", p.err);
    tu_proc_free(&p);
}
