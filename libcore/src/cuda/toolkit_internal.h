/*
 * toolkit_internal.h - what the CUDA toolkit libraries' modules (NVRTC,
 * nvJitLink, CUPTI) share: how such a library is found (base/loader.h does
 * the finding), architecture names, the checks and arguments of a compile
 * or link, and quoting a compiler log. Not public API.
 */
#ifndef VYRE_TOOLKIT_INTERNAL_H
#define VYRE_TOOLKIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/loader.h"
#include "vyre/error.h"

/* Where a toolkit library is looked for after the dynamic linker's search:
 * $CUDA_HOME and the toolkit's default root. */
#define VYRE__TOOLKIT_ROOT_ENV     "CUDA_HOME"
#define VYRE__TOOLKIT_ROOT_DEFAULT "/usr/local/cuda"

/*
 * A vyre__lib_spec initializer for toolkit library `what` ("NVRTC"): $env
 * overrides (and is named when its file does not load), then names through
 * the linker's search, then names under subdirs of $CUDA_HOME and
 * /usr/local/cuda; every failure is code with hint.
 */
#define VYRE__TOOLKIT_SPEC(what, env_var, name_list, subdir_list, code, hint_text)                 \
    {                                                                                              \
        .fail = what " not available", .env = env_var, .env_named = 1, .names = name_list,         \
        .root_env = VYRE__TOOLKIT_ROOT_ENV, .root_default = VYRE__TOOLKIT_ROOT_DEFAULT,            \
        .subdirs = subdir_list, .missing_code = code, .hint = hint_text,                           \
        .sym_lead = what " not available: ", .sym_noun = "symbol '",                               \
        .sym_tail = "' (an older or foreign library)",                                             \
    }

/* 1 when s is an architecture number with its optional suffix, as after
 * "sm_" or "compute_": 2 or 3 digits, no leading zero, then nothing, 'a'
 * (arch-specific, e.g. sm_90a) or 'f' (family, e.g. sm_100f). */
int vyre__toolkit_arch_number_valid(const char *s);

/*
 * The line of a compiler log to quote in an error message: the first line
 * that contains "error" or "fatal" (any case), else the first non-blank line, else
 * NULL. Copies at most size - 1 bytes of it into buf, without the newline,
 * and returns buf.
 */
const char *vyre__toolkit_first_error(const char *log, char *buf, size_t size);

#define VYRE__TOOLKIT_MAX_OPTS 4096 /* options of one compile or link */

/* A compile's or link's options (step "compile", "link"; fn the public
 * call): at most VYRE__TOOLKIT_MAX_OPTS, none NULL, none naming an
 * architecture. 0, or VYRE_EINVAL with err set. */
int vyre__toolkit_check_opts(const char *fn, const char *step, const char *name,
                             const char *const *opts, size_t nopts, vyre_error *err);

/* *text: src[0..n) NUL-terminated; *argv: {arch_opt, opts...}; both
 * malloc'ed for the caller to free. 0, or VYRE_ENOMEM with err set. */
int vyre__toolkit_args(const char *src, size_t n, const char *arch_opt, const char *const *opts,
                       size_t nopts, const char *step, const char *name, char **text,
                       const char ***argv, vyre_error *err);

#endif /* VYRE_TOOLKIT_INTERNAL_H */
