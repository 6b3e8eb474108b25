/*
 * view_tree.c - see view_int.h: the tree view's rows (`t`; issue 37): the
 * GPU processes under their parents, as nvitop's tree shows the launcher
 * (torchrun, a shell) above its workers. Parents that are not rows come
 * from the snapshot's ancestors; only those above a shown row are drawn.
 */
#include <stdlib.h>
#include <string.h>

#include "view_int.h"

#define TREE_DEPTH_MAX 32 /* pids form a tree; this bounds a corrupt one */

typedef struct tree {
    const top_snapshot *s;
    const size_t *procs; /* shown rows, in sort order */
    size_t nprocs;
    unsigned char *need; /* per ancestor: above a shown row */
    top_proc_line *out;
    size_t n, cap;
} tree;

/* The parent pid of node (a row: anc < 0; else an ancestor). */
static int32_t parent_of(const tree *t, size_t proc, int anc)
{
    return anc >= 0 ? t->s->anc[anc].ppid : t->s->procs[proc].ppid;
}

/* Whether pid is a shown row or a needed ancestor. */
static int is_node(const tree *t, int32_t pid)
{
    for (size_t i = 0; pid > 0 && i < t->nprocs; i++)
        if (t->s->procs[t->procs[i]].pid == pid && !t->s->procs[t->procs[i]].foreign)
            return 1;
    for (size_t i = 0; pid > 0 && i < t->s->nanc; i++)
        if (t->need[i] && t->s->anc[i].pid == pid)
            return 1;
    return 0;
}

static void emit(tree *t, size_t proc, int anc, int depth)
{
    if (anc >= 0) {
        if (t->n < t->cap)
            t->out[t->n++] = (top_proc_line){0, -1, anc, depth};
    } else {
        unsigned ng = t->s->procs[proc].ngpus;
        for (unsigned k = 0; k < (ng ? ng : 1) && t->n < t->cap; k++)
            t->out[t->n++] = (top_proc_line){proc, ng ? (int)k : -1, -1, depth};
    }
    if (depth >= TREE_DEPTH_MAX)
        return;
    int32_t pid = anc >= 0 ? t->s->anc[anc].pid : t->s->procs[proc].pid;
    if (anc < 0 && t->s->procs[proc].foreign)
        return;
    for (size_t i = 0; i < t->nprocs; i++)
        if (t->s->procs[t->procs[i]].ppid == pid && !t->s->procs[t->procs[i]].foreign)
            emit(t, t->procs[i], -1, depth + 1);
    for (size_t i = 0; i < t->s->nanc; i++)
        if (t->need[i] && t->s->anc[i].ppid == pid)
            emit(t, 0, (int)i, depth + 1);
}

size_t top_view_tree_lines(const top_snapshot *s, const size_t *procs, size_t nprocs,
                           top_proc_line *out, size_t cap)
{
    tree t = {s, procs, nprocs, calloc(s->nanc ? s->nanc : 1, 1), out, 0, cap};
    if (!t.need)
        return 0;
    /* The ancestors above a shown row. */
    for (size_t i = 0; i < nprocs; i++) {
        int32_t pid = s->procs[procs[i]].ppid;
        for (int d = 0; d < TREE_DEPTH_MAX && pid > 1; d++) {
            size_t a = 0;
            while (a < s->nanc && s->anc[a].pid != pid)
                a++;
            if (a == s->nanc || t.need[a])
                break;
            t.need[a] = 1;
            pid = s->anc[a].ppid;
        }
    }
    /* Roots: rows, then ancestors, whose parent is not drawn. */
    for (size_t i = 0; i < nprocs; i++)
        if (!is_node(&t, parent_of(&t, procs[i], -1)))
            emit(&t, procs[i], -1, 0);
    for (size_t i = 0; i < s->nanc; i++)
        if (t.need[i] && !is_node(&t, s->anc[i].ppid))
            emit(&t, 0, (int)i, 0);
    free(t.need);
    return t.n;
}
