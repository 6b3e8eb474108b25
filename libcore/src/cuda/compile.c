/*
 * compile.c - a pipeline's source to a cubin, and through the cache.
 *
 * Owns the toolchain identity, the cache key of a compile request, the
 * dispatch to NVRTC (CUDA C) or nvJitLink (PTX), the get-or-compile-and-put
 * cache path, and source-kind detection. The run-time pipeline path and
 * `vyre-cachectl seed` both come through here, which is what makes a seeded
 * blob a hit at run time: never compute these keys anywhere else.
 *
 * The key holds the toolchain identity (compiler and its version) but not
 * the driver version: a cubin for sm_XX is the same whatever driver loads
 * it, and seeding must work on machines with no driver at all.
 */
#include "base/cubin.h"
#include "cuda/nvrtc_internal.h"
#include "vyre/compile.h"

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "base/internal.h"
#include "cache/blob_internal.h"
#include "cache/key_internal.h"
#include "cuda/compile_internal.h"
#include "cuda/toolkit_internal.h"
#include "cuda/jitlink.h"
#include "vyre/nvrtc.h"

#define COMPILE_BACKEND "cuda"
#define DETECT_WINDOW   1024
#define HINT_ARCH                                                                                  \
    "use a real architecture: sm_<major><minor> with an optional a or f suffix (e.g. 'sm_90', "    \
    "'sm_90a')"

static const char ELF_MAGIC[4] = {0x7f, 'E', 'L', 'F'};

const char *vyre_source_kind_name(vyre_source_kind kind)
{
    switch (kind) {
    case VYRE_SOURCE_CUDA_C:
        return "cuda-c";
    case VYRE_SOURCE_PTX:
        return "ptx";
    case VYRE_SOURCE_CUBIN:
        return "cubin";
    }
    return NULL;
}

int vyre_compile_arch_valid(const char *arch)
{
    return arch && strncmp(arch, "sm_", 3) == 0 && vyre__toolkit_arch_number_valid(arch + 3) &&
           strlen(arch) < VYRE_BLOB_ARCH_MAX;
}

void vyre_compile_result_release(vyre_compile_result *res)
{
    if (!res)
        return;
    free(res->cubin);
    free(res->log);
    memset(res, 0, sizeof *res);
}

int vyre_compile_toolchain(vyre_source_kind kind, char *buf, size_t size, vyre_error *err)
{
    if (!buf || !size)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_compile_toolchain: NULL buffer");
    buf[0] = '\0';
    int major = 0, minor = 0, rc, n;
    switch (kind) {
    case VYRE_SOURCE_CUDA_C:
        rc = vyre_nvrtc_version(&major, &minor, err);
        if (rc)
            return rc;
        n = snprintf(buf, size, "nvrtc-%d.%d", major, minor);
        break;
    case VYRE_SOURCE_PTX:
        rc = vyre_jitlink_version(&major, &minor, err);
        if (rc)
            return rc;
        n = snprintf(buf, size, "nvjitlink-%d.%d", major, minor);
        break;
    case VYRE_SOURCE_CUBIN:
        n = snprintf(buf, size, "cubin");
        break;
    default:
        return vyre__fail(err, VYRE_EINVAL, "use CUDA C (1), PTX (2) or cubin (3)",
                          "unknown source kind '%d'", (int)kind);
    }
    if (n < 0 || (size_t)n >= size) {
        buf[0] = '\0';
        return vyre__fail(err, VYRE_EINVAL, NULL,
                          "vyre_compile_toolchain: buffer of %zu bytes too small", size);
    }
    return VYRE_OK;
}

