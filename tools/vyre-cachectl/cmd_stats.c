/*
 * cmd_stats.c - `vyre-cachectl stats`: the cache at a glance (ccache -s).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_util.h"
#include "cmds.h"
#include "tool_sanitize.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl stats [--json]\n\n"
                 "Entries and bytes on disk, by kind, by architecture and by age (since\n"
                 "creation); hits and the compile time they saved; quarantined files and tmp/\n"
                 "debris; the size limit and how full the cache is (max_size), and the other\n"
                 "limits in force; for each remote store (remote_storage), the hits, misses,\n"
                 "errors, rejected objects and bytes every process using this cache recorded.\n"
                 "Reads the cache, changes nothing; a cache that does not exist yet shows as\n"
                 "empty (nothing is created).\n\n");
    cachectl_options_help(out, cachectl_no_opts);
    fprintf(out, "\n"
                 "exit status: 0 printed, 2 usage or operational error (missing or unsafe cache\n"
                 "             directory, corrupt index)\n");
}

/* Upper bounds of the age buckets in seconds (the last is open). */
static const int64_t g_age_limits[VYRE_CACHE_AGE_BUCKETS - 1] = {3600, 86400, 7 * 86400,
                                                                 30 * 86400};

static json_t *bucket_json(const char *key, const vyre_cache_bucket *b)
{
    return json_pack("{s:s, s:I, s:I}", key, b->name, "entries", (json_int_t)b->entries, "bytes",
                     (json_int_t)b->bytes);
}

/* Lifetime counters of each remote in remote_storage, as recorded in
 * this cache's index by the processes that used it. */
typedef struct remote_row {
    vyre_remote_info info;
    vyre_remote_stats st;
} remote_row;

static json_t *remotes_json(const remote_row *rows, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const vyre_remote_stats *s = &rows[i].st;
        json_array_append_new(
            arr, json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "url",
                           rows[i].info.url, "read_only", rows[i].info.read_only, "hits",
                           (json_int_t)s->hits, "misses", (json_int_t)s->misses, "errors",
                           (json_int_t)s->errors, "rejected", (json_int_t)s->rejected, "skipped",
                           (json_int_t)s->skipped, "puts", (json_int_t)s->puts, "put_errors",
                           (json_int_t)s->put_errors, "read_bytes", (json_int_t)s->bytes_read,
                           "written_bytes", (json_int_t)s->bytes_written));
    }
    return arr;
}

