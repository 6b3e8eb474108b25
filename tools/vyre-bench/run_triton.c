/*
 * run_triton.c - `vyre-bench run --triton NAME|KEY`: the options, the
 * spec libcore infers from Triton's cache (vyre_triton_spec_make), the
 * inference printed, --emit-spec written; cmd_run.c then runs (or dry
 * runs) the spec as it runs one loaded with --spec.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_triton.h"
#include "tool_cli.h"
#include "tool_util.h"
#include "vyre/vyre.h"

int bench_triton_option(int c, const char *arg, bench_triton *t)
{
    switch (c) {
    case BENCH_OPT_TRITON:
        t->what = arg;
        break;
    case BENCH_OPT_DIR:
        t->dir = arg;
        break;
    case BENCH_OPT_INDUCTOR_DIR:
        t->inductor_dir = arg;
        break;
    case BENCH_OPT_GRID:
        t->grid = arg;
        break;
    case BENCH_OPT_BUFFER:
        if (t->nbuffers == BENCH_TRITON_BUFFERS_MAX)
            return tool_usage_error("run", NULL, "more than %d --buffer options",
                                    BENCH_TRITON_BUFFERS_MAX);
        t->buffers[t->nbuffers++] = arg;
        break;
    case BENCH_OPT_EMIT_SPEC:
        t->emit = arg;
        break;
    default:
        return -1;
    }
    t->any = 1;
    return TOOL_EXIT_OK;
}

/* The GPU's architecture as Triton writes it ("90"), or NULL. */
static const char *gpu_arch(char *buf, size_t size)
{
    vyre_device_info info;
    if (vyre_cuda_init(NULL) || vyre_cuda_device_info(0, &info, NULL))
        return NULL;
    snprintf(buf, size, "%d%d", info.cc_major, info.cc_minor);
    return buf;
}

/* Writes the spec into a new file path. An exit code. */
static int emit(const char *path, const vyre_triton_spec *s)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        fprintf(stderr, "%s: error: cannot write '%s': %s\n", tool_prog(), path, strerror(e));
        if (e == EEXIST)
            fprintf(stderr, "hint: --emit-spec writes a new file: choose another name, or "
                            "remove that one first\n");
        return TOOL_EXIT_ERROR;
    }
    size_t len = strlen(s->json);
    ssize_t n = write(fd, s->json, len);
    int bad = n < 0 || (size_t)n != len;
    if (close(fd) || bad) {
        fprintf(stderr, "%s: error: cannot write '%s': %s\n", tool_prog(), path, strerror(errno));
        return TOOL_EXIT_ERROR;
    }
    fprintf(stderr, "%s: wrote the spec of %s to %s; run it with --spec %s\n", tool_prog(), s->name,
            path, path);
    return TOOL_EXIT_OK;
}

/* The notes, each line indented (dry run, stdout) or as notes (stderr). */
static void print_notes(const vyre_triton_spec *s, int dry_run)
{
    FILE *out = dry_run ? stdout : stderr;
    if (dry_run)
        fprintf(out, "inferred from Triton's cache:\n");
    for (const char *p = s->notes; p && *p;) {
        size_t n = strcspn(p, "\n");
        if (dry_run)
            fprintf(out, "  %.*s\n", (int)n, p); /* bounded: one line of the notes */
        else
            fprintf(out, "%s: note: %.*s\n", tool_prog(), (int)n, p); /* bounded: one line */
        p += n + (p[n] == '\n');
    }
    if (dry_run)
        fprintf(out, "\nspec:\n%s\n", s->json);
}

static int check_args(const bench_triton *t, const char *const *axis_args, size_t naxis, int other)
{
    if (!t->what)
        return tool_usage_error("run", "give the kernel: --triton NAME|KEY",
                                "--dir, --inductor-dir, --grid, --buffer and --emit-spec go "
                                "with --triton");
    if (other)
        return tool_usage_error("run", "leave out --spec and the kernel file: --triton infers both",
                                "--triton with another kernel");
    for (size_t i = 0; i < naxis; i++)
        for (size_t k = 0; k < i; k++) {
            size_t len = strcspn(axis_args[i], "=");
            if (!strncmp(axis_args[k], axis_args[i], len) && axis_args[k][len] == '=')
                return tool_usage_error("run", "give each axis once; list values as N=1,2,3",
                                        "axis '%.*s' is given twice", (int)len, axis_args[i]);
        }
    return TOOL_EXIT_OK;
}

int bench_triton_spec(bench_triton *t, const char *const *axis_args, size_t *naxis, int other,
                      int dry_run, vyre_sweep_spec *spec)
{
    int code = check_args(t, axis_args, *naxis, other);
    if (code)
        return code;
    char arch[16];
    vyre_triton_spec_opts o = {.what = t->what,
                               .triton_dir = t->dir,
                               .inductor_dir = t->inductor_dir,
                               .grid = t->grid,
                               .axes = axis_args,
                               .naxes = *naxis,
                               .buffers = t->buffers,
                               .nbuffers = t->nbuffers,
                               .gpu_arch = dry_run || t->emit ? NULL : gpu_arch(arch, sizeof arch)};
    vyre_triton_spec s;
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_triton_spec_make(&o, &s, &err)) {
        tool_report(&err);
        return TOOL_EXIT_ERROR;
    }
    *naxis = 0;
    if (!t->emit || dry_run)
        print_notes(&s, dry_run);
    code = t->emit ? emit(t->emit, &s) : TOOL_EXIT_OK;
    if (!code && t->emit && !dry_run)
        code = BENCH_TRITON_DONE;
    snprintf(t->origin, sizeof t->origin, "the spec inferred for %s", s.name);
    if (!code) {
        *spec = s.sweep;
        memset(&s.sweep, 0, sizeof s.sweep);
        vyre_axes_init(&s.sweep.axes);
    }
    vyre_triton_spec_release(&s);
    return code;
}
