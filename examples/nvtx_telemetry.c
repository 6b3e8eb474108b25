/*
 * nvtx_telemetry.c - instrument a loop with vyre's NVTX ranges and publish
 * a telemetry page that vyre-top shows. Needs no GPU.
 *
 *   nvtx_telemetry [ITERATIONS [HOLD_SECONDS]]
 *
 * Each iteration generates the CUDA C source of a kernel variant (an
 * unrolled scaling loop) inside a VYRE_RANGE_CODEGEN range
 * ("vyre.cuda.codegen"). libvyrecore times every range into a per-range
 * histogram, and with an NVTX tool attached (Nsight Systems, or CUPTI
 * through NVTX_INJECTION64_PATH) the same ranges appear in its timeline.
 *
 * The process's telemetry page (vyre_telemetry_global: the file
 * <pid>.vtel in $VYRE_TELEMETRY_DIR, else /dev/shm/vyre-<uid>) carries the
 * histograms to other processes: the loop publishes at most every 10 ms,
 * publishes once more at the end, then keeps the page for HOLD_SECONDS
 * (default 30) so that you can look at it:
 *
 *   ./nvtx_telemetry 2000 60 &
 *   vyre-top                  # or: vyre-top --json -n 1
 *
 * The page is removed when the program exits (also after Ctrl-C or a
 * SIGTERM, which end the wait). Exit status: 0 done, 2 an error (message and
 * hint on stderr).
 *
 * Build against an installed libvyrecore:
 *   cc nvtx_telemetry.c $(pkg-config --cflags --libs vyrecore) -o nvtx_telemetry
 */
#define _POSIX_C_SOURCE 200809L /* sigaction, clock_gettime, nanosleep */

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vyre/vyre.h>

#define PROG "nvtx_telemetry"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Writes the CUDA C of a kernel that scales `unroll` elements per thread
 * into buf; returns its length (truncated to size - 1). */
static size_t generate_kernel(char *buf, size_t size, unsigned unroll)
{
    size_t len = 0;
#define EMIT(...)                                                                                  \
    do {                                                                                           \
        int w = snprintf(buf + len, size - len, __VA_ARGS__);                                      \
        if (w > 0)                                                                                 \
            len = len + (size_t)w < size ? len + (size_t)w : size - 1;                             \
    } while (0)
    EMIT("extern \"C\" __global__ void scale_x%u(float *out, const float *in, float a, "
         "unsigned n)\n{\n",
         unroll);
    EMIT("    unsigned base = (blockIdx.x * blockDim.x + threadIdx.x) * %uu;\n", unroll);
    for (unsigned k = 0; k < unroll; k++)
        EMIT("    if (base + %uu < n)\n        out[base + %uu] = a * in[base + %uu];\n", k, k, k);
    EMIT("}\n");
#undef EMIT
    return len;
}

static int parse_count(const char *s, unsigned long max, unsigned long *out)
{
    char *end = NULL;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *s == '-' || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long iterations = 1000, hold_s = 30;
    if (argc > 3 || (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
        fprintf(argc > 3 ? stderr : stdout, "usage: " PROG " [ITERATIONS [HOLD_SECONDS]]\n");
        return argc > 3 ? 2 : 0;
    }
    if (argc > 1 && parse_count(argv[1], 100000000ul, &iterations)) {
        fprintf(stderr, PROG ": error: invalid iteration count '%s'\n", argv[1]);
        fprintf(stderr, "hint: give a number from 0 to 100000000, e.g. '" PROG " 1000'\n");
        return 2;
    }
    if (argc > 2 && parse_count(argv[2], 86400ul, &hold_s)) {
        fprintf(stderr, PROG ": error: invalid hold time '%s'\n", argv[2]);
        fprintf(stderr, "hint: give seconds from 0 to 86400, e.g. '" PROG " 1000 60'\n");
        return 2;
    }

    /* The process-wide page: libcore's own dispatch paths publish into the
     * same one, so a program that also launches pipelines shows as one
     * process. It is removed at exit. */
    vyre_error err = {0};
    vyre_telemetry *t = vyre_telemetry_global(&err);
    if (!t && err.code) {
        fprintf(stderr, PROG ": error: cannot publish telemetry: %s\n", err.message);
        if (err.hint[0])
            fprintf(stderr, "hint: %s\n", err.hint);
        return 2;
    }
    char dir[VYRE_TELEMETRY_PATH_MAX] = "";
    if (t && vyre_telemetry_dir(dir, sizeof dir, &err)) {
        fprintf(stderr, PROG ": error: %s\n", err.message);
        return 2;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    static char src[16384];
    uint64_t bytes = 0, hash = 1469598103934665603u; /* FNV-1a of every source */
    unsigned long done = 0;
    for (; done < iterations && !g_stop; done++) {
        vyre_nvtx_push(VYRE_RANGE_CODEGEN);
        size_t len = generate_kernel(src, sizeof src, 1 + (unsigned)(done % 64));
        for (size_t i = 0; i < len; i++)
            hash = (hash ^ (unsigned char)src[i]) * 1099511628211u;
        vyre_nvtx_pop();
        bytes += len;
        /* Copies counters and histograms into the page at most every 10 ms:
         * cheap enough for a hot loop. */
        if (vyre_telemetry_maybe_publish(t, now_ns()) < 0) {
            fprintf(stderr, PROG ": error: publishing the telemetry page failed\n");
            return 2;
        }
    }
    if (vyre_telemetry_publish(t)) {
        fprintf(stderr, PROG ": error: publishing the telemetry page failed\n");
        return 2;
    }

    vyre_counters c;
    vyre_counters_snapshot(&c);
    const vyre_range_hist *h = &c.ranges[VYRE_RANGE_CODEGEN];
    printf("generated %lu kernels (%llu bytes of CUDA C, FNV-1a %016llx)\n", done,
           (unsigned long long)bytes, (unsigned long long)hash);
    printf("range %s: %llu timed, p50 %llu ns, p99 %llu ns, max %llu ns\n",
           vyre_nvtx_range(VYRE_RANGE_CODEGEN)->name, (unsigned long long)h->count,
           (unsigned long long)vyre_range_hist_quantile(h, 0.5),
           (unsigned long long)vyre_range_hist_quantile(h, 0.99), (unsigned long long)h->max_ns);
    if (!t) {
        printf("telemetry is off (VYRE_TELEMETRY=0): nothing to show in vyre-top\n");
        return 0;
    }
    printf("published to %s/%d.vtel; holding it for %lu s for vyre-top (Ctrl-C ends)\n", dir,
           (int)getpid(), hold_s);
    fflush(stdout);

    uint64_t until = now_ns() + (uint64_t)hold_s * 1000000000u;
    struct timespec tick = {0, 50 * 1000 * 1000};
    while (!g_stop && now_ns() < until)
        nanosleep(&tick, NULL);
    return 0;
}
