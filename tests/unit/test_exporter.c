/*
 * test_exporter.c - vyre-exporter's pure parts: the exposition writer
 * (escaping, one HELP/TYPE per family, values), the histogram cut
 * (vyre_range_hist_cumulative at bucket edges), and whole scrapes of a
 * telemetry directory holding a live page beside hostile and stale ones:
 * bounded output, no crash or hang, nothing exported for a page that fails
 * validation, every such page counted in the scrape errors.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expo.h"
#include "server.h"
#include "exporter.h"
#include "testutil.h"
#include "trace/telemetry_internal.h"
#include "trace/counters_internal.h"
#include "util.h"
#include "trace/telemetry_internal.h"
#include "vyre/vyre.h"

/* ---- exposition writer ------------------------------------------------ */

Test(exporter_expo, escapes_label_values)
{
    char out[128];
    expo_escape_label(out, sizeof out, "a\\b\"c\nd");
    cr_assert_str_eq(out, "a\\\\b\\\"c\\nd");
    expo_escape_label(out, sizeof out, "caf\xc3\xa9 \xff\xfe x\xe2\x82");
    cr_assert_str_eq(out, "caf\xc3\xa9 ?? x??", "got '%s'", out);
    expo_escape_label(out, sizeof out, NULL);
    cr_assert_str_eq(out, "");
    /* Never cuts an escape in two. */
    char small[4];
    expo_escape_label(small, sizeof small, "ab\"");
    cr_assert_str_eq(small, "ab");
}

Test(exporter_expo, one_help_and_type_per_family)
{
    expo e;
    expo_init(&e, 0);
    expo_label l[2] = {{"pid", "1"}, {"comm", "we\"ird\\x\ny"}};
    cr_assert_eq(expo_family(&e, "vyre_a_total", "counter", "Help with \\ and\nnewline."), 0);
    expo_sample_u64(&e, "vyre_a_total", l, 2, NULL, 18446744073709551615ull);
    cr_assert_eq(expo_family(&e, "vyre_b", "gauge", "B."), 0);
    expo_sample(&e, "vyre_b", NULL, 0, NULL, 0.1);
    expo_sample(&e, "vyre_b", l, 1, NULL, 1.0 / 0.0);
    expo_sample(&e, "vyre_b", l, 1, &l[1], 0.0 / 0.0);
    cr_assert_eq(expo_family(&e, "vyre_a_total", "counter", "again"), -1);
    expo_sample_u64(&e, "vyre_a_total", l, 2, NULL, 7);
    cr_assert_eq(e.dropped, 1);
    cr_assert_str_eq(e.buf, "# HELP vyre_a_total Help with \\\\ and\\nnewline.\n"
                            "# TYPE vyre_a_total counter\n"
                            "vyre_a_total{pid=\"1\",comm=\"we\\\"ird\\\\x\\ny\"} "
                            "18446744073709551615\n"
                            "# HELP vyre_b B.\n"
                            "# TYPE vyre_b gauge\n"
                            "vyre_b 0.1\n"
                            "vyre_b{pid=\"1\"} +Inf\n"
                            "vyre_b{pid=\"1\",comm=\"we\\\"ird\\\\x\\ny\"} NaN\n");
    expo_free(&e);
}

Test(exporter_expo, output_is_bounded)
{
    expo e;
    expo_init(&e, 200);
    expo_family(&e, "vyre_c", "gauge", "C.");
    for (int i = 0; i < 100; i++)
        expo_sample(&e, "vyre_c", NULL, 0, NULL, i);
    cr_assert_leq(e.len, 200);
    cr_assert(e.truncated);
    cr_assert_gt(e.dropped, 0);
    /* Whole lines only. */
    cr_assert_eq(e.buf[e.len - 1], '\n');
    expo_free(&e);
}

/* ---- histogram cut ---------------------------------------------------- */

static void record(vyre_range_hist *h, uint64_t ns)
{
    h->count++;
    h->total_ns += ns;
    h->buckets[vyre__hist_bucket_of(ns)]++;
}