int vyre_compile_toolchains(char (*out)[VYRE_BLOB_TOOLCHAIN_MAX], size_t cap, size_t *n,
                            vyre_error *err)
{
    if (!out || !n)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_compile_toolchains: NULL argument");
    /* The identities differ by source kind (NVRTC for CUDA C, nvJitLink for
     * PTX, "cubin"), so "stale" means "none of them". */
    static const vyre_source_kind kinds[] = {VYRE_SOURCE_CUDA_C, VYRE_SOURCE_PTX,
                                             VYRE_SOURCE_CUBIN};
    vyre_error terr;
    vyre_error_clear(&terr);
    int first_rc = 0;
    *n = 0;
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(kinds) && *n < cap; i++) {
        int rc = vyre_compile_toolchain(kinds[i], out[*n], VYRE_BLOB_TOOLCHAIN_MAX, &terr);
        if (rc == 0)
            (*n)++;
        else if (!first_rc)
            first_rc = rc;
    }
    if (*n < 2)
        return vyre__fail(err, first_rc ? first_rc : VYRE_EINVAL,
                          "install the CUDA toolkit's NVRTC/nvJitLink, or name the "
                          "identities to keep",
                          "cannot tell the current toolchains: %s", terr.message);
    return 0;
}

static int check_request(const vyre_compile_request *req, vyre_error *err)
{
    if (!req)
        return vyre__fail(err, VYRE_EINVAL, NULL, "NULL compile request");
    if (!vyre_source_kind_name(req->kind))
        return vyre__fail(err, VYRE_EINVAL, "use CUDA C (1), PTX (2) or cubin (3)",
                          "unknown source kind '%d'", (int)req->kind);
    if (!req->src || !req->len)
        return vyre__fail(err, VYRE_EINVAL, "pass the pipeline's source bytes", "empty %s source",
                          vyre_source_kind_name(req->kind));
    if (!vyre_compile_arch_valid(req->arch))
        return vyre__fail(err, VYRE_EINVAL, HINT_ARCH, "invalid GPU architecture '%s'",
                          req->arch ? req->arch : "(null)");
    if (req->entry && !*req->entry)
        return vyre__fail(
            err, VYRE_EINVAL, "name the kernel to launch (its extern \"C\" name), or pass NULL",
            "empty entry point name for the %s source", vyre_source_kind_name(req->kind));
    if (req->nopts && !req->opts)
        return vyre__fail(err, VYRE_EINVAL, NULL, "compile request: %zu options but no array",
                          req->nopts);
    for (size_t i = 0; i < req->nopts; i++)
        if (!req->opts[i])
            return vyre__fail(err, VYRE_EINVAL, NULL, "compile request: option %zu is NULL", i);
    return VYRE_OK;
}

int vyre_compile_key_input(const vyre_compile_request *req, vyre_key_input *in,
                           char toolchain[VYRE_BLOB_TOOLCHAIN_MAX], vyre_error *err)
{
    if (!in || !toolchain)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_compile_key_input: NULL argument");
    int rc = check_request(req, err);
    if (rc)
        return rc;
    rc = vyre_compile_toolchain(req->kind, toolchain, VYRE_BLOB_TOOLCHAIN_MAX, err);
    if (rc == VYRE_ENONVRTC || rc == VYRE_ENOJITLINK) {
        /* A hit needs no compiler: a machine with only the driver must
         * still load cubins seeded elsewhere. With the compiler missing, key
         * the lookup by the toolkit libcore was built with (what a seeding
         * machine with that toolkit stores); a miss then fails in
         * vyre_compile_cubin with the loader's message. */
        int n = snprintf(toolchain, VYRE_BLOB_TOOLCHAIN_MAX, "%s-%d.%d",
                         req->kind == VYRE_SOURCE_CUDA_C ? "nvrtc" : "nvjitlink",
                         CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10);
        rc = n > 0 && n < VYRE_BLOB_TOOLCHAIN_MAX ? VYRE_OK : rc;
    }
    if (rc)
        return rc;
    *in = (vyre_key_input){
        .backend = COMPILE_BACKEND,
        .toolchain = toolchain,
        .arch = req->arch,
        .features = 0,
        .options = req->opts,
        .n_options = req->nopts,
        .entry = NULL, /* key v2: a module's key, whichever kernel is asked for */
        .source_kind = req->kind,
        .source = req->src,
        .source_len = req->len,
    };
    return VYRE_OK;
}