static void print_json(const vyre_cache *c, const vyre_cache_stats *st, const remote_row *rows,
                       size_t n_rows)
{
    const vyre_config *cf = vyre_cache_config(c);
    json_t *o = cachectl_json_root(c, 4); /* 4: bytes on disk (st_blocks), apparent_bytes */
    json_t *kinds = json_array(), *archs = json_array(), *ages = json_array();
    for (int i = 1; i < 4; i++)
        json_array_append_new(kinds, bucket_json("kind", &st->by_kind[i]));
    if (st->by_kind[0].entries)
        json_array_append_new(kinds, bucket_json("kind", &st->by_kind[0]));
    for (size_t i = 0; i < st->n_arch; i++)
        json_array_append_new(archs, bucket_json("arch", &st->by_arch[i]));
    for (int i = 0; i < VYRE_CACHE_AGE_BUCKETS; i++) {
        json_t *b = bucket_json("bucket", &st->by_age[i]);
        json_object_set_new(b, "max_age_ns",
                            i < VYRE_CACHE_AGE_BUCKETS - 1
                                ? json_integer((json_int_t)(g_age_limits[i] * 1000000000))
                                : json_null());
        json_array_append_new(ages, b);
    }
    json_object_set_new(o, "entries", json_integer((json_int_t)st->entries));
    json_object_set_new(o, "bytes", json_integer((json_int_t)st->bytes));
    json_object_set_new(o, "apparent_bytes", json_integer((json_int_t)st->apparent_bytes));
    json_object_set_new(o, "by_kind", kinds);
    json_object_set_new(o, "by_arch", archs);
    json_object_set_new(o, "by_age", ages);
    json_object_set_new(o, "hits", json_integer((json_int_t)st->hits));
    json_object_set_new(o, "misses", json_integer((json_int_t)st->misses));
    json_object_set_new(o, "hit_ratio",
                        st->hits + st->misses
                            ? json_real((double)st->hits / (double)(st->hits + st->misses))
                            : json_null());
    json_object_set_new(o, "compile_time_saved_ns", json_integer((json_int_t)st->compile_ns_saved));
    json_object_set_new(o, "quarantined",
                        json_pack("{s:I, s:I}", "files", (json_int_t)st->quarantined, "bytes",
                                  (json_int_t)st->quarantine_bytes));
    json_object_set_new(o, "stale",
                        json_pack("{s:I, s:I, s:i}", "entries", (json_int_t)st->stale, "bytes",
                                  (json_int_t)st->stale_bytes, "key_version", VYRE_KEY_VERSION));
    json_object_set_new(o, "tmp",
                        json_pack("{s:I, s:I, s:I}", "files", (json_int_t)st->tmp_files, "debris",
                                  (json_int_t)st->debris, "debris_age_ns",
                                  (json_int_t)VYRE_CACHE_DEBRIS_AGE_NS));
    json_object_set_new(o, "max_size_bytes",
                        st->max_size ? json_integer((json_int_t)st->max_size) : json_null());
    json_object_set_new(o, "fill_ratio",
                        st->max_size ? json_real((double)st->bytes / (double)st->max_size)
                                     : json_null());
    json_object_set_new(o, "stats_zeroed_unix_ns",
                        st->stats_zeroed_unix_ns ? json_integer(st->stats_zeroed_unix_ns)
                                                 : json_null());
    json_t *limits =
        json_pack("{s:I, s:I}", "max_blob_payload_bytes", (json_int_t)VYRE_BLOB_MAX_PAYLOAD,
                  "debris_age_ns", (json_int_t)VYRE_CACHE_DEBRIS_AGE_NS);
    json_object_set_new(limits, "max_cache_bytes",
                        st->max_size ? json_integer((json_int_t)st->max_size) : json_null());
    json_object_set_new(limits, "max_age_ns",
                        vyre_config_get_int(cf, VYRE_CONF_MAX_AGE)
                            ? json_integer(vyre_config_get_int(cf, VYRE_CONF_MAX_AGE))
                            : json_null());
    json_object_set_new(limits, "quarantine_max_age_ns",
                        vyre_config_get_int(cf, VYRE_CONF_QUARANTINE_MAX_AGE)
                            ? json_integer(vyre_config_get_int(cf, VYRE_CONF_QUARANTINE_MAX_AGE))
                            : json_null());
    json_object_set_new(o, "limits", limits);
    json_object_set_new(o, "remotes", remotes_json(rows, n_rows));
    tool_json_print(stdout, o);
}

static void bucket_line(const vyre_cache_bucket *b)
{
    /* Bucket names (architectures) come from blob headers: through tool_clean. */
    char size[32], name[TOOL_CLEAN_SIZE(sizeof b->name)];
    vyre_format_size(b->bytes, size, sizeof size);
    printf("  %-20s %8" PRIu64 "  %10s\n", tool_clean(b->name, name, sizeof name), b->entries,
           size);
}

/* The remote stores' counters as a table fitted to the terminal
 * (cachectl_table): the store and its hits always; a long URL is cut
 * before a column goes; the bytes and back-off skips go first. */
enum { R_URL, R_HITS, R_MISSES, R_ERRORS, R_SKIPPED, R_REJECTED, R_PUTS, R_READ, R_WRITTEN, R_N };

