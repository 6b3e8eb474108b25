/*
 * batch.c - see batch.h.
 */
#include "batch.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "tool_json.h"
#include "tool_sanitize.h"
#include "view.h"
#include "vyre/version.h"

int top_batch_frame(FILE *out, const top_snapshot *s, top_ui *ui, int cols)
{
    top_grid g;
    if (top_view_compose(s, ui, 0, cols, TOP_VIEW_BATCH, &g) != 0)
        return -1;
    static const char ascii[] = "_.,-=+*#";
    char line[1100];
    for (int y = 0; y < g.rows; y++) {
        const char *row = top_grid_row(&g, y);
        size_t n = strlen(row);
        if (n >= sizeof line)
            n = sizeof line - 1;
        for (size_t i = 0; i < n; i++)
            line[i] = TOP_IS_SPARK(row[i])     ? ascii[(unsigned char)row[i] - TOP_SPARK_MIN]
                      : row[i] == TOP_ELLIPSIS ? '~'
                                               : row[i];
        while (n > 0 && line[n - 1] == ' ')
            n--;
        line[n] = '\0';
        /* Table cells are clean already (top_fmt_cell); this catches any
         * other text of the frame (titles, messages) before stdout. */
        tool_clean_fputs(line, out);
        fputc('\n', out);
    }
    fputc('\n', out);
    top_grid_release(&g);
    fflush(out);
    return ferror(out) ? -1 : 0;
}

/* A number, or null when unknown. */
static json_t *jnum(double v)
{
    return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

/* A whole number (durations in ns, bytes), rounded; null when unknown. */
static json_t *jround(double v)
{
    return isnan(v) || isinf(v) ? json_null() : json_integer((json_int_t)llround(v));
}

/* A percentage as a fraction 0..1, or null when unknown. */
static json_t *jratio_pct(double pct)
{
    return isnan(pct) || isinf(pct) ? json_null() : json_real(pct / 100.0);
}

static json_t *jint(uint64_t v)
{
    return json_integer((json_int_t)(v > (uint64_t)INT64_MAX ? INT64_MAX : v));
}

static json_t *jint_if(int valid, uint64_t v)
{
    return valid ? jint(v) : json_null();
}

static json_t *jstr_if(int valid, const char *s)
{
    return valid ? json_string(s) : json_null();
}

static json_t *gpu_json(const vyre_gpu_info *g)
{
#define V(f) vyre_gpu_field_valid(g, VYRE_GPU_F_##f)
    json_t *procs = json_array();
    for (unsigned i = 0; V(PROCS) && i < g->nprocs && i < VYRE_GPU_MAX_PROCS; i++)
        json_array_append_new(
            procs,
            json_pack("{s:I, s:s, s:o, s:o}", "pid", (json_int_t)g->procs[i].pid, "type",
                      g->procs[i].graphics ? "graphics" : "compute", "used_bytes",
                      jint_if(g->procs[i].used_valid, g->procs[i].used_bytes), "sm_util_ratio",
                      g->procs[i].util_valid ? jratio_pct(g->procs[i].sm_util_pct) : json_null()));
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(g->index));
    json_object_set_new(o, "name", jstr_if(V(NAME), g->name));
    json_object_set_new(o, "uuid", jstr_if(V(UUID), g->uuid));
    json_object_set_new(o, "util_gpu_ratio", V(UTIL) ? jratio_pct(g->util_gpu_pct) : json_null());
    json_object_set_new(o, "util_mem_ratio", V(UTIL) ? jratio_pct(g->util_mem_pct) : json_null());
    json_object_set_new(o, "mem_used_bytes", jint_if(V(MEMORY), g->mem_used_bytes));
    json_object_set_new(o, "mem_total_bytes", jint_if(V(MEMORY), g->mem_total_bytes));
    json_object_set_new(o, "sm_clock_hz",
                        jint_if(V(SM_CLOCK), g->sm_clock_mhz * UINT64_C(1000000)));
    json_object_set_new(o, "mem_clock_hz",
                        jint_if(V(MEM_CLOCK), g->mem_clock_mhz * UINT64_C(1000000)));
    json_object_set_new(o, "sm_clock_max_hz",
                        jint_if(V(SM_CLOCK_MAX), g->sm_clock_max_mhz * UINT64_C(1000000)));
    json_object_set_new(o, "temperature_c",
                        V(TEMPERATURE) ? json_integer(g->temperature_c) : json_null());
    json_object_set_new(o, "power_w", V(POWER) ? json_real(g->power_mw / 1000.0) : json_null());
    json_object_set_new(o, "power_limit_w",
                        V(POWER_LIMIT) ? json_real(g->power_limit_mw / 1000.0) : json_null());
    json_object_set_new(o, "throttle_reasons", jint_if(V(THROTTLE), g->throttle_reasons));
    json_object_set_new(o, "throttle", jstr_if(V(THROTTLE), g->throttle_text));
    json_object_set_new(o, "processes", V(PROCS) ? procs : json_null());
    if (!V(PROCS))
        json_decref(procs);
    json_object_set_new(o, "problem", g->problem[0] ? json_string(g->problem) : json_null());
#undef V
    return o;
}