Test(exporter_hist, cumulative_counts_are_exact_at_edges)
{
    uint64_t edges[EXP_MAX_EDGES];
    size_t n = exp_range_edges(edges);
    cr_assert(n >= 12 && n <= 24, "%zu bounds", n);
    for (size_t k = 0; k < n; k++) {
        cr_assert_eq(vyre__hist_bucket_lo(vyre__hist_bucket_of(edges[k])), edges[k],
                     "bound %zu (%llu ns) is a bucket edge", k, (unsigned long long)edges[k]);
        if (k)
            cr_assert_gt(edges[k], edges[k - 1]);
    }
    cr_assert_eq(edges[0], vyre_hist_edge_nearest(1000));
    char txt[32];
    cr_assert_str_eq(exp_format_ns_as_seconds(txt, sizeof txt, 992), "0.000000992");
    cr_assert_str_eq(exp_format_ns_as_seconds(txt, sizeof txt, UINT64_C(10200547328)),
                     "10.200547328");
    cr_assert_str_eq(exp_format_ns_as_seconds(txt, sizeof txt, UINT64_C(2000000000)), "2");
    cr_assert_str_eq(exp_format_ns_as_seconds(txt, sizeof txt, 0), "0");
    cr_assert_eq(edges[n - 1], UINT64_C(10200547328), "%llu", (unsigned long long)edges[n - 1]);
    cr_assert_leq(edges[0], 1000 + 1000 / 16);
    cr_assert_geq(edges[0], 1000 - 1000 / 16);
    static vyre_range_hist h;
    memset(&h, 0, sizeof h);
    /* Just below and exactly at each edge: the first counts below it, the
     * second in the next bound. */
    for (size_t k = 0; k < n; k++) {
        record(&h, edges[k] - 1);
        record(&h, edges[k]);
    }
    record(&h, UINT64_C(1) << 45); /* beyond every bound and the last bucket */
    uint64_t out[EXP_MAX_EDGES];
    uint64_t total = vyre_range_hist_cumulative(&h, edges, n, out);
    cr_assert_eq(total, h.count);
    for (size_t k = 0; k < n; k++)
        cr_assert_eq(out[k], 2 * k + 1, "le %llu: %llu", (unsigned long long)edges[k],
                     (unsigned long long)out[k]);
}

Test(exporter_hist, hostile_buckets_stay_monotonic)
{
    static vyre_range_hist h;
    memset(&h, 0xff, sizeof h); /* every bucket UINT64_MAX */
    uint64_t edges[EXP_MAX_EDGES], out[EXP_MAX_EDGES];
    size_t n = exp_range_edges(edges);
    uint64_t total = vyre_range_hist_cumulative(&h, edges, n, out);
    cr_assert_eq(total, UINT64_MAX);
    for (size_t k = 1; k < n; k++)
        cr_assert_geq(out[k], out[k - 1]);
    cr_assert_leq(out[n - 1], total);
}

/* ---- whole scrapes ---------------------------------------------------- */

static char g_dir[PATH_MAX], g_tel[PATH_MAX + 8];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_dir);
    cr_assert_eq(mkdir(g_tel, 0700), 0);
    cr_assert_eq(setenv("VYRE_TELEMETRY_DIR", g_tel, 1), 0);
    unsetenv("VYRE_TELEMETRY");
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

TestSuite(exporter_scrape, .init = setup, .fini = teardown);

static void page_path(char *out, size_t size, int pid)
{
    int n = snprintf(out, size, "%s/%d.vtel", g_tel, pid);
    cr_assert(n > 0 && (size_t)n < size, "page path too long");
}

static void write_page(int pid, const void *img, size_t len)
{
    char path[PATH_MAX];
    page_path(path, sizeof path, pid);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0, "open(%s): %s", path, strerror(errno));
    cr_assert_eq(write(fd, img, len), (ssize_t)len);
    close(fd);
}

/* Checks a document as Prometheus's parser would: each family's HELP and
 * TYPE once, before its samples, samples of a family together, histogram
 * buckets cumulative with +Inf equal to _count. Returns the number of
 * sample lines. */
