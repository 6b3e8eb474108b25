/*
 * fakejitlink.c - a fake libnvJitLink for the seed and cache tests, so that
 * CI without the CUDA toolkit's libraries (or a GPU) exercises the whole
 * PTX -> cubin -> cache path. Loaded through VYRE_NVJITLINK_LIBRARY.
 *
 * It "links" one PTX input into a cubin (tests/common/fakecubin.h) that
 * defines one kernel per `.entry NAME` of the PTX, marked as entries, and
 * carries the architecture, options and source length in a note, so
 * different requests give different images. nvJitLinkVersion answers 13.0,
 * the version libcore is built against, so keys match those of a machine
 * with the real library.
 *
 * A PTX containing the line "// FAKEJITLINK_FAIL" fails the link with an
 * error log naming that line.
 */
#include <nvJitLink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecubin.h"

#define FJ_EXPORT __attribute__((visibility("default")))

struct nvJitLink {
    char opts[512];
    char *ptx;
    size_t ptx_len;
    unsigned char *cubin;
    size_t cubin_size;
    char log[256];
};

FJ_EXPORT nvJitLinkResult nvJitLinkVersion(unsigned int *major, unsigned int *minor)
{
    *major = 13;
    *minor = 0;
    return NVJITLINK_SUCCESS;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkCreate_13_0(nvJitLinkHandle *handle, uint32_t n,
                                                 const char *const *options)
{
    struct nvJitLink *h = calloc(1, sizeof *h);
    if (!h)
        return NVJITLINK_ERROR_INTERNAL;
    for (uint32_t i = 0; i < n; i++) {
        size_t l = strlen(h->opts);
        snprintf(h->opts + l, sizeof h->opts - l, "%s ", options[i]);
    }
    *handle = h;
    return NVJITLINK_SUCCESS;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkDestroy_13_0(nvJitLinkHandle *handle)
{
    if (handle && *handle) {
        free((*handle)->ptx);
        free((*handle)->cubin);
        free(*handle);
        *handle = NULL;
    }
    return NVJITLINK_SUCCESS;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkAddData_13_0(nvJitLinkHandle h, nvJitLinkInputType type,
                                                  const void *data, size_t size, const char *name)
{
    (void)name;
    if (type != NVJITLINK_INPUT_PTX || h->ptx)
        return NVJITLINK_ERROR_INVALID_INPUT;
    h->ptx = malloc(size + 1);
    if (!h->ptx)
        return NVJITLINK_ERROR_INTERNAL;
    memcpy(h->ptx, data, size);
    h->ptx[size] = '\0';
    h->ptx_len = size;
    return NVJITLINK_SUCCESS;
}

/* The names after ".entry" in the PTX, in order. */
static size_t entries(const char *ptx, char names[][128], size_t cap)
{
    size_t n = 0;
    for (const char *p = ptx; (p = strstr(p, ".entry")) && n < cap; p += 6) {
        const char *q = p + 6;
        if (*q != ' ' && *q != '\t')
            continue;
        while (*q == ' ' || *q == '\t')
            q++;
        size_t l = strcspn(q, " \t(\n");
        if (l == 0 || l >= 128)
            continue;
        memcpy(names[n], q, l);
        names[n][l] = '\0';
        n++;
    }
    return n;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkComplete_13_0(nvJitLinkHandle h)
{
    if (!h->ptx)
        return NVJITLINK_ERROR_INVALID_INPUT;
    if (strstr(h->ptx, "// FAKEJITLINK_FAIL")) {
        snprintf(h->log, sizeof h->log, "ptxas fatal   : fake failure requested\n");
        return NVJITLINK_ERROR_PTX_COMPILE;
    }
    /* Per call, not static: seed compiles on several threads at once, and a
     * shared buffer gave one module another's kernel names. */
    char names[64][128];
    size_t n = entries(h->ptx, names, 64);
    const char *ptrs[64];
    for (size_t i = 0; i < n; i++)
        ptrs[i] = names[i];
    char note[700];
    snprintf(note, sizeof note, "fakejitlink %zu bytes; %s", h->ptx_len, h->opts);
    h->cubin = fake_cubin(ptrs, n, NULL, 0, 1, note, &h->cubin_size);
    return h->cubin ? NVJITLINK_SUCCESS : NVJITLINK_ERROR_INTERNAL;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkGetLinkedCubinSize_13_0(nvJitLinkHandle h, size_t *size)
{
    if (!h->cubin)
        return NVJITLINK_ERROR_INVALID_INPUT;
    *size = h->cubin_size;
    return NVJITLINK_SUCCESS;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkGetLinkedCubin_13_0(nvJitLinkHandle h, void *cubin)
{
    if (!h->cubin)
        return NVJITLINK_ERROR_INVALID_INPUT;
    memcpy(cubin, h->cubin, h->cubin_size);
    return NVJITLINK_SUCCESS;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkGetErrorLogSize_13_0(nvJitLinkHandle h, size_t *size)
{
    *size = h->log[0] ? strlen(h->log) + 1 : 0;
    return NVJITLINK_SUCCESS;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkGetErrorLog_13_0(nvJitLinkHandle h, char *log)
{
    memcpy(log, h->log, strlen(h->log) + 1);
    return NVJITLINK_SUCCESS;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkGetInfoLogSize_13_0(nvJitLinkHandle h, size_t *size)
{
    (void)h;
    *size = 0;
    return NVJITLINK_SUCCESS;
}

FJ_EXPORT nvJitLinkResult __nvJitLinkGetInfoLog_13_0(nvJitLinkHandle h, char *log)
{
    (void)h;
    log[0] = '\0';
    return NVJITLINK_SUCCESS;
}
