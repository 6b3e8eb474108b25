/*
 * sweep_binding.c - a user sweep's binding (see bench/sweep_binding.h): the
 * spec's launch fields read and checked once, then evaluated per point;
 * and the host side of buffer fills (f16/bf16 conversion included).
 *
 * Compatibility: a spec without "version" is version 1, today's: "grid"
 * is an axis or a number of threads in x (blocks = ceil(grid / block)),
 * "block" an axis or a number (default: the PTX's .reqntid/.maxntid, else
 * 256). "version": 2 makes "grid" the blocks (Triton's programs), an
 * expression or up to three of them. Everything else (types, fills,
 * seeds, null pointers, expressions for counts and scalars, "shared",
 * "bytes", "flops") is accepted by both versions, so a version 1 spec
 * means what it meant.
 */
#include "bench/axes_internal.h"
#include "bench/sweep_binding.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "base/jsonutil.h"

static const char *const g_elem_names[] = {"f32", "f16", "bf16", "f64", "i8", "i32", "i64", "u8"};
static const size_t g_elem_sizes[] = {4, 2, 2, 8, 1, 4, 8, 1};
static const char *const g_fill_names[] = {"zeros", "ones", "iota", "random"};

size_t vyre__elem_size(vyre__elem t)
{
    return (unsigned)t < 8 ? g_elem_sizes[t] : 0;
}

static const char g_args_hint[] =
    "a parameter is {\"buffer\": COUNT, \"type\": \"bf16\", \"fill\": \"random\", \"seed\": 1}, "
    "{\"int\": EXPR, \"type\": \"i64\"}, {\"float\": X, \"type\": \"f64\"} or {\"null\": true}";

/* Message context: origin and JSON path. */
typedef struct where {
    const char *origin;
    char path[64];
} where;

/* An expression from a JSON number (whole) or string, into *out. */
static int read_expr(const where *w, json_t *v, const vyre_axes *axes, unsigned char *used,
                     vyre__expr **out, vyre_error *err)
{
    char text[64];
    const char *src;
    if (json_is_integer(v)) {
        snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
        src = text;
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != floor(d) || fabs(d) > 9.0e18)
            return vyre__fail(err, VYRE_EINVAL, "write a whole number or an expression",
                              "'%s': %s: %g is not a whole number", w->origin, w->path, d);
        snprintf(text, sizeof text, "%.0f", d);
        src = text;
    } else if (json_is_string(v)) {
        src = json_string_value(v);
    } else {
        return vyre__fail(err, VYRE_EINVAL,
                          "write a number, an axis name or an expression such as ceil(N/1024)",
                          "'%s': %s must be a number or an expression string, not %s", w->origin,
                          w->path, vyre__json_kind(v));
    }
    if (src[0] == '-' && json_is_number(v))
        return vyre__fail(err, VYRE_EINVAL, "counts and sizes are 0 or more",
                          "'%s': %s is negative", w->origin, w->path);
    vyre_error inner;
    vyre_error_clear(&inner);
    int rc = vyre__expr_parse(src, axes, out, NULL, &inner);
    if (rc)
        return vyre__fail(err, rc, inner.hint, "'%s': %s: %s", w->origin, w->path, inner.message);
    vyre__expr_uses(*out, used);
    return VYRE_OK;
}

/* Checks the keys of an object against a list. */
static int only_keys(const where *w, json_t *o, const char *const *keys, const char *list,
                     vyre_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k) != 0)
            i++;
        if (!keys[i])
            return vyre__fail(err, VYRE_EINVAL, g_args_hint, "'%s': %s.%s: unknown key (%s)",
                              w->origin, w->path, k, list);
    }
    return VYRE_OK;
}

static int read_type(const where *w, json_t *a, const char *const *allowed, const char *list,
                     vyre__elem deflt, vyre__elem *out, vyre_error *err)
{
    json_t *t = json_object_get(a, "type");
    *out = deflt;
    if (!t)
        return VYRE_OK;
    if (json_is_string(t))
        for (size_t i = 0; allowed[i]; i++)
            if (strcmp(json_string_value(t), allowed[i]) == 0) {
                for (unsigned k = 0; k < 8; k++)
                    if (strcmp(g_elem_names[k], allowed[i]) == 0)
                        *out = (vyre__elem)k;
                return VYRE_OK;
            }
    char shown[64];
    snprintf(shown, sizeof shown, "%s",
             json_is_string(t) ? json_string_value(t) : vyre__json_kind(t));
    return vyre__fail(err, VYRE_EINVAL, g_args_hint, "'%s': %s.type: '%s' is not one of %s",
                      w->origin, w->path, shown, list);
}

