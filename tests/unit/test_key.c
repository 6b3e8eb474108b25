/*
 * test_key.c - pipeline cache keys (vyre/key.h, libcore/src/cache/key.c).
 *
 * The key is the on-disk identity of every blob, so besides the properties
 * (every field counts, no two field splits collide, a version bump changes
 * everything) this suite pins the byte encoding: it re-encodes inputs here,
 * independently of key.c, hashes them with OpenSSL's one-shot SHA256() and
 * expects the same 32 bytes. The encoding (all integers little-endian):
 *
 *   u64 len("vyre.pipeline.key") || "vyre.pipeline.key"
 *   u64 key_version
 *   0x01 u64 len || backend            (NULL hashed as "")
 *   0x02 u64 len || toolchain
 *   0x03 u64 len || arch
 *   0x04 u64 8   || u64 features
 *   0x05 u64 n_options, then per option: u64 len || option
 *   0x06 u64 len || entry
 *   0x07 u64 4   || u32 source_kind
 *   0x08 u64 len || source bytes
 */
#include <criterion/criterion.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/key_internal.h"
#include "vyre/key.h"

/* --- helpers ------------------------------------------------------------ */

static uint64_t g_rng = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rnd(void)
{
    /* xorshift64*: deterministic, so a failure reproduces. */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * UINT64_C(0x2545f4914f6cdd1d);
}

static vyre_key key_of(const vyre_key_input *in)
{
    vyre_key k;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre__key_compute(in, &k, &e);
    cr_assert_eq(rc, 0, "vyre__key_compute: %s", e.message);
    return k;
}

static int key_eq(const vyre_key *a, const vyre_key *b)
{
    return memcmp(a->bytes, b->bytes, VYRE_KEY_BYTES) == 0;
}

static vyre_key_input base_input(void)
{
    static const char *const opts[] = {"--gpu-architecture=sm_90", "-lineinfo", "-O3"};
    static const char src[] = "extern \"C\" __global__ void k(float *x) { x[0] = 1; }";
    vyre_key_input in = {
        .backend = "cuda",
        .toolchain = "nvrtc-13.0;driver-13000",
        .arch = "sm_90",
        .features = UINT64_C(0x5),
        .options = opts,
        .n_options = 3,
        .entry = "k",
        .source_kind = VYRE_SOURCE_CUDA_C,
        .source = src,
        .source_len = sizeof src - 1,
    };
    return in;
}

/* An independent encoder for the known-answer tests. */
typedef struct enc {
    unsigned char *p;
    size_t len, cap;
} enc;

static void enc_raw(enc *e, const void *p, size_t n)
{
    if (e->len + n > e->cap) {
        e->cap = (e->len + n) * 2 + 64;
        e->p = realloc(e->p, e->cap);
        cr_assert_not_null(e->p);
    }
    if (n)
        memcpy(e->p + e->len, p, n);
    e->len += n;
}

