/*
 * expo.h - a writer of the Prometheus text exposition format (version
 * 0.0.4): families with exactly one "# HELP" and one "# TYPE" line each,
 * samples with escaped label values, bounded output.
 *
 * Pure: no I/O, no libcore state; unit-tested (tests/unit/test_exporter.c).
 * Samples of one family must be written together, right after
 * expo_family(): the format forbids interleaving families. A family named
 * twice is refused (expo_family returns -1 and its samples are dropped), so
 * a renderer bug cannot produce a second HELP/TYPE pair.
 */
#ifndef VYRE_EXPORTER_EXPO_H
#define VYRE_EXPORTER_EXPO_H

#include <stddef.h>
#include <stdint.h>

#define EXPO_MAX_FAMILIES 128

typedef struct expo_label {
    const char *name;  /* [a-zA-Z_][a-zA-Z0-9_]*, not checked */
    const char *value; /* any bytes: escaped, invalid UTF-8 becomes '?' */
} expo_label;

typedef struct expo {
    char *buf; /* NUL-terminated; malloc'ed */
    size_t len;
    size_t cap;
    size_t limit;   /* output stops growing past this many bytes */
    int truncated;  /* 1: a line was dropped because of limit (or memory) */
    int skip;       /* current family refused: drop its samples */
    size_t dropped; /* samples dropped (limit, memory or refused family) */
    const char *families[EXPO_MAX_FAMILIES]; /* names (static strings) */
    size_t nfamilies;
} expo;

/* Starts an empty document of at most limit bytes (0: 64 MiB). */
void expo_init(expo *e, size_t limit);
void expo_free(expo *e);

/* Starts family `name` (a static string) of type "counter", "gauge" or
 * "histogram", writing its HELP and TYPE lines. Returns 0, or -1 when the
 * family was already written (its samples are then dropped). */
int expo_family(expo *e, const char *name, const char *type, const char *help);

/* One sample line: metric{labels} value. metric is the family name, or for
 * histograms the family name plus "_bucket", "_sum" or "_count". The extra
 * label (NULL for none) comes last, for "le". */
void expo_sample(expo *e, const char *metric, const expo_label *labels, size_t nlabels,
                 const expo_label *extra, double value);
/* The same with an exact integer value. */
void expo_sample_u64(expo *e, const char *metric, const expo_label *labels, size_t nlabels,
                     const expo_label *extra, uint64_t value);

/* Appends the escaped form of a label value (backslash, double quote and
 * newline escaped; invalid UTF-8 bytes replaced by '?') to out, at most
 * size - 1 bytes, never cutting an escape; returns the length written. */
size_t expo_escape_label(char *out, size_t size, const char *value);

/* Formats a sample value as the format wants ("NaN", "+Inf", "-Inf", or
 * the shortest "%.17g"-exact number); returns out. */
const char *expo_format_value(char *out, size_t size, double v);

#endif /* VYRE_EXPORTER_EXPO_H */