static int read_arg(const where *w, json_t *a, size_t index, const vyre_axes *axes,
                    unsigned char *used, vyre__sweep_arg *x, vyre_error *err)
{
    static const char *const buf_keys[] = {"buffer", "type", "fill", "seed", "in", NULL};
    static const char *const int_keys[] = {"int", "type", NULL};
    static const char *const float_keys[] = {"float", "type", NULL};
    static const char *const null_keys[] = {"null", NULL};
    static const char *const buf_types[] = {"f32", "f16", "bf16", "f64", "i8",
                                            "i32", "i64", "u8",   NULL};
    static const char *const int_types[] = {"i32", "i64", NULL};
    static const char *const float_types[] = {"f32", "f64", NULL};
    memset(x, 0, sizeof *x);
    x->faxis = -1;
    json_t *v;
    where sub = *w;
    int rc;
    if (!json_is_object(a))
        return vyre__fail(err, VYRE_EINVAL, g_args_hint, "'%s': %s must be an object, not %s",
                          w->origin, w->path, vyre__json_kind(a));
    if ((v = json_object_get(a, "buffer"))) {
        x->kind = VYRE__ARG_BUFFER;
        if ((rc = only_keys(w, a, buf_keys, "buffer, type, fill, seed, in", err)) ||
            (rc = read_type(w, a, buf_types, "f32, f16, bf16, f64, i8, i32, i64, u8", VYRE__F32,
                            &x->type, err)))
            return rc;
        /* bounded: a JSON path the code builds */
        snprintf(sub.path, sizeof sub.path, "%.40s.buffer", w->path);
        if ((rc = read_expr(&sub, v, axes, used, &x->value, err)))
            return rc;
        json_t *in = json_object_get(a, "in"), *fill = json_object_get(a, "fill"),
               *seed = json_object_get(a, "seed");
        if (in && !json_is_boolean(in))
            return vyre__fail(err, VYRE_EINVAL, "write \"in\": true (filled with ones)",
                              "'%s': %s.in must be true or false, not %s", w->origin, w->path,
                              vyre__json_kind(in));
        x->fill = json_is_true(in) ? VYRE__FILL_ONES : VYRE__FILL_ZEROS;
        if (fill) {
            unsigned k = 0;
            while (k < 4 &&
                   !(json_is_string(fill) && strcmp(json_string_value(fill), g_fill_names[k]) == 0))
                k++;
            if (k == 4)
                return vyre__fail(err, VYRE_EINVAL, g_args_hint,
                                  "'%s': %s.fill: '%s' is not one of zeros, ones, iota, random",
                                  w->origin, w->path,
                                  json_is_string(fill) ? json_string_value(fill)
                                                       : vyre__json_kind(fill));
            x->fill = (vyre__fill)k;
        }
        x->seed = index + 1;
        if (seed) {
            if (x->fill != VYRE__FILL_RANDOM)
                return vyre__fail(err, VYRE_EINVAL, "add \"fill\": \"random\", or drop the seed",
                                  "'%s': %s.seed: only a random fill takes a seed", w->origin,
                                  w->path);
            if (!json_is_integer(seed) || json_integer_value(seed) < 0)
                return vyre__fail(err, VYRE_EINVAL, "write a seed such as 1",
                                  "'%s': %s.seed must be a whole number >= 0", w->origin, w->path);
            x->seed = (uint64_t)json_integer_value(seed);
        }
        return VYRE_OK;
    }
    if ((v = json_object_get(a, "int"))) {
        x->kind = VYRE__ARG_INT;
        if ((rc = only_keys(w, a, int_keys, "int, type", err)) ||
            (rc = read_type(w, a, int_types, "i32, i64", VYRE__I32, &x->type, err)))
            return rc;
        /* bounded: a JSON path the code builds */
        snprintf(sub.path, sizeof sub.path, "%.40s.int", w->path);
        if (json_is_integer(v)) {
            /* A negative constant is a fine scalar. */
            char text[32];
            snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
            vyre_error inner;
            rc = vyre__expr_parse(text, axes, &x->value, NULL, &inner);
            return rc ? vyre__fail(err, rc, inner.hint, "'%s': %s: %s", w->origin, sub.path,
                                   inner.message)
                      : VYRE_OK;
        }
        return read_expr(&sub, v, axes, used, &x->value, err);
    }
    if ((v = json_object_get(a, "float"))) {
        x->kind = VYRE__ARG_FLOAT;
        if ((rc = only_keys(w, a, float_keys, "float, type", err)) ||
            (rc = read_type(w, a, float_types, "f32, f64", VYRE__F32, &x->type, err)))
            return rc;
        /* bounded: a JSON path the code builds */
        snprintf(sub.path, sizeof sub.path, "%.40s.float", w->path);
        if (json_is_number(v)) {
            x->fconst = json_number_value(v);
            return VYRE_OK;
        }
        if (json_is_string(v) && (x->faxis = vyre__axes_find(axes, json_string_value(v))) >= 0) {
            used[x->faxis] = 1;
            return VYRE_OK;
        }
        if (json_is_string(v)) { /* "1.5", "1e-5": a constant written as text */
            const char *t = json_string_value(v);
            char *end = NULL;
            double d = strtod(t, &end);
            if (end != t && *end == '\0' && isfinite(d)) {
                x->fconst = d;
                return VYRE_OK;
            }
        }
        return read_expr(&sub, v, axes, used, &x->value, err);
    }
    if ((v = json_object_get(a, "null"))) {
        x->kind = VYRE__ARG_NULL;
        if ((rc = only_keys(w, a, null_keys, "null", err)))
            return rc;
        if (!json_is_true(v))
            return vyre__fail(err, VYRE_EINVAL, "write {\"null\": true} for a null pointer",
                              "'%s': %s.null must be true", w->origin, w->path);
        return VYRE_OK;
    }
    return vyre__fail(err, VYRE_EINVAL, g_args_hint,
                      "'%s': %s: unknown parameter kind (buffer, int, float, null)", w->origin,
                      w->path);
}

