/*
 * cmd_jit.c - `vyre-cachectl jit`: the CUDA driver's own JIT caches (where
 * PTX the driver compiles is kept). Two are reported: the one vyre programs
 * use (CUDA_CACHE_PATH, else $XDG_CACHE_HOME/vyre/cuda-jit, with vyre's
 * size floor) and the driver's default that every CUDA program not using
 * vyre fills (CUDA_CACHE_PATH, else ~/.nv/ComputeCache, with the driver's
 * default size): each with its bytes, files and fill. A CUDA_CACHE_MAXSIZE
 * that vyre or the driver cannot use is a finding (a warning), not an
 * error. `jit --clear --yes` empties vyre's.
 */
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"

/* The driver's default CUDA_CACHE_MAXSIZE on desktop and server platforms
 * (CUDA 12 and later; 256 MiB on embedded platforms and older drivers), and
 * the most it accepts: CUDA Programming Guide, "CUDA Environment
 * Variables". */
#define DRIVER_DEFAULT_MAXSIZE (UINT64_C(1) << 30)
#define DRIVER_MAX_MAXSIZE     (UINT64_C(4) << 30)

enum { OPT_CLEAR = CACHECTL_OPT_FIRST_LOCAL, OPT_YES };

const tool_opt cachectl_jit_opts[] = {
    {OPT_CLEAR, 0, "clear", NULL,
     "empty vyre's JIT cache directory (keeping the\n"
     "directory); refused when it does not look like a\n"
     "driver JIT cache",
     NULL},
    {OPT_YES, 0, "yes", NULL, "required with --clear", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl jit [--json]\n"
                 "       vyre-cachectl jit --clear --yes\n\n"
                 "Report on the CUDA driver's JIT caches: the one vyre programs use (the path\n"
                 "in force: CUDA_CACHE_PATH, else $XDG_CACHE_HOME/vyre/cuda-jit; the size limit\n"
                 "vyre puts in force: CUDA_CACHE_MAXSIZE, at least 1 GiB) and the driver's\n"
                 "default, which every CUDA program not using vyre (PyTorch, Triton) fills\n"
                 "(CUDA_CACHE_PATH, else ~/.nv/ComputeCache; CUDA_CACHE_MAXSIZE, else the\n"
                 "driver's default of 1 GiB, 256 MiB on embedded platforms and older drivers):\n"
                 "the bytes and files each holds and how full it is. A CUDA_CACHE_MAXSIZE that\n"
                 "vyre or the driver cannot use is reported as a warning. --cache-dir does not\n"
                 "apply: these are the driver's caches.\n\n");
    cachectl_options_help(out, cachectl_jit_opts);
    fprintf(out, "\n"
                 "exit status: 0 reported (warnings included) or cleared, 2 usage or\n"
                 "             operational error (empty CUDA_CACHE_PATH, --clear without --yes,\n"
                 "             unreadable cache)\n");
}

#define MAX_FINDINGS 4

typedef struct finding {
    char message[VYRE_ERROR_MESSAGE_MAX];
    char hint[VYRE_ERROR_HINT_MAX];
} finding;

typedef struct findings {
    finding f[MAX_FINDINGS];
    size_t n;
} findings;

static void add_finding(findings *fs, const char *message, const char *hint)
{
    if (fs->n >= MAX_FINDINGS)
        return;
    finding *f = &fs->f[fs->n++];
    snprintf(f->message, sizeof f->message, "%s", message);
    snprintf(f->hint, sizeof f->hint, "%s", hint ? hint : "");
}

/* One JIT cache as reported. */
typedef struct jit_report {
    const char *path;
    const char *path_source; /* "CUDA_CACHE_PATH" or "default" */
    uint64_t max_bytes;      /* 0: unknown (an unusable CUDA_CACHE_MAXSIZE) */
    const char *max_source;  /* "CUDA_CACHE_MAXSIZE" or "default" */
    vyre_jitcache_usage use;
} jit_report;

