/*
 * input.c - see ui.h. Pure: a key changes the state, nothing is drawn here.
 */
#include "ui.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define TOP_MAX_SORTS 12

static const char *const g_sorts[TOP_NPANELS][TOP_MAX_SORTS] = {
    [TOP_P_GPU] = {"index", "util", "memory", NULL},
    [TOP_P_PROC] = {"launches/s", "dispatches/s", "h2d", "d2h", "gpu mem", "hit%", "pid", "name",
                    "sm%", "cpu%", "graphs/s", NULL},
    [TOP_P_RANGE] = {"count/s", "p99", "p50", "max", "name", NULL},
    [TOP_P_KERNEL] = {"gpu%", "calls/s", "mean", "max", "name", NULL},
    [TOP_P_CACHE] = {NULL},
};

int top_sort_count(int panel)
{
    if (panel < 0 || panel >= TOP_NPANELS)
        return 0;
    int n = 0;
    while (n < TOP_MAX_SORTS && g_sorts[panel][n])
        n++;
    return n;
}

const char *top_sort_name(int panel, int sort)
{
    if (sort < 0 || sort >= top_sort_count(panel))
        return "";
    return g_sorts[panel][sort];
}

void top_ui_apply_env(top_ui *ui, const char *no_color)
{
    if (no_color && no_color[0])
        ui->mono = 1;
}

void top_ui_init(top_ui *ui, double delay_s)
{
    memset(ui, 0, sizeof *ui);
    ui->focus = TOP_P_PROC;
    ui->delay_s = delay_s;
}

static const double g_ladder[] = {0.1, 0.2, 0.5, 1, 2, 3, 5, 10, 30, 60, 300, 3600};
#define LADDER_N (sizeof g_ladder / sizeof g_ladder[0])

double top_delay_step(double delay_s, int up)
{
    if (up) {
        for (size_t i = 0; i < LADDER_N; i++)
            if (g_ladder[i] > delay_s + 1e-9)
                return g_ladder[i];
        return TOP_DELAY_MAX;
    }
    for (size_t i = LADDER_N; i-- > 0;)
        if (g_ladder[i] < delay_s - 1e-9)
            return g_ladder[i];
    return TOP_DELAY_MIN;
}

static unsigned filter_key(top_ui *ui, int key)
{
    size_t len = strlen(ui->edit);
    switch (key) {
    case TOP_KEY_ENTER:
    case '\n':
    case '\r':
        memcpy(ui->filter, ui->edit, sizeof ui->filter);
        ui->editing = 0;
        ui->sel[TOP_P_PROC] = ui->first[TOP_P_PROC] = 0;
        return TOP_UI_REDRAW | TOP_UI_FILTER;
    case TOP_KEY_ESC:
        ui->editing = 0;
        return TOP_UI_REDRAW;
    case TOP_KEY_BACKSPACE:
    case 127:
    case 8:
        if (len)
            ui->edit[len - 1] = '\0';
        return TOP_UI_REDRAW;
    case TOP_KEY_RESIZE:
        return TOP_UI_REDRAW | TOP_UI_RESIZE;
    default:
        if (key >= 0x20 && key < 0x7f && len + 1 < sizeof ui->edit) {
            ui->edit[len] = (char)key;
            ui->edit[len + 1] = '\0';
            return TOP_UI_REDRAW;
        }
        return 0;
    }
}

static void move_sel(top_ui *ui, int delta)
{
    int p = ui->focus;
    int n = ui->nrows[p];
    int s = ui->sel[p] + delta;
    if (s >= n)
        s = n - 1;
    if (s < 0)
        s = 0;
    ui->sel[p] = s;
}

/* The answer to "send which signal?": t (or y) SIGTERM, i SIGINT, K (or 9)
 * SIGKILL; anything else cancels. */
static unsigned confirm_key(top_ui *ui, int key)
{
    ui->confirm_kill = 0;
    ui->kill_sig = key == 't' || key == 'T' || key == 'y' || key == 'Y' ? SIGTERM
                   : key == 'i' || key == 'I'                           ? SIGINT
                   : key == 'K' || key == '9'                           ? SIGKILL
                                                                        : 0;
    if (ui->kill_sig)
        return TOP_UI_REDRAW | TOP_UI_KILL;
    snprintf(ui->msg, sizeof ui->msg, "signal not sent to %d", (int)ui->kill_pid);
    return key == TOP_KEY_RESIZE ? TOP_UI_REDRAW | TOP_UI_RESIZE : TOP_UI_REDRAW;
}

/* The keys that move the focus or the selection: 1 when key was one. */
static int nav_key(top_ui *ui, int key)
{
    int page = ui->page[ui->focus] > 1 ? ui->page[ui->focus] : 1;
    switch (key) {
    case TOP_KEY_TAB:
    case '\t':
    case TOP_KEY_RIGHT:
        ui->focus = (ui->focus + 1) % TOP_NPANELS;
        return 1;
    case TOP_KEY_BTAB:
    case TOP_KEY_LEFT:
        ui->focus = (ui->focus + TOP_NPANELS - 1) % TOP_NPANELS;
        return 1;
    case TOP_KEY_UP:
        move_sel(ui, -1);
        return 1;
    case TOP_KEY_DOWN:
        move_sel(ui, 1);
        return 1;
    case TOP_KEY_PGUP:
        move_sel(ui, -page);
        return 1;
    case TOP_KEY_PGDN:
        move_sel(ui, page);
        return 1;
    case TOP_KEY_HOME:
        ui->sel[ui->focus] = 0;
        return 1;
    case TOP_KEY_END:
        move_sel(ui, ui->nrows[ui->focus]);
        return 1;
    default:
        return 0;
    }
}

