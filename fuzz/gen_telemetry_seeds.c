/*
 * gen_telemetry_seeds.c - writes the seed corpus for fuzz_telemetry_page
 * into the directory given as argv[1]: pages made by the real writer (no
 * kernels; a few kernels and a publish; a ring that wrapped), with the
 * owner uid the fuzzer assumes, and a page cut short after its prefix. The
 * seeds are committed under fuzz/corpus/telemetry_page/; rerun this after a
 * layout change, keeping the previous layout's seeds renamed (v1-*, v2-*)
 * so the fuzzer keeps reaching the readers of older layouts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/telemetry_internal.h"
#include "vyre/telemetry.h"

#define OWNER 1000u /* as in fuzz_telemetry_page.c */

static int put(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    int len = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (len < 0 || (size_t)len >= sizeof path)
        return 1;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "gen_telemetry_seeds: cannot write '%s'\n", path);
        return 1;
    }
    return 0;
}

/* Makes a page with `kernels` kernels (and a publish when publish != 0) in
 * a scratch directory and copies it into img. */
static int make_page(const char *scratch, int kernels, int publish, vyre__tel_page *img)
{
    setenv("VYRE_TELEMETRY_DIR", scratch, 1);
    vyre_telemetry *t = NULL;
    vyre_error e;
    if (vyre__telemetry_open(&t, &e) != VYRE_OK || !t) {
        fprintf(stderr, "gen_telemetry_seeds: %s\n", e.message);
        return 1;
    }
    for (int i = 0; i < kernels; i++) {
        char name[32];
        snprintf(name, sizeof name, "kernel_%d", i % 9);
        vyre_telemetry_kernel_record k = {.name = name,
                                          .grid = {(uint32_t)i + 1, 1, 1},
                                          .block = {128, 1, 1},
                                          .stream_id = 7,
                                          .duration_ns = 1000u + (uint64_t)i,
                                          .end_ns = 5000000u + (uint64_t)i * 2000u};
        vyre_telemetry_add_kernel(t, &k);
    }
    if (publish)
        vyre_telemetry_publish(t);
    char path[4096];
    snprintf(path, sizeof path, "%s/%d.vtel", scratch, (int)getpid());
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(img, 1, sizeof *img, f) : 0;
    if (f)
        fclose(f);
    vyre__telemetry_close(t);
    if (got != sizeof *img) {
        fprintf(stderr, "gen_telemetry_seeds: cannot read '%s'\n", path);
        return 1;
    }
    img->h.uid = OWNER;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_telemetry_seeds DIR\n");
        return 2;
    }
    char scratch[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/vyre-seeds-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch)) {
        perror("gen_telemetry_seeds: mkdtemp");
        return 1;
    }
    vyre__tel_page *img = malloc(sizeof *img);
    int rc = !img;
    if (!rc)
        rc |= make_page(scratch, 0, 0, img) || put(argv[1], "empty-page", img, sizeof *img);
    if (!rc)
        rc |= make_page(scratch, 3, 1, img) || put(argv[1], "three-kernels", img, sizeof *img) ||
              put(argv[1], "prefix-only", img, 16);
    if (!rc)
        rc |= make_page(scratch, VYRE_TELEMETRY_RING_CAPACITY + 40, 1, img) ||
              put(argv[1], "wrapped-ring", img, sizeof *img);
    free(img);
    rmdir(scratch);
    return rc;
}
