/*
 * axes.c - benchmark parameter axes (see vyre/axes.h): the -a syntax, an
 * axis written as a JSON value (for sweep_spec.c, which parses the spec
 * document), and the cartesian product in a fixed order.
 *
 * Invariant: every axis in a vyre_axes is valid (name, at least one value,
 * no repeated value) and the product of all axis sizes stays at or below
 * VYRE_AXES_POINTS_MAX, so vyre__axes_count never overflows and an index
 * always fits a size_t. Adding is all-or-nothing: a failed add leaves the
 * set as it was.
 */
#include "vyre/axes.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "base/jsonutil.h"
#include "bench/axes_internal.h"
#include "vyre/units.h"

static const char g_axis_hint[] =
    "write an axis such as N=1024:67108864:x4 (geometric), N=0:100:+25 (arithmetic), "
    "BLOCK=128,256,512 (list) or N=4096; integers may use size suffixes (1K:64M:x4, "
    "K/M/G are powers of 1024)";
static const char g_name_hint[] = "an axis name starts with a letter or '_' and goes on with "
                                  "letters, digits or '_' (N, BLOCK, TILE_M)";

/* A parsed value: integer unless it was written with '.' or an exponent. */
typedef struct num {
    int is_float;
    int64_t i;
    double f;
} num;

static double num_f(const num *v)
{
    return v->is_float ? v->f : (double)v->i;
}

/* Parse context for messages: the axis name. */
typedef struct ctx {
    const char *name;
    vyre_error *err;
} ctx;

void vyre_axes_init(vyre_axes *axes)
{
    memset(axes, 0, sizeof *axes);
}

static void axis_free(vyre_axis *a)
{
    free(a->values.i);
    free(a->values.f);
    free(a->text);
    memset(a, 0, sizeof *a);
}

void vyre_axes_release(vyre_axes *axes)
{
    if (!axes)
        return;
    for (size_t a = 0; a < axes->n; a++)
        axis_free(&axes->axis[a]);
    axes->n = 0;
}

