/*
 * tool_dispatch.h - the command dispatcher and shared global options of the
 * subcommand CLIs (vyre-bench, vyre-cachectl), after git's run_builtin():
 * a table of {name, fn, summary, flags}, `help <command>`, "did you mean"
 * for a mistyped name, and the options every command of a tool takes
 * (--json, --help; --db for a command that reads the results database),
 * parsed here so that no command declares them again.
 *
 * Setup flags (git's RUN_SETUP): what a command needs before it can work.
 * They decide which shared options it takes, and the setup call checks
 * them (tool_open_db, cachectl_open): a command opens only what its row
 * declares. The setup itself runs after the command has parsed its
 * options, so that a usage error never touches a database, a cache or the
 * driver (tests/cli check this).
 */
#ifndef VYRE_TOOL_DISPATCH_H
#define VYRE_TOOL_DISPATCH_H

#include <getopt.h>
#include <stdio.h>

#include "tool_cli.h"

struct vyre_results;

enum {
    TOOL_CMD_NEEDS_CACHE = 1u << 0, /* opens the pipeline cache (--cache-dir, -o) */
    TOOL_CMD_NEEDS_DB = 1u << 1,    /* opens the results database: takes --db PATH */
    TOOL_CMD_JSON = 1u << 2,        /* prints a --json document: takes --json */
};

/* The shared global options, as parsed; the command running. */
typedef struct tool_globals {
    const tool_cmd *cmd; /* set by tool_dispatch before the command runs */
    const char *db;      /* --db PATH; NULL: the default results database */
    int json;            /* --json */
} tool_globals;

extern tool_globals g_tool;

/* getopt_long values of the shared long options ('h' is --help). */
enum { TOOL_OPT_DB = 0x180, TOOL_OPT_JSON, TOOL_OPT_FIRST_LOCAL = 0x200 };

/* What tool_getopt and tool_global_option return besides an option. */
#define TOOL_OPT_HANDLED (-2) /* a shared option, taken care of */
#define TOOL_OPT_STOP    (-3) /* the command must return *code (after --help: 0) */

/*
 * Runs the command named argv[0] from cmds (NULL-terminated), argv as the
 * command gets it. "help" alone prints usage on stdout; "help CMD" runs
 * CMD --help; an unknown name is a usage error with the nearest name
 * suggested ("unknown option" when it starts with '-').
 */
int tool_dispatch(const tool_cmd *cmds, void (*usage)(FILE *), int argc, char **argv);

/* Runs cmd with g_tool.cmd set (tool_dispatch's last step; vyre-cachectl's
 * -z runs zero-stats through it). */
int tool_run_cmd(const tool_cmd *cmd, int argc, char **argv);

/*
 * getopt_long for the running command `sub`: its own short and long options
 * (own: NULL-terminated, values other than TOOL_OPT_*), plus the shared
 * ones its flags name (--db, --json) and -h/--help, which are handled here.
 * Returns the next own option, -1 after the last, or TOOL_OPT_STOP with
 * *code: 0 after --help (usage printed on stdout), 2 after a bad option
 * (reported with the nearest option).
 */
int tool_getopt(const char *sub, int argc, char **argv, const char *shortopts,
                const struct option *own, void (*usage)(FILE *), int *code);

/* tool_getopt for a command whose options are a tool_opt table (own, ended
 * by {0}): the same contract. */
struct tool_opt;
int tool_getopt_table(const char *sub, int argc, char **argv, const struct tool_opt *own,
                      void (*usage)(FILE *), int *code);

/* --help's OPTIONS block of the running command: its table, then the
 * shared options its flags give it (--db; --json when the table has none;
 * -h/--help), aligned as tool_opt_help. */
void tool_cmd_options_help(FILE *out, const struct tool_opt *own);

/* The completion helper of a tool of commands (TOOL --completion-helper
 * [WORD...], words after the tool's own name): with no command named, the
 * commands and the tool's options (--help, --version); with one, the
 * command's options as tool_opt_complete prints them. Returns 0. */
int tool_dispatch_complete(const tool_cmd *cmds, int argc, char **argv);

/* One shared option c (TOOL_OPT_DB, TOOL_OPT_JSON, 'h') for a parser of
 * its own (vyre-cachectl's global options): TOOL_OPT_HANDLED, TOOL_OPT_STOP
 * with *code after --help, or -1 when c is not a shared option. */
int tool_global_option(int c, const char *arg, void (*usage)(FILE *), int *code);

/* The setup of TOOL_CMD_NEEDS_DB: opens --db PATH, or the default results
 * database. Reports and returns an exit code (0: *out is open). */
int tool_open_db(struct vyre_results **out);

#endif /* VYRE_TOOL_DISPATCH_H */
