/*
 * ptxinfo.h - what a PTX module says about itself that a sweep needs
 * before it launches anything: the `.target` architecture, and for one
 * entry its parameters (count and sizes) and its `.reqntid` / `.maxntid`
 * block shape; and which architecture to compile for on which device.
 * Pure text and arithmetic: no GPU, no CUDA library. Not public.
 *
 * (vyre-cachectl seed reads `.target` for the same reason; this reader is
 * the bench's and keeps to the few directives a launch needs.)
 */
#ifndef VYRE_BENCH_PTXINFO_H
#define VYRE_BENCH_PTXINFO_H

#include <stddef.h>

#include "vyre/error.h"

#define VYRE__PTX_PARAMS_MAX 64

typedef struct vyre__ptx_info {
    char target[16]; /* first architecture of `.target` ("sm_90a"), "" none */
    int found;       /* the entry was found */
    size_t nparams;  /* its parameters */
    unsigned param_bytes[VYRE__PTX_PARAMS_MAX]; /* each one's size (.u64: 8; .b8 x[12]: 12) */
    char param_type[VYRE__PTX_PARAMS_MAX][8];   /* ".u64", ".f32", ... */
    unsigned reqntid[3];                        /* 0 0 0 when absent; missing dimensions are 1 */
    unsigned maxntid[3];
} vyre__ptx_info;

/* Reads the target, and the entry's parameters and block directives, from
 * PTX text (len bytes, not necessarily NUL-terminated). Never fails: what
 * cannot be read stays empty (found 0). entry may be NULL (target only). */
void vyre__ptx_info_read(const char *ptx, size_t len, const char *entry, vyre__ptx_info *out);

/* The names of the module's `.entry` functions, "a, b", into buf (cut to
 * fit); returns how many there are. */
size_t vyre__ptx_entries(const char *ptx, size_t len, char *buf, size_t size);

/* Splits "sm_90a" into 9, 0 and 'a' ('\0' for none, 'a', 'f'). 0 on
 * success, VYRE_EINVAL for anything else (with a hint). */
int vyre__arch_split(const char *arch, int *major, int *minor, char *suffix, vyre_error *err);

/*
 * Chooses the architecture a sweep's kernel is compiled for, into out:
 *   - user_arch (--arch) when given: it must be runnable on the device
 *     (when device_cc_major > 0) and able to take the PTX's target;
 *   - else the PTX's own target when the device can run it (an "a" target
 *     only on exactly its compute capability, an "f" target on its family
 *     from that minor on); a plain target on a newer device is compiled
 *     for the device's architecture (SASS does not run across majors);
 *   - else the device's architecture; without a device (device_cc_major
 *     0, a dry run) the PTX's target, else fallback ("sm_90").
 * *origin (may be NULL) says which: "--arch", "the PTX's .target",
 * "the device", "the default". Errors (VYRE_EINVAL) name both sides: the
 * target or --arch and the device, or --arch and the PTX's target.
 */
int vyre__bench_choose_arch(const char *user_arch, const char *ptx_target, int device_cc_major,
                            int device_cc_minor, const char *fallback, char *out, size_t size,
                            const char **origin, vyre_error *err);

#endif /* VYRE_BENCH_PTXINFO_H */
