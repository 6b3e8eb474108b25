/*
 * perf_cache.c - the pipeline cache against the bare system calls, on the
 * same files in the same run. Prints ratios; never pass/fail.
 *
 *   hit      vyre_cache_get (open, validate, one pass that reads and
 *            checksums, hit tracking) vs open+fstat+read+close of the same
 *            blob file, 4 KiB to 1 MiB (target <= 1.10x, issue 39); 16 and
 *            24 KiB are the GPU hit path's cubin sizes (perf_dispatch)
 *   verify   vyre_cache_verify throughput vs a plain read pass over the same
 *            page-cached files, one thread opening, reading and closing each
 *            (target >= 0.90x, issue 39); under --cpu also the CPU time both
 *            take (verify's on all its threads), which a loaded machine
 *            disturbs less than the wall clock
 *   prune    pruning N blobs (default 100000) vs unlinking as many files
 *            directly (target <= 1.30x, issue 39), on the wall clock and
 *            in this thread's CPU time (user + system: the unlinks' kernel
 *            work counts, waiting for a CPU or another's disk does not)
 *   track    get with hit tracking vs get without (target <= 1.2x)
 *   cleanup  a put that takes an N-blob cache over its max_size and so
 *            cleans 10% of it (LRU, down to 90%) vs `prune` of the same
 *            blobs in an identical cache; and stats and ls (the library
 *            calls behind them, and the binaries when $BENCH_CACHECTL
 *            names vyre-cachectl) on the N-blob cache
 *
 * usage: perf_cache [--quick] [--cpu] [hit|track|verify|prune|cleanup ...]
 *   quick: fewer blobs and rounds, for CI; cpu: the hit section times
 *   this thread's CPU time (user + system) instead of the wall clock, so
 *   that time spent waiting for a CPU on a shared machine is not counted
 *   (the files are page-cached: a hit never waits for the disk), and the
 *   verify section adds a line of process CPU time; naming
 *   sections runs only those (all of them when none is named)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "perfutil.h"
#include "vyre/vyre.h"

static void die(const char *what, const vyre_error *e)
{
    fprintf(stderr, "perf_cache: %s: %s\n", what, e ? e->message : strerror(errno));
    exit(2);
}

static void rm_rf(const char *path)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "perf_cache: could not remove %s\n", path);
}

static void make_key(vyre_key *k, unsigned seed, unsigned i)
{
    for (int b = 0; b < VYRE_KEY_BYTES; b++)
        k->bytes[b] = (uint8_t)((seed * 131u + i * 7919u + (unsigned)b * 31u) >> (b % 3));
    memcpy(k->bytes, &i, sizeof i);
    memcpy(k->bytes + 4, &seed, sizeof seed);
}

static void fill_header(vyre_blob_header *h, const vyre_key *k)
{
    memset(h, 0, sizeof *h);
    h->key = *k;
    h->kind = VYRE_BLOB_CUBIN;
    snprintf(h->arch, sizeof h->arch, "sm_90");
    snprintf(h->toolchain, sizeof h->toolchain, "bench");
    h->compile_ns = 1000000;
}

/* Bare baseline: what any reader of the same file must at least do. */
static size_t bare_read(const char *path, void **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die(path, NULL);
    struct stat st;
    fstat(fd, &st);
    void *buf = malloc((size_t)st.st_size);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, (char *)buf + got, (size_t)st.st_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    *out = buf;
    return got;
}

/* The hit section's clock: perf_now_s, or perf_cpu_s under --cpu. */
static double (*g_hit_clock)(void) = perf_now_s;