/* "grid"/"block": an expression or an array of 1..3 of them. */
static int read_dims(const where *w, json_t *v, const vyre_axes *axes, unsigned char *used,
                     vyre__expr **out, vyre_error *err)
{
    if (!json_is_array(v)) {
        where sub = *w;
        return read_expr(&sub, v, axes, used, &out[0], err);
    }
    size_t n = json_array_size(v);
    if (n < 1 || n > 3)
        return vyre__fail(err, VYRE_EINVAL, "write EXPR or [X, Y, Z] (one to three dimensions)",
                          "'%s': %s must have one to three dimensions, not %zu", w->origin, w->path,
                          n);
    for (size_t i = 0; i < n; i++) {
        where sub = *w;
        /* bounded: a JSON path the code builds */
        snprintf(sub.path, sizeof sub.path, "%.40s[%zu]", w->path, i);
        int rc = read_expr(&sub, json_array_get(v, i), axes, used, &out[i], err);
        if (rc)
            return rc;
    }
    return VYRE_OK;
}

static int default_binding(const vyre_bench_sweep *sw, vyre__sweep_binding *b, unsigned char *used,
                           vyre_error *err)
{
    const vyre_axes *axes = sw->axes;
    int n = vyre__axes_find(axes, "N");
    if (n < 0)
        return vyre__fail(err, VYRE_EINVAL, "add -a N=VALUES (elements), e.g. -a N=1M:64M:x4",
                          "the sweep has no axis N: the default binding (float *out, const "
                          "float *in, int N) needs it");
    int rc = VYRE_OK;
    b->is_default = 1;
    b->nargs = 3;
    for (size_t i = 0; !rc && i < 3; i++) {
        b->args[i].kind = i < 2 ? VYRE__ARG_BUFFER : VYRE__ARG_INT;
        b->args[i].type = i < 2 ? VYRE__F32 : VYRE__I32;
        b->args[i].fill = i == 1 ? VYRE__FILL_ONES : VYRE__FILL_ZEROS;
        b->args[i].faxis = -1;
        rc = vyre__expr_parse("N", axes, &b->args[i].value, NULL, err);
    }
    if (!rc)
        rc = vyre__expr_parse("N", axes, &b->grid[0], NULL, err);
    b->grid_threads = 1;
    if (!rc && vyre__axes_find(axes, "BLOCK") >= 0) {
        rc = vyre__expr_parse("BLOCK", axes, &b->block[0], NULL, err);
        b->block_given = 1;
        used[vyre__axes_find(axes, "BLOCK")] = 1;
    }
    used[n] = 1;
    return rc;
}