static size_t check_document(const char *doc)
{
    char families[256][128];
    size_t nf = 0, samples = 0;
    char fam[128] = "", type[32] = "";
    char series[1024] = "";
    uint64_t last_bucket = 0, inf = 0;
    int have_inf = 0;
    const char *p = doc;
    while (*p) {
        const char *nl = strchr(p, '\n');
        cr_assert_not_null(nl, "last line unterminated");
        char line[4096];
        size_t len = (size_t)(nl - p);
        cr_assert_lt(len, sizeof line);
        memcpy(line, p, len);
        line[len] = '\0';
        p = nl + 1;
        char name[128];
        if (sscanf(line, "# HELP %127s", name) == 1) {
            for (size_t i = 0; i < nf; i++)
                cr_assert_str_neq(families[i], name, "second HELP for %s", name);
            cr_assert_lt(nf, 256);
            snprintf(families[nf++], sizeof families[0], "%s", name);
            snprintf(fam, sizeof fam, "%s", name);
            type[0] = '\0';
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            cr_assert_eq(sscanf(line, "# TYPE %127s %31s", name, type), 2);
            cr_assert_str_eq(name, fam, "TYPE without its HELP: %s", line);
            continue;
        }
        cr_assert_neq(line[0], '#', "stray comment: %s", line);
        samples++;
        size_t nl_name = strcspn(line, "{ ");
        snprintf(name, sizeof name, "%.*s", (int)nl_name, line);
        size_t fl = strlen(fam);
        int ok = strcmp(name, fam) == 0;
        if (strcmp(type, "histogram") == 0)
            ok = strncmp(name, fam, fl) == 0 &&
                 (!strcmp(name + fl, "_bucket") || !strcmp(name + fl, "_sum") ||
                  !strcmp(name + fl, "_count"));
        cr_assert(ok, "sample '%s' outside its family %s", line, fam);
        if (strcmp(type, "histogram") == 0) {
            const char *sp = strrchr(line, ' ');
            uint64_t v = strtoull(sp + 1, NULL, 10);
            if (!strcmp(name + fl, "_bucket")) {
                const char *le = strstr(line, ",le=\"");
                cr_assert_not_null(le);
                char s[1024];
                snprintf(s, sizeof s, "%.*s", (int)(le - line), line);
                if (strcmp(s, series) != 0) {
                    snprintf(series, sizeof series, "%s", s);
                    last_bucket = 0;
                    have_inf = 0;
                }
                cr_assert_geq(v, last_bucket, "bucket not cumulative: %s", line);
                last_bucket = v;
                if (strncmp(le, ",le=\"+Inf\"", 10) == 0) {
                    inf = v;
                    have_inf = 1;
                }
            } else if (!strcmp(name + fl, "_count")) {
                cr_assert(have_inf, "_count before +Inf: %s", line);
                cr_assert_eq(v, inf, "+Inf %llu != _count: %s", (unsigned long long)inf, line);
            }
        }
    }
    return samples;
}

static char *scrape(const exp_opts *o, size_t *len)
{
    exporter *x = NULL;
    cr_assert_eq(exporter_new(o, &x), 0);
    char *doc = NULL;
    /* Twice: the second scrape sees the state the first one kept. */
    cr_assert_eq(exporter_scrape(x, &doc, len), 0);
    free(doc);
    cr_assert_eq(exporter_scrape(x, &doc, len), 0);
    exporter_free(x);
    cr_assert_not_null(doc);
    return doc;
}

/* A valid page image (one publish, two kernels) for pid with our start
 * time; the caller frees it. */
static unsigned char *good_image(int32_t pid, uint64_t start_time)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre_telemetry_kernel_record k = {.name = "gemm", .grid = {8, 1, 1}, .block = {256, 1, 1}};
    cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);
    char path[PATH_MAX];
    page_path(path, sizeof path, getpid());
    size_t len = 0;
    unsigned char *img = (unsigned char *)tu_read_file(path, &len);
    cr_assert_not_null(img);
    cr_assert_eq(len, sizeof(vyre__tel_page));
    vyre__telemetry_close(t);
    ((vyre__tel_header *)(void *)img)->pid = pid;
    if (start_time)
        ((vyre__tel_header *)(void *)img)->start_time = start_time;
    return img;
}

