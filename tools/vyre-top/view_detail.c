/*
 * view_detail.c - see view_int.h: the detail view of one process (Enter
 * on the processes panel; issue 37): its command line, user, start time,
 * CUDA_VISIBLE_DEVICES, CPU and memory, its share of each GPU with the
 * history of its memory and SM% there (sparklines as wide as the view
 * allows, newest right), and its vyre telemetry (rates, ranges, the kernels
 * of the last interval) when it publishes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_int.h"

#define DETAIL_MAX 40 /* lines at most */

typedef struct lines {
    char text[DETAIL_MAX][LINE_MAX_W];
    int n;
} lines;

/* One line: a label, then its value. */
static void add(lines *l, const char *label, const char *value)
{
    if (l->n >= DETAIL_MAX)
        return;
    /* A line longer than the view is cut, as the panel would cut it
     * (copied by length: gcc -O2 calls a cutting snprintf a mistake). */
    char *dst = l->text[l->n++];
    size_t cap = LINE_MAX_W - 1, a = strlen(label), b = strlen(value);
    if (a > cap)
        a = cap;
    if (b > cap - a)
        b = cap - a;
    memcpy(dst, label, a);
    memcpy(dst + a, value, b);
    dst[a + b] = '\0';
}

/* Its CUDA_VISIBLE_DEVICES as collected: never guessed. */
static void env_line(const top_proc *p, lines *l)
{
    const vyre_proc_env *e = &p->cuda_visible;
    char v[VYRE_PROC_ENV_MAX + 48];
    switch (e->state) {
    case VYRE_PROC_ENV_SET:
        if (!e->value[0])
            snprintf(v, sizeof v, "set but empty (no GPU visible to CUDA)");
        else
            snprintf(v, sizeof v, "%s%s", e->value, e->cut ? " (cut)" : "");
        break;
    case VYRE_PROC_ENV_UNSET:
        snprintf(v, sizeof v, "not set (every GPU visible)");
        break;
    case VYRE_PROC_ENV_UNREADABLE:
        snprintf(v, sizeof v, "not readable (/proc/%d/environ)", (int)p->pid);
        break;
    default:
        snprintf(v, sizeof v, "%s", p->foreign ? "unknown (another PID namespace)" : "unknown");
        break;
    }
    add(l, "  CUDA_VISIBLE_DEVICES ", v);
}

static void host_lines(const top_snapshot *s, const top_proc *p, lines *l)
{
    char a[64], b[64], cpu[16], rss[16];
    snprintf(a, sizeof a, "%d", (int)p->pid);
    char head[LINE_MAX_W];
    snprintf(head, sizeof head, "Process %s (%s)  any key closes", a, p->name);
    add(l, head, "");
    add(l, "  user     ",
        p->foreign          ? "foreign (another PID namespace)"
        : p->host.uid_valid ? p->host.user
                            : "-");
    add(l, "  command  ", p->cmdline[0] ? p->cmdline : "-");
    char started[96];
    top_fmt_started(p->start_unix, s->unix_s, started, sizeof started);
    add(l, "  started  ", started);
    env_line(p, l);
    top_fmt_pct(p->cpu_pct, cpu, sizeof cpu);
    top_fmt_bytes(p->host.rss_bytes, p->host.rss_valid, rss, sizeof rss);
    snprintf(b, sizeof b, "%s  RSS %s", cpu, rss);
    add(l, "  CPU      ", b);
}

/* The history of the process on GPU dev: memory (of that GPU's) and SM%,
 * two sparklines sharing the width, newest right; none without samples. */
static void history_line(const top_proc *p, int dev, int width, lines *l)
{
    const top_proc_hist *h = NULL;
    for (unsigned i = 0; i < p->nhist; i++)
        if (p->hist[i].device == dev)
            h = &p->hist[i];
    if (!h || !h->len)
        return;
    static const char lmem[] = "    memory ", lsm[] = "  SM ";
    int sw = (width - (int)(sizeof lmem - 1) - (int)(sizeof lsm - 1)) / 2;
    if (sw > TOP_PROC_HIST)
        sw = TOP_PROC_HIST;
    if (sw < 1)
        sw = 1;
    uint8_t mem[TOP_PROC_HIST], sm[TOP_PROC_HIST];
    for (unsigned k = 0; k < h->len; k++) {
        mem[k] = top_proc_hist_mem(h, k);
        sm[k] = top_proc_hist_sm(h, k);
    }
    char a[TOP_PROC_HIST + 1], b[TOP_PROC_HIST + 1], t[2 * TOP_PROC_HIST + 16];
    top_fmt_spark(mem, h->len, sw, a);
    top_fmt_spark(sm, h->len, sw, b);
    snprintf(t, sizeof t, "%s%s%s", a, lsm, b);
    add(l, lmem, t);
}