static double fill_of(const jit_report *r)
{
    return r->max_bytes ? (double)r->use.bytes / (double)r->max_bytes : -1;
}

/* The driver's default cache directory: CUDA_CACHE_PATH, else
 * $HOME/.nv/ComputeCache (the passwd entry's home when HOME is unset). */
static int driver_path(char *buf, size_t size, const char **source)
{
    const char *env = getenv("CUDA_CACHE_PATH");
    if (env && *env) {
        *source = "CUDA_CACHE_PATH";
        return snprintf(buf, size, "%s", env) < (int)size ? 0 : -1;
    }
    *source = "default";
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(geteuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home)
        return -1;
    return snprintf(buf, size, "%s/.nv/ComputeCache", home) < (int)size ? 0 : -1;
}

static json_t *report_json(const jit_report *r)
{
    double fill = fill_of(r);
    return json_pack("{s:s, s:s, s:b, s:I, s:I, s:o, s:s, s:o}", "path", r->path, "path_source",
                     r->path_source, "exists", r->use.exists, "files", (json_int_t)r->use.files,
                     "bytes", (json_int_t)r->use.bytes, "max_bytes",
                     r->max_bytes ? json_integer((json_int_t)r->max_bytes) : json_null(),
                     "max_bytes_source", r->max_source, "fill_ratio",
                     fill >= 0 ? json_real(fill) : json_null());
}

static void print_size_lines(const jit_report *r, const char *files_label, const char *size_label,
                             const char *max_label, const char *fill_label,
                             const char *default_word, const char *bad_value)
{
    char size[32], max[32];
    vyre_format_size(r->use.bytes, size, sizeof size);
    printf("%-22s %" PRIu64 "\n", files_label, r->use.files);
    printf("%-22s %s\n", size_label, size);
    if (r->max_bytes) {
        vyre_format_size(r->max_bytes, max, sizeof max);
        printf("%-22s %s (%" PRIu64 " bytes, %s)\n", max_label, max, r->max_bytes,
               strcmp(r->max_source, "default") ? "from the environment" : default_word);
    } else {
        printf("%-22s unusable ('%s', see the warning)\n", max_label, bad_value ? bad_value : "");
    }
    double fill = fill_of(r);
    if (fill >= 0)
        printf("%-22s %.1f%%\n", fill_label, fill * 100.0);
    else
        printf("%-22s %s\n", fill_label, "-");
}

static int clear_cache(const vyre_jitcache_info *info)
{
    vyre_error err;
    vyre_error_clear(&err);
    uint64_t files = 0, bytes = 0;
    if (vyre_jitcache_clear(info->path, &files, &bytes, &err))
        return cachectl_fail(&err);
    if (g_tool.json) {
        json_t *o =
            json_pack("{s:i, s:s, s:I, s:I}", "schema_version", 1, "path", info->path,
                      "removed_files", (json_int_t)files, "removed_bytes", (json_int_t)bytes);
        tool_json_print(stdout, o);
    } else if (!g_cachectl.quiet) {
        char size[32];
        vyre_format_size(bytes, size, sizeof size);
        printf("Removed %" PRIu64 " file%s (%s) from %s\n", files, files == 1 ? "" : "s", size,
               info->path);
    }
    return TOOL_EXIT_OK;
}

/* Parses argv: CACHECTL_HANDLED to go on, else the exit code. */
static int parse_jit_args(int argc, char **argv, int *clear, int *yes)
{
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "jit", cachectl_jit_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        if (c == OPT_CLEAR)
            *clear = 1;
        else if (c == OPT_YES)
            *yes = 1;
        else
            return TOOL_EXIT_ERROR;
    }
    if (optind < argc)
        return tool_usage_error("jit", NULL, "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("jit");
    if (rc)
        return rc;
    if (*yes && !*clear)
        return tool_usage_error("jit", "use 'vyre-cachectl jit --clear --yes'",
                                "--yes only goes with --clear");
    return CACHECTL_HANDLED;
}

