/*
 * cmd_seed.c - `vyre-cachectl seed FILE|DIR... [--arch LIST] [--entry NAME]...
 * [--jobs N] [-- OPTS]`: compile CUDA C (NVRTC) or PTX (nvJitLink) ahead of
 * time into cubin blobs, under exactly the key the run-time path computes
 * (libcore's vyre_compile_through_cache_named is that path), so a fleet can
 * ship a warm cache. No GPU or driver is needed.
 *
 * As a user first tries it: `seed kernels/` or `seed *.ptx` with no flags.
 * A key names a module (key format v2), so the whole module is compiled
 * once and every kernel in it is a hit; the kernels come from the module
 * and a PTX file's architecture from its .target directive. Files are
 * seeded by a pool of threads; output is printed in the order the files
 * were named (a directory's files in name order), whatever order they
 * finish in.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_util.h"
#include "cmds.h"
#include "progress.h"
#include "vyre/compile.h"

#define SEED_MAX_ARCHS   16
#define SEED_MAX_ENTRIES 64
#define SEED_MAX_JOBS    256

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
            "name is skipped (the PTX is the module).\n\n"
            "  --arch LIST   comma-separated real architectures: sm_80, sm_90, sm_90a\n"
            "                (arch-specific, as Triton's PTX uses), sm_100f, ...\n"
            "                Default: a PTX file's own '.target' (sm_90a stays sm_90a);\n"
            "                CUDA C and cubin files name none and need --arch\n"
            "  --entry NAME  a kernel the module must define (may be repeated): a file\n"
            "                whose module lacks one fails, naming the kernels it has, and\n"
            "                nothing is stored for it. Not part of the key: one blob\n"
            "                serves every kernel of a module\n"
            "  --jobs N      compile N files at once (default: the number of online CPUs)\n"
            "  -- OPTS       compiler options, in order (NVRTC's for CUDA C, nvJitLink's\n"
            "                for PTX); they are part of the key, so give exactly the\n"
            "                options the run-time caller uses\n\n"
            "A failed file is reported (with the compiler log for a compile error) and\n"
            "the others are still seeded. The last line counts the modules seeded, their\n"
            "kernels, those fetched from a remote store (with remotes), those already\n"
            "present and the failures.\n\n"
            "%s\n"
            "exit status: 0 every module seeded or present, 2 usage or operational error\n"
            "             (unreadable file, no architecture, a kernel missing from a module,\n"
            "             compile error, NVRTC or nvJitLink missing)\n",
            CACHECTL_GLOBAL_HELP);
}

enum { OPT_ARCH = CACHECTL_OPT_FIRST_LOCAL, OPT_ENTRY, OPT_JOBS };

/* ---- reading sources ---------------------------------------------------- */

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

/* ---- the file list: operands, directories walked --------------------------- */

typedef struct seed_item {
    char *path;
    /* Results, printed in order once every earlier item is done. */
    char *out; /* stdout text */
    size_t out_len;
    char *errs; /* stderr text */
    size_t errs_len;
    json_t *blobs;
    json_t *failures;
    uint64_t seeded, present, fetched, failed, kernels;
    int done;
} seed_item;

typedef struct item_list {
    seed_item *v;
    size_t n, cap;
    int oom;
} item_list;

static int add_item(item_list *l, const char *path)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        seed_item *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    memset(&l->v[l->n], 0, sizeof l->v[l->n]);
    l->v[l->n].path = strdup(path);
    if (!l->v[l->n].path)
        return -1;
    l->n++;
    return 0;
}

static const char *ext_of(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? dot : "";
}

static int seedable_ext(const char *path)
{
    const char *e = ext_of(path);
    return strcasecmp(e, ".ptx") == 0 || strcasecmp(e, ".cu") == 0 || strcasecmp(e, ".cubin") == 0;
}

/* nftw has no context argument: the walk is single-threaded, before any
 * worker starts. */
