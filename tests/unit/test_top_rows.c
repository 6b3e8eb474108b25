/*
 * test_top_rows.c - one processes-panel row per process and GPU (issue 37,
 * point 2): libcore's per-GPU form of the join (vyre_gpu_join_devices) and
 * the rows vyre-top composes from it, as nvitop and nvidia-smi show them.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect.h"
#include "ui.h"
#include "view.h"
#include "vyre/gpu.h"

/* Two GPUs; pid 4242 on both (1 GiB and 37% on GPU 1, 512 MiB and 20% on
 * GPU 0), pid 77 on GPU 1 only with unknown memory. GPU 1 is sampled
 * first so that the per-GPU form has to order them by NVML index. */
static void two_gpus(vyre_gpu_snapshot *g)
{
    memset(g, 0, sizeof *g);
    g->ngpus = g->ngpus_total = 2;
    for (int i = 0; i < 2; i++) {
        vyre_gpu_info *gi = &g->gpus[i];
        gi->index = 1 - i;
        gi->valid = VYRE_GPU_F_PROCS;
    }
    vyre_gpu_info *g1 = &g->gpus[0], *g0 = &g->gpus[1];
    g1->nprocs = 2;
    g1->procs[0] = (vyre_gpu_process){.pid = 4242, .used_valid = 1, .used_bytes = 1ull << 30};
    g1->procs[0].util_valid = 1;
    g1->procs[0].sm_util_pct = 37;
    g1->procs[1] = (vyre_gpu_process){.pid = 77};
    g0->nprocs = 1;
    g0->procs[0] = (vyre_gpu_process){.pid = 4242, .used_valid = 1, .used_bytes = 512ull << 20};
    g0->procs[0].util_valid = 1;
    g0->procs[0].sm_util_pct = 20;
}