/* vyre's cache. A CUDA_CACHE_MAXSIZE that vyre rejects (not a number, out
 * of range, below the floor) is a finding: the path and contents are still
 * reported, resolved without it, and its limit is unknown (*max_bad). 0,
 * or the exit code after the error is printed. */
static int resolve_vyre(const char *maxval, vyre_jitcache_info *info, findings *fs, int *max_bad)
{
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, info, &err);
    if (!rc)
        return 0;
    if (rc != VYRE_EENV || !maxval)
        return cachectl_fail(&err);
    /* Is it the size? Resolve again without it: an error then is the
     * path's, and stays an error. */
    vyre_error size_err = err;
    unsetenv("CUDA_CACHE_MAXSIZE");
    vyre_error_clear(&err);
    rc = vyre_jitcache_resolve(VYRE_JITCACHE_FLOOR_BYTES, info, &err);
    setenv("CUDA_CACHE_MAXSIZE", maxval, 1);
    if (rc)
        return cachectl_fail(&err);
    char msg[VYRE_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%.*s: vyre programs refuse to start with it", (int)(sizeof msg - 48),
             size_err.message);
    add_finding(fs, msg, size_err.hint);
    *max_bad = 1;
    return 0;
}

/* The driver's reading of CUDA_CACHE_MAXSIZE (maxval) into dr, and what is
 * wrong with it into fs. */
static void driver_maxsize(const char *maxval, jit_report *dr, findings *fs)
{
    uint64_t v = 0;
    char msg[VYRE_ERROR_MESSAGE_MAX];
    if (vyre_parse_uint(maxval, &v) != 0) {
        snprintf(msg, sizeof msg,
                 /* bounded: excerpt of an environment value */
                 "CUDA_CACHE_MAXSIZE='%.200s' is not a number of bytes the driver reads: "
                 "its default of %" PRIu64 " bytes is assumed for CUDA programs",
                 maxval, (uint64_t)DRIVER_DEFAULT_MAXSIZE);
        add_finding(fs, msg, "give a plain byte count (e.g. 4294967296 for 4 GiB), or unset it");
        return;
    }
    dr->max_bytes = v;
    dr->max_source = "CUDA_CACHE_MAXSIZE";
    if (v > DRIVER_MAX_MAXSIZE) {
        snprintf(msg, sizeof msg,
                 /* bounded: excerpt of an environment value */
                 "CUDA_CACHE_MAXSIZE='%.200s' is above the driver's maximum of %" PRIu64
                 " bytes (4 GiB)",
                 maxval, (uint64_t)DRIVER_MAX_MAXSIZE);
        add_finding(fs, msg, "set it to at most 4294967296");
    }
}

static void print_findings(const findings *fs)
{
    for (size_t i = 0; i < fs->n; i++) {
        fprintf(stderr, "%s: warning: %s\n", tool_prog(), fs->f[i].message);
        if (fs->f[i].hint[0])
            fprintf(stderr, "hint: %s\n", fs->f[i].hint);
    }
}

/* The --json document (schema_version 2); dr NULL: no driver default. */
static void print_json(const jit_report *vy, const jit_report *dr, int same, const findings *fs)
{
    json_t *o = json_pack("{s:i}", "schema_version", 2);
    json_t *v = report_json(vy);
    json_object_update(o, v);
    json_decref(v);
    if (dr) {
        json_t *d = report_json(dr);
        json_object_set_new(d, "same_as_vyre", json_boolean(same));
        json_object_set_new(o, "driver_default", d);
    } else {
        json_object_set_new(o, "driver_default", json_null());
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < fs->n; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s?}", "message", fs->f[i].message, "hint",
                                             fs->f[i].hint[0] ? fs->f[i].hint : NULL));
    json_object_set_new(o, "warnings", arr);
    tool_json_print(stdout, o);
}

