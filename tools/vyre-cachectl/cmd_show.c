/*
 * cmd_show.c - `vyre-cachectl show KEY|PREFIX`: the full header of one blob.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "cmds.h"
#include "tool_sanitize.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl show [--json] KEY|PREFIX\n\n"
                 "Print the full header of one blob (format and key versions, key, kind,\n"
                 "architecture, toolchain, sizes, creation time, compile time, payload\n"
                 "checksum), its file, its usage from the index, and whether it validates.\n"
                 "PREFIX is at least 4 hex digits; an ambiguous prefix is refused and the\n"
                 "matching keys are listed. Reads the cache, changes nothing.\n\n");
    cachectl_options_help(out, cachectl_no_opts);
    fprintf(out, "\n"
                 "exit status: 0 shown and valid, 1 shown but the blob is damaged or missing\n"
                 "             (run 'vyre-cachectl verify'), 2 usage or operational error\n"
                 "             (no such key, ambiguous prefix, ...)\n");
}

static void format_time(int64_t unix_ns, char *buf, size_t size)
{
    time_t t = (time_t)(unix_ns / 1000000000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, size, "?");
}

static void hex_bytes(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* What `show` says about a blob: from its header when that decoded, else
 * from its index row. */
typedef struct shown {
    const vyre_blob_header *h;
    const vyre_cache_entry *e;
    int have_header;
    const char *path, *status, *kind, *arch, *toolchain, *source;
    char hex[VYRE_KEY_HEX_LEN + 1], sum[33], created[32], used[32];
    uint32_t kind_id, key_version, n_kernels;
    uint64_t raw, stored, compile_ns, file_bytes;
    int64_t created_ns;
    json_t *kj; /* the kernel names */
} shown;

static void print_json(vyre_cache *cache, const shown *v)
{
    const vyre_blob_header *h = v->h;
    json_t *o = cachectl_json_root(cache, 1);
    json_object_set_new(
        o, "blob",
        json_pack("{s:s, s:s, s:s, s:s?, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "key",
                  v->hex, "path", v->path, "status", v->status, "kind", v->kind, "kind_id",
                  (json_int_t)v->kind_id, "arch", v->arch, "toolchain", v->toolchain, "raw_bytes",
                  (json_int_t)v->raw, "payload_bytes", (json_int_t)v->stored, "file_bytes",
                  (json_int_t)v->file_bytes, "created_unix_ns", (json_int_t)v->created_ns,
                  "compile_ns", (json_int_t)v->compile_ns, "hits", (json_int_t)v->e->hits));
    json_t *b = json_object_get(o, "blob");
    json_object_set_new(b, "format_version",
                        v->have_header ? json_integer(h->format_version) : json_null());
    json_object_set_new(b, "key_version",
                        v->have_header ? json_integer(h->key_version) : json_null());
    json_object_set_new(b, "flags", v->have_header ? json_integer(h->flags) : json_null());
    json_object_set_new(b, "stale", json_boolean(VYRE_BLOB_KEY_STALE(v->key_version)));
    json_object_set_new(b, "source", v->source[0] ? json_string(v->source) : json_null());
    json_object_set_new(b, "n_kernels", json_integer((json_int_t)v->n_kernels));
    json_object_set_new(b, "kernels", json_incref(v->kj));
    json_object_set_new(b, "payload_xxh128", v->have_header ? json_string(v->sum) : json_null());
    json_object_set_new(b, "last_access_unix_ns",
                        v->e->last_access_unix_ns ? json_integer(v->e->last_access_unix_ns)
                                                  : json_null());
    tool_json_print(stdout, o);
}

/* The header's strings (arch, toolchain, source, kernel names) are whatever
 * the blob file holds: shown through tool_clean. */
static void print_text(const shown *v)
{
    const vyre_blob_header *h = v->h;
    char size[32], cl[TOOL_CLEAN_SIZE(VYRE_BLOB_SOURCE_MAX + 256)];
    printf("%-18s %s\n", "Key:", v->hex);
    printf("%-18s %s\n", "File:", v->path);
    printf("%-18s %s\n", "Status:", v->status);
    if (v->have_header) {
        printf("%-18s %" PRIu32 "\n", "Format version:", h->format_version);
        printf("%-18s %" PRIu32 "\n", "Key version:", h->key_version);
    }
    printf("%-18s %s (%" PRIu32 ")\n", "Kind:", v->kind ? v->kind : "unknown", v->kind_id);
    printf("%-18s %s\n", "Architecture:", tool_clean(v->arch, cl, sizeof cl));
    printf("%-18s %s\n", "Toolchain:", tool_clean(v->toolchain, cl, sizeof cl));
    if (v->have_header)
        printf("%-18s 0x%08" PRIx32 "\n", "Flags:", h->flags);
    vyre_format_size(v->raw, size, sizeof size);
    printf("%-18s %s (%" PRIu64 " bytes)\n", "Raw size:", size, v->raw);
    vyre_format_size(v->stored, size, sizeof size);
    printf("%-18s %s (%" PRIu64 " bytes)\n", "Stored size:", size, v->stored);
    printf("%-18s %s\n", "Created:", v->created);
    printf("%-18s %.3f ms\n", "Compile time:", (double)v->compile_ns / 1e6);
    if (v->have_header)
        printf("%-18s %s\n", "Payload XXH3-128:", v->sum);
    printf("%-18s %s\n", "Source:", tool_clean(v->source[0] ? v->source : "-", cl, sizeof cl));
    size_t nk = json_array_size(v->kj);
    if (VYRE_BLOB_KEY_STALE(v->key_version)) {
        printf("%-18s stale (key version %" PRIu32 ", never hit: 'prune --stale' removes it)\n",
               "Kernels:", v->key_version);
    } else if (nk == 0) {
        printf("%-18s %s\n", "Kernels:", "-");
    } else {
        printf("%-18s %" PRIu32 ":", "Kernels:", v->n_kernels);
        for (size_t i = 0; i < nk; i++) {
            fputs(i ? ", " : " ", stdout);
            tool_clean_fputs(json_string_value(json_array_get(v->kj, i)), stdout);
        }
        printf("%s\n", nk < v->n_kernels ? ", ..." : "");
    }
    printf("%-18s %" PRIu64 "\n", "Hits:", v->e->hits);
    printf("%-18s %s\n", "Last used:", v->used);
}

