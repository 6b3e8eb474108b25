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
 *
 * Each row also names the GPU the process runs on, which both take from
 * libcore's join of NVML's processes with the pages (vyre_gpu_join; issue
 * 35): same_gpu_for_the_same_process runs both on a fake NVML. Before the
 * join, vyre-top gave a process on two GPUs the last one and the exporter
 * the first; without NVML vyre-top took the device of the last kernel
 * name of the interval (none at a first reading, none in a quiet
 * interval), the exporter that of the newest kernel record ever seen.
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
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%d.vtel", g_scratch, (int)getpid());
    size_t len = 0;
    vyre__tel_page *pg = (vyre__tel_page *)(void *)tu_read_file(path, &len);
    vyre__telemetry_close(t);
    cr_assert_not_null(pg);
    cr_assert_eq(len, sizeof *pg);
    return pg;
}

/* Appends n kernels named name, run on device, to the ring, as the writer
 * does. */
static void add_kernels_on(vyre__tel_page *pg, const char *name, int n, int32_t device)
{
    uint64_t words[VYRE__TEL_NAME_WORDS] = {0};
    memcpy(words, name, strlen(name));
    for (int i = 0; i < n; i++) {
        uint64_t serial = atomic_load(&pg->h.ring_count) + 1;
        vyre__tel_slot *s = &pg->ring[(serial - 1) % VYRE_TELEMETRY_RING_CAPACITY];
        atomic_store(&s->duration_ns, 1000);
        atomic_store(&s->end_ns, serial * 10000);
        atomic_store(&s->device, device);
        for (int w = 0; w < VYRE__TEL_NAME_WORDS; w++)
            atomic_store(&s->name[w], words[w]);
        atomic_store(&s->seq, 2 * serial);
        atomic_store(&pg->h.ring_count, serial);
        atomic_store(&pg->h.ring_head, (uint32_t)(serial % VYRE_TELEMETRY_RING_CAPACITY));
    }
}

