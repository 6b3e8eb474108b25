/*
 * managed_verify.c - verify and verify --repair of any kind of managed
 * cache (managed.h): every entry checked by its kind, the problems kept in
 * entry order, and with repair each unusable entry moved into the kind's
 * quarantine once, by the kind's own move.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "cache/managed.h"

void vyre__managed_found(vyre__managed_verdict *v, const char *file, const char *kind, int unusable,
                         const char *fmt, ...)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        vyre__managed_problem *p = realloc(v->p, cap * sizeof *p);
        if (!p) {
            v->oom = 1;
            return;
        }
        v->p = p;
        v->cap = cap;
    }
    vyre__managed_problem *p = &v->p[v->n++];
    memset(p, 0, sizeof *p);
    p->entry = v->at;
    p->kind = kind;
    p->unusable = unusable;
    vyre__strlcpy(p->file, file ? file : "", sizeof p->file);
    size_t off = vyre__strlcpy(p->message, v->prefix ? v->prefix : "", sizeof p->message);
    va_list ap;
    va_start(ap, fmt);
    if (off < sizeof p->message)
        vsnprintf(p->message + off, sizeof p->message - off, fmt, ap);
    va_end(ap);
}

/* Moves entry i; its state in *state (1 moved, else 2 + the error's index). */
static int repair_one(const vyre__managed_check_ops *ops, const void *kind, size_t i,
                      vyre__managed_verdict *v, size_t *state)
{
    vyre_error e;
    vyre_error_clear(&e);
    if (!ops->quarantine(kind, i, &e)) {
        v->moved++;
        *state = 1;
        return 0;
    }
    vyre_error *errs = realloc(v->errors, (v->n_errors + 1) * sizeof *errs);
    if (!errs)
        return VYRE_ENOMEM;
    v->errors = errs;
    errs[v->n_errors] = e;
    *state = 2 + v->n_errors++;
    return 0;
}

/* The entries the problems make unusable, each once and in order, moved
 * with repair; every problem of such an entry then says what became of it. */
static int plan_repairs(const vyre__managed_check_ops *ops, const void *kind, size_t n, int repair,
                        vyre__managed_verdict *v)
{
    size_t *state = calloc(n ? n : 1, sizeof *state); /* 0 fine, 1 bad, else as repair_one */
    if (!state)
        return VYRE_ENOMEM;
    for (size_t k = 0; k < v->n; k++)
        if (v->p[k].unusable && !state[v->p[k].entry]) {
            state[v->p[k].entry] = 1;
            v->unusable++;
        }
    int rc = 0;
    for (size_t i = 0; repair && !rc && i < n; i++)
        if (state[i])
            rc = repair_one(ops, kind, i, v, &state[i]);
    for (size_t k = 0; repair && !rc && k < v->n; k++) {
        size_t s = v->p[k].unusable ? state[v->p[k].entry] : 0;
        v->p[k].quarantined = s == 1 ? 1 : s ? -1 : 0;
        v->p[k].error = s > 1 ? s - 2 : 0;
    }
    free(state);
    return rc;
}

int vyre__managed_verify(const vyre__managed_check_ops *ops, const void *kind, int repair,
                         const char *what, vyre__managed_verdict *v, vyre_error *err)
{
    memset(v, 0, sizeof *v);
    size_t n = ops->count(kind);
    for (size_t i = 0; i < n && !v->oom; i++) {
        v->at = i;
        v->prefix = NULL;
        ops->check(kind, i, v);
    }
    if (v->oom || plan_repairs(ops, kind, n, repair, v)) {
        vyre__managed_verdict_release(v);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying '%s'", what);
    }
    return 0;
}

void vyre__managed_verdict_release(vyre__managed_verdict *v)
{
    if (!v)
        return;
    free(v->p);
    free(v->errors);
    v->p = NULL;
    v->errors = NULL;
    v->n = v->cap = v->n_errors = 0;
}
