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
#include "tool_opt.h"
#include "tool_rows.h"
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
    tool_rows_out rows; /* --width, --wide, --csv, --md as parsed (tool_rows_opt) */
} cachectl_globals;

extern cachectl_globals g_cachectl;

/* getopt_long values of the global long options without a short form. */
enum {
    CACHECTL_OPT_CACHE_DIR = 0x100,   /* -w, --wide, --csv, --md: TOOL_OPT_* (tool_rows.h) */
    CACHECTL_OPT_FIRST_LOCAL = 0x200, /* subcommands number their own from here */
};

/* The global options, declared once (tool_opt.h): every command takes
 * them after its own, and main() before the command. */
extern const tool_opt cachectl_global_opts[];

/* A table with no option of its own (a command that takes only the
 * global options). */
extern const tool_opt cachectl_no_opts[];

/* The parser of one command: its own table followed by the global options
 * (a global row whose name the command declares itself is left out), and
 * getopt_long's arrays made from them. */
typedef struct cachectl_parser {
    const char *sub; /* the command, for messages; NULL: the tool itself */
    void (*usage)(FILE *);
    tool_opt rows[TOOL_OPT_MAX + 1];
    tool_opt_arrays g;
    char shorts[2 * TOOL_OPT_MAX + 4];
} cachectl_parser;

/* Sets p up for command sub (usage: its --help) from its own table; lead
 * goes before the short options (main: "+", to stop at the command).
 * 0, or -1 on a table too big (a programming error: the tests catch it). */
int cachectl_parser_init(cachectl_parser *p, const char *sub, const tool_opt *own,
                         void (*usage)(FILE *), const char *lead);

/* getopt_long over p: handles the global options (and --help, and an old
 * spelling's note) and returns the next own option, -1 after the last, or
 * TOOL_OPT_STOP with *code set: 0 after --help, 2 after a bad option or
 * value (reported with the nearest option). */
int cachectl_getopt(cachectl_parser *p, int argc, char **argv, int *code);

/* --help's OPTIONS of a command: "options:" and its own table (when it has
 * one), then "global options (also accepted before the command):" and the
 * global ones it does not declare itself. */
void cachectl_options_help(FILE *out, const tool_opt *own);

/* The row of own, else of the global options, that word names ("--dir",
 * "--dir=X", "-o"), else NULL. */
const tool_opt *cachectl_opt_row(const tool_opt *own, const char *word);

/* 1 when word is an option (of own or a global one) whose value is the
 * next argument: "--dir", "-o"; not "--dir=X", not "--json". For the
 * commands that look ahead of getopt (where "--" starts, which action). */
int cachectl_takes_next(const tool_opt *own, const char *word);

/* The action argv (a command's, argv[0] being the command) names: its
 * first operand, options (of opts or global) and their values skipped;
 * NULL when none is typed or it is no action. */
const tool_cmd *cachectl_action_typed(const tool_cmd *actions, const tool_opt *opts, int argc,
                                      char **argv);

/* --help's OPTIONS of command cmd, which has actions: act's own when one
 * is typed (`triton prune --help`), else every action's (all). */
void cachectl_action_options_help(FILE *out, const char *cmd, const tool_cmd *act,
                                  const tool_opt *all);

/* What --completion-helper prints for a command: its own table, then the
 * global options it does not declare itself (tool_opt_complete). */
void cachectl_options_complete(FILE *out, const tool_opt *own);

/* --completion-helper [WORD...] (complete.c): what completions/vyre.bash
 * offers after the words typed (all of them, options included, so that
 * --cache-dir's value finds the keys), from the tables: the commands and
 * main_opts first; a command's actions (actions_of); a command's or an
 * action's options and its operands. Returns 0. */
int cachectl_complete(const tool_cmd *cmds, const tool_opt *main_opts,
                      const tool_cmd *(*actions_of)(const tool_cmd *), int argc, char **argv);

/* The actions (sub-subcommands) of triton, inductor and remote, each with
 * its options (tool_cmd.opts; fn unused: the command runs them);
 * NULL-terminated. */
extern const tool_cmd cachectl_triton_actions[];
extern const tool_opt cachectl_triton_all_opts[];
extern const tool_opt cachectl_inductor_all_opts[];
extern const tool_cmd cachectl_inductor_actions[];
extern const tool_cmd cachectl_remote_actions[];

/* What the parsing helpers return to say "go on" (anything else is the
 * exit code to stop with). */
#define CACHECTL_HANDLED (-2)

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
    CACHECTL_READ_OR_EMPTY = 3, /* read-only; a cache that does not exist yet reads as empty
                                   (stats, ls, verify: first use), and nothing is created */
    CACHECTL_CREATE = 4         /* may write, and creates a missing cache (seed builds one) */
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

/* 0 when action names one of actions (NULL-terminated), else a usage
 * error with the nearest of them, or the list of them when none is near
 * (never a command of another level), and its exit code. */
int cachectl_check_action(const char *sub, const char *action, const tool_cmd *actions);

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

/* Each command's own options (cmd_<name>.c), for main's command table. */
extern const tool_opt cachectl_ls_opts[], cachectl_verify_opts[], cachectl_prune_opts[],
    cachectl_reindex_opts[], cachectl_seed_opts[], cachectl_explain_opts[], cachectl_clear_opts[],
    cachectl_jit_opts[], cachectl_config_opts[], cachectl_remote_opts[];

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
