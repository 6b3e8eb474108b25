/*
 * test_cubin.c - what a module holds (issue 12): vyre_cubin_kernels on
 * well-formed, truncated and hostile ELF images; the PTX .target reader;
 * the blob header's source name and kernel table (round trip, damage,
 * canonical form); key-version-1 blobs as stale, not corrupt; and a module
 * seeded once serving every one of its kernels through the cache.
 *
 * No GPU and no toolkit: cubins come from tests/common/fakecubin.h, PTX
 * goes through the fake nvJitLink (tests/fakes/fakejitlink.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cubin.h"
#include "cache/blob_internal.h"
#include "cuda/compile_internal.h"
#include "fakecubin.h"
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

TestSuite(cubin, .init = setup, .fini = teardown);

static unsigned char *cubin_of(const char *const *k, size_t nk, const char *const *f, size_t nf,
                               int mark, size_t *len)
{
    unsigned char *b = fake_cubin(k, nk, f, nf, mark, "test", len);
    cr_assert_not_null(b);
    return b;
}

/* The names as "a,b,c". */
static void joined(const char *names, size_t len, char *buf, size_t size)
{
    vyre_kernel_list_format(names, len, ",", buf, size);
}

Test(cubin, kernels_are_the_marked_global_functions_in_their_text_sections)
{
    const char *k[] = {"add_one", "twice", "_Z6matmulPfS_"};
    const char *f[] = {"helper"};
    size_t len;
    unsigned char *b = cubin_of(k, 3, f, 1, 1, &len);
    char *names = NULL, buf[256];
    size_t nl = 0, n = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cubin_kernels(b, len, &names, &nl, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 3);
    joined(names, nl, buf, sizeof buf);
    cr_assert_str_eq(buf, "add_one,twice,_Z6matmulPfS_");
    cr_assert(vyre__kernel_list_has(names, nl, "twice"));
    cr_assert(!vyre__kernel_list_has(names, nl, "helper"), "a device function is not a kernel");
    cr_assert(!vyre__kernel_list_has(names, nl, "twic"));
    free(names);
    free(b);

    /* No entry marks at all (another producer): every global function in
     * its .text section counts. */
    b = cubin_of(k, 2, f, 1, 0, &len);
    cr_assert_eq(vyre_cubin_kernels(b, len, &names, &nl, &n, NULL), 0);
    cr_assert_eq(n, 3);
    joined(names, nl, buf, sizeof buf);
    cr_assert_str_eq(buf, "add_one,twice,helper");
    free(names);
    free(b);

    /* No kernels: success, nothing. */
    b = cubin_of(NULL, 0, NULL, 0, 1, &len);
    cr_assert_eq(vyre_cubin_kernels(b, len, &names, &nl, &n, NULL), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(nl, 0);
    cr_assert_null(names);
    free(b);
}

Test(cubin, a_real_cubin_from_the_toolkit)
{
    /* Written by nvcc when it is installed; skipped otherwise. */
    char cu[400], cubin[400], cmd[1400];
    snprintf(cu, sizeof cu, "%s/k.cu", g_tmp);
    snprintf(cubin, sizeof cubin, "%s/k.cubin", g_tmp);
    static const char src[] =
        "extern \"C\" __global__ void add_one(int *x) { x[threadIdx.x] += 1; }\n"
        "__device__ __noinline__ int helper(int v) { return v * 3; }\n"
        "extern \"C\" __global__ void thrice(int *x) { x[0] = helper(x[0]); }\n";
    tu_write_file(cu, src, strlen(src));
    snprintf(cmd, sizeof cmd, "nvcc -cubin -arch=sm_90a -o '%s' '%s' >/dev/null 2>&1", cubin, cu);
    if (system(cmd) != 0)
        cr_skip_test("nvcc is not available to build a real cubin");
    size_t len = 0;
    char *img = tu_read_file(cubin, &len);
    cr_assert_not_null(img);
    char *names = NULL;
    size_t nl = 0, n = 0;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cubin_kernels(img, len, &names, &nl, &n, &e), 0, "%s", e.message);
    cr_assert_eq(n, 2);
    cr_assert(vyre__kernel_list_has(names, nl, "add_one"));
    cr_assert(vyre__kernel_list_has(names, nl, "thrice"));
    free(names);
    free(img);
}