/* The help overlay: arrows, pages, Home and End scroll it where it does
 * not fit (the view clamps help_first); any other key closes it, q still
 * quits. */
static unsigned help_key(top_ui *ui, int key)
{
    int page = ui->help_page > 1 ? ui->help_page : 1;
    switch (key) {
    case TOP_KEY_UP:
        ui->help_first--;
        break;
    case TOP_KEY_DOWN:
        ui->help_first++;
        break;
    case TOP_KEY_PGUP:
        ui->help_first -= page;
        break;
    case TOP_KEY_PGDN:
        ui->help_first += page;
        break;
    case TOP_KEY_HOME:
        ui->help_first = 0;
        break;
    case TOP_KEY_END:
        ui->help_first = ui->help_lines;
        break;
    default:
        ui->help = 0;
        ui->help_first = 0;
        return key == 'q' ? TOP_UI_QUIT : TOP_UI_REDRAW;
    }
    if (ui->help_first > ui->help_lines - page)
        ui->help_first = ui->help_lines - page;
    if (ui->help_first < 0)
        ui->help_first = 0;
    return TOP_UI_REDRAW;
}

/* k: asks to confirm the signal to the selected process, or says why not. */
static unsigned kill_key(top_ui *ui)
{
    if (ui->focus != TOP_P_PROC || ui->sel_pid <= 0) {
        snprintf(ui->msg, sizeof ui->msg, "k: select a process in the Processes panel first");
        return TOP_UI_REDRAW;
    }
    if (ui->sel_foreign) {
        snprintf(ui->msg, sizeof ui->msg,
                 "k: pid %d is another PID namespace's (a container): not signalled",
                 (int)ui->sel_pid);
        return TOP_UI_REDRAW;
    }
    ui->confirm_kill = 1;
    ui->kill_pid = ui->sel_pid;
    ui->kill_start = ui->sel_start;
    memcpy(ui->kill_name, ui->sel_name, sizeof ui->kill_name);
    return TOP_UI_REDRAW;
}

unsigned top_ui_key(top_ui *ui, int key)
{
    if (ui->editing)
        return filter_key(ui, key);
    if (ui->confirm_kill)
        return confirm_key(ui, key);
    if (key != TOP_KEY_RESIZE)
        ui->msg[0] = '\0'; /* a message lasts until the next key */
    if (key == TOP_KEY_RESIZE)
        return TOP_UI_REDRAW | TOP_UI_RESIZE;
    if (ui->help)
        return help_key(ui, key);
    if (ui->detail) { /* any key closes the detail view; q still quits */
        ui->detail = 0;
        return key == 'q' ? TOP_UI_QUIT : TOP_UI_REDRAW;
    }
    if (nav_key(ui, key))
        return TOP_UI_REDRAW;
    switch (key) {
    case 'q':
    case 'Q':
        return TOP_UI_QUIT;
    case 's':
    case 'S':
    case TOP_KEY_F6: {
        /* The next order whose column is shown (all when the view did
         * not say). */
        int n = top_sort_count(ui->focus), f = ui->focus;
        for (int step = 1; step <= n; step++) {
            int next = (ui->sort[f] + step) % n;
            if (!ui->sort_shown[f] || (ui->sort_shown[f] >> next & 1u)) {
                ui->sort[f] = next;
                break;
            }
        }
        return TOP_UI_REDRAW;
    }
    case 'r':
    case 'R':
        if (top_sort_count(ui->focus) > 0)
            ui->reverse[ui->focus] = !ui->reverse[ui->focus];
        return TOP_UI_REDRAW;
    case '/':
        ui->editing = 1;
        memcpy(ui->edit, ui->filter, sizeof ui->edit);
        return TOP_UI_REDRAW;
    case TOP_KEY_ESC:
        if (!ui->filter[0])
            return 0;
        ui->filter[0] = '\0'; /* Esc outside the prompt clears the filter */
        return TOP_UI_REDRAW | TOP_UI_FILTER;
    case 'p':
    case 'P':
    case ' ':
        ui->paused = !ui->paused;
        return TOP_UI_REDRAW;
    case '+':
    case '=':
        ui->delay_s = top_delay_step(ui->delay_s, 1);
        return TOP_UI_REDRAW | TOP_UI_DELAY;
    case '-':
    case '_':
        ui->delay_s = top_delay_step(ui->delay_s, 0);
        return TOP_UI_REDRAW | TOP_UI_DELAY;
    case 'h':
    case 'H':
    case '?':
        ui->help = 1;
        return TOP_UI_REDRAW;
    case 'C':
        ui->mono = !ui->mono;
        return TOP_UI_REDRAW;
    case TOP_KEY_ENTER:
    case '\n':
    case '\r':
        if (ui->focus != TOP_P_PROC || ui->sel_pid <= 0)
            return 0;
        ui->detail = 1;
        ui->detail_pid = ui->sel_pid;
        return TOP_UI_REDRAW;
    case 't':
    case 'T':
        ui->tree = !ui->tree;
        ui->sel[TOP_P_PROC] = ui->first[TOP_P_PROC] = 0;
        return TOP_UI_REDRAW;
    case 'o':
    case 'O':
        ui->host_hidden = !ui->host_hidden;
        return TOP_UI_REDRAW;
    case 'k':
    case 'K':
        return kill_key(ui);
    default:
        return 0;
    }
}
