/*
 * format.c - see format.h. Pure functions only.
 */
#include "format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tool_sanitize.h"

void top_fmt_cell(char *dst, int w, const char *s, int right)
{
    if (w <= 0) {
        if (w == 0)
            dst[0] = '\0';
        return;
    }
    /* Cell text (process, range, kernel and GPU names) comes from pages,
     * /proc and NVML: shown through tool_clean, so a C1 control or a bad
     * UTF-8 byte is "\u009b" or "\xff" on the screen and in --batch, never
     * a byte the terminal obeys. Only what can fit is cleaned. */
    char clean[1024];
    size_t cap = (size_t)w + 2 < sizeof clean ? (size_t)w + 2 : sizeof clean;
    const char *c = tool_clean(s, clean, cap);
    /* Cut: w - 1 cells of text (never inside an escape) and an ellipsis in
     * the last (issue 37: never a silent cut). */
    int cut = strlen(c) > (size_t)w;
    if (cut)
        c = tool_clean(s, clean, (size_t)w < sizeof clean ? (size_t)w : sizeof clean);
    s = c;
    size_t len = strlen(s);
    size_t room = (size_t)w - (cut ? 1 : 0);
    size_t n = len < room ? len : room;
    size_t pad = (size_t)w - n;
    if (right) {
        memset(dst, ' ', pad);
        memcpy(dst + pad, s, n);
    } else {
        memcpy(dst, s, n);
        memset(dst + n, ' ', pad);
    }
    if (cut)
        dst[w - 1] = TOP_ELLIPSIS;
    dst[w] = '\0';
}

void top_fmt_rate(double v, char *buf, size_t size)
{
    if (isnan(v) || v < 0)
        snprintf(buf, size, "-");
    else if (v == 0)
        snprintf(buf, size, "0");
    else if (v < 10)
        snprintf(buf, size, "%.1f", v);
    else if (v < 9999.5)
        snprintf(buf, size, "%.0f", v);
    else if (v < 99950)
        snprintf(buf, size, "%.1fk", v / 1e3);
    else if (v < 999500)
        snprintf(buf, size, "%.0fk", v / 1e3);
    else if (v < 99950000)
        snprintf(buf, size, "%.1fM", v / 1e6);
    else
        snprintf(buf, size, "%.0fM", v / 1e6);
}

void top_fmt_mbs(double v, char *buf, size_t size)
{
    if (isnan(v) || v < 0)
        snprintf(buf, size, "-");
    else if (v < 999.95)
        snprintf(buf, size, "%.1f", v);
    else
        snprintf(buf, size, "%.0f", v);
}

void top_fmt_pct(double v, char *buf, size_t size)
{
    if (isnan(v) || v < 0)
        snprintf(buf, size, "-");
    else if (v >= 99.95)
        snprintf(buf, size, "%.0f%%", v);
    else
        snprintf(buf, size, "%.1f%%", v);
}

void top_fmt_ns(double ns, int valid, char *buf, size_t size)
{
    if (!valid || isnan(ns) || ns < 0)
        snprintf(buf, size, "-");
    else if (ns < 999.5)
        snprintf(buf, size, "%.0fns", ns);
    else if (ns < 99950)
        snprintf(buf, size, "%.1fus", ns / 1e3);
    else if (ns < 999500)
        snprintf(buf, size, "%.0fus", ns / 1e3);
    else if (ns < 9.995e6)
        snprintf(buf, size, "%.2fms", ns / 1e6);
    else if (ns < 999.5e6)
        snprintf(buf, size, "%.1fms", ns / 1e6);
    else if (ns < 59.995e9)
        snprintf(buf, size, "%.2fs", ns / 1e9);
    else {
        unsigned long long s = (unsigned long long)(ns / 1e9);
        snprintf(buf, size, "%llum%02llus", s / 60, s % 60);
    }
}

void top_fmt_secs(double s, char *buf, size_t size)
{
    if (isnan(s) || s < 0)
        snprintf(buf, size, "-");
    else if (s == 0)
        snprintf(buf, size, "0s");
    else if (s < 59.95)
        snprintf(buf, size, "%.1fs", s);
    else if (s < 3600)
        snprintf(buf, size, "%.0fm", s / 60);
    else
        snprintf(buf, size, "%.1fh", s / 3600);
}

void top_fmt_started(double start_unix, double now_unix, char *buf, size_t size)
{
    if (!(start_unix > 0) || start_unix > 1e15) { /* 0: never a process start */
        snprintf(buf, size, "unknown");
        return;
    }
    time_t t = (time_t)start_unix;
    struct tm tm;
    char when[40] = "";
    if (!localtime_r(&t, &tm) || !strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm)) {
        snprintf(buf, size, "unknown");
        return;
    }
    double ago = now_unix - start_unix;
    if (isnan(ago) || ago < 0) {
        snprintf(buf, size, "%s", when);
        return;
    }
    unsigned long long a = (unsigned long long)ago;
    if (a >= 86400)
        snprintf(buf, size, "%s (%llud %02lluh ago)", when, a / 86400, a % 86400 / 3600);
    else if (a >= 3600)
        snprintf(buf, size, "%s (%lluh %02llum ago)", when, a / 3600, a % 3600 / 60);
    else if (a >= 60)
        snprintf(buf, size, "%s (%llum %02llus ago)", when, a / 60, a % 60);
    else
        snprintf(buf, size, "%s (%llus ago)", when, a);
}