/* Every failure is VYRE_EINVAL with a message; nothing is returned. */
static void expect_bad(const unsigned char *b, size_t len, const char *what)
{
    char *names = (char *)1;
    size_t nl = 7, n = 7;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cubin_kernels(b, len, &names, &nl, &n, &e);
    cr_assert_eq(rc, VYRE_EINVAL, "%s: rc %d", what, rc);
    cr_assert_null(names, "%s", what);
    cr_assert_eq(n, 0, "%s", what);
    cr_assert(strstr(e.message, "not a readable cubin"), "%s: %s", what, e.message);
}

Test(cubin, truncated_images_are_refused_at_every_length)
{
    const char *k[] = {"add_one", "twice"};
    size_t len;
    unsigned char *b = cubin_of(k, 2, NULL, 0, 1, &len);
    /* Every prefix: never a read past the end (ASan/valgrind builds see
     * it), always a clean error or, for a prefix that still holds every
     * table, the kernels. */
    for (size_t l = 0; l < len; l++) {
        unsigned char *p = malloc(l ? l : 1);
        memcpy(p, b, l);
        char *names = NULL;
        size_t nl = 0, n = 0;
        int rc = vyre_cubin_kernels(p, l, &names, &nl, &n, NULL);
        cr_assert(rc == VYRE_EINVAL || (rc == 0 && n <= 2), "length %zu: rc %d", l, rc);
        free(names);
        free(p);
    }
    expect_bad(b, 63, "shorter than the ELF header");
    expect_bad(b, len - 1, "section headers cut");
    free(b);
}

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

