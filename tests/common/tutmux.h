/*
 * tutmux.h - tmux for the terminal tests (vyre-top in a real terminal):
 * find the binary, run it on a private socket.
 */
#ifndef VYRE_TUTMUX_H
#define VYRE_TUTMUX_H

#include <stddef.h>

/* tmux's path on $PATH into out; 1 when found, else 0. */
int tu_tmux_find(char *out, size_t size);

/* Runs tmux -L sock -f /dev/null with the NULL-terminated args; returns
 * its output (caller frees) and sets *code (may be NULL) to its exit code.
 * Output goes through tmpdir/tmux.out, not a pipe: the tmux server that
 * the first call starts inherits the client's descriptors and would hold a
 * pipe open for its whole life. */
char *tu_tmux_run(const char *tmux, const char *sock, const char *tmpdir, int *code,
                  const char *const *args);

#endif
