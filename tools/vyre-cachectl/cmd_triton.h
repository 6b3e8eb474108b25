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
/* prune's and clear's options, numbered apart from cmd_triton.c's own. */
enum {
    TRITON_OPT_MAX_SIZE = CACHECTL_OPT_FIRST_LOCAL + 0x40,
    TRITON_OPT_MAX_AGE,
    TRITON_OPT_KEEP_ARCH,
    TRITON_OPT_VERSION,
    TRITON_OPT_AUTO,
    TRITON_OPT_PRINT_TIMER,
    TRITON_OPT_YES,
};
#define TRITON_PRUNE_LONGOPTS                                                                      \
    {"max-size", required_argument, NULL, TRITON_OPT_MAX_SIZE},                                    \
        {"max-age", required_argument, NULL, TRITON_OPT_MAX_AGE},                                  \
        {"keep-arch", required_argument, NULL, TRITON_OPT_KEEP_ARCH},                              \
        {"triton-version", required_argument, NULL, TRITON_OPT_VERSION},                           \
        {"auto", no_argument, NULL, TRITON_OPT_AUTO},                                              \
        {"print-timer", no_argument, NULL, TRITON_OPT_PRINT_TIMER},                                \
    {                                                                                              \
        "yes", no_argument, NULL, TRITON_OPT_YES                                                   \
    }

/* prune and clear scan the cache themselves (vyre_triton_prune). */
int cachectl_triton_prune(triton_opts *o);
int cachectl_triton_show(const triton_opts *o, const vyre_triton_cache *c);
/* ls's and show's JSON object (new reference) and row of one group
 * (cmd_triton_group.c). */
json_t *cachectl_triton_group_json(const vyre_triton_group *g);
void cachectl_triton_print_group(const vyre_triton_group *g, int64_t now);
/* The options of prune and clear (cmd_triton_prune.c): 0 not one of them,
 * 1 taken, else the exit code of a usage error. */
int cachectl_triton_prune_option(int c, const char *arg, triton_opts *o);
/* After parsing: options that do not fit the action. 0 or an exit code. */
int cachectl_triton_prune_check(const triton_opts *o);

#endif /* VYRE_CACHECTL_CMD_TRITON_H */
