/*
 * expr.c - sweep-spec expressions (see bench/expr.h): a recursive-descent
 * parser into a small tree, evaluated in exact int64 rationals with every
 * operation checked for overflow.
 *
 * Invariant: a parsed tree only refers to integer axes that exist in the
 * axes it was parsed against, and its depth is bounded by
 * VYRE__EXPR_DEPTH_MAX, so evaluation recurses at most that deep.
 */
#include "bench/axes_internal.h"
#include "bench/expr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "vyre/units.h"

static const char g_hint[] =
    "write an integer expression of the axes such as ceil(N/1024), M/64, 2*M*N*K or "
    "min(N, 4096): + - * / and parentheses, ceil() floor() min() max(), numbers (64K)";

typedef enum op {
    OP_NUM,
    OP_AXIS,
    OP_NEG,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_CEIL,
    OP_FLOOR,
    OP_MIN,
    OP_MAX
} op;

typedef struct node {
    op op;
    size_t col;   /* 1-based column of the token */
    int64_t num;  /* OP_NUM */
    int axis;     /* OP_AXIS */
    size_t a, b;  /* children (binary, unary: a) */
    size_t first; /* OP_MIN/OP_MAX: argument list in args[first .. first+nargs-1] */
    size_t nargs;
} node;

struct vyre__expr {
    char *text;
    node *nodes;
    size_t n, cap;
    size_t *args; /* node indices of function arguments */
    size_t nargsv, argscap;
    size_t root;
};

typedef struct parser {
    const char *s;
    size_t pos;
    const vyre_axes *axes;
    vyre__expr *e;
    int depth;
    size_t *col;
    vyre_error *err;
} parser;

static int fail_at(parser *p, size_t pos, int code, const char *fmt, ...) VYRE_PRINTF(4, 5);

static int fail_at(parser *p, size_t pos, int code, const char *fmt, ...)
{
    if (p->col)
        *p->col = pos + 1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vyre__fail(p->err, code, g_hint, "column %zu: %s", pos + 1, msg);
}

static void skip_ws(parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
        p->pos++;
}

