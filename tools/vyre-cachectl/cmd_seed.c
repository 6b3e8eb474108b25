/*
 * cmd_seed.c - `vyre-cachectl seed FILE|DIR... [--arch LIST] [--entry NAME]...
 * [--jobs N] [-- OPTS]`: compile CUDA C (NVRTC) or PTX (nvJitLink) ahead of
 * time into cubin blobs, under exactly the key the run-time path computes
 * (libcore's vyre_compile_through_cache is that path), so a fleet can
 * ship a warm cache. No GPU or driver is needed.
 *
 * As a user first tries it: `seed kernels/` or `seed *.ptx` with no flags.
 * A key names a module (key format v2), so the whole module is compiled
 * once and every kernel in it is a hit; the kernels come from the module
 * and a PTX file's architecture from its .target directive. libcore does
 * the work (vyre_seed_list_add walks directories and applies Triton's
 * rule, vyre_seed_run compiles with a pool of threads and hands each
 * file's results back in the order the files were named); this file
 * parses options, calls it, and prints.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_util.h"
#include "cmds.h"
#include "progress.h"
#include "vyre/compile.h"

#define SEED_MAX_ARCHS   VYRE_SEED_MAX_ARCHS
#define SEED_MAX_ENTRIES 64
#define SEED_MAX_JOBS    VYRE_SEED_MAX_JOBS

enum { OPT_ARCH = CACHECTL_OPT_FIRST_LOCAL, OPT_ENTRY, OPT_JOBS };

const tool_opt cachectl_seed_opts[] = {
    {OPT_ARCH, 0, "arch", "LIST",
     "comma-separated real architectures: sm_80, sm_90,\n"
     "sm_90a (arch-specific, as Triton's PTX uses),\n"
     "sm_100f, ... Default: a PTX file's own '.target'\n"
     "(sm_90a stays sm_90a); CUDA C and cubin files name\n"
     "none and need --arch",
     ",sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_100f sm_120"},
    {OPT_ENTRY, 0, "entry", "NAME",
     "a kernel the module must define (may be repeated): a\n"
     "file whose module lacks one fails, naming the kernels\n"
     "it has, and nothing is stored for it. Not part of the\n"
     "key: one blob serves every kernel of a module",
     NULL},
    {OPT_JOBS, 0, "jobs", "N",
     "compile N files at once (default: the number of\n"
     "online CPUs)",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl seed FILE|DIR... [--arch ARCH[,ARCH...]] [--entry NAME]...\n"
            "                          [--jobs N] [-- COMPILER-OPTIONS...]\n\n"
            "Compile each module (a file) into a cubin blob in the cache, under the key the\n"
            "run-time path computes, so the first run is a hit for every kernel in it. CUDA C\n"
            "(.cu) goes through NVRTC, PTX (.ptx) through nvJitLink, a .cubin is stored as is;\n"
            "other names are recognised by content. Blobs already present are left alone;\n"
            "with remote stores, one a store has is fetched instead of compiled.\n"
            "No GPU is needed.\n\n"
            "A DIR is walked recursively (symbolic links are not followed) for *.ptx, *.cu\n"
            "and *.cubin files, other files are skipped: 'seed ~/.triton/cache' seeds\n"
            "Triton's kernels in one command. There a .cubin next to a .ptx of the same\n"
            "name is skipped (the PTX is the module). A walk goes at most 64 directories\n"
            "deep and looks at no more than 4,000,000 entries.\n\n"
            "COMPILER-OPTIONS, after '--': in order (NVRTC's for CUDA C, nvJitLink's for\n"
            "PTX); they are part of the key, so give exactly the options the run-time\n"
            "caller uses.\n\n"
            "A failed file is reported (with the compiler log for a compile error) and\n"
            "the others are still seeded. The last line counts the modules seeded, their\n"
            "kernels, those fetched from a remote store (with remotes), those already\n"
            "present and the failures.\n\n");
    cachectl_options_help(out, cachectl_seed_opts);
    fprintf(out, "\n"
                 "exit status: 0 every module seeded or present, 2 usage or operational error\n"
                 "             (unreadable file, no architecture, a kernel missing from a module,\n"
                 "             compile error, NVRTC or nvJitLink missing)\n");
}

/* ---- options --------------------------------------------------------------- */

