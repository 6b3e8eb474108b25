/*
 * perf_hist.c - the CPU cost of recording one range duration.
 *
 * Times vyre_range_record (the calling thread's slot: log-linear bucket
 * index from a count-leading-zeros and shifts, one increment, sum and max)
 * against vyre_counter_add (one per-thread counter increment) in the same
 * run, over durations spread like real ranges (8..13 us and a wide tail),
 * and prints ns per call and the ratio; then the cost of each piece the
 * launch paths add around the driver call. Timings are printed, never
 * judged: this is not a test.
 *
 * usage: perf_hist [--iters N]   (default 20000000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vyre/counters.h"
#include "vyre/nvtx.h"
#include "vyre/telemetry.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Best of 5 rounds of iters calls of one piece, in ns per call. */
#define PIECE(label, body)                                                                         \
    do {                                                                                           \
        uint64_t best = UINT64_MAX;                                                                \
        for (int r = 0; r < 5; r++) {                                                              \
            uint64_t t0 = now_ns();                                                                \
            for (uint64_t i = 0; i < iters; i++) {                                                 \
                body;                                                                              \
            }                                                                                      \
            uint64_t d = now_ns() - t0;                                                            \
            best = d < best ? d : best;                                                            \
        }                                                                                          \
        printf("  %-34s %7.2f ns/call\n", label, (double)best / (double)iters);                    \
    } while (0)

/* What the vyre launch paths add around the driver call, piece by piece
 * (vyre_graph_launch: one sampled NVTX dispatch range, three counter adds and a
 * telemetry publish check), so a launch ratio above target can be taken
 * apart on the machine that shows it. */
static void launch_path_pieces(uint64_t iters)
{
    printf("launch path pieces (best of 5 rounds of %llu calls):\n", (unsigned long long)iters);
    volatile uint64_t sink = 0;
    PIECE("clock_gettime(MONOTONIC)", sink += now_ns());
    PIECE("NVTX range push + pop, all timed", {
        vyre_nvtx_push(VYRE_RANGE_MODULE_LOAD);
        vyre_nvtx_pop();
    });
    /* Back to back, a dispatch range is timed one call in 16 (trace/nvtx.c). */
    PIECE("dispatch range push + pop, sampled", {
        vyre_nvtx_push(VYRE_RANGE_PIPELINE_BATCH_DISPATCH);
        vyre_nvtx_pop();
    });
    PIECE("three counter adds", {
        vyre_counter_add(VYRE_CTR_GRAPH_LAUNCHES, 1);
        vyre_counter_add(VYRE_CTR_BATCH_DISPATCHES, 1);
        vyre_counter_add(VYRE_CTR_LAUNCHES, 8);
    });
    vyre_telemetry *t = vyre_telemetry_global(NULL);
    PIECE("telemetry global + publish check", {
        vyre_telemetry *g = vyre_telemetry_global(NULL);
        if (g)
            vyre_telemetry_maybe_publish(g, now_ns());
    });
    printf("  (telemetry page %s)\n", t ? "open" : "not open");
    (void)sink;
}

int main(int argc, char **argv)
{
    uint64_t iters = 20000000;
    if (argc == 3 && strcmp(argv[1], "--iters") == 0)
        iters = strtoull(argv[2], NULL, 10);
    else if (argc != 1) {
        fprintf(stderr, "usage: perf_hist [--iters N]\n");
        return 2;
    }
    if (iters == 0)
        iters = 1;
    /* Durations from a cheap LCG so the bucket index varies as in real use. */
    uint64_t x = 88172645463325252u, best_base = UINT64_MAX, best_rec = UINT64_MAX;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < iters; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            uint64_t ns = (x >> 63) ? 8000 + ((x >> 20) % 5000) : (x >> 40);
            vyre_counter_add(VYRE_CTR_LAUNCHES, ns);
        }
        uint64_t t1 = now_ns();
        for (uint64_t i = 0; i < iters; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            uint64_t ns = (x >> 63) ? 8000 + ((x >> 20) % 5000) : (x >> 40);
            vyre_range_record(VYRE_RANGE_CODEGEN, ns);
        }
        uint64_t t2 = now_ns();
        if (t1 - t0 < best_base)
            best_base = t1 - t0;
        if (t2 - t1 < best_rec)
            best_rec = t2 - t1;
    }
    double base = (double)best_base / (double)iters, rec = (double)best_rec / (double)iters;
    printf("counter add (baseline)   %.2f ns/call\n", base);
    printf("range record (%d buckets) %.2f ns/call  ratio %.2fx\n", VYRE_HIST_BUCKETS, rec,
           base > 0 ? rec / base : 0.0);
    launch_path_pieces(iters / 10 ? iters / 10 : 1);
    return 0;
}