static int name_valid(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

/* A float literal: optional '-', digits/'.', optional exponent, nothing
 * else (so no hex floats, "inf" or "nan"), and a '.' or an exponent. */
static int looks_float(const char *s)
{
    const char *p = s + (*s == '-');
    if (!((*p >= '0' && *p <= '9') || *p == '.'))
        return 0;
    int marker = 0;
    for (const char *q = p; *q; q++) {
        if (*q == '.' || *q == 'e' || *q == 'E')
            marker = 1;
        else if (!((*q >= '0' && *q <= '9') || *q == '+' || *q == '-'))
            return 0;
    }
    return marker;
}

/* Parses one value; `what` is "value" or "step" for messages. */
static int parse_num(const ctx *c, const char *s, const char *what, num *out)
{
    if (looks_float(s)) {
        char *end = NULL;
        errno = 0;
        double f = strtod(s, &end);
        if (end && *end == '\0' && end != s) {
            if (!isfinite(f) || errno == ERANGE)
                return vyre__fail(c->err, VYRE_ERANGE,
                                  "floating-point values must be finite doubles",
                                  "%s '%s' of axis '%s' is out of range", what, s, c->name);
            out->is_float = 1;
            out->f = f;
            out->i = 0;
            return VYRE_OK;
        }
    }
    int neg = s[0] == '-';
    uint64_t u = 0;
    int rc = vyre_parse_size(s + neg, &u, NULL);
    if (rc == VYRE_ERANGE || (rc == 0 && u > (uint64_t)INT64_MAX + (uint64_t)neg))
        return vyre__fail(c->err, VYRE_ERANGE,
                          "integer values must lie between -9223372036854775808 and "
                          "9223372036854775807",
                          "%s '%s' of axis '%s' is out of range", what, s, c->name);
    if (rc)
        return vyre__fail(c->err, VYRE_EINVAL, g_axis_hint, "%s '%s' of axis '%s' is not a number",
                          what, s, c->name);
    out->is_float = 0;
    out->f = 0;
    /* -(INT64_MAX + 1) without signed overflow. */
    out->i = neg ? (int64_t)(0 - u) : (int64_t)u;
    return VYRE_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Appends an axis built from n values (ownership of vals is not taken).
 * check_dups is set for lists; ranges cannot repeat a value. */
static int append_axis(vyre_axes *axes, const ctx *c, const num *vals, size_t n, const char *text,
                       int check_dups)
{
    if (n > VYRE_AXES_POINTS_MAX)
        return vyre__fail(c->err, VYRE_ERANGE, "narrow the range or use a larger step or factor",
                          "axis '%s' would have %zu values (at most %d)", c->name, n,
                          VYRE_AXES_POINTS_MAX);
    size_t total = vyre__axes_count(axes) * n; /* <= 1e6 * 1e6: no overflow */
    if (total > VYRE_AXES_POINTS_MAX)
        return vyre__fail(c->err, VYRE_ERANGE,
                          "narrow a range, use a larger step or factor, or split the sweep into "
                          "several runs",
                          "axis '%s' would make the sweep %zu points (at most %d)", c->name, total,
                          VYRE_AXES_POINTS_MAX);
    int is_float = 0;
    for (size_t k = 0; k < n; k++)
        is_float |= vals[k].is_float;

    vyre_axis ax;
    memset(&ax, 0, sizeof ax);
    vyre__strlcpy(ax.name, c->name, sizeof ax.name);
    ax.type = is_float ? VYRE_AXIS_FLOAT : VYRE_AXIS_INT;
    ax.n = n;
    ax.text = strdup(text);
    double *fv = is_float ? malloc(n * sizeof *fv) : NULL;
    int64_t *iv = is_float ? NULL : malloc(n * sizeof *iv);
    ax.values.f = fv;
    ax.values.i = iv;
    if (!ax.text || (!fv && !iv)) {
        axis_free(&ax);
        return vyre__fail(c->err, VYRE_ENOMEM, NULL, "out of memory for axis '%s'", c->name);
    }
    for (size_t k = 0; k < n; k++) {
        if (fv)
            fv[k] = num_f(&vals[k]);
        else if (iv)
            iv[k] = vals[k].i;
    }

    if (check_dups && n > 1) {
        size_t width = is_float ? sizeof(double) : sizeof(int64_t);
        void *sorted = malloc(n * width);
        if (!sorted) {
            axis_free(&ax);
            return vyre__fail(c->err, VYRE_ENOMEM, NULL, "out of memory for axis '%s'", c->name);
        }
        memcpy(sorted, is_float ? (void *)ax.values.f : (void *)ax.values.i, n * width);
        qsort(sorted, n, width, is_float ? cmp_f64 : cmp_i64);
        for (size_t k = 1; k < n; k++) {
            int same = is_float ? ((double *)sorted)[k] == ((double *)sorted)[k - 1]
                                : ((int64_t *)sorted)[k] == ((int64_t *)sorted)[k - 1];
            if (!same)
                continue;
            char vbuf[64];
            if (is_float)
                snprintf(vbuf, sizeof vbuf, "%.17g", ((double *)sorted)[k]);
            else
                snprintf(vbuf, sizeof vbuf, "%" PRId64, ((int64_t *)sorted)[k]);
            free(sorted);
            axis_free(&ax);
            return vyre__fail(c->err, VYRE_EINVAL, "list each value once",
                              "axis '%s' lists value '%s' twice", c->name, vbuf);
        }
        free(sorted);
    }
    axes->axis[axes->n++] = ax;
    return VYRE_OK;
}

/* Checks the name and that there is room for one more axis. */
static int check_name(const vyre_axes *axes, const char *name, vyre_error *err)
{
    size_t len = strlen(name);
    if (!name_valid(name, len))
        return vyre__fail(err, VYRE_EINVAL, g_name_hint, "axis name '%s' is not valid", name);
    if (len >= VYRE_AXIS_NAME_MAX)
        return vyre__fail(err, VYRE_EINVAL, "use at most 63 characters",
                          "axis name '%s' is too long", name);
    if (vyre__axes_find(axes, name) >= 0)
        return vyre__fail(err, VYRE_EINVAL, "give each axis once; list several values as N=1,2,3",
                          "axis '%s' is given twice", name);
    if (axes->n >= VYRE_AXES_MAX)
        return vyre__fail(err, VYRE_EINVAL, "combine or drop axes",
                          "too many axes: '%s' would be number %zu (at most %d)", name, axes->n + 1,
                          VYRE_AXES_MAX);
    return VYRE_OK;
}

/* Parses the factor of "x<factor>": digits with at most one '.', no
 * suffix. */
static int parse_factor(const ctx *c, const char *step, num *out)
{
    const char *s = step + 1;
    int dots = 0, digits = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '.')
            dots++;
        else if (*p >= '0' && *p <= '9')
            digits++;
        else
            digits = -1000;
    }
    if (digits <= 0 || dots > 1)
        return vyre__fail(c->err, VYRE_EINVAL, "use a factor such as x2 or x4",
                          "factor '%s' of axis '%s' is not a number", step, c->name);
    return parse_num(c, s, "factor", out);
}

