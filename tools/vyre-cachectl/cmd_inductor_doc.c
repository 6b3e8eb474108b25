/*
 * cmd_inductor_doc.c - the head of every `vyre-cachectl inductor ... --json`
 * document (cmd_inductor.h). Its own file, below the actions: the
 * dispatcher (cmd_inductor.c) calls the actions, and the actions call
 * only down, never back into the dispatcher.
 */
#include "cmd_inductor.h"

json_t *cachectl_inductor_json_root(const inductor_opts *o)
{
    return json_pack("{s:i, s:s, s:s}", "schema_version", 2, "inductor_cache_dir", o->path,
                     "inductor_cache_dir_source", o->dir_source);
}