static void bench_hit(const char *root, int quick)
{
    static const size_t sizes[] = {4096, 16384, 24576, 65536, 262144, 1048576};
    enum { NKEYS = 32 };
    int rounds = quick ? 5 : 21, reps = quick ? 20 : 200;
    printf("%-8s %10s %12s %12s %8s%s\n", "hit", "size", "vyre_us", "bare_us", "ratio",
           g_hit_clock == perf_cpu_s ? "   (thread CPU time)" : "");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        vyre_error e;
        vyre_cache *c;
        if (vyre_cache_open(root, NULL, &c, &e))
            die("open", &e);
        char *payload = malloc(sizes[s]);
        for (size_t i = 0; i < sizes[s]; i++)
            payload[i] = (char)(i * 2654435761u >> 13);
        vyre_key keys[NKEYS];
        char paths[NKEYS][VYRE_CACHE_PATH_MAX];
        for (unsigned i = 0; i < NKEYS; i++) {
            make_key(&keys[i], (unsigned)s + 1, i);
            vyre_blob_header h;
            fill_header(&h, &keys[i]);
            if (vyre_cache_put(c, &h, payload, sizes[s], &e))
                die("put", &e);
            vyre_blob_path(root, &keys[i], paths[i], sizeof paths[i], NULL);
        }
        double tv[64], tb[64];
        for (int r = 0; r < rounds; r++) {
            double t0 = g_hit_clock();
            for (int k = 0; k < reps; k++) {
                vyre_blob *b;
                if (vyre_cache_get(c, &keys[k % NKEYS], &b, NULL, &e))
                    die("get", &e);
                vyre_blob_free(b);
            }
            double t1 = g_hit_clock();
            for (int k = 0; k < reps; k++) {
                void *buf;
                bare_read(paths[k % NKEYS], &buf);
                free(buf);
            }
            double t2 = g_hit_clock();
            tv[r] = (t1 - t0) / reps;
            tb[r] = (t2 - t1) / reps;
        }
        double mv = perf_median(tv, rounds), mb = perf_median(tb, rounds);
        printf("%-8s %10zu %12.2f %12.2f %7.2fx\n", "hit", sizes[s], mv * 1e6, mb * 1e6, mv / mb);
        free(payload);
        vyre_cache_close(c);
    }
}

static void bench_track(const char *root, int quick)
{
    enum { NKEYS = 64 };
    int rounds = quick ? 5 : 21, reps = quick ? 50 : 500;
    vyre_error e;
    vyre_cache *ct, *cn;
    vyre_cache_open_opts untracked;
    vyre_cache_open_opts_init(&untracked);
    untracked.flags = VYRE_CACHE_NO_HIT_TRACK;
    if (vyre_cache_open(root, NULL, &ct, &e) || vyre_cache_open(root, &untracked, &cn, &e))
        die("open", &e);
    char payload[4096];
    memset(payload, 0x5a, sizeof payload);
    vyre_key keys[NKEYS];
    for (unsigned i = 0; i < NKEYS; i++) {
        make_key(&keys[i], 99, i);
        vyre_blob_header h;
        fill_header(&h, &keys[i]);
        if (vyre_cache_put(ct, &h, payload, sizeof payload, &e))
            die("put", &e);
    }
    double tt[64], tn[64];
    for (int r = 0; r < rounds; r++) {
        double t0 = perf_now_s();
        for (int k = 0; k < reps; k++) {
            vyre_blob *b;
            if (vyre_cache_get(ct, &keys[k % NKEYS], &b, NULL, &e))
                die("get", &e);
            vyre_blob_free(b);
        }
        double t1 = perf_now_s();
        for (int k = 0; k < reps; k++) {
            vyre_blob *b;
            if (vyre_cache_get(cn, &keys[k % NKEYS], &b, NULL, &e))
                die("get", &e);
            vyre_blob_free(b);
        }
        double t2 = perf_now_s();
        tt[r] = (t1 - t0) / reps;
        tn[r] = (t2 - t1) / reps;
    }
    double mt = perf_median(tt, rounds), mn = perf_median(tn, rounds);
    printf("%-8s %10s %12.2f %12.2f %7.2fx   (4 KiB blobs; flushes included)\n", "track", "4096",
           mt * 1e6, mn * 1e6, mt / mn);
    vyre_cache_close(ct);
    vyre_cache_close(cn);
}

