/*
 * managed_prune.c - the managed-cache engine (managed.h): plans and
 * carries out prune and clear of any kind behind the operations table.
 * What it guarantees is written in managed.h.
 */
#include <stdlib.h>
#include <string.h>

#include "cache/managed.h"

typedef struct plan {
    const vyre__managed_ops *ops;
    void *kind;
    const vyre__managed_opts *o;
    vyre__managed_result *r;
    vyre__managed_entry *e; /* every entry, described once */
    size_t n;
    uint64_t bytes; /* the cache's bytes as they stand */
    size_t *q;      /* remove_batch: the entries taken and not yet removed */
    const char **q_reason;
    unsigned char *q_state; /* what remove_batch made of each */
    size_t nq;
    vyre_error *err;
} plan;

static int prunable(const plan *p, size_t i)
{
    return (p->e[i].flags & VYRE__MANAGED_PRUNABLE) != 0;
}

/* Removes the entries queued for remove_batch, then reports the ones
 * that went. An entry left (young, failed) counts in the cache's bytes
 * again: take() had counted it gone. */
static int flush(plan *p)
{
    if (!p->nq)
        return 0;
    memset(p->q_state, VYRE__MANAGED_REMOVED, p->nq);
    int rc = p->ops->remove_batch(p->kind, p->q, p->nq, p->q_state, p->err);
    vyre__managed_result *r = p->r;
    for (size_t k = 0; k < p->nq; k++) {
        size_t i = p->q[k];
        uint64_t bytes = p->e[i].bytes;
        r->state[i] = p->q_state[k];
        if (r->state[i] == VYRE__MANAGED_REMOVED) {
            r->removed++;
            r->removed_bytes += bytes;
            int e = p->ops->report ? p->ops->report(p->kind, i, p->q_reason[k], 0, NULL) : 0;
            rc = rc ? rc : e;
        } else if (r->state[i] == VYRE__MANAGED_YOUNG || r->state[i] == VYRE__MANAGED_FAILED) {
            r->young += r->state[i] == VYRE__MANAGED_YOUNG;
            r->young_bytes += r->state[i] == VYRE__MANAGED_YOUNG ? bytes : 0;
            r->failed += r->state[i] == VYRE__MANAGED_FAILED;
            p->bytes += bytes;
        } /* GONE: out of the cache already, as counted */
    }
    p->nq = 0;
    return rc;
}

/* Takes entry i for `reason`, unless it is young or gone. 0, or the
 * report's VYRE_ENOMEM, or remove_batch's failure. */
static int take(plan *p, size_t i, const char *reason)
{
    vyre__managed_result *r = p->r;
    uint64_t bytes = p->e[i].bytes;
    int64_t t = p->ops->touched(p->kind, i);
    if (t >= 0 && p->o->now_ns - t < VYRE__MANAGED_GUARD_NS) {
        r->state[i] = VYRE__MANAGED_YOUNG;
        r->young++;
        r->young_bytes += bytes;
        return 0;
    }
    if (t >= 0 && p->q && !p->o->dry_run) {
        /* Counted as gone now, so the size limit stops in time; reported
         * once the batch is removed. */
        r->state[i] = VYRE__MANAGED_REMOVED;
        p->bytes -= bytes < p->bytes ? bytes : p->bytes;
        p->q[p->nq] = i;
        p->q_reason[p->nq++] = reason;
        return p->nq == p->ops->batch ? flush(p) : 0;
    }
    vyre_error err;
    vyre_error_clear(&err);
    int rc = t < 0 ? VYRE_ENOENT : p->o->dry_run ? 0 : p->ops->remove(p->kind, i, &err);
    if (rc == VYRE_ENOENT) { /* another pruner won, or the owner itself */
        r->state[i] = VYRE__MANAGED_GONE;
        p->bytes -= bytes < p->bytes ? bytes : p->bytes;
        return 0;
    }
    if (rc) {
        r->state[i] = VYRE__MANAGED_FAILED;
        r->failed++;
    } else {
        r->state[i] = VYRE__MANAGED_REMOVED;
        r->removed++;
        r->removed_bytes += bytes;
        p->bytes -= bytes < p->bytes ? bytes : p->bytes;
    }
    return p->ops->report ? p->ops->report(p->kind, i, reason, rc, &err) : 0;
}

