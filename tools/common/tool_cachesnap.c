/*
 * tool_cachesnap.c - see tool_cachesnap.h.
 *
 * The handle and the reader thread share one heap block
 * (tool_refblock.h): the thread may outlive the handle (a monitor that
 * exits while the index is locked does not wait for the read), and
 * whichever lets go last frees it.
 */
#include "tool_cachesnap.h"
#include "tool_cli.h"
#include "tool_refblock.h"
#include "tool_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tool_cachesnap {
    tool_refblock rb; /* refs: the handle, and a reader thread under way */
    int in_flight;    /* a reader thread runs */
    int done;         /* it has stored its result, not yet taken */
    int joinable;     /* a thread to join */
    pthread_t thread;
    uint64_t start_ns; /* when the read under way started */
    uint64_t end_ns;   /* when the last read ended (0: none yet) */
    double refresh_s;
    int with_remotes;
    char *root;                    /* the caller's root, or NULL */
    tool_cachesnap_figures fig;    /* what callers are given */
    tool_cachesnap_figures result; /* written by the reader */
};

static void copy_str(char *dst, size_t size, const char *src)
{
    tool_mark_cut(dst, size, snprintf(dst, size, "%s", src ? src : ""));
}

/* One line on a monitor; a locked index says so first. */
static void error_text(char *dst, size_t size, int rc, const vyre_error *e)
{
    if (rc == VYRE_EBUSY)
        tool_mark_cut(
            dst, size,
            snprintf(dst, size, "cache busy: %s", e->message[0] ? e->message : vyre_strerror(rc)));
    else
        tool_error_line(dst, size, rc, e);
}

/* One read of the figures into f (the reader thread's work). */
static void read_figures(const char *want_root, int with_remotes, tool_cachesnap_figures *f)
{
    vyre_error e;
    vyre_error_clear(&e);
    memset(f, 0, sizeof *f);
    int rc = 0;
    if (want_root)
        copy_str(f->root, sizeof f->root, want_root);
    else
        rc = vyre_cache_default_root(f->root, sizeof f->root, &e);
    vyre_cache *cache = NULL;
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.flags = VYRE_CACHE_READONLY | VYRE_CACHE_NO_HIT_TRACK;
    if (rc == 0)
        rc = vyre_cache_open(f->root, &oo, &cache, &e);
    if (rc == 0)
        rc = vyre_cache_stats_get(cache, &f->stats, &e);
    for (size_t i = 0; rc == 0 && with_remotes && i < vyre_cache_remote_count(cache) &&
                       f->nremotes < VYRE_REMOTE_MAX;
         i++) {
        vyre_remote_info info;
        tool_cachesnap_remote *r = &f->remotes[f->nremotes];
        if (vyre_cache_remote_get(cache, i, VYRE_CACHE_REMOTE_TOTALS, &info, &r->st, NULL))
            continue;
        copy_str(r->url, sizeof r->url, info.url);
        r->read_only = info.read_only;
        f->nremotes++;
    }
    vyre_cache_close(cache);
    f->read_ns = tool_mono_ns();
    if (rc == 0) {
        f->state = TOOL_CACHESNAP_OK;
    } else if (rc == VYRE_ENOENT) {
        f->state = TOOL_CACHESNAP_MISSING;
        copy_str(f->msg, sizeof f->msg, "no pipeline cache yet");
    } else {
        f->state = TOOL_CACHESNAP_ERROR;
        f->busy = rc == VYRE_EBUSY;
        error_text(f->msg, sizeof f->msg, rc, &e);
        memset(&f->stats, 0, sizeof f->stats);
        f->nremotes = 0;
    }
}

/* Drops a reference (s->rb.mu held); the last frees the block. */
static void release(tool_cachesnap *s)
{
    if (tool_refblock_release(&s->rb)) {
        free(s->root);
        free(s);
    }
}

