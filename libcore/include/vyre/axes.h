/*
 * vyre/axes.h - benchmark parameter axes, their cartesian product, and the
 * JSON sweep spec that declares them.
 *
 * This header is part of libvyrecore's public API.
 *
 * An axis is a name and an ordered list of values, all integers (int64) or
 * all floating point (double). Users write axes as NAME=VALUES:
 *
 *   N=4096                   one value
 *   BLOCK=128,256,512        a list, kept in the order written
 *   N=1024:67108864:x4       geometric: start, start*4, ... while <= stop
 *   N=0:100:+25              arithmetic: start, start+25, ... while <= stop
 *   N=1:8                    arithmetic with step +1 (nvbench's default stride)
 *   ALPHA=0.5,1.0,2          floating point: any value with '.' or an exponent
 *
 * Both range ends are inclusive when the sequence lands on stop. Integer
 * values may carry the size suffixes of vyre_parse_size (K, M, G, T and
 * KiB...TiB are powers of 1024, KB...TB of 1000, a decimal fraction is
 * truncated to whole units as vyre_parse_size does), so N=1K:64M:x4 is
 * 1024, 4096, ..., 67108864; a leading '-' is allowed (OFFSET=-4,0,4). A
 * geometric factor is written without suffix (x2, x4, x10); on an integer
 * axis it must be whole, on a float axis any value above 1. An arithmetic
 * step may carry a suffix (+1K). A value is floating point when it has a
 * '.' or an exponent and no size suffix ("0.5", "1e-3"); one such value
 * makes the whole axis floating point; values a float range generates are
 * rounded to 15 significant digits (0:0.3:+0.1 ends at 0.3, not at
 * 0.30000000000000004). A bare third field ("1:100:2") is
 * rejected: write x2 or +2 so that nobody guesses the meaning.
 *
 * Limits: names match [A-Za-z_][A-Za-z0-9_]* and are at most
 * VYRE_AXIS_NAME_MAX - 1 characters; at most VYRE_AXES_MAX axes; the
 * product of all axes (and so each axis) has at most VYRE_AXES_POINTS_MAX
 * points; a list may not repeat a value; a name may not be given twice.
 *
 * Points are numbered 0 .. count-1 with the last axis varying fastest
 * (row-major, like nested loops written in axis order), so the order is
 * deterministic and a point's index identifies it within a sweep.
 *
 * Thread-safety: a vyre_axes is plain data; concurrent reads are safe,
 * writes need the caller's locking.
 */
#ifndef VYRE_AXES_H
#define VYRE_AXES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_AXES_MAX        64
#define VYRE_AXIS_NAME_MAX   64 /* including the terminating NUL */
#define VYRE_AXES_POINTS_MAX 1000000

typedef enum vyre_axis_type {
    VYRE_AXIS_INT = 0,
    VYRE_AXIS_FLOAT = 1,
} vyre_axis_type;

/* One axis. values.i holds the n values of a VYRE_AXIS_INT axis and
 * values.f is NULL; the other way round for VYRE_AXIS_FLOAT. The arrays
 * belong to the vyre_axes holding the axis. text is the values as the user wrote them ("1K:64M:x4";
 * for a JSON array, its compact JSON), owned likewise. */
typedef struct vyre_axis {
    char name[VYRE_AXIS_NAME_MAX];
    vyre_axis_type type;
    size_t n;
    struct {
        int64_t *i;
        double *f;
    } values;
    char *text;
} vyre_axis;

/* A set of axes, caller-owned (vyre_axes_init/_release). */
typedef struct vyre_axes {
    size_t n;
    vyre_axis axis[VYRE_AXES_MAX];
} vyre_axes;

/* Makes axes empty. An empty set has exactly one point (no values). */
VYRE_EXTERN void vyre_axes_init(vyre_axes *axes);

/* Frees every axis's storage and makes axes empty again. NULL is a no-op. */
VYRE_EXTERN void vyre_axes_release(vyre_axes *axes);

/*
 * Parses "NAME=VALUES" (the argument of `vyre-bench -a`) and appends the
 * axis. On failure axes is unchanged. Returns 0, VYRE_EINVAL (malformed
 * axis, bad name, bad value, empty range, zero step, factor <= 1, duplicate
 * name or value, too many axes), VYRE_ERANGE (a value beyond int64, more
 * than VYRE_AXES_POINTS_MAX points) or VYRE_ENOMEM.
 */
VYRE_EXTERN int vyre_axes_add(vyre_axes *axes, const char *spec, vyre_error *err);

/* Parses "NAME=VALUES" as vyre_axes_add does and puts the values in place
 * of those of the axis NAME already in axes, which keeps its position (and
 * so the order of the points): nvbench's -a over a benchmark's declared
 * axes, to narrow a spec's sweep ("N=1M") or give it new values. An axis
 * that axes does not have is VYRE_EINVAL naming the ones it has; the other
 * errors are vyre_axes_add's. On failure axes is unchanged. */
VYRE_EXTERN int vyre_axes_override(vyre_axes *axes, const char *spec, vyre_error *err);

/*
 * A sweep spec file:
 *
 *   {"kernel": "saxpy.cu", "entry": "saxpy",
 *    "axes": {"N": "1024:1M:x4", "BLOCK": [128, 256], "ALPHA": 0.5},
 *    "args": [...], ...}
 *
 * Each member of "axes" is a values string in the -a syntax, a number (one
 * value), or a non-empty array of numbers and value strings ("1M"); the
 * axes keep the order of the object. "kernel" and "entry" are optional
 * strings (the command line may give them). Other members, "args"
 * included, are not interpreted here: binding them to kernel parameters is
 * the runner's business, so the whole object is kept as compact JSON in
 * `json`. Errors name the origin and the JSON path ("$.axes.BLOCK[1]").
 *
 * Ownership: every pointer belongs to the spec; vyre_sweep_spec_release
 * frees them.
 */
typedef struct vyre_sweep_spec {
    char *kernel;      /* as written, or NULL */
    char *kernel_path; /* kernel resolved against the spec file's directory, or NULL */
    char *entry;       /* or NULL */
    char *json;        /* the whole spec object, compact */
    vyre_axes axes;
} vyre_sweep_spec;

/* Reads and parses the file at path; a relative kernel is resolved against
 * the file's directory into kernel_path. Adds VYRE_ENOENT / VYRE_EIO for a
 * file that cannot be read. */
VYRE_EXTERN int vyre_sweep_spec_load(vyre_sweep_spec *spec, const char *path, vyre_error *err);

/* Frees what a successful parse/load allocated. NULL is a no-op. */
VYRE_EXTERN void vyre_sweep_spec_release(vyre_sweep_spec *spec);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_AXES_H */