static void enc_le(enc *e, uint64_t v, int width)
{
    unsigned char b[8];
    for (int i = 0; i < width; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    enc_raw(e, b, (size_t)width);
}

static void enc_lp(enc *e, const void *p, size_t n)
{
    enc_le(e, n, 8);
    enc_raw(e, p, n);
}

static void enc_tagged(enc *e, unsigned char tag, const void *p, size_t n)
{
    enc_raw(e, &tag, 1);
    enc_lp(e, p, n);
}

static void enc_str(enc *e, unsigned char tag, const char *s)
{
    enc_tagged(e, tag, s ? s : "", s ? strlen(s) : 0);
}

static vyre_key reference_key(const vyre_key_input *in, uint32_t version)
{
    enc e = {0};
    enc_lp(&e, "vyre.pipeline.key", 17);
    enc_le(&e, version, 8);
    enc_str(&e, 1, in->backend);
    enc_str(&e, 2, in->toolchain);
    enc_str(&e, 3, in->arch);
    unsigned char f[8];
    for (int i = 0; i < 8; i++)
        f[i] = (unsigned char)(in->features >> (8 * i));
    enc_tagged(&e, 4, f, 8);
    unsigned char tag = 5;
    enc_raw(&e, &tag, 1);
    enc_le(&e, in->n_options, 8);
    for (size_t i = 0; i < in->n_options; i++)
        enc_lp(&e, in->options[i], strlen(in->options[i]));
    enc_str(&e, 6, in->entry);
    unsigned char k[4];
    for (int i = 0; i < 4; i++)
        k[i] = (unsigned char)((uint32_t)in->source_kind >> (8 * i));
    enc_tagged(&e, 7, k, 4);
    enc_tagged(&e, 8, in->source, in->source_len);
    vyre_key out;
    cr_assert_not_null(SHA256(e.p, e.len, out.bytes));
    free(e.p);
    return out;
}

/* Generated inputs: strings of any non-NUL byte, sources with NULs. */
#define GEN_STR  24
#define GEN_OPTS 4
#define GEN_SRC  80

typedef struct gen_input {
    char backend[GEN_STR], toolchain[GEN_STR], arch[GEN_STR], entry[GEN_STR];
    char opt[GEN_OPTS][GEN_STR];
    const char *opt_ptr[GEN_OPTS];
    unsigned char source[GEN_SRC];
    vyre_key_input in;
} gen_input;

static void gen_str(char *s, int null_ok, const char **out)
{
    size_t n = (size_t)(rnd() % (GEN_STR - 1));
    for (size_t i = 0; i < n; i++)
        s[i] = (char)(1 + rnd() % 255);
    s[n] = '\0';
    *out = null_ok && rnd() % 8 == 0 ? NULL : s;
}

static void gen(gen_input *g)
{
    memset(g, 0, sizeof *g);
    gen_str(g->backend, 1, &g->in.backend);
    gen_str(g->toolchain, 1, &g->in.toolchain);
    gen_str(g->arch, 1, &g->in.arch);
    gen_str(g->entry, 1, &g->in.entry);
    g->in.n_options = (size_t)(rnd() % (GEN_OPTS + 1));
    for (size_t i = 0; i < g->in.n_options; i++)
        gen_str(g->opt[i], 0, &g->opt_ptr[i]);
    g->in.options = g->in.n_options ? g->opt_ptr : NULL;
    g->in.features = rnd();
    g->in.source_kind = (vyre_source_kind)(1 + rnd() % 3);
    g->in.source_len = (size_t)(rnd() % GEN_SRC);
    for (size_t i = 0; i < g->in.source_len; i++)
        g->source[i] = (unsigned char)(rnd() % 4 == 0 ? 0 : rnd()); /* plenty of NULs */
    g->in.source = g->in.source_len || rnd() % 2 ? g->source : NULL;
}

#define NGEN 600

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(vyre_key));
}

/* --- determinism and the known answer ----------------------------------- */

/* SHA-256 of the encoding of base_input() and of an all-zero input, at
 * key version 2 (version 1: bfc3b0af...dc23ee and 86d7b796...aae4a). */
#define KNOWN_ANSWER_HEX       "b99c9def2127bfd6fde7b24a3cd008aed67477b13344ba4b53580b239e17f5c6"
#define KNOWN_ANSWER_EMPTY_HEX "158255a63737bc0f2d124a8db652e9ff334d9fc1368d3090d292f52ae97ee2ab"

Test(key, deterministic_and_by_content)
{
    vyre_key_input in = base_input();
    vyre_key a = key_of(&in), b = key_of(&in);
    cr_assert(key_eq(&a, &b));
    /* Same content in other buffers: same key (content, not pointers). */
    char backend[] = "cuda", toolchain[] = "nvrtc-13.0;driver-13000", arch[] = "sm_90",
         entry[] = "k";
    char o0[] = "--gpu-architecture=sm_90", o1[] = "-lineinfo", o2[] = "-O3";
    const char *opts[] = {o0, o1, o2};
    char *src = malloc(in.source_len);
    cr_assert_not_null(src);
    memcpy(src, in.source, in.source_len);
    vyre_key_input copy = in;
    copy.backend = backend;
    copy.toolchain = toolchain;
    copy.arch = arch;
    copy.entry = entry;
    copy.options = opts;
    copy.source = src;
    vyre_key c = key_of(&copy);
    cr_assert(key_eq(&a, &c));
    free(src);
}