/* Rounds a generated float to 15 significant digits, so that 0:0.3:+0.1
 * gives 0.3 and not 0.30000000000000004: users wrote decimal values and
 * read them back in results. */
static double round15(double v)
{
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%.15g", v);
    return strtod(tmp, NULL);
}

/* The whole factor of an integer geometric range as an int64: one written
 * beyond int64 ("x1e30") is clamped, which keeps its meaning (nothing past
 * the start fits) without an out-of-range conversion. */
static int64_t int_factor(const num *step)
{
    if (!step->is_float)
        return step->i;
    return step->f >= 0x1p63 ? INT64_MAX : (int64_t)step->f;
}

static int parse_range(vyre_axes *axes, const ctx *c, char *fields[3], size_t nf, const char *text)
{
    num lo, hi, step = {0, 1, 1.0};
    int geometric = 0;
    int rc = parse_num(c, fields[0], "value", &lo);
    if (rc == 0)
        rc = parse_num(c, fields[1], "value", &hi);
    if (rc)
        return rc;
    if (nf == 3) {
        const char *st = fields[2];
        if (st[0] == 'x') {
            geometric = 1;
            rc = parse_factor(c, st, &step);
            if (rc)
                return rc;
            if (num_f(&step) <= 1.0)
                return vyre__fail(c->err, VYRE_EINVAL, "use a factor such as x2 or x4",
                                  "factor '%s' of axis '%s' must be above 1", st, c->name);
        } else if (st[0] == '+') {
            rc = parse_num(c, st + 1, "step", &step);
            if (rc)
                return rc;
            if (num_f(&step) == 0.0)
                return vyre__fail(c->err, VYRE_EINVAL, "use a positive step such as +1 or +25",
                                  "step '%s' of axis '%s' is zero", st, c->name);
            if (num_f(&step) < 0.0)
                return vyre__fail(c->err, VYRE_EINVAL, "use a positive step; ranges only count up",
                                  "step '%s' of axis '%s' is negative", st, c->name);
        } else {
            return vyre__fail(c->err, VYRE_EINVAL,
                              "write x2 to multiply (N=1:1024:x2) or +2 to add (N=0:100:+2)",
                              "step '%s' of axis '%s' must start with 'x' (geometric) or '+' "
                              "(arithmetic)",
                              st, c->name);
        }
    }
    int is_float = lo.is_float || hi.is_float || (!geometric && step.is_float);
    if (num_f(&lo) > num_f(&hi) || (!is_float && lo.i > hi.i))
        return vyre__fail(c->err, VYRE_EINVAL,
                          "write the smaller value first; ranges only count up",
                          "range '%s' of axis '%s' is empty: start '%s' is above stop '%s'", text,
                          c->name, fields[0], fields[1]);
    if (geometric && num_f(&lo) <= 0.0)
        return vyre__fail(c->err, VYRE_EINVAL,
                          "a geometric range multiplies: start it at 1 or more, or add with +STEP",
                          "geometric range '%s' of axis '%s' must start above 0", text, c->name);
    if (geometric && !is_float && step.is_float && step.f != floor(step.f))
        return vyre__fail(c->err, VYRE_EINVAL,
                          "write a whole factor such as x2, or make the axis floating point by "
                          "writing the start with a decimal point (1.0)",
                          "factor '%s' of axis '%s' must be a whole number on an integer axis",
                          fields[2], c->name);

    /* Count first, so a huge range fails before allocating. */
    size_t n = 0;
    if (!is_float && geometric) {
        int64_t f = int_factor(&step);
        for (int64_t v = lo.i;; v *= f) {
            n++;
            if (v > hi.i / f)
                break;
        }
    } else if (!is_float) {
        uint64_t span = (uint64_t)hi.i - (uint64_t)lo.i;
        uint64_t cnt = span / (uint64_t)step.i + 1;
        n = cnt > (uint64_t)VYRE_AXES_POINTS_MAX + 1 ? (size_t)VYRE_AXES_POINTS_MAX + 1
                                                     : (size_t)cnt;
    } else if (geometric) {
        double l = num_f(&lo), h = num_f(&hi), f = num_f(&step);
        double q = log(h / l) / log(f);
        /* Tolerance so that 0.5:8:x2 lands on 8 despite rounding. */
        n = q > (double)VYRE_AXES_POINTS_MAX ? (size_t)VYRE_AXES_POINTS_MAX + 1
                                             : (size_t)floor(q + 1e-9) + 1;
    } else {
        double q = (num_f(&hi) - num_f(&lo)) / num_f(&step);
        n = !(q <= (double)VYRE_AXES_POINTS_MAX) ? (size_t)VYRE_AXES_POINTS_MAX + 1
                                                 : (size_t)floor(q + 1e-9) + 1;
    }
    if (n > VYRE_AXES_POINTS_MAX)
        return vyre__fail(c->err, VYRE_ERANGE, "narrow the range or use a larger step or factor",
                          "axis '%s' would have more than %d values", c->name,
                          VYRE_AXES_POINTS_MAX);

    num *vals = calloc(n, sizeof *vals);
    if (!vals)
        return vyre__fail(c->err, VYRE_ENOMEM, NULL, "out of memory for axis '%s'", c->name);
    for (size_t k = 0; k < n; k++) {
        vals[k].is_float = is_float;
        if (!is_float && geometric) {
            int64_t f = int_factor(&step);
            vals[k].i = k == 0 ? lo.i : vals[k - 1].i * f;
        } else if (!is_float) {
            vals[k].i = (int64_t)((uint64_t)lo.i + (uint64_t)k * (uint64_t)step.i);
        } else {
            double v = geometric ? num_f(&lo) * pow(num_f(&step), (double)k)
                                 : num_f(&lo) + (double)k * num_f(&step);
            vals[k].f = round15(v);
        }
    }
    rc = append_axis(axes, c, vals, n, text, 0);
    free(vals);
    return rc;
}

