/*
 * jsonutil.h - small helpers for libcore's JSON readers (internal).
 */
#ifndef VYRE_JSONUTIL_H
#define VYRE_JSONUTIL_H

#include <jansson.h>

/* What a JSON value is, for messages: "an object", "an array", "a string",
 * "a number", "true", "false" or "null" (static storage). */
const char *vyre__json_kind(const json_t *j);

#endif /* VYRE_JSONUTIL_H */
