/*
 * view_help.c - see view_int.h: the help overlay's text and its drawing.
 * It fits 80x24 by scrolling (issue 37): every line is reachable.
 */
#include <stdio.h>
#include <string.h>

#include "view_int.h"

static const char *const g_help[] = {
    "vyre-top keys",
    "",
    "  q          quit",
    "  Tab, Left/Right  next / previous panel",
    "  Up/Down, PgUp/PgDn, Home/End  move in the panel",
    "  s, F6      next sort order of the panel (of the",
    "             columns shown)",
    "  r          reverse the panel's sort order",
    "  /          filter processes (name, command, pid);",
    "             Enter applies, Esc cancels",
    "  Esc        clear the filter",
    "  k          send a signal to the selected process: it",
    "             asks which (t TERM, i INT, K KILL; any",
    "             other key sends none); only your own",
    "             processes unless vyre-top runs as root",
    "  p, Space   pause / resume sampling",
    "  + / -      slower / faster refresh",
    "  C          colours on / off (NO_COLOR=1: off)",
    "  t          tree: the processes under their parents",
    "  Enter      details of the selected process (any key",
    "             closes them)",
    "  o          host row (CPU, memory, swap, load) on / off",
    "  h, ?       this help (arrows and pages scroll it,",
    "             any other key closes it)",
    "",
    "Rates are over the last interval ('-': not known yet).",
    "P50/P99 are of the last interval's ranges when there",
    "were any, else of the process's lifetime; MAX is lifetime.",
    "LAUNCH/s counts kernels, a graph replay's included;",
    "GRAPH/s counts graph launches. '~': estimated from",
    "a kernel ring that overflowed. '-' in vyre columns:",
    "the process publishes no vyre telemetry.",
    "USER 'foreign': the page was written in another PID",
    "namespace (a container): its PID is not one of ours.",
    "Cache rows (vyre, cuda_jit, triton, inductor): size,",
    "limit, filesystem fill; warning colour over the limit",
    "or at 90% full. '>': a scan stopped at its bound.",
    NULL,
};

/* The help overlay, centred; where it does not fit the screen (80x24) it
 * shows a window of its lines from ui->help_first and a last line that
 * says how to scroll. */
void top_view_draw_help(top_grid *g, top_ui *ui)
{
    int n = 0, w = 0;
    for (; g_help[n]; n++) {
        int l = (int)strlen(g_help[n]);
        if (l > w)
            w = l;
    }
    int bw = w + 4, bh = n + 2;
    if (bw > g->cols)
        bw = g->cols;
    int page = n;
    if (bh > g->rows) {
        bh = g->rows;
        page = bh - 3 > 1 ? bh - 3 : 1; /* a blank first line, the scroll line last */
    }
    ui->help_lines = n;
    ui->help_page = page;
    if (ui->help_first > n - page)
        ui->help_first = n - page;
    if (ui->help_first < 0)
        ui->help_first = 0;
    int x0 = (g->cols - bw) / 2, y0 = (g->rows - bh) / 2;
    for (int y = 0; y < bh; y++) {
        char line[LINE_MAX_W];
        int i = ui->help_first + y - 1;
        const char *txt = y >= 1 && y - 1 < page && i < n ? g_help[i] : "";
        if (page < n && y == bh - 1)
            snprintf(line, sizeof line, "  -- lines %d-%d of %d: Up/Down/PgUp/PgDn scroll --",
                     ui->help_first + 1, ui->help_first + page, n);
        else
            snprintf(line, sizeof line, "  %s", txt);
        top_grid_put(g, y0 + y, x0, bw, line, TOP_A_HELP, 1);
    }
}
