/*
 * test_tool_json.c - tools/common/tool_json.c, the one JSON printer of the
 * tools: reals are the shortest text that reads back to the same double
 * (docs/JSON.md), and the rest of the layout is jansson's own, so the
 * documents the tools printed before keep their shape byte for byte.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"

/* What tool_json_write prints, as a string (the caller frees it). */
static char *written(json_t *v, tool_json_style style)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(tool_json_write(f, v, style), 0);
    fclose(f);
    return buf;
}

Test(tool_json, reals_are_the_shortest_text_that_reads_back)
{
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},
        {0.1 + 0.2, "0.30000000000000004"}, /* %.15g gives "0.3": another double */
        {1.0 / 3.0, "0.3333333333333333"},  /* 16 digits */
        {2.0, "2.0"},                       /* stays a real */
        {-0.5, "-0.5"},
        {1e20, "1e20"}, /* jansson's exponent: no '+', no leading 0 */
        {1.5e-7, "1.5e-7"},
        {DBL_MAX, "1.7976931348623157e308"},
        {123456.0, "123456.0"},
        {1e15, "1e15"}, /* %.15g switches to an exponent at 1e15 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        tool_json_format_real(buf, sizeof buf, cases[i].v);
        cr_expect_str_eq(buf, cases[i].text, "case %zu", i);
        cr_expect_eq(strtod(buf, NULL), cases[i].v, "case %zu reads back", i);
    }
}

Test(tool_json, every_real_of_a_document_reads_back_exactly)
{
    json_t *a = json_array();
    double v = 1.0;
    for (int i = 0; i < 200; i++, v = v * 1.37 + 0.011) {
        json_array_append_new(a, json_real(v / 7.0));
        json_array_append_new(a, json_real(i / 10.0)); /* 0.7 at %.17g: 0.69999999999999996 */
    }
    char *text = written(a, TOOL_JSON_COMPACT);
    json_error_t je;
    json_t *back = json_loads(text, 0, &je);
    cr_assert_not_null(back, "%s", je.text);
    for (size_t i = 0; i < json_array_size(a); i++)
        cr_expect_eq(json_real_value(json_array_get(back, i)),
                     json_real_value(json_array_get(a, i)), "element %zu", i);
    cr_expect_null(strstr(text, "0000000"), "no padded digits: %s", text);
    cr_expect_null(strstr(text, "9999999"), "no padded digits: %s", text);
    json_decref(back);
    json_decref(a);
    free(text);
}

/* Without reals, the layout is jansson's (what every --json printed). */
Test(tool_json, layout_is_jansson_s)
{
    json_t *o =
        json_pack("{s:i, s:s, s:[i, s, b, n], s:{}, s:[], s:{s:{s:i}}, s:s}", "schema_version", 3,
                  "name", "a \"quoted\"\\ \x01 tab\t/ é", "list", 1, "two", 1, "empty_object",
                  "empty_array", "nested", "deeper", "n", -42, "last", "");
    const struct {
        tool_json_style style;
        size_t flags;
    } styles[] = {{TOOL_JSON_PRETTY, JSON_INDENT(2)}, {TOOL_JSON_COMPACT, JSON_COMPACT}};
    for (size_t i = 0; i < 2; i++) {
        char *mine = written(o, styles[i].style);
        char *theirs = json_dumps(o, styles[i].flags);
        cr_assert_not_null(theirs);
        size_t n = strlen(theirs);
        cr_expect_eq(strncmp(mine, theirs, n), 0, "style %zu:\n%s\nvs\n%s", i, mine, theirs);
        cr_expect_str_eq(mine + n, "\n", "one newline after the document");
        free(mine);
        free(theirs);
    }
    json_decref(o);
}
