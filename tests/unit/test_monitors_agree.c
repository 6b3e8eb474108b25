/*
 * test_monitors_agree.c - vyre-top's process collector (top_collect) and
 * vyre-exporter's (exp_collect_procs) read the same sequence of telemetry
 * pages and must give the same answers (issue 24: they used to read pages
 * each in its own way, and had diverged).
 *
 * The pages are real pages from the writer, patched: counters, the kernel
 * ring (slots written as the writer writes them), pid, start time and PID
 * namespace. Four processes, three readings:
 *   A  this process: a few kernels, then 300 at once (the ring keeps 256:
 *      an overflow), then a new page under the same pid and start time
 *      with its counters back at zero (the image after an exec).
 *   B  a child: alive at the first reading, dead (its page stale) at the
 *      second and third.
 *   C  a child whose pid is "reused": its page first says start time 0,
 *      then its real start time (a live pid can show only those two
 *      without its page being stale; to both monitors it is another start
 *      time under the same pid), with a fresh ring and counters.
 *   D  a page of another PID namespace (pid 1 there).
 * Each reading is summed up per collector as text (non-foreign rows by
 * pid, then the foreign and stale page counts) and both must equal the
 * expected text. Before the tracker, vyre-top showed B as live after its
 * process died (it never asked vyre_telemetry_stale; only a reap, every
 * 10 s, removed such pages) and gave A's exec'd page 2^64 - 299 new
 * kernels, while the exporter added A's new sums to the old image's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect.h"
#include "exporter_internal.h"
#include "testutil.h"
#include "trace/telemetry_internal.h"

static char g_dir[PATH_MAX], g_tel[PATH_MAX + 8], g_scratch[PATH_MAX + 8];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_dir);
    snprintf(g_scratch, sizeof g_scratch, "%s/scratch", g_dir);
    cr_assert_eq(mkdir(g_tel, 0700), 0);
    cr_assert_eq(mkdir(g_scratch, 0700), 0);
    unsetenv("VYRE_TELEMETRY");
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

/* A fresh page of this process from the real writer (in a scratch
 * directory, so the watched one only holds what the test writes), with
 * nothing published and an empty ring. */
static vyre__tel_page *fresh_page(void)
{
    cr_assert_eq(setenv("VYRE_TELEMETRY_DIR", g_scratch, 1), 0);
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%d.vtel", g_scratch, (int)getpid());
    size_t len = 0;
    vyre__tel_page *pg = (vyre__tel_page *)(void *)tu_read_file(path, &len);
    vyre_telemetry_close(t);
    cr_assert_not_null(pg);
    cr_assert_eq(len, sizeof *pg);
    return pg;
}

/* Appends n kernels named name to the ring, as the writer does. */
static void add_kernels(vyre__tel_page *pg, const char *name, int n)
{
    uint64_t words[VYRE__TEL_NAME_WORDS] = {0};
    memcpy(words, name, strlen(name));
    for (int i = 0; i < n; i++) {
        uint64_t serial = atomic_load(&pg->h.ring_count) + 1;
        vyre__tel_slot *s = &pg->ring[(serial - 1) % VYRE_TELEMETRY_RING_CAPACITY];
        atomic_store(&s->duration_ns, 1000);
        atomic_store(&s->end_ns, serial * 10000);
        atomic_store(&s->device, 0);
        for (int w = 0; w < VYRE__TEL_NAME_WORDS; w++)
            atomic_store(&s->name[w], words[w]);
        atomic_store(&s->seq, 2 * serial);
        atomic_store(&pg->h.ring_count, serial);
        atomic_store(&pg->h.ring_head, (uint32_t)(serial % VYRE_TELEMETRY_RING_CAPACITY));
    }
}

/* One publish of `launches` launches (seq stays even: a finished publish). */
static void publish(vyre__tel_page *pg, uint64_t launches)
{
    atomic_store(&pg->h.counters[VYRE_CTR_LAUNCHES], launches);
    atomic_fetch_add(&pg->h.publish_count, 1);
    atomic_fetch_add(&pg->h.seq, 2);
}

