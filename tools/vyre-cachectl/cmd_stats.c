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
#include "listing.h"
#include "summary.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-cachectl stats [-v] [--json | --csv | --md] [--width N]\n\n"
                 "Entries and bytes on disk, by kind, by architecture and by age (since\n"
                 "creation); hits and the compile time they saved; quarantined files and tmp/\n"
                 "debris; the size limit and how full the cache is (max_size), and the other\n"
                 "limits in force; for each remote store (remote_storage), the hits, misses,\n"
                 "errors, rejected objects and bytes every process using this cache recorded.\n"
                 "Reads the cache, changes nothing; a cache that does not exist yet shows as\n"
                 "empty (nothing is created). Compact by default: the counts that are 0 and\n"
                 "the limits are left out; -v shows every line and row. --csv: the lines as\n"
                 "field,value rows, then each table after a blank line.\n\n");
    cachectl_options_help(out, cachectl_no_opts);
    fprintf(out, "\n"
                 "exit status: 0 printed, 2 usage or operational error (missing or unsafe cache\n"
                 "             directory, corrupt index)\n");
}

/* Upper bounds of the age buckets in seconds (the last is open). */
static const int64_t g_age_limits[VYRE_CACHE_AGE_BUCKETS - 1] = {3600, 86400, 7 * 86400,
                                                                 30 * 86400};

/* Lifetime counters of each remote in remote_storage, as recorded in
 * this cache's index by the processes that used it. */
typedef struct remote_row {
    vyre_remote_info info;
    vyre_remote_stats st;
} remote_row;

/* The document's members that are not tables (stats' schema). */
static json_t *stats_json(const vyre_cache *c, const vyre_cache_stats *st)
{
    const vyre_config *cf = vyre_cache_config(c);
    int64_t max_age = vyre_config_get_int(cf, VYRE_CONF_MAX_AGE);
    int64_t q_age = vyre_config_get_int(cf, VYRE_CONF_QUARANTINE_MAX_AGE);
    json_t *o = cachectl_json_root(c, 4); /* 4: bytes on disk (st_blocks), apparent_bytes */
    json_object_set_new(o, "entries", json_integer((json_int_t)st->entries));
    json_object_set_new(o, "bytes", json_integer((json_int_t)st->bytes));
    json_object_set_new(o, "apparent_bytes", json_integer((json_int_t)st->apparent_bytes));
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
    json_t *max = st->max_size ? json_integer((json_int_t)st->max_size) : json_null();
    json_object_set(o, "max_size_bytes", max);
    json_object_set_new(o, "fill_ratio",
                        st->max_size ? json_real((double)st->bytes / (double)st->max_size)
                                     : json_null());
    json_object_set_new(o, "stats_zeroed_unix_ns",
                        st->stats_zeroed_unix_ns ? json_integer(st->stats_zeroed_unix_ns)
                                                 : json_null());
    json_t *limits =
        json_pack("{s:I, s:I}", "max_blob_payload_bytes", (json_int_t)VYRE_BLOB_MAX_PAYLOAD,
                  "debris_age_ns", (json_int_t)VYRE_CACHE_DEBRIS_AGE_NS);
    json_object_set_new(limits, "max_cache_bytes", max);
    json_object_set_new(limits, "max_age_ns", max_age ? json_integer(max_age) : json_null());
    json_object_set_new(limits, "quarantine_max_age_ns", q_age ? json_integer(q_age) : json_null());
    json_object_set_new(o, "limits", limits);
    return o;
}

/* One bucket's row: its name, entries and bytes. */
static void bucket_row(cachectl_summary *sum, tool_rows *rows, const vyre_cache_bucket *b)
{
    tool_rows_add(rows);
    tool_rows_text(rows, 0, b->name);
    tool_rows_int(rows, 1, (int64_t)b->entries);
    cachectl_rows_size(rows, 2, b->bytes);
    cachectl_summary_count(sum, rows, b->entries);
}