Test(key, known_answer_literal)
{
    /* Pinned once from an independent implementation (Python hashlib over
     * the encoding in this file's header comment). If this changes, every
     * cached blob changes identity: bump VYRE_KEY_VERSION instead. */
    vyre_key_input in = base_input();
    vyre_key k = key_of(&in);
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&k, hex);
    cr_assert_str_eq(hex, KNOWN_ANSWER_HEX);

    vyre_key_input empty = {0};
    k = key_of(&empty);
    vyre_key_to_hex(&k, hex);
    cr_assert_str_eq(hex, KNOWN_ANSWER_EMPTY_HEX);
}

Test(key, matches_independent_encoding)
{
    vyre_key_input in = base_input();
    vyre_key got = key_of(&in), want = reference_key(&in, VYRE_KEY_VERSION);
    cr_assert(key_eq(&got, &want), "key.c and the documented encoding disagree");
    vyre_key_input empty = {0};
    got = key_of(&empty);
    want = reference_key(&empty, VYRE_KEY_VERSION);
    cr_assert(key_eq(&got, &want));
    for (int i = 0; i < NGEN; i++) {
        gen_input g;
        gen(&g);
        got = key_of(&g.in);
        want = reference_key(&g.in, VYRE_KEY_VERSION);
        cr_assert(key_eq(&got, &want), "generated input %d", i);
        /* Any version, through the internal entry point. */
        uint32_t v = (uint32_t)rnd();
        vyre_error e;
        cr_assert_eq(vyre__key_compute_version(&g.in, v, &got, &e), 0);
        want = reference_key(&g.in, v);
        cr_assert(key_eq(&got, &want), "generated input %d, version %u", i, v);
    }
}

/* --- every field counts ------------------------------------------------- */

Test(key, every_field_changes_the_key)
{
    enum { MAXV = 128 };
    vyre_key keys[MAXV];
    const char *what[MAXV];
    size_t n = 0;
    vyre_key_input base = base_input();
    keys[n] = key_of(&base);
    what[n++] = "base";

#define VARIANT(label, stmt)                                                                       \
    do {                                                                                           \
        vyre_key_input in = base_input();                                                          \
        stmt;                                                                                      \
        cr_assert_lt(n, MAXV);                                                                     \
        keys[n] = key_of(&in);                                                                     \
        what[n++] = label;                                                                         \
    } while (0)

    static const char *const opts_changed[] = {"--gpu-architecture=sm_90", "-lineinfo", "-O2"};
    static const char *const opts_longer[] = {"--gpu-architecture=sm_90", "-lineinfo", "-O3", "-G"};
    static const char src2[] = "extern \"C\" __global__ void k(float *x) { x[0] = 2; }";
    VARIANT("backend", in.backend = "cudb");
    VARIANT("backend empty", in.backend = "");
    VARIANT("toolchain", in.toolchain = "nvrtc-13.0;driver-13010");
    VARIANT("arch", in.arch = "sm_90a");
    VARIANT("arch other", in.arch = "sm_80");
    VARIANT("features 0", in.features = 0);
    VARIANT("options content", in.options = opts_changed);
    VARIANT("options fewer", in.n_options = 2);
    VARIANT("options none", in.n_options = 0);
    VARIANT("options more", (in.options = opts_longer, in.n_options = 4));
    VARIANT("entry", in.entry = "k2");
    VARIANT("entry empty", in.entry = NULL);
    VARIANT("source kind ptx", in.source_kind = VYRE_SOURCE_PTX);
    VARIANT("source kind cubin", in.source_kind = VYRE_SOURCE_CUBIN);
    VARIANT("source kind 0x101", in.source_kind = (vyre_source_kind)0x101);
    VARIANT("source", in.source = src2);
    VARIANT("source shorter", in.source_len -= 1);
    VARIANT("source empty", in.source_len = 0);
    static const char *const feature_bit = "features bit";
    for (int bit = 0; bit < 64; bit++)
        VARIANT(feature_bit, in.features ^= UINT64_C(1) << bit);
#undef VARIANT

    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            cr_assert_not(key_eq(&keys[i], &keys[j]), "'%s' (%zu) and '%s' (%zu) collide", what[i],
                          i, what[j], j);
}