/* "cooperative" and "pdl": how the kernel is launched (true or false). */
static int read_launch(json_t *spec, vyre__sweep_binding *b, vyre_error *err)
{
    static const char *const keys[] = {"cooperative", "pdl"};
    int *dst[] = {&b->cooperative, &b->pdl};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(spec, keys[i]);
        if (v && !json_is_boolean(v))
            return vyre__fail(err, VYRE_EINVAL,
                              i ? "write \"pdl\": true for a programmatic dependent launch "
                                  "(Triton's launch_pdl), or leave it out"
                                : "write \"cooperative\": true for a cooperative grid (Triton's "
                                  "launch_cooperative_grid), or leave it out",
                              "'%s': $.%s must be true or false, not %s", b->origin, keys[i],
                              vyre__json_kind(v));
        *dst[i] = json_is_true(v);
    }
    return VYRE_OK;
}

static int read_spec(const vyre_bench_sweep *sw, json_t *spec, vyre__sweep_binding *b,
                     unsigned char *used, vyre_error *err)
{
    static const char *const top_keys[] = {
        "kernel", "entry",   "axes",        "args", "grid", "block",       "shared",  "bytes",
        "flops",  "version", "cooperative", "pdl",  "name", "description", "comment", NULL};
    const vyre_axes *axes = sw->axes;
    where w = {b->origin, "$"};
    const char *k;
    json_t *v;
    json_object_foreach(spec, k, v)
    {
        size_t i = 0;
        while (top_keys[i] && strcmp(top_keys[i], k) != 0)
            i++;
        if (!top_keys[i] && k[0] != '_')
            return vyre__fail(err, VYRE_EINVAL,
                              "the keys are kernel, entry, axes, args, grid, block, shared, "
                              "bytes, flops, cooperative, pdl, version (and name, description, "
                              "comment, _*)",
                              "'%s': $.%s: unknown key", b->origin, k);
    }
    json_t *ver = json_object_get(spec, "version");
    b->version = 1;
    if (ver) {
        if (!json_is_integer(ver) || json_integer_value(ver) < 1 || json_integer_value(ver) > 2)
            return vyre__fail(err, VYRE_EINVAL,
                              "write \"version\": 2 for grids in blocks (programs), or leave it "
                              "out for today's specs",
                              "'%s': $.version must be 1 or 2", b->origin);
        b->version = (int)json_integer_value(ver);
    }
    json_t *args = json_object_get(spec, "args");
    if (!json_is_array(args) || json_array_size(args) > VYRE__SWEEP_ARGS_MAX)
        return vyre__fail(err, VYRE_EINVAL, g_args_hint,
                          "'%s': $.args must be an array of at most %d parameters", b->origin,
                          VYRE__SWEEP_ARGS_MAX);
    size_t i;
    json_t *a;
    int rc;
    json_array_foreach(args, i, a)
    {
        snprintf(w.path, sizeof w.path, "$.args[%zu]", i);
        if ((rc = read_arg(&w, a, i, axes, used, &b->args[b->nargs], err)))
            return rc;
        b->nargs++;
    }
    json_t *g = json_object_get(spec, "grid");
    if (!g)
        return vyre__fail(err, VYRE_EINVAL,
                          b->version == 2 ? "add \"grid\": EXPR (blocks, e.g. \"ceil(N/1024)\") "
                                            "or [X, Y, Z]"
                                          : "add \"grid\": \"N\" (an axis: threads in x), or "
                                            "\"version\": 2 and a grid in blocks",
                          "'%s': $.grid is missing", b->origin);
    snprintf(w.path, sizeof w.path, "$.grid");
    if (b->version == 1) {
        /* Today's meaning: an axis or a number of threads. */
        int is_ref = json_is_number(g) ||
                     (json_is_string(g) && vyre__axes_find(axes, json_string_value(g)) >= 0);
        if (!is_ref)
            return vyre__fail(err, VYRE_EINVAL,
                              "add \"version\": 2 to the spec: there \"grid\" counts blocks "
                              "(programs) and takes expressions and [X, Y, Z]",
                              "'%s': $.grid: a version 1 spec's grid is an axis or a number of "
                              "threads, not %s%s%s",
                              b->origin, json_is_string(g) ? "'" : "",
                              json_is_string(g) ? json_string_value(g) : vyre__json_kind(g),
                              json_is_string(g) ? "'" : "");
        b->grid_threads = 1;
    }
    if ((rc = read_dims(&w, g, axes, used, b->grid, err)))
        return rc;
    json_t *bl = json_object_get(spec, "block");
    if (bl) {
        snprintf(w.path, sizeof w.path, "$.block");
        if (b->version == 1 && json_is_array(bl))
            return vyre__fail(err, VYRE_EINVAL, "add \"version\": 2 for a block in 3-D",
                              "'%s': $.block: a version 1 spec's block is one number or axis",
                              b->origin);
        if ((rc = read_dims(&w, bl, axes, used, b->block, err)))
            return rc;
        b->block_given = 1;
    }
    static const char *const one[] = {"shared", "bytes", "flops"};
    vyre__expr **dst[] = {&b->shared, &b->bytes, &b->flops};
    for (size_t j = 0; j < 3; j++)
        if ((v = json_object_get(spec, one[j]))) {
            snprintf(w.path, sizeof w.path, "$.%s", one[j]);
            if ((rc = read_expr(&w, v, axes, used, dst[j], err)))
                return rc;
        }
    return read_launch(spec, b, err);
}