/* CPU time of the whole process (every thread), in seconds. */
static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void bench_verify(const char *root, int quick)
{
    unsigned n = quick ? 200 : 2000;
    size_t size = 65536;
    vyre_error e;
    vyre_cache *c;
    if (vyre_cache_open(root, NULL, &c, &e))
        die("open", &e);
    char *payload = malloc(size);
    for (size_t i = 0; i < size; i++)
        payload[i] = (char)(i * 40503u >> 7);
    char(*paths)[VYRE_CACHE_PATH_MAX] = malloc(n * sizeof *paths);
    for (unsigned i = 0; i < n; i++) {
        vyre_key k;
        make_key(&k, 7, i);
        vyre_blob_header h;
        fill_header(&h, &k);
        if (vyre_cache_put(c, &h, payload, size, &e))
            die("put", &e);
        vyre_blob_path(root, &k, paths[i], sizeof paths[i], NULL);
    }
    int rounds = quick ? 3 : 7;
    double tv[16], tb[16], cv[16], cb[16];
    for (int r = 0; r < rounds; r++) {
        double c0 = process_cpu_s(), t0 = perf_now_s();
        vyre_cache_verify_result res;
        if (vyre_cache_verify(c, 0, &res, NULL, NULL, NULL, NULL, &e))
            die("verify", &e);
        double t1 = perf_now_s(), c1 = process_cpu_s();
        /* The baseline: one plain read pass over the same files. */
        for (unsigned i = 0; i < n; i++) {
            void *buf;
            bare_read(paths[i], &buf);
            free(buf);
        }
        double t2 = perf_now_s(), c2 = process_cpu_s();
        tv[r] = t1 - t0;
        tb[r] = t2 - t1;
        cv[r] = c1 - c0;
        cb[r] = c2 - c1;
        if (res.problems)
            fprintf(stderr, "perf_cache: verify found %llu problems\n",
                    (unsigned long long)res.problems);
    }
    double mv = perf_median(tv, rounds), mb = perf_median(tb, rounds);
    double bytes = (double)n * (double)(size + VYRE_BLOB_HEADER_SIZE);
    printf("%-8s %10s %10.0f MB/s %8.0f MB/s %6.2fx   (%u blobs of 64 KiB, throughput ratio)\n",
           "verify", "", bytes / mv / 1e6, bytes / mb / 1e6, mb / mv, n);
    if (g_hit_clock == perf_cpu_s) {
        double ccv = perf_median(cv, rounds), ccb = perf_median(cb, rounds);
        printf("%-8s %10s %10.2f ms   %8.2f ms   %6.2fx   (process CPU time, all threads: the "
               "read pass's over verify's)\n",
               "verify", "cpu", ccv * 1e3, ccb * 1e3, ccb / ccv);
    }
    free(paths);
    free(payload);
    vyre_cache_close(c);
}

/* Writes n blob files directly (no fsync: setup, not measured). */
static void write_blobs(const char *root, unsigned seed, unsigned n)
{
    char payload[64];
    memset(payload, 0x33, sizeof payload);
    XXH128_hash_t hh = XXH3_128bits(payload, sizeof payload);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, hh);
    for (unsigned i = 0; i < n; i++) {
        vyre_key k;
        make_key(&k, seed, i);
        vyre_blob_header h;
        fill_header(&h, &k);
        h.format_version = VYRE_BLOB_FORMAT_VERSION;
        h.key_version = VYRE_KEY_VERSION;
        h.raw_size = h.stored_size = sizeof payload;
        h.created_unix_ns = 1;
        memcpy(h.payload_xxh128, canon.digest, 16);
        uint8_t hdr[VYRE_BLOB_HEADER_SIZE];
        vyre_error e;
        if (vyre_blob_header_encode(&h, hdr, &e))
            die("encode", &e);
        char path[VYRE_CACHE_PATH_MAX];
        vyre_blob_path(root, &k, path, sizeof path, NULL);
        char *slash = strrchr(path, '/');
        *slash = '\0';
        mkdir(path, 0700);
        *slash = '/';
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, hdr, sizeof hdr) != (ssize_t)sizeof hdr ||
            write(fd, payload, sizeof payload) != (ssize_t)sizeof payload)
            die(path, NULL);
        close(fd);
    }
}