/* Parses the values text (range, list or single value) of axis `name`. */
static int parse_values(vyre_axes *axes, const char *name, const char *text, vyre_error *err)
{
    ctx c = {name, err};
    if (text[0] == '\0')
        return vyre__fail(err, VYRE_EINVAL, g_axis_hint, "axis '%s' has no values", name);
    char *buf = strdup(text);
    if (!buf)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for axis '%s'", name);
    int rc;
    if (strchr(buf, ':')) {
        char *fields[3] = {NULL, NULL, NULL};
        size_t nf = 0;
        char *p = buf;
        for (;;) {
            char *colon = strchr(p, ':');
            if (nf == 3) {
                nf = 4;
                break;
            }
            fields[nf++] = p;
            if (!colon)
                break;
            *colon = '\0';
            p = colon + 1;
        }
        if (nf < 2 || nf > 3) /* nf < 2 cannot happen: buf has a ':' */
            rc = vyre__fail(err, VYRE_EINVAL, g_axis_hint,
                            "range '%s' of axis '%s' is not START:STOP[:STEP]", text, name);
        else
            rc = parse_range(axes, &c, fields, nf, text);
        free(buf);
        return rc;
    }
    size_t n = 1;
    for (const char *p = buf; *p; p++)
        n += *p == ',';
    num *vals = calloc(n, sizeof *vals);
    if (!vals) {
        free(buf);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for axis '%s'", name);
    }
    rc = VYRE_OK;
    char *p = buf;
    for (size_t k = 0; k < n && rc == 0; k++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*p == '\0')
            rc = vyre__fail(err, VYRE_EINVAL, g_axis_hint, "axis '%s' has an empty value in '%s'",
                            name, text);
        else
            rc = parse_num(&c, p, "value", &vals[k]);
        if (comma)
            p = comma + 1;
    }
    if (rc == 0)
        rc = append_axis(axes, &c, vals, n, text, 1);
    free(vals);
    free(buf);
    return rc;
}