void vyre__sweep_binding_release(vyre__sweep_binding *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < VYRE__SWEEP_ARGS_MAX; i++)
        vyre__expr_free(b->args[i].value);
    for (size_t d = 0; d < 3; d++) {
        vyre__expr_free(b->grid[d]);
        vyre__expr_free(b->block[d]);
    }
    vyre__expr_free(b->shared);
    vyre__expr_free(b->bytes);
    vyre__expr_free(b->flops);
    memset(b, 0, sizeof *b);
}

int vyre__sweep_binding_make(const vyre_bench_sweep *sw, vyre__sweep_binding *b, vyre_error *err)
{
    memset(b, 0, sizeof *b);
    if (!sw || !sw->axes)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__sweep_binding_make: NULL argument");
    vyre__strlcpy(b->origin, sw->spec_origin ? sw->spec_origin : "spec", sizeof b->origin);
    b->version = 1;
    unsigned char used[VYRE_AXES_MAX];
    memset(used, 0, sizeof used);
    json_t *spec = NULL;
    int rc = VYRE_OK;
    if (sw->spec_json) {
        spec = json_loads(sw->spec_json, 0, NULL);
        if (!json_is_object(spec))
            rc = vyre__fail(err, VYRE_EINVAL, NULL, "'%s': $ must be an object", b->origin);
    }
    if (!rc && (!spec || !json_object_get(spec, "args")))
        rc = default_binding(sw, b, used, err);
    else if (!rc)
        rc = read_spec(sw, spec, b, used, err);
    json_decref(spec);
    for (size_t a = 0; !rc && a < sw->axes->n; a++)
        if (!used[a])
            rc = vyre__fail(err, VYRE_EINVAL,
                            sw->spec_json ? "bind it in the spec's \"args\", \"grid\", \"block\", "
                                            "\"shared\", \"bytes\" or \"flops\", or drop it"
                                          : "the default binding takes N and BLOCK; bind other "
                                            "parameters through a spec's \"args\" (--spec)",
                            "unknown parameter '%s'", sw->axes->axis[a].name);
    if (rc)
        vyre__sweep_binding_release(b);
    return rc;
}

/* ---- evaluation at a point ---------------------------------------------- */

typedef struct pointctx {
    const vyre__sweep_binding *b;
    const vyre_axes *axes;
    const size_t *coords;
    char at[300]; /* " at N=1024 M=64", "" without axes */
    vyre_error *err;
} pointctx;

static int eval_rat(pointctx *pc, const char *path, const vyre__expr *e, vyre__rat *r)
{
    vyre_error inner;
    vyre_error_clear(&inner);
    int rc = vyre__expr_eval(e, pc->axes, pc->coords, r, &inner);
    if (rc)
        return vyre__fail(pc->err, rc, inner.hint, "'%s': %s%s: %s", pc->b->origin, path, pc->at,
                          inner.message);
    return VYRE_OK;
}