static char **g_walk;
static size_t g_walk_n, g_walk_cap;
static int g_walk_oom;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    /* FTW_PHYS: a symbolic link is reported as FTW_SL and never followed,
     * so the walk stays in the tree. Only regular files are seeded. */
    if (type != FTW_F || !S_ISREG(st->st_mode) || !seedable_ext(path))
        return 0;
    if (g_walk_n == g_walk_cap) {
        size_t cap = g_walk_cap ? g_walk_cap * 2 : 256;
        char **v = realloc(g_walk, cap * sizeof *v);
        if (!v) {
            g_walk_oom = 1;
            return 1;
        }
        g_walk = v;
        g_walk_cap = cap;
    }
    if (!(g_walk[g_walk_n] = strdup(path))) {
        g_walk_oom = 1;
        return 1;
    }
    g_walk_n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when path is a .cubin and the same name with .ptx is in the walk. */
static int has_ptx_sibling(const char *path)
{
    const char *e = ext_of(path);
    if (strcasecmp(e, ".cubin") != 0)
        return 0;
    size_t stem = (size_t)(e - path);
    char *ptx = malloc(stem + 5);
    if (!ptx)
        return 0;
    memcpy(ptx, path, stem);
    memcpy(ptx + stem, ".ptx", 5);
    const char *key = ptx;
    int found = bsearch(&key, g_walk, g_walk_n, sizeof *g_walk, cmp_str) != NULL;
    free(ptx);
    return found;
}

/* Adds dir's seedable files, in name order. Returns the number of files
 * skipped as cubins of a PTX module, or -1 (message printed). A dir that
 * is itself a symbolic link (~/.triton/cache often is) is walked where it
 * points, its files named under the link as given; links below it are not
 * followed. */
static long add_dir(item_list *l, const char *dir)
{
    g_walk = NULL;
    g_walk_n = g_walk_cap = 0;
    g_walk_oom = 0;
    /* "link/" names the link too: trailing slashes do not count. */
    struct stat lst;
    char *real = NULL, *bare = strdup(dir);
    size_t bl = bare ? strlen(bare) : 0;
    while (bl > 1 && bare[bl - 1] == '/')
        bare[--bl] = '\0';
    if (bare && lstat(bare, &lst) == 0 && S_ISLNK(lst.st_mode))
        real = realpath(bare, NULL);
    int r = nftw(real ? real : dir, walk_one, 32, FTW_PHYS);
    if (real && r == 0 && !g_walk_oom) {
        size_t rl = strlen(real), dl = strlen(bare);
        for (size_t i = 0; i < g_walk_n; i++) {
            size_t tail = strlen(g_walk[i]) - rl;
            char *q = malloc(dl + tail + 1);
            if (!q) {
                g_walk_oom = 1;
                break;
            }
            memcpy(q, bare, dl);
            memcpy(q + dl, g_walk[i] + rl, tail + 1);
            free(g_walk[i]);
            g_walk[i] = q;
        }
    }
    free(real);
    free(bare);
    long skipped = 0;
    if (r != 0 && !g_walk_oom) {
        fprintf(stderr, "%s: error: cannot walk '%s': %s\n", tool_prog(), dir, strerror(errno));
        skipped = -1;
    } else if (g_walk_oom) {
        fprintf(stderr, "%s: error: out of memory walking '%s'\n", tool_prog(), dir);
        skipped = -1;
    }
    if (skipped == 0 && g_walk_n) {
        qsort(g_walk, g_walk_n, sizeof *g_walk, cmp_str);
        for (size_t i = 0; i < g_walk_n && skipped >= 0; i++) {
            if (has_ptx_sibling(g_walk[i]))
                skipped++;
            else if (add_item(l, g_walk[i]))
                skipped = -1;
        }
    }
    for (size_t i = 0; i < g_walk_n; i++)
        free(g_walk[i]);
    free(g_walk);
    g_walk = NULL;
    return skipped;
}

/* ---- seeding one file ----------------------------------------------------- */

typedef struct seed_ctx {
    vyre_cache *cache;
    const char **archs; /* --arch, or NULL: the PTX target */
    int n_archs;
    const char *const *entries;
    size_t n_entries;
    const char *const *copts;
    size_t n_copts;
    item_list *items;
    atomic_size_t next;
    pthread_mutex_t mu; /* printing, progress */
    size_t next_print;
    size_t n_done;
    cachectl_progress prog;
    json_t *blobs, *failures; /* --json, in item order */
    int has_remotes;          /* a hit may have come from a remote store */
    uint64_t seeded, present, fetched, failed, kernels;
} seed_ctx;