/* Why entry i goes in step 1, or NULL. */
static const char *reason_of(const plan *p, size_t i)
{
    const vyre__managed_opts *o = p->o;
    if (prunable(p, i)) {
        if (o->all)
            return "clear";
        if (o->max_age_ns > 0 && o->now_ns - p->e[i].last_use_ns > o->max_age_ns)
            return "age";
    }
    return p->ops->own_reason ? p->ops->own_reason(p->kind, i, o) : NULL;
}

static int cmp_lru(const void *a, const void *b, void *arg)
{
    const vyre__managed_entry *e = arg;
    const vyre__managed_entry *x = &e[*(const size_t *)a], *y = &e[*(const size_t *)b];
    if (x->last_use_ns != y->last_use_ns)
        return x->last_use_ns < y->last_use_ns ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : (x > y) - (x < y); /* ties: the kind's list order */
}

/* Every entry, least recently used first, into order (n of them). */
static void lru_order(const plan *p, size_t *order)
{
    for (size_t i = 0; i < p->n; i++)
        order[i] = i;
    qsort_r(order, p->n, sizeof *order, cmp_lru, p->e);
}

static int run(plan *p, size_t *order)
{
    int rc = 0;
    if (p->ops->lru_order)
        lru_order(p, order);
    for (size_t k = 0; !rc && k < p->n; k++) {
        size_t i = p->ops->lru_order ? order[k] : k;
        const char *why = reason_of(p, i);
        if (why)
            rc = take(p, i, why);
    }
    if (!rc && p->bytes > p->o->max_bytes) {
        lru_order(p, order);
        for (size_t k = 0; !rc && k < p->n && p->bytes > p->o->max_bytes; k++)
            if (p->r->state[order[k]] == VYRE__MANAGED_KEPT && prunable(p, order[k]))
                rc = take(p, order[k], "size");
    }
    return rc ? rc : flush(p);
}

int vyre__managed_prune(const vyre__managed_ops *ops, void *kind, uint64_t total_bytes,
                        const vyre__managed_opts *o, vyre__managed_result *r, vyre_error *err)
{
    memset(r, 0, sizeof *r);
    plan p = {.ops = ops, .kind = kind, .o = o, .r = r, .n = ops->count(kind), .err = err};
    p.bytes = total_bytes;
    size_t cap = p.n ? p.n : 1;
    r->state = calloc(cap, 1);
    p.e = calloc(cap, sizeof *p.e);
    size_t *order = malloc(cap * sizeof *order);
    int rc = r->state && p.e && order ? 0 : VYRE_ENOMEM;
    if (!rc && ops->remove_batch && ops->batch) {
        p.q = malloc(ops->batch * sizeof *p.q);
        p.q_reason = malloc(ops->batch * sizeof *p.q_reason);
        p.q_state = malloc(ops->batch);
        rc = p.q && p.q_reason && p.q_state ? 0 : VYRE_ENOMEM;
    }
    for (size_t i = 0; !rc && i < p.n; i++) {
        ops->describe(kind, i, &p.e[i]);
        if (!p.e[i].name)
            p.e[i].name = "";
    }
    if (!rc)
        rc = run(&p, order);
    r->kept_bytes = p.bytes;
    free(p.q);
    free(p.q_reason);
    free(p.q_state);
    free(order);
    free(p.e);
    return rc;
}

void vyre__managed_result_release(vyre__managed_result *r)
{
    if (!r)
        return;
    free(r->state);
    r->state = NULL;
}
