/*
 * fuzz_text.h - what the text-parsing fuzz targets share: the input as a
 * NUL-terminated string, as the parsers under test take it.
 */
#ifndef VYRE_FUZZ_TEXT_H
#define VYRE_FUZZ_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A malloc'ed, NUL-terminated copy of data[size] (the caller frees it), or
 * NULL when size is above max (inputs that long only slow the fuzzer
 * down) or memory is short: the target then returns 0. */
static inline char *fuzz_text(const uint8_t *data, size_t size, size_t max)
{
    if (size > max)
        return NULL;
    char *text = malloc(size + 1);
    if (!text)
        return NULL;
    memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

#endif /* VYRE_FUZZ_TEXT_H */