static void put_page(int32_t pid, const vyre__tel_page *pg)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%d.vtel", g_tel, (int)pid);
    vyre__tel_page copy;
    memcpy(&copy, pg, sizeof copy);
    copy.h.pid = pid;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0, "open(%s): %s", path, strerror(errno));
    cr_assert_eq(write(fd, &copy, sizeof copy), (ssize_t)sizeof copy);
    close(fd);
}

/* A child that waits to be killed. */
static pid_t sleeper(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        for (;;)
            pause();
    }
    return pid;
}

static void end_child(pid_t pid)
{
    kill(pid, SIGKILL);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

/* ---- the answers, as text ------------------------------------------- */

typedef struct sumbuf {
    char text[4096];
    size_t len;
} sumbuf;

static void put(sumbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sumbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->text + b->len, sizeof b->text - b->len, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < sizeof b->text - b->len, "summary too long");
    b->len += (size_t)n;
}

/* vyre-top: a row per process; the interval's kernels when it has a
 * previous reading of the same process. */
static void top_summary(const top_snapshot *s, sumbuf *b)
{
    size_t foreign = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const top_proc *p = &s->procs[i];
        if (p->foreign) {
            foreign++;
            continue;
        }
        put(b, "pid %d launches %llu kernels %llu", (int)p->pid, (unsigned long long)p->launches,
            (unsigned long long)p->kernels_total);
        if (p->has_delta)
            put(b, " interval new %llu seen %llu\n", (unsigned long long)p->kernels_new,
                (unsigned long long)p->kernels_seen);
        else
            put(b, " first\n");
    }
    put(b, "foreign %zu stale %zu\n", foreign, s->stale);
}

/* The exporter keeps running sums; the interval is the difference from
 * the previous scrape's sums of the same process (same pid and start
 * time, sums not restarted). */
typedef struct exp_prev {
    int32_t pid;
    uint64_t start_time;
    uint64_t seen, unseen;
} exp_prev;

static void exp_summary(const exporter *x, exp_prev *prev, size_t *nprev, sumbuf *b)
{
    exp_prev next[16];
    size_t nnext = 0;
    for (size_t i = 0; i < x->nprocs; i++) {
        const exp_proc *p = &x->procs[i];
        put(b, "pid %d launches %llu kernels %llu", (int)p->pid,
            (unsigned long long)p->v[VYRE_CTR_LAUNCHES], (unsigned long long)p->kernels_total);
        const exp_prev *pv = NULL;
        for (size_t k = 0; k < *nprev; k++)
            if (prev[k].pid == p->pid && prev[k].start_time == p->start_time &&
                p->kernels_seen + p->kernels_unseen >= prev[k].seen + prev[k].unseen)
                pv = &prev[k];
        if (pv) {
            uint64_t seen = p->kernels_seen - pv->seen;
            uint64_t unseen = p->kernels_unseen - pv->unseen;
            put(b, " interval new %llu seen %llu\n", (unsigned long long)(seen + unseen),
                (unsigned long long)seen);
        } else {
            put(b, " first\n");
        }
        cr_assert_lt(nnext, 16);
        next[nnext++] = (exp_prev){p->pid, p->start_time, p->kernels_seen, p->kernels_unseen};
    }
    put(b, "foreign %zu stale %zu\n", x->pages_foreign, x->pages_stale);
    memcpy(prev, next, nnext * sizeof *next);
    *nprev = nnext;
}

typedef struct monitors {
    top_collector *top;
    exporter *x;
    exp_prev prev[16];
    size_t nprev;
} monitors;

/* One reading by both; each summary must be `want`. */
static void read_both(monitors *m, const char *want, const char *step)
{
    sumbuf eb = {.len = 0}, tb = {.len = 0};
    exp_collect_procs(m->x);
    exp_summary(m->x, m->prev, &m->nprev, &eb);
    top_snapshot s;
    top_collect(m->top, &s);
    top_summary(&s, &tb);
    top_snapshot_release(&s);
    cr_expect_str_eq(tb.text, eb.text,
                     "%s: vyre-top and the exporter disagree:\n-- vyre-top\n%s-- "
                     "exporter\n%s",
                     step, tb.text, eb.text);
    cr_expect_str_eq(tb.text, want, "%s: vyre-top:\n%s-- want\n%s", step, tb.text, want);
    cr_expect_str_eq(eb.text, want, "%s: exporter:\n%s-- want\n%s", step, eb.text, want);
}

