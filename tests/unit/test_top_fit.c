/*
 * test_top_fit.c - a layout that uses the terminal (issue 37, point 1) and
 * the views nvitop users expect (point 3), on vyre-top's pure parts: column
 * widths that grow with the width, text cut only with an ellipsis and only
 * when there is no room, spare rows given to a panel, the help reachable at
 * 80x24, reverse sort, sort keys of shown columns, the host row, and the
 * host's figures read from a fake /proc. Frames at 80x24, 120x40, 200x50
 * and 300x80.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collect.h"
#include "format.h"
#include "layout.h"
#include "testutil.h"
#include "ui.h"
#include "view.h"
#include "vyre/proc.h"

#define LONG_CMD                                                                                   \
    "python train.py --config configs/very/long/path/to/an/experiment/config.yaml --seed 1234"
#define LONG_PATH "/home/someone/.cache/a-rather-long-directory-name-for-caches/vyre/ptx-cache"

/* Two GPUs (long names, throttle reasons), three processes with long
 * command lines, four caches with long paths. */
static top_snapshot *snap(void)
{
    top_snapshot *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    s->interval_s = 1.0;
    s->tel_ok = 1;
    s->gpu_ok = 1;
    s->gpu.ngpus = s->gpu.ngpus_total = 2;
    for (int i = 0; i < 2; i++) {
        vyre_gpu_info *g = &s->gpu.gpus[i];
        g->index = i;
        g->valid = VYRE_GPU_F_NAME | VYRE_GPU_F_UTIL | VYRE_GPU_F_MEMORY | VYRE_GPU_F_THROTTLE;
        snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3 Fake %d", i);
        snprintf(g->throttle_text, sizeof g->throttle_text, "power,thermal,sw_slowdown");
        g->util_gpu_pct = 50;
        g->mem_used_bytes = 40ull << 30;
        g->mem_total_bytes = 80ull << 30;
    }
    s->nprocs = 3;
    s->procs = calloc(3, sizeof *s->procs);
    cr_assert_not_null(s->procs);
    for (int i = 0; i < 3; i++) {
        top_proc *p = &s->procs[i];
        p->pid = 2000 + i;
        p->telemetry = p->published = 1;
        snprintf(p->name, sizeof p->name, "%s", i == 2 ? "a_long_process_name_x" : "trainer");
        snprintf(p->cmdline, sizeof p->cmdline, "%s %d", LONG_CMD, i);
        p->device = -1;
        p->launches_s = 100.0 * (i + 1);
        p->graphs_s = p->dispatches_s = p->h2d_mb_s = p->d2h_mb_s = p->d2d_mb_s = 1;
        p->cache_hit_pct = p->compile_saved_s = p->sm_util_pct = p->cpu_pct = NAN;
        p->d2h_mb_s = 3.0 - i;
    }
    s->cache_state = TOP_CACHE_OK;
    snprintf(s->cache_root, sizeof s->cache_root, "%s", LONG_PATH);
    static const char *const names[] = {"vyre", "cuda_jit", "triton", "inductor"};
    s->usage_on = 1;
    s->usage_every_s = 30;
    s->usage_age_s = 5;
    s->usage.rounds = 1;
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        tool_usage_fig *f = &s->usage.c[i];
        f->where.name = names[i];
        f->where.located = 1;
        f->where.path_from = "XDG_CACHE_HOME";
        snprintf(f->where.path, sizeof f->where.path, "%s-%s", LONG_PATH, names[i]);
        f->u.exists = 1;
        f->u.bytes = 1000u;
        f->u.files = 3;
        f->u.fs_valid = 1;
        f->u.fs_size_bytes = 1000000;
        f->u.fs_free_bytes = f->u.fs_avail_bytes = 500000;
    }
    s->host_ok = 1;
    s->host.mem_valid = s->host.swap_valid = s->host.load_valid = 1;
    s->host.mem_total_bytes = 64ull << 30;
    s->host.mem_avail_bytes = 32ull << 30;
    s->host.swap_total_bytes = 8ull << 30;
    s->host.swap_free_bytes = 8ull << 30;
    s->host.load[0] = 1.25;
    s->host_cpu_pct = 42;
    return s;
}