Test(key, option_order_matters)
{
    static const char *const ab[] = {"-O3", "-lineinfo"};
    static const char *const ba[] = {"-lineinfo", "-O3"};
    vyre_key_input in = base_input();
    in.options = ab;
    in.n_options = 2;
    vyre_key k1 = key_of(&in);
    in.options = ba;
    vyre_key k2 = key_of(&in);
    cr_assert_not(key_eq(&k1, &k2));
}

Test(key, source_with_embedded_nuls)
{
    static const unsigned char a[] = {'x', 0, 'y'};
    static const unsigned char b[] = {'x', 0, 'z'};
    static const unsigned char c[] = {'x', 0, 'y', 0};
    static const unsigned char zeros1[] = {0};
    static const unsigned char zeros2[] = {0, 0};
    vyre_key_input in = base_input();
    vyre_key k[6];
    in.source = a, in.source_len = sizeof a;
    k[0] = key_of(&in);
    in.source = b, in.source_len = sizeof b;
    k[1] = key_of(&in); /* differs after the NUL */
    in.source = c, in.source_len = sizeof c;
    k[2] = key_of(&in); /* a trailing NUL counts */
    in.source = a, in.source_len = 1;
    k[3] = key_of(&in); /* "x" alone: the length counts, not strlen */
    in.source = zeros1, in.source_len = 1;
    k[4] = key_of(&in);
    in.source = zeros2, in.source_len = 2;
    k[5] = key_of(&in);
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++)
            cr_assert_not(key_eq(&k[i], &k[j]), "sources %d and %d collide", i, j);
    /* The empty source: NULL and a non-NULL pointer with length 0 agree. */
    in.source = NULL, in.source_len = 0;
    vyre_key e1 = key_of(&in);
    in.source = a, in.source_len = 0;
    vyre_key e2 = key_of(&in);
    cr_assert(key_eq(&e1, &e2));
}

/* --- field boundaries never collide ------------------------------------- */

/* The variable-length slots in encoding order: backend, toolchain, arch,
 * option[0], option[1], entry, source. */
enum { S_BACKEND, S_TOOLCHAIN, S_ARCH, S_OPT0, S_OPT1, S_ENTRY, S_SOURCE, NSLOTS };

typedef struct slots {
    const char *s[NSLOTS];
    size_t n_options;
} slots;

static vyre_key key_of_slots(const slots *sl)
{
    const char *opts[2] = {sl->s[S_OPT0], sl->s[S_OPT1]};
    vyre_key_input in = {
        .backend = sl->s[S_BACKEND],
        .toolchain = sl->s[S_TOOLCHAIN],
        .arch = sl->s[S_ARCH],
        .features = 7,
        .options = opts,
        .n_options = sl->n_options,
        .entry = sl->s[S_ENTRY],
        .source_kind = VYRE_SOURCE_PTX,
        .source = sl->s[S_SOURCE],
        .source_len = strlen(sl->s[S_SOURCE]),
    };
    return key_of(&in);
}

/* Splits "ab"+"c" / "a"+"bc" (and every other split of "abcd") between two
 * slots that are adjacent in the encoding; every split must give its own
 * key. */
static void check_boundary(int left, int right, size_t n_options)
{
    static const char whole[] = "abcd";
    vyre_key keys[5];
    for (size_t cut = 0; cut <= 4; cut++) {
        char l[8], r[8];
        memcpy(l, whole, cut);
        l[cut] = '\0';
        memcpy(r, whole + cut, 4 - cut + 1);
        slots sl = {{"cuda", "tc", "sm_90", "-O3", "-G", "main", "src"}, n_options};
        sl.s[left] = l;
        sl.s[right] = r;
        keys[cut] = key_of_slots(&sl);
        for (size_t j = 0; j < cut; j++)
            cr_assert_not(key_eq(&keys[j], &keys[cut]),
                          "slots %d/%d: split at %zu collides with split at %zu", left, right, j,
                          cut);
    }
}

