/*
 * draw.c - see draw.h. The only file of vyre-top that includes curses.
 */
#define NCURSES_WIDECHAR 1
#include "draw.h"
#include "format.h"
#include "tool_sanitize.h"

#include <curses.h>
#include <langinfo.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

static SCREEN *g_screen;
static int g_utf8;
static int g_colors;

enum { PAIR_HEADER = 1, PAIR_TITLE, PAIR_FOCUS, PAIR_COLHEAD, PAIR_WARN, PAIR_SPARK, PAIR_HELP };

int top_draw_init(int mono)
{
    const char *cs = nl_langinfo(CODESET);
    g_utf8 = cs && strcmp(cs, "UTF-8") == 0;
    g_screen = newterm(NULL, stdout, stdin);
    if (!g_screen) {
        fprintf(stderr,
                "vyre-top: error: cannot use the terminal (TERM='%s')\n"
                "hint: set TERM to your terminal's type, or use --batch or --json\n",
                getenv("TERM") ? getenv("TERM") : "");
        return -1;
    }
    set_term(g_screen);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    g_colors = !mono && has_colors() && start_color() == OK;
    if (g_colors) {
        use_default_colors();
        init_pair(PAIR_HEADER, COLOR_WHITE, COLOR_BLUE);
        init_pair(PAIR_TITLE, COLOR_BLACK, COLOR_GREEN);
        init_pair(PAIR_FOCUS, COLOR_BLACK, COLOR_CYAN);
        init_pair(PAIR_COLHEAD, COLOR_YELLOW, -1);
        init_pair(PAIR_WARN, COLOR_RED, -1);
        init_pair(PAIR_SPARK, COLOR_GREEN, -1);
        init_pair(PAIR_HELP, COLOR_BLACK, COLOR_WHITE);
    }
    return 0;
}

void top_draw_end(void)
{
    if (!g_screen)
        return;
    endwin();
    delscreen(g_screen);
    g_screen = NULL;
}

void top_draw_size(int *rows, int *cols)
{
    getmaxyx(stdscr, *rows, *cols);
}

static attr_t attr_of(int a, int mono)
{
    int color = g_colors && !mono;
    switch (a) {
    case TOP_A_HEADER:
        return color ? COLOR_PAIR(PAIR_HEADER) | A_BOLD : A_REVERSE | A_BOLD;
    case TOP_A_TITLE:
        return color ? COLOR_PAIR(PAIR_TITLE) : A_UNDERLINE;
    case TOP_A_TITLE_FOCUS:
        return color ? COLOR_PAIR(PAIR_FOCUS) | A_BOLD : A_REVERSE | A_BOLD;
    case TOP_A_COLHEAD:
        return color ? COLOR_PAIR(PAIR_COLHEAD) | A_BOLD : A_BOLD;
    case TOP_A_SEL:
        return A_REVERSE;
    case TOP_A_DIM:
        return A_DIM;
    case TOP_A_WARN:
        return color ? COLOR_PAIR(PAIR_WARN) | A_BOLD : A_BOLD;
    case TOP_A_SPARK:
        return color ? COLOR_PAIR(PAIR_SPARK) : A_NORMAL;
    case TOP_A_FOOTER:
        return color ? COLOR_PAIR(PAIR_FOCUS) : A_REVERSE;
    case TOP_A_HELP:
        return color ? COLOR_PAIR(PAIR_HELP) : A_REVERSE;
    default:
        return A_NORMAL;
    }
}

static void put_spark(int y, int x, char c, attr_t at)
{
    if (c == TOP_ELLIPSIS) { /* the last cell of a cut text */
        if (g_utf8) {
            cchar_t cc;
            wchar_t wc[2] = {L'\u2026', L'\0'};
            setcchar(&cc, wc, at, 0, NULL);
            mvadd_wch(y, x, &cc);
        } else {
            attrset(at);
            mvaddch(y, x, '~');
        }
        return;
    }
    int level = (unsigned char)c - TOP_SPARK_MIN; /* 0..7 */
    if (g_utf8) {
        static const wchar_t blocks[] = L"\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588";
        cchar_t cc;
        wchar_t wc[2] = {blocks[level], L'\0'};
        setcchar(&cc, wc, at, 0, NULL);
        mvadd_wch(y, x, &cc);
    } else {
        static const char ascii[] = "_.,-=+*#";
        attrset(at);
        mvaddch(y, x, (chtype)(unsigned char)ascii[level]);
    }
}

void top_draw_frame(const top_grid *g, int mono)
{
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    if (rows > g->rows)
        rows = g->rows;
    if (cols > g->cols)
        cols = g->cols;
    size_t stride = (size_t)g->cols + 1;
    char safe[1100];
    if (cols > (int)sizeof safe)
        cols = (int)sizeof safe;
    for (int y = 0; y < rows; y++) {
        const char *ch = g->ch + (size_t)y * stride;
        /* The text drawn is the row masked by the sanitiser (a control or a
         * bad UTF-8 byte becomes '?', cell for cell): table cells are
         * escaped already, this covers any other text of the frame.
         * Spark bytes are read from the row itself. */
        tool_clean_mask(ch, (size_t)cols, safe);
        const unsigned char *at = g->at + (size_t)y * stride;
        int x = 0;
        while (x < cols) {
            attr_t a = attr_of(at[x], mono);
            if (TOP_IS_SPARK(ch[x]) || ch[x] == TOP_ELLIPSIS) {
                put_spark(y, x, ch[x], a);
                x++;
                continue;
            }
            int run = 1;
            while (x + run < cols && at[x + run] == at[x] && !TOP_IS_SPARK(ch[x + run]) &&
                   ch[x + run] != TOP_ELLIPSIS)
                run++;
            attrset(a);
            mvaddnstr(y, x, safe + x, run); /* the bottom-right cell may report ERR: harmless */
            x += run;
        }
    }
    attrset(A_NORMAL);
    wnoutrefresh(stdscr);
    doupdate();
}

int top_draw_key(void)
{
    int c = getch();
    switch (c) {
    case ERR:
        return -1;
    case KEY_UP:
        return TOP_KEY_UP;
    case KEY_DOWN:
        return TOP_KEY_DOWN;
    case KEY_LEFT:
        return TOP_KEY_LEFT;
    case KEY_RIGHT:
        return TOP_KEY_RIGHT;
    case '\t':
        return TOP_KEY_TAB;
    case KEY_BTAB:
        return TOP_KEY_BTAB;
    case KEY_PPAGE:
        return TOP_KEY_PGUP;
    case KEY_NPAGE:
        return TOP_KEY_PGDN;
    case KEY_HOME:
        return TOP_KEY_HOME;
    case KEY_END:
        return TOP_KEY_END;
    case KEY_ENTER:
    case '\n':
    case '\r':
        return TOP_KEY_ENTER;
    case 27:
        return TOP_KEY_ESC;
    case KEY_BACKSPACE:
    case 127:
    case 8:
        return TOP_KEY_BACKSPACE;
    case KEY_F(6):
        return TOP_KEY_F6;
    case KEY_RESIZE:
        return TOP_KEY_RESIZE;
    default:
        return c >= 0 && c < 0x100 ? c : -1;
    }
}
