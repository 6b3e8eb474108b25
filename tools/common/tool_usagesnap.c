/*
 * tool_usagesnap.c - see tool_usagesnap.h.
 *
 * The handle and the measuring thread share one heap block, reference
 * counted under its mutex (as tool_cachesnap.c does): a monitor that quits
 * while a walk is under way does not wait for it, and whichever lets go
 * last frees the block.
 */
#include "tool_usagesnap.h"
#include "tool_cli.h"
#include "tool_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tool_usagesnap {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a round stored, or stop */
    int refs;          /* the handle, and the thread while it runs */
    int stop;
    double every_s;
    uint64_t max_entries, max_ms;
    char *root; /* vyre's cache root, or NULL */
    tool_usagesnap_figures fig;
};

/* "message; hint: hint" for one line of a monitor. */
static void error_text(char *dst, size_t size, int rc, const vyre_error *e)
{
    const char *hint = e->hint[0] ? e->hint : tool_remedy(e->remedy);
    int n = e->message[0] && hint && hint[0]
                ? snprintf(dst, size, "%s; hint: %s", e->message, hint)
                : snprintf(dst, size, "%s", e->message[0] ? e->message : vyre_strerror(rc));
    tool_mark_cut(dst, size, n);
}

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
            error_text(c->msg, sizeof c->msg, where[i].error.code, &where[i].error);
            f->errors++;
            continue;
        }
        vyre_error e;
        vyre_error_clear(&e);
        int rc = vyre_usage_measure(where[i].path, s->max_entries, s->max_ms, &c->u, &e);
        if (rc) {
            c->state = TOOL_USAGE_ERROR;
            error_text(c->msg, sizeof c->msg, rc, &e);
            f->errors++;
        }
    }
    f->read_ns = tool_mono_ns();
    f->rounds++;
}

static void release(tool_usagesnap *s)
{
    /* Called with s->mu held. */
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last)
        return;
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->root);
    free(s);
}

/* An absolute CLOCK_MONOTONIC time ns from now. */
static struct timespec mono_after(uint64_t ns)
{
    uint64_t t = tool_mono_ns() + ns;
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    return ts;
}

static void *usage_main(void *arg)
{
    tool_usagesnap *s = arg;
    tool_usagesnap_figures *f = malloc(sizeof *f);
    pthread_mutex_lock(&s->mu);
    while (!s->stop && f) {
        *f = s->fig;
        pthread_mutex_unlock(&s->mu);
        measure_round(s, f);
        pthread_mutex_lock(&s->mu);
        s->fig = *f;
        pthread_cond_broadcast(&s->cv);
        struct timespec until = mono_after((uint64_t)(s->every_s * 1e9));
        while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT)
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
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->mu, NULL);
    s->refs = 2;
    pthread_t t;
    if (pthread_create(&t, NULL, usage_main, s) != 0) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        free(s->root);
        free(s);
        return NULL;
    }
    pthread_detach(t);
    return s;
}

void tool_usagesnap_get(tool_usagesnap *s, tool_usagesnap_figures *out, unsigned wait_ms)
{
    pthread_mutex_lock(&s->mu);
    struct timespec until = mono_after((uint64_t)wait_ms * 1000000u);
    while (!s->fig.rounds && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT)
        ;
    *out = s->fig;
    pthread_mutex_unlock(&s->mu);
}

void tool_usagesnap_free(tool_usagesnap *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
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