/* Splits "sm_80,sm_90" into archs (validated, duplicates dropped). Returns
 * the count, or -1 after printing a usage error. */
static int parse_archs(char *list, const char **archs)
{
    int n = 0;
    for (char *p = list; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (!vyre_compile_arch_valid(p)) {
            tool_usage_error("seed", "write architectures such as sm_80,sm_90,sm_90a",
                             "'%s' is not an architecture", p);
            return -1;
        }
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= strcmp(archs[i], p) == 0;
        if (!dup) {
            if (n == SEED_MAX_ARCHS) {
                tool_usage_error("seed", NULL, "more than %d architectures", SEED_MAX_ARCHS);
                return -1;
            }
            archs[n++] = p;
        }
        p = comma ? comma + 1 : NULL;
    }
    return n;
}

/* ---- printing what libcore did ------------------------------------------- */

typedef struct seed_print {
    cachectl_progress prog;
    json_t *blobs, *failures; /* --json, in file order */
} seed_print;

/* The kernels of a blob as "a, b, c" (the table kept in the header). */
static void kernel_list(const vyre_blob *b, char *buf, size_t size)
{
    if (!b->header.kernels || !b->header.n_kernels) {
        snprintf(buf, size, "-");
        return;
    }
    size_t need =
        vyre_kernel_list_format(b->header.kernels, b->header.kernels_size, ", ", buf, size);
    if (need >= size && size > 5)
        memcpy(buf + size - 5, " ...", 5);
}

static void print_failure(seed_print *sp, const vyre_seed_file *f, const vyre_seed_outcome *o)
{
    const char *msg = o->error.message[0] ? o->error.message : vyre_strerror(o->error.code);
    const char *arch = o->arch;
    fprintf(stderr, "%s: error: seeding '%s'%s%s: %s\n", tool_prog(), f->path, arch ? " for " : "",
            arch ? arch : "", msg);
    if (o->error.hint[0])
        fprintf(stderr, "hint: %s\n", o->error.hint);
    if (o->log && *o->log) {
        fprintf(stderr, "compiler log for '%s' (%s):\n%s", f->path, arch, o->log);
        if (o->log[strlen(o->log) - 1] != '\n')
            fputc('\n', stderr);
    }
    if (sp->failures)
        json_array_append_new(sp->failures, json_pack("{s:s, s:s?, s:s}", "file", f->path, "arch",
                                                      arch, "error", msg));
}

static const char *status_name(vyre_seed_status s)
{
    return s == VYRE_SEED_SEEDED ? "seeded" : s == VYRE_SEED_PRESENT ? "present" : "fetched";
}

static void print_blob(seed_print *sp, const vyre_seed_file *f, const vyre_seed_outcome *o)
{
    const vyre_blob *blob = o->blob;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&blob->header.key, hex);
    uint64_t bytes = VYRE_BLOB_HEADER_SIZE + blob->header.stored_size + blob->header.kernels_size;
    if (sp->blobs) {
        json_t *ks = json_array();
        for (size_t k = 0; blob->header.kernels && k < blob->header.kernels_size;
             k += strlen(blob->header.kernels + k) + 1)
            json_array_append_new(ks, json_string(blob->header.kernels + k));
        json_array_append_new(
            sp->blobs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:s?}", "file",
                                 f->path, "source_kind", vyre_source_kind_name(f->kind), "arch",
                                 o->arch, "key", hex, "toolchain", blob->header.toolchain, "status",
                                 status_name(o->status), "bytes", (json_int_t)bytes, "compile_ns",
                                 (json_int_t)blob->header.compile_ns, "kernels", ks, "source",
                                 blob->header.source[0] ? blob->header.source : NULL));
    } else if (!g_cachectl.quiet) {
        char size[32], ks[512];
        vyre_format_size(bytes, size, sizeof size);
        kernel_list(blob, ks, sizeof ks);
        printf("%-7s  %.*s  %-7s  %-6s  %10s  %s  [%s]\n", status_name(o->status),
               CACHECTL_SHORT_KEY, hex, o->arch, vyre_source_kind_name(f->kind), size, f->path, ks);
    }
}

