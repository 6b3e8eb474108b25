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
#include "tool_sanitize.h"

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

static json_t *entry_json(const vyre_cache_entry *e, int64_t now)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&e->key, hex);
    const char *kind = vyre_blob_kind_name(e->kind);
    json_t *o = json_pack(
        "{s:s, s:s?, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "key", hex, "kind", kind,
        "arch", e->arch, "toolchain", e->toolchain, "bytes", (json_int_t)e->disk_size,
        "apparent_bytes", (json_int_t)e->file_size, "payload_bytes", (json_int_t)e->stored_size,
        "raw_bytes", (json_int_t)e->raw_size, "created_unix_ns", (json_int_t)e->created_unix_ns,
        "age_ns", (json_int_t)(now - e->created_unix_ns), "hits", (json_int_t)e->hits, "compile_ns",
        (json_int_t)e->compile_ns);
    json_object_set_new(o, "last_access_unix_ns",
                        e->last_access_unix_ns ? json_integer(e->last_access_unix_ns)
                                               : json_null());
    json_object_set_new(o, "idle_ns", json_integer(now - last_use(e)));
    json_object_set_new(o, "key_version", json_integer((json_int_t)e->key_version));
    json_object_set_new(o, "stale", json_boolean(VYRE_BLOB_KEY_STALE(e->key_version)));
    json_object_set_new(o, "source", e->source[0] ? json_string(e->source) : json_null());
    json_object_set_new(o, "n_kernels", json_integer((json_int_t)e->n_kernels));
    json_t *ks = json_array();
    for (const char *p = e->kernels; *p;) {
        size_t l = strcspn(p, ",");
        if (!(l == 3 && strncmp(p, "...", 3) == 0))
            json_array_append_new(ks, json_stringn(p, l));
        p += l + (p[l] == ',');
    }
    json_object_set_new(o, "kernels", ks);
    json_object_set_new(o, "kernels_complete",
                        json_boolean(json_array_size(ks) == (size_t)e->n_kernels));
    return o;
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

/* The table's columns. Priority (tool_table.h): 0 stays, a larger number
 * goes first when the terminal is narrow. At 80 columns the key, size, last
 * use, architecture, kind and hits stay, with the kernels cut; the age
 * (since created), the source and the toolchain (-v) go before them. */
enum { C_KEY, C_KIND, C_ARCH, C_SIZE, C_AGE, C_USED, C_HITS, C_SRC, C_KERNELS, C_TC, LS_NCOLS };

static const tool_table_col k_ls_cols[LS_NCOLS] = {
    [C_KEY] = {"KEY", 0, 0, 0},          [C_KIND] = {"KIND", 3, 0, 0},
    [C_ARCH] = {"ARCH", 2, 0, 0},        [C_SIZE] = {"SIZE", 1, 0, 1},
    [C_AGE] = {"AGE", 5, 0, 1},          [C_USED] = {"LAST USE", 2, 0, 1},
    [C_HITS] = {"HITS", 3, 0, 1},        [C_SRC] = {"SOURCE", 5, 8, 0},
    [C_KERNELS] = {"KERNELS", 4, 10, 0}, [C_TC] = {"TOOLCHAIN", 6, 0, 0},
};

/* The text of one row's cells (header strings are whatever the blob holds:
 * through tool_clean). */
typedef struct ls_row {
    char key[VYRE_KEY_HEX_LEN + 1], size[32], age[16], used[16], hits[24];
    char arch[TOOL_CLEAN_SIZE(VYRE_BLOB_ARCH_MAX)], src[TOOL_CLEAN_SIZE(VYRE_BLOB_SOURCE_MAX)];
    char tc[TOOL_CLEAN_SIZE(VYRE_BLOB_TOOLCHAIN_MAX)];
    char kernels[TOOL_CLEAN_SIZE(VYRE_CACHE_ENTRY_KERNELS) + 32];
} ls_row;

/* Fills r from e and points cells[LS_NCOLS] at it; keyw: the key's width
 * (12, all of it with -v). */