Test(key, adjacent_fields_never_collide)
{
    check_boundary(S_BACKEND, S_TOOLCHAIN, 2);
    check_boundary(S_TOOLCHAIN, S_ARCH, 2);
    check_boundary(S_ARCH, S_OPT0, 2);  /* arch, then the options */
    check_boundary(S_OPT0, S_OPT1, 2);  /* inside the option list */
    check_boundary(S_OPT1, S_ENTRY, 2); /* the last option, then entry */
    check_boundary(S_ARCH, S_ENTRY, 0); /* no options: arch, then entry */
    check_boundary(S_ENTRY, S_SOURCE, 2);
    check_boundary(S_ENTRY, S_SOURCE, 0);
}

Test(key, ab_c_versus_a_bc_named_cases)
{
    slots x = {{"ab", "c", "sm_90", "", "", "e", "s"}, 0};
    slots y = {{"a", "bc", "sm_90", "", "", "e", "s"}, 0};
    vyre_key kx = key_of_slots(&x), ky = key_of_slots(&y);
    cr_assert_not(key_eq(&kx, &ky), "backend/toolchain");

    static const char *const o_ab_c[] = {"ab", "c"};
    static const char *const o_a_bc[] = {"a", "bc"};
    static const char *const o_a[] = {"a"};
    static const char *const o_a_empty[] = {"a", ""};
    static const char *const o_empty[] = {""};
    static const char *const o_empty2[] = {"", ""};
    static const char *const o_abc[] = {"abc"};
    struct {
        const char *const *o;
        size_t n;
    } lists[] = {{o_ab_c, 2},  {o_a_bc, 2}, {o_a, 1},      {o_a_empty, 2},
                 {o_empty, 1}, {NULL, 0},   {o_empty2, 2}, {o_abc, 1}};
    enum { NL = sizeof lists / sizeof lists[0] };
    vyre_key k[NL];
    for (size_t i = 0; i < NL; i++) {
        vyre_key_input in = base_input();
        in.options = lists[i].o;
        in.n_options = lists[i].n;
        k[i] = key_of(&in);
        for (size_t j = 0; j < i; j++)
            cr_assert_not(key_eq(&k[i], &k[j]), "option lists %zu and %zu collide", j, i);
    }

    /* An option moving into the entry: {"a"} + "" versus {} + "a". */
    vyre_key_input p = base_input(), q = base_input();
    p.options = o_a, p.n_options = 1, p.entry = "";
    q.options = NULL, q.n_options = 0, q.entry = "a";
    vyre_key kp = key_of(&p), kq = key_of(&q);
    cr_assert_not(key_eq(&kp, &kq));
}

Test(key, null_string_is_the_empty_string)
{
    /* Documented in key.h: "NULL is hashed as the empty string". */
    vyre_key_input a = base_input(), b = base_input();
    a.backend = NULL, b.backend = "";
    vyre_key ka = key_of(&a), kb = key_of(&b);
    cr_assert(key_eq(&ka, &kb), "backend");
    a = base_input(), b = base_input();
    a.toolchain = NULL, b.toolchain = "";
    ka = key_of(&a), kb = key_of(&b);
    cr_assert(key_eq(&ka, &kb), "toolchain");
    a = base_input(), b = base_input();
    a.arch = NULL, b.arch = "";
    ka = key_of(&a), kb = key_of(&b);
    cr_assert(key_eq(&ka, &kb), "arch");
    a = base_input(), b = base_input();
    a.entry = NULL, b.entry = "";
    ka = key_of(&a), kb = key_of(&b);
    cr_assert(key_eq(&ka, &kb), "entry");
    /* No options: a NULL list and a non-NULL list with n_options 0 agree. */
    a = base_input(), b = base_input();
    a.options = NULL, a.n_options = 0;
    b.n_options = 0;
    ka = key_of(&a), kb = key_of(&b);
    cr_assert(key_eq(&ka, &kb), "options");
    /* ...but NULL is not "something": "" differs from "x". */
    b = base_input();
    b.backend = "x";
    a = base_input();
    a.backend = NULL;
    ka = key_of(&a), kb = key_of(&b);
    cr_assert_not(key_eq(&ka, &kb));
}