static void free_snap(top_snapshot *s)
{
    top_snapshot_release(s);
    free(s);
}

static int has(const top_grid *g, const char *needle)
{
    for (int y = 0; y < g->rows; y++)
        if (strstr(top_grid_row(g, y), needle))
            return 1;
    return 0;
}

/* The frame as text, for failure messages (static: one at a time). */
static const char *dump(const top_grid *g)
{
    static char buf[40000];
    size_t n = 0;
    for (int y = 0; y < g->rows && n + (size_t)g->cols + 2 < sizeof buf; y++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n", top_grid_row(g, y));
    return buf;
}

static int cut_cells(const top_grid *g)
{
    int n = 0;
    for (int y = 0; y < g->rows; y++)
        for (const char *p = top_grid_row(g, y); *p; p++)
            n += *p == TOP_ELLIPSIS;
    return n;
}

/* The width of the first "[...]" meter on the row holding needle. */
static int bar_width(const top_grid *g, const char *needle)
{
    for (int y = 0; y < g->rows; y++) {
        const char *r = top_grid_row(g, y);
        if (!strstr(r, needle))
            continue;
        const char *a = strchr(r, '['), *b = a ? strchr(a, ']') : NULL;
        return b ? (int)(b - a + 1) : 0;
    }
    return 0;
}

static const int g_sizes[][2] = {{24, 80}, {40, 120}, {50, 200}, {80, 300}};

Test(top_fit, text_whole_where_there_is_room_and_cut_with_an_ellipsis_where_not)
{
    top_snapshot *s = snap();
    top_ui ui;
    top_ui_init(&ui, 1.0);
    int prev_bar = 0;
    for (size_t z = 0; z < 4; z++) {
        int rows = g_sizes[z][0], cols = g_sizes[z][1];
        top_grid g;
        cr_assert_eq(top_view_compose(s, &ui, rows, cols, 0, &g), 0);
        for (int y = 0; y < rows; y++)
            cr_assert_eq((int)strlen(top_grid_row(&g, y)), cols);
        /* The GPU names are whole from 120 columns, the throttle reasons,
         * command lines and cache paths from 200. */
        if (cols >= 120)
            cr_assert(has(&g, "NVIDIA H100 80GB HBM3 Fake 1"), "%dx%d\n%s", cols, rows, dump(&g));
        if (cols >= 200)
            cr_assert(has(&g, "a_long_process_name_x"), "%dx%d\n%s", cols, rows, dump(&g));
        if (cols >= 200) {
            cr_assert(has(&g, "power,thermal,sw_slowdown"), "%dx%d\n%s", cols, rows, dump(&g));
            cr_assert(has(&g, LONG_PATH "-inductor (XDG_CACHE_HOME)"), "%dx%d\n%s", cols, rows,
                      dump(&g));
        }
        if (cols >= 300) {
            /* Every column shown, and the 90-character command lines whole. */
            cr_assert(has(&g, LONG_CMD " 2"), "%dx%d\n%s", cols, rows, dump(&g));
            cr_assert_eq(cut_cells(&g), 0, "%dx%d: nothing cut\n%s", cols, rows, dump(&g));
        }
        if (cols == 80) /* what is cut says so */
            cr_assert_gt(cut_cells(&g), 0, "%dx%d\n%s", cols, rows, dump(&g));
        /* The meters grow with the width. */
        int bw = bar_width(&g, "Fake 0");
        cr_assert_geq(bw, prev_bar, "%dx%d\n%s", cols, rows, dump(&g));
        if (cols >= 200)
            cr_assert_gt(bw, prev_bar, "%dx%d: the bar grew (%d)", cols, rows, bw);
        prev_bar = bw;
        /* No blank rows below the panels: the last one ends at the footer. */
        int bottom = 0;
        for (int i = 0; i < TOP_NPANELS; i++) {
            top_rect r = g.layout.panel[i];
            if (r.h && r.y + r.h > bottom)
                bottom = r.y + r.h;
        }
        cr_assert_eq(bottom, g.layout.footer.y, "%dx%d\n%s", cols, rows, dump(&g));
        top_grid_release(&g);
    }
    free_snap(s);
}

Test(top_fit, columns_grow_to_their_content_then_flex_columns_share)
{
    static const top_col cols[] = {
        {"A", 4, 0, 0, 0}, {"NAME", 6, 0, 0, 0}, {"BAR1", 5, 0, 1, 1}, {"BAR2", 5, 0, 1, 1}};
    int want[4] = {0, 20, 0, 0}, w[4];
    for (int width = 0; width <= 120; width++) {
        top_cols_fit_want(cols, 4, width, want, w);
        int used = -1;
        for (int i = 0; i < 4; i++)
            used += w[i] ? w[i] + 1 : 0;
        cr_assert_leq(used, width < 0 ? 0 : width, "width %d: %d used", width, used);
    }
    top_cols_fit_want(cols, 4, 60, want, w);
    cr_assert_eq(w[0], 4);
    cr_assert_eq(w[1], 20, "the name whole first");
    cr_assert_eq(w[2] + w[3], 60 - 4 - 20 - 3, "the bars share the rest");
    cr_assert_leq(abs(w[2] - w[3]), 1);
    top_cols_fit_want(cols, 4, 20, want, w);
    cr_assert_eq(w[2], 5, "BAR1 at its minimum");
    cr_assert_eq(w[3], 0, "BAR2 hidden");
    cr_assert_eq(w[1], 20 - 4 - 5 - 2, "little room: the name takes what is left");
    char cell[8];
    top_fmt_cell(cell, 4, "abcdef", 0);
    cr_assert_eq(memcmp(cell, "abc\x0e", 4), 0);
    top_fmt_cell(cell, 6, "abcdef", 0);
    cr_assert_str_eq(cell, "abcdef", "exactly fits: not cut");
}

Test(top_fit, layout_spare_rows_go_to_the_panel_with_most_to_show)
{
    const int want[TOP_NPANELS] = {4, 3, 2, 9, 5};
    for (size_t z = 0; z < 4; z++) {
        top_layout l;
        top_layout_compute_w(g_sizes[z][0], g_sizes[z][1], want, NULL, 0, &l);
        int bottom = 0;
        for (int i = 0; i < TOP_NPANELS; i++)
            if (l.panel[i].h && l.panel[i].y + l.panel[i].h > bottom)
                bottom = l.panel[i].y + l.panel[i].h;
        cr_assert_eq(bottom, l.footer.y, "%dx%d", g_sizes[z][1], g_sizes[z][0]);
        if (g_sizes[z][0] >= 40)
            cr_assert_gt(l.panel[TOP_P_KERNEL].h, want[TOP_P_KERNEL] + 1,
                         "%dx%d: the kernels have the most to show", g_sizes[z][1], g_sizes[z][0]);
    }
}

Test(top_fit, help_fits_80x24_and_scrolls_to_every_line)
{
    top_snapshot *s = snap();
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_ui_key(&ui, 'h');
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
    cr_assert(has(&g, "vyre-top keys"));
    cr_assert(has(&g, "-- lines 1-"), "it says how to scroll");
    cr_assert_not(has(&g, "a scan stopped at its bound"), "the last line is below");
    cr_assert(has(&g, "  k          send a signal to the selected process: it"),
              "the longest help lines whole at 80 columns");
    top_grid_release(&g);
    int seen_last = 0;
    for (int i = 0; i < 10 && !seen_last; i++) {
        cr_assert_eq(top_ui_key(&ui, TOP_KEY_PGDN), TOP_UI_REDRAW);
        cr_assert(ui.help, "scrolling keeps the help open");
        cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
        seen_last = has(&g, "a scan stopped at its bound");
        top_grid_release(&g);
    }
    cr_assert(seen_last, "the last help line is reachable");
    top_ui_key(&ui, TOP_KEY_HOME);
    cr_assert_eq(ui.help_first, 0);
    top_ui_key(&ui, 'x');
    cr_assert_not(ui.help);
    free_snap(s);
}

/* The pids of the process rows, top to bottom. */
static int pids(const top_grid *g, int *out)
{
    int n = 0;
    for (int y = 0; y < g->rows; y++) {
        int pid = 0;
        const char *r = top_grid_row(g, y);
        if (sscanf(r + strspn(r, " >"), "%d ", &pid) == 1 && pid >= 2000 && pid < 2003)
            out[n++] = pid;
    }
    return n;
}

Test(top_fit, reverse_sort_and_sort_keys_of_shown_columns)
{
    top_snapshot *s = snap();
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    int p[8];
    cr_assert_eq(top_view_compose(s, &ui, 40, 120, 0, &g), 0);
    cr_assert_eq(pids(&g, p), 3);
    cr_assert_eq(p[0], 2002, "most launches/s first");
    top_grid_release(&g);
    cr_assert_eq(top_ui_key(&ui, 'r'), TOP_UI_REDRAW);
    cr_assert_eq(top_view_compose(s, &ui, 40, 120, 0, &g), 0);
    cr_assert(has(&g, "sort: launches/s reversed"));
    cr_assert_eq(pids(&g, p), 3);
    cr_assert_eq(p[0], 2000, "reversed: fewest first");
    cr_assert_eq(p[2], 2002);
    top_grid_release(&g);
    /* At 80 columns, s visits only orders whose column is shown. */
    ui.reverse[TOP_P_PROC] = 0;
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
        cr_assert_not(has(&g, "(column hidden)"), "sort %s at 80 columns",
                      top_sort_name(TOP_P_PROC, ui.sort[TOP_P_PROC]));
        top_grid_release(&g);
        top_ui_key(&ui, 's');
    }
    /* An order whose column a resize hid is named so in the title. */
    ui.sort[TOP_P_PROC] = 3; /* d2h */
    cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
    cr_assert(has(&g, "sort: d2h (column hidden)"));
    top_grid_release(&g);
    cr_assert_eq(top_view_compose(s, &ui, 50, 200, 0, &g), 0);
    cr_assert(has(&g, "sort: d2h  ") || has(&g, "sort: d2h "), "shown at 200 columns");
    cr_assert_not(has(&g, "(column hidden)"));
    top_grid_release(&g);
    free_snap(s);
}

