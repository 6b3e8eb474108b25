/*
 * cmds.h - vyre-cachectl subcommands, one file each (git's builtin/ layout),
 * and the little they share: the global options, option parsing with "did
 * you mean", opening the cache, and JSON output. The shared pieces live in
 * common.c; main.c only dispatches.
 */
#ifndef VYRE_CACHECTL_CMDS_H
#define VYRE_CACHECTL_CMDS_H

#include <getopt.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "tool_dispatch.h"
#include "tool_table.h"
#include "vyre/vyre.h"

/* Global options. They may be given before the subcommand or among its own
 * options (`vyre-cachectl --json stats` and `vyre-cachectl stats --json`).
 * --json and --help are the ones both CLIs share (g_tool.json, tool_dispatch.h). */
typedef struct cachectl_globals {
    const char *cache_dir; /* --cache-dir; NULL: the default root */
    int quiet;             /* -q */
    int verbose;           /* -v */
#define CACHECTL_MAX_OVERRIDES 32
    const char *overrides[CACHECTL_MAX_OVERRIDES]; /* -o key=value, in order */
    size_t n_overrides;
    int width; /* --width N (0: the terminal's) */
    int wide;  /* --wide: every column at its natural width */
    int csv;   /* --csv: a listing as CSV (tool_rows) */
    int md;    /* --md: a listing as a markdown table (tool_rows) */
} cachectl_globals;

extern cachectl_globals g_cachectl;

/* getopt_long values of the global long options without a short form. */
enum {
    CACHECTL_OPT_CACHE_DIR = 0x100,
    CACHECTL_OPT_WIDTH = 0x101,
    CACHECTL_OPT_WIDE = 0x102,
    CACHECTL_OPT_CSV = 0x103,
    CACHECTL_OPT_MD = 0x104,
    CACHECTL_OPT_FIRST_LOCAL = 0x200, /* subcommands number their own from here */
};

/* The global options as getopt_long entries, for a subcommand's table. */
#define CACHECTL_GLOBAL_LONGOPTS                                                                   \
    {"cache-dir", required_argument, NULL, CACHECTL_OPT_CACHE_DIR},                                \
        {"json", no_argument, NULL, TOOL_OPT_JSON}, {"quiet", no_argument, NULL, 'q'},             \
        {"verbose", no_argument, NULL, 'v'}, {"option", required_argument, NULL, 'o'},             \
        {"width", required_argument, NULL, CACHECTL_OPT_WIDTH},                                    \
        {"wide", no_argument, NULL, CACHECTL_OPT_WIDE},                                            \
        {"csv", no_argument, NULL, CACHECTL_OPT_CSV}, {"md", no_argument, NULL, CACHECTL_OPT_MD},  \
    {                                                                                              \
        "help", no_argument, NULL, 'h'                                                             \
    }

/* Short options every subcommand accepts (':' reports a missing value as
 * ':'); options and operands may mix ("show KEY --json"). main() prefixes
 * '+' so that it stops at the subcommand's name. */
#define CACHECTL_GLOBAL_SHORTOPTS ":qvho:"

/* The help text of the global options, for the subcommands' --help. */
#define CACHECTL_GLOBAL_HELP                                                                       \
    "global options (also accepted before the command):\n"                                         \
    "  --cache-dir DIR  the pipeline cache (default: $VYRE_PTX_CACHE_DIR, else\n"                  \
    "                   $XDG_CACHE_HOME/vyre/ptx-cache, else ~/.cache/vyre/ptx-cache)\n"           \
    "  --json           machine output on stdout: one JSON object with a schema_version,\n"        \
    "                   plain numbers, units in key names\n"                                       \
    "  -q, --quiet      print only errors (ls: keys only); conflicts with --json and -v\n"         \
    "  -v, --verbose    print more detail\n"                                                       \
    "  -o, --option KEY=VALUE\n"                                                                   \
    "                   override a configuration key for this command (repeatable;\n"              \
    "                   'vyre-cachectl config' lists the keys)\n"                                  \
    "  --width N        fit tables (every listing, stats, config) in N columns,\n"                 \
    "                   the least important cut or left out first (default: the\n"                 \
    "                   terminal's width, else $COLUMNS; piped: nothing is cut)\n"                 \
    "  --wide           every column in full, whatever the width\n"                                \
    "  --csv            a listing as CSV: a header of field names, one line per row\n"             \
    "  --md             a listing as a markdown table\n"

/*
 * Handles one getopt_long result c for subcommand `sub` (argv as given to
 * it). Returns -1 when c is the subcommand's own option (the caller handles
 * it), CACHECTL_HANDLED when it was a global option, or an exit code when
 * the command must stop: after --help (usage printed, 0) or on an unknown
 * option or missing value (message with the nearest option, 2).
 */
#define CACHECTL_HANDLED (-2)
int cachectl_option(int c, const char *sub, const struct option *opts, int argc, char **argv,
                    void (*usage)(FILE *));

/* Parses argv of subcommand `sub` when it takes only the global options
 * (operands stay from argv[optind] on). Returns CACHECTL_HANDLED to go on,
 * or the exit code to return (0 after --help, 2 on a bad option). */
