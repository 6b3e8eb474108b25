/*
 * cmd_triton.h - `vyre-cachectl triton ACTION`: Triton's kernel cache
 * (libcore's vyre/triton.h reads it). One file per action group:
 * cmd_triton.c (parsing, stats, ls), cmd_triton_verify.c,
 * cmd_triton_relocate.c, cmd_triton_prune.c (prune, clear), cmd_triton_show.c.
 */
#ifndef VYRE_CACHECTL_CMD_TRITON_H
#define VYRE_CACHECTL_CMD_TRITON_H

#include "cmds.h"

/* What the actions share: the options as parsed, the cache as found. */
typedef struct triton_opts {
    const char *action;
    const char *dir;        /* --dir, else NULL */
    char path[4096];        /* the cache in use */
    const char *dir_source; /* "--dir", "TRITON_CACHE_DIR", "TRITON_HOME", "HOME" */
    int repair;             /* verify --repair */
    int dry_run;            /* relocate, prune, clear --dry-run */
    /* prune and clear */
    uint64_t max_size;         /* --max-size; 0: none */
    int64_t max_age_ns;        /* --max-age; 0: none */
    const char *keep_arch[16]; /* --keep-arch, repeatable */
    size_t n_keep_arch;
    const char *triton_version; /* --triton-version, else NULL */
    int auto_limit;             /* prune --auto: triton_max_size from the configuration */
    int print_timer;            /* prune --auto --print-timer */
    int yes;                    /* clear --yes */
    const char *show_what;      /* show KEY|KERNEL_NAME */
} triton_opts;

int cachectl_triton_verify(const triton_opts *o, const vyre_triton_cache *c);
int cachectl_triton_relocate(const triton_opts *o, const vyre_triton_cache *c);
/* The actions' options (keys of their tool_opt rows). */
enum {
    TRITON_OPT_DIR = CACHECTL_OPT_FIRST_LOCAL,
    TRITON_OPT_REPAIR,
    TRITON_OPT_DRY_RUN,
    TRITON_OPT_MAX_SIZE,
    TRITON_OPT_MAX_AGE,
    TRITON_OPT_KEEP_ARCH,
    TRITON_OPT_VERSION,
    TRITON_OPT_AUTO,
    TRITON_OPT_PRINT_TIMER,
    TRITON_OPT_YES,
    TRITON_OPT_ALL, /* explain --all */
};
/* Each option's row, declared once; the actions' tables (cmd_triton.c,
 * cmd_triton_explain.c) list the rows they take. */
#define TRITON_ROW_DIR                                                                             \
    {                                                                                              \
        TRITON_OPT_DIR, 0, "dir", "DIR",                                                           \
            "the Triton cache to use (default: $TRITON_CACHE_DIR,\n"                               \
            "else $TRITON_HOME/.triton/cache, else ~/.triton/cache)",                              \
            TOOL_OPT_DIR                                                                           \
    }
#define TRITON_ROW_REPAIR                                                                          \
    {                                                                                              \
        TRITON_OPT_REPAIR, 0, "repair", NULL,                                                      \
            "verify: move bad groups into DIR/.vyre-quarantine\n(never deleted)", NULL             \
    }
#define TRITON_ROW_DRY_RUN                                                                         \
    {                                                                                              \
        TRITON_OPT_DRY_RUN, 0, "dry-run", NULL,                                                    \
            "relocate, prune, clear: say what would change, change\nnothing", NULL                 \
    }
#define TRITON_ROW_MAX_SIZE                                                                        \
    {                                                                                              \
        TRITON_OPT_MAX_SIZE, 0, "max-size", "SIZE",                                                \
            "prune: remove groups until the cache is at most SIZE\n"                               \
            "(500M, 2G, 1.5GiB; a size without a unit is GiB)",                                    \
            NULL                                                                                   \
    }
#define TRITON_ROW_MAX_AGE                                                                         \
    {                                                                                              \
        TRITON_OPT_MAX_AGE, 0, "max-age", "AGE",                                                   \
            "prune: remove groups unused for longer (30d, 12h)", NULL                              \
    }
#define TRITON_ROW_KEEP_ARCH                                                                       \
    {                                                                                              \
        TRITON_OPT_KEEP_ARCH, 0, "keep-arch", "ARCH",                                              \
            "prune: remove kernel groups of any other target.arch\n"                               \
            "(90 or sm_90; may be repeated)",                                                      \
            NULL                                                                                   \
    }
#define TRITON_ROW_VERSION                                                                         \
    {                                                                                              \
        TRITON_OPT_VERSION, 0, "triton-version", "V",                                              \
            "prune: remove kernel groups built by any other Triton\n"                              \
            "version, or by one too old to record it (before 3.3)",                                \
            NULL                                                                                   \
    }
#define TRITON_ROW_AUTO                                                                            \
    {                                                                                              \
        TRITON_OPT_AUTO, 0, "auto", NULL,                                                          \
            "prune to the triton_max_size configuration key\n"                                     \
            "('vyre-cachectl config'; 0, the default: nothing to do)",                             \
            NULL                                                                                   \
    }
#define TRITON_ROW_PRINT_TIMER                                                                     \
    {                                                                                              \
        TRITON_OPT_PRINT_TIMER, 0, "print-timer", NULL,                                            \
            "with --auto: print a systemd user service and timer\n"                                \
            "(and a crontab line) that run it daily; installs nothing",                            \
            NULL                                                                                   \
    }
#define TRITON_ROW_YES                                                                             \
    {                                                                                              \
        TRITON_OPT_YES, 0, "yes", NULL, "clear: required, unless --dry-run", NULL                  \
    }
#define TRITON_ROW_END                                                                             \
    {                                                                                              \
        0, 0, NULL, NULL, NULL, NULL                                                               \
    }

/* `triton explain`'s options (cmd_triton_explain.c). */
extern const tool_opt cachectl_triton_explain_opts[];

/* prune and clear scan the cache themselves (vyre_triton_prune). */
int cachectl_triton_prune(triton_opts *o);
int cachectl_triton_show(const triton_opts *o, const vyre_triton_cache *c);
/* Triton's groups as `triton ls` lists them (cmd_triton_group.c, the one
 * column table): groups[idx[i]] for i < n (idx NULL: groups[0..n)) in
 * the format the global options chose; doc as cachectl_list (consumed).
 * Returns 0 or the exit code of a usage error. */
int cachectl_triton_list(const triton_opts *o, const vyre_triton_group *groups, const size_t *idx,
                         size_t n, json_t *doc);
/* Group g's object as `triton ls --json` has it (new reference). */
json_t *cachectl_triton_group_json(const triton_opts *o, const vyre_triton_group *g);
/* The --dir a vyre-bench command needs for o's cache: NULL when
 * vyre-bench finds it by itself (Triton's own rule). */
const char *cachectl_triton_bench_dir(const triton_opts *o);
/* "kernel", "launcher", "temp", "other". */
const char *cachectl_triton_kind_name(vyre_triton_group_kind k);
/* The options of prune and clear (cmd_triton_prune.c): 0 not one of them,
 * 1 taken, else the exit code of a usage error. */
int cachectl_triton_prune_option(int c, const char *arg, triton_opts *o);
/* After parsing: options that do not fit the action. 0 or an exit code. */
int cachectl_triton_prune_check(const triton_opts *o);

#endif /* VYRE_CACHECTL_CMD_TRITON_H */