int vyre__axes_add_values(vyre_axes *axes, const char *name, const char *values, vyre_error *err)
{
    if (!axes || !name || !values)
        return vyre__fail(err, VYRE_EINVAL, g_axis_hint, "missing axis");
    int rc = check_name(axes, name, err);
    return rc ? rc : parse_values(axes, name, values, err);
}

int vyre_axes_add(vyre_axes *axes, const char *spec, vyre_error *err)
{
    if (!axes || !spec)
        return vyre__fail(err, VYRE_EINVAL, g_axis_hint, "missing axis");
    const char *eq = strchr(spec, '=');
    if (!eq)
        return vyre__fail(err, VYRE_EINVAL, g_axis_hint, "axis '%s' is not NAME=VALUES", spec);
    if (eq == spec)
        return vyre__fail(err, VYRE_EINVAL, g_axis_hint, "axis '%s' has no name", spec);
    size_t len = (size_t)(eq - spec);
    char *name = strndup(spec, len);
    if (!name)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for axis '%s'", spec);
    int rc = vyre__axes_add_values(axes, name, eq + 1, err);
    free(name);
    return rc;
}

/* The names of axes, "N, BLOCK", into buf (cut to fit). */
static void axis_names(const vyre_axes *axes, char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t a = 0; a < axes->n && off < size; a++) {
        int n = snprintf(buf + off, size - off, "%s%s", a ? ", " : "", axes->axis[a].name);
        if (n < 0)
            break;
        off += (size_t)n;
    }
}

int vyre_axes_override(vyre_axes *axes, const char *spec, vyre_error *err)
{
    if (!axes || !spec)
        return vyre__fail(err, VYRE_EINVAL, g_axis_hint, "missing axis");
    vyre_axes one;
    vyre_axes_init(&one);
    int rc = vyre_axes_add(&one, spec, err);
    if (rc)
        return rc;
    vyre_axis *ax = &one.axis[0];
    int at = vyre__axes_find(axes, ax->name);
    if (at < 0) {
        char names[512];
        axis_names(axes, names, sizeof names);
        rc = vyre__fail(err, VYRE_EINVAL,
                        "-a narrows or replaces an axis the spec declares; add the axis to the "
                        "spec's \"axes\" to sweep it",
                        axes->n ? "axis '%s' is not one of the spec's axes (%s)"
                                : "axis '%s' is not one of the spec's axes (it has none%s)",
                        ax->name, names);
        vyre_axes_release(&one);
        return rc;
    }
    /* Every axis has at least one value, so the division is exact. */
    size_t total = vyre__axes_count(axes) / axes->axis[at].n * ax->n;
    if (total > VYRE_AXES_POINTS_MAX) {
        rc = vyre__fail(err, VYRE_ERANGE,
                        "narrow a range, use a larger step or factor, or split the sweep into "
                        "several runs",
                        "axis '%s' would make the sweep %zu points (at most %d)", ax->name, total,
                        VYRE_AXES_POINTS_MAX);
        vyre_axes_release(&one);
        return rc;
    }
    axis_free(&axes->axis[at]);
    axes->axis[at] = *ax; /* its storage moves over */
    one.n = 0;
    return VYRE_OK;
}

int vyre__axes_find(const vyre_axes *axes, const char *name)
{
    for (size_t a = 0; a < axes->n; a++)
        if (strcmp(axes->axis[a].name, name) == 0)
            return (int)a;
    return -1;
}

size_t vyre__axes_count(const vyre_axes *axes)
{
    size_t n = 1;
    for (size_t a = 0; a < axes->n; a++)
        n *= axes->axis[a].n;
    return n;
}

int vyre__axes_point(const vyre_axes *axes, size_t index, size_t *coords)
{
    if (index >= vyre__axes_count(axes))
        return VYRE_ERANGE;
    for (size_t a = axes->n; a-- > 0;) {
        coords[a] = index % axes->axis[a].n;
        index /= axes->axis[a].n;
    }
    return VYRE_OK;
}

double vyre__axes_value_f(const vyre_axes *axes, size_t a, size_t i)
{
    const vyre_axis *ax = &axes->axis[a];
    return ax->type == VYRE_AXIS_FLOAT ? ax->values.f[i] : (double)ax->values.i[i];
}