void top_fmt_bytes(uint64_t b, int valid, char *buf, size_t size)
{
    if (!valid) {
        snprintf(buf, size, "-");
        return;
    }
    static const char units[] = "BKMGTPE";
    double v = (double)b;
    int u = 0;
    while (v >= 1023.95 && u < 6) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%lluB", (unsigned long long)b);
    else if (v < 9.995)
        snprintf(buf, size, "%.2f%c", v, units[u]);
    else if (v < 99.95)
        snprintf(buf, size, "%.1f%c", v, units[u]);
    else
        snprintf(buf, size, "%.0f%c", v, units[u]);
}

static size_t dim_text(const uint32_t d[3], char *buf, size_t size)
{
    int nd = 3;
    while (nd > 1 && d[nd - 1] == 1)
        nd--;
    int n = 0;
    if (nd == 1)
        n = snprintf(buf, size, "%u", d[0]);
    else if (nd == 2)
        n = snprintf(buf, size, "%ux%u", d[0], d[1]);
    else
        n = snprintf(buf, size, "%ux%ux%u", d[0], d[1], d[2]);
    return n < 0 ? 0 : (size_t)n;
}

void top_fmt_dims(const uint32_t grid[3], const uint32_t block[3], char *buf, size_t size)
{
    char g[40], b[40];
    dim_text(grid, g, sizeof g);
    dim_text(block, b, sizeof b);
    snprintf(buf, size, "%s/%s", g, b);
}

void top_fmt_bar(double pct, int w, char *dst)
{
    char num[16];
    if (isnan(pct) || pct < 0)
        snprintf(num, sizeof num, "-");
    else
        snprintf(num, sizeof num, "%.0f%%", pct > 100 ? 100.0 : pct);
    if (w <= 0) {
        if (w == 0)
            dst[0] = '\0';
        return;
    }
    if (w < 3) {
        /* The percentage cut to w: a meter, not text, so no ellipsis. */
        if (strlen(num) > (size_t)w)
            num[w] = '\0';
        top_fmt_cell(dst, w, num, 1);
        return;
    }
    int inner = w - 2;
    dst[0] = '[';
    dst[w - 1] = ']';
    int fill = 0;
    if (!isnan(pct) && pct > 0)
        fill = (int)((pct > 100 ? 100 : pct) * inner / 100.0 + 0.5);
    for (int i = 0; i < inner; i++)
        dst[1 + i] = i < fill ? '|' : ' ';
    size_t nl = strlen(num);
    if ((int)nl <= inner) /* the number overwrites the right end of the bar */
        memcpy(dst + 1 + inner - (int)nl, num, nl);
    dst[w] = '\0';
}

void top_fmt_spark(const uint8_t *samples, unsigned n, int w, char *dst)
{
    if (w <= 0) {
        if (w == 0)
            dst[0] = '\0';
        return;
    }
    memset(dst, ' ', (size_t)w);
    dst[w] = '\0';
    unsigned take = n < (unsigned)w ? n : (unsigned)w;
    for (unsigned i = 0; i < take; i++) {
        uint8_t v = samples[n - take + i];
        if (v > 100)
            continue; /* unknown stays blank */
        int level = 1 + (v * (TOP_SPARK_MAX - TOP_SPARK_MIN) + 50) / 100;
        dst[(unsigned)w - take + i] = (char)level;
    }
}

int top_cols_fit(const top_col *cols, int n, int width, int *w_out)
{
    int used = 0, shown = 0, flex = -1;
    for (int i = 0; i < n; i++)
        w_out[i] = 0;
    /* Columns in priority order: lowest prio first; stable by index. */
    for (int p = 0; p <= 100; p++) {
        for (int i = 0; i < n; i++) {
            if (cols[i].prio != p)
                continue;
            int need = cols[i].width + (shown ? 1 : 0);
            if (used + need > width)
                goto done;
            w_out[i] = cols[i].width;
            used += need;
            shown++;
            if (cols[i].flex)
                flex = i;
        }
    }
done:
    if (flex >= 0 && width > used)
        w_out[flex] += width - used;
    return shown;
}