static void *reader_main(void *arg)
{
    tool_cachesnap *s = arg;
    tool_cachesnap_figures *f = malloc(sizeof *f);
    if (f)
        read_figures(s->root, s->with_remotes, f);
    pthread_mutex_lock(&s->rb.mu);
    if (f) {
        s->result = *f;
    } else {
        memset(&s->result, 0, sizeof s->result);
        s->result.state = TOOL_CACHESNAP_ERROR;
        copy_str(s->result.msg, sizeof s->result.msg, "out of memory");
    }
    free(f);
    s->done = 1;
    pthread_cond_broadcast(&s->rb.cv);
    release(s);
    return NULL;
}

tool_cachesnap *tool_cachesnap_new(const char *root, double refresh_s, int with_remotes)
{
    tool_cachesnap *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (root && !(s->root = strdup(root))) {
        free(s);
        return NULL;
    }
    tool_refblock_init(&s->rb, 1);
    s->refresh_s = refresh_s > 0 ? refresh_s : 0;
    s->with_remotes = with_remotes;
    s->fig.state = TOOL_CACHESNAP_PENDING;
    if (root)
        copy_str(s->fig.root, sizeof s->fig.root, root);
    return s;
}

/* Takes a stored result (mu held). */
static void take_result(tool_cachesnap *s)
{
    if (!s->done)
        return;
    s->fig = s->result;
    s->end_ns = s->result.read_ns ? s->result.read_ns : tool_mono_ns();
    s->done = 0;
    s->in_flight = 0;
    if (s->joinable) {
        pthread_join(s->thread, NULL); /* it has stored its result: ends at once */
        s->joinable = 0;
    }
}

/* Starts a read (mu held): 1 when one was started. */
static int start_read(tool_cachesnap *s, uint64_t now_ns)
{
    s->rb.refs++;
    s->in_flight = 1;
    s->start_ns = now_ns;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    int rc = pthread_create(&s->thread, &attr, reader_main, s);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        s->rb.refs--;
        s->in_flight = 0;
        s->end_ns = now_ns ? now_ns : 1;
        s->fig.state = TOOL_CACHESNAP_ERROR;
        snprintf(s->fig.msg, sizeof s->fig.msg, "cannot start a thread to read the cache: %s",
                 strerror(rc));
        return 0;
    }
    s->joinable = 1;
    return 1;
}

/* Waits for the read just started, TOOL_CACHESNAP_WAIT_MS at most (mu held). */
static void wait_read(tool_cachesnap *s)
{
    uint64_t until = tool_refblock_deadline((uint64_t)TOOL_CACHESNAP_WAIT_MS * 1000000u);
    while (!s->done && !tool_refblock_wait(&s->rb, until))
        ;
}

void tool_cachesnap_get(tool_cachesnap *s, uint64_t now_ns, tool_cachesnap_figures *out)
{
    pthread_mutex_lock(&s->rb.mu);
    take_result(s);
    int due = !s->in_flight &&
              (s->end_ns == 0 ||
               (now_ns >= s->end_ns && (double)(now_ns - s->end_ns) / 1e9 >= s->refresh_s));
    if (due && start_read(s, now_ns)) {
        wait_read(s);
        take_result(s);
    }
    *out = s->fig;
    if (s->in_flight &&
        tool_mono_ns() - s->start_ns >= (uint64_t)TOOL_CACHESNAP_WAIT_MS * 1000000u) {
        /* Not the last figures: they would pass for current. */
        double secs = (double)(tool_mono_ns() - s->start_ns) / 1e9;
        memset(&out->stats, 0, sizeof out->stats);
        out->nremotes = 0;
        out->state = TOOL_CACHESNAP_ERROR;
        out->busy = 1;
        snprintf(out->msg, sizeof out->msg,
                 "cache busy: reading the index has taken %.1f s so far (another process may "
                 "hold it locked)",
                 secs);
    }
    pthread_mutex_unlock(&s->rb.mu);
}

void tool_cachesnap_free(tool_cachesnap *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->rb.mu);
    take_result(s);
    if (s->joinable) {
        /* A read under way: it frees the block when it ends. */
        pthread_detach(s->thread);
        s->joinable = 0;
    }
    release(s);
}
