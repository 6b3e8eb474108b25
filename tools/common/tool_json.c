/*
 * tool_json.c - see tool_json.h. A walk over the json_t tree: jansson has
 * one precision for a whole dump, and no precision gives the shortest text
 * for every number, so reals are written here; strings, keys and the
 * layout follow jansson's dump (JSON_INDENT(2) or JSON_COMPACT), which the
 * unit test compares byte for byte.
 */
#include "tool_json.h"
#include "tool_sanitize.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tool_json_format_real(char *out, size_t size, double v)
{
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* As jansson: a '.' or an exponent keeps it a real when read back, and
     * the exponent loses its '+' and leading zeros ("1e20", "1e-7"). */
    if (!strchr(buf, '.') && !strchr(buf, 'e')) {
        size_t n = strlen(buf);
        memcpy(buf + n, ".0", 3);
    }
    char *e = strchr(buf, 'e');
    if (e) {
        char *start = e + 1;
        if (*start == '+')
            memmove(start, start + 1, strlen(start));
        if (*start == '-')
            start++;
        char *digit = start;
        while (*digit == '0' && digit[1])
            digit++;
        memmove(start, digit, strlen(digit) + 1);
    }
    snprintf(out, size, "%s", buf);
    return out;
}

/* A string as jansson escapes it by default: '"', '\\' and the C0
 * controls; UTF-8 as it is (jansson checked it when the string was made). */
static void put_string(FILE *out, const char *s, size_t len)
{
    fputc('"', out);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (c < 0x20)
                fprintf(out, "\\u%04X", c);
            else
                fputc(c, out);
        }
    }
    fputc('"', out);
}

/* A newline and the indent of `depth` (pretty), nothing (compact). */
static void put_break(FILE *out, tool_json_style style, int depth)
{
    if (style == TOOL_JSON_COMPACT)
        return;
    fputc('\n', out);
    for (int i = 0; i < depth; i++)
        fputs("  ", out);
}

static void put_value(FILE *out, json_t *v, tool_json_style style, int depth);

static void put_object(FILE *out, json_t *v, tool_json_style style, int depth)
{
    const char *key;
    json_t *item;
    int first = 1;
    fputc('{', out);
    json_object_foreach(v, key, item)
    {
        if (!first)
            fputc(',', out);
        first = 0;
        put_break(out, style, depth + 1);
        put_string(out, key, strlen(key));
        fputs(style == TOOL_JSON_COMPACT ? ":" : ": ", out);
        put_value(out, item, style, depth + 1);
    }
    if (!first)
        put_break(out, style, depth);
    fputc('}', out);
}

static void put_array(FILE *out, json_t *v, tool_json_style style, int depth)
{
    size_t n = json_array_size(v);
    fputc('[', out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', out);
        put_break(out, style, depth + 1);
        put_value(out, json_array_get(v, i), style, depth + 1);
    }
    if (n)
        put_break(out, style, depth);
    fputc(']', out);
}

static void put_value(FILE *out, json_t *v, tool_json_style style, int depth)
{
    char num[40];
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(out, v, style, depth);
        break;
    case JSON_ARRAY:
        put_array(out, v, style, depth);
        break;
    case JSON_STRING:
        put_string(out, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        fputs(tool_json_format_real(num, sizeof num, json_real_value(v)), out);
        break;
    case JSON_TRUE:
        fputs("true", out);
        break;
    case JSON_FALSE:
        fputs("false", out);
        break;
    default:
        fputs("null", out);
    }
}

int tool_json_write(FILE *out, json_t *v, tool_json_style style)
{
    put_value(out, v, style, 0);
    fputc('\n', out);
    return ferror(out) ? -1 : 0;
}

void tool_json_print(FILE *out, json_t *o)
{
    tool_json_write(out, o, TOOL_JSON_PRETTY);
    json_decref(o);
}

json_t *tool_json_text(const char *s)
{
    if (!s)
        s = "";
    json_t *j = json_string(s);
    if (j)
        return j;
    size_t size = TOOL_CLEAN_SIZE(strlen(s));
    char *buf = malloc(size);
    j = buf ? json_string(tool_clean(s, buf, size)) : NULL;
    free(buf);
    return j ? j : json_null();
}
