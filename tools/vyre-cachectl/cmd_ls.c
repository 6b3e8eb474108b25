/*
 * cmd_ls.c - `vyre-cachectl ls`: one line per blob.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_util.h"
#include "cmds.h"
#include "listing.h"

enum { OPT_SORT = CACHECTL_OPT_FIRST_LOCAL, OPT_ARCH, OPT_KIND, OPT_OLDER, OPT_LIMIT };

const tool_opt cachectl_ls_opts[] = {
    {OPT_SORT, 0, "sort", "FIELD",
     "lru (default: least recently used first, the order\n"
     "prune removes in), size (largest first), age (oldest\n"
     "first), hits (most first), key",
     "lru size age hits key"},
    {OPT_ARCH, 0, "arch", "ARCH", "only blobs for this architecture (e.g. sm_90a)",
     "sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_100f sm_120"},
    {OPT_KIND, 0, "kind", "KIND", "only blobs of this kind: cubin, ptx or fatbin",
     "cubin ptx fatbin"},
    {OPT_OLDER, 0, "older-than", "AGE",
     "only blobs unused for longer than AGE (30d, 12h,\n"
     "90m): what 'prune --max-age AGE' would remove",
     NULL},
    {OPT_LIMIT, 0, "limit", "N", "at most N lines", NULL},
    {'v', 'v', "verbose", NULL, "full keys and the toolchain column", NULL},
    {'q', 'q', "quiet", NULL, "full keys only, one a line (for scripts)", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl ls [--sort FIELD] [--arch ARCH] [--kind KIND]\n"
                 "                        [--older-than AGE] [--limit N] [--width N | --wide]\n"
                 "                        [--json]\n\n"
                 "One line per blob: short key, kind, architecture, size on disk, age (since\n"
                 "created), last use, hits, the source file it was seeded from and the kernels\n"
                 "the module defines (stale blobs, of an older key format, say so). Reads the\n"
                 "cache, changes nothing.\n\n");
    cachectl_options_help(out, cachectl_ls_opts);
    fprintf(out,
            "\n"
            "exit status: 0 listed (even when nothing matched), 2 usage or operational error\n");
}

enum sort_by { SORT_LRU, SORT_SIZE, SORT_AGE, SORT_HITS, SORT_KEY };

typedef struct ls_ctx {
    const char *arch;
    uint32_t kind; /* 0: any */
    int64_t older_than_ns;
    int64_t now;
    vyre_cache_entry *v;
    size_t n, cap;
    int oom;
} ls_ctx;

static int64_t last_use(const vyre_cache_entry *e)
{
    return e->last_access_unix_ns ? e->last_access_unix_ns : e->created_unix_ns;
}

static int collect(const vyre_cache_entry *e, void *p)
{
    ls_ctx *x = p;
    if (x->arch && strcmp(e->arch, x->arch) != 0)
        return 0;
    if (x->kind && e->kind != x->kind)
        return 0;
    if (x->older_than_ns > 0 && x->now - last_use(e) <= x->older_than_ns)
        return 0;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        vyre_cache_entry *v = realloc(x->v, cap * sizeof *v);
        if (!v) {
            x->oom = 1;
            return 1;
        }
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = *e;
    return 0;
}

/* Ties keep the LRU order (stable through the key as the last resort). */
static int cmp_key(const vyre_cache_entry *a, const vyre_cache_entry *b)
{
    return memcmp(a->key.bytes, b->key.bytes, VYRE_KEY_BYTES);
}

#define CMP_DESC(f) ((a->f < b->f) - (a->f > b->f))

static int cmp_size(const void *pa, const void *pb)
{
    const vyre_cache_entry *a = pa, *b = pb;
    int d = CMP_DESC(disk_size);
    return d ? d : cmp_key(a, b);
}

static int cmp_age(const void *pa, const void *pb)
{
    const vyre_cache_entry *a = pa, *b = pb;
    int d = (a->created_unix_ns > b->created_unix_ns) - (a->created_unix_ns < b->created_unix_ns);
    return d ? d : cmp_key(a, b);
}