int vyre_compile_key(const vyre_compile_request *req, vyre_key *out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_compile_key: NULL key");
    char toolchain[VYRE_BLOB_TOOLCHAIN_MAX];
    vyre_key_input in;
    int rc = vyre_compile_key_input(req, &in, toolchain, err);
    return rc ? rc : vyre__key_compute(&in, out, err);
}

static int copy_cubin(const vyre_compile_request *req, vyre_compile_result *res, vyre_error *err)
{
    if (req->len < sizeof ELF_MAGIC || memcmp(req->src, ELF_MAGIC, sizeof ELF_MAGIC) != 0)
        return vyre__fail(err, VYRE_EINVAL,
                          "pass a cubin (an ELF file from nvcc -cubin, NVRTC or nvJitLink), or "
                          "declare the source as CUDA C or PTX",
                          "cubin input%s%s%s does not start with the ELF magic",
                          req->entry ? " for '" : "", req->entry ? req->entry : "",
                          req->entry ? "'" : "");
    uint64_t t0 = vyre__mono_ns();
    res->cubin = malloc(req->len);
    res->log = calloc(1, 1);
    if (!res->cubin || !res->log)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for a cubin",
                          req->len);
    memcpy(res->cubin, req->src, req->len);
    res->size = req->len;
    res->compile_ns = vyre__mono_ns() - t0;
    return VYRE_OK;
}

int vyre_compile_cubin(const vyre_compile_request *req, const char *source_name,
                       vyre_compile_result *res, vyre_error *err)
{
    if (!res)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_compile_cubin: NULL result");
    memset(res, 0, sizeof *res);
    int rc = check_request(req, err);
    if (rc)
        return rc;
    vyre__strlcpy(res->arch, req->arch, sizeof res->arch);
    rc = vyre_compile_toolchain(req->kind, res->toolchain, sizeof res->toolchain, err);
    if (rc)
        return rc;

    if (req->kind == VYRE_SOURCE_CUBIN)
        return copy_cubin(req, res, err);

    if (req->kind == VYRE_SOURCE_CUDA_C) {
        vyre_nvrtc_output o;
        rc = vyre_nvrtc_compile(req->src, req->len,
                                source_name && *source_name ? source_name : "kernel.cu", req->arch,
                                req->opts, req->nopts, 1, &o, err);
        res->cubin = o.data;
        res->size = rc ? 0 : o.size;
        res->log = o.log;
        res->compile_ns = o.compile_ns;
    } else {
        vyre_jitlink_output o;
        rc = vyre_jitlink_ptx_to_cubin(req->src, req->len,
                                       source_name && *source_name ? source_name : "kernel.ptx",
                                       req->arch, req->opts, req->nopts, &o, err);
        res->cubin = o.cubin;
        res->size = rc ? 0 : o.size;
        res->log = o.log;
        res->compile_ns = o.link_ns;
    }
    /* Ownership of the output's buffers moved into res. */
    if (rc) {
        free(res->cubin);
        res->cubin = NULL;
    }
    return rc;
}

void vyre__compile_blob_header(const vyre_key *key, const vyre_compile_result *res,
                               vyre_blob_header *h)
{
    memset(h, 0, sizeof *h);
    h->format_version = VYRE_BLOB_FORMAT_VERSION;
    h->key_version = VYRE_KEY_VERSION;
    h->key = *key;
    h->kind = VYRE_BLOB_CUBIN;
    vyre__strlcpy(h->arch, res->arch, sizeof h->arch);
    vyre__strlcpy(h->toolchain, res->toolchain, sizeof h->toolchain);
    h->raw_size = res->size;
    h->stored_size = res->size;
    /* A compile measured as 0 ns would read as "saves nothing". */
    h->compile_ns = res->compile_ns ? res->compile_ns : 1;
}

