/*
 * cmd_show.c - `vyre-cachectl show KEY|PREFIX`: the full header of one blob.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cmds.h"
#include "sanitize.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vyre-cachectl show [--json] KEY|PREFIX\n\n"
            "Print the full header of one blob (format and key versions, key, kind,\n"
            "architecture, toolchain, sizes, creation time, compile time, payload\n"
            "checksum), its file, its usage from the index, and whether it validates.\n"
            "PREFIX is at least 4 hex digits; an ambiguous prefix is refused and the\n"
            "matching keys are listed. Reads the cache, changes nothing.\n\n"
            "%s\n"
            "exit status: 0 shown and valid, 1 shown but the blob is damaged or missing\n"
            "             (run 'vyre-cachectl verify'), 2 usage or operational error\n"
            "             (no such key, ambiguous prefix, ...)\n",
            CACHECTL_GLOBAL_HELP);
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

int cmd_show(int argc, char **argv)
{
    int rc = cachectl_global_options("show", argc, argv, usage);
    if (rc != CACHECTL_HANDLED)
        return rc;
    if (optind >= argc)
        return vyre_cli_usage_error("show", "list the keys with 'vyre-cachectl ls'",
                                    "show needs a key or key prefix");
    if (argc - optind > 1)
        return vyre_cli_usage_error("show", "show one blob at a time", "unexpected argument '%s'",
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
    /* When the header decoded, show it even if the payload is damaged;
     * otherwise fall back to what the index knows. */
    int have_header = crc == VYRE_OK || h.format_version != 0;
    const char *status = crc == VYRE_OK       ? "ok"
                         : crc == VYRE_ENOENT ? "missing"
                                              : vyre_blob_reject_name(why);
    char hex[VYRE_KEY_HEX_LEN + 1], sum[33], created[32], used[32];
    vyre_key_to_hex(&e.key, hex);
    hex_bytes(h.payload_xxh128, 16, sum);
    int64_t created_ns = have_header ? h.created_unix_ns : e.created_unix_ns;
    uint32_t kind_id = have_header ? h.kind : e.kind;
    const char *arch = have_header ? h.arch : e.arch;
    const char *toolchain = have_header ? h.toolchain : e.toolchain;
    uint64_t raw = have_header ? h.raw_size : e.raw_size;
    uint64_t stored = have_header ? h.stored_size : e.stored_size;
    uint64_t compile_ns = have_header ? h.compile_ns : e.compile_ns;
    const char *kind = vyre_blob_kind_name(kind_id);
    format_time(created_ns, created, sizeof created);
    if (e.last_access_unix_ns)
        format_time(e.last_access_unix_ns, used, sizeof used);
    else
        snprintf(used, sizeof used, "never");

    /* The module's kernels: the blob's own table (complete), else what the
     * index kept. */
    char *knames = NULL;
    if (crc == VYRE_OK && h.kernels_size)
        vyre_cache_blob_kernels(cache, &h, &knames, NULL);
    const char *source = have_header ? h.source : e.source;
    uint32_t key_version = have_header ? h.key_version : e.key_version;
    uint32_t n_kernels = have_header ? h.n_kernels : e.n_kernels;
    json_t *kj = json_array();
    if (knames) {
        for (size_t o = 0; o < h.kernels_size; o += strlen(knames + o) + 1)
            json_array_append_new(kj, json_string(knames + o));
    } else {
        for (const char *p = e.kernels; *p;) {
            size_t l = strcspn(p, ",");
            if (!(l == 3 && strncmp(p, "...", 3) == 0))
                json_array_append_new(kj, json_stringn(p, l));
            p += l + (p[l] == ',');
        }
    }

    if (g_cachectl.json) {
        json_t *o = cachectl_json_root(cache, 1);
        json_object_set_new(
            o, "blob",
            json_pack("{s:s, s:s, s:s, s:s?, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "key",
                      hex, "path", path, "status", status, "kind", kind, "kind_id",
                      (json_int_t)kind_id, "arch", arch, "toolchain", toolchain, "raw_bytes",
                      (json_int_t)raw, "payload_bytes", (json_int_t)stored, "file_bytes",
                      (json_int_t)(crc == VYRE_OK ? file_size : e.file_size), "created_unix_ns",
                      (json_int_t)created_ns, "compile_ns", (json_int_t)compile_ns, "hits",
                      (json_int_t)e.hits));
        json_t *b = json_object_get(o, "blob");
        json_object_set_new(b, "format_version",
                            have_header ? json_integer(h.format_version) : json_null());
        json_object_set_new(b, "key_version",
                            have_header ? json_integer(h.key_version) : json_null());
        json_object_set_new(b, "flags", have_header ? json_integer(h.flags) : json_null());
        json_object_set_new(b, "stale", json_boolean(VYRE_BLOB_KEY_STALE(key_version)));
        json_object_set_new(b, "source", source[0] ? json_string(source) : json_null());
        json_object_set_new(b, "n_kernels", json_integer((json_int_t)n_kernels));
        json_object_set_new(b, "kernels", json_incref(kj));
        json_object_set_new(b, "payload_xxh128", have_header ? json_string(sum) : json_null());
        json_object_set_new(b, "last_access_unix_ns",
                            e.last_access_unix_ns ? json_integer(e.last_access_unix_ns)
                                                  : json_null());
        cachectl_json_print(o);
    } else if (!g_cachectl.quiet) {
        /* The header's strings (arch, toolchain, source, kernel names) are
         * whatever the blob file holds: shown through tool_clean. */
        char size[32], cl[TOOL_CLEAN_SIZE(VYRE_BLOB_SOURCE_MAX + 256)];
        printf("%-18s %s\n", "Key:", hex);
        printf("%-18s %s\n", "File:", path);
        printf("%-18s %s\n", "Status:", status);
        if (have_header) {
            printf("%-18s %" PRIu32 "\n", "Format version:", h.format_version);
            printf("%-18s %" PRIu32 "\n", "Key version:", h.key_version);
        }
        printf("%-18s %s (%" PRIu32 ")\n", "Kind:", kind ? kind : "unknown", kind_id);
        printf("%-18s %s\n", "Architecture:", tool_clean(arch, cl, sizeof cl));
        printf("%-18s %s\n", "Toolchain:", tool_clean(toolchain, cl, sizeof cl));
        if (have_header)
            printf("%-18s 0x%08" PRIx32 "\n", "Flags:", h.flags);
        vyre_format_size(raw, size, sizeof size);
        printf("%-18s %s (%" PRIu64 " bytes)\n", "Raw size:", size, raw);
        vyre_format_size(stored, size, sizeof size);
        printf("%-18s %s (%" PRIu64 " bytes)\n", "Stored size:", size, stored);
        printf("%-18s %s\n", "Created:", created);
        printf("%-18s %.3f ms\n", "Compile time:", (double)compile_ns / 1e6);
        if (have_header)
            printf("%-18s %s\n", "Payload XXH3-128:", sum);
        printf("%-18s %s\n", "Source:", tool_clean(source[0] ? source : "-", cl, sizeof cl));
        if (VYRE_BLOB_KEY_STALE(key_version)) {
            printf("%-18s stale (key version %" PRIu32 ", never hit: 'prune --stale' removes it)\n",
                   "Kernels:", key_version);
        } else if (json_array_size(kj) == 0) {
            printf("%-18s %s\n", "Kernels:", "-");
        } else {
            printf("%-18s %" PRIu32 ":", "Kernels:", n_kernels);
            for (size_t i = 0; i < json_array_size(kj); i++) {
                fputs(i ? ", " : " ", stdout);
                tool_clean_fputs(json_string_value(json_array_get(kj, i)), stdout);
            }
            printf("%s\n", json_array_size(kj) < n_kernels ? ", ..." : "");
        }
        printf("%-18s %" PRIu64 "\n", "Hits:", e.hits);
        printf("%-18s %s\n", "Last used:", used);
    }
    json_decref(kj);
    free(knames);
    vyre_cache_close(cache);
    if (crc != VYRE_OK) {
        if (!g_cachectl.quiet) {
            char msg[TOOL_CLEAN_SIZE(sizeof cerr.message)];
            fprintf(
                stderr,
                "%s: error: blob %.12s is %s: %s\nhint: run 'vyre-cachectl verify --repair'\n",
                vyre_cli_prog(), hex, crc == VYRE_ENOENT ? "missing" : "damaged",
                tool_clean(cerr.message[0] ? cerr.message : vyre_strerror(crc), msg, sizeof msg));
        }
        return VYRE_EXIT_PROBLEMS;
    }
    return VYRE_EXIT_OK;
}
