/*
 * draw.h - the only ncurses code of vyre-top: terminal set-up and tear-down,
 * key translation, and printing a composed grid with one doupdate() per
 * frame (curses sends only the cells that changed: no flicker).
 */
#ifndef VYRE_TOP_DRAW_H
#define VYRE_TOP_DRAW_H

#include "view.h"

/* Starts curses on the terminal (stdin/stdout). mono: no colours. Returns 0,
 * or -1 when the terminal cannot be used (message printed). */
int top_draw_init(int mono);
void top_draw_end(void);

/* The terminal's current size. */
void top_draw_size(int *rows, int *cols);

/* Prints the grid: every cell, then one doupdate(). mono: attributes only. */
void top_draw_frame(const top_grid *g, int mono);

/* Reads one key without waiting: a character, a TOP_KEY_* code, or -1 when
 * none is pending. */
int top_draw_key(void);

#endif /* VYRE_TOP_DRAW_H */