/* A whole value in [lo, hi]. */
static int eval_int(pointctx *pc, const char *path, const vyre__expr *e, int64_t lo, int64_t hi,
                    int64_t *out)
{
    vyre__rat r;
    int rc = eval_rat(pc, path, e, &r);
    if (rc)
        return rc;
    if (r.den != 1)
        return vyre__fail(pc->err, VYRE_EINVAL,
                          "round it: ceil(...) for a count of blocks that covers everything",
                          "'%s': %s%s: '%s' is %lld/%lld, not a whole number", pc->b->origin, path,
                          pc->at, vyre__expr_text(e), (long long)r.num, (long long)r.den);
    if (r.num < lo || r.num > hi)
        return vyre__fail(pc->err, VYRE_ERANGE, "change the axis values or the expression",
                          "'%s': %s%s: '%s' is %lld, outside %lld..%lld", pc->b->origin, path,
                          pc->at, vyre__expr_text(e), (long long)r.num, (long long)lo,
                          (long long)hi);
    *out = r.num;
    return VYRE_OK;
}

static const char *ptx_dims(const unsigned d[3], char *buf, size_t size)
{
    snprintf(buf, size, "%u, %u, %u", d[0], d[1], d[2]);
    return buf;
}

/* The parameters at a point, checked against the PTX's. */
static int eval_args(pointctx *pc, const vyre__ptx_info *ptx, vyre__sweep_launch *out)
{
    const vyre__sweep_binding *b = pc->b;
    vyre_error *err = pc->err;
    int rc = VYRE_OK;
    char path[64];
    const vyre_axes *axes = pc->axes;
    const size_t *coords = pc->coords;
    if (ptx && ptx->found && ptx->nparams != b->nargs && b->is_default)
        return vyre__fail(err, VYRE_EINVAL,
                          "write a spec whose \"args\" list every parameter in order (--spec; "
                          "see examples/bench/)",
                          "the kernel takes %zu parameter%s; the default binding passes 3 (float "
                          "*out, const float *in, int N)",
                          ptx->nparams, ptx->nparams == 1 ? "" : "s");
    if (ptx && ptx->found && ptx->nparams != b->nargs)
        return vyre__fail(err, VYRE_EINVAL,
                          "list every parameter in order; Triton kernels end with two scratch "
                          "pointers: {\"null\": true}, {\"null\": true}",
                          "'%s': $.args: the kernel takes %zu parameter%s, the spec gives %zu",
                          b->origin, ptx->nparams, ptx->nparams == 1 ? "" : "s", b->nargs);
    for (size_t i = 0; !rc && i < b->nargs; i++) {
        const vyre__sweep_arg *a = &b->args[i];
        snprintf(path, sizeof path, "$.args[%zu]", i);
        size_t psize =
            a->kind == VYRE__ARG_BUFFER || a->kind == VYRE__ARG_NULL ? 8 : vyre__elem_size(a->type);
        if (ptx && ptx->found && ptx->param_bytes[i] && ptx->param_bytes[i] != psize)
            return vyre__fail(err, VYRE_EINVAL,
                              "match the kernel's parameter: a pointer or i64/f64 is 8 bytes, "
                              "i32/f32 4",
                              "'%s': %s is %zu bytes, the kernel's parameter %zu is %u (%s)",
                              b->origin, path, psize, i, ptx->param_bytes[i],
                              ptx->param_type[i][0] ? ptx->param_type[i] : "?");
        int64_t iv = 0;
        switch (a->kind) {
        case VYRE__ARG_BUFFER: {
            snprintf(path, sizeof path, "$.args[%zu].buffer", i);
            if ((rc = eval_int(pc, path, a->value, 0, INT64_MAX / 8, &iv)))
                break;
            out->buf_elems[i] = (uint64_t)(iv > 1 ? iv : 1);
            out->memory_bytes += (double)out->buf_elems[i] * (double)vyre__elem_size(a->type);
            break;
        }
        case VYRE__ARG_INT:
            snprintf(path, sizeof path, "$.args[%zu].int", i);
            rc = eval_int(pc, path, a->value, a->type == VYRE__I32 ? INT32_MIN : INT64_MIN,
                          a->type == VYRE__I32 ? INT32_MAX : INT64_MAX, &out->ints[i]);
            break;
        case VYRE__ARG_FLOAT:
            if (a->faxis >= 0) {
                out->floats[i] = vyre__axes_value_f(axes, (size_t)a->faxis, coords[a->faxis]);
            } else if (a->value) {
                vyre__rat r;
                snprintf(path, sizeof path, "$.args[%zu].float", i);
                if (!(rc = eval_rat(pc, path, a->value, &r)))
                    out->floats[i] = (double)r.num / (double)r.den;
            } else {
                out->floats[i] = a->fconst;
            }
            break;
        case VYRE__ARG_NULL:
            break;
        }
    }
    return rc;
}