int vyre__compile_check_entry(const char *names, size_t names_len, size_t n, const char *entry,
                              vyre_error *err)
{
    if (!entry || n == 0 || vyre__kernel_list_has(names, names_len, entry))
        return VYRE_OK;
    char list[512];
    size_t need = vyre_kernel_list_format(names, names_len, ", ", list, sizeof list);
    /* The front end's listing of the cache (each blob's kernels) is the
     * remedy; libcore names no front end. */
    return vyre__remedy(err, VYRE_REMEDY_CACHE_LIST,
                        vyre__fail(err, VYRE_ENOENT,
                                   "name one of the module's kernels (extern \"C\" names, or the "
                                   "mangled ones)",
                                   "the module has no kernel '%s'; it defines %zu: %s%s", entry, n,
                                   list, need >= sizeof list ? ", ..." : ""));
}

/* The basename of path, truncated to fit the header's source field. */
static void source_basename(const char *path, char out[VYRE_BLOB_SOURCE_MAX])
{
    out[0] = '\0';
    if (!path)
        return;
    const char *slash = strrchr(path, '/');
    vyre__strlcpy(out, slash ? slash + 1 : path, VYRE_BLOB_SOURCE_MAX);
}

/* Records the inputs of req's key beside the blob just stored, for
 * vyre_key_explain; best effort: a failure costs only that report. */
static void note_inputs(vyre_cache *c, const vyre_compile_request *req, const vyre_key *key)
{
    char toolchain[VYRE_BLOB_TOOLCHAIN_MAX];
    vyre_key_input in;
    if (req && vyre_compile_key_input(req, &in, toolchain, NULL) == VYRE_OK)
        vyre__cache_note_inputs(c, key, &in, NULL);
}

int vyre__compile_store(vyre_cache *c, const vyre_compile_request *req, const vyre_key *key,
                        const vyre_compile_result *res, const char *source_name,
                        vyre_blob_header *h, vyre_error *err)
{
    vyre_blob_header hdr;
    vyre__compile_blob_header(key, res, &hdr);
    source_basename(source_name, hdr.source);
    char *names = NULL;
    size_t names_len = 0, n = 0;
    if (vyre_cubin_kernels(res->cubin, res->size, &names, &names_len, &n, NULL) == VYRE_OK &&
        n > 0 && names_len <= VYRE_BLOB_KERNELS_MAX) {
        hdr.kernels = names;
        hdr.kernels_size = (uint32_t)names_len;
        hdr.n_kernels = (uint32_t)n;
    }
    int rc = vyre_cache_put(c, &hdr, res->cubin, res->size, err);
    if (rc == VYRE_OK)
        note_inputs(c, req, key);
    hdr.kernels = NULL; /* freed below; the caller gets the counts */
    free(names);
    if (h)
        *h = hdr; /* as stored: vyre_cache_put fills in the rest */
    return rc;
}

/* A blob in one allocation, as vyre__blob_load makes them (vyre_blob_free
 * frees both), with the cubin's kernel table after the payload. */
static vyre_blob *blob_new(const vyre_blob_header *h, const void *payload, size_t len)
{
    char *names = NULL;
    size_t names_len = 0, n = 0;
    vyre_cubin_kernels(payload, len, &names, &names_len, &n, NULL);
    vyre_blob *b = malloc(sizeof *b + len + names_len);
    if (!b) {
        free(names);
        return NULL;
    }
    b->header = *h;
    b->payload = b + 1;
    b->size = len;
    memcpy(b->payload, payload, len);
    b->header.kernels = NULL;
    if (names_len) {
        memcpy((char *)b->payload + len, names, names_len);
        b->header.kernels = (const char *)b->payload + len;
    }
    free(names);
    return b;
}

/* The kernels a blob's module defines: the header's table, else (a blob
 * stored without one) the cubin's symbol table. *owned is what to free. */
static void blob_kernels(const vyre_blob *b, const char **names, size_t *names_len, size_t *n,
                         char **owned)
{
    *owned = NULL;
    if (b->header.kernels && b->header.n_kernels) {
        *names = b->header.kernels;
        *names_len = b->header.kernels_size;
        *n = b->header.n_kernels;
        return;
    }
    *names = NULL;
    *names_len = *n = 0;
    if (vyre_cubin_kernels(b->payload, b->size, owned, names_len, n, NULL) == VYRE_OK)
        *names = *owned;
}

