/*
 * tool_cli.h - helpers shared by the vyre front ends (not libcore: these print).
 *
 * Messages follow git's error()/advise(): "<prog>: error: <message>" then
 * "hint: <hint>"; usage errors end with "try '<prog> --help'" (curl).
 */
#ifndef VYRE_TOOL_CLI_H
#define VYRE_TOOL_CLI_H

#include <stdio.h>

#include "vyre/error.h"
#include "vyre/export.h"

/* Exit codes shared by every tool (documented in each --help and README). */
enum {
    TOOL_EXIT_OK = 0,       /* success / clean */
    TOOL_EXIT_PROBLEMS = 1, /* the command ran and found problems */
    TOOL_EXIT_ERROR = 2,    /* usage or operational error */
    TOOL_EXIT_NODRIVER = 3, /* no NVIDIA driver or no GPU where one is needed */
};

/* A subcommand: git's {name, fn, flags} table (tool_dispatch.h runs it). fn
 * gets argv starting at the subcommand's name and returns an exit code;
 * flags are the TOOL_CMD_* setup flags of tool_dispatch.h. */
struct tool_opt;
typedef struct tool_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    unsigned flags;
    /* Its options, declared once (tool_opt.h), for the completion helper;
     * NULL: the command still declares them itself (not offered). */
    const struct tool_opt *opts;
} tool_cmd;

/* The program name used in messages (set once by main). */
void tool_set_prog(const char *prog);
const char *tool_prog(void);

/* After snprintf(buf, size, ...) returned n: when the text was cut to fit
 * (a display cell, a one-line message), end it with "..." so the cut shows.
 * Returns buf. */
char *tool_mark_cut(char *buf, size_t size, int n);

/* "<prog>: error: <message>\nhint: <hint>" on stderr from a vyre_error,
 * and a second "hint:" line naming the tools' command for its remedy. */
void tool_report(const vyre_error *err);

/* Just the "hint:" lines of tool_report (for notes and warnings). */
void tool_hints(const vyre_error *err);

/* A vyre_error as one line of a monitor (vyre-top, vyre-exporter):
 * "message; hint: hint", the hint being the tools' command for the remedy
 * when libcore gave none; the code's text when there is no message; cut
 * to fit with "...". */
void tool_error_line(char *dst, size_t size, int rc, const vyre_error *e);

/* The command of the vyre tools that carries out a libcore remedy
 * (vyre/error.h), as a hint's words; NULL for none. Static. */
const char *tool_remedy(vyre_remedy remedy);

/* p, or, when it is NULL (an allocation failed), "<prog>: error: out of
 * memory" and abort(): the tools' rule for out of memory
 * (CONVENTIONS.md). tool_need(malloc(n)). */
void *tool_need(void *p);

/* "<prog>: error: <fmt...>", optional "hint: ..." line, then
 * "try '<prog> [sub ]--help'"; returns TOOL_EXIT_ERROR. sub may be NULL. */
int tool_usage_error(const char *sub, const char *hint, const char *fmt, ...) VYRE_PRINTF(3, 4);

/* The value of a share option (--max-noise, --min-effect, --alpha) as a
 * ratio, by vyre_parse_percent's one rule: a bare number is a percent
 * ("0.5" and "0.5%" are both 0.005). 0, or a usage error naming opt and
 * the value, with the parser's hint (TOOL_EXIT_ERROR). sub may be NULL. */
int tool_percent_arg(const char *sub, const char *opt, const char *s, double *ratio);

/* An option's number: s whole, as a decimal integer (tool_parse_long) or
 * a real (tool_parse_real, NaN and infinities refused), from lo to hi into
 * *out. 0, or -1 with *out untouched and nothing printed: the caller says
 * what the option wants. */
int tool_parse_long(const char *s, long lo, long hi, long *out);
int tool_parse_real(const char *s, double lo, double hi, double *out);

/* --cache-usage-interval S (vyre-top, vyre-exporter): seconds from 1 to
 * 86400 (a scan of millions of files takes seconds, so less is refused);
 * turned_off says what --no-cache-usage turns off. 0 or the usage error. */
int tool_usage_interval_arg(const char *s, const char *turned_off, double *out);

/* Reports the option getopt_long rejected (call from its '?' case, with
 * opterr = 0): an unknown long option (nearest suggested), a value given to
 * an option that takes none ("--json=1"), a missing value, an unknown short
 * option even inside a cluster ("-xh"). Returns TOOL_EXIT_ERROR. */
struct option;
int tool_bad_option(const char *sub, char *const argv[], int optind_now, int optopt_now,
                    const char *shortopts, const struct option *longopts);

/* Finds the command named `name`; NULL when there is none. */
const tool_cmd *tool_cmd_find(const tool_cmd *cmds, const char *name);

/* The candidate nearest to `word` by edit distance, or NULL when nothing is
 * close (distance > max(2, len/3)). */
const char *tool_nearest(const char *word, const char *const *candidates, size_t n);

/* Maps a libcore error code to the tool exit code. */
int tool_exit_code(int vyre_code);

#endif /* VYRE_TOOL_CLI_H */
