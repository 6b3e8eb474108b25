/*
 * test_tool_opt.c - tools/common/tool_opt.c: one option table gives
 * getopt_long's arrays, --help's OPTIONS block and the completion helper's
 * lines; long-only options get no short letter, hidden ones (old
 * spellings) parse but are neither listed nor offered.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tool_opt.h"

enum { OPT_JSON = 256, OPT_OLD };

static const tool_opt table[] = {
    {'d', 'd', "delay", "SECONDS", "refresh interval", "0.5 1"},
    {'C', 'C', "no-color", NULL, "monochrome", NULL},
    {OPT_JSON, 0, "json", NULL, "one JSON object", NULL},
    {'U', 'U', "cache-usage-interval", "SECONDS", "measure the sizes\nevery SECONDS", TOOL_OPT_DIR},
    {OPT_OLD, 0, "old-spelling", "X", NULL, NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static char *capture(void (*fn)(FILE *, const tool_opt *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    fn(f, table);
    fclose(f);
    return buf;
}

Test(tool_opt, getopt_arrays_come_from_the_table)
{
    tool_opt_arrays g;
    cr_assert_eq(tool_opt_getopt(table, &g), 0);
    cr_assert_str_eq(g.shorts, "d:CU:", "long-only keys get no letter");
    cr_assert_str_eq(g.longs[0].name, "delay");
    cr_assert_eq(g.longs[0].has_arg, required_argument);
    cr_assert_eq(g.longs[2].val, OPT_JSON);
    cr_assert_eq(g.longs[2].has_arg, no_argument);
    cr_assert_str_eq(g.longs[4].name, "old-spelling", "a hidden option still parses");
    cr_assert_null(g.longs[5].name);
}

Test(tool_opt, help_aligns_at_column_25_and_leaves_hidden_options_out)
{
    char *h = capture(tool_opt_help);
    cr_assert_str_eq(h, "  -d, --delay SECONDS   refresh interval\n"
                        "  -C, --no-color        monochrome\n"
                        "      --json            one JSON object\n"
                        "  -U, --cache-usage-interval SECONDS\n"
                        "                        measure the sizes\n"
                        "                        every SECONDS\n");
    free(h);
}

Test(tool_opt, completion_lines_name_each_spelling_and_its_values)
{
    char *c = capture(tool_opt_complete);
    cr_assert_str_eq(c, "-d\t1\t0.5 1\n--delay\t1\t0.5 1\n"
                        "-C\t0\t\n--no-color\t0\t\n"
                        "--json\t0\t\n"
                        "-U\t1\t<dir>\n--cache-usage-interval\t1\t<dir>\n");
    free(c);
}

Test(tool_opt, a_table_too_long_is_refused)
{
    static tool_opt big[TOOL_OPT_MAX + 2];
    for (int i = 0; i <= TOOL_OPT_MAX; i++)
        big[i] = (tool_opt){300 + i, 0, "x", NULL, "x", NULL};
    tool_opt_arrays g;
    cr_assert_eq(tool_opt_getopt(big, &g), -1);
}

Test(tool_opt, a_short_letter_other_than_its_key_is_refused)
{
    static const tool_opt bad[] = {{300, 'x', "x", NULL, "x", NULL},
                                   {0, 0, NULL, NULL, NULL, NULL}};
    tool_opt_arrays g;
    cr_assert_eq(tool_opt_getopt(bad, &g), -1);
}

Test(tool_opt, the_helper_is_asked_by_the_first_argument_only)
{
    char a0[] = "vyre-top", a1[] = "--completion-helper", a2[] = "-d";
    char *yes[] = {a0, a1, NULL};
    char *no[] = {a0, a2, a1, NULL};
    cr_assert(tool_opt_wants_completion(2, yes));
    cr_assert_not(tool_opt_wants_completion(3, no));
    cr_assert_not(tool_opt_wants_completion(1, yes));
}
