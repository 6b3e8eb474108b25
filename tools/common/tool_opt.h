/*
 * tool_opt.h - a command's options, declared once (git's parse-options is
 * the model): name, short name, argument, help and what completes the
 * argument live in one table, and the rest is derived from it: getopt_long's
 * arrays, the OPTIONS block of --help, and what the bash completion offers
 * (through the hidden --completion-helper option, as git's
 * --git-completion-helper: the completion asks the binary, so it cannot go
 * stale). The man pages are checked against --help by tests/docs.
 */
#ifndef VYRE_TOOL_OPT_H
#define VYRE_TOOL_OPT_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* The most options one command may declare. */
#define TOOL_OPT_MAX 64

/* A number macro as a string, for help texts in a table ("schema_version "
 * TOOL_STR(X_SCHEMA_VERSION)). */
#define TOOL_STR_(x) #x
#define TOOL_STR(x)  TOOL_STR_(x)

/* The hidden option every tool answers, before anything else. */
#define TOOL_OPT_COMPLETION_HELPER "--completion-helper"

/* What completes an option's argument (tool_opt.values). */
#define TOOL_OPT_FILE "<file>" /* a file name */
#define TOOL_OPT_DIR  "<dir>"  /* a directory name */

typedef struct tool_opt {
    int key;            /* what getopt_long returns for it (the short letter when it has one) */
    char short_name;    /* its short letter (-d), equal to key; 0: long only */
    const char *name;   /* the long name, without "--" */
    const char *arg;    /* the argument's name in --help ("SECONDS"); NULL: none */
    const char *help;   /* lines joined by '\n'; NULL: not listed (an old spelling) */
    const char *values; /* what completes the argument: NULL nothing, TOOL_OPT_FILE,
                           TOOL_OPT_DIR, or words separated by spaces */
} tool_opt;

/* Arrays for getopt_long from a table ended by {0}: longs (TOOL_OPT_MAX + 1
 * entries) and shorts (2 * TOOL_OPT_MAX + 2 bytes). getopt_long permutes:
 * options may follow operands ("show last --json"), as the commands take
 * them. */
typedef struct tool_opt_arrays {
    struct option longs[TOOL_OPT_MAX + 1];
    char shorts[2 * TOOL_OPT_MAX + 2];
} tool_opt_arrays;

/* Fills g from the table; 0, or -1 when the table has more than
 * TOOL_OPT_MAX entries or a short letter that is not its key (programming
 * errors: the tests catch them). */
int tool_opt_getopt(const tool_opt *opts, tool_opt_arrays *g);

/* The OPTIONS block of --help: "  -d, --delay SECONDS   help", the help
 * in column 25 (on the next line when the left side is too wide), its
 * further lines indented to that column. Hidden options are left out. */
void tool_opt_help(FILE *out, const tool_opt *opts);

/* What the bash completion reads: one line an option and spelling
 * ("-d", then "--delay"), tab-separated: the word, 1 when it takes an
 * argument (else 0), and its completion (tool_opt.values, "" for none).
 * Hidden options are left out: old spellings are not offered. */
void tool_opt_complete(FILE *out, const tool_opt *opts);

/* 1 when argv asks for the completion helper (argv[1] is
 * TOOL_OPT_COMPLETION_HELPER). */
int tool_opt_wants_completion(int argc, char *const argv[]);

#endif
