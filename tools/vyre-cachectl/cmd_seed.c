/*
 * cmd_seed.c - `vyre-cachectl seed FILE... --arch LIST --entry NAME [-- OPTS]`:
 * compile CUDA C (NVRTC) or PTX (nvJitLink) ahead of time into cubin blobs,
 * under exactly the key the run-time path computes (libcore's
 * vyre_compile_through_cache is that path), so a fleet can ship a warm
 * cache. No GPU or driver is needed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmds.h"
#include "progress.h"
#include "vyre/compile.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl seed FILE... --arch ARCH[,ARCH...] --entry NAME\n"
            "                          [-- COMPILER-OPTIONS...]\n\n"
            "Compile each FILE for each architecture into a cubin blob in the cache, under\n"
            "the key the run-time path computes, so the first run is a hit. CUDA C (.cu)\n"
            "goes through NVRTC, PTX (.ptx) through nvJitLink, a .cubin is stored as is;\n"
            "other names are recognised by content. Blobs already present are left alone.\n"
            "No GPU is needed.\n\n"
            "  --arch LIST   comma-separated real architectures: sm_80, sm_90, sm_90a\n"
            "                (arch-specific, as Triton's PTX uses), sm_100f, ...\n"
            "  --entry NAME  the kernel's entry point, as the run-time caller names it\n"
            "                (part of the key: a different name is a different blob)\n"
            "  -- OPTS       compiler options, in order (NVRTC's for CUDA C, nvJitLink's\n"
            "                for PTX); they are part of the key, so give exactly the\n"
            "                options the run-time caller uses\n\n"
            "A compile error prints the compiler log; the other files are still seeded.\n\n"
            "%s\n"
            "exit status: 0 every blob seeded or present, 2 usage or operational error\n"
            "             (unreadable file, compile error, NVRTC or nvJitLink missing)\n",
            CACHECTL_GLOBAL_HELP);
}

enum { OPT_ARCH = CACHECTL_OPT_FIRST_LOCAL, OPT_ENTRY };

#define SEED_MAX_ARCHS 16

static char *read_file(const char *path, size_t *len, vyre_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        snprintf(err->message, sizeof err->message, "cannot read '%s': %s", path, strerror(e));
        snprintf(err->hint, sizeof err->hint, "check the file name");
        err->code = VYRE_EIO;
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            if (cap >= VYRE_BLOB_MAX_PAYLOAD) {
                snprintf(err->message, sizeof err->message, "'%s' is too large to seed", path);
                snprintf(err->hint, sizeof err->hint, "sources are limited to 512 MiB");
                err->code = VYRE_ETOOBIG;
                free(buf);
                fclose(f);
                return NULL;
            }
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                snprintf(err->message, sizeof err->message, "out of memory reading '%s'", path);
                err->hint[0] = '\0';
                err->code = VYRE_ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        snprintf(err->message, sizeof err->message, "cannot read '%s'", path);
        err->hint[0] = '\0';
        err->code = VYRE_EIO;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

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
            vyre_cli_usage_error("seed", "write architectures such as sm_80,sm_90,sm_90a",
                                 "'%s' is not an architecture", p);
            return -1;
        }
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= strcmp(archs[i], p) == 0;
        if (!dup) {
            if (n == SEED_MAX_ARCHS) {
                vyre_cli_usage_error("seed", NULL, "more than %d architectures", SEED_MAX_ARCHS);
                return -1;
            }
            archs[n++] = p;
        }
        p = comma ? comma + 1 : NULL;
    }
    return n;
}

/* Prints the compiler log of a failed compile (the cache path keeps only
 * the first failing line in err, so compile once more for the log). */
static void print_log(const vyre_compile_request *req, const char *file)
{
    vyre_compile_result res;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_compile_cubin(req, &res, &err);
    if (res.log && *res.log) {
        fprintf(stderr, "compiler log for '%s' (%s):\n%s", file, req->arch, res.log);
        if (res.log[strlen(res.log) - 1] != '\n')
            fputc('\n', stderr);
    }
    vyre_compile_result_release(&res);
}