static void remotes_table(const remote_row *rows, size_t n)
{
    static const tool_table_col cols[R_N] = {
        [R_URL] = {"REMOTE", 0, 20, 0},     [R_HITS] = {"HITS", 0, 0, 1},
        [R_MISSES] = {"MISSES", 1, 0, 1},   [R_ERRORS] = {"ERRORS", 1, 0, 1},
        [R_SKIPPED] = {"SKIPPED", 4, 0, 1}, [R_REJECTED] = {"REJECTED", 2, 0, 1},
        [R_PUTS] = {"WRITES", 2, 0, 1},     [R_READ] = {"READ", 3, 0, 1},
        [R_WRITTEN] = {"WRITTEN", 3, 0, 1},
    };
    if (n == 0)
        return;
    if (n > VYRE_REMOTE_MAX)
        n = VYRE_REMOTE_MAX;
    /* The URL may come from a shared cache's vyre.conf: through tool_clean. */
    char url[VYRE_REMOTE_MAX][TOOL_CLEAN_SIZE(sizeof rows->info.url) + 16];
    char num[VYRE_REMOTE_MAX][R_N][32];
    const char *cells[VYRE_REMOTE_MAX * R_N];
    for (size_t i = 0; i < n; i++) {
        const vyre_remote_stats *s = &rows[i].st;
        const uint64_t v[] = {s->hits,    s->misses,   s->errors + s->put_errors,
                              s->skipped, s->rejected, s->puts};
        tool_clean(rows[i].info.url, url[i], sizeof url[i] - 16);
        if (rows[i].info.read_only)
            snprintf(url[i] + strlen(url[i]), 16, " (read-only)");
        for (size_t c = 0; c < sizeof v / sizeof v[0]; c++)
            snprintf(num[i][R_HITS + c], sizeof num[i][0], "%" PRIu64, v[c]);
        vyre_format_size(s->bytes_read, num[i][R_READ], sizeof num[i][0]);
        vyre_format_size(s->bytes_written, num[i][R_WRITTEN], sizeof num[i][0]);
        cells[i * R_N] = url[i];
        for (size_t c = R_HITS; c < R_N; c++)
            cells[i * R_N + c] = num[i][c];
    }
    cachectl_table(cols, R_N, cells, n);
}