static int cmp_hits(const void *pa, const void *pb)
{
    const vyre_cache_entry *a = pa, *b = pb;
    int d = CMP_DESC(hits);
    return d ? d : cmp_key(a, b);
}

static int cmp_keys(const void *pa, const void *pb)
{
    return cmp_key(pa, pb);
}

static const char *const g_sorts[] = {"lru", "size", "age", "hits", "key"};

/* --sort FIELD into *sort; 0 or the exit code. */
static int parse_sort(const char *arg, enum sort_by *sort)
{
    size_t i = 0;
    while (i < 5 && strcmp(arg, g_sorts[i]) != 0)
        i++;
    if (i == 5) {
        const char *near = tool_nearest(arg, g_sorts, 5);
        char hint[128];
        snprintf(hint, sizeof hint, "%s%s%ssort by lru, size, age, hits or key",
                 near ? "did you mean '" : "", near ? near : "", near ? "'? " : "");
        return tool_usage_error("ls", hint, "unknown sort field '%s'", arg);
    }
    *sort = (enum sort_by)i;
    return 0;
}

/* One of ls's own options; 0 or the exit code. */
static int ls_option(int c, const char *arg, ls_ctx *x, enum sort_by *sort, uint64_t *limit)
{
    vyre_error err;
    vyre_error_clear(&err);
    switch (c) {
    case OPT_SORT:
        return parse_sort(arg, sort);
    case OPT_ARCH:
        if (!*arg || strlen(arg) >= VYRE_BLOB_ARCH_MAX)
            return tool_usage_error("ls", "give an architecture such as sm_90 or sm_90a",
                                    "'%s' is not an architecture", arg);
        x->arch = arg;
        return 0;
    case OPT_KIND:
        if (vyre_blob_kind_parse(arg, &x->kind))
            return tool_usage_error("ls", "kinds are cubin, ptx and fatbin", "unknown kind '%s'",
                                    arg);
        return 0;
    case OPT_OLDER:
        if (vyre_parse_duration(arg, &x->older_than_ns, &err))
            return cachectl_value_error("ls", "--older-than", &err);
        return 0;
    case OPT_LIMIT:
        if (cachectl_parse_count(arg, limit))
            return tool_usage_error("ls", "give a positive whole number",
                                    "--limit '%s' is not a count", arg);
        return 0;
    default:
        return TOOL_EXIT_ERROR;
    }
}

/* Parses argv: CACHECTL_HANDLED to go on, else the exit code. */
static int parse_ls_args(int argc, char **argv, ls_ctx *x, enum sort_by *sort, uint64_t *limit)
{
    cachectl_parser p;
    int c, code = TOOL_EXIT_ERROR;
    if (cachectl_parser_init(&p, "ls", cachectl_ls_opts, usage, ""))
        return TOOL_EXIT_ERROR;
    while ((c = cachectl_getopt(&p, argc, argv, &code)) != -1) {
        if (c == TOOL_OPT_STOP)
            return code;
        int rc;
        if ((rc = ls_option(c, optarg, x, sort, limit)))
            return rc;
    }
    if (optind < argc)
        return tool_usage_error("ls", NULL, "unexpected argument '%s'", argv[optind]);
    int rc = cachectl_check_globals("ls");
    return rc ? rc : CACHECTL_HANDLED;
}

/* The columns: the table's (priority as tool_table.h: 0 stays, a larger
 * number goes first when the terminal is narrow; at 80 columns the key,
 * size, last use, architecture, kind and hits stay, with the kernels cut;
 * the age, the source and the toolchain, -v, go before them), then what
 * only CSV and JSON carry. The keys are the members of docs/schema's ls. */
enum {
    C_KEY,
    C_KIND,
    C_ARCH,
    C_TC,
    C_SIZE,
    C_APPARENT,
    C_PAYLOAD,
    C_RAW,
    C_CREATED,
    C_AGE,
    C_HITS,
    C_COMPILE,
    C_ACCESS,
    C_USED,
    C_KEYV,
    C_STALE,
    C_SRC,
    C_NK,
    C_KERNELS,
    C_COMPLETE,
    LS_NCOLS
};

