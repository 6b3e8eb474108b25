/*
 * axes_internal.h - what the sweep spec parser (sweep_spec.c) needs of the
 * axes (axes.c): an axis from a JSON value, and the hint both give for a
 * malformed spec. Not public.
 */
#ifndef VYRE_BENCH_AXES_INTERNAL_H
#define VYRE_BENCH_AXES_INTERNAL_H

#include <jansson.h>

#include "vyre/axes.h"
#include "vyre/error.h"

/* The hint of a malformed sweep spec (an example spec). */
extern const char vyre__sweep_spec_hint[];

/*
 * Adds the axis name = v ("$.axes.NAME" of the spec named origin): v is a
 * string in the -a syntax, a number, or an array of numbers or strings.
 * All-or-nothing as vyre_axes_add; errors name origin and the JSON path.
 */
int vyre__axes_add_json(vyre_axes *axes, const char *name, json_t *v, const char *origin,
                        vyre_error *err);

#endif /* VYRE_BENCH_AXES_INTERNAL_H */
