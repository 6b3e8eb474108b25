/*
 * telemetry_publisher.c - a stand-in instrumented process for the JSON
 * schema test (tests/schema/check_json_schemas.py): publishes a telemetry
 * page through libcore's writer API (counters, an NVTX range, a kernel
 * record) into $VYRE_TELEMETRY_DIR every 10 ms, so that `vyre-top --json`
 * has a process, a range and a kernel to report without a GPU.
 *
 * usage: telemetry_publisher SECONDS
 * Prints "ready" on stdout once the page has been published, then runs for
 * at most SECONDS (or until killed, or until its parent exits).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <signal.h>
#include <time.h>

#include "vyre/counters.h"
#include "vyre/nvtx.h"
#include "vyre/telemetry.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

int main(int argc, char **argv)
{
    char *end = NULL;
    long seconds = argc == 2 ? strtol(argv[1], &end, 10) : 0;
    if (argc != 2 || !*argv[1] || *end || seconds <= 0) {
        fprintf(stderr, "usage: telemetry_publisher SECONDS\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    vyre_error err;
    vyre_telemetry *t = vyre_telemetry_global(&err); /* removed at exit */
    if (!t) {
        fprintf(stderr, "telemetry_publisher: %s\n", err.message[0] ? err.message : "no page");
        return 1;
    }
    for (uint64_t i = 0; i < (uint64_t)seconds * 100; i++) {
        vyre_counter_add(VYRE_CTR_LAUNCHES, 4);
        vyre_counter_add(VYRE_CTR_DISPATCHES, 1);
        vyre_counter_add(VYRE_CTR_H2D_BYTES, 1u << 20);
        vyre_counter_add(VYRE_CTR_D2H_BYTES, 1u << 19);
        vyre_counter_add(VYRE_CTR_CACHE_HITS, 3);
        vyre_counter_add(VYRE_CTR_CACHE_MISSES, 1);
        vyre_counter_add(VYRE_CTR_COMPILE_NS_SAVED, 1000000);
        vyre_nvtx_push(VYRE_RANGE_PIPELINE_DISPATCH);
        vyre_nvtx_pop();
        vyre_telemetry_kernel_record k = {.name = "schema_kernel",
                                          .grid = {64, 2, 1},
                                          .block = {256, 1, 1},
                                          .stream_id = 1,
                                          .duration_ns = 50000,
                                          .end_ns = i * 1000000u,
                                          .device = 0};
        vyre_telemetry_add_kernel(t, &k);
        vyre_telemetry_publish(t);
        if (i == 0) {
            printf("ready\n");
            fflush(stdout);
        }
        sleep_ms(10);
    }
    return 0;
}
