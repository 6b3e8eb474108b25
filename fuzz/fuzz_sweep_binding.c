/*
 * fuzz_sweep_binding.c - libFuzzer target for what turns a sweep spec into
 * launches (libcore/src/bench/sweep_binding.c), the integer expressions in it
 * (bench/expr.c) and the PTX reader (bench/ptxinfo.c): text a user hands
 * to vyre-bench as a spec or a kernel file.
 *
 * Each input is (1) parsed as a JSON sweep spec whose axes then bind it,
 * evaluated at its first and last points; (2) parsed as one expression over
 * fixed axes and evaluated at every point; (3) read as PTX. Invariants:
 *   - no crash, no read past the text (ASan), no undefined behaviour
 *     (UBSan: every int64 operation is checked, so none may overflow);
 *   - a reject is VYRE_EINVAL, VYRE_ERANGE or VYRE_ENOMEM with a message
 *     and a hint; an expression's parse error names a column within the
 *     text (1 .. length + 1);
 *   - a value is a rational in lowest terms with a positive denominator;
 *   - a launch has 1 .. 1024 threads a block and every dimension >= 1;
 *   - the PTX reader stays within its arrays.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/axes_internal.h"
#include "fuzz_text.h"
#include "bench/expr.h"
#include "bench/ptxinfo.h"
#include "bench/sweep_binding.h"
#include "vyre/axes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX 8192

static void check_error(int rc, const vyre_error *e)
{
    if (rc != VYRE_EINVAL && rc != VYRE_ERANGE && rc != VYRE_ENOMEM)
        abort();
    if (e->code != rc || !e->message[0] || (rc != VYRE_ENOMEM && !e->hint[0]))
        abort();
}

static int64_t gcd(int64_t a, int64_t b)
{
    uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a, y = (uint64_t)b;
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return (int64_t)x;
}

static void check_rat(const vyre__rat *r)
{
    if (r->den <= 0 || (r->num != 0 && gcd(r->num, r->den) != 1) || (r->num == 0 && r->den != 1))
        abort();
}

static void fuzz_binding(const char *text)
{
    vyre_sweep_spec s;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre__sweep_spec_parse(&s, text, "fuzz.json", &e) != VYRE_OK)
        return;
    vyre_bench_sweep sw = {.path = "k.ptx",
                           .entry = "k",
                           .axes = &s.axes,
                           .spec_json = s.json,
                           .spec_origin = "fuzz.json"};
    vyre__sweep_binding b;
    int rc = vyre__sweep_binding_make(&sw, &b, &e);
    if (rc != VYRE_OK) {
        check_error(rc, &e);
        vyre_sweep_spec_release(&s);
        return;
    }
    size_t count = vyre__axes_count(&s.axes), coords[VYRE_AXES_MAX];
    size_t ends[2] = {0, count - 1};
    for (int k = 0; k < 2; k++) {
        vyre__axes_point(&s.axes, ends[k], coords);
        vyre__sweep_launch l;
        vyre_error_clear(&e);
        rc = vyre__sweep_binding_eval(&b, &s.axes, coords, NULL, 0, &l, &e);
        if (rc != VYRE_OK) {
            check_error(rc, &e);
            continue;
        }
        uint64_t threads = (uint64_t)l.block[0] * l.block[1] * l.block[2];
        if (threads < 1 || threads > 1024)
            abort();
        for (int d = 0; d < 3; d++)
            if (l.grid[d] < 1 || l.block[d] < 1)
                abort();
    }
    vyre__sweep_binding_release(&b);
    vyre_sweep_spec_release(&s);
}

static void fuzz_expr(const char *text)
{
    static vyre_axes axes;
    static int ready;
    if (!ready) {
        vyre_axes_init(&axes);
        if (vyre_axes_add(&axes, "N=0,1,3,1024,9223372036854775807", NULL) ||
            vyre_axes_add(&axes, "M=-9223372036854775808,-1,64", NULL) ||
            vyre_axes_add(&axes, "F=0.5", NULL))
            abort();
        ready = 1;
    }
    vyre__expr *x = NULL;
    size_t col = 0;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre__expr_parse(text, &axes, &x, &col, &e);
    if (rc != VYRE_OK) {
        check_error(rc, &e);
        if (x || (strlen(text) <= VYRE__EXPR_TEXT_MAX && (col < 1 || col > strlen(text) + 1)))
            abort();
        return;
    }
    size_t coords[VYRE_AXES_MAX];
    for (size_t i = 0; i < vyre__axes_count(&axes); i++) {
        vyre__axes_point(&axes, i, coords);
        vyre__rat r;
        vyre_error_clear(&e);
        rc = vyre__expr_eval(x, &axes, coords, &r, &e);
        if (rc != VYRE_OK)
            check_error(rc, &e);
        else
            check_rat(&r);
    }
    vyre__expr_free(x);
}

static void fuzz_ptx(const char *text, size_t len)
{
    vyre__ptx_info pi;
    vyre__ptx_info_read(text, len, "k", &pi);
    if (pi.nparams > VYRE__PTX_PARAMS_MAX ||
        strnlen(pi.target, sizeof pi.target) >= sizeof pi.target)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size, INPUT_MAX);
    if (!text)
        return 0;
    fuzz_binding(text);
    fuzz_expr(text);
    fuzz_ptx((const char *)data, size);
    free(text);
    return 0;
}
