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

/* As vyre_axes_add, with the name and the values text apart (as a JSON spec gives
 * them). */
int vyre__axes_add_values(vyre_axes *axes, const char *name, const char *values, vyre_error *err);

/* Number of points in the cartesian product: 1 for no axes. Never above
 * VYRE_AXES_POINTS_MAX for axes built by this module. */
size_t vyre__axes_count(const vyre_axes *axes);

/* Index of the axis called name, or -1. */
int vyre__axes_find(const vyre_axes *axes, const char *name);

/*
 * Writes the point as "N=1024 BLOCK=128" (axes in order, one space apart;
 * floats in the shortest form that reads back to the same double; "" for no
 * axes) into buf, always terminated when size > 0. Returns the length the
 * full text needs, like snprintf: truncation is `ret >= size`.
 */
size_t vyre__axes_format_point(const vyre_axes *axes, const size_t *coords, char *buf, size_t size);

/* Writes one value ("1024", "0.5") the same way. */
size_t vyre__axes_format_value(const vyre_axes *axes, size_t a, size_t i, char *buf, size_t size);

/* Fills coords[0 .. axes->n-1] with the value index of each axis at point
 * `index` (last axis fastest). Returns 0, or VYRE_ERANGE when index >=
 * vyre__axes_count(). */
int vyre__axes_point(const vyre_axes *axes, size_t index, size_t *coords);

/* Value of axis a at value index i as a double (exact for |v| <= 2^53) or
 * as an int64 (a float value is truncated toward zero). */
double vyre__axes_value_f(const vyre_axes *axes, size_t a, size_t i);

int64_t vyre__axes_value_i(const vyre_axes *axes, size_t a, size_t i);

/* Parses spec text. origin names it in messages (a path, or "-"); NULL
 * means "spec". kernel_path equals kernel. Returns 0, VYRE_EINVAL,
 * VYRE_ERANGE or VYRE_ENOMEM; on failure spec holds nothing to release. */
int vyre__sweep_spec_parse(vyre_sweep_spec *spec, const char *text, const char *origin,
                           vyre_error *err);

#endif /* VYRE_BENCH_AXES_INTERNAL_H */