/* req->entry, then entries[0..n_entries): the first the module lacks. */
static int check_entries(const char *names, size_t names_len, size_t n, const char *entry,
                         const char *const *entries, size_t n_entries, vyre_error *err)
{
    int rc = vyre__compile_check_entry(names, names_len, n, entry, err);
    for (size_t i = 0; !rc && i < n_entries; i++)
        rc = vyre__compile_check_entry(names, names_len, n, entries[i], err);
    return rc;
}

static int blob_has_entries(const vyre_blob *b, const char *entry, const char *const *entries,
                            size_t n_entries, vyre_error *err)
{
    if (!entry && !n_entries)
        return VYRE_OK;
    const char *names;
    size_t names_len, n;
    char *owned;
    blob_kernels(b, &names, &names_len, &n, &owned);
    int rc = check_entries(names, names_len, n, entry, entries, n_entries, err);
    free(owned);
    return rc;
}

int vyre__compile_blob_has_entry(const vyre_blob *b, const char *entry, vyre_error *err)
{
    return blob_has_entries(b, entry, NULL, 0, err);
}

int vyre_compile_through_cache(vyre_cache *c, const vyre_compile_request *req,
                               const char *source_name, const char *const *entries,
                               size_t n_entries, vyre_blob **out, int *was_hit, vyre_error *err)
{
    if (out)
        *out = NULL;
    if (was_hit)
        *was_hit = 0;
    if (!c || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_compile_through_cache: NULL argument");
    vyre_key key;
    int rc = vyre_compile_key(req, &key, err);
    if (rc)
        return rc;

    vyre_blob *hit = NULL;
    rc = vyre_cache_get(c, &key, &hit, NULL, err);
    if (rc == VYRE_OK) {
        if (hit->header.kind == VYRE_BLOB_CUBIN) {
            rc = blob_has_entries(hit, req->entry, entries, n_entries, err);
            if (rc) {
                vyre_blob_free(hit);
                return rc;
            }
            *out = hit;
            if (was_hit)
                *was_hit = 1;
            return VYRE_OK;
        }
        /* Only a foreign writer puts another kind under a cubin key:
         * compile and replace it. */
        vyre_blob_free(hit);
    } else if (rc != VYRE_ENOENT) {
        return rc;
    }

    vyre_compile_result res;
    rc = vyre_compile_cubin(req, source_name, &res, err);
    if (rc) {
        vyre_compile_result_release(&res);
        return rc;
    }
    if (req->entry || n_entries) {
        /* A module without the kernel asked for is not stored: the caller
         * named the wrong module (or the wrong kernel). */
        char *names = NULL;
        size_t names_len = 0, n = 0;
        if (vyre_cubin_kernels(res.cubin, res.size, &names, &names_len, &n, NULL) == VYRE_OK)
            rc = check_entries(names, names_len, n, req->entry, entries, n_entries, err);
        free(names);
        if (rc) {
            vyre_compile_result_release(&res);
            return rc;
        }
    }
    vyre_blob_header h;
    int put_rc = vyre__compile_store(c, req, &key, &res, source_name, &h, err);
    *out = blob_new(&h, res.cubin, res.size);
    vyre_compile_result_release(&res);
    if (!*out)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate %zu bytes for a cubin blob",
                          (size_t)h.stored_size);
    return put_rc;
}

/* ---- source kind detection ---------------------------------------------- */

static int ext_kind(const char *path, vyre_source_kind *kind)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return 0;
    static const struct {
        const char *ext;
        vyre_source_kind kind;
    } exts[] = {
        {".cu", VYRE_SOURCE_CUDA_C},
        {".cuh", VYRE_SOURCE_CUDA_C},
        {".ptx", VYRE_SOURCE_PTX},
        {".cubin", VYRE_SOURCE_CUBIN},
    };
    for (size_t i = 0; i < VYRE_ARRAY_SIZE(exts); i++) {
        if (strcasecmp(dot, exts[i].ext) == 0) {
            *kind = exts[i].kind;
            return 1;
        }
    }
    return 0;
}

/* 1 when a line of p[0..n) starts (after blanks) with the directive dir
 * followed by a blank. */
