/*
 * verify_print.h - the one report of `verify [--repair]` for the managed
 * kinds (Triton's groups, TorchInductor's entries), driven by a
 * description of the kind. libcore checks and moves (vyre_triton_verify,
 * vyre_inductor_verify: the managed-cache engine); this prints what it
 * found, one line a problem, what became of each unusable entry, a
 * summary and hints, or the --json document.
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
} cachectl_vproblem;

/* A kind's verify: its words and its result. The problems of one entry
 * are contiguous (libcore's order). */
typedef struct cachectl_verify {
    const char *cmd;            /* "triton": the command the hint names */
    const char *who;            /* "Triton": what compiles a moved entry again */
    const char *one, *many;     /* "group", "groups" */
    const char *quarantine;     /* the folder unusable entries move to */
    const char *unusable_field; /* JSON: "group_unusable" */
    int name_entry;             /* text lines name the entry after the kind */
    size_t n;
    const void *ctx;
    void (*get)(const void *ctx, size_t i, cachectl_vproblem *p);
    /* The kind's own fields of problem i's JSON object, set first. */
    void (*json_problem)(const void *ctx, size_t i, json_t *o);
    /* The JSON document with the kind's own fields (new reference). */
    json_t *(*json_root)(const void *ctx);
    /* Prints the start of the summary ("2 groups checked, "). */
    void (*checked)(const void *ctx);
    /* Prints what the summary adds for the kind (may be NULL). */
    void (*after)(const void *ctx);
} cachectl_verify;

/* Prints k's report (text, or the --json document); returns the exit
 * status: 0 clean, 1 problems (or a move that failed). */
int cachectl_verify_report(const cachectl_verify *k, int repair);

#endif /* VYRE_CACHECTL_VERIFY_PRINT_H */
