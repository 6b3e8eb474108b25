/*
 * inject_peek.c - a development reader for telemetry pages: prints every
 * page in the telemetry directory ($VYRE_TELEMETRY_DIR, else the default)
 * with its non-zero counters and its ring's kernels grouped by name.
 * vyre-top --batch is the real viewer; this needs nothing but libcore and
 * is what the GPU check in inject/examples/ runs beside it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/telemetry_internal.h" /* the page reader */
#include "vyre/counters.h"
#include "vyre/telemetry.h"

#define GROUPS_MAX 64

typedef struct group {
    const char *name;
    unsigned count;
    uint64_t total_ns;
} group;

static int by_total(const void *a, const void *b)
{
    uint64_t x = ((const group *)a)->total_ns, y = ((const group *)b)->total_ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void print_page(const vyre_telemetry_snapshot *s)
{
    printf("pid %d  %s  [%s]  publishes %llu\n", (int)s->pid, s->exe, s->cmdline,
           (unsigned long long)s->publish_count);
    for (int i = 0; i < VYRE_CTR_COUNT; i++)
        if (s->counters.v[i])
            printf("  %-22s %llu\n", vyre_counter_name((vyre_counter_id)i),
                   (unsigned long long)s->counters.v[i]);
    static group g[GROUPS_MAX];
    size_t n = 0;
    for (uint32_t i = 0; i < s->n_kernels; i++) {
        size_t j = 0;
        while (j < n && strcmp(g[j].name, s->kernels[i].name) != 0)
            j++;
        if (j == n) {
            if (n == GROUPS_MAX)
                continue;
            g[n++] = (group){.name = s->kernels[i].name};
        }
        g[j].count++;
        g[j].total_ns += s->kernels[i].duration_ns;
    }
    qsort(g, n, sizeof g[0], by_total);
    printf("  kernels: %llu recorded, last %u by name:\n", (unsigned long long)s->kernels_total,
           s->n_kernels);
    for (size_t j = 0; j < n; j++)
        printf("  %5u x %9.1f us  %.90s\n", g[j].count, (double)g[j].total_ns / g[j].count / 1000.0,
               g[j].name);
}

int main(void)
{
    vyre_telemetry_entry *pages = NULL;
    size_t n = 0;
    vyre_error err;
    if (vyre__telemetry_list(NULL, &pages, &n, &err) != VYRE_OK) {
        fprintf(stderr, "inject_peek: %s\n", err.message);
        return 2;
    }
    static vyre_telemetry_snapshot s;
    for (size_t i = 0; i < n; i++) {
        if (vyre__telemetry_read(pages[i].path, &s, &err) == VYRE_OK)
            print_page(&s);
        else
            printf("pid %d: %s\n", (int)pages[i].pid, err.message);
    }
    if (n == 0)
        printf("no telemetry pages\n");
    vyre_free(pages);
    return 0;
}