Test(top_rows, join_devices_gives_each_gpus_share_in_index_order)
{
    vyre_gpu_snapshot *g = calloc(1, sizeof *g);
    cr_assert_not_null(g);
    two_gpus(g);
    vyre_gpu_proc_dev d[VYRE_GPU_MAX];
    cr_assert_eq(vyre_gpu_join_devices(g, 4242, d, VYRE_GPU_MAX), 2);
    cr_assert_eq(d[0].device, 0);
    cr_assert_eq(d[0].mem_bytes, 512ull << 20);
    cr_assert_eq(d[0].sm_util_pct, 20);
    cr_assert(d[0].mem_valid && d[0].util_valid);
    cr_assert_eq(d[1].device, 1);
    cr_assert_eq(d[1].mem_bytes, 1ull << 30);
    cr_assert_eq(d[1].sm_util_pct, 37);
    /* The summed row of the join agrees with its per-GPU form. */
    vyre_gpu_proc_row *rows = NULL;
    size_t n = 0;
    cr_assert_eq(vyre_gpu_join(g, NULL, 0, SIZE_MAX, &rows, &n, NULL), VYRE_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(rows[1].pid, 4242);
    cr_assert_eq(rows[1].ngpus, 2);
    cr_assert_eq(rows[1].mem_bytes, d[0].mem_bytes + d[1].mem_bytes);
    cr_assert_eq(rows[1].sm_util_pct, 37);
    vyre_free(rows);
    /* Unknown memory stays unknown; a short array gets the first; bad
     * arguments give none. */
    cr_assert_eq(vyre_gpu_join_devices(g, 77, d, VYRE_GPU_MAX), 1);
    cr_assert_eq(d[0].device, 1);
    cr_assert(!d[0].mem_valid && !d[0].util_valid);
    memset(d, 0xff, sizeof d);
    cr_assert_eq(vyre_gpu_join_devices(g, 4242, d, 1), 2);
    cr_assert_eq(d[1].device, -1, "nothing written past max");
    cr_assert_eq(vyre_gpu_join_devices(g, 4242, NULL, 0), 2);
    cr_assert_eq(vyre_gpu_join_devices(g, 5, d, VYRE_GPU_MAX), 0);
    cr_assert_eq(vyre_gpu_join_devices(g, 0, d, VYRE_GPU_MAX), 0);
    cr_assert_eq(vyre_gpu_join_devices(NULL, 4242, d, VYRE_GPU_MAX), 0);
    /* A GPU whose process list is not valid lists nobody. */
    g->gpus[0].valid = 0;
    cr_assert_eq(vyre_gpu_join_devices(g, 4242, d, VYRE_GPU_MAX), 1);
    cr_assert_eq(d[0].device, 0);
    free(g);
}

/* A snapshot of one process on two GPUs (pid 4242, with its host and vyre
 * figures) and one on none (pid 900). */
static top_snapshot *snap(void)
{
    top_snapshot *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    s->tel_ok = 1;
    s->interval_s = 1.0;
    s->nprocs = 2;
    s->procs = calloc(2, sizeof *s->procs);
    cr_assert_not_null(s->procs);
    top_proc *p = &s->procs[0];
    p->pid = 900;
    snprintf(p->name, sizeof p->name, "idle_proc");
    p->device = -1;
    p->sm_util_pct = p->cpu_pct = p->launches_s = p->graphs_s = p->dispatches_s = NAN;
    p->h2d_mb_s = p->d2h_mb_s = p->d2d_mb_s = p->cache_hit_pct = p->compile_saved_s = NAN;
    p = &s->procs[1];
    p->pid = 4242;
    p->telemetry = p->published = 1;
    snprintf(p->name, sizeof p->name, "two_gpu_proc");
    snprintf(p->cmdline, sizeof p->cmdline, "two_gpu_proc --train");
    p->host.uid_valid = p->host.rss_valid = 1;
    snprintf(p->host.user, sizeof p->host.user, "alice");
    p->host.rss_bytes = 3ull << 20;
    p->cpu_pct = 150;
    p->launches_s = 1234;
    p->graphs_s = p->dispatches_s = 10;
    p->h2d_mb_s = p->d2h_mb_s = p->d2d_mb_s = 1.5;
    p->cache_hit_pct = 75;
    p->compile_saved_s = 3;
    p->device = 0;
    p->gpu_mem_valid = 1;
    p->gpu_mem_bytes = (1ull << 30) + (512ull << 20);
    p->sm_util_pct = 37;
    p->ngpus = 2;
    p->gpus[0] = (vyre_gpu_proc_dev){0, 1, 512ull << 20, 1, 20};
    p->gpus[1] = (vyre_gpu_proc_dev){1, 1, 1ull << 30, 1, 37};
    return s;
}

/* The rows of the frame that start (after spaces) with "<pid> ". */
static int rows_of(const top_grid *g, int pid, const char **out, int max)
{
    char pat[16];
    snprintf(pat, sizeof pat, "%d ", pid);
    int n = 0;
    for (int y = 0; y < g->rows && n < max; y++) {
        const char *r = top_grid_row(g, y);
        const char *t = r + strspn(r, " >");
        if (strncmp(t, pat, strlen(pat)) == 0)
            out[n++] = r;
    }
    return n;
}

static int words(const char *row, char w[][64], int max)
{
    int n = 0;
    for (const char *p = row; *p && n < max;) {
        p += strspn(p, " ");
        size_t len = strcspn(p, " ");
        if (!len)
            break;
        snprintf(w[n++], 64, "%.*s", (int)len, p);
        p += len;
    }
    return n;
}

Test(top_rows, a_process_on_two_gpus_is_two_rows_own_columns_on_the_first)
{
    top_snapshot *s = snap();
    top_ui ui;
    top_ui_init(&ui, 1.0);
    static const int sizes[][2] = {{24, 80}, {40, 120}, {50, 200}, {80, 300}};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        top_grid g;
        cr_assert_eq(top_view_compose(s, &ui, sizes[z][0], sizes[z][1], 0, &g), 0);
        const char *r[4];
        cr_assert_eq(rows_of(&g, 4242, r, 4), 2, "%dx%d: two rows", sizes[z][1], sizes[z][0]);
        cr_assert_lt(r[0], r[1]);
        char a[24][64], b[24][64];
        int na = words(r[0], a, 24), nb = words(r[1], b, 24);
        /* PID USER NAME GPU SM% GPU-MEM CPU% ... on the first row */
        cr_assert_geq(na, 8, "%s", r[0]);
        cr_assert_str_eq(a[1], "alice");
        cr_assert_str_eq(a[2], "two_gpu_proc");
        cr_assert_str_eq(a[3], "0");
        cr_assert_str_eq(a[4], "20.0%");
        cr_assert_str_eq(a[5], "512M");
        cr_assert_str_eq(a[6], "150%", "%s", r[0]);
        /* The second: the same PID and name, GPU 1's share, nothing else. */
        cr_assert_eq(nb, 5, "%dx%d: '%s'", sizes[z][1], sizes[z][0], r[1]);
        cr_assert_str_eq(b[0], "4242");
        cr_assert_str_eq(b[1], "two_gpu_proc");
        cr_assert_str_eq(b[2], "1");
        cr_assert_str_eq(b[3], "37.0%");
        cr_assert_str_eq(b[4], "1.00G");
        /* A process on no GPU keeps its one row. */
        cr_assert_eq(rows_of(&g, 900, r, 4), 1);
        cr_assert_eq(ui.nrows[TOP_P_PROC], 3, "the panel counts rows, not processes");
        top_grid_release(&g);
    }
    /* `k` on the second row acts on the process of that row. */
    ui.focus = TOP_P_PROC;
    top_grid g;
    for (int sel = 0; sel < 3; sel++) {
        ui.sel[TOP_P_PROC] = sel;
        cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
        cr_assert_eq(ui.sel_pid, sel == 2 ? 900 : 4242, "row %d", sel);
        top_grid_release(&g);
    }
    top_snapshot_release(s);
    free(s);
}