static json_t *ranges_json(const top_range *r)
{
    json_t *a = json_array();
    for (int i = 0; i < VYRE_RANGE_COUNT; i++) {
        const top_range *x = &r[i];
        if (!x->count)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(x->name));
        json_object_set_new(o, "count", jint(x->count));
        json_object_set_new(o, "count_per_s", jnum(x->count_s));
        json_object_set_new(o, "window_count", jint(x->win_count));
        json_object_set_new(o, "quantiles_of", json_string(x->window ? "interval" : "lifetime"));
        json_object_set_new(o, "p50_ns", jint(x->p50_ns));
        json_object_set_new(o, "p90_ns", jint(x->p90_ns));
        json_object_set_new(o, "p99_ns", jint(x->p99_ns));
        json_object_set_new(o, "max_ns", jint(x->max_ns));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *kernels_json(const top_kernel *k, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        const top_kernel *x = &k[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(x->name));
        json_object_set_new(o, "calls", jint(x->calls));
        json_object_set_new(o, "calls_per_s", jnum(x->calls_s));
        json_object_set_new(o, "gpu_time_share_ratio", jratio_pct(x->share_pct));
        json_object_set_new(o, "mean_ns", jround(x->mean_ns));
        json_object_set_new(o, "max_ns", jint(x->max_ns));
        json_object_set_new(o, "total_ns", jint(x->total_ns));
        json_object_set_new(o, "estimated", json_boolean(x->estimated));
        json_object_set_new(o, "grid",
                            json_pack("[I,I,I]", (json_int_t)x->grid[0], (json_int_t)x->grid[1],
                                      (json_int_t)x->grid[2]));
        json_object_set_new(o, "block",
                            json_pack("[I,I,I]", (json_int_t)x->block[0], (json_int_t)x->block[1],
                                      (json_int_t)x->block[2]));
        json_object_set_new(o, "device", x->device >= 0 ? json_integer(x->device) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *proc_json(const top_snapshot *s, size_t i)
{
    const top_proc *p = &s->procs[i];
    const vyre_proc_info *h = &p->host;
    int t = p->telemetry; /* vyre's own figures exist only with a page */
    json_t *o = json_object();
    json_object_set_new(o, "pid", json_integer(p->pid));
    json_object_set_new(o, "name", json_string(p->name));
    json_object_set_new(o, "cmdline", json_string(p->cmdline));
    json_object_set_new(o, "telemetry", json_boolean(t));
    json_object_set_new(o, "foreign", json_boolean(t && p->foreign));
    json_object_set_new(o, "uid", h->uid_valid ? json_integer(h->uid) : json_null());
    json_object_set_new(o, "user", jstr_if(h->uid_valid, h->user));
    /* CPU time over wall time: 1 is one core busy, so it may exceed 1. */
    json_object_set_new(o, "cpu_ratio", jratio_pct(p->cpu_pct));
    json_object_set_new(o, "rss_bytes", jint_if(h->rss_valid, h->rss_bytes));
    json_object_set_new(o, "sm_util_ratio", jratio_pct(p->sm_util_pct));
    json_object_set_new(o, "device", p->device >= 0 ? json_integer(p->device) : json_null());
    json_object_set_new(o, "published", json_boolean(p->published));
    json_object_set_new(o, "launches_per_s", jnum(p->launches_s));
    json_object_set_new(o, "graph_launches_per_s", jnum(p->graphs_s));
    json_object_set_new(o, "dispatches_per_s", jnum(p->dispatches_s));
    /* The collector keeps MB/s and seconds for the screen; JSON is in base
     * units (docs/JSON.md). */
    json_object_set_new(o, "h2d_bytes_per_s", jnum(p->h2d_mb_s * 1e6));
    json_object_set_new(o, "d2h_bytes_per_s", jnum(p->d2h_mb_s * 1e6));
    json_object_set_new(o, "d2d_bytes_per_s", jnum(p->d2d_mb_s * 1e6));
    json_object_set_new(o, "cache_hit_ratio", jratio_pct(p->cache_hit_pct));
    json_object_set_new(o, "compile_time_saved_ns", jround(p->compile_saved_s * 1e9));
    json_object_set_new(o, "launches", jint_if(t, p->launches));
    json_object_set_new(o, "graph_launches", jint_if(t, p->graph_launches));
    json_object_set_new(o, "dispatches", jint_if(t, p->dispatches));
    json_object_set_new(o, "h2d_bytes", jint_if(t, p->h2d_bytes));
    json_object_set_new(o, "d2h_bytes", jint_if(t, p->d2h_bytes));
    json_object_set_new(o, "d2d_bytes", jint_if(t, p->d2d_bytes));
    json_object_set_new(o, "kernels_total", jint_if(t, p->kernels_total));
    json_object_set_new(o, "layout_version", t ? json_integer(p->layout_version) : json_null());
    json_object_set_new(o, "gpu_mem_bytes", jint_if(p->gpu_mem_valid, p->gpu_mem_bytes));
    /* This process alone. */
    unsigned char *keep = calloc(s->nprocs, 1);
    top_range r[VYRE_RANGE_COUNT];
    top_kernel *k = NULL;
    size_t nk = 0;
    int sampled = 0;
    if (keep) {
        keep[i] = 1;
        top_aggregate_ranges(s, keep, r);
        nk = top_aggregate_kernels(s, keep, &k, &sampled);
        json_object_set_new(o, "ranges", ranges_json(r));
        json_object_set_new(o, "kernels", kernels_json(k, nk));
        json_object_set_new(o, "kernels_sampled", json_boolean(sampled));
    }
    free(keep);
    free(k);
    return o;
}

static json_t *cache_json(const top_snapshot *s)
{
    json_t *o = json_object();
    static const char *const states[] = {"ok", "missing", "error", "pending"};
    json_object_set_new(o, "state", json_string(states[s->cache_state & 3]));
    json_object_set_new(o, "root", s->cache_root[0] ? json_string(s->cache_root) : json_null());
    json_object_set_new(
        o, "error", s->cache_state == TOP_CACHE_ERROR ? json_string(s->cache_msg) : json_null());
    int ok = s->cache_state == TOP_CACHE_OK;
    const vyre_cache_stats *c = &s->cache;
    uint64_t lookups = c->hits + c->misses;
    json_object_set_new(o, "entries", jint_if(ok, c->entries));
    json_object_set_new(o, "bytes", jint_if(ok, c->bytes));
    json_object_set_new(o, "hits", jint_if(ok, c->hits));
    json_object_set_new(o, "misses", jint_if(ok, c->misses));
    json_object_set_new(o, "hit_ratio",
                        ok && lookups ? json_real((double)c->hits / (double)lookups) : json_null());
    json_object_set_new(o, "compile_time_saved_ns", jint_if(ok, c->compile_ns_saved));
    json_object_set_new(o, "quarantined", jint_if(ok, c->quarantined));
    json_object_set_new(o, "quarantine_bytes", jint_if(ok, c->quarantine_bytes));
    json_object_set_new(o, "tmp_files", jint_if(ok, c->tmp_files));
    json_object_set_new(o, "debris", jint_if(ok, c->debris));
    json_object_set_new(o, "age_ns", ok ? jround(s->cache_age_s * 1e9) : json_null());
    json_t *remotes = json_array();
    for (size_t i = 0; i < s->nremotes; i++) {
        const vyre_remote_stats *st = &s->remotes[i].st;
        json_array_append_new(
            remotes,
            json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "url",
                      s->remotes[i].url, "read_only", s->remotes[i].read_only, "hits",
                      (json_int_t)st->hits, "misses", (json_int_t)st->misses, "errors",
                      (json_int_t)st->errors, "rejected", (json_int_t)st->rejected, "skipped",
                      (json_int_t)st->skipped, "puts", (json_int_t)st->puts, "put_errors",
                      (json_int_t)st->put_errors, "read_bytes", (json_int_t)st->bytes_read,
                      "written_bytes", (json_int_t)st->bytes_written));
    }
    json_object_set_new(o, "remotes", remotes);
    return o;
}

/* A filesystem fill in percent (vyre_usage_*_full_pct) as 0..1; null when
 * unknown (-1). */
static json_t *jfs_ratio(double pct)
{
    return pct < 0 ? json_null() : jratio_pct(pct);
}

/* A path or message from the environment: not always UTF-8, which a JSON
 * string must be (jansson refuses it): then the cleaned form, as the
 * screen shows it. */
static json_t *jtext_if(int valid, const char *text)
{
    if (!valid)
        return json_null();
    return tool_json_text(text);
}

/* One cache's row of the sizes the cache panel shows (format.c's
 * top_fmt_usage): where, from what, its size, its limit, its filesystem. */
static json_t *usage_fig_json(const tool_usage_fig *f)
{
    const vyre_usage_cache *w = &f->where;
    const vyre_usage *u = &f->u;
    int ok = f->state == TOOL_USAGE_OK, fs = u->fs_valid;
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(w->name ? w->name : "?"));
    json_object_set_new(o, "path", jtext_if(w->located, w->path));
    json_object_set_new(o, "path_from", jstr_if(w->located && w->path_from, w->path_from));
    json_object_set_new(o, "error", jtext_if(!ok, f->msg));
    json_object_set_new(o, "exists", ok ? json_boolean(u->exists) : json_null());
    json_object_set_new(o, "bytes", jint_if(ok, u->bytes));
    json_object_set_new(o, "files", jint_if(ok, u->files));
    json_object_set_new(o, "partial", ok ? json_boolean(u->partial) : json_null());
    json_object_set_new(o, "skipped", jint_if(ok, u->skipped));
    /* 0 is "no limit, or none known": limit_from says which. */
    json_object_set_new(o, "limit_bytes", jint_if(w->limit_bytes != 0, w->limit_bytes));
    json_object_set_new(o, "limit_from", jtext_if(1, w->limit_from));
    json_object_set_new(o, "fill_ratio",
                        ok && w->limit_bytes ? json_real((double)u->bytes / (double)w->limit_bytes)
                                             : json_null());
    json_object_set_new(o, "over_limit",
                        json_boolean(ok && w->limit_bytes && u->bytes > w->limit_bytes));
    json_object_set_new(o, "fs_size_bytes", jint_if(fs, u->fs_size_bytes));
    json_object_set_new(o, "fs_avail_bytes", jint_if(fs, u->fs_avail_bytes));
    json_object_set_new(o, "fs_files", jint_if(fs && u->fs_files, u->fs_files));
    json_object_set_new(o, "fs_avail_files", jint_if(fs && u->fs_files, u->fs_avail_files));
    json_object_set_new(o, "fs_full_ratio", jfs_ratio(vyre_usage_fs_full_pct(u)));
    json_object_set_new(o, "fs_inodes_full_ratio", jfs_ratio(vyre_usage_inodes_full_pct(u)));
    json_object_set_new(o, "warn", json_boolean(tool_usage_warn(f)));
    return o;
}

/* The caches' sizes (tool_usagesnap.h): null when not measured
 * (--no-cache-usage); "caches" is empty until the first round ends. */
static json_t *usage_json(const top_snapshot *s)
{
    if (!s->usage_on)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "interval_ns", jround(s->usage_every_s * 1e9));
    json_object_set_new(o, "age_ns", jround(s->usage_age_s * 1e9));
    json_object_set_new(o, "rounds", jint(s->usage.rounds));
    json_t *a = json_array();
    for (int i = 0; s->usage.rounds && i < VYRE_USAGE_N_CACHES; i++)
        json_array_append_new(a, usage_fig_json(&s->usage.c[i]));
    json_object_set_new(o, "caches", a);
    return o;
}

