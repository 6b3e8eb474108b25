/*
 * vyre/export.h - symbol visibility for libvyrecore.
 *
 * This header is part of libvyrecore's public API. The library is built with
 * hidden visibility; only declarations marked VYRE_EXTERN are exported.
 * Calls that only libcore and its tests use are not declared here at all:
 * they are vyre__ functions in private headers under libcore/src, as
 * SQLite keeps its SQLITE_TEST hooks in sqliteInt.h.
 */
#ifndef VYRE_EXPORT_H
#define VYRE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define VYRE_EXTERN            __attribute__((visibility("default")))
#define VYRE_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define VYRE_EXTERN
#define VYRE_PRINTF(fmt, args)
#endif

#endif /* VYRE_EXPORT_H */
