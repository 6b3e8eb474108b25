/*
 * tool_usagesnap.c - see tool_usagesnap.h.
 *
 * The handle and the measuring thread share one heap block
 * (tool_refblock.h): a monitor that quits while a walk is under way does
 * not wait for it, and whichever lets go last frees the block.
 */
#include "tool_usagesnap.h"
#include "tool_cli.h"
#include "tool_refblock.h"
#include "tool_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tool_usagesnap {
    tool_refblock rb; /* cv: a round stored, or stop; refs: the handle, the thread */
    int stop;
    double every_s;
    uint64_t max_entries, max_ms;
    char *root; /* vyre's cache root, or NULL */
    tool_usagesnap_figures fig;
};

/* One round into *f (the thread's work, no lock held). */
static void measure_round(const tool_usagesnap *s, tool_usagesnap_figures *f)
{
    vyre_usage_cache where[VYRE_USAGE_N_CACHES];
    vyre_usage_caches(s->root, where);
    for (int i = 0; i < VYRE_USAGE_N_CACHES; i++) {
        tool_usage_fig *c = &f->c[i];
        memset(c, 0, sizeof *c);
        c->where = where[i];
        if (!where[i].located) {
            c->state = TOOL_USAGE_ERROR;
            tool_error_line(c->msg, sizeof c->msg, where[i].error.code, &where[i].error);
            f->errors++;
            continue;
        }
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre_usage_measure(where[i].path, s->max_entries, s->max_ms, &c->u, &e);
        if (rc) {
            c->state = TOOL_USAGE_ERROR;
            tool_error_line(c->msg, sizeof c->msg, rc, &e);
            f->errors++;
        }
    }
    f->read_ns = tool_mono_ns();
    f->rounds++;
}

/* Drops a reference (s->rb.mu held); the last frees the block. */
static void release(tool_usagesnap *s)
{
    if (tool_refblock_release(&s->rb)) {
        free(s->root);
        free(s);
    }
}

static void *usage_main(void *arg)
{
    tool_usagesnap *s = arg;
    tool_usagesnap_figures *f = malloc(sizeof *f);
    pthread_mutex_lock(&s->rb.mu);
    while (!s->stop && f) {
        *f = s->fig;
        pthread_mutex_unlock(&s->rb.mu);
        measure_round(s, f);
        pthread_mutex_lock(&s->rb.mu);
        s->fig = *f;
        pthread_cond_broadcast(&s->rb.cv);
        uint64_t until = tool_refblock_deadline((uint64_t)(s->every_s * 1e9));
        while (!s->stop && !tool_refblock_wait(&s->rb, until))
            ;
    }
    free(f);
    release(s);
    return NULL;
}

tool_usagesnap *tool_usagesnap_new(const char *vyre_root, double every_s, uint64_t max_entries,
                                   uint64_t max_ms)
{
    tool_usagesnap *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (vyre_root && !(s->root = strdup(vyre_root))) {
        free(s);
        return NULL;
    }
    s->every_s = every_s > 0 ? every_s : 60;
    s->max_entries = max_entries;
    s->max_ms = max_ms;
    tool_refblock_init(&s->rb, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, usage_main, s) != 0) {
        pthread_mutex_lock(&s->rb.mu);
        s->rb.refs = 1; /* no thread: this release is the last */
        release(s);
        return NULL;
    }
    pthread_detach(t);
    return s;
}

void tool_usagesnap_get(tool_usagesnap *s, tool_usagesnap_figures *out, unsigned wait_ms)
{
    pthread_mutex_lock(&s->rb.mu);
    uint64_t until = tool_refblock_deadline((uint64_t)wait_ms * 1000000u);
    while (!s->fig.rounds && !tool_refblock_wait(&s->rb, until))
        ;
    *out = s->fig;
    pthread_mutex_unlock(&s->rb.mu);
}

void tool_usagesnap_free(tool_usagesnap *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->rb.mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->rb.cv);
    release(s);
}

double tool_usage_fs_pct(const tool_usage_fig *f)
{
    double b = vyre_usage_fs_full_pct(&f->u), i = vyre_usage_inodes_full_pct(&f->u);
    return b > i ? b : i;
}

int tool_usage_warn(const tool_usage_fig *f)
{
    if (f->state != TOOL_USAGE_OK)
        return 0;
    if (f->where.limit_bytes && f->u.bytes > f->where.limit_bytes)
        return 1;
    return tool_usage_fs_pct(f) >= TOOL_USAGE_FS_WARN_PCT;
}
