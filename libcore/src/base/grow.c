/*
 * grow.c - a growable array's one growth rule (git's ALLOC_GROW): the
 * capacity doubles from a first size, the sizes are checked for overflow,
 * and a failed realloc leaves the array and its capacity as they were.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

int vyre__grow(void *array, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n <= *cap)
        return VYRE_OK;
    size_t c = *cap ? *cap : (first ? first : 1);
    while (c < n) {
        if (c > SIZE_MAX / 2)
            return VYRE_ENOMEM;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        return VYRE_ENOMEM;
    void *p;
    memcpy(&p, array, sizeof p); /* array is the address of any T *: no type punning */
    p = realloc(p, c * elem);
    if (!p)
        return VYRE_ENOMEM;
    memcpy(array, &p, sizeof p);
    *cap = c;
    return VYRE_OK;
}