/* A vyre_seed_file_fn: one file's errors (stderr), then its blobs. */
static void print_file(void *ctx, const vyre_seed_file *f)
{
    seed_print *sp = ctx;
    int errs = 0, outs = 0;
    for (size_t i = 0; i < f->n_outcomes; i++)
        f->outcomes[i].status == VYRE_SEED_FAILED ? errs++ : outs++;
    if (errs || (outs && !g_tool.json && !g_cachectl.quiet))
        cachectl_progress_end(&sp->prog);
    if (errs) {
        fflush(stdout);
        for (size_t i = 0; i < f->n_outcomes; i++)
            if (f->outcomes[i].status == VYRE_SEED_FAILED)
                print_failure(sp, f, &f->outcomes[i]);
    }
    for (size_t i = 0; i < f->n_outcomes; i++)
        if (f->outcomes[i].status != VYRE_SEED_FAILED)
            print_blob(sp, f, &f->outcomes[i]);
    fflush(stdout);
}

/* A vyre_seed_progress_fn. */
static void print_progress(void *ctx, size_t done, size_t total)
{
    seed_print *sp = ctx;
    cachectl_progress_update(done, total, &sp->prog);
}

/* The operands into files: files as named, directories walked (in name
 * order). 0, or -1 after printing why. */
static int collect_files(char **operands, int n, vyre_seed_list *files)
{
    for (int i = 0; i < n; i++) {
        vyre_error err;
        vyre_error_clear(&err);
        size_t before = files->n;
        int is_dir = 0;
        if (vyre_seed_list_add(files, operands[i], &is_dir, &err)) {
            tool_report(&err);
            return -1;
        }
        if (is_dir && files->n == before)
            fprintf(stderr, "%s: note: no .ptx, .cu or .cubin file under '%s'\n", tool_prog(),
                    operands[i]);
    }
    return 0;
}

/* The --json document, or the last line. */
static void print_summary(seed_print *sp, vyre_cache *cache, const vyre_seed_list *files,
                          const vyre_seed_totals *t)
{
    if (g_tool.json) {
        json_t *o = cachectl_json_root(cache, 2);
        json_object_set_new(o, "files", json_integer((json_int_t)files->n));
        json_object_set_new(o, "skipped", json_integer((json_int_t)files->skipped));
        json_object_set_new(o, "seeded", json_integer((json_int_t)t->seeded));
        json_object_set_new(o, "kernels", json_integer((json_int_t)t->kernels));
        json_object_set_new(o, "fetched", json_integer((json_int_t)t->fetched));
        json_object_set_new(o, "present", json_integer((json_int_t)t->present));
        json_object_set_new(o, "failed", json_integer((json_int_t)t->failed));
        json_object_set_new(o, "jobs", json_integer((json_int_t)t->jobs));
        json_object_set_new(o, "blobs", sp->blobs);
        json_object_set_new(o, "failures", sp->failures);
        sp->blobs = sp->failures = NULL;
        tool_json_print(stdout, o);
    } else if (!g_cachectl.quiet) {
        /* "fetched" only where a remote store could have served one, so
         * the line of a cache without remotes keeps its shape. */
        char fetched[48] = "";
        if (vyre_cache_remote_count(cache) > 0)
            snprintf(fetched, sizeof fetched, "fetched %" PRIu64 ", ", t->fetched);
        printf("Seeded %" PRIu64 " module%s (%" PRIu64 " kernel%s), %salready present %" PRIu64
               ", failed %" PRIu64 "\n",
               t->seeded, t->seeded == 1 ? "" : "s", t->kernels, t->kernels == 1 ? "" : "s",
               fetched, t->present, t->failed);
    }
}

/* Where the compiler options start: argv's "--", or argc. Split there
 * first: getopt's permutation would merge the files before it with the
 * compiler options after it. A "--" that is the value of an option
 * (--entry --) is not the separator. */
static int compiler_options_start(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        int is_value = i > 1 && cachectl_takes_next(cachectl_seed_opts, argv[i - 1]);
        if (strcmp(argv[i], "--") == 0 && !is_value)
            return i;
    }
    return argc;
}