Test(cubin, hostile_offsets_counts_and_indexes_are_refused)
{
    const char *k[] = {"add_one", "twice"};
    size_t len;
    unsigned char *good = cubin_of(k, 2, NULL, 0, 1, &len);
    unsigned char *b = malloc(len);
    uint64_t shoff = get64(good + 40);
    unsigned char *sym_sh = NULL;
#define RESET()                                                                                    \
    do {                                                                                           \
        memcpy(b, good, len);                                                                      \
        sym_sh = b + shoff + 64 * 3;                                                               \
    } while (0)

    RESET();
    b[1] = 'X';
    expect_bad(b, len, "bad magic");
    RESET();
    b[4] = 1;
    expect_bad(b, len, "32-bit ELF");
    RESET();
    b[5] = 2;
    expect_bad(b, len, "big-endian ELF");
    RESET();
    put64(b + 40, UINT64_MAX - 10);
    expect_bad(b, len, "section headers at a wrapping offset");
    RESET();
    put64(b + 40, len);
    expect_bad(b, len, "section headers past the end");
    RESET();
    put16(b + 60, 0xffff);
    expect_bad(b, len, "65535 section headers");
    RESET();
    put16(b + 60, 0);
    expect_bad(b, len, "no section headers");
    RESET();
    put16(b + 58, 40);
    expect_bad(b, len, "section header size 40");
    RESET();
    put16(b + 62, 200);
    expect_bad(b, len, "section-name table index out of range");
    RESET();
    put64(b + shoff + 64 * 1 + 24, UINT64_MAX - 3); /* .shstrtab offset */
    expect_bad(b, len, "section-name table at a wrapping offset");
    RESET();
    put64(sym_sh + 32, UINT64_MAX - 23); /* symtab size */
    expect_bad(b, len, "symbol table of absurd size");
    RESET();
    put64(sym_sh + 56, 16);
    expect_bad(b, len, "symbol entry size 16");
    RESET();
    put64(sym_sh + 32, 24 * 3 + 1);
    expect_bad(b, len, "symbol table not a whole number of entries");
    RESET();
    put32(sym_sh + 40, 99);
    expect_bad(b, len, "symbol table links a missing string table");
    RESET();
    put64(b + shoff + 64 * 2 + 32, 1u << 30); /* .strtab size */
    expect_bad(b, len, "string table past the end");
    RESET();
    {
        /* A symbol name offset beyond its table. */
        uint64_t symoff = get64(sym_sh + 24);
        put32(b + symoff + 24, 0x7fffffff);
        expect_bad(b, len, "symbol name out of range");
    }
    RESET();
    {
        /* A string table with no NUL at its end: the last name runs off. */
        uint64_t stroff = get64(b + shoff + 64 * 2 + 24);
        uint64_t strsz = get64(b + shoff + 64 * 2 + 32);
        b[stroff + strsz - 1] = 'x';
        expect_bad(b, len, "unterminated symbol name");
    }
    RESET();
    {
        /* A text section whose name is out of range. */
        put32(b + shoff + 64 * 4, 0x7ffffff0);
        expect_bad(b, len, "section name out of range");
    }
    RESET();
    {
        /* A symbol in a section index beyond the table: skipped, not read. */
        uint64_t symoff = get64(sym_sh + 24);
        put16(b + symoff + 24 + 6, 500);
        char *names = NULL;
        size_t nl = 0, n = 0;
        cr_assert_eq(vyre_cubin_kernels(b, len, &names, &nl, &n, NULL), 0);
        cr_assert_eq(n, 1);
        free(names);
    }
#undef RESET
    {
        /* Found by fuzzing: the only marked entry sits in a section not
         * named after it. It is no kernel, and the unmarked functions are
         * listed (not an empty list with a buffer). */
        const char *k1[] = {"add_one"}, *f2[] = {"h1", "h2"};
        size_t l2;
        unsigned char *c2 = cubin_of(k1, 1, f2, 2, 1, &l2);
        uint64_t so = get64(c2 + 40);
        put32(c2 + so + 64 * 4, 1 + sizeof ".shstrtab"); /* .text.add_one -> ".strtab" */
        char *names = NULL, buf[64];
        size_t nl = 0, n = 0;
        cr_assert_eq(vyre_cubin_kernels(c2, l2, &names, &nl, &n, NULL), 0);
        cr_assert_eq(n, 2);
        joined(names, nl, buf, sizeof buf);
        cr_assert_str_eq(buf, "h1,h2");
        free(names);
        /* With no function at all left, the list is empty and NULL. */
        const char *none[] = {"solo"};
        free(c2);
        c2 = cubin_of(none, 1, NULL, 0, 1, &l2);
        so = get64(c2 + 40);
        put32(c2 + so + 64 * 4, 1 + sizeof ".shstrtab");
        names = (char *)1;
        cr_assert_eq(vyre_cubin_kernels(c2, l2, &names, &nl, &n, NULL), 0);
        cr_assert_eq(n, 0);
        cr_assert_null(names);
        free(c2);
    }
    /* Random bytes after a valid ELF identification: never a crash. */
    srand(12);
    for (int round = 0; round < 2000; round++) {
        memcpy(b, good, len);
        for (int j = 0; j < 8; j++)
            b[16 + (size_t)rand() % (len - 16)] = (unsigned char)rand();
        char *names = NULL;
        size_t nl = 0, n = 0;
        int rc = vyre_cubin_kernels(b, len, &names, &nl, &n, NULL);
        cr_assert(rc == 0 || rc == VYRE_EINVAL);
        if (rc == 0)
            for (size_t o = 0; o < nl; o += strlen(names + o) + 1)
                cr_assert_lt(o + strlen(names + o), nl);
        free(names);
    }
    free(b);
    free(good);
}

/* ---- PTX .target ----------------------------------------------------------- */

static const char *target_of(const char *ptx, char *buf, size_t size)
{
    int rc = vyre_ptx_target_arch(ptx, strlen(ptx), buf, size);
    return rc == 0 ? buf : rc == VYRE_ENOENT ? "(none)" : "(error)";
}

