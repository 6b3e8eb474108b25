/*
 * resp.h - framing and bounding of Redis replies (internal).
 *
 * hiredis's redisReader buffers whatever it is fed until a reply is whole:
 * a reply that declares "$2147483647" makes it keep 2 GiB (seen: 1.5 GB
 * RSS from one GET). So the Redis transport (redis_conn.c) looks at
 * the bytes it has received with vyre__resp_frame before it gives them to
 * hiredis: a declared length above the remote's max-object-size is refused
 * from the header, before any of the body is read, and hiredis is fed a
 * reply only once it is complete and known to be within bounds.
 *
 * RESP2 only (what Redis answers GET, SET, AUTH and SELECT with, and all
 * that Debian's hiredis 0.14 reads). Pure function of its input: no
 * allocation, no state, safe from any thread.
 */
#ifndef VYRE_REMOTE_RESP_H
#define VYRE_REMOTE_RESP_H

#include <stddef.h>
#include <stdint.h>

/* Bounds on a reply besides the bulk strings' total. None of the commands
 * vyre sends is answered with an array; these only keep a hostile server
 * from making the scan (and hiredis's allocations) large. */
#define VYRE__RESP_LINE_MAX     4096 /* a status, error, integer or length line */
#define VYRE__RESP_ELEMENTS_MAX 1024 /* array elements in one reply, all levels */
#define VYRE__RESP_DEPTH_MAX    4    /* nested arrays (hiredis 0.14 reads 7) */

typedef enum vyre__resp_status {
    VYRE__RESP_BAD = -2,    /* not RESP2, or past a bound above */
    VYRE__RESP_TOOBIG = -1, /* bulk strings declare more than max_bulk bytes */
    VYRE__RESP_PARTIAL = 0, /* a valid beginning: read more */
    VYRE__RESP_COMPLETE = 1 /* one whole reply: buf[0..*end) */
} vyre__resp_status;

/*
 * Looks for one reply at the start of buf[0..len). COMPLETE: *end is its
 * length (bytes after it are not looked at). TOOBIG: *declared is the
 * total the bulk strings declare up to and including the one that went
 * over max_bulk (the body need not have arrived). PARTIAL: nothing is
 * wrong yet. BAD: *end is the offset of the offending byte. end and
 * declared must not be NULL.
 */
vyre__resp_status vyre__resp_frame(const char *buf, size_t len, uint64_t max_bulk, size_t *end,
                                   uint64_t *declared);

#endif /* VYRE_REMOTE_RESP_H */
