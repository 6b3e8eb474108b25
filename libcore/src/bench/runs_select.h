/*
 * runs_select.h - selectors of runs by their facts (runs_select.c), for
 * the modules that filter runs with them (runs_history.c). Not public API.
 */
#ifndef VYRE_BENCH_RUNS_SELECT_H
#define VYRE_BENCH_RUNS_SELECT_H

#include <stddef.h>

#include "bench/store.h"
#include "vyre/error.h"

#define VYRE__SELECT_MAX 8

typedef struct term {
    int key; /* index in runs_select.c's key table */
    char value[260];
} term;

/* A parsed selector: its KEY=VALUE terms and, with `last-N`, N. */
typedef struct vyre__select {
    term t[VYRE__SELECT_MAX];
    size_t n;
    long long back;
    long long pool; /* last:K: K; 0 for last / last-N */
} vyre__select;

/* Parses sel; need_last: it must end with last / last-N (a selector),
 * else it must not have one (a filter). 0 or VYRE_EINVAL / VYRE_ENOTSUP. */
int vyre__select_parse(const char *sel, int need_last, vyre__select *out, vyre_error *err);

/* Appends " AND <term>" for each term to sql (size) at o, parameters
 * numbered from first; returns the new length. Columns are the runs
 * table's, unqualified. */
size_t vyre__select_sql(const vyre__select *f, int first, char *sql, size_t size, size_t o);

/* Binds the terms' values from parameter first on. */
void vyre__select_bind(const vyre__select *f, int first, vyre__stmt *st);

#endif /* VYRE_BENCH_RUNS_SELECT_H */