int top_cols_fit_want(const top_col *cols, int n, int width, const int *want, int *w_out)
{
    /* The minimums, by priority, as top_cols_fit chooses them. */
    top_col c[TOP_COLS_MAX] = {0}; /* gcc -O2: "may be used uninitialized" at n <= 0 */
    if (n > TOP_COLS_MAX)
        n = TOP_COLS_MAX;
    int nflex = 0;
    for (int i = 0; i < n; i++) {
        c[i] = cols[i];
        nflex += c[i].flex != 0;
        c[i].flex = 0;
    }
    int shown = top_cols_fit(c, n, width, w_out);
    int used = -1;
    for (int i = 0; i < n; i++)
        used += w_out[i] ? w_out[i] + 1 : 0;
    int spare = width - (used < 0 ? 0 : used);
    /* Each shown column up to what its content asks, in priority order. */
    for (int p = 0; p <= 100 && spare > 0; p++)
        for (int i = 0; i < n && spare > 0; i++) {
            if (cols[i].prio != p || !w_out[i] || !want || want[i] <= w_out[i])
                continue;
            int add = want[i] - w_out[i] < spare ? want[i] - w_out[i] : spare;
            w_out[i] += add;
            spare -= add;
        }
    /* The rest to the flex columns, shared evenly (the first gets the odd
     * cells). */
    int nshown_flex = 0;
    for (int i = 0; i < n; i++)
        nshown_flex += cols[i].flex && w_out[i];
    for (int i = 0, k = 0; i < n && nshown_flex && nflex; i++) {
        if (!cols[i].flex || !w_out[i])
            continue;
        int add = spare / nshown_flex + (k == 0 ? spare % nshown_flex : 0);
        w_out[i] += add;
        k++;
    }
    return shown;
}

void top_fmt_row(const top_col *cols, const int *w, int n, const char *const *cells, int width,
                 char *dst)
{
    if (width <= 0) {
        if (width == 0)
            dst[0] = '\0';
        return;
    }
    memset(dst, ' ', (size_t)width);
    dst[width] = '\0';
    int x = 0;
    for (int i = 0; i < n && x < width; i++) {
        if (w[i] <= 0)
            continue;
        if (x > 0)
            x++; /* separator */
        int cw = w[i];
        if (x + cw > width)
            cw = width - x;
        if (cw <= 0)
            break;
        char cell[1024];
        if (cw > (int)sizeof cell - 1)
            cw = (int)sizeof cell - 1;
        top_fmt_cell(cell, cw, cells[i] ? cells[i] : "", cols[i].right);
        memcpy(dst + x, cell, (size_t)cw);
        x += cw;
    }
}

/* "limit 5.00G (24%)", "OVER its 5.00G limit" or "no limit"; 1 when over. */
static int usage_limit(const tool_usage_fig *f, char *buf, size_t size)
{
    uint64_t lim = f->where.limit_bytes;
    char l[16];
    top_fmt_bytes(lim, 1, l, sizeof l);
    if (!lim) {
        snprintf(buf, size, "no limit");
        return 0;
    }
    if (f->u.bytes > lim) {
        snprintf(buf, size, "OVER its %s limit", l);
        return 1;
    }
    snprintf(buf, size, "limit %s (%.0f%%)", l, 100.0 * (double)f->u.bytes / (double)lim);
    return 0;
}

/* "fs 91% full, 12.0G free", "fs 95% full (inodes), 12.0G free" or "fs -". */
static void usage_fs(const tool_usage_fig *f, char *buf, size_t size)
{
    double pct = tool_usage_fs_pct(f);
    if (pct < 0) {
        snprintf(buf, size, "fs -");
        return;
    }
    char avail[16];
    top_fmt_bytes(f->u.fs_avail_bytes, 1, avail, sizeof avail);
    int inodes = vyre_usage_inodes_full_pct(&f->u) > vyre_usage_fs_full_pct(&f->u);
    snprintf(buf, size, "fs %.0f%% full%s, %s free", pct, inodes ? " (inodes)" : "", avail);
}

int top_fmt_usage(const tool_usage_fig *f, char *buf, size_t size)
{
    const vyre_usage_cache *w = &f->where;
    const char *name = w->name ? w->name : "?";
    /* Paths come from the environment and messages quote them: shown
     * through the sanitiser, as every name vyre did not write. */
    char clean[TOOL_USAGESNAP_MSG_MAX * 4 + VYRE_USAGE_PATH_MAX];
    if (f->state != TOOL_USAGE_OK) {
        snprintf(buf, size, "%-8s cannot measure: %s", name,
                 tool_clean(f->msg, clean, sizeof clean));
        return 1;
    }
    const char *path = tool_clean(w->path, clean, sizeof clean);
    char lim[48], fs[64], size_s[24], files[24];
    int over = usage_limit(f, lim, sizeof lim);
    usage_fs(f, fs, sizeof fs);
    if (!f->u.exists) {
        snprintf(buf, size, "%-8s %-32s %-26s %s (%s)", name, "not created yet", fs, path,
                 w->path_from);
    } else {
        char b[16];
        top_fmt_bytes(f->u.bytes, 1, b, sizeof b);
        snprintf(size_s, sizeof size_s, "%s%s", f->u.partial ? ">" : "", b);
        if (f->u.files < 10) /* a count, not a rate: "7", not "7.0" */
            snprintf(b, sizeof b, "%u", (unsigned)f->u.files);
        else
            top_fmt_rate((double)f->u.files, b, sizeof b);
        snprintf(files, sizeof files, "%s%s files", f->u.partial ? ">" : "", b);
        snprintf(buf, size, "%-8s %6s %12s  %-20s %-26s %s (%s)", name, size_s, files, lim, fs,
                 path, w->path_from);
    }
    return over || tool_usage_fs_pct(f) >= TOOL_USAGE_FS_WARN_PCT;
}