Test(cubin, ptx_target_is_read_robustly)
{
    char a[VYRE_BLOB_ARCH_MAX];
    cr_assert_str_eq(target_of(".version 8.7\n.target sm_90a\n.address_size 64\n", a, sizeof a),
                     "sm_90a");
    cr_assert_str_eq(target_of("//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 8.4\n"
                               ".target sm_80, texmode_independent\n",
                               a, sizeof a),
                     "sm_80");
    cr_assert_str_eq(target_of(".version 8.0\n\t.target\tsm_100f // family\n", a, sizeof a),
                     "sm_100f");
    cr_assert_str_eq(target_of(".version 8.0\n.target debug, sm_75\n", a, sizeof a), "sm_75");
    /* Comments are not directives. */
    cr_assert_str_eq(target_of("// .target sm_52\n/* .target sm_60\n .target sm_61 */\n"
                               ".target sm_86\n",
                               a, sizeof a),
                     "sm_86");
    cr_assert_str_eq(target_of("// .target sm_90\n.version 8.0\n", a, sizeof a), "(none)");
    cr_assert_str_eq(target_of(".version 8.0\n.target compute_90\n", a, sizeof a), "(none)");
    cr_assert_str_eq(target_of(".version 8.0\n.targets sm_90\n", a, sizeof a), "(none)");
    cr_assert_str_eq(target_of("x.target sm_90\n", a, sizeof a), "(none)");
    cr_assert_str_eq(target_of(".target sm_9000000000000000000000\n", a, sizeof a), "(none)");
    cr_assert_str_eq(target_of("/* unterminated .target sm_90", a, sizeof a), "(none)");
    cr_assert_str_eq(target_of(".target", a, sizeof a), "(none)");
    cr_assert_str_eq(target_of("", a, sizeof a), "(none)");
    char small[4];
    cr_assert_eq(vyre_ptx_target_arch(".target sm_90a\n", 15, small, sizeof small), VYRE_EINVAL);
    /* NUL bytes in the input are data, not an end. */
    static const char nul[] = ".version 8.0\n\0\n.target sm_89\n";
    cr_assert_eq(vyre_ptx_target_arch(nul, sizeof nul - 1, a, sizeof a), 0);
    cr_assert_str_eq(a, "sm_89");
}

/* ---- the blob's kernel table and source name ------------------------------------ */

static vyre_cache *open_cache(const char *name)
{
    char root[400];
    snprintf(root, sizeof root, "%s/%s", g_tmp, name);
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_open(root, NULL, &c, &e), 0, "%s", e.message);
    return c;
}

static vyre_blob_header header_for(uint8_t tag)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.format_version = VYRE_BLOB_FORMAT_VERSION;
    h.key_version = VYRE_KEY_VERSION;
    memset(h.key.bytes, tag, sizeof h.key.bytes);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "%s", "sm_90a");
    snprintf(h.toolchain, sizeof h.toolchain, "%s", "nvjitlink-13.0");
    h.compile_ns = 5;
    return h;
}

static const char k_table[] = "add_one\0twice\0thrice"; /* 3 names, 21 bytes with the last NUL */