/* --- version bump, distinctness ----------------------------------------- */

Test(key, version_bump_changes_every_key)
{
    static const uint32_t versions[] = {0, VYRE_KEY_VERSION, VYRE_KEY_VERSION + 1, 256, UINT32_MAX};
    enum { NV = sizeof versions / sizeof versions[0] };
    for (int i = 0; i < NGEN; i++) {
        gen_input g;
        gen(&g);
        vyre_key k[NV];
        for (int v = 0; v < NV; v++) {
            vyre_error e;
            vyre_error_clear(&e);
            cr_assert_eq(vyre__key_compute_version(&g.in, versions[v], &k[v], &e), 0, "%s",
                         e.message);
            for (int w = 0; w < v; w++)
                cr_assert_not(key_eq(&k[v], &k[w]), "input %d: versions %u and %u collide", i,
                              versions[w], versions[v]);
        }
        /* The public entry point is the current version. */
        vyre_key cur = key_of(&g.in);
        cr_assert(key_eq(&cur, &k[1]), "input %d", i);
    }
}

Test(key, generated_inputs_give_distinct_keys)
{
    vyre_key *keys = malloc(NGEN * sizeof *keys);
    cr_assert_not_null(keys);
    /* Distinct inputs: make each one unique through its features. */
    for (int i = 0; i < NGEN; i++) {
        gen_input g;
        gen(&g);
        g.in.features = (uint64_t)i;
        keys[i] = key_of(&g.in);
    }
    qsort(keys, NGEN, sizeof *keys, cmp_key);
    for (int i = 1; i < NGEN; i++)
        cr_assert_not(key_eq(&keys[i - 1], &keys[i]), "two generated inputs collide");
    free(keys);
}

/* --- hex ---------------------------------------------------------------- */

Test(key, hex_round_trip_lowercase)
{
    for (int i = 0; i < 200; i++) {
        vyre_key k, back;
        for (int b = 0; b < VYRE_KEY_BYTES; b++)
            k.bytes[b] = (uint8_t)rnd();
        if (i == 0)
            memset(k.bytes, 0, sizeof k.bytes);
        if (i == 1)
            memset(k.bytes, 0xff, sizeof k.bytes);
        char hex[VYRE_KEY_HEX_LEN + 2];
        memset(hex, 'Z', sizeof hex);
        vyre_key_to_hex(&k, hex);
        cr_assert_eq(hex[VYRE_KEY_HEX_LEN], '\0');
        cr_assert_eq(hex[VYRE_KEY_HEX_LEN + 1], 'Z', "wrote past 65 bytes");
        cr_assert_eq(strlen(hex), VYRE_KEY_HEX_LEN);
        for (int c = 0; c < VYRE_KEY_HEX_LEN; c++)
            cr_assert((hex[c] >= '0' && hex[c] <= '9') || (hex[c] >= 'a' && hex[c] <= 'f'),
                      "'%c' at %d", hex[c], c);
        char byte[3];
        snprintf(byte, sizeof byte, "%02x", k.bytes[0]);
        cr_assert_eq(strncmp(hex, byte, 2), 0, "first byte first");
        memset(&back, 0xaa, sizeof back);
        cr_assert_eq(vyre_key_from_hex(hex, &back), 0);
        cr_assert(key_eq(&k, &back));
        /* Upper case parses to the same key. */
        for (int c = 0; c < VYRE_KEY_HEX_LEN; c++)
            if (hex[c] >= 'a')
                hex[c] = (char)(hex[c] - 'a' + 'A');
        memset(&back, 0x55, sizeof back);
        cr_assert_eq(vyre_key_from_hex(hex, &back), 0);
        cr_assert(key_eq(&k, &back));
    }
    vyre_key k;
    cr_assert_eq(vyre_key_from_hex("000102030405060708090a0b0c0d0e0f"
                                   "f0e1d2c3b4a5968778695a4b3c2d1e0F",
                                   &k),
                 0);
    cr_assert_eq(k.bytes[0], 0x00);
    cr_assert_eq(k.bytes[15], 0x0f);
    cr_assert_eq(k.bytes[16], 0xf0);
    cr_assert_eq(k.bytes[31], 0x0f);
}