Test(exporter_scrape, live_page_exported_with_escaped_labels)
{
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre_counter_add(VYRE_CTR_LAUNCHES, 5);
    vyre_counter_add(VYRE_CTR_GRAPH_LAUNCHES, 2);
    vyre_counter_add(VYRE_CTR_COMPILE_NS_SAVED, 1500000000);
    vyre_range_record(VYRE_RANGE_PIPELINE_DISPATCH, 3000);
    vyre_range_record(VYRE_RANGE_PIPELINE_DISPATCH, 3000000);
    const char *names[3] = {"k\"quoted\\", "plain", "plain"};
    for (int i = 0; i < 3; i++) {
        vyre_telemetry_kernel_record k = {.name = names[i], .duration_ns = 1000u * (i + 1)};
        cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    }
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);
    exp_opts o = {.telemetry_dir = g_tel, .no_gpu = 1, .no_cache = 1, .kernels_top_n = 1};
    size_t len;
    char *doc = scrape(&o, &len);
    vyre__telemetry_close(t);
    cr_assert_gt(check_document(doc), 10);
    char want[256];
    snprintf(want, sizeof want, "vyre_process_graph_launches_total{pid=\"%d\",", (int)getpid());
    cr_assert_not_null(strstr(doc, want), "%s", doc);
    cr_assert_not_null(strstr(doc, "vyre_gpu_monitor_up 0\n"));
    cr_assert_not_null(strstr(doc, "range=\"vyre.cuda.pipeline.dispatch\",le=\"+Inf\"} 2\n"), "%s",
                       doc);
    /* 3 us counts from the 5 us bound (edge 5.12 us) on, 3 ms from 5 ms. */
    cr_assert_not_null(strstr(doc, "dispatch\",le=\"0.00000256\"} 0\n"), "%s", doc);
    cr_assert_not_null(strstr(doc, "dispatch\",le=\"0.00000512\"} 1\n"), "%s", doc);
    cr_assert_not_null(strstr(doc, "dispatch\",le=\"0.002490368\"} 1\n"), "%s", doc);
    cr_assert_not_null(strstr(doc, "dispatch\",le=\"0.004980736\"} 2\n"), "%s", doc);
    cr_assert_not_null(strstr(doc, "dispatch\",le=\"10.200547328\"} 2\n"), "%s", doc);
    /* top-n 1: "plain" (3 us) beats the quoted one (1 us). */
    cr_assert_not_null(strstr(doc, "kernel=\"plain\"} 2\n"), "%s", doc);
    cr_assert_null(strstr(doc, "kernel=\"k\\\"quoted"), "%s", doc);
    cr_assert_not_null(
        strstr(doc, "vyre_exporter_scrape_errors_total{collector=\"telemetry\"} 0\n"));
    free(doc);
    o.kernels_top_n = 5;
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre_telemetry_kernel_record k = {.name = names[0], .duration_ns = 1000};
    cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);
    doc = scrape(&o, &len);
    vyre__telemetry_close(t);
    cr_assert_not_null(strstr(doc, "kernel=\"k\\\"quoted\\\\\"} 1\n"), "%s", doc);
    free(doc);
}