#define D TOOL_ROWS_DATA
static const tool_rows_col k_ls_cols[LS_NCOLS] = {
    [C_KEY] = {"key", "KEY", TOOL_ROWS_TEXT, 0, 0, 0, NULL, 0},
    [C_KIND] = {"kind", "KIND", TOOL_ROWS_TEXT, 3, 0, 0, NULL, 0},
    [C_ARCH] = {"arch", "ARCH", TOOL_ROWS_TEXT, 2, 0, 0, NULL, 0},
    [C_TC] = {"toolchain", "TOOLCHAIN", TOOL_ROWS_TEXT, 6, 0, 0, NULL, 0},
    [C_SIZE] = {"bytes", "SIZE", TOOL_ROWS_INT, 1, 0, 0, NULL, 0},
    [C_APPARENT] = {"apparent_bytes", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [C_PAYLOAD] = {"payload_bytes", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [C_RAW] = {"raw_bytes", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [C_CREATED] = {"created_unix_ns", NULL, TOOL_ROWS_DATE, D, 0, 0, NULL, 0},
    [C_AGE] = {"age_ns", "AGE", TOOL_ROWS_TIME, 5, 0, 0, NULL, 0},
    [C_HITS] = {"hits", "HITS", TOOL_ROWS_INT, 3, 0, 0, NULL, 0},
    [C_COMPILE] = {"compile_ns", NULL, TOOL_ROWS_TIME, D, 0, 0, NULL, 0},
    [C_ACCESS] = {"last_access_unix_ns", NULL, TOOL_ROWS_DATE, D, 0, 0, NULL, 0},
    [C_USED] = {"idle_ns", "LAST USE", TOOL_ROWS_TIME, 2, 0, 0, NULL, 0},
    [C_KEYV] = {"key_version", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [C_STALE] = {"stale", NULL, TOOL_ROWS_BOOL, D, 0, 0, NULL, 0},
    [C_SRC] = {"source", "SOURCE", TOOL_ROWS_TEXT, 5, 8, 0, NULL, 0},
    [C_NK] = {"n_kernels", NULL, TOOL_ROWS_INT, D, 0, 0, NULL, 0},
    [C_KERNELS] = {"kernels", "KERNELS", TOOL_ROWS_TEXT, 4, 10, 0, NULL, 0},
    [C_COMPLETE] = {"kernels_complete", NULL, TOOL_ROWS_BOOL, D, 0, 0, NULL, 0},
};
#undef D

static const size_t k_ls_order[] = {C_KEY,  C_KIND, C_ARCH, C_SIZE,    C_AGE,
                                    C_USED, C_HITS, C_SRC,  C_KERNELS, C_TC};

/* The kernels the index keeps ("a,b,..."; "..." marks a cut) as a JSON
 * array, and what the table shows for them. */
static void fill_kernels(tool_rows *rows, const vyre_cache_entry *e)
{
    json_t *ks = json_array();
    for (const char *p = e->kernels; *p;) {
        size_t l = strcspn(p, ",");
        if (!(l == 3 && strncmp(p, "...", 3) == 0))
            json_array_append_new(ks, json_stringn(p, l));
        p += l + (p[l] == ',');
    }
    tool_rows_int(rows, C_NK, (int64_t)e->n_kernels);
    tool_rows_int(rows, C_COMPLETE, json_array_size(ks) == (size_t)e->n_kernels);
    tool_rows_json_cell(rows, C_KERNELS, ks);
    char stale[48];
    if (VYRE_BLOB_KEY_STALE(e->key_version)) {
        snprintf(stale, sizeof stale, "(stale: key v%" PRIu32 ")", e->key_version);
        tool_rows_shown(rows, C_KERNELS, stale);
    } else {
        tool_rows_shown(rows, C_KERNELS, e->n_kernels ? e->kernels : "-");
    }
}

static void fill_entry(tool_rows *rows, const void *entries, size_t i, const void *ctx)
{
    const vyre_cache_entry *e = (const vyre_cache_entry *)entries + i;
    int64_t now = *(const int64_t *)ctx;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&e->key, hex);
    tool_rows_text(rows, C_KEY, hex);
    if (!g_cachectl.verbose) {
        hex[CACHECTL_SHORT_KEY] = '\0';
        tool_rows_shown(rows, C_KEY, hex);
    }
    tool_rows_text(rows, C_KIND, vyre_blob_kind_name(e->kind));
    if (!vyre_blob_kind_name(e->kind))
        tool_rows_shown(rows, C_KIND, "?");
    tool_rows_text(rows, C_ARCH, e->arch);
    tool_rows_text(rows, C_TC, e->toolchain);
    cachectl_rows_size(rows, C_SIZE, e->disk_size);
    tool_rows_int(rows, C_APPARENT, (int64_t)e->file_size);
    tool_rows_int(rows, C_PAYLOAD, (int64_t)e->stored_size);
    tool_rows_int(rows, C_RAW, (int64_t)e->raw_size);
    tool_rows_int(rows, C_CREATED, e->created_unix_ns);
    cachectl_rows_age(rows, C_AGE, now - e->created_unix_ns, now - e->created_unix_ns);
    tool_rows_int(rows, C_HITS, (int64_t)e->hits);
    tool_rows_int(rows, C_COMPILE, (int64_t)e->compile_ns);
    if (e->last_access_unix_ns)
        tool_rows_int(rows, C_ACCESS, e->last_access_unix_ns);
    cachectl_rows_age(rows, C_USED, now - last_use(e), now - e->last_access_unix_ns);
    if (!e->last_access_unix_ns)
        tool_rows_shown(rows, C_USED, "never");
    tool_rows_int(rows, C_KEYV, (int64_t)e->key_version);
    tool_rows_int(rows, C_STALE, VYRE_BLOB_KEY_STALE(e->key_version));
    tool_rows_text(rows, C_SRC, e->source[0] ? e->source : NULL);
    fill_kernels(rows, e);
}

static const cachectl_listing k_ls = {
    .sub = "ls",
    .cols = k_ls_cols,
    .ncols = LS_NCOLS,
    .order = k_ls_order,
    .norder = sizeof k_ls_order / sizeof *k_ls_order,
    .verbose_cols = 1u << C_TC,
    .quiet_col = C_KEY,
    .array_key = "entries",
    .fill = fill_entry,
};

/* The first n entries of x, as the format asked for. */
static int print_entries(const vyre_cache *cache, const ls_ctx *x, size_t n, enum sort_by sort)
{
    json_t *o = cachectl_json_root(cache, 3); /* 3: bytes on disk, apparent_bytes */
    json_object_set_new(o, "sort", json_string(g_sorts[sort]));
    json_object_set_new(o, "matched", json_integer((json_int_t)x->n));
    return cachectl_list(&k_ls, x->v, n, &x->now, o);
}

int cmd_ls(int argc, char **argv)
{
    ls_ctx x;
    memset(&x, 0, sizeof x);
    enum sort_by sort = SORT_LRU;
    uint64_t limit = UINT64_MAX;
    int rc = parse_ls_args(argc, argv, &x, &sort, &limit);
    if (rc != CACHECTL_HANDLED)
        return rc;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(CACHECTL_READ_OR_EMPTY, &cache)))
        return rc;
    x.now = tool_unix_ns();
    int frc = vyre_cache_foreach(cache, collect, &x, &err);
    if (x.oom) {
        free(x.v);
        vyre_cache_close(cache);
        fprintf(stderr, "%s: error: out of memory listing the cache\n", tool_prog());
        return TOOL_EXIT_ERROR;
    }
    if (frc) {
        free(x.v);
        vyre_cache_close(cache);
        return cachectl_fail(&err);
    }
    static int (*const cmps[])(const void *, const void *) = {NULL, cmp_size, cmp_age, cmp_hits,
                                                              cmp_keys};
    if (cmps[sort] && x.n > 1)
        qsort(x.v, x.n, sizeof *x.v, cmps[sort]);
    rc = print_entries(cache, &x, x.n < limit ? x.n : (size_t)limit, sort);
    free(x.v);
    vyre_cache_close(cache);
    return rc;
}
