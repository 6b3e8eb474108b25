/*
 * jsonutil.c - small helpers shared by libcore's JSON readers (the sweep
 * spec's axes and its binding), so that their messages name a wrong value
 * the same way.
 */
#include "base/jsonutil.h"

const char *vyre__json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_NULL:
    default:
        return "null";
    }
}