Test(exporter_scrape, hostile_and_stale_pages_export_nothing)
{
    unsigned char *img = good_image(0, 0);
    size_t size = sizeof(vyre__tel_page);
    /* Garbage, truncated and oversized pages under live pids. */
    pid_t parent = getppid();
    unsigned char *junk = malloc(size);
    for (size_t i = 0; i < size; i++)
        junk[i] = (unsigned char)(i * 131 + 7);
    write_page(1, junk, size);
    ((vyre__tel_header *)(void *)img)->pid = 2;
    write_page(2, img, size / 2);
    unsigned char *big = calloc(1, size + 4096);
    memcpy(big, img, size);
    ((vyre__tel_header *)(void *)big)->pid = 3;
    write_page(3, big, size + 4096);
    /* A page whose header names another pid than its file. */
    ((vyre__tel_header *)(void *)img)->pid = 4;
    write_page(5, img, size);
    /* A FIFO where a page should be: must not hang the scrape. */
    char path[PATH_MAX];
    page_path(path, sizeof path, 6);
    cr_assert_eq(mkfifo(path, 0600), 0);
    /* Stale: a dead process's page, and a page whose pid now belongs to
     * another process (our parent, with our start time). */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    cr_assert_eq(waitpid(dead, NULL, 0), dead);
    unsigned char *stale = good_image(dead, 0);
    write_page(dead, stale, size);
    free(stale);
    stale = good_image(parent, 1);
    write_page(parent, stale, size);
    free(stale);
    /* A valid page with hostile numbers: every bucket and counter at
     * UINT64_MAX. It validates, so it is exported, consistently. */
    unsigned char *hp = good_image(getpid(), 0);
    memset(hp + offsetof(vyre__tel_header, counters), 0xff,
           offsetof(vyre__tel_header, reserved2) - offsetof(vyre__tel_header, counters));
    write_page(getpid(), hp, size);
    free(hp);

    exp_opts o = {.telemetry_dir = g_tel, .no_gpu = 1, .no_cache = 1, .kernels_top_n = 20};
    size_t len;
    char *doc = scrape(&o, &len);
    cr_assert_lt(len, 256 * 1024, "output bounded (%zu bytes)", len);
    check_document(doc);
    int bad[] = {1, 2, 3, 5, 6, (int)dead, (int)parent};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "{pid=\"%d\"", bad[i]);
        cr_assert_null(strstr(doc, want), "pid %d exported:\n%s", bad[i], doc);
    }
    char want[128];
    snprintf(want, sizeof want, "vyre_process_info{pid=\"%d\"", (int)getpid());
    cr_assert_not_null(strstr(doc, want), "%s", doc);
    /* Two scrapes, each counting the 5 invalid pages (the FIFO and the
     * garbage ones) and 2 stale ones. */
    cr_assert_not_null(strstr(doc, "vyre_exporter_telemetry_pages{state=\"stale\"} 2\n"), "%s",
                       doc);
    cr_assert_not_null(strstr(doc, "vyre_exporter_scrape_errors_total{collector=\"telemetry\"} "),
                       "%s", doc);
    const char *ev = strstr(doc, "vyre_exporter_scrape_errors_total{collector=\"telemetry\"} ");
    unsigned long errs = strtoul(strchr(ev, '}') + 2, NULL, 10);
    const char *iv = strstr(doc, "vyre_exporter_telemetry_pages{state=\"invalid\"} ");
    cr_assert_not_null(iv);
    unsigned long invalid = strtoul(strchr(iv, '}') + 2, NULL, 10);
    cr_assert_geq(invalid, 4, "%s", doc);
    cr_assert_eq(errs, 2 * (invalid + 2), "%s", doc);
    free(doc);
    free(junk);
    free(big);
    free(img);
}

Test(exporter_scrape, eight_fake_gpus)
{
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
    setenv("FAKENVML_GPUS", "8", 1);
    exp_opts o = {.telemetry_dir = g_tel, .no_cache = 1, .kernels_top_n = 20};
    size_t len;
    char *doc = scrape(&o, &len);
    unsetenv("VYRE_NVML_LIBRARY");
    unsetenv("FAKENVML_GPUS");
    check_document(doc);
    cr_assert_not_null(strstr(doc, "vyre_gpu_monitor_up 1\n"), "%s", doc);
    for (int g = 0; g < 8; g++) {
        char want[256];
        snprintf(want, sizeof want,
                 "vyre_gpu_temperature_celsius{gpu=\"%d\",uuid=\"GPU-00000000-0000-0000-0000-"
                 "00000000000%d\",name=\"NVIDIA Fake GPU %d\"} %d\n",
                 g, g, g, 40 + g);
        cr_assert_not_null(strstr(doc, want), "%s\n%s", want, doc);
    }
    cr_assert_not_null(strstr(doc, "vyre_gpu_power_watts{gpu=\"7\""));
    cr_assert_not_null(strstr(doc, "reason=\"sw_power_cap\"} 1\n"));
    free(doc);
}

