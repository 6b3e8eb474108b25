/*
 * tool_sanitize.h - the one sanitiser every front end prints foreign text
 * through: strings read from a results database, a blob header or a
 * telemetry page (gpu names, source names, process, range and kernel
 * names). Those files travel (CI artifacts, shared caches, other users'
 * pages), so their text must never reach a terminal as control sequences.
 *
 * What is escaped, as the bytes it stands for:
 *   - C0 controls (0x00-0x1f, ESC and TAB and newline included) and DEL as
 *     "\x1b", "\x7f", ...;
 *   - C1 controls (U+0080-U+009F, which some terminals obey as CSI/OSC
 *     even in UTF-8 mode) and the bidirectional overrides and isolates
 *     (U+202A-U+202E, U+2066-U+2069, which reorder what is shown) as
 *     "\u009b", "\u202e";
 *   - every byte that is not part of valid UTF-8 (stray continuation
 *     bytes, overlong forms, surrogates, beyond U+10FFFF, cut sequences)
 *     as "\xff".
 * Everything else, valid UTF-8 text included, is copied unchanged: a
 * clean string comes out byte for byte. A backslash is kept as it is.
 *
 * JSON output needs none of this (jansson escapes it); CSV and markdown
 * written to a file or pipe are data and are left alone too.
 */
#ifndef VYRE_TOOL_SANITIZE_H
#define VYRE_TOOL_SANITIZE_H

#include <stddef.h>
#include <stdio.h>

/* Bytes a buffer needs to hold any string of n bytes cleaned, with its NUL
 * (each input byte becomes at most 4 output bytes). */
#define TOOL_CLEAN_SIZE(n) ((n)*4 + 1)

/* Flags. */
enum {
    TOOL_CLEAN_KEEP_NEWLINE = 1, /* newline and tab pass (multi-line messages) */
};

/* Writes s cleaned into buf (size bytes, size >= 1; always NUL-terminated)
 * and returns buf. Output that does not fit is cut before a whole escape
 * or character, never inside one. s NULL is "". */
const char *tool_clean(const char *s, char *buf, size_t size);

/* tool_clean with flags (TOOL_CLEAN_*). */
const char *tool_clean_flags(const char *s, int flags, char *buf, size_t size);

/* Writes s cleaned to out (any length; no NUL needed in out). */
void tool_clean_fputs(const char *s, FILE *out);

/* The same-width form, for a grid of one byte per cell (vyre-top's
 * screen): writes the n bytes of s into dst (n bytes, no NUL added) with
 * every byte of a unit tool_clean would escape replaced by '?'. Returns
 * the number of bytes replaced. */
size_t tool_clean_mask(const char *s, size_t n, char *dst);

/* 1 when s would come out of tool_clean unchanged. */
int tool_clean_is_clean(const char *s);

#endif /* VYRE_TOOL_SANITIZE_H */