static int is_alpha(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int push_node(parser *p, node nd, size_t *idx)
{
    vyre__expr *e = p->e;
    if (vyre__grow(&e->nodes, &e->cap, e->n + 1, sizeof *e->nodes, 16))
        return vyre__fail(p->err, VYRE_ENOMEM, NULL, "out of memory parsing an expression");
    e->nodes[e->n] = nd;
    *idx = e->n++;
    return VYRE_OK;
}

static int push_arg(parser *p, size_t idx)
{
    vyre__expr *e = p->e;
    if (vyre__grow(&e->args, &e->argscap, e->nargsv + 1, sizeof *e->args, 8))
        return vyre__fail(p->err, VYRE_ENOMEM, NULL, "out of memory parsing an expression");
    e->args[e->nargsv++] = idx;
    return VYRE_OK;
}

static int parse_expr(parser *p, size_t *out);

/* A token description for "expected X, found Y" messages. */
static void describe_here(const parser *p, char *buf, size_t size)
{
    char c = p->s[p->pos];
    if (c == '\0')
        snprintf(buf, size, "the end");
    else
        snprintf(buf, size, "'%c'", c);
}

static int parse_call(parser *p, const char *name, size_t len, size_t start, size_t *out)
{
    op o;
    int variadic = 0;
    if (len == 4 && memcmp(name, "ceil", 4) == 0)
        o = OP_CEIL;
    else if (len == 5 && memcmp(name, "floor", 5) == 0)
        o = OP_FLOOR;
    else if (len == 3 && memcmp(name, "min", 3) == 0)
        o = OP_MIN, variadic = 1;
    else if (len == 3 && memcmp(name, "max", 3) == 0)
        o = OP_MAX, variadic = 1;
    else {
        char fn[72];
        snprintf(fn, sizeof fn, "%.*s", (int)(len > 64 ? 64 : len), name);
        return fail_at(p, start, VYRE_EINVAL,
                       "unknown function '%s' (there are ceil, floor, min and max)", fn);
    }
    p->pos++; /* '(' */
    size_t local[VYRE__EXPR_DEPTH_MAX] = {0};
    size_t n = 0;
    for (;;) {
        size_t arg = 0;
        int rc = parse_expr(p, &arg);
        if (rc)
            return rc;
        if (n == VYRE__EXPR_DEPTH_MAX)
            return fail_at(p, start, VYRE_EINVAL, "a function takes at most 64 arguments");
        local[n++] = arg;
        skip_ws(p);
        if (p->s[p->pos] == ',') {
            if (!variadic) {
                char fn[8];
                snprintf(fn, sizeof fn, "%.*s", (int)len, name);
                return fail_at(p, p->pos, VYRE_EINVAL, "%s() takes one argument", fn);
            }
            p->pos++;
            continue;
        }
        if (p->s[p->pos] == ')') {
            p->pos++;
            break;
        }
        char here[16];
        describe_here(p, here, sizeof here);
        return fail_at(p, p->pos, VYRE_EINVAL, "expected ',' or ')', found %s", here);
    }
    node nd = {o, start + 1, 0, -1, 0, 0, 0, 0};
    if (!variadic) {
        nd.a = local[0];
    } else {
        nd.first = p->e->nargsv;
        nd.nargs = n;
        for (size_t i = 0; i < n; i++) {
            int rc = push_arg(p, local[i]);
            if (rc)
                return rc;
        }
    }
    return push_node(p, nd, out);
}

static int parse_primary(parser *p, size_t *out)
{
    skip_ws(p);
    size_t start = p->pos;
    char c = p->s[start];
    if (c == '(') {
        p->pos++;
        int rc = parse_expr(p, out);
        if (rc)
            return rc;
        skip_ws(p);
        if (p->s[p->pos] != ')') {
            char here[16];
            describe_here(p, here, sizeof here);
            return fail_at(p, p->pos, VYRE_EINVAL, "expected ')', found %s", here);
        }
        p->pos++;
        return VYRE_OK;
    }
    if (is_digit(c)) {
        size_t end = start;
        while (is_digit(p->s[end]) || is_alpha(p->s[end]) || p->s[end] == '.')
            end++;
        char tok[64];
        if (end - start >= sizeof tok)
            return fail_at(p, start, VYRE_ERANGE, "the number is too long");
        memcpy(tok, p->s + start, end - start);
        tok[end - start] = '\0';
        uint64_t u = 0;
        int rc = vyre_parse_size(tok, &u, NULL);
        if (rc == VYRE_ERANGE || (rc == 0 && u > (uint64_t)INT64_MAX))
            return fail_at(p, start, VYRE_ERANGE, "number '%s' is beyond int64", tok);
        if (rc || strchr(tok, '.'))
            return fail_at(p, start, VYRE_EINVAL,
                           "'%s' is not a whole number (digits, optionally K, M or G)", tok);
        p->pos = end;
        node nd = {OP_NUM, start + 1, (int64_t)u, -1, 0, 0, 0, 0};
        return push_node(p, nd, out);
    }
    if (is_alpha(c)) {
        size_t end = start;
        while (is_alpha(p->s[end]) || is_digit(p->s[end]))
            end++;
        size_t len = end - start;
        p->pos = end;
        skip_ws(p);
        if (p->s[p->pos] == '(')
            return parse_call(p, p->s + start, len, start, out);
        char name[VYRE_AXIS_NAME_MAX];
        if (len >= sizeof name)
            return fail_at(p, start, VYRE_EINVAL, "the name is too long for an axis");
        memcpy(name, p->s + start, len);
        name[len] = '\0';
        int a = p->axes ? vyre__axes_find(p->axes, name) : -1;
        if (a < 0)
            return fail_at(p, start, VYRE_EINVAL,
                           "'%s' is not an axis (declare it under \"axes\" or with -a)", name);
        if (p->axes->axis[a].type != VYRE_AXIS_INT)
            return fail_at(p, start, VYRE_EINVAL,
                           "axis '%s' is floating point; expressions take integer axes", name);
        node nd = {OP_AXIS, start + 1, 0, a, 0, 0, 0, 0};
        return push_node(p, nd, out);
    }
    char here[16];
    describe_here(p, here, sizeof here);
    return fail_at(p, start, VYRE_EINVAL, "expected a number, an axis or '(', found %s", here);
}

static int parse_unary(parser *p, size_t *out)
{
    skip_ws(p);
    char c = p->s[p->pos];
    if (c == '+' || c == '-') {
        size_t start = p->pos++;
        if (++p->depth > VYRE__EXPR_DEPTH_MAX)
            return fail_at(p, start, VYRE_EINVAL, "nested too deeply");
        size_t a = 0;
        int rc = parse_unary(p, &a);
        p->depth--;
        if (rc || c == '+') {
            *out = a;
            return rc;
        }
        node nd = {OP_NEG, start + 1, 0, -1, a, 0, 0, 0};
        return push_node(p, nd, out);
    }
    return parse_primary(p, out);
}

static int parse_term(parser *p, size_t *out)
{
    int rc = parse_unary(p, out);
    while (!rc) {
        skip_ws(p);
        char c = p->s[p->pos];
        if (c != '*' && c != '/')
            break;
        size_t at = p->pos++;
        size_t b = 0;
        if ((rc = parse_unary(p, &b)))
            break;
        node nd = {c == '*' ? OP_MUL : OP_DIV, at + 1, 0, -1, *out, b, 0, 0};
        rc = push_node(p, nd, out);
    }
    return rc;
}

static int parse_expr(parser *p, size_t *out)
{
    if (++p->depth > VYRE__EXPR_DEPTH_MAX)
        return fail_at(p, p->pos, VYRE_EINVAL, "nested too deeply");
    int rc = parse_term(p, out);
    while (!rc) {
        skip_ws(p);
        char c = p->s[p->pos];
        if (c != '+' && c != '-')
            break;
        size_t at = p->pos++;
        size_t b = 0;
        if ((rc = parse_term(p, &b)))
            break;
        node nd = {c == '+' ? OP_ADD : OP_SUB, at + 1, 0, -1, *out, b, 0, 0};
        rc = push_node(p, nd, out);
    }
    p->depth--;
    return rc;
}

void vyre__expr_free(vyre__expr *e)
{
    if (!e)
        return;
    free(e->text);
    free(e->nodes);
    free(e->args);
    free(e);
}

int vyre__expr_parse(const char *text, const vyre_axes *axes, vyre__expr **out, size_t *col,
                     vyre_error *err)
{
    if (col)
        *col = 0;
    if (!text || !out)
        return vyre__fail(err, VYRE_EINVAL, g_hint, "missing expression");
    *out = NULL;
    size_t len = strlen(text);
    if (len > VYRE__EXPR_TEXT_MAX)
        return vyre__fail(err, VYRE_EINVAL, g_hint, "expression is longer than %d characters",
                          VYRE__EXPR_TEXT_MAX);
    vyre__expr *e = calloc(1, sizeof *e);
    if (!e || !(e->text = strdup(text))) {
        free(e);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory parsing an expression");
    }
    parser p = {text, 0, axes, e, 0, col, err};
    skip_ws(&p);
    int rc = text[p.pos] == '\0' ? fail_at(&p, p.pos, VYRE_EINVAL, "the expression is empty")
                                 : parse_expr(&p, &e->root);
    if (!rc) {
        skip_ws(&p);
        if (text[p.pos] != '\0') {
            char here[16];
            describe_here(&p, here, sizeof here);
            rc = fail_at(&p, p.pos, VYRE_EINVAL, "expected an operator or the end, found %s", here);
        }
    }
    if (rc) {
        vyre__expr_free(e);
        return rc;
    }
    *out = e;
    return VYRE_OK;
}

/* ---- evaluation ---------------------------------------------------------- */

typedef struct evaluator {
    const vyre__expr *e;
    const vyre_axes *axes;
    const size_t *coords;
    vyre_error *err;
} evaluator;

static int64_t gcd64(int64_t a, int64_t b)
{
    /* Magnitudes as uint64 so that INT64_MIN is safe. */
    uint64_t x = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
    uint64_t y = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return x > (uint64_t)INT64_MAX ? 1 : (int64_t)x;
}

static int overflow(const evaluator *ev, const node *nd)
{
    return vyre__fail(ev->err, VYRE_ERANGE, "make the axis values or the expression smaller",
                      "column %zu: the value overflows a 64-bit integer", nd->col);
}

/* num/den (den != 0) normalised: den > 0, lowest terms. */
static int make_rat(const evaluator *ev, const node *nd, int64_t num, int64_t den, vyre__rat *out)
{
    if (den < 0) {
        if (num == INT64_MIN || den == INT64_MIN)
            return overflow(ev, nd);
        num = -num;
        den = -den;
    }
    int64_t g = gcd64(num, den);
    if (g > 1) {
        num /= g;
        den /= g;
    }
    out->num = num;
    out->den = den;
    return VYRE_OK;
}

static int eval_node(const evaluator *ev, size_t idx, vyre__rat *out)
{
    const node *nd = &ev->e->nodes[idx];
    vyre__rat x = {0, 1}, y = {0, 1};
    int rc;
    int64_t p, q, r;
    switch (nd->op) {
    case OP_NUM:
        out->num = nd->num;
        out->den = 1;
        return VYRE_OK;
    case OP_AXIS:
        out->num = vyre__axes_value_i(ev->axes, (size_t)nd->axis, ev->coords[nd->axis]);
        out->den = 1;
        return VYRE_OK;
    case OP_NEG:
        if ((rc = eval_node(ev, nd->a, &x)))
            return rc;
        if (x.num == INT64_MIN)
            return overflow(ev, nd);
        out->num = -x.num;
        out->den = x.den;
        return VYRE_OK;
    case OP_CEIL:
    case OP_FLOOR:
        if ((rc = eval_node(ev, nd->a, &x)))
            return rc;
        q = x.num / x.den; /* toward zero */
        r = x.num % x.den;
        if (r != 0 && nd->op == OP_CEIL && x.num > 0)
            q++;
        if (r != 0 && nd->op == OP_FLOOR && x.num < 0)
            q--;
        out->num = q;
        out->den = 1;
        return VYRE_OK;
    case OP_MIN:
    case OP_MAX:
        for (size_t i = 0; i < nd->nargs; i++) {
            if ((rc = eval_node(ev, ev->e->args[nd->first + i], &x)))
                return rc;
            if (i == 0) {
                *out = x;
                continue;
            }
            /* Compare x with *out exactly: x.num*out.den vs out.num*x.den. */
            __int128 lhs = (__int128)x.num * out->den, rhs = (__int128)out->num * x.den;
            if ((nd->op == OP_MIN && lhs < rhs) || (nd->op == OP_MAX && lhs > rhs))
                *out = x;
        }
        return VYRE_OK;
    default:
        break;
    }
    if ((rc = eval_node(ev, nd->a, &x)) || (rc = eval_node(ev, nd->b, &y)))
        return rc;
    switch (nd->op) {
    case OP_ADD:
    case OP_SUB: {
        int64_t yn = y.num;
        if (nd->op == OP_SUB) {
            if (yn == INT64_MIN)
                return overflow(ev, nd);
            yn = -yn;
        }
        if (x.den == y.den) {
            if (__builtin_add_overflow(x.num, yn, &p))
                return overflow(ev, nd);
            return make_rat(ev, nd, p, x.den, out);
        }
        int64_t a1, a2, d;
        if (__builtin_mul_overflow(x.num, y.den, &a1) || __builtin_mul_overflow(yn, x.den, &a2) ||
            __builtin_add_overflow(a1, a2, &p) || __builtin_mul_overflow(x.den, y.den, &d))
            return overflow(ev, nd);
        return make_rat(ev, nd, p, d, out);
    }
    case OP_MUL: {
        /* Cross-reduce first so that (N/64)*64 stays small. */
        int64_t g1 = gcd64(x.num, y.den), g2 = gcd64(y.num, x.den);
        if (g1 < 1)
            g1 = 1;
        if (g2 < 1)
            g2 = 1;
        if (__builtin_mul_overflow(x.num / g1, y.num / g2, &p) ||
            __builtin_mul_overflow(x.den / g2, y.den / g1, &q))
            return overflow(ev, nd);
        return make_rat(ev, nd, p, q, out);
    }
    case OP_DIV: {
        if (y.num == 0)
            return vyre__fail(ev->err, VYRE_EINVAL,
                              "guard the divisor, e.g. max(X, 1), or leave out the axis value 0",
                              "column %zu: division by zero", nd->col);
        int64_t g1 = gcd64(x.num, y.num), g2 = gcd64(x.den, y.den);
        if (g1 < 1)
            g1 = 1;
        if (g2 < 1)
            g2 = 1;
        if (__builtin_mul_overflow(x.num / g1, y.den / g2, &p) ||
            __builtin_mul_overflow(x.den / g2, y.num / g1, &q))
            return overflow(ev, nd);
        return make_rat(ev, nd, p, q, out);
    }
    default:
        return vyre__fail(ev->err, VYRE_EINVAL, NULL, "column %zu: bad expression node", nd->col);
    }
}

int vyre__expr_eval(const vyre__expr *e, const vyre_axes *axes, const size_t *coords,
                    vyre__rat *out, vyre_error *err)
{
    if (!e || !out || (!coords && axes && axes->n))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__expr_eval: NULL argument");
    evaluator ev = {e, axes, coords, err};
    return eval_node(&ev, e->root, out);
}

int vyre__expr_is_axis(const vyre__expr *e, int *axis)
{
    if (!e || e->nodes[e->root].op != OP_AXIS)
        return 0;
    if (axis)
        *axis = e->nodes[e->root].axis;
    return 1;
}

void vyre__expr_uses(const vyre__expr *e, unsigned char *used)
{
    for (size_t i = 0; e && i < e->n; i++)
        if (e->nodes[i].op == OP_AXIS)
            used[e->nodes[i].axis] = 1;
}

const char *vyre__expr_text(const vyre__expr *e)
{
    return e ? e->text : "";
}
