/*
 * run_triton.h - `vyre-bench run --triton NAME|KEY`: a kernel of Triton's
 * cache benchmarked by name, its spec inferred by libcore
 * (vyre/triton_spec.h). cmd_run.c takes these options into its table and
 * hands the spec on as if loaded with --spec.
 */
#ifndef VYRE_BENCH_RUN_TRITON_H
#define VYRE_BENCH_RUN_TRITON_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "tool_opt.h"

#include "vyre/axes.h"

#define BENCH_TRITON_BUFFERS_MAX 32

/* The options' codes, above every short option. */
enum {
    BENCH_OPT_TRITON = 0x200,
    BENCH_OPT_DIR,
    BENCH_OPT_INDUCTOR_DIR,
    BENCH_OPT_GRID,
    BENCH_OPT_BUFFER,
    BENCH_OPT_EMIT_SPEC
};

/* Rows of run's option table (tools/common/tool_opt.h). */
#define BENCH_TRITON_OPTIONS                                                                       \
    {TOOL_OPT_SECTION,                                                                             \
     0,                                                                                            \
     "",                                                                                           \
     NULL,                                                                                         \
     "kernels of Triton's cache (torch.compile's), by name; the spec is inferred\n"                \
     "(-a PARAM=VALUES: an axis is a parameter of the kernel, -a xnumel=1M:64M:x4;\n"              \
     "none: the sizes the model launched it at):",                                                 \
     NULL},                                                                                        \
        {BENCH_OPT_TRITON,                                                                         \
         0,                                                                                        \
         "triton",                                                                                 \
         "NAME|KEY",                                                                               \
         "a kernel name or a group key (or its first 8+\n"                                         \
         "characters), as 'vyre-cachectl triton show' takes",                                      \
         NULL},                                                                                    \
        {BENCH_OPT_DIR,                                                                            \
         0,                                                                                        \
         "dir",                                                                                    \
         "DIR",                                                                                    \
         "Triton's cache (default $TRITON_CACHE_DIR, else\n"                                       \
         "~/.triton/cache, else TorchInductor's triton/DEVICE)",                                   \
         TOOL_OPT_DIR},                                                                            \
        {BENCH_OPT_INDUCTOR_DIR,                                                                   \
         0,                                                                                        \
         "inductor-dir",                                                                           \
         "DIR",                                                                                    \
         "TorchInductor's cache, for the autotuning's choice of\n"                                 \
         "group, the block sizes and the sizes the model used\n"                                   \
         "(default: the cache the Triton cache is in, else\n"                                      \
         "$TORCHINDUCTOR_CACHE_DIR or /tmp/torchinductor_$USER)",                                  \
         TOOL_OPT_DIR},                                                                            \
        {BENCH_OPT_GRID,                                                                           \
         0,                                                                                        \
         "grid",                                                                                   \
         "EXPR[,EXPR,EXPR]",                                                                       \
         "programs to launch (default: TorchInductor's grid,\n"                                    \
         "ceil(xnumel/XBLOCK) ...)",                                                               \
         NULL},                                                                                    \
        {BENCH_OPT_BUFFER,                                                                         \
         0,                                                                                        \
         "buffer",                                                                                 \
         "PARAM=COUNT[:TYPE]",                                                                     \
         "elements of a pointer parameter's buffer (default:\n"                                    \
         "the model's, scaled with the iteration space)",                                          \
         NULL},                                                                                    \
    {                                                                                              \
        BENCH_OPT_EMIT_SPEC, 0, "emit-spec", "FILE",                                               \
            "write the inferred spec to FILE (a new file) and stop\n"                              \
            "(with --dry-run, go on to list the points)",                                          \
            TOOL_OPT_FILE                                                                          \
    }

typedef struct bench_triton {
    int any; /* one of the options was given */
    const char *what, *dir, *inductor_dir, *grid, *emit;
    const char *buffers[BENCH_TRITON_BUFFERS_MAX];
    size_t nbuffers;
    char origin[320]; /* the spec's name in messages */
} bench_triton;

/* bench_triton_spec's "done, exit 0" (--emit-spec without --dry-run):
 * cmd_run's RUN_HELP_SHOWN. */
#define BENCH_TRITON_DONE (-1)

/* Takes option c into t: an exit code, or -1 when c is not one of these. */
int bench_triton_option(int c, const char *arg, bench_triton *t);

/*
 * --triton: infers the spec into *spec (as vyre_sweep_spec_load gives a
 * file's); the -a arguments (axis_args, *naxis) name the kernel's
 * parameters and are taken (*naxis set to 0). other: --spec or a kernel
 * file was given too. Prints the inference (stdout with dry_run, else
 * stderr) and writes --emit-spec. Returns an exit code, or
 * BENCH_TRITON_DONE when nothing more is to run.
 */
int bench_triton_spec(bench_triton *t, const char *const *axis_args, size_t *naxis, int other,
                      int dry_run, vyre_sweep_spec *spec);

#endif /* VYRE_BENCH_RUN_TRITON_H */