int cachectl_global_options(const char *sub, int argc, char **argv, void (*usage)(FILE *));

/* The same for a subcommand that takes no operand either, then the check
 * of cachectl_check_globals: CACHECTL_HANDLED to go on, or the exit code. */
int cachectl_no_args(const char *sub, int argc, char **argv, void (*usage)(FILE *));

/* Checks the global options for conflicts (-q with --json or -v). 0 or
 * the usage-error exit code. */
int cachectl_check_globals(const char *sub);

/* How a subcommand opens the cache. */
enum {
    CACHECTL_READ = 0,          /* read-only: never creates or writes anything */
    CACHECTL_WRITE = 1,         /* may write; the directory must already exist */
    CACHECTL_WRITE_NOINDEX = 2, /* may write, without opening the index (reindex) */
    CACHECTL_READ_OR_EMPTY = 3  /* read-only; a cache that does not exist yet reads as empty
                                   (stats, ls, verify: first use), and nothing is created */
};

/* The configuration for the cache in use (--cache-dir or the default),
 * with the -o overrides. Its warnings (an unknown key in a file) are
 * printed on stderr (not with -q). *cf is the process's one configuration
 * (loaded again by each call; not freed by the caller). 0, or the exit
 * code after the error is printed. */
int cachectl_config(vyre_config **cf, char *root, size_t root_size);

/* The root of the cache in use (--cache-dir or the default): 0, or the
 * exit code after the error is printed. */
int cachectl_root(char *root, size_t root_size);

/* Prints cf's problems on stderr: errors ("error: ...", always) and
 * warnings ("warning: ...", not with -q), each with its hints; in_config:
 * from `config` itself, whose own name is left out of the hints. */
void cachectl_config_problems(const vyre_config *cf, int in_config);

/*
 * Opens the cache for subcommand `how`. Every mode refuses a cache
 * directory that does not exist (nothing is created to be inspected or
 * pruned), an unsafe one, or (except WRITE_NOINDEX) a corrupt index, with
 * the library's message and hint on stderr. Returns 0 and *out, or the exit
 * code to return.
 */
int cachectl_open(int how, vyre_cache **out);

/* A bad option value that libcore rejected (a size, an age): err's message
 * and hint, then the "try ... --help" line. Returns the usage exit code. */
int cachectl_value_error(const char *sub, const char *option, const vyre_error *err);

/* Reports err on stderr and returns its exit code. */
int cachectl_fail(const vyre_error *err);

/* Where a foreign cache (Triton's, Inductor's) is: `dir` (--dir, may be
 * NULL) as given, else as its tool finds it (find: vyre_triton_cache_dir
 * or vyre_inductor_cache_dir). *source gets "--dir" or find's source.
 * Returns 0, or the exit code of the error it reported (sub names the
 * command in a usage error). */
int cachectl_foreign_dir(const char *sub, const char *dir,
                         int (*find)(char *, size_t, const char **, vyre_error *), char *path,
                         size_t size, const char **source);

/* 0 when action is one of actions[0..n), else a usage error naming the
 * nearest one, and its exit code. */
int cachectl_check_action(const char *sub, const char *action, const char *const *actions,
                          size_t n);

/* A new {"schema_version": version, "cache_dir": root} object. Each
 * document has its own version (docs/JSON.md), bumped when its shape
 * changes. */
json_t *cachectl_json_root(const vyre_cache *c, int schema_version);

/* Prints a table (tool_table.h: cells row-major, ncols by nrows) on
 * stdout, fitted to --width, else the terminal's width; --wide or a stdout
 * that is not a terminal: every column in full. The one place the
 * subcommands' tables are fitted. */
void cachectl_table(const tool_table_col *cols, size_t ncols, const char *const *cells,
                    size_t nrows);

/* The first 12 hex digits of a key (what ls prints and show accepts). */
#define CACHECTL_SHORT_KEY 12

/* Parses a positive decimal count ("--limit 10"). 0 or -1. */
int cachectl_parse_count(const char *s, uint64_t *out);

/* path relative to the cache root when it is under it, else path. */
const char *cachectl_relpath(const vyre_cache *c, const char *path);

/* The vyre-bench command that benchmarks Triton group key: "vyre-bench run
 * --triton KEY", with "--dir DIR" when dir is not NULL (the cache is not
 * the one vyre-bench finds itself); words quoted for a POSIX shell where
 * they must be (triton_command.c). 0, or -1 with buf "" when it does not
 * fit in size (or key is empty). */
int cachectl_triton_command(const char *key, const char *dir, char *buf, size_t size);

int cmd_stats(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_prune(int argc, char **argv);
int cmd_reindex(int argc, char **argv);
int cmd_seed(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_clear(int argc, char **argv);
int cmd_jit(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_zero_stats(int argc, char **argv);
int cmd_remote(int argc, char **argv);
int cmd_triton(int argc, char **argv);
int cmd_inductor(int argc, char **argv);
/* `triton explain KERNEL` (cmd_triton_explain.c): cmd_triton hands its
 * argv over when cachectl_triton_is_explain says the action is explain. */
int cachectl_triton_is_explain(int argc, char **argv);
int cmd_triton_explain(int argc, char **argv);

#endif /* VYRE_CACHECTL_CMDS_H */