int top_batch_json(FILE *out, const top_snapshot *s)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(TOP_JSON_SCHEMA_VERSION));
    json_object_set_new(root, "vyre_version", json_string(vyre_version()));
    json_object_set_new(root, "time_unix_ns", jround(s->unix_s * 1e9));
    json_object_set_new(root, "interval_ns", jround(s->interval_s * 1e9));

    json_t *mon = json_object();
    json_object_set_new(mon, "available", json_boolean(s->gpu_ok));
    json_object_set_new(mon, "error", s->gpu_ok ? json_null() : json_string(s->gpu_msg));
    json_object_set_new(mon, "hint",
                        s->gpu_ok || !s->gpu_hint[0] ? json_null() : json_string(s->gpu_hint));
    json_object_set_new(mon, "driver_version",
                        s->gpu_ok && s->gpu.driver_version[0] ? json_string(s->gpu.driver_version)
                                                              : json_null());
    json_object_set_new(mon, "gpus_total",
                        s->gpu_ok ? json_integer(s->gpu.ngpus_total) : json_null());
    json_object_set_new(root, "gpu_monitor", mon);
    json_t *gpus = json_array();
    for (unsigned i = 0; s->gpu_ok && i < s->gpu.ngpus && i < VYRE_GPU_MAX; i++)
        json_array_append_new(gpus, gpu_json(&s->gpu.gpus[i]));
    json_object_set_new(root, "gpus", gpus);

    json_t *tel = json_object();
    json_object_set_new(tel, "dir", s->tel_dir[0] ? json_string(s->tel_dir) : json_null());
    json_object_set_new(tel, "error", s->tel_ok ? json_null() : json_string(s->tel_msg));
    json_object_set_new(tel, "unreadable_pages", jint(s->unreadable));
    json_object_set_new(root, "telemetry", tel);
    json_t *procs = json_array();
    for (size_t i = 0; i < s->nprocs; i++)
        json_array_append_new(procs, proc_json(s, i));
    json_object_set_new(root, "processes", procs);

    top_range r[VYRE_RANGE_COUNT];
    top_aggregate_ranges(s, NULL, r);
    json_object_set_new(root, "ranges", ranges_json(r));
    top_kernel *k = NULL;
    int sampled = 0;
    size_t nk = top_aggregate_kernels(s, NULL, &k, &sampled);
    json_object_set_new(root, "kernels", kernels_json(k, nk));
    json_object_set_new(root, "kernels_sampled", json_boolean(sampled));
    free(k);
    json_object_set_new(root, "cache", cache_json(s));
    json_object_set_new(root, "cache_usage", usage_json(s));

    int rc = tool_json_write(out, root, TOOL_JSON_COMPACT);
    json_decref(root);
    fflush(out);
    return rc == 0 && !ferror(out) ? 0 : -1;
}