static int has_text(const top_grid *g, const char *needle)
{
    for (int y = 0; y < g->rows; y++)
        if (strstr(top_grid_row(g, y), needle))
            return 1;
    return 0;
}

/* Enter on a process shows its details: each GPU's share, its command
 * line and user, its rates; any key closes them. */
Test(top_rows, enter_shows_the_process_detail_per_gpu)
{
    top_snapshot *s = snap();
    top_ui ui;
    top_ui_init(&ui, 1.0);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
    top_grid_release(&g);
    cr_assert_eq(ui.sel_pid, 4242);
    cr_assert_eq(top_ui_key(&ui, TOP_KEY_ENTER), TOP_UI_REDRAW);
    cr_assert(ui.detail);
    cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
    cr_assert(has_text(&g, "Process 4242 (two_gpu_proc)"));
    cr_assert(has_text(&g, "  user     alice"));
    cr_assert(has_text(&g, "  command  two_gpu_proc --train"));
    cr_assert(has_text(&g, "GPU 0: memory 512M, SM 20.0%"));
    cr_assert(has_text(&g, "GPU 1: memory 1.00G, SM 37.0%"));
    cr_assert(has_text(&g, "  rates    launch/s ") && has_text(&g, "graph/s 10  disp/s 10"));
    top_grid_release(&g);
    cr_assert_eq(top_ui_key(&ui, 'x'), TOP_UI_REDRAW);
    cr_assert_not(ui.detail);
    /* Another panel's Enter does nothing; a process on no GPU says so. */
    ui.focus = TOP_P_GPU;
    cr_assert_eq(top_ui_key(&ui, TOP_KEY_ENTER), 0);
    ui.focus = TOP_P_PROC;
    ui.detail = 1;
    ui.detail_pid = 900;
    cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
    cr_assert(has_text(&g, "NVML lists it on no GPU"));
    cr_assert(has_text(&g, "no vyre telemetry"));
    top_grid_release(&g);
    ui.detail_pid = 31337;
    cr_assert_eq(top_view_compose(s, &ui, 24, 80, 0, &g), 0);
    cr_assert(has_text(&g, "has exited"));
    top_grid_release(&g);
    top_snapshot_release(s);
    free(s);
}

/* t: the processes under their parents, ancestors that are not rows (a
 * shell, torchrun) included; t again: the flat list. */
Test(top_rows, tree_shows_processes_under_their_parents)
{
    top_snapshot *s = snap();
    s->procs[0].ppid = 800;
    s->procs[1].ppid = 800;
    s->nanc = 3;
    s->anc = calloc(3, sizeof *s->anc);
    cr_assert_not_null(s->anc);
    s->anc[0] = (top_ancestor){800, 700, "torchrun"};
    s->anc[1] = (top_ancestor){700, 1, "bash"};
    s->anc[2] = (top_ancestor){650, 1, "unrelated"}; /* above no row: not drawn */
    top_ui ui;
    top_ui_init(&ui, 1.0);
    cr_assert_eq(top_ui_key(&ui, 't'), TOP_UI_REDRAW);
    cr_assert(ui.tree);
    top_grid g;
    cr_assert_eq(top_view_compose(s, &ui, 40, 120, 0, &g), 0);
    const char *r[4];
    cr_assert_eq(rows_of(&g, 700, r, 4), 1);
    const char *bash = r[0];
    cr_assert(strstr(bash, " bash "), "%s", bash);
    cr_assert_eq(rows_of(&g, 800, r, 4), 1);
    const char *torchrun = r[0];
    cr_assert(strstr(torchrun, " `-torchrun "), "%s", torchrun);
    cr_assert_eq(rows_of(&g, 4242, r, 4), 2, "still a row per GPU");
    cr_assert(strstr(r[0], "   `-two_gpu_proc "), "%s", r[0]);
    const char *worker = r[0];
    cr_assert_eq(rows_of(&g, 900, r, 4), 1);
    cr_assert(strstr(r[0], "   `-idle_proc "), "%s", r[0]);
    cr_assert(bash < torchrun && torchrun < worker && worker < r[0], "depth first");
    cr_assert_eq(rows_of(&g, 650, r, 4), 0, "an ancestor above no row is not drawn");
    cr_assert_eq(ui.nrows[TOP_P_PROC], 5);
    top_grid_release(&g);
    top_ui_key(&ui, 't');
    cr_assert_eq(top_view_compose(s, &ui, 40, 120, 0, &g), 0);
    cr_assert_eq(rows_of(&g, 800, r, 4), 0, "flat again");
    cr_assert_eq(ui.nrows[TOP_P_PROC], 3);
    top_grid_release(&g);
    top_snapshot_release(s);
    free(s);
}