/* Appends the compiler log of a failed compile to f (the cache path keeps
 * only the first failing line in err, so compile once more for the log). */
static void print_log(FILE *f, const vyre_compile_request *req, const char *file)
{
    vyre_compile_result res;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_compile_cubin_named(req, file, &res, &err);
    if (res.log && *res.log) {
        fprintf(f, "compiler log for '%s' (%s):\n%s", file, req->arch, res.log);
        if (res.log[strlen(res.log) - 1] != '\n')
            fputc('\n', f);
    }
    vyre_compile_result_release(&res);
}

static void report_error(seed_item *it, FILE *ef, const char *arch, const vyre_error *err, int rc)
{
    const char *msg = err->message[0] ? err->message : vyre_strerror(rc);
    fprintf(ef, "%s: error: seeding '%s'%s%s: %s\n", tool_prog(), it->path, arch ? " for " : "",
            arch ? arch : "", msg);
    if (err->hint[0])
        fprintf(ef, "hint: %s\n", err->hint);
    if (it->failures)
        json_array_append_new(it->failures, json_pack("{s:s, s:s?, s:s}", "file", it->path, "arch",
                                                      arch, "error", msg));
    it->failed++;
}

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

/* 1 when the cache holds a valid blob for req's key itself, no remote
 * asked (1 too when the key cannot be computed: the compile says why). */
static int held_locally(vyre_cache *c, const vyre_compile_request *req)
{
    vyre_key k;
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_compile_key(req, &k, &e))
        return 1;
    vyre_blob *b = NULL;
    int rc = vyre_blob_load(vyre_cache_root(c), &k, &b, NULL, NULL);
    vyre_blob_free(b);
    return rc == VYRE_OK;
}

static void seed_file(seed_ctx *x, seed_item *it, FILE *of, FILE *ef)
{
    vyre_error err;
    vyre_error_clear(&err);
    size_t len = 0;
    char *src = tool_read_file(it->path, VYRE_BLOB_MAX_PAYLOAD, "sources are limited to 512 MiB",
                               &len, &err);
    if (!src) {
        report_error(it, ef, NULL, &err, err.code);
        return;
    }
    vyre_source_kind kind = VYRE_SOURCE_CUDA_C;
    vyre_source_kind_detect(it->path, src, len, &kind);

    const char *archs[SEED_MAX_ARCHS];
    int n_archs = x->n_archs;
    char target[VYRE_BLOB_ARCH_MAX];
    if (x->archs) {
        memcpy(archs, x->archs, (size_t)n_archs * sizeof *archs);
    } else if (kind == VYRE_SOURCE_PTX) {
        if (vyre_ptx_target_arch(src, len, target, sizeof target) != VYRE_OK) {
            vyre_error_clear(&err);
            tool_set_error(&err, VYRE_EINVAL,
                           "give --arch sm_90 (or a list: sm_80,sm_90a) for PTX without one",
                           "the PTX names no real architecture in a '.target' directive");
            report_error(it, ef, NULL, &err, VYRE_EINVAL);
            free(src);
            return;
        }
        archs[0] = target;
        n_archs = 1;
    } else {
        vyre_error_clear(&err);
        tool_set_error(&err, VYRE_EINVAL,
                       "give --arch sm_90 (or a list: sm_80,sm_90a): only PTX names its own target",
                       "%s names no target architecture: seeding it needs --arch",
                       kind == VYRE_SOURCE_CUBIN ? "a cubin" : "CUDA C source");
        report_error(it, ef, NULL, &err, VYRE_EINVAL);
        free(src);
        return;
    }

    for (int a = 0; a < n_archs; a++) {
        vyre_compile_request req = {kind, src, len, archs[a], NULL, x->copts, x->n_copts};
        vyre_blob *blob = NULL;
        int was_hit = 0;
        /* A hit that was not here before came from a remote store. */
        int local = !x->has_remotes || held_locally(x->cache, &req);
        vyre_error_clear(&err);
        int crc = vyre_compile_through_cache_named(x->cache, &req, it->path, x->entries,
                                                   x->n_entries, &blob, &was_hit, &err);
        if (crc) {
            report_error(it, ef, archs[a], &err, crc);
            if (crc == VYRE_ECOMPILE)
                print_log(ef, &req, it->path);
            vyre_blob_free(blob);
            if (crc == VYRE_ENOENT)
                break; /* a kernel is missing: the same for every arch, store nothing */
            continue;
        }
        const char *status = !was_hit ? "seeded" : local ? "present" : "fetched";
        !was_hit ? it->seeded++ : local ? it->present++ : it->fetched++;
        if (!was_hit)
            it->kernels += blob->header.n_kernels;
        char hex[VYRE_KEY_HEX_LEN + 1];
        vyre_key_to_hex(&blob->header.key, hex);
        uint64_t bytes =
            VYRE_BLOB_HEADER_SIZE + blob->header.stored_size + blob->header.kernels_size;
        if (it->blobs) {
            json_t *ks = json_array();
            for (size_t o = 0; blob->header.kernels && o < blob->header.kernels_size;
                 o += strlen(blob->header.kernels + o) + 1)
                json_array_append_new(ks, json_string(blob->header.kernels + o));
            json_array_append_new(
                it->blobs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:s?}", "file",
                                     it->path, "source_kind", vyre_source_kind_name(kind), "arch",
                                     archs[a], "key", hex, "toolchain", blob->header.toolchain,
                                     "status", status, "bytes", (json_int_t)bytes, "compile_ns",
                                     (json_int_t)blob->header.compile_ns, "kernels", ks, "source",
                                     blob->header.source[0] ? blob->header.source : NULL));
        } else if (!g_cachectl.quiet) {
            char size[32], ks[512];
            vyre_format_size(bytes, size, sizeof size);
            kernel_list(blob, ks, sizeof ks);
            fprintf(of, "%-7s  %.*s  %-7s  %-6s  %10s  %s  [%s]\n", status, CACHECTL_SHORT_KEY, hex,
                    archs[a], vyre_source_kind_name(kind), size, it->path, ks);
        }
        vyre_blob_free(blob);
    }
    free(src);
}