static void gpu_lines(const top_proc *p, int width, lines *l)
{
    if (!p->ngpus) {
        add(l, "  GPUs     ", "NVML lists it on no GPU");
        return;
    }
    for (unsigned i = 0; i < p->ngpus; i++) {
        const vyre_gpu_proc_dev *d = &p->gpus[i];
        char mem[16], sm[16], t[96];
        top_fmt_bytes(d->mem_bytes, d->mem_valid, mem, sizeof mem);
        top_fmt_pct(d->util_valid ? (double)d->sm_util_pct : NAN, sm, sizeof sm);
        snprintf(t, sizeof t, "GPU %d: memory %s, SM %s", d->device, mem, sm);
        add(l, "  ", t);
        history_line(p, d->device, width, l);
    }
}

static void telemetry_lines(const top_snapshot *s, size_t idx, const top_proc *p, lines *l)
{
    if (!p->telemetry) {
        add(l, "  vyre     ", "no vyre telemetry (figures unknown)");
        return;
    }
    char la[16], gr[16], di[16], h[16], d[16], dd[16], t[LINE_MAX_W];
    top_fmt_rate(p->launches_s, la, sizeof la);
    top_fmt_rate(p->graphs_s, gr, sizeof gr);
    top_fmt_rate(p->dispatches_s, di, sizeof di);
    top_fmt_mbs(p->h2d_mb_s, h, sizeof h);
    top_fmt_mbs(p->d2h_mb_s, d, sizeof d);
    top_fmt_mbs(p->d2d_mb_s, dd, sizeof dd);
    snprintf(t, sizeof t, "launch/s %s  graph/s %s  disp/s %s  H2D %s  D2H %s  D2D %s MB/s", la, gr,
             di, h, d, dd);
    add(l, "  rates    ", t);
    unsigned char *keep = calloc(s->nprocs ? s->nprocs : 1, 1);
    if (!keep)
        return;
    keep[idx] = 1;
    top_range r[VYRE_RANGE_COUNT];
    top_aggregate_ranges(s, keep, r);
    for (int i = 0; i < VYRE_RANGE_COUNT; i++) {
        if (!r[i].count)
            continue;
        char p50[16], p99[16];
        top_fmt_ns((double)r[i].p50_ns, 1, p50, sizeof p50);
        top_fmt_ns((double)r[i].p99_ns, 1, p99, sizeof p99);
        snprintf(t, sizeof t, "%s  count %llu  p50 %s  p99 %s", r[i].name,
                 (unsigned long long)r[i].count, p50, p99);
        add(l, "  range    ", t);
    }
    top_kernel *k = NULL;
    int sampled = 0;
    size_t nk = top_aggregate_kernels(s, keep, &k, &sampled);
    for (size_t i = 0; i < nk && i < 5; i++) {
        char cs[16];
        top_fmt_rate(k[i].calls_s, cs, sizeof cs);
        snprintf(t, sizeof t, "%s  %s calls/s", k[i].name, cs);
        add(l, "  kernel   ", t);
    }
    free(k);
    free(keep);
}

void top_view_draw_detail(top_grid *g, const top_snapshot *s, top_ui *ui)
{
    size_t idx = 0;
    while (idx < s->nprocs && s->procs[idx].pid != ui->detail_pid)
        idx++;
    lines *l = calloc(1, sizeof *l);
    if (!l)
        return;
    if (idx == s->nprocs) {
        char a[16];
        snprintf(a, sizeof a, "%d", (int)ui->detail_pid);
        add(l, "Process ", a);
        add(l, "  has exited", "  (any key closes)");
    } else {
        const top_proc *p = &s->procs[idx];
        host_lines(s, p, l);
        gpu_lines(p, top_grid_clampw(g->cols), l);
        telemetry_lines(s, idx, p, l);
    }
    int top = g->rows > 2 ? 1 : 0;
    for (int y = top; y < g->rows - (g->rows > 2 ? 1 : 0); y++)
        top_grid_put(g, y, 0, g->cols, y - top < l->n ? l->text[y - top] : "", TOP_A_HELP, 1);
    free(l);
}
