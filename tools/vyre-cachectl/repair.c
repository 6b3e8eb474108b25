/*
 * repair.c - verify --repair of the foreign kinds (see repair.h): the
 * problems grouped by entry in n log n (a cache full of foreign names has
 * one problem each), each unusable entry moved once.
 */
#include "repair.h"

#include <stdlib.h>
#include <string.h>

typedef struct pref {
    const char *entry;
    size_t i;
} pref;

static int cmp_pref(const void *a, const void *b)
{
    const pref *x = a, *y = b;
    int c = strcmp(x->entry, y->entry);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        abort();
    return p;
}

/* r->lead[i]: the first problem (in the kind's order) naming i's entry. */
static void group(const cachectl_problems *p, cachectl_repair *r)
{
    pref *v = xcalloc(p->n, sizeof *v);
    for (size_t i = 0; i < p->n; i++)
        v[i] = (pref){p->entry(p->ctx, i), i};
    qsort(v, p->n, sizeof *v, cmp_pref);
    for (size_t k = 0, lead = 0; k < p->n; k++) {
        if (k == 0 || strcmp(v[k].entry, v[k - 1].entry))
            lead = v[k].i;
        r->lead[v[k].i] = lead;
    }
    free(v);
}

void cachectl_repair_run(const cachectl_problems *p, int repair, cachectl_repair *r)
{
    memset(r, 0, sizeof *r);
    r->n = p->n;
    r->lead = xcalloc(p->n, sizeof *r->lead);
    r->state = xcalloc(p->n, sizeof *r->state);
    r->fail = xcalloc(p->n, sizeof *r->fail);
    group(p, r);
    unsigned char *bad = xcalloc(p->n, 1);
    for (size_t i = 0; i < p->n; i++)
        bad[r->lead[i]] |= p->unusable(p->ctx, i) != 0;
    for (size_t i = 0; i < p->n; i++) {
        if (r->lead[i] != i || !bad[i])
            continue;
        r->bad_entries++;
        if (!repair)
            continue;
        vyre_error err;
        vyre_error_clear(&err);
        if (p->quarantine(p->ctx, p->entry(p->ctx, i), &err)) {
            if ((r->n_fail & (r->n_fail - 1)) == 0) /* 0, 1, 2, 4, ...: double */
                r->errs = realloc(r->errs, (r->n_fail ? 2 * r->n_fail : 1) * sizeof *r->errs);
            if (!r->errs)
                abort();
            r->errs[r->n_fail] = err;
            r->state[i] = REPAIR_FAILED;
            r->fail[i] = ++r->n_fail;
        } else {
            r->state[i] = REPAIR_MOVED;
            r->moved++;
        }
    }
    free(bad);
}

int cachectl_repair_state(const cachectl_repair *r, size_t i)
{
    return r->state[r->lead[i]];
}

const vyre_error *cachectl_repair_error(const cachectl_repair *r, size_t i)
{
    size_t f = r->fail[r->lead[i]];
    return f ? &r->errs[f - 1] : NULL;
}

void cachectl_repair_release(cachectl_repair *r)
{
    free(r->lead);
    free(r->state);
    free(r->fail);
    free(r->errs);
    memset(r, 0, sizeof *r);
}
