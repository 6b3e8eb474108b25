/*
 * test_compile.c - the compile-through-cache path (libcore/src/cuda/
 * compile.c) without a GPU or a toolkit: a cubin request goes through as
 * is, so the cache side can be checked anywhere. The run-time pipeline path
 * stores its compiles with vyre__compile_store; these tests hold
 * vyre_compile_through_cache (what `vyre-cachectl seed` runs) to exactly
 * the header that helper builds, and show a blob stored either way is the
 * other's hit.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/compile_internal.h"
#include "testutil.h"
#include "vyre/blob.h"
#include "vyre/cache.h"
#include "vyre/compile.h"

static char g_tmp[256];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(compile, .init = setup, .fini = teardown);

/* Not a loadable cubin, but what the cubin path checks: the ELF magic. */
static const unsigned char k_cubin[] = {0x7f, 'E', 'L', 'F', 2,   1,   1,    0x33, 0,   0,  0,
                                        0,    0,   0,   0,   2,   0,   0xbe, 0,    1,   0,  0,
                                        0,    'v', 'y', 'r', 'e', '-', 't',  'e',  's', 't'};

static vyre_compile_request cubin_request(const char *arch)
{
    vyre_compile_request req = {.kind = VYRE_SOURCE_CUBIN,
                                .src = k_cubin,
                                .len = sizeof k_cubin,
                                .arch = arch,
                                .entry = "saxpy"};
    return req;
}

static vyre_cache *open_cache(const char *name)
{
    char root[400];
    snprintf(root, sizeof root, "%s/%s", g_tmp, name);
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(root, NULL, &c, &e);
    cr_assert_eq(rc, 0, "open '%s': %s: %s", root, vyre_err_name(rc), e.message);
    return c;
}

static vyre_blob *stored_blob(vyre_cache *c, const vyre_key *key)
{
    vyre_blob *b = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_get(c, key, &b, NULL, &e), 0, "%s", e.message);
    return b;
}

/* Every field the helper decides. The two it takes from a measurement or
 * the store (compile time, creation time) and the payload checksum are
 * checked by the callers. */
static void assert_same_header(const vyre_blob_header *got, const vyre_blob_header *want)
{
    cr_assert_eq(got->format_version, want->format_version);
    cr_assert_eq(got->key_version, want->key_version);
    cr_assert_eq(memcmp(got->key.bytes, want->key.bytes, sizeof got->key.bytes), 0, "key");
    cr_assert_eq(got->kind, want->kind);
    cr_assert_eq(got->flags, want->flags);
    cr_assert_str_eq(got->arch, want->arch);
    cr_assert_str_eq(got->toolchain, want->toolchain);
    cr_assert_eq(got->raw_size, want->raw_size);
    cr_assert_eq(got->stored_size, want->stored_size);
}

Test(compile, blob_header_is_built_from_the_key_and_the_result)
{
    vyre_compile_request req = cubin_request("sm_90a");
    vyre_key key;
    cr_assert_eq(vyre_compile_key(&req, &key, NULL), 0);
    vyre_compile_result res;
    cr_assert_eq(vyre_compile_cubin(&req, NULL, &res, NULL), 0);
    res.compile_ns = 1234;
    vyre_blob_header h;
    memset(&h, 0xa5, sizeof h);
    vyre__compile_blob_header(&key, &res, &h);
    cr_assert_eq(h.format_version, VYRE_BLOB_FORMAT_VERSION);
    cr_assert_eq(h.key_version, VYRE_KEY_VERSION);
    cr_assert_eq(memcmp(h.key.bytes, key.bytes, sizeof key.bytes), 0);
    cr_assert_eq(h.kind, VYRE_BLOB_CUBIN);
    cr_assert_eq(h.flags, 0u);
    cr_assert_str_eq(h.arch, "sm_90a");
    cr_assert_str_eq(h.toolchain, "cubin");
    cr_assert_eq(h.raw_size, sizeof k_cubin);
    cr_assert_eq(h.stored_size, sizeof k_cubin);
    cr_assert_eq(h.compile_ns, 1234u);
    cr_assert_eq(h.created_unix_ns, 0, "left to the store");
    static const uint8_t zero[16];
    cr_assert_eq(memcmp(h.payload_xxh128, zero, sizeof zero), 0, "left to the store");
    /* A compile measured as 0 ns still saves something. */
    res.compile_ns = 0;
    vyre__compile_blob_header(&key, &res, &h);
    cr_assert_eq(h.compile_ns, 1u);
    vyre_compile_result_release(&res);
}