static void add_kernels(vyre__tel_page *pg, const char *name, int n)
{
    add_kernels_on(pg, name, n, 0);
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

/* vyre-top: a row per process with a page (its GPU, '-' unknown); the
 * interval's kernels when it has a previous reading of the same process.
 * Rows of processes NVML lists without a page have no exporter
 * counterpart among its pages: left out. */
static void top_summary(const top_snapshot *s, sumbuf *b)
{
    size_t foreign = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const top_proc *p = &s->procs[i];
        if (p->foreign) {
            foreign++;
            continue;
        }
        if (!p->telemetry)
            continue;
        char gpu[16] = "-";
        if (p->device >= 0)
            snprintf(gpu, sizeof gpu, "%d", p->device);
        put(b, "pid %d gpu %s launches %llu kernels %llu", (int)p->pid, gpu,
            (unsigned long long)p->launches, (unsigned long long)p->kernels_total);
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
        put(b, "pid %d gpu %s launches %llu kernels %llu", (int)p->pid, p->gpu[0] ? p->gpu : "-",
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
    row r1[3] = {{a, "gpu 0 launches 10 kernels 4 first"},
                 {(int32_t)b, "gpu 0 launches 5 kernels 2 first"},
                 {(int32_t)c, "gpu 0 launches 100 kernels 50 first"}};
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
    row r2[2] = {{a, "gpu 0 launches 20 kernels 304 interval new 300 seen 256"},
                 {(int32_t)c, "gpu 0 launches 2 kernels 3 first"}};
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
    row r3[2] = {{a, "gpu 0 launches 1 kernels 5 first"},
                 {(int32_t)c, "gpu 0 launches 6 kernels 7 interval new 4 seen 4"}};
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

/* Both on a fake NVML with two GPUs. A (this process) runs kernels on
 * device 1, and NVML lists it on GPU 1 and on GPU 0: NVML wins, and of its
 * GPUs the lowest index. C is not on NVML's list: the device of its newest
 * kernel record, kept through an interval without kernels. D, a foreign
 * page, has pid 1, which NVML also lists: never matched. */
Test(monitors_agree, same_gpu_for_the_same_process, .init = setup, .fini = teardown)
{
    int32_t a = (int32_t)getpid();
    pid_t c = sleeper();
    uint64_t start_c = 0;
    cr_assert_eq(vyre__telemetry_start_time((int)c, &start_c), VYRE_OK);
    vyre__tel_page *pa = fresh_page(), *pc = fresh_page(), *pd = fresh_page();
    pc->h.start_time = start_c;
    pd->h.pid_ns_ino += 1;
    add_kernels_on(pa, "a", 2, 1);
    publish(pa, 3);
    add_kernels_on(pc, "x", 1, 1);
    add_kernels_on(pc, "y", 1, 0);
    add_kernels_on(pc, "x", 1, 1);
    publish(pc, 4);
    publish(pd, 1);
    put_page(a, pa);
    put_page((int32_t)c, pc);
    put_page(1, pd);
    char procs[128];
    snprintf(procs, sizeof procs, "1:%d:1048576,0:%d:2097152,1:1:4096", (int)a, (int)a);
    cr_assert_eq(setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1), 0);
    cr_assert_eq(setenv("FAKENVML_GPUS", "2", 1), 0);
    cr_assert_eq(setenv("FAKENVML_PROCS", procs, 1), 0);

    monitors m = {.nprev = 0};
    top_collect_opts to = {.telemetry_dir = g_tel, .cache_root = g_scratch, .reap_every_s = 3600};
    cr_assert_eq(top_collector_new(&to, &m.top), 0);
    exp_opts eo = {.telemetry_dir = g_tel, .no_cache = 1, .kernels_top_n = 20};
    cr_assert_eq(exporter_new(&eo, &m.x), 0);
    exp_collect_gpus(m.x); /* the first NVML sample (a scrape takes it first too) */
    cr_assert(m.x->gpu_ok, "%s", m.x->gpu_msg);

    sumbuf w;
    row r1[2] = {{a, "gpu 0 launches 3 kernels 2 first"},
                 {(int32_t)c, "gpu 1 launches 4 kernels 3 first"}};
    want_rows(&w, r1, 2, 0);
    read_both(&m, w.text, "reading 1");

    /* C's newest record is on device 0; its last new name ("x") on 1. */
    add_kernels_on(pc, "y", 1, 0);
    add_kernels_on(pc, "x", 1, 1);
    add_kernels_on(pc, "y", 1, 0);
    publish(pc, 5);
    put_page((int32_t)c, pc);
    row r2[2] = {{a, "gpu 0 launches 3 kernels 2 interval new 0 seen 0"},
                 {(int32_t)c, "gpu 0 launches 5 kernels 6 interval new 3 seen 3"}};
    want_rows(&w, r2, 2, 0);
    read_both(&m, w.text, "reading 2");

    /* A quiet interval: C's GPU is still the one it last ran on. */
    row r3[2] = {{a, "gpu 0 launches 3 kernels 2 interval new 0 seen 0"},
                 {(int32_t)c, "gpu 0 launches 5 kernels 6 interval new 0 seen 0"}};
    want_rows(&w, r3, 2, 0);
    read_both(&m, w.text, "reading 3");

    top_collector_free(m.top);
    exporter_free(m.x);
    unsetenv("VYRE_NVML_LIBRARY");
    unsetenv("FAKENVML_GPUS");
    unsetenv("FAKENVML_PROCS");
    end_child(c);
    free(pa);
    free(pc);
    free(pd);
}

/* ---- the join itself, on plain data --------------------------------- */

static void gpu_lists(vyre_gpu_info *gi, int index, const vyre_gpu_process *p, unsigned n)
{
    gi->index = index;
    gi->valid = VYRE_GPU_F_PROCS;
    gi->nprocs = n;
    memcpy(gi->procs, p, n * sizeof *p);
}

/* The rows as text: "pid[f] device ngpus mem util" each, or "-" unknowns. */
static void join_text(const vyre_gpu_proc_row *r, size_t n, const vyre_telemetry_proc *pages,
                      sumbuf *b)
{
    for (size_t i = 0; i < n; i++) {
        put(b, "%d%s%s dev %d on %u", (int)r[i].pid, r[i].foreign ? "f" : "",
            r[i].page ? "" : "(nvml)", r[i].device, r[i].ngpus);
        cr_assert(!r[i].page || r[i].page->pid == r[i].pid, "page of another pid");
        cr_assert(!r[i].page || (r[i].page >= pages && r[i].page < pages + 4));
        if (r[i].mem_valid)
            put(b, " mem %llu", (unsigned long long)r[i].mem_bytes);
        if (r[i].util_valid)
            put(b, " sm %u", r[i].sm_util_pct);
        put(b, "\n");
    }
}

Test(monitors_agree, the_join_of_gpu_processes_and_pages)
{
    vyre_gpu_snapshot *g = calloc(1, sizeof *g);
    vyre_telemetry_proc *pages = calloc(4, sizeof *pages);
    cr_assert(g && pages);
    g->ngpus = 3;
    vyre_gpu_process g0[] = {
        {.pid = 30, .used_valid = 1, .used_bytes = 2048, .util_valid = 1, .sm_util_pct = 20},
        {.pid = 50},
        {.pid = 7, .used_valid = 1, .used_bytes = 1}};
    vyre_gpu_process g1[] = {
        {.pid = 30, .used_valid = 1, .used_bytes = 1024, .util_valid = 1, .sm_util_pct = 60},
        {.pid = 50, .util_valid = 1, .sm_util_pct = 5},
        {.pid = 0},
        {.pid = 60}};
    vyre_gpu_process g2[] = {{.pid = 10}};
    gpu_lists(&g->gpus[0], 0, g0, 3);
    gpu_lists(&g->gpus[1], 1, g1, 4);
    gpu_lists(&g->gpus[2], 2, g2, 1);
    g->gpus[2].valid = 0; /* its process list is unknown: never read */
    int32_t pid[4] = {30, 7, 10, 40}, kdev[4] = {1, 1, 1, -1};
    for (int i = 0; i < 4; i++) {
        pages[i].pid = pid[i];
        pages[i].kernel_device = kdev[i];
    }
    pages[1].foreign = 1;

    vyre_gpu_proc_row *r = NULL;
    size_t n = 0;
    sumbuf b = {.len = 0};
    cr_assert_eq(vyre_gpu_join(g, pages, 4, SIZE_MAX, &r, &n, NULL), VYRE_OK);
    join_text(r, n, pages, &b);
    cr_expect_str_eq(b.text, "7(nvml) dev 0 on 1 mem 1\n"
                             "7f dev 1 on 0\n"
                             "10 dev 1 on 0\n"
                             "30 dev 0 on 2 mem 3072 sm 60\n"
                             "40 dev -1 on 0\n"
                             "50(nvml) dev 0 on 2 sm 5\n"
                             "60(nvml) dev 1 on 1\n");
    vyre_free(r);

    /* Room for one row of NVML's alone: the lowest pid's. */
    b.len = 0;
    cr_assert_eq(vyre_gpu_join(g, pages, 4, 5, &r, &n, NULL), VYRE_OK);
    join_text(r, n, pages, &b);
    cr_expect_str_eq(b.text, "7(nvml) dev 0 on 1 mem 1\n"
                             "7f dev 1 on 0\n"
                             "10 dev 1 on 0\n"
                             "30 dev 0 on 2 mem 3072 sm 60\n"
                             "40 dev -1 on 0\n");
    vyre_free(r);

    /* No sample: the pages, with their kernels' devices. */
    b.len = 0;
    cr_assert_eq(vyre_gpu_join(NULL, pages, 4, SIZE_MAX, &r, &n, NULL), VYRE_OK);
    join_text(r, n, pages, &b);
    cr_expect_str_eq(b.text, "7f dev 1 on 0\n"
                             "10 dev 1 on 0\n"
                             "30 dev 1 on 0\n"
                             "40 dev -1 on 0\n");
    vyre_free(r);

    cr_assert_eq(vyre_gpu_join(NULL, NULL, 0, SIZE_MAX, &r, &n, NULL), VYRE_OK);
    cr_assert_null(r);
    cr_assert_eq(n, 0);
    cr_assert_eq(vyre_gpu_join(g, NULL, 1, SIZE_MAX, &r, &n, NULL), VYRE_EINVAL);
    free(g);
    free(pages);
}

/* vyre-top lists the processes NVML sees even when the telemetry directory
 * is refused (writable by others): the join runs with no pages. */
Test(monitors_agree, gpu_processes_without_a_readable_telemetry_dir, .init = setup,
     .fini = teardown)
{
    cr_assert_eq(chmod(g_tel, 0777), 0);
    char procs[64];
    snprintf(procs, sizeof procs, "0:%d:4096", (int)getpid());
    cr_assert_eq(setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1), 0);
    cr_assert_eq(setenv("FAKENVML_PROCS", procs, 1), 0);
    top_collect_opts to = {.telemetry_dir = g_tel, .cache_root = g_scratch, .reap_every_s = 3600};
    top_collector *top = NULL;
    cr_assert_eq(top_collector_new(&to, &top), 0);
    top_snapshot s;
    top_collect(top, &s);
    cr_expect_not(s.tel_ok);
    cr_expect(strstr(s.tel_msg, "writable by group or others"), "%s", s.tel_msg);
    cr_expect(s.gpu_ok, "%s", s.gpu_msg);
    cr_assert_eq(s.nprocs, 1);
    cr_expect_eq(s.procs[0].pid, (int32_t)getpid());
    cr_expect_not(s.procs[0].telemetry);
    cr_expect_eq(s.procs[0].device, 0);
    cr_expect(s.procs[0].gpu_mem_valid);
    cr_expect_eq(s.procs[0].gpu_mem_bytes, 4096);
    top_snapshot_release(&s);
    top_collector_free(top);
    unsetenv("VYRE_NVML_LIBRARY");
    unsetenv("FAKENVML_PROCS");
}
