/*
 * verify_print.h - the one report of `verify [--repair]` for every kind of
 * cache vyre-cachectl checks: vyre's own blobs, Triton's groups and
 * TorchInductor's entries, driven by a description of the kind. libcore
 * checks and repairs (vyre_cache_verify, vyre_triton_verify,
 * vyre_inductor_verify); this prints what it found, one line a problem
 * and what became of it, the kind's summary and hints, or the --json
 * document, and chooses the exit status.
 */
#ifndef VYRE_CACHECTL_VERIFY_PRINT_H
#define VYRE_CACHECTL_VERIFY_PRINT_H

#include <stddef.h>

#include <jansson.h>

#include "vyre/error.h"

/* One problem as the report sees it (pointers into the kind's result). */
typedef struct cachectl_vproblem {
    const char *entry, *kind, *message;
    int unusable;                   /* it makes its entry unusable */
    int quarantined;                /* with --repair, when unusable: 1 moved, -1 the move failed */
    const vyre_error *repair_error; /* quarantined -1: why */
    /* A kind that repairs problem by problem (one_by_one): what repair did
     * or would do to this one ("row deleted", "left"; NULL: nothing) and
     * whether it did. */
    const char *action;
    int repaired;
} cachectl_vproblem;

/* A kind's verify: its words and its result. The problems of one entry
 * are contiguous (libcore's order).
 *
 * A managed kind (Triton, Inductor) moves an unusable entry as a whole:
 * each line is "KIND: [ENTRY: ]MESSAGE" and says whether the entry was
 * moved; the summary says what was checked, what was unusable and what
 * moved. vyre's own cache repairs each problem alone (one_by_one): each
 * line is "KIND ENTRY (MESSAGE): ACTION", the kind in a column, and
 * --repair that leaves nothing unrepaired is clean. */
typedef struct cachectl_verify {
    int one_by_one;             /* problems repaired one at a time (vyre's cache) */
    const char *cmd;            /* "triton": the command the hint names */
    const char *who;            /* "Triton": what compiles a moved entry again */
    const char *one, *many;     /* "group", "groups" */
    const char *quarantine;     /* the folder unusable entries move to */
    const char *unusable_field; /* JSON: "group_unusable" */
    int name_entry;             /* text lines name the entry after the kind */
    size_t n;
    const void *ctx;
    void (*get)(const void *ctx, size_t i, cachectl_vproblem *p);
    /* The kind's own fields of problem i's JSON object (one_by_one: every
     * field but "kind", set after it; else set first, the managed ones after). */
    void (*json_problem)(const void *ctx, size_t i, json_t *o);
    /* The JSON document with the kind's own fields (new reference); the
     * report adds "problems" and "clean". */
    json_t *(*json_root)(const void *ctx);
    /* Prints the start of the summary ("2 groups checked, "). */
    void (*checked)(const void *ctx);
    /* Prints what the summary adds for the kind (may be NULL). */
    void (*after)(const void *ctx);
    /* one_by_one: prints the whole summary, in place of the managed
     * kinds' one. */
    void (*summary)(const void *ctx, int repair);
} cachectl_verify;

/* Prints k's report (text, or the --json document; -q: only the moves
 * that failed); returns the exit status: 0 clean, 1 problems (or a move
 * that failed). */
int cachectl_verify_report(const cachectl_verify *k, int repair);

#endif /* VYRE_CACHECTL_VERIFY_PRINT_H */