/* Prints every finished item whose predecessors are printed. mu held. */
static void flush_done(seed_ctx *x)
{
    while (x->next_print < x->items->n && x->items->v[x->next_print].done) {
        seed_item *it = &x->items->v[x->next_print++];
        if (it->out_len || it->errs_len)
            cachectl_progress_end(&x->prog);
        if (it->errs_len) {
            fflush(stdout);
            fwrite(it->errs, 1, it->errs_len, stderr);
        }
        if (it->out_len)
            fwrite(it->out, 1, it->out_len, stdout);
        fflush(stdout);
        free(it->out);
        free(it->errs);
        it->out = it->errs = NULL;
        if (it->blobs) {
            json_array_extend(x->blobs, it->blobs);
            json_array_extend(x->failures, it->failures);
            json_decref(it->blobs);
            json_decref(it->failures);
            it->blobs = it->failures = NULL;
        }
        x->seeded += it->seeded;
        x->present += it->present;
        x->fetched += it->fetched;
        x->failed += it->failed;
        x->kernels += it->kernels;
    }
}

static void *worker(void *p)
{
    seed_ctx *x = p;
    for (;;) {
        size_t i = atomic_fetch_add(&x->next, 1);
        if (i >= x->items->n)
            return NULL;
        seed_item *it = &x->items->v[i];
        if (g_tool.json) {
            it->blobs = json_array();
            it->failures = json_array();
        }
        FILE *of = open_memstream(&it->out, &it->out_len);
        FILE *ef = open_memstream(&it->errs, &it->errs_len);
        if (of && ef) {
            seed_file(x, it, of, ef);
        } else {
            it->failed++;
        }
        if (of)
            fclose(of);
        if (ef)
            fclose(ef);
        pthread_mutex_lock(&x->mu);
        it->done = 1;
        x->n_done++;
        flush_done(x);
        cachectl_progress_update(x->n_done, x->items->n, &x->prog);
        pthread_mutex_unlock(&x->mu);
    }
}

static long online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > SEED_MAX_JOBS ? SEED_MAX_JOBS : n;
}

