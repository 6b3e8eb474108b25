/*
 * compile_launch.c - compile a CUDA C kernel through the vyre pipeline cache
 * and launch it, with nothing but libvyrecore's public API.
 *
 *   compile_launch [N]
 *
 * Opens GPU 0 (vyre_ctx_open), compiles a scaling kernel twice through
 * vyre_pipeline_compile and says where each module came from: compiled by
 * NVRTC (the first run on a machine), a hit in the on-disk cache (later
 * runs: no compiler), or the context's in-memory module cache (the second
 * compile in the same process). Then scales N floats (default 1048576) on
 * the GPU through host-buffer dispatch and checks every result.
 *
 * Exit status: 0 the result is right, 1 it is wrong, 2 an error (message
 * and hint on stderr), 3 no NVIDIA driver or no GPU (the vyre tools'
 * convention).
 *
 * Build against an installed libvyrecore:
 *   cc compile_launch.c $(pkg-config --cflags --libs vyrecore) -o compile_launch
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vyre/vyre.h>

#define PROG "compile_launch"

static const char SCALE_SRC[] =
    "extern \"C\" __global__ void scale(float *out, const float *in, float a, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        out[i] = a * in[i];\n"
    "}\n";

/* Prints err the way the vyre tools do, and returns the exit status for
 * it: 3 when there is no driver or GPU to run on, else 2. */
static int fail(const char *what, int rc, const vyre_error *err)
{
    if (rc == VYRE_ENODRIVER)
        fprintf(stderr, PROG ": no NVIDIA driver: nothing can be launched on this machine\n");
    else if (rc == VYRE_ENODEV)
        fprintf(stderr, PROG ": no NVIDIA GPU: nothing can be launched on this machine\n");
    fprintf(stderr, PROG ": error: %s: %s\n", what,
            err->message[0] ? err->message : vyre_strerror(rc));
    if (err->hint[0])
        fprintf(stderr, "hint: %s\n", err->hint);
    return rc == VYRE_ENODRIVER || rc == VYRE_ENODEV ? 3 : 2;
}

static void print_origin(const char *which, const vyre_pipeline_info *info)
{
    switch (info->origin) {
    case VYRE_PIPELINE_FROM_MODULE_CACHE:
        printf("%s compile: module cache (already loaded in this process)\n", which);
        break;
    case VYRE_PIPELINE_FROM_DISK_CACHE:
        printf("%s compile: disk cache hit (%zu-byte cubin for %s loaded, %.1f ms of compiling "
               "saved)\n",
               which, info->cubin_size, info->arch, (double)info->compile_ns / 1e6);
        break;
    case VYRE_PIPELINE_COMPILED:
        printf("%s compile: compiled (NVRTC, %s, %.1f ms)%s\n", which, info->arch,
               (double)info->compile_ns / 1e6,
               info->store_rc ? ", not stored in the cache" : ", stored in the cache");
        if (info->store_rc)
            printf("  (%s)\n", info->store_error.message);
        break;
    }
}

int main(int argc, char **argv)
{
    unsigned n = 1u << 20;
    if (argc > 2 || (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
        fprintf(argc == 2 ? stdout : stderr, "usage: " PROG " [N]\n");
        return argc == 2 ? 0 : 2;
    }
    if (argc == 2) {
        char *end = NULL;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (!*argv[1] || *end || v == 0 || v > (1ul << 28)) {
            fprintf(stderr, PROG ": error: invalid element count '%s'\n", argv[1]);
            fprintf(stderr, "hint: give a number from 1 to 268435456, e.g. '" PROG " 4096'\n");
            return 2;
        }
        n = (unsigned)v;
    }

    vyre_error err = {0};
    vyre_ctx *ctx = NULL;
    int rc = vyre_ctx_open(0, NULL, &ctx, &err);
    if (rc)
        return fail("cannot open GPU 0", rc, &err);
    const vyre_ctx_info *ci = vyre_ctx_info_get(ctx);
    printf("device %d: %s (%s); pipeline cache %s\n", ci->device, ci->device_name, ci->arch,
           vyre_cache_root(ci->cache));

    vyre_pipeline_desc desc = {
        .kind = VYRE_SOURCE_CUDA_C,
        .src = SCALE_SRC,
        .len = sizeof SCALE_SRC - 1,
        .entry = "scale",
    };
    vyre_pipeline *first = NULL, *second = NULL;
    rc = vyre_pipeline_compile(ctx, &desc, &first, &err);
    if (rc) {
        int status = fail("cannot compile 'scale'", rc, &err);
        vyre_ctx_close(ctx);
        return status;
    }
    print_origin("first", vyre_pipeline_info_get(first));
    rc = vyre_pipeline_compile(ctx, &desc, &second, &err);
    if (rc) {
        int status = fail("cannot compile 'scale' again", rc, &err);
        vyre_ctx_close(ctx);
        return status;
    }
    print_origin("second", vyre_pipeline_info_get(second));

    float *in = malloc(n * sizeof *in);
    float *out = malloc(n * sizeof *out);
    if (!in || !out) {
        fprintf(stderr, PROG ": error: out of memory for %u floats\n", n);
        free(in);
        free(out);
        vyre_ctx_close(ctx);
        return 2;
    }
    for (unsigned i = 0; i < n; i++)
        in[i] = (float)(i % 1000);
    const float a = 2.5f;
    vyre_arg args[] = {
        vyre_arg_out(out, n * sizeof *out),
        vyre_arg_in(in, n * sizeof *in),
        vyre_arg_scalar(&a, sizeof a),
        vyre_arg_scalar(&n, sizeof n),
    };
    vyre_launch_cfg cfg = vyre_launch_1d((n + 255) / 256, 256);
    rc = vyre_pipeline_dispatch_host(second, &cfg, args, sizeof args / sizeof args[0], &err);
    int status = 0;
    if (rc) {
        status = fail("cannot launch 'scale'", rc, &err);
    } else {
        unsigned bad = 0, first_bad = 0;
        for (unsigned i = 0; i < n; i++) {
            if (out[i] != a * in[i] && bad++ == 0)
                first_bad = i;
        }
        if (bad) {
            fprintf(stderr,
                    PROG ": wrong result: %u of %u elements, first at %u: %g, expected %g\n", bad,
                    n, first_bad, (double)out[first_bad], (double)(a * in[first_bad]));
            status = 1;
        } else {
            printf("scale(out, in, %.1f, %u): all %u results correct\n", (double)a, n, n);
        }
    }
    free(in);
    free(out);
    vyre_pipeline_free(first);
    vyre_pipeline_free(second);
    vyre_ctx_close(ctx);
    return status;
}
