/*
 * test_expr.c - sweep-spec expressions (bench/expr.h): values of good
 * expressions at sweep points, exact rationals, and bad expressions
 * rejected with their column and message; division by zero and overflow
 * at evaluation.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "bench/expr.h"
#include "testutil.h"
#include "vyre/axes.h"

/* Axes N=1000,4096  M=64  K=3  ALPHA=0.5 (floating point); point coords. */
static void make_axes(vyre_axes *ax)
{
    vyre_axes_init(ax);
    cr_assert_eq(vyre_axes_add(ax, "N=1000,4096", NULL), 0);
    cr_assert_eq(vyre_axes_add(ax, "M=64", NULL), 0);
    cr_assert_eq(vyre_axes_add(ax, "K=3", NULL), 0);
    cr_assert_eq(vyre_axes_add(ax, "ALPHA=0.5", NULL), 0);
}

static vyre__rat eval_at(const char *text, size_t n_index)
{
    vyre_axes ax;
    make_axes(&ax);
    vyre_error e;
    vyre_error_clear(&e);
    vyre__expr *x = NULL;
    cr_assert_eq(vyre__expr_parse(text, &ax, &x, NULL, &e), 0, "'%s': %s", text, e.message);
    size_t coords[4] = {n_index, 0, 0, 0};
    vyre__rat r = {0, 0};
    cr_assert_eq(vyre__expr_eval(x, &ax, coords, &r, &e), 0, "'%s': %s", text, e.message);
    vyre__expr_free(x);
    vyre_axes_release(&ax);
    return r;
}

Test(expr, values)
{
    static const struct {
        const char *text;
        size_t n_index; /* 0: N=1000, 1: N=4096 */
        int64_t num, den;
    } cases[] = {
        {"42", 0, 42, 1},
        {"N", 1, 4096, 1},
        {"ceil(N/1024)", 0, 1, 1},
        {"ceil(N/1024)", 1, 4, 1},
        {"ceil(N / 1024)", 1, 4, 1},
        {"floor(N/1024)", 0, 0, 1},
        {"N/64", 1, 64, 1},
        {"N/64", 0, 125, 8}, /* 1000/64 exactly */
        {"M/64", 0, 1, 1},
        {"2*M*N*K", 1, 2 * 64 * 4096 * 3, 1},
        {"1 + 2 * 3", 0, 7, 1},
        {"(1 + 2) * 3", 0, 9, 1},
        {"10 - 4 - 3", 0, 3, 1}, /* left associative */
        {"64 / 4 / 2", 0, 8, 1},
        {"-N + 5", 0, -995, 1},
        {"--3", 0, 3, 1},
        {"+3", 0, 3, 1},
        {"min(N, 2048)", 0, 1000, 1},
        {"min(N, 2048)", 1, 2048, 1},
        {"max(N, 2048, M)", 1, 4096, 1},
        {"max(1/3, 1/4)", 0, 1, 3},
        {"ceil(-7/2)", 0, -3, 1},
        {"floor(-7/2)", 0, -4, 1},
        {"(N/64)*64", 0, 1000, 1},
        {"64K", 0, 65536, 1},
        {"1M/N", 1, 256, 1},
        {"N*2*2 + N*4", 1, 4096 * 8, 1},
        {"ceil(N/128)*ceil(M/128)", 1, 32, 1},
        {"9223372036854775807", 0, INT64_MAX, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre__rat r = eval_at(cases[i].text, cases[i].n_index);
        cr_expect(r.num == cases[i].num && r.den == cases[i].den,
                  "'%s' at point %zu: got %lld/%lld, want %lld/%lld", cases[i].text,
                  cases[i].n_index, (long long)r.num, (long long)r.den, (long long)cases[i].num,
                  (long long)cases[i].den);
    }
}

Test(expr, parse_errors_name_the_column)
{
    static const struct {
        const char *text;
        size_t col;
        const char *message;
    } cases[] = {
        {"", 1, "column 1: the expression is empty"},
        {"   ", 4, "column 4: the expression is empty"},
        {"ceil(N/1024", 12, "column 12: expected ',' or ')', found the end"},
        {"(N + 1", 7, "column 7: expected ')', found the end"},
        {"N +", 4, "column 4: expected a number, an axis or '(', found the end"},
        {"N ** 2", 4, "column 4: expected a number, an axis or '(', found '*'"},
        {"N 2", 3, "column 3: expected an operator or the end, found '2'"},
        {"X * 2", 1, "column 1: 'X' is not an axis (declare it under \"axes\" or with -a)"},
        {"N * Q", 5, "column 5: 'Q' is not an axis (declare it under \"axes\" or with -a)"},
        {"ALPHA*2", 1, "column 1: axis 'ALPHA' is floating point; expressions take integer axes"},
        {"sqrt(N)", 1, "column 1: unknown function 'sqrt' (there are ceil, floor, min and max)"},
        {"ceil(N, 2)", 7, "column 7: ceil() takes one argument"},
        {"N % 2", 3, "column 3: expected an operator or the end, found '%'"},
        {"1.5 * N", 1, "column 1: '1.5' is not a whole number (digits, optionally K, M or G)"},
        {"12Q", 1, "column 1: '12Q' is not a whole number (digits, optionally K, M or G)"},
        {"99999999999999999999", 1, "column 1: number '99999999999999999999' is beyond int64"},
        {"min()", 5, "column 5: expected a number, an axis or '(', found ')'"},
    };
    vyre_axes ax;
    make_axes(&ax);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_error e;
        vyre_error_clear(&e);
        vyre__expr *x = (vyre__expr *)1;
        size_t col = 0;
        int rc = vyre__expr_parse(cases[i].text, &ax, &x, &col, &e);
        cr_expect(rc == VYRE_EINVAL || rc == VYRE_ERANGE, "'%s': rc %d", cases[i].text, rc);
        cr_expect_null(x, "'%s'", cases[i].text);
        cr_expect_eq(col, cases[i].col, "'%s': column %zu, want %zu", cases[i].text, col,
                     cases[i].col);
        cr_expect_str_eq(e.message, cases[i].message, "'%s'", cases[i].text);
        cr_expect(strstr(e.hint, "ceil(N/1024)") != NULL, "'%s': hint '%s'", cases[i].text, e.hint);
    }
    vyre_axes_release(&ax);
}

