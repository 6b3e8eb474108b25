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

#include "base/clock.h"
#include "base/internal.h"
#include "cache/managed.h"

void vyre__managed_found(vyre__managed_verdict *v, const char *file, const char *kind, int unusable,
                         const char *fmt, ...)
{
    if (vyre__grow(&v->p, &v->cap, v->n + 1, sizeof *v->p, 16)) {
        v->oom = 1;
        return;
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

/* 1: entry i was touched within the guard (read again now), so a writer
 * may still be creating it; it is not moved. */
static int young(const vyre__managed_check_ops *ops, const void *kind, size_t i)
{
    int64_t t = ops->touched ? ops->touched(kind, i) : 0;
    return t > 0 && vyre__unix_ns() - t < VYRE__MANAGED_GUARD_NS;
}

/* Each entry the problems make unusable, once (its problems are
 * contiguous: each check finds only its own entry's), moved with repair
 * unless it is young; its problems that make it unusable then say what
 * became of it. */
static int plan_repairs(const vyre__managed_check_ops *ops, const void *kind, int repair,
                        vyre__managed_verdict *v)
{
    for (size_t k = 0, end; k < v->n; k = end) {
        int bad = 0;
        for (end = k; end < v->n && v->p[end].entry == v->p[k].entry; end++)
            bad |= v->p[end].unusable;
        v->unusable += (uint64_t)bad;
        if (!bad || !repair)
            continue;
        if (young(ops, kind, v->p[k].entry)) {
            v->young++;
            for (size_t j = k; j < end; j++)
                v->p[j].young = v->p[j].unusable;
            continue;
        }
        vyre_error e;
        vyre_error_clear(&e);
        int moved = ops->quarantine(kind, v->p[k].entry, &e) == 0;
        if (!moved) {
            vyre_error *errs = realloc(v->errors, (v->n_errors + 1) * sizeof *errs);
            if (!errs)
                return VYRE_ENOMEM;
            v->errors = errs;
            errs[v->n_errors++] = e;
        }
        v->moved += (uint64_t)moved;
        for (size_t j = k; j < end; j++)
            if (v->p[j].unusable) {
                v->p[j].quarantined = moved ? 1 : -1;
                v->p[j].error = moved ? 0 : v->n_errors - 1;
            }
    }
    return 0;
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
    if (v->oom || plan_repairs(ops, kind, repair, v)) {
        vyre__managed_verdict_release(v);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory verifying '%s'", what);
    }
    return 0;
}

void vyre__managed_young_error(vyre_error *e)
{
    vyre__fail(e, VYRE_EBUSY, "a writer may still be creating it: verify --repair again later",
               "%s", VYRE__MANAGED_YOUNG_MESSAGE);
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