/* Every process NVML lists is exported with its GPU, memory and SM use,
 * command name and user, whether or not it publishes telemetry (this test
 * process publishes none); one that is gone from /proc still has its
 * figures, with empty names. */
Test(exporter_scrape, gpu_processes_from_nvml)
{
    char procs[128], util[128];
    int me = (int)getpid();
    snprintf(procs, sizeof procs, "0:%d:1048576,1:999999:-", me);
    snprintf(util, sizeof util, "0:%d:42:7", me);
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
    setenv("FAKENVML_GPUS", "2", 1);
    setenv("FAKENVML_PROCS", procs, 1);
    setenv("FAKENVML_PROC_UTIL", util, 1);
    exp_opts o = {.telemetry_dir = g_tel, .no_cache = 1, .kernels_top_n = 20};
    size_t len;
    char *doc = scrape(&o, &len);
    unsetenv("VYRE_NVML_LIBRARY");
    unsetenv("FAKENVML_GPUS");
    unsetenv("FAKENVML_PROCS");
    unsetenv("FAKENVML_PROC_UTIL");
    check_document(doc);
    char comm[64] = "", user[64];
    size_t n = 0;
    char *c = tu_read_file("/proc/self/comm", &n);
    cr_assert_not_null(c);
    snprintf(comm, sizeof comm, "%.*s", (int)strcspn(c, "\n"), c);
    free(c);
    struct passwd *pw = getpwuid(getuid());
    if (pw)
        snprintf(user, sizeof user, "%s", pw->pw_name);
    else
        snprintf(user, sizeof user, "%u", (unsigned)getuid());
    char want[512];
    snprintf(want, sizeof want,
             "vyre_gpu_process_memory_used_bytes{gpu=\"0\",pid=\"%d\",comm=\"%s\",user=\"%s\"} "
             "1048576\n",
             me, comm, user);
    cr_assert_not_null(strstr(doc, want), "%s\n%s", want, doc);
    snprintf(want, sizeof want,
             "vyre_gpu_process_sm_utilization_ratio{gpu=\"0\",pid=\"%d\",comm=\"%s\",user=\"%s\"} "
             "0.42\n",
             me, comm, user);
    cr_assert_not_null(strstr(doc, want), "%s\n%s", want, doc);
    /* Gone from /proc, memory unknown: listed, no memory sample. */
    cr_assert_not_null(strstr(doc,
                              "vyre_gpu_process_info{gpu=\"1\",pid=\"999999\",comm=\"\",user=\"\","
                              "type=\"compute\"} 1\n"),
                       "%s", doc);
    cr_assert_null(strstr(doc, "vyre_gpu_process_memory_used_bytes{gpu=\"1\""), "%s", doc);
    /* Where a scrape's time goes, collector by collector. */
    static const char *const timed[] = {"nvml",         "gpu_processes", "telemetry_pages",
                                        "kernel_rings", "cache",         "render"};
    for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
        snprintf(want, sizeof want, "vyre_exporter_collector_duration_seconds{collector=\"%s\"} ",
                 timed[i]);
        cr_assert_not_null(strstr(doc, want), "%s\n%s", want, doc);
    }
    free(doc);
}