Test(expr, nesting_is_bounded)
{
    char deep[300];
    memset(deep, '(', 200);
    deep[200] = '1';
    memset(deep + 201, ')', 98);
    deep[299] = '\0';
    vyre_error e;
    vyre_error_clear(&e);
    vyre__expr *x = NULL;
    cr_assert_eq(vyre__expr_parse(deep, NULL, &x, NULL, &e), VYRE_EINVAL);
    cr_expect_str_eq(e.message, "column 65: nested too deeply");
    /* 64 deep is fine. */
    char ok[200];
    memset(ok, '(', 60);
    ok[60] = '7';
    memset(ok + 61, ')', 60);
    ok[121] = '\0';
    cr_assert_eq(vyre__expr_parse(ok, NULL, &x, NULL, &e), 0, "%s", e.message);
    vyre__rat r;
    cr_assert_eq(vyre__expr_eval(x, NULL, NULL, &r, &e), 0);
    cr_expect_eq(r.num, 7);
    vyre__expr_free(x);
}

Test(expr, evaluation_errors)
{
    static const struct {
        const char *text;
        int code;
        const char *message;
    } cases[] = {
        {"N / (M - 64)", VYRE_EINVAL, "column 3: division by zero"},
        {"ceil(N/(K-3))", VYRE_EINVAL, "column 7: division by zero"},
        {"9223372036854775807 + 1", VYRE_ERANGE, "column 21: the value overflows a 64-bit integer"},
        {"N * 4096 * 4096 * 4096 * 4096 * 4096", VYRE_ERANGE,
         "column 31: the value overflows a 64-bit integer"},
        {"-9223372036854775807 - 2", VYRE_ERANGE,
         "column 22: the value overflows a 64-bit integer"},
    };
    vyre_axes ax;
    make_axes(&ax);
    size_t coords[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vyre_error e;
        vyre_error_clear(&e);
        vyre__expr *x = NULL;
        cr_assert_eq(vyre__expr_parse(cases[i].text, &ax, &x, NULL, &e), 0, "'%s': %s",
                     cases[i].text, e.message);
        vyre__rat r;
        cr_expect_eq(vyre__expr_eval(x, &ax, coords, &r, &e), cases[i].code, "'%s'", cases[i].text);
        cr_expect_str_eq(e.message, cases[i].message, "'%s'", cases[i].text);
        vyre__expr_free(x);
    }
    vyre_axes_release(&ax);
}

Test(expr, lone_axis_is_told)
{
    vyre_axes ax;
    make_axes(&ax);
    vyre__expr *x = NULL;
    int a = -1;
    cr_assert_eq(vyre__expr_parse(" M ", &ax, &x, NULL, NULL), 0);
    cr_expect(vyre__expr_is_axis(x, &a));
    cr_expect_eq(a, 1);
    cr_expect_str_eq(vyre__expr_text(x), " M ");
    vyre__expr_free(x);
    cr_assert_eq(vyre__expr_parse("M+0", &ax, &x, NULL, NULL), 0);
    cr_expect_not(vyre__expr_is_axis(x, &a));
    vyre__expr_free(x);
    vyre_axes_release(&ax);
}