static void items_free(item_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
}

/* The operands into items: files as named, directories walked (in name
 * order). 0, or -1 after printing why (items freed). */
static int collect_items(char **files, int n_files, item_list *items, uint64_t *skipped)
{
    for (int f = 0; f < n_files; f++) {
        struct stat st;
        if (stat(files[f], &st) == 0 && S_ISDIR(st.st_mode)) {
            size_t before = items->n;
            long s = add_dir(items, files[f]);
            if (s == 0 && items->n == before)
                fprintf(stderr, "%s: note: no .ptx, .cu or .cubin file under '%s'\n", tool_prog(),
                        files[f]);
            if (s < 0) {
                items_free(items);
                return -1;
            }
            *skipped += (uint64_t)s;
        } else if (add_item(items, files[f])) {
            fprintf(stderr, "%s: error: out of memory\n", tool_prog());
            items_free(items);
            return -1;
        }
    }
    return 0;
}

/* Seeds every item with `jobs` threads (0: one per online CPU, never more
 * than items). Returns the number of jobs used. */
static long run_jobs(seed_ctx *x, long jobs)
{
    if (jobs == 0)
        jobs = online_cpus();
    if ((size_t)jobs > x->items->n)
        jobs = x->items->n ? (long)x->items->n : 1;
    pthread_t tids[SEED_MAX_JOBS];
    long started = 0;
    for (long j = 1; j < jobs; j++) {
        if (pthread_create(&tids[started], NULL, worker, x) != 0)
            break; /* fewer threads: the work is shared by those there are */
        started++;
    }
    worker(x);
    for (long j = 0; j < started; j++)
        pthread_join(tids[j], NULL);
    cachectl_progress_end(&x->prog);
    return jobs;
}

/* The --json document, or the last line. */
static void print_summary(seed_ctx *x, vyre_cache *cache, uint64_t skipped, long jobs)
{
    if (g_tool.json) {
        json_t *o = cachectl_json_root(cache, 2);
        json_object_set_new(o, "files", json_integer((json_int_t)x->items->n));
        json_object_set_new(o, "skipped", json_integer((json_int_t)skipped));
        json_object_set_new(o, "seeded", json_integer((json_int_t)x->seeded));
        json_object_set_new(o, "kernels", json_integer((json_int_t)x->kernels));
        json_object_set_new(o, "fetched", json_integer((json_int_t)x->fetched));
        json_object_set_new(o, "present", json_integer((json_int_t)x->present));
        json_object_set_new(o, "failed", json_integer((json_int_t)x->failed));
        json_object_set_new(o, "jobs", json_integer((json_int_t)jobs));
        json_object_set_new(o, "blobs", x->blobs);
        json_object_set_new(o, "failures", x->failures);
        tool_json_print(stdout, o);
    } else if (!g_cachectl.quiet) {
        /* "fetched" only where a remote store could have served one, so
         * the line of a cache without remotes keeps its shape. */
        char fetched[48] = "";
        if (x->has_remotes)
            snprintf(fetched, sizeof fetched, "fetched %" PRIu64 ", ", x->fetched);
        printf("Seeded %" PRIu64 " module%s (%" PRIu64 " kernel%s), %salready present %" PRIu64
               ", failed %" PRIu64 "\n",
               x->seeded, x->seeded == 1 ? "" : "s", x->kernels, x->kernels == 1 ? "" : "s",
               fetched, x->present, x->failed);
    }
}

/* Where the compiler options start: argv's "--", or argc. Split there
 * first: getopt's permutation would merge the files before it with the
 * compiler options after it. A "--" that is the value of an option
 * (--entry --) is not the separator. */
static int compiler_options_start(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *prev = argv[i - 1];
        int is_value = i > 1 && (strcmp(prev, "--arch") == 0 || strcmp(prev, "--entry") == 0 ||
                                 strcmp(prev, "--jobs") == 0 || strcmp(prev, "--cache-dir") == 0);
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
    char *e = NULL;
    errno = 0;
    *jobs = strtol(s, &e, 10);
    if (errno || !e || *e || e == s || *jobs < 1 || *jobs > SEED_MAX_JOBS)
        return tool_usage_error("seed", "give a whole number from 1 to 256",
                                "--jobs '%s' is not a number of jobs", s);
    return 0;
}