/* By kind, architecture and age: compact leaves out what is empty. */
static void bucket_tables(cachectl_summary *sum, const vyre_cache_stats *st)
{
    static const tool_rows_col kind[] = {
        {"kind", "KIND", TOOL_ROWS_TEXT, 0, 0, 0, NULL, 0},
        {"entries", "ENTRIES", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
        {"bytes", "SIZE", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
    };
    static const tool_rows_col arch[] = {
        {"arch", "ARCH", TOOL_ROWS_TEXT, 0, 12, 0, NULL, 0},
        {"entries", "ENTRIES", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
        {"bytes", "SIZE", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
    };
    static const tool_rows_col age[] = {
        {"bucket", "AGE", TOOL_ROWS_TEXT, 0, 0, 0, NULL, 0},
        {"entries", "ENTRIES", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
        {"bytes", "SIZE", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
        {"max_age_ns", NULL, TOOL_ROWS_TIME, TOOL_ROWS_DATA, 0, 0, NULL, 0},
    };
    tool_rows *rows = cachectl_summary_table(sum, "By kind:", "by_kind", kind, 3);
    for (int i = 1; i < 4; i++)
        bucket_row(sum, rows, &st->by_kind[i]);
    if (st->by_kind[0].entries)
        bucket_row(sum, rows, &st->by_kind[0]);
    rows = cachectl_summary_table(sum, "By architecture:", "by_arch", arch, 3);
    for (size_t i = 0; i < st->n_arch; i++)
        bucket_row(sum, rows, &st->by_arch[i]);
    rows = cachectl_summary_table(sum, "By age (since created):", "by_age", age, 4);
    for (int i = 0; i < VYRE_CACHE_AGE_BUCKETS; i++) {
        bucket_row(sum, rows, &st->by_age[i]);
        if (i < VYRE_CACHE_AGE_BUCKETS - 1)
            tool_rows_int(rows, 3, g_age_limits[i] * 1000000000);
    }
}

/* The remote stores' counters: the store and its hits always; a long URL
 * is cut before a column goes; the bytes and back-off skips go first. */
enum {
    R_URL,
    R_RO,
    R_HITS,
    R_MISSES,
    R_ERRORS,
    R_REJECTED,
    R_SKIPPED,
    R_PUTS,
    R_PUT_ERRORS,
    R_READ,
    R_WRITTEN,
    R_N
};

static void remotes_table(cachectl_summary *sum, const remote_row *rr, size_t n)
{
    static const tool_rows_col cols[R_N] = {
        [R_URL] = {"url", "REMOTE", TOOL_ROWS_TEXT, 0, 20, 0, NULL, 0},
        [R_RO] = {"read_only", NULL, TOOL_ROWS_BOOL, TOOL_ROWS_DATA, 0, 0, NULL, 0},
        [R_HITS] = {"hits", "HITS", TOOL_ROWS_INT, 0, 0, 0, NULL, 0},
        [R_MISSES] = {"misses", "MISSES", TOOL_ROWS_INT, 1, 0, 0, NULL, 0},
        [R_ERRORS] = {"errors", "ERRORS", TOOL_ROWS_INT, 1, 0, 0, NULL, 0},
        [R_REJECTED] = {"rejected", "REJECTED", TOOL_ROWS_INT, 2, 0, 0, NULL, 0},
        [R_SKIPPED] = {"skipped", "SKIPPED", TOOL_ROWS_INT, 4, 0, 0, NULL, 0},
        [R_PUTS] = {"puts", "WRITES", TOOL_ROWS_INT, 2, 0, 0, NULL, 0},
        [R_PUT_ERRORS] = {"put_errors", NULL, TOOL_ROWS_INT, TOOL_ROWS_DATA, 0, 0, NULL, 0},
        [R_READ] = {"read_bytes", "READ", TOOL_ROWS_INT, 3, 0, 0, NULL, 0},
        [R_WRITTEN] = {"written_bytes", "WRITTEN", TOOL_ROWS_INT, 3, 0, 0, NULL, 0},
    };
    static const size_t order[] = {R_URL,      R_HITS, R_MISSES, R_ERRORS, R_SKIPPED,
                                   R_REJECTED, R_PUTS, R_READ,   R_WRITTEN};
    tool_rows *rows = cachectl_summary_table(sum, "Remote stores:", "remotes", cols, R_N);
    tool_rows_order(rows, order, sizeof order / sizeof *order);
    for (size_t i = 0; i < n; i++) {
        const vyre_remote_stats *s = &rr[i].st;
        const uint64_t v[] = {s->hits,    s->misses, s->errors,    s->rejected,
                              s->skipped, s->puts,   s->put_errors};
        char buf[VYRE_REMOTE_URL_MAX + 16];
        tool_rows_add(rows);
        tool_rows_text(rows, R_URL, rr[i].info.url);
        if (rr[i].info.read_only) {
            snprintf(buf, sizeof buf, "%s (read-only)", rr[i].info.url);
            tool_rows_shown(rows, R_URL, buf);
        }
        tool_rows_int(rows, R_RO, rr[i].info.read_only);
        for (size_t c = 0; c < sizeof v / sizeof *v; c++)
            tool_rows_int(rows, R_HITS + c, (int64_t)v[c]);
        /* The table counts a failed write as an error. */
        snprintf(buf, sizeof buf, "%" PRIu64, s->errors + s->put_errors);
        tool_rows_shown(rows, R_ERRORS, buf);
        cachectl_rows_size(rows, R_READ, s->bytes_read);
        cachectl_rows_size(rows, R_WRITTEN, s->bytes_written);
    }
}
/* The limits in force: all of them with -v. */
static void limit_lines(cachectl_summary *sum, const vyre_cache *c, const vyre_cache_stats *st)
{
    const vyre_config *cf = vyre_cache_config(c);
    char size[32], buf[64], where[VYRE_CONFIG_WHERE_MAX + 32];
    int64_t max_age = vyre_config_get_int(cf, VYRE_CONF_MAX_AGE);
    int64_t q_age = vyre_config_get_int(cf, VYRE_CONF_QUARANTINE_MAX_AGE);
    int v = CACHECTL_VERBOSE;
    cachectl_summary_line(sum, v, 0, "Limits:", "%s", "");
    vyre_config_format_where(cf, VYRE_CONF_MAX_SIZE, where, sizeof where);
    vyre_format_size(st->max_size, size, sizeof size);
    if (st->max_size)
        cachectl_summary_line(sum, v, 0,
                              "  Size limit:", "%s (max_size, %s; cleanup to 90%%, LRU first)",
                              size, where);
    else
        cachectl_summary_line(sum, v, 0, "  Size limit:", "none (max_size = 0, %s)", where);
    /* As configured (30d), not rounded to an age (4w): what 'config' shows. */
    vyre_format_duration_exact(max_age, buf, sizeof buf);
    if (max_age)
        cachectl_summary_line(sum, v, 0, "  Unused blobs after:", "%s (max_age)", buf);
    vyre_format_duration_exact(q_age, buf, sizeof buf);
    if (q_age)
        cachectl_summary_line(sum, v, 0, "  Quarantine kept:", "%s (quarantine_max_age)", buf);
    vyre_format_size(VYRE_BLOB_MAX_PAYLOAD, size, sizeof size);
    cachectl_summary_line(sum, v, 0, "  Blob payload:", "%s", size);
    vyre_format_duration_exact(VYRE_CACHE_DEBRIS_AGE_NS, buf, sizeof buf);
    cachectl_summary_line(sum, v, 0, "  tmp/ debris after:", "%s", buf);
}

/* The lines: compact leaves out the counts that are 0. */
static void stat_lines(cachectl_summary *sum, const vyre_cache *c, const vyre_cache_stats *st,
                       size_t n_remotes)
{
    char size[32], apparent[32], lim[32], buf[64];
    int nz = CACHECTL_NONZERO;
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Cache directory:", "%s", vyre_cache_root(c));
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Entries:", "%" PRIu64, st->entries);
    vyre_format_size(st->bytes, size, sizeof size);
    vyre_format_size(st->apparent_bytes, apparent, sizeof apparent);
    vyre_format_size(st->max_size, lim, sizeof lim);
    cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Size on disk:", "%s (%s apparent)", size,
                          apparent);
    if (st->max_size)
        cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Cache size:", "%s of %s (%.0f%%)", size, lim,
                              100.0 * (double)st->bytes / (double)st->max_size);
    else
        cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Cache size:", "%s (no limit: max_size = 0)",
                              size);
    /* Read-only changes what every command may do: said without -v too. */
    if (vyre_config_get_int(vyre_cache_config(c), VYRE_CONF_READ_ONLY))
        cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Read-only:", "yes (read_only)");
    uint64_t lookups = st->hits + st->misses;
    cachectl_summary_line(sum, nz, st->hits, "Hits:", "%" PRIu64, st->hits);
    cachectl_summary_line(sum, nz, st->misses, "Misses:", "%" PRIu64, st->misses);
    vyre_format_age(tool_unix_ns() - st->stats_zeroed_unix_ns, buf, sizeof buf);
    if (st->stats_zeroed_unix_ns)
        cachectl_summary_line(sum, CACHECTL_SHOW, 0, "Stats zeroed:", "%s ago", buf);
    if (lookups)
        cachectl_summary_line(sum, nz, lookups, "Hit rate:", "%.1f%%",
                              100.0 * (double)st->hits / (double)lookups);
    else
        cachectl_summary_line(sum, nz, 0, "Hit rate:", "-");
    vyre_format_duration(st->compile_ns_saved, buf, sizeof buf);
    cachectl_summary_line(sum, nz, st->compile_ns_saved, "Compile time saved:", "%s", buf);
    vyre_format_size(st->quarantine_bytes, size, sizeof size);
    cachectl_summary_line(sum, nz, st->quarantined, "Quarantined:", "%" PRIu64 " (%s)",
                          st->quarantined, size);
    cachectl_summary_line(sum, nz, st->tmp_files,
                          "Temporary files:", "%" PRIu64 " (%" PRIu64 " older than 1h: debris)",
                          st->tmp_files, st->debris);
    vyre_format_size(st->stale_bytes, size, sizeof size);
    cachectl_summary_line(sum, nz, st->stale,
                          "Stale:", "%" PRIu64 " (%s, older key format: never hit)", st->stale,
                          size);
    limit_lines(sum, c, st);
    if (!n_remotes)
        cachectl_summary_line(sum, CACHECTL_VERBOSE, 0,
                              "Remote stores:", "none (set remote_storage or VYRE_REMOTE_CACHE)");
}

static int print_stats(const vyre_cache *c, const vyre_cache_stats *st, const remote_row *rows,
                       size_t n_rows)
{
    cachectl_summary *sum = cachectl_summary_new(22);
    stat_lines(sum, c, st, n_rows);
    bucket_tables(sum, st);
    remotes_table(sum, rows, n_rows);
    int rc = cachectl_summary_print(sum, "stats", stats_json(c, st));
    cachectl_summary_free(sum);
    if (rc || g_tool.json || g_cachectl.rows.csv || g_cachectl.rows.md)
        return rc;
    if (st->debris)
        printf("hint: run 'vyre-cachectl verify --repair' to remove the debris\n");
    if (st->stale)
        printf("hint: run 'vyre-cachectl prune --stale' to remove the stale blobs\n");
    return 0;
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
        if (vyre_cache_remote_get(cache, i, VYRE_CACHE_REMOTE_TOTALS, &rows[i].info, &rows[i].st,
                                  &err)) {
            vyre_cache_close(cache);
            return cachectl_fail(&err);
        }
    }
    rc = g_cachectl.quiet ? TOOL_EXIT_OK : print_stats(cache, &st, rows, n_rows);
    vyre_cache_close(cache);
    return rc;
}