Test(exporter_scrape, cache_families)
{
    char cache[PATH_MAX + 8];
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    exp_opts o = {.telemetry_dir = g_tel, .no_gpu = 1, .cache_dir = cache};
    size_t len;
    char *doc = scrape(&o, &len);
    /* No cache there yet: said, not an error. */
    cr_assert_not_null(strstr(doc, "vyre_cache_up{dir=\""), "%s", doc);
    cr_assert_not_null(strstr(doc, "vyre_exporter_scrape_errors_total{collector=\"cache\"} 0\n"));
    free(doc);
    vyre_cache *c = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre_cache_open(cache, NULL, &c, &e), 0, "%s", e.message);
    vyre_cache_close(c);
    doc = scrape(&o, &len);
    check_document(doc);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "vyre_cache_up{dir=\"%s\"} 1\n", cache);
    cr_assert_not_null(strstr(doc, want), "%s", doc);
    snprintf(want, sizeof want, "vyre_cache_entries{dir=\"%s\"} 0\n", cache);
    cr_assert_not_null(strstr(doc, want), "%s", doc);
    cr_assert_not_null(strstr(doc, "# TYPE vyre_cache_hits_total counter\n"));
    free(doc);
}

Test(exporter_listen, parses_addresses)
{
    char host[64], err[256];
    unsigned port;
    cr_assert_eq(exp_parse_listen(":9947", host, sizeof host, &port, err, sizeof err), 0);
    cr_assert_str_eq(host, "");
    cr_assert_eq(port, 9947);
    cr_assert_eq(exp_parse_listen("127.0.0.1:0", host, sizeof host, &port, err, sizeof err), 0);
    cr_assert_str_eq(host, "127.0.0.1");
    cr_assert_eq(port, 0);
    cr_assert_eq(exp_parse_listen("[::1]:80", host, sizeof host, &port, err, sizeof err), 0);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(exp_parse_listen("9947", host, sizeof host, &port, err, sizeof err), -1);
    cr_assert_eq(exp_parse_listen(":70000", host, sizeof host, &port, err, sizeof err), -1);
    cr_assert_eq(exp_parse_listen("::1:80", host, sizeof host, &port, err, sizeof err), -1);
    cr_assert_eq(exp_parse_listen(":", host, sizeof host, &port, err, sizeof err), -1);
}

Test(exporter_scrape, without_nvml_serves_the_rest)
{
    char missing[PATH_MAX + 32];
    snprintf(missing, sizeof missing, "%s/no-such-libnvidia-ml.so", g_dir);
    setenv("VYRE_NVML_LIBRARY", missing, 1);
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre_counter_add(VYRE_CTR_SYNCS, 3);
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);
    exp_opts o = {.telemetry_dir = g_tel, .no_cache = 1, .kernels_top_n = 20};
    size_t len;
    char *doc = scrape(&o, &len);
    vyre__telemetry_close(t);
    unsetenv("VYRE_NVML_LIBRARY");
    check_document(doc);
    cr_assert_not_null(strstr(doc, "vyre_gpu_monitor_up 0\n"), "%s", doc);
    cr_assert_null(strstr(doc, "vyre_gpu_monitor_info{driver_version=\"\",problem=\"\"}"), "%s",
                   doc);
    cr_assert_null(strstr(doc, "vyre_gpu_temperature_celsius"), "%s", doc);
    char want[128];
    snprintf(want, sizeof want, "vyre_process_syncs_total{pid=\"%d\"", (int)getpid());
    cr_assert_not_null(strstr(doc, want), "%s", doc);
    /* An absent driver is a state, not a scrape error. */
    cr_assert_not_null(strstr(doc, "vyre_exporter_scrape_errors_total{collector=\"nvml\"} 0\n"));
    free(doc);
}

/* A scrape never waits for NVML: a thread of its own samples it
 * (collect_gpu.c), and a scrape takes the newest sample. With NVML stuck
 * inside a sample, a scrape still returns at once, with the last sample's
 * figures. Before, the scrape sampled NVML itself: on an H100 beside two
 * busy processes that was 2.1 ms of a 2.7 ms scrape, and a stuck NVML
 * held the scrape as long as it stayed stuck. */