/* The block at a point: given, or the PTX's, within what the PTX allows. */
static int eval_block(pointctx *pc, const vyre__ptx_info *ptx, vyre__sweep_launch *out)
{
    const vyre__sweep_binding *b = pc->b;
    vyre_error *err = pc->err;
    int rc = VYRE_OK;
    char path[64];
    for (int d = 0; !rc && d < 3; d++) {
        int64_t v = 1;
        if (b->block_given && b->block[d]) {
            snprintf(path, sizeof path, b->block[1] || d ? "$.block[%d]" : "$.block", d);
            rc = eval_int(pc, path, b->block[d], 1, 1024, &v);
        } else if (!b->block_given) {
            if (ptx && ptx->reqntid[0])
                v = ptx->reqntid[d];
            else if (ptx && ptx->maxntid[0])
                v = ptx->maxntid[d];
            else if (b->version == 1)
                v = d == 0 ? 256 : 1;
            else
                return vyre__fail(err, VYRE_EINVAL,
                                  "add \"block\": THREADS (the kernel declares no .reqntid or "
                                  ".maxntid to take it from)",
                                  "'%s': $.block is missing", b->origin);
        }
        out->block[d] = (unsigned)v;
    }
    if (!rc && (uint64_t)out->block[0] * out->block[1] * out->block[2] > 1024)
        return vyre__fail(err, VYRE_ERANGE, "a block holds at most 1024 threads",
                          "'%s': $.block%s: %u x %u x %u threads", b->origin, pc->at, out->block[0],
                          out->block[1], out->block[2]);
    char d1[48], d2[48];
    if (!rc && ptx && b->block_given && ptx->reqntid[0] &&
        memcmp(out->block, ptx->reqntid, sizeof out->block) != 0)
        return vyre__fail(err, VYRE_EINVAL,
                          "leave \"block\" out to take it from the PTX, or regenerate the "
                          "kernel for that block",
                          "'%s': $.block%s is %s, the PTX requires .reqntid %s", b->origin, pc->at,
                          ptx_dims(out->block, d1, sizeof d1),
                          ptx_dims(ptx->reqntid, d2, sizeof d2));
    if (!rc && ptx && b->block_given && ptx->maxntid[0] &&
        (uint64_t)out->block[0] * out->block[1] * out->block[2] >
            (uint64_t)ptx->maxntid[0] * ptx->maxntid[1] * ptx->maxntid[2])
        return vyre__fail(err, VYRE_EINVAL, "leave \"block\" out to take it from the PTX",
                          "'%s': $.block%s is %s, above the PTX's .maxntid %s", b->origin, pc->at,
                          ptx_dims(out->block, d1, sizeof d1),
                          ptx_dims(ptx->maxntid, d2, sizeof d2));
    return rc;
}

/* The grid at a point, in blocks (a version 1 "grid" counts threads). */
static int eval_grid(pointctx *pc, vyre__sweep_launch *out)
{
    const vyre__sweep_binding *b = pc->b;
    vyre_error *err = pc->err;
    int rc = VYRE_OK;
    char path[64];
    for (int d = 0; !rc && d < 3; d++) {
        int64_t v = 1;
        if (b->grid[d]) {
            snprintf(path, sizeof path, b->grid[1] || d ? "$.grid[%d]" : "$.grid", d);
            if (b->grid_threads) {
                vyre__rat r;
                if ((rc = eval_rat(pc, path, b->grid[d], &r)))
                    break;
                double blocks = ceil((double)r.num / (double)r.den / out->block[0]);
                if (!(blocks >= 1 && blocks <= 2147483647.0))
                    return vyre__fail(
                        err, VYRE_ERANGE, "N must be at least 1; lower N or raise BLOCK",
                        "'%s': %s%s: %g threads in blocks of %u is no grid", b->origin, path,
                        pc->at, (double)r.num / (double)r.den, out->block[0]);
                v = (int64_t)blocks;
            } else {
                rc = eval_int(pc, path, b->grid[d], 1, d == 0 ? 2147483647 : 65535, &v);
            }
        }
        out->grid[d] = (unsigned)v;
    }
    return rc;
}