Test(cubin, blob_kernel_table_and_source_round_trip)
{
    vyre_cache *c = open_cache("c");
    vyre_blob_header h = header_for(0xab);
    snprintf(h.source, sizeof h.source, "%s", "mod_a.ptx");
    h.kernels = k_table;
    h.kernels_size = sizeof k_table;
    h.n_kernels = 3;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_put(c, &h, "payload", 7, &e), 0, "%s", e.message);
    cr_assert_neq(h.kernels_xxh64, 0);

    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &h.key, &b, NULL, &e), 0, "%s", e.message);
    cr_assert_str_eq(b->header.source, "mod_a.ptx");
    cr_assert_eq(b->header.n_kernels, 3);
    cr_assert_eq(b->header.kernels_size, sizeof k_table);
    cr_assert_eq(memcmp(b->header.kernels, k_table, sizeof k_table), 0);
    cr_assert_eq(b->size, 7);
    cr_assert_eq(memcmp(b->payload, "payload", 7), 0);
    vyre_blob_free(b);

    /* The file: header, payload, table; the header re-encodes as read. */
    char path[600];
    vyre_blob_path(vyre_cache_root(c), &h.key, path, sizeof path, NULL);
    size_t len = 0;
    char *img = tu_read_file(path, &len);
    cr_assert_eq(len, VYRE_BLOB_HEADER_SIZE + 7 + sizeof k_table);
    cr_assert_eq(memcmp(img + VYRE_BLOB_HEADER_SIZE + 7, k_table, sizeof k_table), 0);
    vyre_blob_header d;
    cr_assert_eq(vyre__blob_header_decode((uint8_t *)img, len, &d, NULL, NULL), 0);
    uint8_t again[VYRE_BLOB_HEADER_SIZE];
    cr_assert_eq(vyre_blob_header_encode(&d, again, NULL), 0);
    cr_assert_eq(memcmp(again, img, VYRE_BLOB_HEADER_SIZE), 0);

    /* Listed with its kernels and source; the full table through the API. */
    vyre_cache_entry ent;
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&h.key, hex);
    hex[8] = '\0';
    cr_assert_eq(vyre_cache_find_prefix(c, hex, &ent, &e), 0, "%s", e.message);
    cr_assert_str_eq(ent.kernels, "add_one,twice,thrice");
    cr_assert_str_eq(ent.source, "mod_a.ptx");
    cr_assert_eq(ent.n_kernels, 3);
    cr_assert_eq(ent.key_version, VYRE_KEY_VERSION);
    char *names = NULL;
    cr_assert_eq(vyre_cache_blob_kernels(c, &d, &names, &e), 0, "%s", e.message);
    cr_assert_eq(memcmp(names, k_table, sizeof k_table), 0);
    free(names);

    /* A damaged table is a payload-checksum reject (quarantined, a miss). */
    img[len - 3] ^= 1;
    tu_write_file(path, img, len);
    vyre_blob_reject why = VYRE_REJECT_NONE;
    cr_assert_eq(vyre_cache_get(c, &h.key, &b, &why, NULL), VYRE_ENOENT);
    cr_assert_eq(why, VYRE_REJECT_PAYLOAD_SUM);
    free(img);
    vyre_cache_close(c);
}

Test(cubin, malformed_kernel_tables_are_refused_on_store_and_on_load)
{
    vyre_cache *c = open_cache("c");
    static const char *const bad[] = {"a\0\0b", "a\0b", "\0a", "a"};
    static const size_t sizes[] = {5, 3, 3, 1};
    static const uint32_t counts[] = {2, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        vyre_blob_header h = header_for((uint8_t)(0x10 + i));
        h.kernels = bad[i];
        h.kernels_size = (uint32_t)sizes[i];
        h.n_kernels = counts[i];
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre_cache_put(c, &h, "p", 1, &e), VYRE_EINVAL, "table %d", i);
    }
    /* Header fields that cannot describe a table. */
    vyre_blob_header h = header_for(0x20);
    h.kernels_size = 4;
    h.n_kernels = 3;
    uint8_t buf[VYRE_BLOB_HEADER_SIZE];
    cr_assert_eq(vyre_blob_header_encode(&h, buf, NULL), VYRE_EINVAL, "3 names in 4 bytes");
    h.kernels_size = VYRE_BLOB_KERNELS_MAX + 2;
    h.n_kernels = 1;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, NULL), VYRE_EINVAL, "table too large");
    h.kernels_size = 0;
    h.n_kernels = 0;
    h.kernels_xxh64 = 1;
    cr_assert_eq(vyre_blob_header_encode(&h, buf, NULL), VYRE_EINVAL, "checksum of nothing");
    h.kernels_xxh64 = 0;
    memset(h.source, 'x', sizeof h.source);
    cr_assert_eq(vyre_blob_header_encode(&h, buf, NULL), VYRE_EINVAL, "unterminated source");
    memset(h.source, 0, sizeof h.source);
    cr_assert_eq(vyre_blob_header_encode(&h, buf, NULL), 0);
    /* Garbage after the source's NUL is not canonical: bad-field. */
    buf[184 + 3] = 'x';
    vyre_blob_header d;
    vyre_blob_reject why;
    cr_assert_eq(vyre__blob_header_decode(buf, sizeof buf, &d, &why, NULL), VYRE_ECORRUPT);
    cr_assert_eq(why, VYRE_REJECT_HEADER_SUM, "the checksum catches it first");
    vyre_cache_close(c);
}