static void bench_prune(const char *base, int quick)
{
    unsigned n = quick ? 5000 : 100000;
    char root_a[VYRE_CACHE_PATH_MAX], root_b[VYRE_CACHE_PATH_MAX];
    snprintf(root_a, sizeof root_a, "%s/prune-vyre", base);
    snprintf(root_b, sizeof root_b, "%s/prune-bare", base);
    vyre_error e;
    vyre_cache *c;
    if (vyre_cache_open(root_a, NULL, &c, &e))
        die("open", &e);
    vyre_cache *cb;
    vyre_cache_open_opts bare;
    vyre_cache_open_opts_init(&bare);
    bare.flags = VYRE_CACHE_NO_INDEX;
    if (vyre_cache_open(root_b, &bare, &cb, &e))
        die("open", &e);
    vyre_cache_close(cb);
    write_blobs(root_a, 1, n);
    write_blobs(root_b, 1, n);
    vyre_cache_reindex_result rr;
    if (vyre_cache_reindex(c, &rr, NULL, NULL, &e))
        die("reindex", &e);
    if (rr.indexed != n)
        fprintf(stderr, "perf_cache: reindexed %llu of %u\n", (unsigned long long)rr.indexed, n);

    vyre_cache_prune_opts o;
    vyre_cache_prune_opts_init(&o);
    o.max_bytes = 0;
    vyre_cache_prune_result pr;
    sync(); /* the setup's writes out of the way of both */
    double t0 = perf_now_s(), c0 = perf_cpu_s();
    if (vyre_cache_prune(c, &o, &pr, NULL, NULL, &e))
        die("prune", &e);
    double t1 = perf_now_s(), c1 = perf_cpu_s();
    for (unsigned i = 0; i < n; i++) {
        vyre_key k;
        make_key(&k, 1, i);
        char path[VYRE_CACHE_PATH_MAX];
        vyre_blob_path(root_b, &k, path, sizeof path, NULL);
        if (unlink(path) != 0)
            die(path, NULL);
    }
    double t2 = perf_now_s(), c2 = perf_cpu_s();
    printf("%-8s %10u %12.3f s %10.3f s %6.2fx   (removed %llu; cpu %.3f s vs %.3f s: %.2fx)\n",
           "prune", n, t1 - t0, t2 - t1, (t1 - t0) / (t2 - t1), (unsigned long long)pr.removed,
           c1 - c0, c2 - c1, (c1 - c0) / (c2 - c1));
    vyre_cache_close(c);
}

