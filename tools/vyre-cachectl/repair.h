/*
 * repair.h - verify --repair of the foreign kinds (Triton's groups,
 * TorchInductor's entries), written once: the problems a kind's verify
 * found are grouped by the entry they name, and each entry one of them
 * makes unusable is moved into the kind's quarantine once, by the kind's
 * own move. What became of each entry is kept for the printers: moved,
 * not moved, or a move that failed and why.
 */
#ifndef VYRE_CACHECTL_REPAIR_H
#define VYRE_CACHECTL_REPAIR_H

#include <stddef.h>

#include "vyre/error.h"

/* What became of an entry (cachectl_repair_state). */
enum { REPAIR_NOT_MOVED = 0, REPAIR_MOVED, REPAIR_FAILED };

/* A kind's problems as repair sees them; ctx is the kind's own. */
typedef struct cachectl_problems {
    size_t n;
    const void *ctx;
    const char *(*entry)(const void *ctx, size_t i); /* the entry problem i names */
    int (*unusable)(const void *ctx, size_t i);      /* 1: i makes its entry unusable */
    /* Moves entry into the quarantine: 0, or the failure with err. */
    int (*quarantine)(const void *ctx, const char *entry, vyre_error *err);
} cachectl_problems;

typedef struct cachectl_repair {
    size_t n;
    size_t *lead;         /* per problem: the first problem naming its entry */
    unsigned char *state; /* per problem, at its lead: REPAIR_* of the entry */
    size_t *fail;         /* per problem, at its lead: 1 + the index in errs, else 0 */
    vyre_error *errs;     /* the failed moves, in the order of their entries */
    size_t n_fail;
    size_t bad_entries; /* entries a problem makes unusable */
    size_t moved;       /* of those, moved */
} cachectl_repair;

/* Groups p's problems by entry and, with repair, moves each unusable
 * entry once. Aborts when out of memory (a front end's x-wrapper rule).
 * Release r with cachectl_repair_release. */
void cachectl_repair_run(const cachectl_problems *p, int repair, cachectl_repair *r);

/* What became of the entry problem i names. */
int cachectl_repair_state(const cachectl_repair *r, size_t i);

/* The failed move of the entry problem i names, else NULL. */
const vyre_error *cachectl_repair_error(const cachectl_repair *r, size_t i);

void cachectl_repair_release(cachectl_repair *r);

#endif /* VYRE_CACHECTL_REPAIR_H */