/* The report for a terminal; dr NULL: no driver default. */
static void print_text(const vyre_jitcache_info *info, const jit_report *vy, const jit_report *dr,
                       int same, const char *maxval)
{
    printf("%-22s %s (%s)\n", "JIT cache path:", vy->path,
           info->path_from_env ? "from CUDA_CACHE_PATH" : "vyre default");
    if (!vy->use.exists)
        printf("%-22s %s\n", "Exists:", "no (created by the first vyre program)");
    print_size_lines(vy, "Files:", "Size on disk:", "CUDA_CACHE_MAXSIZE:", "Fill:", "vyre default",
                     maxval);
    printf("\n");
    if (!dr) {
        printf("%-22s %s\n", "Driver default path:", "unknown (no HOME)");
        return;
    }
    printf("%-22s %s (%s)\n", "Driver default path:", dr->path,
           same ? "from CUDA_CACHE_PATH, the same as vyre's"
                : "driver default, for CUDA programs not using vyre");
    if (!dr->use.exists)
        printf("%-22s %s\n", "Driver exists:", "no");
    print_size_lines(dr, "Driver files:", "Driver size on disk:", "Driver max size:",
                     "Driver fill:", "driver default", maxval);
}

int cmd_jit(int argc, char **argv)
{
    int clear = 0, yes = 0;
    int rc = parse_jit_args(argc, argv, &clear, &yes);
    if (rc != CACHECTL_HANDLED)
        return rc;
    findings fs = {.n = 0};
    vyre_jitcache_info info;
    vyre_error err;
    vyre_error_clear(&err);
    const char *maxenv = getenv("CUDA_CACHE_MAXSIZE");
    char maxval[256] = "";
    if (maxenv)
        snprintf(maxval, sizeof maxval, "%s", maxenv);
    int vyre_max_bad = 0;
    if ((rc = resolve_vyre(maxenv ? maxval : NULL, &info, &fs, &vyre_max_bad)))
        return rc;
    if (clear && !yes)
        return tool_usage_error("jit", "run 'vyre-cachectl jit --clear --yes' if you mean it",
                                "--clear would empty the JIT cache '%s'; refusing without "
                                "--yes",
                                info.path);
    if (clear) {
        print_findings(&fs);
        return clear_cache(&info);
    }
    jit_report vy = {
        .path = info.path,
        .path_source = info.path_from_env ? "CUDA_CACHE_PATH" : "default",
        .max_bytes = vyre_max_bad ? 0 : info.maxsize_bytes,
        .max_source = vyre_max_bad || info.maxsize_from_env ? "CUDA_CACHE_MAXSIZE" : "default",
    };
    if (vyre_jitcache_usage_get(vy.path, &vy.use, &err))
        return cachectl_fail(&err);
    /* The driver's default cache, for CUDA programs that do not go
     * through vyre. Its size limit is what the driver reads. */
    char dpath[VYRE_JITCACHE_PATH_MAX];
    jit_report dr = {.path = dpath, .max_bytes = DRIVER_DEFAULT_MAXSIZE, .max_source = "default"};
    int have_driver = driver_path(dpath, sizeof dpath, &dr.path_source) == 0;
    if (!have_driver)
        add_finding(&fs,
                    "cannot tell where the driver's default JIT cache is: neither "
                    "CUDA_CACHE_PATH nor HOME is set",
                    "set HOME, or CUDA_CACHE_PATH for every CUDA program");
    if (maxenv)
        driver_maxsize(maxval, &dr, &fs);
    int same = have_driver && strcmp(dr.path, vy.path) == 0;
    if (same)
        dr.use = vy.use;
    else if (have_driver && vyre_jitcache_usage_get(dr.path, &dr.use, &err))
        return cachectl_fail(&err);
    print_findings(&fs);
    if (g_tool.json)
        print_json(&vy, have_driver ? &dr : NULL, same, &fs);
    else if (!g_cachectl.quiet)
        print_text(&info, &vy, have_driver ? &dr : NULL, same, maxval);
    return TOOL_EXIT_OK;
}