/* What show prints of entry e and header h (as read: crc, file_size, path,
 * why), into v; *knames: the blob's own kernel table (free it), or NULL. */
static void describe(vyre_cache *cache, const vyre_cache_entry *e, const vyre_blob_header *h,
                     int crc, uint64_t file_size, const char *path, vyre_blob_reject why, shown *v,
                     char **knames)
{
    /* When the header decoded, show it even if the payload is damaged;
     * otherwise fall back to what the index knows. */
    int have_header = crc == VYRE_OK || h->format_version != 0;
    memset(v, 0, sizeof *v);
    v->h = h;
    v->e = e;
    v->path = path;
    v->have_header = have_header;
    v->status = crc == VYRE_OK ? "ok" : crc == VYRE_ENOENT ? "missing" : vyre_blob_reject_name(why);
    vyre_key_to_hex(&e->key, v->hex);
    hex_bytes(h->payload_xxh128, 16, v->sum);
    v->created_ns = have_header ? h->created_unix_ns : e->created_unix_ns;
    v->kind_id = have_header ? h->kind : e->kind;
    v->arch = have_header ? h->arch : e->arch;
    v->toolchain = have_header ? h->toolchain : e->toolchain;
    v->raw = have_header ? h->raw_size : e->raw_size;
    v->stored = have_header ? h->stored_size : e->stored_size;
    v->compile_ns = have_header ? h->compile_ns : e->compile_ns;
    v->file_bytes = crc == VYRE_OK ? file_size : e->file_size;
    v->kind = vyre_blob_kind_name(v->kind_id);
    format_time(v->created_ns, v->created, sizeof v->created);
    if (e->last_access_unix_ns)
        format_time(e->last_access_unix_ns, v->used, sizeof v->used);
    else
        snprintf(v->used, sizeof v->used, "never");
    v->source = have_header ? h->source : e->source;
    v->key_version = have_header ? h->key_version : e->key_version;
    v->n_kernels = have_header ? h->n_kernels : e->n_kernels;
    /* The module's kernels: the blob's own table (complete), else what the
     * index kept. */
    *knames = NULL;
    if (crc == VYRE_OK && h->kernels_size)
        vyre_cache_blob_kernels(cache, h, knames, NULL);
    v->kj = json_array();
    if (*knames) {
        for (size_t o = 0; o < h->kernels_size; o += strlen(*knames + o) + 1)
            json_array_append_new(v->kj, json_string(*knames + o));
        return;
    }
    for (const char *p = e->kernels; *p;) {
        size_t l = strcspn(p, ",");
        if (!(l == 3 && strncmp(p, "...", 3) == 0))
            json_array_append_new(v->kj, json_stringn(p, l));
        p += l + (p[l] == ',');
    }
}

int cmd_show(int argc, char **argv)
{
    int rc = cachectl_global_options("show", argc, argv, usage);
    if (rc != CACHECTL_HANDLED)
        return rc;
    if (optind >= argc)
        return tool_usage_error("show", "list the keys with 'vyre-cachectl ls'",
                                "show needs a key or key prefix");
    if (argc - optind > 1)
        return tool_usage_error("show", "show one blob at a time", "unexpected argument '%s'",
                                argv[optind + 1]);
    const char *prefix = argv[optind];
    rc = cachectl_check_globals("show");
    if (rc)
        return rc;

    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(CACHECTL_READ, &cache)))
        return rc;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_cache_entry e;
    if (vyre_cache_find_prefix(cache, prefix, &e, &err)) {
        vyre_cache_close(cache);
        return cachectl_fail(&err);
    }

    char path[VYRE_CACHE_PATH_MAX];
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    uint64_t file_size = 0;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    vyre_error cerr;
    vyre_error_clear(&cerr);
    /* From the cache's root descriptor: a symlinked shard or blob is never
     * followed, even to read. */
    int crc = vyre_cache_check_blob(cache, &e.key, &h, &file_size, &why, path, sizeof path, &cerr);
    shown v;
    char *knames = NULL;
    describe(cache, &e, &h, crc, file_size, path, why, &v, &knames);
    if (g_tool.json)
        print_json(cache, &v);
    else if (!g_cachectl.quiet)
        print_text(&v);
    json_decref(v.kj);
    free(knames);
    vyre_cache_close(cache);
    if (crc != VYRE_OK) {
        if (!g_cachectl.quiet) {
            char msg[TOOL_CLEAN_SIZE(sizeof cerr.message)];
            fprintf(
                stderr,
                /* bounded: a short key, as git shows commits */
                "%s: error: blob %.12s is %s: %s\nhint: run 'vyre-cachectl verify --repair'\n",
                tool_prog(), v.hex, crc == VYRE_ENOENT ? "missing" : "damaged",
                tool_clean(cerr.message[0] ? cerr.message : vyre_strerror(crc), msg, sizeof msg));
        }
        return TOOL_EXIT_PROBLEMS;
    }
    return TOOL_EXIT_OK;
}