static void print_text(const vyre_cache *c, const vyre_cache_stats *st, const remote_row *rows,
                       size_t n_rows)
{
    char size[32], apparent[32], buf[64];
    printf("%-22s %s\n", "Cache directory:", vyre_cache_root(c));
    printf("%-22s %" PRIu64 "\n", "Entries:", st->entries);
    vyre_format_size(st->bytes, size, sizeof size);
    vyre_format_size(st->apparent_bytes, apparent, sizeof apparent);
    printf("%-22s %s (%s apparent)\n", "Size on disk:", size, apparent);
    if (st->max_size) {
        char lim[32];
        vyre_format_size(st->max_size, lim, sizeof lim);
        printf("%-22s %s of %s (%.0f%%)\n", "Cache size:", size, lim,
               100.0 * (double)st->bytes / (double)st->max_size);
    } else {
        printf("%-22s %s (no limit: max_size = 0)\n", "Cache size:", size);
    }
    printf("%-22s %" PRIu64 "\n", "Hits:", st->hits);
    printf("%-22s %" PRIu64 "\n", "Misses:", st->misses);
    if (st->stats_zeroed_unix_ns) {
        vyre_format_age(tool_unix_ns() - st->stats_zeroed_unix_ns, buf, sizeof buf);
        printf("%-22s %s ago\n", "Stats zeroed:", buf);
    }
    if (st->hits + st->misses)
        printf("%-22s %.1f%%\n",
               "Hit rate:", 100.0 * (double)st->hits / (double)(st->hits + st->misses));
    else
        printf("%-22s %s\n", "Hit rate:", "-");
    vyre_format_duration(st->compile_ns_saved, buf, sizeof buf);
    printf("%-22s %s\n", "Compile time saved:", buf);
    vyre_format_size(st->quarantine_bytes, size, sizeof size);
    printf("%-22s %" PRIu64 " (%s)\n", "Quarantined:", st->quarantined, size);
    printf("%-22s %" PRIu64 " (%" PRIu64 " older than 1h: debris)\n",
           "Temporary files:", st->tmp_files, st->debris);
    vyre_format_size(st->stale_bytes, size, sizeof size);
    printf("%-22s %" PRIu64 " (%s, older key format: never hit)\n", "Stale:", st->stale, size);
    printf("By kind:\n");
    for (int i = 1; i < 4; i++)
        bucket_line(&st->by_kind[i]);
    if (st->by_kind[0].entries)
        bucket_line(&st->by_kind[0]);
    printf("By architecture:\n");
    if (st->n_arch == 0)
        printf("  (none)\n");
    for (size_t i = 0; i < st->n_arch; i++)
        bucket_line(&st->by_arch[i]);
    printf("By age (since created):\n");
    for (int i = 0; i < VYRE_CACHE_AGE_BUCKETS; i++)
        bucket_line(&st->by_age[i]);
    printf("Limits:\n");
    const vyre_config *cf = vyre_cache_config(c);
    char where[VYRE_CONFIG_WHERE_MAX + 32];
    vyre_config_format_where(cf, VYRE_CONF_MAX_SIZE, where, sizeof where);
    if (st->max_size) {
        vyre_format_size(st->max_size, size, sizeof size);
        printf("  %-20s %s (max_size, %s; cleanup to 90%%, LRU first)\n", "Cache size:", size,
               where);
    } else {
        printf("  %-20s none (max_size = 0, %s)\n", "Cache size:", where);
    }
    if (vyre_config_get_int(cf, VYRE_CONF_MAX_AGE)) {
        /* As configured (30d), not rounded to an age (4w): what 'config' shows. */
        vyre_format_duration_exact(vyre_config_get_int(cf, VYRE_CONF_MAX_AGE), buf, sizeof buf);
        printf("  %-20s %s (max_age)\n", "Unused blobs after:", buf);
    }
    if (vyre_config_get_int(cf, VYRE_CONF_QUARANTINE_MAX_AGE)) {
        vyre_format_duration_exact(vyre_config_get_int(cf, VYRE_CONF_QUARANTINE_MAX_AGE), buf,
                                   sizeof buf);
        printf("  %-20s %s (quarantine_max_age)\n", "Quarantine kept:", buf);
    }
    if (vyre_config_get_int(cf, VYRE_CONF_READ_ONLY))
        printf("  %-20s yes (read_only)\n", "Read-only:");
    vyre_format_size(VYRE_BLOB_MAX_PAYLOAD, size, sizeof size);
    printf("  %-20s %s\n", "Blob payload:", size);
    vyre_format_duration_exact(VYRE_CACHE_DEBRIS_AGE_NS, buf, sizeof buf);
    printf("  %-20s %s\n", "tmp/ debris after:", buf);
    printf("Remote stores:%s\n", n_rows ? "" : " none (set remote_storage or VYRE_REMOTE_CACHE)");
    remotes_table(rows, n_rows);
    if (st->debris)
        printf("hint: run 'vyre-cachectl verify --repair' to remove the debris\n");
    if (st->stale)
        printf("hint: run 'vyre-cachectl prune --stale' to remove the stale blobs\n");
}

int cmd_stats(int argc, char **argv)
{
    int rc = cachectl_no_args("stats", argc, argv, usage);
    if (rc != CACHECTL_HANDLED)
        return rc;

    vyre_cache *cache = NULL;
    if ((rc = cachectl_open(CACHECTL_READ_OR_EMPTY, &cache)))
        return rc;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_cache_stats st;
    if (vyre_cache_stats_get(cache, &st, &err)) {
        vyre_cache_close(cache);
        return cachectl_fail(&err);
    }
    remote_row rows[VYRE_REMOTE_MAX];
    size_t n_rows = vyre_cache_remote_count(cache);
    for (size_t i = 0; i < n_rows; i++) {
        vyre_cache_remote_get(cache, i, &rows[i].info, NULL);
        if (vyre_cache_remote_totals(cache, i, &rows[i].st, &err)) {
            vyre_cache_close(cache);
            return cachectl_fail(&err);
        }
    }
    if (g_tool.json)
        print_json(cache, &st, rows, n_rows);
    else if (!g_cachectl.quiet)
        print_text(cache, &st, rows, n_rows);
    vyre_cache_close(cache);
    return TOOL_EXIT_OK;
}
