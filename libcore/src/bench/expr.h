/*
 * expr.h - the small integer expressions of sweep specs: grid sizes,
 * element counts, shared memory, bytes and flops as functions of the axes
 * ("ceil(N/1024)", "M/64", "2*M*N*K", "min(N, 4096)"). Not public.
 *
 * Grammar (recursive descent, usual precedence, left associative):
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/') unary)*
 *   unary   := ('+' | '-') unary | primary
 *   primary := NUMBER | AXIS | FUNC '(' expr (',' expr)* ')' | '(' expr ')'
 *   FUNC    := ceil | floor (one argument) | min | max (one or more)
 *
 * NUMBER is decimal digits, optionally with a size suffix as -a takes them
 * (64K = 65536, 1M = 1048576; vyre_parse_size). AXIS names an integer axis
 * of the sweep. Values are exact rationals of int64 numerator and
 * denominator: '/' divides exactly, so ceil(N/1024) is the number of
 * 1024-element programs and N/64 is whole only when 64 divides N; callers
 * that need an integer (grids, counts) reject a fraction. Every operation
 * checks for int64 overflow; division by zero is an error. Errors name
 * the 1-based column of the offending character (parse) or operator
 * (evaluation).
 */
#ifndef VYRE_BENCH_EXPR_H
#define VYRE_BENCH_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "vyre/axes.h"
#include "vyre/error.h"

#define VYRE__EXPR_TEXT_MAX  1024 /* characters of an expression */
#define VYRE__EXPR_DEPTH_MAX 64   /* nesting of parentheses and calls */

/* A compiled expression (malloc'ed; vyre__expr_free). */
typedef struct vyre__expr vyre__expr;

/* An exact value: num / den, den > 0, in lowest terms. */
typedef struct vyre__rat {
    int64_t num;
    int64_t den;
} vyre__rat;

/*
 * Parses text against axes (names are looked up now). On success *out is
 * the caller's. On failure returns VYRE_EINVAL (syntax, unknown or
 * floating-point axis, bad function) or VYRE_ERANGE (a number beyond
 * int64) with a message "column C: ..." and a hint, and *col (when not
 * NULL) is that column.
 */
int vyre__expr_parse(const char *text, const vyre_axes *axes, vyre__expr **out, size_t *col,
                     vyre_error *err);

/* Evaluates e at the point coords (vyre__axes_point of the same axes).
 * Returns 0, VYRE_EINVAL (division by zero) or VYRE_ERANGE (overflow),
 * with a message "column C: ...". */
int vyre__expr_eval(const vyre__expr *e, const vyre_axes *axes, const size_t *coords,
                    vyre__rat *out, vyre_error *err);

/* 1 when e is a lone axis name; *axis is its index. */
int vyre__expr_is_axis(const vyre__expr *e, int *axis);

/* Sets used[a] = 1 for every axis a that e refers to. */
void vyre__expr_uses(const vyre__expr *e, unsigned char *used);

/* The text e was parsed from (owned by e). */
const char *vyre__expr_text(const vyre__expr *e);

/* Frees e. NULL is a no-op. */
void vyre__expr_free(vyre__expr *e);

#endif /* VYRE_BENCH_EXPR_H */
