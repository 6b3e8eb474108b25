/*
 * triton_ttir.c - a Triton kernel's launch facts from its group's text
 * (see triton_ttir.h): the TTIR's parameter list, the block sizes that
 * Triton folded into constants, and the metadata's launch fields.
 *
 * The TTIR is MLIR text; this is a reading of the parts Triton 3.x writes
 * the same way every time (`tt.func public @name(%p: type {attrs}
 * loc(...), ...)`, `%v = tt.get_program_id x : i32`, `arith.muli %v, %c`,
 * `%c = arith.constant N : i32`), not an MLIR parser.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "cache/foreign/triton_ttir.h"

static const char k_ttir_hint[] =
    "the group's .ttir is Triton's own output; a group Triton wrote whole reads, so compile the "
    "kernel again (run the model) or name another group";

/* The end of the parameter list that opens at p (just after '('): the ')'
 * at depth 0, skipping quoted strings; NULL when it never closes. */
static const char *params_end(const char *p)
{
    int depth = 0, quoted = 0;
    for (; *p; p++) {
        if (quoted) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                quoted = 0;
        } else if (*p == '"') {
            quoted = 1;
        } else if (*p == '(' || *p == '{' || *p == '<' || *p == '[') {
            depth++;
        } else if (*p == ')' || *p == '}' || *p == '>' || *p == ']') {
            if (depth == 0)
                return *p == ')' ? p : NULL;
            depth--;
        }
    }
    return NULL;
}

/* The next parameter [p, end) ends at a ',' at depth 0 or at end. */
static const char *param_next(const char *p, const char *end)
{
    int depth = 0, quoted = 0;
    for (; p < end; p++) {
        if (quoted) {
            if (*p == '\\' && p + 1 < end)
                p++;
            else if (*p == '"')
                quoted = 0;
        } else if (*p == '"') {
            quoted = 1;
        } else if (strchr("({<[", *p)) {
            depth++;
        } else if (strchr(")}>]", *p)) {
            depth--;
        } else if (*p == ',' && depth == 0) {
            return p;
        }
    }
    return end;
}

/* One "%name: type {attrs} loc(...)" into *out; 0 or -1. */
static int param_read(const char *p, const char *end, vyre__ttir_param *out)
{
    while (p < end && isspace((unsigned char)*p))
        p++;
    if (p >= end || *p != '%')
        return -1;
    const char *name = ++p;
    while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
        p++;
    size_t nlen = (size_t)(p - name);
    if (!nlen || nlen >= sizeof out->name || p >= end || *p != ':')
        return -1;
    memcpy(out->name, name, nlen);
    out->name[nlen] = '\0';
    for (p++; p < end && *p == ' '; p++)
        ;
    static const char ptr[] = "!tt.ptr<";
    out->is_ptr = (size_t)(end - p) > sizeof ptr - 1 && !strncmp(p, ptr, sizeof ptr - 1);
    if (out->is_ptr)
        p += sizeof ptr - 1;
    const char *t = p;
    while (p < end && !isspace((unsigned char)*p) && *p != '{' && *p != ',' &&
           (!out->is_ptr || *p != '>'))
        p++;
    size_t tlen = (size_t)(p - t);
    if (!tlen || tlen >= sizeof out->type)
        return -1;
    memcpy(out->type, t, tlen);
    out->type[tlen] = '\0';
    return 0;
}

/* The SSA value a line `%v = tt.get_program_id AXIS` defines, into v. */
static int program_id_value(const char *text, char axis, char *v, size_t size)
{
    char pat[32];
    snprintf(pat, sizeof pat, "= tt.get_program_id %c ", axis);
    const char *at = strstr(text, pat);
    if (!at)
        return -1;
    const char *s = at;
    while (s > text && s[-1] == ' ')
        s--;
    const char *e = s;
    while (s > text && (isalnum((unsigned char)s[-1]) || s[-1] == '_' || s[-1] == '%'))
        s--;
    if (*s != '%' || (size_t)(e - s) >= size)
        return -1;
    memcpy(v, s, (size_t)(e - s));
    v[e - s] = '\0';
    return 0;
}

/* Whether [p, p+len) is the whole SSA value v (not a prefix of %v_0). */
static int is_value(const char *p, const char *v)
{
    size_t len = strlen(v);
    return !strncmp(p, v, len) && !isalnum((unsigned char)p[len]) && p[len] != '_';
}

/* The i32 constant c is defined as (`%c = arith.constant N : i32`), or -1. */
static int64_t constant_of(const char *text, const char *c)
{
    for (const char *p = strstr(text, c); p; p = strstr(p + 1, c)) {
        if (!is_value(p, c))
            continue;
        const char *q = p + strlen(c);
        static const char def[] = " = arith.constant ";
        if (strncmp(q, def, sizeof def - 1) != 0)
            continue;
        q += sizeof def - 1;
        char *end = NULL;
        long long n = strtoll(q, &end, 10);
        if (end != q && !strncmp(end, " : i32", 6) && n > 0)
            return n;
    }
    return -1;
}

/* Whether the line holding p defines `<v>_<digits> = `: TorchInductor's
 * `xoffset = tl.program_id(0) * XBLOCK` rebinds the program id's own name. */
