/*
 * tally.h - what a prune or clear of any kind of cache says: one printer
 * for the line of each entry, the summary and the summary's JSON fields,
 * driven by a description of the kind (cachectl_kind: its nouns, the
 * template of its lines, its JSON names). vyre's own cache, Triton's and
 * TorchInductor's word their reports differently, and scripts read those
 * words, so the words stay per kind while the counting and printing is
 * written once.
 *
 * A template is text with fields in braces:
 *   {A|B}       A, or B with a dry run ("{Removed|Would remove}")
 *   {NAME}      a count, or a size when NAME ends in "_bytes" (a tally's
 *               fields: removed, kept_bytes, ...; a row's: key, name,
 *               kind, arch, reason, path, size, inodes, verb)
 *   {NAME:SPEC} the same as printf's "%SPECs" ([-]WIDTH[.PREC]); PREC cuts
 *               the raw text before it is made printable (tool_clean)
 *   {noun N}    the kind's noun for the count N ("group" or "groups")
 *   {ONE/MANY N}  ONE or MANY by the count N ("{it/them young}", "{/s n}")
 */
#ifndef VYRE_CACHECTL_TALLY_H
#define VYRE_CACHECTL_TALLY_H

#include <stdint.h>

#include <jansson.h>

/* The counts of one prune or clear (cachectl_tally.v). */
enum {
    TALLY_EXAMINED,
    TALLY_REMOVED,
    TALLY_REMOVED_BYTES,
    TALLY_REMOVED_INODES,
    TALLY_KEPT,
    TALLY_KEPT_BYTES,
    TALLY_KEPT_INODES,
    TALLY_YOUNG,
    TALLY_YOUNG_BYTES,
    TALLY_FAILED,
    TALLY_TRASH,
    TALLY_FOREIGN,
    TALLY_QUARANTINE,
    TALLY_QUARANTINE_BYTES,
    TALLY_TOTAL_BYTES,
    TALLY_N
};

typedef struct cachectl_tally {
    uint64_t v[TALLY_N];
    const char *reasons; /* {reasons}: a kind's breakdown (": 3 by size"), else NULL */
    const char *dir;     /* {dir}: the cache's directory, else NULL */
    int dry_run;
} cachectl_tally;

/* One line of a summary: said when the count `when` is not 0 (-1: always). */
typedef struct cachectl_line {
    int when;
    const char *text;
} cachectl_line;

/* One JSON field of a tally: the count `field` under `name`. */
typedef struct cachectl_jfield {
    const char *name;
    int field;
} cachectl_jfield;

/* A kind as its reports name it. The arrays end with a NULL text/name. */
typedef struct cachectl_kind {
    const char *one, *many;        /* the noun: "blob", "blobs" */
    const char *row;               /* a removed entry's line (cachectl_row) */
    const cachectl_line *summary;  /* the summary's lines, in order */
    const cachectl_jfield *fields; /* the tally's JSON fields, in order */
} cachectl_kind;

/* One entry removed, or whose removal failed. Strings may be NULL ("");
 * all are made printable. */
typedef struct cachectl_row {
    const char *key, *name, *kind, *arch, *reason, *path;
    uint64_t bytes, inodes;
    int failed;
} cachectl_row;

/* Prints row r by the template t (NULL: the kind's row) and a newline.
 * {verb} is "removed", "would remove" or "could not remove". */
void cachectl_row_print(const cachectl_kind *k, const char *t, const cachectl_row *r, int dry_run);

/* Prints the summary lines of k whose count is not 0. */
void cachectl_tally_print(const cachectl_kind *k, const cachectl_tally *t);

/* Sets the kind's JSON fields of t on o, in order. */
void cachectl_tally_json(const cachectl_kind *k, const cachectl_tally *t, json_t *o);

#endif /* VYRE_CACHECTL_TALLY_H */