Test(key, from_hex_rejects_bad_input)
{
    char good[VYRE_KEY_HEX_LEN + 1];
    memset(good, 'a', VYRE_KEY_HEX_LEN);
    good[VYRE_KEY_HEX_LEN] = '\0';
    vyre_key k;
    cr_assert_eq(vyre_key_from_hex(good, &k), 0);

    /* Every length but 64, read from exact-size heap buffers so a read past
     * the terminator shows under ASan. */
    for (size_t len = 0; len <= VYRE_KEY_HEX_LEN + 2; len++) {
        if (len == VYRE_KEY_HEX_LEN)
            continue;
        char *s = malloc(len + 1);
        cr_assert_not_null(s);
        memset(s, 'b', len);
        s[len] = '\0';
        cr_assert_eq(vyre_key_from_hex(s, &k), VYRE_EINVAL, "length %zu accepted", len);
        free(s);
    }
    /* A bad character at every position. */
    static const char bad[] = {'g', 'G', 'x', ' ', '-', ':', '/', '@', '`', '\x80', '\xff'};
    for (int pos = 0; pos < VYRE_KEY_HEX_LEN; pos++)
        for (size_t b = 0; b < sizeof bad; b++) {
            char s[VYRE_KEY_HEX_LEN + 1];
            memcpy(s, good, sizeof s);
            s[pos] = bad[b];
            cr_assert_eq(vyre_key_from_hex(s, &k), VYRE_EINVAL, "0x%02x at %d accepted",
                         (unsigned char)bad[b], pos);
        }
    cr_assert_eq(vyre_key_from_hex("0x"
                                   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                   &k),
                 VYRE_EINVAL);
    cr_assert_eq(vyre_key_from_hex(NULL, &k), VYRE_EINVAL);
    cr_assert_eq(vyre_key_from_hex(good, NULL), VYRE_EINVAL);
}

/* --- argument errors ---------------------------------------------------- */

Test(key, null_arguments_are_einval)
{
    vyre_key_input in = base_input();
    vyre_key k;
    vyre_error e;

    vyre_error_clear(&e);
    cr_assert_eq(vyre__key_compute(NULL, &k, &e), VYRE_EINVAL);
    cr_assert_eq(e.code, VYRE_EINVAL);
    cr_assert_neq(e.message[0], '\0');

    vyre_error_clear(&e);
    cr_assert_eq(vyre__key_compute(&in, NULL, &e), VYRE_EINVAL);
    cr_assert_neq(e.message[0], '\0');

    cr_assert_eq(vyre__key_compute(NULL, NULL, NULL), VYRE_EINVAL);

    vyre_key_input bad = in;
    bad.options = NULL; /* with n_options 3 */
    vyre_error_clear(&e);
    cr_assert_eq(vyre__key_compute(&bad, &k, &e), VYRE_EINVAL);
    cr_assert_neq(e.message[0], '\0');

    bad = in;
    bad.source = NULL; /* with a non-zero length */
    cr_assert_eq(vyre__key_compute(&bad, &k, NULL), VYRE_EINVAL);

    static const char *const with_null[] = {"-O3", NULL, "-G"};
    bad = in;
    bad.options = with_null;
    vyre_error_clear(&e);
    cr_assert_eq(vyre__key_compute(&bad, &k, &e), VYRE_EINVAL);
    cr_assert(strstr(e.message, "option 1"), "message: %s", e.message);

    cr_assert_eq(vyre__key_compute_version(NULL, 1, &k, NULL), VYRE_EINVAL);
}
