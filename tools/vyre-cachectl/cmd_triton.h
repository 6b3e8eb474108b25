/*
 * cmd_triton.h - `vyre-cachectl triton ACTION`: Triton's kernel cache
 * (libcore's vyre/triton.h reads it). One file per action group:
 * cmd_triton.c (parsing, stats, ls), cmd_triton_verify.c,
 * cmd_triton_relocate.c.
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
    int dry_run;            /* relocate --dry-run */
} triton_opts;

int cachectl_triton_verify(const triton_opts *o, const vyre_triton_cache *c);
int cachectl_triton_relocate(const triton_opts *o, const vyre_triton_cache *c);

#endif /* VYRE_CACHECTL_CMD_TRITON_H */