/* The expected summary: rows (pid, text) by pid, then one foreign page
 * and `stale` stale ones. */
typedef struct row {
    int32_t pid;
    const char *text;
} row;

static void want_rows(sumbuf *w, row *r, int n, int stale)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (r[j].pid < r[i].pid) {
                row t = r[i];
                r[i] = r[j];
                r[j] = t;
            }
    w->len = 0;
    w->text[0] = '\0';
    for (int i = 0; i < n; i++)
        put(w, "pid %d %s\n", (int)r[i].pid, r[i].text);
    put(w, "foreign 1 stale %d\n", stale);
}

Test(monitors_agree, same_pages_same_answers, .init = setup, .fini = teardown)
{
    int32_t a = (int32_t)getpid();
    pid_t b = sleeper(), c = sleeper();
    uint64_t start_c = 0;
    cr_assert_eq(vyre__telemetry_start_time((int)c, &start_c), VYRE_OK);

    vyre__tel_page *pa = fresh_page(), *pb = fresh_page(), *pc = fresh_page(), *pd = fresh_page();
    uint64_t start_b = 0;
    cr_assert_eq(vyre__telemetry_start_time((int)b, &start_b), VYRE_OK);
    pb->h.start_time = start_b;
    pc->h.start_time = 0;
    pd->h.pid_ns_ino += 1; /* another PID namespace */
    add_kernels(pa, "small", 4);
    publish(pa, 10);
    add_kernels(pb, "kb", 2);
    publish(pb, 5);
    add_kernels(pc, "old", 50);
    publish(pc, 100);
    publish(pd, 7);
    put_page(a, pa);
    put_page((int32_t)b, pb);
    put_page((int32_t)c, pc);
    put_page(1, pd);

    monitors m = {.nprev = 0};
    top_collect_opts to = {
        .telemetry_dir = g_tel, .no_gpu = 1, .cache_root = g_scratch, .reap_every_s = 3600};
    cr_assert_eq(top_collector_new(&to, &m.top), 0);
    exp_opts eo = {.telemetry_dir = g_tel, .no_gpu = 1, .no_cache = 1, .kernels_top_n = 20};
    cr_assert_eq(exporter_new(&eo, &m.x), 0);

    /* Reading 1: everything is new. */
    sumbuf w;
    row r1[3] = {{a, "launches 10 kernels 4 first"},
                 {(int32_t)b, "launches 5 kernels 2 first"},
                 {(int32_t)c, "launches 100 kernels 50 first"}};
    want_rows(&w, r1, 3, 0);
    read_both(&m, w.text, "reading 1");

    /* Reading 2: A overflows its ring (300 recorded, 256 kept); B's
     * process is gone (its page is stale); C's pid has another start
     * time, with a new ring and counters. */
    add_kernels(pa, "big", 300);
    publish(pa, 20);
    put_page(a, pa);
    end_child(b);
    free(pc);
    pc = fresh_page();
    pc->h.start_time = start_c;
    add_kernels(pc, "new", 3);
    publish(pc, 2);
    put_page((int32_t)c, pc);
    row r2[2] = {{a, "launches 20 kernels 304 interval new 300 seen 256"},
                 {(int32_t)c, "launches 2 kernels 3 first"}};
    want_rows(&w, r2, 2, 1);
    read_both(&m, w.text, "reading 2");

    /* Reading 3: A's page is new (same pid and start time, counters and
     * ring from zero: the image after an exec); C goes on. */
    free(pa);
    pa = fresh_page();
    add_kernels(pa, "after_exec", 5);
    publish(pa, 1);
    put_page(a, pa);
    add_kernels(pc, "new", 4);
    publish(pc, 6);
    put_page((int32_t)c, pc);
    row r3[2] = {{a, "launches 1 kernels 5 first"},
                 {(int32_t)c, "launches 6 kernels 7 interval new 4 seen 4"}};
    want_rows(&w, r3, 2, 1);
    read_both(&m, w.text, "reading 3");

    top_collector_free(m.top);
    exporter_free(m.x);
    end_child(c);
    free(pa);
    free(pb);
    free(pc);
    free(pd);
}