Test(exporter_scrape, a_stuck_nvml_never_holds_a_scrape, .timeout = 40)
{
    char block[PATH_MAX + 32], waiting[PATH_MAX + 48];
    snprintf(block, sizeof block, "%s/nvml-stuck", g_dir);
    snprintf(waiting, sizeof waiting, "%s.waiting", block);
    setenv("VYRE_NVML_LIBRARY", FAKENVML_LIB, 1);
    setenv("FAKENVML_BLOCK_FILE", block, 1);
    exp_opts o = {.telemetry_dir = g_tel, .no_cache = 1, .kernels_top_n = 20};
    exporter *x = NULL;
    cr_assert_eq(exporter_new(&o, &x), 0);
    char *doc = NULL;
    size_t len = 0;
    cr_assert_eq(exporter_scrape(x, &doc, &len), 0);
    cr_assert_not_null(strstr(doc, "vyre_gpu_monitor_up 1\n"), "%s", doc);
    free(doc);
    tu_write_file(block, "", 0); /* NVML sticks from its next sample on */
    for (int i = 0; i < 1000 && access(waiting, F_OK) != 0; i++)
        usleep(10000);
    int stuck = access(waiting, F_OK) == 0;
    if (stuck)
        cr_assert_eq(exporter_scrape(x, &doc, &len), 0); /* before: waited here */
    unlink(block);
    cr_assert(stuck, "the sampler did not reach NVML again within 10 s");
    cr_assert_not_null(strstr(doc, "vyre_gpu_monitor_up 1\n"), "the last sample: %s", doc);
    cr_assert_not_null(strstr(doc, "vyre_gpu_temperature_celsius{gpu=\"0\""), "%s", doc);
    free(doc);
    exporter_free(x);
    unsetenv("VYRE_NVML_LIBRARY");
    unsetenv("FAKENVML_BLOCK_FILE");
}

/* The caches' sizes: off unless asked for (exp_opts.usage_every_s 0), and
 * when on, well-formed families (one HELP/TYPE each, label cache) with the
 * exact figures of a Triton cache of known contents. */
Test(exporter_scrape, cache_usage_families)
{
    exp_opts o = {.telemetry_dir = g_tel, .no_gpu = 1, .no_cache = 1};
    size_t len;
    char *doc = scrape(&o, &len);
    cr_assert_null(strstr(doc, "vyre_cache_usage_"), "%s", doc);
    free(doc);

    char t[PATH_MAX + 16], f[PATH_MAX + 32], cfg[PATH_MAX + 16];
    snprintf(t, sizeof t, "%s/triton", g_dir);
    snprintf(cfg, sizeof cfg, "%s/config", g_dir);
    cr_assert_eq(mkdir(t, 0700), 0);
    snprintf(f, sizeof f, "%s/k.cubin", t);
    tu_write_file(f, "0123456789", 10);
    setenv("TRITON_CACHE_DIR", t, 1);
    setenv("TORCHINDUCTOR_CACHE_DIR", t, 1);
    setenv("CUDA_CACHE_PATH", t, 1);
    setenv("XDG_CONFIG_HOME", cfg, 1);
    unsetenv("CUDA_CACHE_MAXSIZE");
    o.usage_every_s = 3600;
    o.cache_dir = t;
    doc = scrape(&o, &len);
    check_document(doc);
    static const char *const names[] = {"vyre", "cuda_jit", "triton", "inductor"};
    for (int i = 0; i < 4; i++) {
        char want[PATH_MAX + 128];
        snprintf(want, sizeof want, "vyre_cache_usage_bytes{cache=\"%s\"} %llu\n", names[i],
                 (unsigned long long)tu_disk_bytes(t)); /* 10 bytes and the folder, on disk */
        cr_assert_not_null(strstr(doc, want), "%s", doc);
        snprintf(want, sizeof want, "vyre_cache_usage_files{cache=\"%s\"} 1\n", names[i]);
        cr_assert_not_null(strstr(doc, want), "%s", doc);
    }
    cr_assert_not_null(strstr(doc, "# TYPE vyre_cache_usage_bytes gauge\n"), "%s", doc);
    cr_assert_not_null(strstr(doc, "vyre_cache_usage_limit_bytes{cache=\"cuda_jit\"} 1073741824\n"),
                       "vyre's default CUDA_CACHE_MAXSIZE: %s", doc);
    cr_assert_not_null(strstr(doc, "vyre_cache_usage_scans_total 1\n"), "%s", doc);
    free(doc);
}
