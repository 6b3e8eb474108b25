/*
 * vyre/export.h - symbol visibility for libvyrecore.
 *
 * This header is part of libvyrecore's public API. The library is built with
 * hidden visibility; only declarations marked VYRE_EXTERN are exported.
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

/*
 * Calls that only libcore and its tests use (SQLite's SQLITE_TEST fence):
 * declared under #ifdef VYRE_TESTING, which libcore's own build and the
 * test, fuzz and injection builds define (libcore/CMakeLists.txt) and an
 * outside program does not, and left hidden in libvyrecore.so.
 */
#define VYRE_TEST_API

#endif /* VYRE_EXPORT_H */