/* Writes a key-version-1 blob (as a build before key v2 did) into c. */
static void write_v1_blob(vyre_cache *c, uint8_t tag, vyre_key *key)
{
    vyre_blob_header h = header_for(tag);
    h.key_version = 1;
    h.stored_size = h.raw_size = 3;
    h.created_unix_ns = 1;
    vyre__blob_payload_sum("abc", 3, h.payload_xxh128);
    uint8_t buf[VYRE_BLOB_HEADER_SIZE + 3];
    cr_assert_eq(vyre_blob_header_encode(&h, buf, NULL), 0);
    memcpy(buf + VYRE_BLOB_HEADER_SIZE, "abc", 3);
    char path[600], dir[600];
    vyre_blob_path(vyre_cache_root(c), &h.key, path, sizeof path, NULL);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdir(dir, 0700);
    tu_write_file(path, buf, sizeof buf);
    *key = h.key;
}

Test(cubin, key_version_1_blobs_are_stale_not_corrupt)
{
    vyre_cache *c = open_cache("c");
    vyre_key k1;
    write_v1_blob(c, 0x51, &k1);
    vyre_blob_header v2 = header_for(0x52);
    cr_assert_eq(vyre_cache_put(c, &v2, "new", 3, NULL), 0);

    /* Decodes: intact, older. */
    vyre_blob_header h;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    cr_assert_eq(vyre_cache_check_blob(c, &k1, &h, NULL, &why, NULL, 0, NULL), 0);
    cr_assert_eq(h.key_version, 1);
    cr_assert(VYRE_BLOB_KEY_STALE(h.key_version));

    /* A load is a plain miss that leaves it in place (never quarantined). */
    vyre_blob *b = NULL;
    cr_assert_eq(vyre_cache_get(c, &k1, &b, &why, NULL), VYRE_ENOENT);
    cr_assert_eq(why, VYRE_REJECT_STALE);
    cr_assert_eq(vyre_cache_check_blob(c, &k1, &h, NULL, &why, NULL, 0, NULL), 0, "still there");

    /* verify counts it as stale, and is clean; the repair indexes it. */
    vyre_cache_verify_result vr;
    cr_assert_eq(vyre_cache_verify(c, 1, &vr, NULL, NULL, NULL, NULL, NULL), 0);
    cr_assert_eq(vr.stale, 1);
    cr_assert_eq(vr.bad_blobs, 0);
    cr_assert_eq(vr.quarantined, 0);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c, &st, NULL), 0);
    cr_assert_eq(st.entries, 2);
    cr_assert_eq(st.stale, 1);
    /* Sizes are on disk (st_blocks), as du counts: the stale blob's file. */
    char hex[VYRE_KEY_HEX_LEN + 1], path[600];
    vyre_key_to_hex(&k1, hex);
    snprintf(path, sizeof path, "%s/c/blobs/%.2s/%s.vblob", g_tmp, hex, hex);
    cr_assert_eq(st.stale_bytes, tu_disk_bytes(path), "%s", path);
    cr_assert_geq(st.stale_bytes, VYRE_BLOB_HEADER_SIZE + 3);

    /* prune --stale removes it and nothing else. */
    vyre_cache_prune_opts po;
    vyre_cache_prune_opts_init(&po);
    po.stale = 1;
    vyre_cache_prune_result pr;
    cr_assert_eq(vyre_cache_prune(c, &po, &pr, NULL, NULL, NULL), 0);
    cr_assert_eq(pr.removed, 1);
    cr_assert_eq(pr.kept, 1);
    cr_assert_eq(vyre_cache_check_blob(c, &k1, &h, NULL, &why, NULL, 0, NULL), VYRE_ENOENT);
    cr_assert_eq(vyre_cache_get(c, &v2.key, &b, NULL, NULL), 0);
    vyre_blob_free(b);

    /* Other key versions are still rejected as version problems. */
    vyre_blob_header h3 = header_for(0x53);
    h3.key_version = VYRE_KEY_VERSION + 1;
    uint8_t buf[VYRE_BLOB_HEADER_SIZE];
    cr_assert_eq(vyre_blob_header_encode(&h3, buf, NULL), 0);
    cr_assert_eq(vyre__blob_header_decode(buf, sizeof buf, &h, &why, NULL), VYRE_EVERSION);
    cr_assert_eq(why, VYRE_REJECT_VERSION);
    vyre_cache_close(c);
}