static double time_cmd(const char *cachectl, const char *root, const char *cmd)
{
    char line[8192];
    snprintf(line, sizeof line, "'%s' --cache-dir '%s' %s >/dev/null", cachectl, root, cmd);
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = perf_now_s();
        if (system(line) != 0)
            fprintf(stderr, "perf_cache: '%s' failed\n", line);
        double t = perf_now_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static int count_entry(const vyre_cache_entry *e, void *ctx)
{
    (void)e;
    (*(uint64_t *)ctx)++;
    return 0;
}

static void bench_cleanup(const char *base, int quick)
{
    unsigned n = quick ? 5000 : 100000;
    char root_a[VYRE_CACHE_PATH_MAX], root_b[VYRE_CACHE_PATH_MAX];
    snprintf(root_a, sizeof root_a, "%s/cleanup-put", base);
    snprintf(root_b, sizeof root_b, "%s/cleanup-prune", base);
    vyre_error e;
    /* Two identical caches; the configuration is fixed here, not read. */
    vyre_config *cf = vyre_config_new();
    if (!cf)
        die("config", NULL);
    if (vyre_config_set(cf, "max_size", "0", &e) ||
        vyre_config_set(cf, "quarantine_max_age", "0", &e))
        die("config", &e);
    vyre_cache_open_opts oo;
    vyre_cache_open_opts_init(&oo);
    oo.config = cf;
    vyre_cache *a, *b;
    if (vyre_cache_open(root_a, &oo, &a, &e) || vyre_cache_open(root_b, &oo, &b, &e))
        die("open", &e);
    write_blobs(root_a, 1, n);
    write_blobs(root_b, 1, n);
    vyre_cache_reindex_result rr;
    if (vyre_cache_reindex(a, &rr, NULL, NULL, &e) || vyre_cache_reindex(b, &rr, NULL, NULL, &e))
        die("reindex", &e);

    /* stats and ls on the N-blob cache: the library calls behind them. */
    vyre_cache_stats st;
    double t0 = perf_now_s();
    if (vyre_cache_stats_get(a, &st, &e))
        die("stats", &e);
    double t_stats = perf_now_s() - t0;
    uint64_t listed = 0;
    t0 = perf_now_s();
    if (vyre_cache_foreach(a, count_entry, &listed, &e))
        die("foreach", &e);
    double t_ls = perf_now_s() - t0;
    printf("%-8s %10u %12.3f s (vyre_cache_stats_get)  %.3f s (vyre_cache_foreach, %llu rows)\n",
           "stats/ls", n, t_stats, t_ls, (unsigned long long)listed);
    const char *cachectl = getenv("BENCH_CACHECTL");
    if (cachectl && *cachectl)
        printf("%-8s %10u %12.3f s (vyre-cachectl stats)  %.3f s (vyre-cachectl ls)  %.3f s "
               "(ls --json)\n",
               "cli", n, time_cmd(cachectl, root_a, "stats"), time_cmd(cachectl, root_a, "ls"),
               time_cmd(cachectl, root_a, "ls --json"));
    vyre_cache_close(a);

    /* A: max_size = its size now, so the next put takes it over and
     * cleans it to 90% (10% of the blobs, LRU first). */
    uint64_t total = st.bytes;
    char limit[32];
    snprintf(limit, sizeof limit, "%lluB", (unsigned long long)total);
    if (vyre_config_set(cf, "max_size", limit, &e))
        die("config", &e);
    if (vyre_cache_open(root_a, &oo, &a, &e))
        die("open", &e);
    char payload[64];
    memset(payload, 0x44, sizeof payload);
    vyre_key k;
    make_key(&k, 2, 0);
    vyre_blob_header h;
    fill_header(&h, &k);
    t0 = perf_now_s();
    if (vyre_cache_put(a, &h, payload, sizeof payload, &e))
        die("put", &e);
    double t_put_clean = perf_now_s() - t0;
    vyre_cache_stats sa;
    if (vyre_cache_stats_get(a, &sa, &e))
        die("stats", &e);
    vyre_cache_close(a);

    /* B: the same put without a limit, then prune to the same target. */
    fill_header(&h, &k);
    t0 = perf_now_s();
    if (vyre_cache_put(b, &h, payload, sizeof payload, &e))
        die("put", &e);
    double t_put = perf_now_s() - t0;
    vyre_cache_prune_opts po;
    vyre_cache_prune_opts_init(&po);
    po.max_bytes = (uint64_t)((double)total * VYRE_CACHE_CLEANUP_RATIO);
    vyre_cache_prune_result pr;
    t0 = perf_now_s();
    if (vyre_cache_prune(b, &po, &pr, NULL, NULL, &e))
        die("prune", &e);
    double t_prune = perf_now_s() - t0;
    vyre_cache_stats sb;
    if (vyre_cache_stats_get(b, &sb, &e))
        die("stats", &e);
    vyre_cache_close(b);
    printf("%-8s %10u %12.3f s %10.3f s %6.2fx   (put+cleanup vs prune: removed %llu vs %llu, "
           "left %llu vs %llu; plain put %.3f ms)\n",
           "cleanup", n, t_put_clean, t_prune, t_put_clean / t_prune,
           (unsigned long long)(n + 1 - sa.entries), (unsigned long long)pr.removed,
           (unsigned long long)sa.entries, (unsigned long long)sb.entries, t_put * 1e3);
    vyre_config_free(cf);
}

static const char *const SECTIONS[] = {"hit", "track", "verify", "prune", "cleanup"};
enum { NSECTIONS = sizeof SECTIONS / sizeof SECTIONS[0] };

/* Which sections the command line names (all when none); 0, or 2 after
 * a usage message. */
static int parse_args(int argc, char **argv, int *quick, int want[NSECTIONS])
{
    int named = 0;
    *quick = 0;
    for (int s = 0; s < NSECTIONS; s++)
        want[s] = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            *quick = 1;
            continue;
        }
        if (strcmp(argv[i], "--cpu") == 0) {
            g_hit_clock = perf_cpu_s;
            continue;
        }
        int s = 0;
        while (s < NSECTIONS && strcmp(argv[i], SECTIONS[s]) != 0)
            s++;
        if (s == NSECTIONS) {
            fprintf(stderr,
                    "perf_cache: unknown argument '%s'\n"
                    "usage: perf_cache [--quick] [--cpu] [hit|track|verify|prune|cleanup ...]\n",
                    argv[i]);
            return 2;
        }
        want[s] = 1;
        named = 1;
    }
    if (!named)
        for (int s = 0; s < NSECTIONS; s++)
            want[s] = 1;
    return 0;
}

int main(int argc, char **argv)
{
    int quick, want[NSECTIONS];
    if (parse_args(argc, argv, &quick, want))
        return 2;
    const char *tmp = getenv("TMPDIR");
    char base[512];
    snprintf(base, sizeof base, "%s/vyre-perf-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base))
        die("mkdtemp", NULL);
    char root[600];
    snprintf(root, sizeof root, "%s/cache", base);
    printf("perf_cache: ratios are vyre / bare, medians of interleaved rounds\n");
    if (want[0])
        bench_hit(root, quick);
    if (want[1])
        bench_track(root, quick);
    if (want[2])
        bench_verify(root, quick);
    if (want[3])
        bench_prune(base, quick);
    if (want[4])
        bench_cleanup(base, quick);
    rm_rf(base);
    return 0;
}