static int has_directive(const char *p, size_t n, const char *dir)
{
    size_t dl = strlen(dir);
    size_t i = 0;
    while (i < n) {
        while (i < n && (p[i] == ' ' || p[i] == '\t'))
            i++;
        if (i + dl < n && memcmp(p + i, dir, dl) == 0 && (p[i + dl] == ' ' || p[i + dl] == '\t'))
            return 1;
        while (i < n && p[i] != '\n')
            i++;
        i++;
    }
    return 0;
}

int vyre_source_kind_detect(const char *path, const void *data, size_t len, vyre_source_kind *kind)
{
    if (!kind || (len && !data))
        return VYRE_EINVAL;
    if (path && ext_kind(path, kind))
        return VYRE_OK;
    const char *p = data;
    if (len >= sizeof ELF_MAGIC && memcmp(p, ELF_MAGIC, sizeof ELF_MAGIC) == 0) {
        *kind = VYRE_SOURCE_CUBIN;
        return VYRE_OK;
    }
    size_t n = len < DETECT_WINDOW ? len : DETECT_WINDOW;
    if (n && has_directive(p, n, ".version") && has_directive(p, n, ".target"))
        *kind = VYRE_SOURCE_PTX;
    else
        *kind = VYRE_SOURCE_CUDA_C;
    return VYRE_OK;
}

/* ---- PTX .target ---------------------------------------------------------- */

/* Copies p[0..n) with comments blanked out (// to end of line, block
 * comments) into a new buffer; string literals do not occur before .target
 * in PTX, so they are not special. */
static char *strip_comments(const char *p, size_t n)
{
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t i = 0;
    while (i < n) {
        if (p[i] == '/' && i + 1 < n && p[i + 1] == '/') {
            while (i < n && p[i] != '\n')
                out[i++] = ' ';
        } else if (p[i] == '/' && i + 1 < n && p[i + 1] == '*') {
            out[i++] = ' ';
            out[i++] = ' ';
            while (i < n && !(p[i] == '*' && i + 1 < n && p[i + 1] == '/'))
                out[i] = p[i] == '\n' ? '\n' : ' ', i++;
            for (int k = 0; k < 2 && i < n; k++)
                out[i++] = ' ';
        } else {
            out[i] = p[i] ? p[i] : ' ';
            i++;
        }
    }
    out[n] = '\0';
    return out;
}

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.';
}

int vyre_ptx_target_arch(const void *ptx, size_t len, char *arch, size_t size)
{
    if (!ptx || !arch || size == 0)
        return VYRE_EINVAL;
    arch[0] = '\0';
    char *s = strip_comments(ptx, len);
    if (!s)
        return VYRE_ENOMEM;
    int rc = VYRE_ENOENT;
    /* .target is a directive: at the start of a statement (line start or
     * after ';'), followed by a blank. */
    for (size_t i = 0; i < len && rc == VYRE_ENOENT; i++) {
        if (strncmp(s + i, ".target", 7) != 0 || (i > 0 && ident_char(s[i - 1])) || i + 7 >= len ||
            (s[i + 7] != ' ' && s[i + 7] != '\t'))
            continue;
        size_t j = i + 7;
        /* The comma-separated target list, up to the end of the line. */
        while (j < len && s[j] != '\n' && s[j] != ';') {
            while (j < len && (s[j] == ' ' || s[j] == '\t' || s[j] == ',' || s[j] == '\r'))
                j++;
            size_t k = j;
            while (k < len && ident_char(s[k]))
                k++;
            if (k == j)
                break;
            char tok[VYRE_BLOB_ARCH_MAX];
            if (k - j < sizeof tok) {
                memcpy(tok, s + j, k - j);
                tok[k - j] = '\0';
                if (vyre_compile_arch_valid(tok)) {
                    if (vyre__strlcpy(arch, tok, size) >= size) {
                        arch[0] = '\0';
                        rc = VYRE_EINVAL;
                    } else {
                        rc = VYRE_OK;
                    }
                    break;
                }
            }
            j = k;
        }
    }
    free(s);
    return rc;
}