int64_t vyre__axes_value_i(const vyre_axes *axes, size_t a, size_t i)
{
    const vyre_axis *ax = &axes->axis[a];
    if (ax->type == VYRE_AXIS_INT)
        return ax->values.i[i];
    double f = ax->values.f[i];
    /* Saturate rather than invoke undefined behaviour on huge floats. */
    if (f >= 9223372036854775807.0)
        return INT64_MAX;
    if (f <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)f;
}

size_t vyre__axes_format_value(const vyre_axes *axes, size_t a, size_t i, char *buf, size_t size)
{
    const vyre_axis *ax = &axes->axis[a];
    int n;
    if (ax->type == VYRE_AXIS_INT) {
        n = snprintf(buf, size, "%" PRId64, ax->values.i[i]);
    } else {
        /* Shortest of %.15g, %.16g, %.17g that reads back to the same
         * double (%.17g always does). */
        double v = ax->values.f[i];
        char tmp[40];
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(tmp, sizeof tmp, "%.*g", digits, v);
            if (strtod(tmp, NULL) == v)
                break;
        }
        n = snprintf(buf, size, "%s", tmp);
    }
    return n < 0 ? 0 : (size_t)n;
}

size_t vyre__axes_format_point(const vyre_axes *axes, const size_t *coords, char *buf, size_t size)
{
    size_t len = 0;
    if (size)
        buf[0] = '\0';
    for (size_t a = 0; a < axes->n; a++) {
        char val[48];
        vyre__axes_format_value(axes, a, coords[a], val, sizeof val);
        size_t room = len < size ? size - len : 0;
        int n = snprintf(room ? buf + len : NULL, room, "%s%s=%s", a ? " " : "", axes->axis[a].name,
                         val);
        len += n < 0 ? 0 : (size_t)n;
    }
    return len;
}

/* ---- an axis from a JSON sweep spec ----------------------------------------- */

/* Re-raises an axis error with the origin and JSON path in front. */
static int rewrap(vyre_error *err, const vyre_error *inner, int code, const char *origin,
                  const char *path)
{
    return vyre__fail(err, code, inner->hint, "'%s': %s: %s", origin, path, inner->message);
}

int vyre__axes_add_json(vyre_axes *axes, const char *name, json_t *v, const char *origin,
                        vyre_error *err)
{
    char path[VYRE_AXIS_NAME_MAX + 256];
    snprintf(path, sizeof path, "$.axes.%s", name);
    vyre_error inner;
    vyre_error_clear(&inner);
    int rc = check_name(axes, name, &inner);
    if (rc)
        return rewrap(err, &inner, rc, origin, path);
    if (json_is_string(v)) {
        rc = parse_values(axes, name, json_string_value(v), &inner);
        return rc ? rewrap(err, &inner, rc, origin, path) : VYRE_OK;
    }
    if (!json_is_number(v) && !json_is_array(v))
        return vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint,
                          "'%s': %s must be a string, a number or an array, not %s", origin, path,
                          vyre__json_kind(v));
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (n == 0)
        return vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint, "'%s': %s is an empty array",
                          origin, path);
    num *vals = calloc(n, sizeof *vals);
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!vals || !text) {
        free(vals);
        free(text);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory for axis '%s'", name);
    }
    ctx c = {name, &inner};
    for (size_t k = 0; k < n && rc == 0; k++) {
        json_t *e = json_is_array(v) ? json_array_get(v, k) : v;
        char epath[sizeof path + 32];
        if (json_is_array(v))
            snprintf(epath, sizeof epath, "%s[%zu]", path, k);
        else
            snprintf(epath, sizeof epath, "%s", path);
        if (json_is_integer(e)) {
            vals[k].i = (int64_t)json_integer_value(e);
        } else if (json_is_real(e)) {
            vals[k].is_float = 1;
            vals[k].f = json_real_value(e);
        } else if (json_is_string(e)) {
            rc = parse_num(&c, json_string_value(e), "value", &vals[k]);
            if (rc)
                rc = rewrap(err, &inner, rc, origin, epath);
        } else {
            rc = vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint,
                            "'%s': %s must be a number or a string, not %s", origin, epath,
                            vyre__json_kind(e));
        }
    }
    if (rc == 0) {
        rc = append_axis(axes, &c, vals, n, text, 1);
        if (rc)
            rc = rewrap(err, &inner, rc, origin, path);
    }
    free(vals);
    free(text);
    return rc;
}