static void fill_row(const vyre_cache_entry *e, int64_t now, int keyw, ls_row *r,
                     const char **cells)
{
    vyre_key_to_hex(&e->key, r->key);
    r->key[keyw] = '\0';
    vyre_format_size(e->disk_size, r->size, sizeof r->size);
    vyre_format_age(now - e->created_unix_ns, r->age, sizeof r->age);
    if (e->last_access_unix_ns)
        vyre_format_age(now - e->last_access_unix_ns, r->used, sizeof r->used);
    else
        snprintf(r->used, sizeof r->used, "never");
    snprintf(r->hits, sizeof r->hits, "%" PRIu64, e->hits);
    if (VYRE_BLOB_KEY_STALE(e->key_version))
        snprintf(r->kernels, sizeof r->kernels, "(stale: key v%" PRIu32 ")", e->key_version);
    else if (e->n_kernels == 0)
        snprintf(r->kernels, sizeof r->kernels, "-");
    else
        tool_clean(e->kernels, r->kernels, sizeof r->kernels);
    const char *kind = vyre_blob_kind_name(e->kind);
    cells[C_KEY] = r->key;
    cells[C_KIND] = kind ? kind : "?";
    cells[C_ARCH] = tool_clean(e->arch, r->arch, sizeof r->arch);
    cells[C_SIZE] = r->size;
    cells[C_AGE] = r->age;
    cells[C_USED] = r->used;
    cells[C_HITS] = r->hits;
    cells[C_SRC] = tool_clean(e->source[0] ? e->source : "-", r->src, sizeof r->src);
    cells[C_KERNELS] = r->kernels;
    cells[C_TC] = g_cachectl.verbose ? tool_clean(e->toolchain, r->tc, sizeof r->tc) : NULL;
}

/* The first n entries of x as the table, fitted to the terminal. */
static void print_table(const ls_ctx *x, size_t n)
{
    ls_row *rows = malloc((n ? n : 1) * sizeof *rows);
    const char **cells = calloc((n ? n : 1) * LS_NCOLS, sizeof *cells);
    if (!rows || !cells) {
        free(rows);
        free(cells);
        fprintf(stderr, "%s: error: out of memory listing the cache\n", tool_prog());
        return;
    }
    int keyw = g_cachectl.verbose ? VYRE_KEY_HEX_LEN : CACHECTL_SHORT_KEY;
    for (size_t i = 0; i < n; i++)
        fill_row(&x->v[i], x->now, keyw, &rows[i], &cells[i * LS_NCOLS]);
    /* Without -v the toolchain column has no cells and no header. */
    tool_table_col cols[LS_NCOLS];
    memcpy(cols, k_ls_cols, sizeof cols);
    if (!g_cachectl.verbose)
        cols[C_TC].name = "";
    cachectl_table(cols, LS_NCOLS, cells, n);
    free(rows);
    free(cells);
}

/* The first n entries of x: JSON, keys only (-q) or the table. */
static void print_entries(const vyre_cache *cache, const ls_ctx *x, size_t n, enum sort_by sort)
{
    if (g_tool.json) {
        json_t *o = cachectl_json_root(cache, 3); /* 3: bytes on disk, apparent_bytes */
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, entry_json(&x->v[i], x->now));
        json_object_set_new(o, "sort", json_string(g_sorts[sort]));
        json_object_set_new(o, "matched", json_integer((json_int_t)x->n));
        json_object_set_new(o, "entries", arr);
        tool_json_print(stdout, o);
        return;
    }
    if (g_cachectl.quiet) {
        for (size_t i = 0; i < n; i++) {
            char hex[VYRE_KEY_HEX_LEN + 1];
            vyre_key_to_hex(&x->v[i].key, hex);
            printf("%s\n", hex);
        }
        return;
    }
    print_table(x, n);
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
    print_entries(cache, &x, x.n < limit ? x.n : (size_t)limit, sort);
    free(x.v);
    vyre_cache_close(cache);
    return TOOL_EXIT_OK;
}