/* The one command that may create the cache: seeding builds one. 0, or
 * the exit code after the error is printed. */
static int open_or_create(vyre_cache **cache)
{
    vyre_error err;
    vyre_error_clear(&err);
    vyre_config cf;
    char root[VYRE_CACHE_PATH_MAX];
    int crc = cachectl_config(&cf, root, sizeof root);
    if (crc)
        return crc;
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = &cf;
    oo.flags = VYRE_CACHE_NO_HIT_TRACK;
    if (vyre_cache_open_ex(root, &oo, cache, &err))
        return cachectl_fail(&err);
    return 0;
}

int cmd_seed(int argc, char **argv)
{
    static const struct option opts[] = {
        CACHECTL_GLOBAL_LONGOPTS,
        {"arch", required_argument, NULL, OPT_ARCH},
        {"entry", required_argument, NULL, OPT_ENTRY},
        {"jobs", required_argument, NULL, OPT_JOBS},
        {NULL, 0, NULL, 0},
    };
    int end = compiler_options_start(argc, argv);
    const char *const *copts = end < argc ? (const char *const *)(argv + end + 1) : NULL;
    size_t n_copts = end < argc ? (size_t)(argc - end - 1) : 0;

    char *arch_list = NULL;
    const char *entries[SEED_MAX_ENTRIES];
    size_t n_entries = 0;
    long jobs = 0;
    int c, rc = 0;
    opterr = 0;
    /* Files and options may mix, as in "seed a.cu --arch sm_90 b.cu". */
    while ((c = getopt_long(end, argv, CACHECTL_GLOBAL_SHORTOPTS, opts, NULL)) != -1) {
        rc = cachectl_option(c, "seed", opts, end, argv, usage);
        if (rc == CACHECTL_HANDLED)
            continue;
        if (rc != -1)
            return rc;
        if (c == OPT_ARCH)
            arch_list = optarg;
        else if ((rc = c == OPT_ENTRY  ? add_entry(optarg, entries, &n_entries)
                       : c == OPT_JOBS ? parse_jobs(optarg, &jobs)
                                       : TOOL_EXIT_ERROR))
            return rc;
    }
    char **files = argv + optind;
    int n_files = end - optind;
    if ((rc = cachectl_check_globals("seed")))
        return rc;
    if (n_files <= 0)
        return tool_usage_error("seed",
                                "name CUDA C (.cu), PTX (.ptx) or cubin files, or directories "
                                "of them",
                                "seed needs at least one file");
    const char *archs[SEED_MAX_ARCHS];
    int n_archs = 0;
    if (arch_list && (n_archs = parse_archs(arch_list, archs)) < 0)
        return TOOL_EXIT_ERROR;

    /* Operands: files as named, directories walked (in name order). */
    item_list items = {0};
    uint64_t skipped = 0;
    if (collect_items(files, n_files, &items, &skipped))
        return TOOL_EXIT_ERROR;

    vyre_cache *cache = NULL;
    if ((rc = open_or_create(&cache))) {
        items_free(&items);
        return rc;
    }

    seed_ctx x;
    memset(&x, 0, sizeof x);
    x.cache = cache;
    x.has_remotes = vyre_cache_remote_count(cache) > 0;
    x.archs = n_archs ? archs : NULL;
    x.n_archs = n_archs;
    x.entries = entries;
    x.n_entries = n_entries;
    x.copts = copts;
    x.n_copts = n_copts;
    x.items = &items;
    atomic_init(&x.next, 0);
    pthread_mutex_init(&x.mu, NULL);
    x.blobs = g_tool.json ? json_array() : NULL;
    x.failures = g_tool.json ? json_array() : NULL;
    cachectl_progress_init(&x.prog, "seed", "files");

    jobs = run_jobs(&x, jobs);
    pthread_mutex_destroy(&x.mu);
    print_summary(&x, cache, skipped, jobs);
    items_free(&items);
    vyre_cache_close(cache);
    return x.failed ? TOOL_EXIT_ERROR : TOOL_EXIT_OK;
}