static int defines_rebinding(const char *text, const char *p, const char *v)
{
    const char *s = p;
    while (s > text && s[-1] != '\n')
        s--;
    s += strspn(s, " ");
    size_t vl = strlen(v);
    if (strncmp(s, v, vl) != 0 || s[vl] != '_')
        return 0;
    size_t d = strspn(s + vl + 1, "0123456789");
    return d > 0 && !strncmp(s + vl + 1 + d, " = ", 3);
}

/* Whether v is TorchInductor's name for a program id (%xoffset, ...). */
static int inductor_offset(const char *v)
{
    return strlen(v) == 8 && strchr("xyz", v[1]) && !strcmp(v + 2, "offset");
}

/*
 * The block of program-id axis `axis` (see vyre__ttir.block): the constant
 * of a multiply of the program id. With TorchInductor's naming only the
 * multiply that rebinds %xoffset counts: where XBLOCK is 1 there is none,
 * and %xoffset multiplied by a constant is an index (`8192*x0` in a looped
 * reduction), not the block. Other naming takes the first constant multiply.
 */
static int64_t axis_block(const char *text, char axis)
{
    char v[VYRE__TTIR_NAME_MAX + 2];
    if (program_id_value(text, axis, v, sizeof v))
        return 0;
    int inductor = inductor_offset(v);
    static const char muli[] = "arith.muli ";
    for (const char *p = strstr(text, muli); p; p = strstr(p + 1, muli)) {
        const char *a = p + sizeof muli - 1, *comma = strchr(a, ',');
        if (!comma || comma[1] != ' ')
            continue;
        const char *b = comma + 2;
        char other[VYRE__TTIR_NAME_MAX + 2];
        const char *o = is_value(a, v) ? b : is_value(b, v) ? a : NULL;
        if (!o || (inductor && !defines_rebinding(text, p, v)))
            continue;
        size_t n = strspn(o + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (*o != '%' || n + 2 > sizeof other)
            continue;
        memcpy(other, o, n + 1);
        other[n + 1] = '\0';
        int64_t c = constant_of(text, other);
        if (c > 0)
            return c;
    }
    return 1;
}

int vyre__ttir_parse(const char *text, const char *name, const char *origin, vyre__ttir *out,
                     vyre_error *err)
{
    memset(out, 0, sizeof *out);
    char head[VYRE__TTIR_NAME_MAX * 4 + 32];
    int hn = snprintf(head, sizeof head, "tt.func public @%s(", name);
    const char *at = hn > 0 && (size_t)hn < sizeof head ? strstr(text, head) : NULL;
    if (!at)
        return vyre__fail(err, VYRE_EINVAL, k_ttir_hint, "'%s' has no function '@%s'", origin,
                          name);
    const char *p = at + hn, *end = params_end(p);
    if (!end)
        return vyre__fail(err, VYRE_EINVAL, k_ttir_hint,
                          "'%s': the parameter list of '@%s' does not close", origin, name);
    while (p < end) {
        const char *next = param_next(p, end);
        if (out->nparams == VYRE__TTIR_PARAMS_MAX)
            return vyre__fail(err, VYRE_EINVAL, NULL, "'%s': '@%s' has more than %d parameters",
                              origin, name, VYRE__TTIR_PARAMS_MAX);
        if (param_read(p, next, &out->params[out->nparams]))
            return vyre__fail(err, VYRE_EINVAL, k_ttir_hint,
                              "'%s': parameter %zu of '@%s' does not read as '%%name: type'",
                              origin, out->nparams + 1, name);
        out->nparams++;
        p = next < end ? next + 1 : end;
    }
    for (int i = 0; i < 3; i++)
        out->block[i] = axis_block(text, "xyz"[i]);
    return VYRE_OK;
}

static int64_t int_field(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

int vyre__triton_launch_meta_parse(const char *text, const char *origin,
                                   vyre__triton_launch_meta *out, vyre_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!json_is_object(root)) {
        json_decref(root);
        return vyre__fail(err, VYRE_EINVAL, k_ttir_hint, "'%s' is not a JSON object", origin);
    }
    out->num_warps = int_field(root, "num_warps");
    out->num_ctas = int_field(root, "num_ctas");
    out->shared = int_field(root, "shared");
    out->global_scratch_size = int_field(root, "global_scratch_size");
    out->profile_scratch_size = int_field(root, "profile_scratch_size");
    out->cooperative = json_is_true(json_object_get(root, "launch_cooperative_grid"));
    out->pdl = json_is_true(json_object_get(root, "launch_pdl"));
    out->scratch_ptrs = (json_object_get(root, "global_scratch_size") != NULL) +
                        (json_object_get(root, "profile_scratch_size") != NULL);
    json_t *target = json_object_get(root, "target");
    out->warp_size = int_field(target, "warp_size");
    if (!out->warp_size)
        out->warp_size = int_field(root, "warp_size");
    json_t *arch = json_object_get(target, "arch");
    if (json_is_integer(arch))
        snprintf(out->arch, sizeof out->arch, "%lld", (long long)json_integer_value(arch));
    else if (json_is_string(arch))
        vyre__strlcpy(out->arch, json_string_value(arch), sizeof out->arch);
    json_decref(root);
    if (out->num_warps <= 0 || out->warp_size <= 0 || out->shared < 0)
        return vyre__fail(err, VYRE_EINVAL, k_ttir_hint,
                          "'%s' has no usable num_warps, warp_size or shared", origin);
    return VYRE_OK;
}