Test(top_fit, host_row_shows_and_hides)
{
    top_snapshot *s = snap();
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 40, 120, 0, &g), 0);
    cr_assert_eq(g.layout.host.h, 1);
    const char *row = top_grid_row(&g, g.layout.host.y);
    cr_assert(strncmp(row, "CPU [", 5) == 0 && strstr(row, "42%]"), "%s", row);
    cr_assert(strstr(row, "32.0G/64.0G"), "%s", row);
    cr_assert(strstr(row, "Load 1.25 0.00 0.00"), "%s", row);
    top_grid_release(&g);
    cr_assert_eq(top_ui_key(&ui, 'o'), TOP_UI_REDRAW);
    cr_assert_eq(top_view_compose(s, &ui, 40, 120, 0, &g), 0);
    cr_assert_eq(g.layout.host.h, 0);
    cr_assert_not(has(&g, "CPU ["));
    top_grid_release(&g);
    /* --batch frames have no host row (their content is unchanged). */
    cr_assert_eq(top_view_compose(s, &ui, 0, 120, TOP_VIEW_BATCH, &g), 0);
    cr_assert_not(has(&g, "CPU ["));
    top_grid_release(&g);
    free_snap(s);
}

Test(top_fit, host_figures_from_a_fake_proc)
{
    char dir[512], path[600];
    tu_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/stat", dir);
    const char *st1 = "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0 0 0\n"
                      "cpu1 50 0 50 350 50 0 0 0 0 0\nintr 1\n";
    tu_write_file(path, st1, strlen(st1));
    snprintf(path, sizeof path, "%s/meminfo", dir);
    const char *mi = "MemTotal:       1000 kB\nMemFree:         100 kB\n"
                     "MemAvailable:     400 kB\nSwapTotal:       200 kB\nSwapFree:        150 kB\n";
    tu_write_file(path, mi, strlen(mi));
    snprintf(path, sizeof path, "%s/loadavg", dir);
    tu_write_file(path, "0.50 1.00 1.50 1/100 42\n", 24);
    vyre_proc_reader *r = NULL;
    cr_assert_eq(vyre_proc_reader_new(dir, &r, NULL), VYRE_OK);
    vyre_host_info a, b;
    cr_assert_eq(vyre_proc_read_host(r, &a, NULL), VYRE_OK);
    cr_assert(a.cpu_valid && a.mem_valid && a.swap_valid && a.load_valid);
    cr_assert_eq(a.cpu_total_ticks, 1000);
    cr_assert_eq(a.cpu_busy_ticks, 200, "idle and iowait are not busy");
    cr_assert_eq(a.ncpus, 2);
    cr_assert_eq(a.mem_total_bytes, 1000 * 1024);
    cr_assert_eq(a.mem_avail_bytes, 400 * 1024);
    cr_assert_eq(a.swap_free_bytes, 150 * 1024);
    cr_assert_float_eq(a.load[2], 1.5, 1e-9);
    snprintf(path, sizeof path, "%s/stat", dir);
    const char *st2 = "cpu  150 0 150 750 150 0 0 0 0 0\n";
    tu_write_file(path, st2, strlen(st2));
    cr_assert_eq(vyre_proc_read_host(r, &b, NULL), VYRE_OK);
    cr_assert_float_eq(vyre_host_cpu_pct(&a, &b), 50.0, 1e-9, "100 busy of 200 ticks");
    cr_assert(isnan(vyre_host_cpu_pct(&a, &a)), "no tick passed: unknown");
    cr_assert(isnan(vyre_host_cpu_pct(NULL, &b)));
    /* Nothing readable: an error, every flag off. */
    snprintf(path, sizeof path, "%s/none", dir);
    mkdir(path, 0700);
    vyre_proc_reader *e = NULL;
    cr_assert_eq(vyre_proc_reader_new(path, &e, NULL), VYRE_OK);
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_proc_read_host(e, &a, &err), VYRE_ENOENT);
    cr_assert_not(a.cpu_valid || a.mem_valid || a.swap_valid || a.load_valid);
    cr_assert_eq(vyre_proc_read_host(NULL, &a, NULL), VYRE_EINVAL);
    vyre_proc_reader_free(e);
    /* A parent from stat, past a name holding ") (". */
    snprintf(path, sizeof path, "%s/123", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/123/stat", dir);
    const char *pst = "123 (odd) (name) S 77 123 123 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 1 0 5\n";
    tu_write_file(path, pst, strlen(pst));
    int32_t ppid = -1;
    cr_assert_eq(vyre_proc_read_ppid(r, 123, &ppid), VYRE_OK);
    cr_assert_eq(ppid, 77);
    cr_assert_eq(vyre_proc_read_ppid(r, 124, &ppid), VYRE_ENOENT);
    cr_assert_eq(ppid, 0);
    tu_write_file(path, "123 (no close paren", 19);
    cr_assert_eq(vyre_proc_read_ppid(r, 123, &ppid), VYRE_ECORRUPT);
    cr_assert_eq(vyre_proc_read_ppid(r, 0, &ppid), VYRE_EINVAL);
    vyre_proc_reader_free(r);
    tu_rm_rf(dir);
}