Test(compile, through_cache_stores_exactly_the_pipeline_header)
{
    vyre_cache *c = open_cache("seeded");
    vyre_compile_request req = cubin_request("sm_90");
    vyre_blob *out = NULL;
    int hit = -1;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_compile_through_cache(c, &req, NULL, NULL, 0, &out, &hit, &e), 0, "%s",
                 e.message);
    cr_assert_eq(hit, 0);

    /* What the pipeline path builds for the same request. */
    vyre_key key;
    cr_assert_eq(vyre_compile_key(&req, &key, NULL), 0);
    vyre_compile_result res;
    cr_assert_eq(vyre_compile_cubin(&req, NULL, &res, NULL), 0);
    vyre_blob_header want;
    vyre__compile_blob_header(&key, &res, &want);

    vyre_blob *b = stored_blob(c, &key);
    assert_same_header(&b->header, &want);
    assert_same_header(&out->header, &want);
    cr_assert_geq(b->header.compile_ns, 1u);
    cr_assert_eq(b->header.compile_ns, out->header.compile_ns);
    cr_assert_gt(b->header.created_unix_ns, 0);
    cr_assert_eq(b->header.created_unix_ns, out->header.created_unix_ns);
    cr_assert_eq(memcmp(b->header.payload_xxh128, out->header.payload_xxh128, 16), 0);
    cr_assert_eq(b->size, sizeof k_cubin);
    cr_assert_eq(memcmp(b->payload, k_cubin, sizeof k_cubin), 0);

    /* The pipeline's store of the same compile, in another cache: the same
     * blob but for the two clocks. */
    vyre_cache *c2 = open_cache("runtime");
    vyre_blob_header h2;
    cr_assert_eq(vyre__compile_store(c2, NULL, &key, &res, NULL, &h2, &e), 0, "%s", e.message);
    vyre_blob *b2 = stored_blob(c2, &key);
    assert_same_header(&b2->header, &b->header);
    assert_same_header(&h2, &b2->header);
    cr_assert_eq(h2.created_unix_ns, b2->header.created_unix_ns);
    cr_assert_eq(memcmp(b2->header.payload_xxh128, b->header.payload_xxh128, 16), 0);

    vyre_blob_free(b2);
    vyre_blob_free(b);
    vyre_blob_free(out);
    vyre_compile_result_release(&res);
    vyre_cache_close(c2);
    vyre_cache_close(c);
}

Test(compile, a_blob_stored_by_the_pipeline_path_is_a_through_cache_hit)
{
    vyre_cache *c = open_cache("runtime");
    vyre_compile_request req = cubin_request("sm_100a");
    vyre_key key;
    cr_assert_eq(vyre_compile_key(&req, &key, NULL), 0);
    vyre_compile_result res;
    cr_assert_eq(vyre_compile_cubin(&req, NULL, &res, NULL), 0);
    res.compile_ns = 777; /* marks the blob as the one stored here */
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__compile_store(c, NULL, &key, &res, NULL, NULL, &e), 0, "%s", e.message);
    vyre_compile_result_release(&res);

    vyre_blob *out = NULL;
    int hit = -1;
    cr_assert_eq(vyre_compile_through_cache(c, &req, NULL, NULL, 0, &out, &hit, &e), 0, "%s",
                 e.message);
    cr_assert_eq(hit, 1, "the stored blob is found under the request's key");
    cr_assert_eq(out->header.compile_ns, 777u);
    vyre_blob_free(out);
    vyre_cache_close(c);
}