/* --entry NAME; 0 or the exit code. */
static int add_entry(const char *name, const char **entries, size_t *n)
{
    if (!*name)
        return tool_usage_error("seed", "give a kernel name, such as --entry scale",
                                "empty --entry");
    if (*n == SEED_MAX_ENTRIES)
        return tool_usage_error("seed", NULL, "more than %d --entry options", SEED_MAX_ENTRIES);
    entries[(*n)++] = name;
    return 0;
}

/* --jobs N; 0 or the exit code. */
static int parse_jobs(const char *s, long *jobs)
{
    if (tool_parse_long(s, 1, SEED_MAX_JOBS, jobs))
        return tool_usage_error("seed", "give a whole number from 1 to 256",
                                "--jobs '%s' is not a number of jobs", s);
    return 0;
}

int cmd_seed(int argc, char **argv)
{
    int end = compiler_options_start(argc, argv);
    const char *const *copts = end < argc ? (const char *const *)(argv + end + 1) : NULL;
    size_t n_copts = end < argc ? (size_t)(argc - end - 1) : 0;

    char *arch_list = NULL;
    const char *entries[SEED_MAX_ENTRIES];
    size_t n_entries = 0;
    long jobs = 0;
    int c, rc = 0, code = TOOL_EXIT_ERROR;
    cachectl_parser p;
    if (cachectl_parser_init(&p, "seed", cachectl_seed_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    /* Files and options may mix, as in "seed a.cu --arch sm_90 b.cu". */
    while ((c = cachectl_getopt(&p, end, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == OPT_ARCH)
            arch_list = optarg;
        else if ((rc = c == OPT_ENTRY  ? add_entry(optarg, entries, &n_entries)
                       : c == OPT_JOBS ? parse_jobs(optarg, &jobs)
                                       : TOOL_EXIT_ERROR))
            return rc;
    }
    char **operands = argv + optind;
    int n_operands = end - optind;
    if ((rc = cachectl_check_globals("seed")))
        return rc;
    if (n_operands <= 0)
        return tool_usage_error("seed",
                                "name CUDA C (.cu), PTX (.ptx) or cubin files, or directories "
                                "of them",
                                "seed needs at least one file");
    const char *archs[SEED_MAX_ARCHS];
    int n_archs = 0;
    if (arch_list && (n_archs = parse_archs(arch_list, archs)) < 0)
        return TOOL_EXIT_ERROR;

    /* Operands: files as named, directories walked (in name order). */
    vyre_seed_list files = VYRE_SEED_LIST_INIT;
    if (collect_files(operands, n_operands, &files)) {
        vyre_seed_list_release(&files);
        return TOOL_EXIT_ERROR;
    }
    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(CACHECTL_CREATE, &cache))) {
        vyre_seed_list_release(&files);
        return rc;
    }
    seed_print sp = {.blobs = g_tool.json ? json_array() : NULL,
                     .failures = g_tool.json ? json_array() : NULL};
    cachectl_progress_init(&sp.prog, "seed", "files");
    vyre_seed_opts so;
    memset(&so, 0, sizeof so);
    so.archs = n_archs ? archs : NULL;
    so.n_archs = (size_t)n_archs;
    so.entries = entries;
    so.n_entries = n_entries;
    so.copts = copts;
    so.n_copts = n_copts;
    so.jobs = (unsigned)jobs;
    so.on_file = print_file;
    so.on_progress = print_progress;
    so.ctx = &sp;
    vyre_seed_totals t;
    vyre_error err;
    vyre_error_clear(&err);
    rc = vyre_seed_run(cache, &files, &so, &t, &err);
    cachectl_progress_end(&sp.prog);
    if (rc)
        rc = cachectl_fail(&err);
    else
        print_summary(&sp, cache, &files, &t);
    json_decref(sp.blobs);
    json_decref(sp.failures);
    vyre_seed_list_release(&files);
    vyre_cache_close(cache);
    return rc ? rc : t.failed ? TOOL_EXIT_ERROR : TOOL_EXIT_OK;
}