/* ---- one module, one blob, every kernel ---------------------------------------- */

static const char k_ptx[] = ".version 8.7\n"
                            ".target sm_90a\n"
                            ".address_size 64\n"
                            ".visible .entry add_one(.param .u64 p)\n{\n ret;\n}\n"
                            ".visible .entry twice(.param .u64 p)\n{\n ret;\n}\n";

Test(cubin, every_kernel_of_a_module_hits_the_one_blob)
{
    setenv("VYRE_NVJITLINK_LIBRARY", FAKEJITLINK_LIB, 1);
    char tc[VYRE_BLOB_TOOLCHAIN_MAX];
    vyre_error e;
    vyre_error_clear(&e);
    if (vyre_compile_toolchain(VYRE_SOURCE_PTX, tc, sizeof tc, &e))
        cr_skip_test("nvJitLink cannot be loaded: %s", e.message);
    vyre_cache *c = open_cache("c");
    vyre_compile_request req = {VYRE_SOURCE_PTX, k_ptx, sizeof k_ptx - 1, "sm_90a", NULL, NULL, 0};
    vyre_blob *b = NULL;
    int hit = -1;
    cr_assert_eq(vyre_compile_through_cache(c, &req, "/some/dir/mod.ptx", NULL, 0, &b, &hit, &e), 0,
                 "%s", e.message);
    cr_assert_eq(hit, 0);
    cr_assert_str_eq(b->header.source, "mod.ptx");
    cr_assert_eq(b->header.n_kernels, 2);
    vyre_blob_free(b);

    /* Each entry: the same key, a hit. */
    const char *entries[] = {"add_one", "twice"};
    for (int i = 0; i < 2; i++) {
        vyre_compile_request r = req;
        r.entry = entries[i];
        vyre_key k1, k2;
        cr_assert_eq(vyre_compile_key(&req, &k1, NULL), 0);
        cr_assert_eq(vyre_compile_key(&r, &k2, NULL), 0);
        cr_assert_eq(memcmp(&k1, &k2, sizeof k1), 0, "the entry is not in the key");
        cr_assert_eq(vyre_compile_through_cache(c, &r, NULL, NULL, 0, &b, &hit, &e), 0, "%s",
                     e.message);
        cr_assert_eq(hit, 1, "%s", entries[i]);
        vyre_blob_free(b);
    }
    /* An entry the module lacks: VYRE_ENOENT naming what it has. */
    vyre_compile_request r = req;
    r.entry = "matmul";
    vyre_error_clear(&e);
    cr_assert_eq(vyre_compile_through_cache(c, &r, NULL, NULL, 0, &b, &hit, &e), VYRE_ENOENT);
    cr_assert_null(b);
    cr_assert_str_eq(e.message, "the module has no kernel 'matmul'; it defines 2: add_one, twice");
    /* libcore names no front end: the command that lists a cache's kernels
     * is the front end's, reached through the remedy. */
    cr_assert_null(strstr(e.hint, "vyre-"), "%s", e.hint);
    cr_assert_eq(e.remedy, VYRE_REMEDY_CACHE_LIST);

    /* ... and a module compiled for that check is not stored. */
    vyre_cache *c2 = open_cache("c2");
    const char *need[] = {"twice", "nope"};
    vyre_error_clear(&e);
    cr_assert_eq(vyre_compile_through_cache(c2, &req, "m.ptx", need, 2, &b, &hit, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "no kernel 'nope'"), "%s", e.message);
    vyre_cache_stats st;
    cr_assert_eq(vyre_cache_stats_get(c2, &st, NULL), 0);
    cr_assert_eq(st.entries, 0);
    vyre_cache_close(c2);
    vyre_cache_close(c);
}