int vyre__sweep_binding_eval(const vyre__sweep_binding *b, const vyre_axes *axes,
                             const size_t *coords, const vyre__ptx_info *ptx, unsigned max_shared,
                             vyre__sweep_launch *out, vyre_error *err)
{
    memset(out, 0, sizeof *out);
    pointctx pc = {b, axes, coords, "", err};
    if (axes->n) {
        char pt[280];
        vyre__axes_format_point(axes, coords, pt, sizeof pt);
        snprintf(pc.at, sizeof pc.at, " at %s", pt);
    }
    int rc = eval_args(&pc, ptx, out);
    if (!rc)
        rc = eval_block(&pc, ptx, out);
    if (!rc)
        rc = eval_grid(&pc, out);
    int64_t sh = 0;
    if (!rc && b->shared)
        rc = eval_int(&pc, "$.shared", b->shared, 0, UINT32_MAX, &sh);
    if (!rc && max_shared && (uint64_t)sh > max_shared)
        return vyre__fail(err, VYRE_ERANGE, "lower the shared memory the kernel asks for",
                          "'%s': $.shared%s: %lld bytes, the device allows %u a block", b->origin,
                          pc.at, (long long)sh, max_shared);
    out->shared_bytes = (unsigned)sh;
    vyre__rat r;
    if (!rc && b->bytes && !(rc = eval_rat(&pc, "$.bytes", b->bytes, &r)))
        out->bytes = (double)r.num / (double)r.den;
    else if (!rc && !b->bytes)
        out->bytes = out->memory_bytes;
    if (!rc && b->flops && !(rc = eval_rat(&pc, "$.flops", b->flops, &r)))
        out->flops = (double)r.num / (double)r.den;
    if (!rc && (out->bytes < 0 || out->flops < 0))
        return vyre__fail(err, VYRE_ERANGE, "bytes and flops count what a launch does: >= 0",
                          "'%s': $.%s%s is negative", b->origin, out->bytes < 0 ? "bytes" : "flops",
                          pc.at);
    return rc;
}

/* ---- fills --------------------------------------------------------------- */

uint16_t vyre__f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    if (exp == 0xff) /* inf, nan (kept quiet) */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal or zero */
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        unsigned shift = (unsigned)(14 - e);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
        half++; /* may carry into the exponent, up to inf: correct */
    return (uint16_t)(sign | half);
}

uint16_t vyre__f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void vyre__fill_chunk(vyre__elem t, vyre__fill f, uint64_t seed, uint64_t first, void *dst,
                      size_t n)
{
    unsigned char *p = dst;
    size_t sz = vyre__elem_size(t);
    int is_float = t == VYRE__F32 || t == VYRE__F16 || t == VYRE__BF16 || t == VYRE__F64;
    uint64_t sseed = mix64(seed);
    for (size_t k = 0; k < n; k++, p += sz) {
        uint64_t idx = first + k;
        double dv = 0;
        uint64_t iv = 0;
        switch (f) {
        case VYRE__FILL_ZEROS:
            break;
        case VYRE__FILL_ONES:
            dv = 1;
            iv = 1;
            break;
        case VYRE__FILL_IOTA:
            dv = (double)idx;
            iv = idx;
            break;
        case VYRE__FILL_RANDOM: {
            uint64_t h = mix64(sseed ^ idx);
            dv = (double)(h >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
            iv = h & 127u;
            break;
        }
        }
        if (is_float) {
            if (t == VYRE__F64) {
                memcpy(p, &dv, 8);
            } else {
                float fv = (float)dv;
                if (t == VYRE__F32) {
                    memcpy(p, &fv, 4);
                } else {
                    uint16_t h = t == VYRE__F16 ? vyre__f32_to_f16(fv) : vyre__f32_to_bf16(fv);
                    memcpy(p, &h, 2);
                }
            }
        } else {
            /* Little-endian truncation: iota wraps in the narrow types. */
            unsigned char bytes[8];
            for (int b = 0; b < 8; b++)
                bytes[b] = (unsigned char)(iv >> (8 * b));
            memcpy(p, bytes, sz);
        }
    }
}