int cmd_seed(int argc, char **argv)
{
    static const struct option opts[] = {
        CACHECTL_GLOBAL_LONGOPTS,
        {"arch", required_argument, NULL, OPT_ARCH},
        {"entry", required_argument, NULL, OPT_ENTRY},
        {NULL, 0, NULL, 0},
    };
    /* Split at "--" first: getopt's permutation would merge the files
     * before it with the compiler options after it. A "--" that is the
     * value of an option (--entry --) is not the separator. */
    int end = argc;
    for (int i = 1; i < argc; i++) {
        const char *prev = argv[i - 1];
        int is_value = i > 1 && (strcmp(prev, "--arch") == 0 || strcmp(prev, "--entry") == 0 ||
                                 strcmp(prev, "--cache-dir") == 0);
        if (strcmp(argv[i], "--") == 0 && !is_value) {
            end = i;
            break;
        }
    }
    const char *const *copts = end < argc ? (const char *const *)(argv + end + 1) : NULL;
    size_t n_copts = end < argc ? (size_t)(argc - end - 1) : 0;

    char *arch_list = NULL;
    const char *entry = NULL;
    int c;
    opterr = 0;
    /* Files and options may mix, as in "seed a.cu --arch sm_90 b.cu". */
    while ((c = getopt_long(end, argv, CACHECTL_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
        int rc = cachectl_option(c, "seed", opts, end, argv, usage);
        if (rc == CACHECTL_HANDLED)
            continue;
        if (rc != -1)
            return rc;
        if (c == OPT_ARCH)
            arch_list = optarg;
        else if (c == OPT_ENTRY)
            entry = optarg;
        else
            return VYRE_EXIT_ERROR;
    }
    char **files = argv + optind;
    int n_files = end - optind;
    int rc = cachectl_check_globals("seed");
    if (rc)
        return rc;
    if (n_files <= 0)
        return vyre_cli_usage_error("seed", "name CUDA C (.cu), PTX (.ptx) or cubin files",
                                    "seed needs at least one file");
    if (!arch_list)
        return vyre_cli_usage_error("seed", "give --arch sm_90 (or a list: sm_80,sm_90a)",
                                    "seed needs --arch");
    if (!entry || !*entry)
        return vyre_cli_usage_error("seed",
                                    "give --entry NAME: the run-time path keys blobs by entry "
                                    "point, so it must be the name the caller uses",
                                    "seed needs --entry");
    const char *archs[SEED_MAX_ARCHS];
    int n_archs = parse_archs(arch_list, archs);
    if (n_archs < 0)
        return VYRE_EXIT_ERROR;

    vyre_cache *cache = NULL;
    vyre_error err;
    vyre_error_clear(&err);
    /* The one command that may create the cache: seeding builds one. */
    vyre_cache_open_opts oopts;
    int orc = cachectl_open_opts(&oopts);
    if (orc)
        return orc;
    if (vyre_cache_open_ex(g_cachectl.cache_dir, VYRE_CACHE_NO_HIT_TRACK, &oopts, &cache, &err))
        return cachectl_fail(&err);

    cachectl_progress prog;
    cachectl_progress_init(&prog, "seed", "compiles");
    json_t *arr = g_cachectl.json ? json_array() : NULL;
    uint64_t seeded = 0, present = 0, failed = 0, done = 0;
    uint64_t total = (uint64_t)n_files * (uint64_t)n_archs;
    for (int f = 0; f < n_files; f++) {
        size_t len = 0;
        vyre_error_clear(&err);
        char *src = read_file(files[f], &len, &err);
        if (!src) {
            cachectl_progress_end(&prog);
            vyre_cli_report(&err);
            failed += (uint64_t)n_archs;
            done += (uint64_t)n_archs;
            continue;
        }
        vyre_source_kind kind = VYRE_SOURCE_CUDA_C;
        vyre_source_kind_detect(files[f], src, len, &kind);
        for (int a = 0; a < n_archs; a++) {
            vyre_compile_request req = {kind, src, len, archs[a], entry, copts, n_copts};
            vyre_blob *blob = NULL;
            int was_hit = 0;
            vyre_error_clear(&err);
            int crc = vyre_compile_through_cache(cache, &req, &blob, &was_hit, &err);
            cachectl_progress_update(++done, total, &prog);
            if (crc) {
                cachectl_progress_end(&prog);
                fprintf(stderr, "%s: error: seeding '%s' for %s: %s\n", vyre_cli_prog(), files[f],
                        archs[a], err.message[0] ? err.message : vyre_strerror(crc));
                vyre_cli_hints(&err);
                if (crc == VYRE_ECOMPILE)
                    print_log(&req, files[f]);
                vyre_blob_free(blob);
                failed++;
                continue;
            }
            was_hit ? present++ : seeded++;
            char hex[VYRE_KEY_HEX_LEN + 1];
            vyre_key_to_hex(&blob->header.key, hex);
            if (arr) {
                json_array_append_new(
                    arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "file", files[f],
                                   "source_kind", vyre_source_kind_name(kind), "arch", archs[a],
                                   "key", hex, "toolchain", blob->header.toolchain, "status",
                                   was_hit ? "present" : "seeded", "bytes",
                                   (json_int_t)(VYRE_BLOB_HEADER_SIZE + blob->header.stored_size),
                                   "compile_ns", (json_int_t)blob->header.compile_ns));
            } else if (!g_cachectl.quiet) {
                char size[32];
                vyre_format_size(VYRE_BLOB_HEADER_SIZE + blob->header.stored_size, size,
                                 sizeof size);
                cachectl_progress_end(&prog);
                printf("%-7s  %.*s  %-7s  %-6s  %10s  %s\n", was_hit ? "present" : "seeded",
                       CACHECTL_SHORT_KEY, hex, archs[a], vyre_source_kind_name(kind), size,
                       files[f]);
            }
            vyre_blob_free(blob);
        }
        free(src);
    }
    cachectl_progress_end(&prog);
    if (arr) {
        json_t *o = cachectl_json_root(cache, 1);
        json_object_set_new(o, "seeded", json_integer((json_int_t)seeded));
        json_object_set_new(o, "present", json_integer((json_int_t)present));
        json_object_set_new(o, "failed", json_integer((json_int_t)failed));
        json_object_set_new(o, "blobs", arr);
        cachectl_json_print(o);
    } else if (!g_cachectl.quiet) {
        printf("Seeded %" PRIu64 ", already present %" PRIu64 ", failed %" PRIu64 "\n", seeded,
               present, failed);
    }
    vyre_cache_close(cache);
    return failed ? VYRE_EXIT_ERROR : VYRE_EXIT_OK;
}
