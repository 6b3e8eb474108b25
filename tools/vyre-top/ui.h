/*
 * ui.h - vyre-top's interactive state (focus, selection, sort, filter,
 * pause, refresh interval, help) and the pure key handler that changes it.
 *
 * Keys arrive as characters or the TOP_KEY_* codes below: the drawing step
 * translates ncurses' key codes, so this module needs no curses header.
 */
#ifndef VYRE_TOP_UI_H
#define VYRE_TOP_UI_H

#include <stdint.h>

#include "layout.h"

enum top_key {
    TOP_KEY_UP = 0x1000,
    TOP_KEY_DOWN,
    TOP_KEY_LEFT,
    TOP_KEY_RIGHT,
    TOP_KEY_TAB,
    TOP_KEY_BTAB,
    TOP_KEY_PGUP,
    TOP_KEY_PGDN,
    TOP_KEY_HOME,
    TOP_KEY_END,
    TOP_KEY_ENTER,
    TOP_KEY_ESC,
    TOP_KEY_BACKSPACE,
    TOP_KEY_F6,
    TOP_KEY_RESIZE,
};

#define TOP_FILTER_MAX  64
#define TOP_UI_MSG_MAX  160
#define TOP_UI_NAME_MAX 64
#define TOP_DELAY_MIN   0.1
#define TOP_DELAY_MAX   3600.0

typedef struct top_ui {
    int focus;                   /* enum top_panel_id */
    int sel[TOP_NPANELS];        /* selected row of each panel */
    int first[TOP_NPANELS];      /* first row shown (scrolling) */
    int nrows[TOP_NPANELS];      /* rows the last frame had (set by the view) */
    int page[TOP_NPANELS];       /* rows the last frame showed (set by the view) */
    int sort[TOP_NPANELS];       /* index into top_view_sort_names() */
    char filter[TOP_FILTER_MAX]; /* applied filter; "" none */
    int editing;                 /* typing a filter */
    char edit[TOP_FILTER_MAX];   /* the filter being typed */
    int paused;
    int help;
    int host_hidden; /* the host row hidden ('o') */
    int detail;      /* the detail view of detail_pid is shown (Enter) */
    int32_t detail_pid;
    int tree;       /* the processes under their parents ('t') */
    int help_first; /* first help line shown: the overlay scrolls where it does not fit */
    int help_lines; /* help lines in all, and how many the last frame showed (set by the view) */
    int help_page;
    int mono;
    double delay_s;
    /* The selected process of the Processes panel (set by the view; pid 0:
     * none), and the one `k` asks about while confirm_kill is set. */
    int32_t sel_pid;
    int sel_foreign;    /* its pid is another PID namespace's: not to be signalled */
    uint64_t sel_start; /* its start time (/proc), 0 unknown */
    char sel_name[TOP_UI_NAME_MAX];
    int confirm_kill;
    int32_t kill_pid;
    uint64_t kill_start;
    char kill_name[TOP_UI_NAME_MAX];
    int kill_sig;             /* the signal chosen (SIGTERM, SIGINT, SIGKILL) when TOP_UI_KILL */
    int reverse[TOP_NPANELS]; /* the panel's sort order reversed ('r') */
    unsigned sort_shown[TOP_NPANELS]; /* bit i: sort order i's column is shown (set by the
                                         view; 0: all); 's' skips the others */
    char msg[TOP_UI_MSG_MAX];         /* one line for the footer; "" none; the next key clears it */
} top_ui;

/* What a key did (bits). */
enum {
    TOP_UI_REDRAW = 1u << 0, /* the screen must be composed again */
    TOP_UI_DELAY = 1u << 1,  /* the refresh interval changed */
    TOP_UI_QUIT = 1u << 2,
    TOP_UI_RESIZE = 1u << 3, /* the terminal size changed: rebuild the layout */
    TOP_UI_FILTER = 1u << 4, /* the filter changed */
    TOP_UI_KILL = 1u << 5,   /* confirmed: send kill_sig to kill_pid (kill_start) */
};

/* Defaults: focus on processes, default sorts, not paused, delay_s. */
void top_ui_init(top_ui *ui, double delay_s);

/* Applies the environment's conventions: NO_COLOR (https://no-color.org)
 * set to any non-empty value turns colour off, as -C does. no_color is the
 * variable's value (NULL: unset). */
void top_ui_apply_env(top_ui *ui, const char *no_color);

/* Applies one key; returns TOP_UI_* bits. `k` on a selected process asks
 * which signal (confirm_kill); `t` (or `y`) SIGTERM, `i` SIGINT, `K` (or
 * `9`) SIGKILL then return TOP_UI_KILL with kill_sig set, any other key
 * cancels. `r` reverses the focused panel's sort; `s` steps through the
 * sort orders whose column is shown (sort_shown). */
unsigned top_ui_key(top_ui *ui, int key);

/* The next/previous refresh interval of the +/- ladder (0.1 .. 3600 s). */
double top_delay_step(double delay_s, int up);

/* Number of sort orders of a panel, and their names ("launches/s", ...). */
int top_sort_count(int panel);
const char *top_sort_name(int panel, int sort);

#endif /* VYRE_TOP_UI_H */
