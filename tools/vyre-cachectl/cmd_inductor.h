/*
 * cmd_inductor.h - `vyre-cachectl inductor ACTION`: TorchInductor's cache
 * (libcore's vyre/inductor.h reads it). One file per action group:
 * cmd_inductor.c (parsing, stats, ls), cmd_inductor_verify.c,
 * cmd_inductor_prune.c (prune and clear), over cmd_inductor_doc.c (the
 * JSON head they share).
 */
#ifndef VYRE_CACHECTL_CMD_INDUCTOR_H
#define VYRE_CACHECTL_CMD_INDUCTOR_H

#include "cmds.h"

/* What the actions share: the options as parsed, the cache as found. */
typedef struct inductor_opts {
    const char *action;
    const char *dir;        /* --dir, else NULL */
    char path[4096];        /* the cache in use */
    const char *dir_source; /* "--dir", "TORCHINDUCTOR_CACHE_DIR", "default" */
    int repair;             /* verify --repair */
    int dry_run;            /* prune, clear --dry-run */
    int yes;                /* clear --yes */
    uint64_t max_bytes;     /* prune --max-size */
    int64_t max_age_ns;     /* prune --max-age */
} inductor_opts;

/* {"schema_version": 2, "inductor_cache_dir", "inductor_cache_dir_source"}
 * (cmd_inductor_doc.c). */
json_t *cachectl_inductor_json_root(const inductor_opts *o);

int cachectl_inductor_verify(const inductor_opts *o, const vyre_inductor_cache *c);
int cachectl_inductor_prune(const inductor_opts *o, const vyre_inductor_cache *c);

#endif /* VYRE_CACHECTL_CMD_INDUCTOR_H */
