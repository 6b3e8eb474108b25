/*
 * test_nvtx.c - the NVTX range catalog and label rules (vyre/nvtx.h).
 *
 * Label cases are generated (deterministic PRNG) around every boundary:
 * lengths up to VYRE_NVTX_LABEL_MAX + 2, every byte value that is not in
 * [a-z0-9_.] at random positions, segment shapes. Labels are passed in
 * exact-size heap buffers (len + 1 bytes) so that any read past the
 * terminator shows under ASan.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/counters_internal.h"
#include "trace/nvtx_internal.h"
#include "vyre/counters.h"
#include "vyre/nvtx.h"

static uint64_t g_rng = UINT64_C(0x243f6a8885a308d3);

static uint64_t rnd(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * UINT64_C(0x2545f4914f6cdd1d);
}

static const char g_seg_chars[] = "abcdefghijklmnopqrstuvwxyz0123456789_";

static char seg_char(void)
{
    return g_seg_chars[rnd() % (sizeof g_seg_chars - 1)];
}

/* Copies len bytes into a fresh buffer of exactly len + 1 bytes. */
static char *exact(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    cr_assert_not_null(p);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

static int validate(const char *s, size_t len, vyre_error *e)
{
    char *p = exact(s, len);
    int rc = vyre_nvtx_label_validate(p, len, e);
    free(p);
    return rc;
}

static void expect_ok(const char *s)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = validate(s, strlen(s), &e);
    cr_assert_eq(rc, 0, "'%s' rejected: %s", s, e.message);
    cr_assert_eq(e.code, 0, "success must leave err untouched");
}

/* Rejected with VYRE_ELABEL, a message containing `why` and a hint. */
static void expect_bad_n(const char *s, size_t len, const char *why)
{
    vyre_error e;
    vyre_error_clear(&e);
    int rc = validate(s, len, &e);
    cr_assert_eq(rc, VYRE_ELABEL, "label '%.*s' (%zu bytes) gave %s", (int)len, s, len,
                 vyre_err_name(rc));
    cr_assert_eq(e.code, VYRE_ELABEL);
    cr_assert_neq(e.message[0], '\0');
    cr_assert_neq(e.hint[0], '\0');
    if (why)
        cr_assert(strstr(e.message, why), "'%.*s': message '%s' does not say '%s'", (int)len, s,
                  e.message, why);
}

static void expect_bad(const char *s, const char *why)
{
    expect_bad_n(s, strlen(s), why);
}

/* A valid label of exactly len bytes (len >= 6): "vyre" then random
 * segments ".xyz" that fill the rest, none empty. */
static void make_valid(char *buf, size_t len)
{
    cr_assert_geq(len, 6);
    memcpy(buf, "vyre", 4);
    size_t at = 4;
    while (at < len) {
        size_t rem = len - at; /* >= 2: a dot and at least one char */
        size_t seg = 1 + (size_t)(rnd() % (rem - 1));
        if (rem - 1 - seg == 1)
            seg++; /* never leave room for a lone dot */
        buf[at++] = '.';
        for (size_t i = 0; i < seg; i++)
            buf[at++] = seg_char();
    }
    cr_assert_eq(at, len);
    buf[len] = '\0';
}

/* --- the catalog -------------------------------------------------------- */

Test(nvtx, catalog_entries_are_valid_and_unique)
{
    size_t count = 0;
    const vyre_range_def *cat = vyre__nvtx_catalog(&count);
    cr_assert_not_null(cat);
    cr_assert_eq(count, VYRE_RANGE_COUNT);
    cr_assert_geq(count, 13);
    cr_assert_eq(vyre__nvtx_catalog(NULL), cat);
    for (size_t i = 0; i < count; i++) {
        const vyre_range_def *d = &cat[i];
        cr_assert_eq((size_t)d->id, i, "entry %zu has id %d", i, (int)d->id);
        cr_assert_not_null(d->name);
        cr_assert_eq(strncmp(d->name, "vyre.", 5), 0, "'%s' is not under vyre.", d->name);
        vyre_error e;
        vyre_error_clear(&e);
        cr_assert_eq(vyre_nvtx_label_validate(d->name, strlen(d->name), &e), 0, "'%s': %s", d->name,
                     e.message);
        cr_assert_not_null(d->label);
        cr_assert_str_eq(d->label, d->name);
        cr_assert_not_null(d->description);
        cr_assert_gt(strlen(d->description), 10, "'%s' has no real description", d->name);
        cr_assert_eq(vyre_nvtx_range(d->id), d);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(cat[j].name, d->name, "duplicate name '%s'", d->name);
    }
}

Test(nvtx, catalog_has_the_design_ranges)
{
    static const char *const required[] = {
        "vyre.cuda.codegen",           "vyre.cuda.pipeline.compile",
        "vyre.cuda.pipeline.dispatch", "vyre.cuda.pipeline.batch_dispatch",
        "vyre.cuda.host_dispatch",     "vyre.cuda.resident_dispatch",
    };
    size_t count = 0;
    const vyre_range_def *cat = vyre__nvtx_catalog(&count);
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
        int found = 0;
        for (size_t i = 0; i < count; i++)
            found |= strcmp(cat[i].name, required[r]) == 0;
        cr_assert(found, "'%s' is missing from the catalog", required[r]);
    }
    /* Ids are stable: telemetry pages index by them. */
    cr_assert_str_eq(vyre_nvtx_range(VYRE_RANGE_CODEGEN)->name, "vyre.cuda.codegen");
    cr_assert_str_eq(vyre_nvtx_range(VYRE_RANGE_PIPELINE_COMPILE)->name,
                     "vyre.cuda.pipeline.compile");
    cr_assert_eq(VYRE_RANGE_CODEGEN, 0);
}

Test(nvtx, range_out_of_bounds_is_null)
{
    cr_assert_null(vyre_nvtx_range(VYRE_RANGE_COUNT));
    cr_assert_null(vyre_nvtx_range((vyre_range_id)(VYRE_RANGE_COUNT + 1)));
    cr_assert_null(vyre_nvtx_range((vyre_range_id)-1));
    cr_assert_null(vyre_nvtx_range((vyre_range_id)1000000));
    cr_assert_not_null(vyre_nvtx_range((vyre_range_id)(VYRE_RANGE_COUNT - 1)));
}

/* --- label rules: fixed cases ------------------------------------------- */

Test(nvtx, good_labels)
{
    static const char *const ok[] = {
        "vyre.a",
        "vyre.0",
        "vyre._",
        "vyre.cuda",
        "vyre.a.b.c.d",
        "vyre.vyre",
        "vyre.x_1.y_2",
        "vyre.bench.point",
        "vyre.__",
        "vyre.0123456789",
        "vyre.abcdefghijklmnopqrstuvwxyz",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        expect_ok(ok[i]);
}

Test(nvtx, empty_label)
{
    expect_bad_n("", 0, "empty");
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_nvtx_label_validate(NULL, 0, &e), VYRE_ELABEL);
    cr_assert_eq(vyre_nvtx_label_validate(NULL, 9, NULL), VYRE_ELABEL);
    cr_assert_eq(vyre_nvtx_label_validate("vyre.abc", 0, NULL), VYRE_ELABEL);
}

Test(nvtx, unterminated_label)
{
    /* The first 8 bytes form a valid label, but byte 8 is not its NUL. */
    static const char s[] = "vyre.abcd";
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_nvtx_label_validate(s, 8, &e), VYRE_ELABEL);
    cr_assert(strstr(e.message, "NUL-terminated"), "message: %s", e.message);
    cr_assert_eq(vyre_nvtx_label_validate(s, 9, NULL), 0);
    /* Every proper prefix length of a longer valid label. */
    static const char longer[] = "vyre.cuda.pipeline.compile";
    for (size_t len = 6; len < sizeof longer - 1; len++)
        cr_assert_eq(vyre_nvtx_label_validate(longer, len, NULL), VYRE_ELABEL, "len %zu", len);
}

Test(nvtx, interior_nul)
{
    static const char s[] = "vyre.ab\0cd";
    expect_bad_n(s, sizeof s - 1, "interior NUL");
    static const char t[] = "vyre.\0";
    expect_bad_n(t, sizeof t - 1, "interior NUL");
    static const char u[] = "\0vyre.a";
    expect_bad_n(u, sizeof u - 1, "interior NUL");
    /* A NUL at every position of a valid label. */
    char buf[40];
    make_valid(buf, 30);
    for (size_t pos = 0; pos < 30; pos++) {
        char copy[40];
        memcpy(copy, buf, 31);
        copy[pos] = '\0';
        expect_bad_n(copy, 30, "interior NUL");
    }
}

Test(nvtx, too_long)
{
    char buf[VYRE_NVTX_LABEL_MAX + 64];
    make_valid(buf, VYRE_NVTX_LABEL_MAX);
    expect_ok(buf);
    make_valid(buf, VYRE_NVTX_LABEL_MAX + 1);
    expect_bad(buf, "longer than");
    make_valid(buf, VYRE_NVTX_LABEL_MAX + 50);
    expect_bad(buf, "longer than");
}

Test(nvtx, bad_segments)
{
    static const struct {
        const char *label;
        const char *why;
    } bad[] = {
        {"vyre", "nothing after"},
        {"vyre.", "empty segment"},
        {".vyre.a", "empty segment"},
        {"vyre..a", "empty segment"},
        {"vyre.a.", "empty segment"},
        {"vyre.a..b", "empty segment"},
        {"vyre.a.b..", "empty segment"},
        {".", "empty segment"},
        {"..", "empty segment"},
        {"vyr.a", "vyre."},
        {"vyre2.a", "vyre."},
        {"VYRE.a", NULL},
        {"xvyre.a", "vyre."},
        {"vyre_.a", "vyre."},
        {"vy.re.a", "vyre."},
        {"v.yre.a", "vyre."},
        {"cuda.vyre.a", "vyre."},
        {"vyr", NULL},
        {"vyre2", NULL},
        {"xvyre", NULL},
        {"a", NULL},
        {"vyre.A", "bad character"},
        {"vyre.a-b", "bad character"},
        {"vyre.a b", "bad character"},
        {"vyre/a", "bad character"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_bad(bad[i].label, bad[i].why);
}

/* --- label rules: generated cases --------------------------------------- */

Test(nvtx, generated_lengths_accepted_iff_within_max)
{
    char buf[VYRE_NVTX_LABEL_MAX + 8];
    /* Lengths 1..5 cannot hold "vyre.x": every prefix of a label fails. */
    static const char prefix[] = "vyre.x";
    for (size_t len = 1; len < 6; len++)
        expect_bad_n(prefix, len, NULL);
    size_t checked = 0;
    for (size_t len = 6; len <= VYRE_NVTX_LABEL_MAX + 2; len++)
        for (int rep = 0; rep < 40; rep++) {
            make_valid(buf, len);
            vyre_error e;
            vyre_error_clear(&e);
            int rc = validate(buf, len, &e);
            if (len <= VYRE_NVTX_LABEL_MAX)
                cr_assert_eq(rc, 0, "'%s' (%zu bytes) rejected: %s", buf, len, e.message);
            else
                cr_assert_eq(rc, VYRE_ELABEL, "%zu bytes accepted", len);
            checked++;
        }
    cr_assert_gt(checked, 4000);
}

static int allowed_byte(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

Test(nvtx, generated_bad_bytes_rejected)
{
    size_t checked = 0;
    char base[64], label[70];
    for (int c = 1; c <= 0xff; c++) {
        if (allowed_byte(c))
            continue;
        for (int rep = 0; rep < 16; rep++) {
            size_t len = 6 + (size_t)(rnd() % 50);
            make_valid(base, len);
            /* Insert at a random position 0..len. */
            size_t pos = (size_t)(rnd() % (len + 1));
            memcpy(label, base, pos);
            label[pos] = (char)c;
            memcpy(label + pos + 1, base + pos, len - pos + 1);
            expect_bad_n(label, len + 1, "bad character");
            /* Replace the byte at a random position after "vyre.". */
            size_t at = 5 + (size_t)(rnd() % (len - 5));
            memcpy(label, base, len + 1);
            label[at] = (char)c;
            vyre_error e;
            vyre_error_clear(&e);
            cr_assert_eq(validate(label, len, &e), VYRE_ELABEL, "byte 0x%02x at %zu accepted", c,
                         at);
            cr_assert(strstr(e.message, "bad character"), "0x%02x: %s", c, e.message);
            checked += 2;
        }
    }
    cr_assert_gt(checked, 5000);
}

Test(nvtx, generated_empty_segments_rejected)
{
    char base[64], label[70];
    for (int rep = 0; rep < 500; rep++) {
        size_t len = 6 + (size_t)(rnd() % 50);
        make_valid(base, len);
        /* Leading dot, trailing dot, and a doubled dot wherever one is. */
        label[0] = '.';
        memcpy(label + 1, base, len + 1);
        expect_bad_n(label, len + 1, NULL);
        memcpy(label, base, len);
        label[len] = '.';
        label[len + 1] = '\0';
        expect_bad_n(label, len + 1, "empty segment");
        for (size_t i = 4; i < len; i++) {
            if (base[i] != '.')
                continue;
            memcpy(label, base, i + 1);
            label[i + 1] = '.';
            memcpy(label + i + 2, base + i + 1, len - i);
            expect_bad_n(label, len + 1, "empty segment");
        }
    }
}

Test(nvtx, generated_wrong_first_segment_rejected)
{
    static const char *const firsts[] = {"vyr",   "vyre2", "VYRE", "xvyre", "Vyre", "vyree",
                                         "vyre_", "_vyre", "v",    "vy",    "yre",  "0vyre"};
    char base[64], label[80];
    for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++)
        for (int rep = 0; rep < 50; rep++) {
            size_t len = 6 + (size_t)(rnd() % 50);
            make_valid(base, len);
            int n = snprintf(label, sizeof label, "%s%s", firsts[f], base + 4);
            cr_assert(n > 0 && (size_t)n < sizeof label);
            expect_bad_n(label, (size_t)n, NULL);
        }
}

/* --- push/pop with no tool attached ------------------------------------- */

/* Range-histogram counts of every catalog range. */
static void range_counts(uint64_t out[VYRE_RANGE_COUNT])
{
    vyre_counters c;
    vyre_counters_snapshot(&c);
    for (int id = 0; id < VYRE_RANGE_COUNT; id++)
        out[id] = c.ranges[id].count;
}

Test(nvtx, pop_without_push_is_harmless)
{
    const char *inj = getenv("NVTX_INJECTION64_PATH");
    char *saved = inj ? strdup(inj) : NULL;
    unsetenv("NVTX_INJECTION64_PATH");
    uint64_t before[VYRE_RANGE_COUNT], after[VYRE_RANGE_COUNT];
    /* Nothing was pushed in this process yet: the domain does not exist.
     * (The first call reads VYRE_RANGE_TIMING; timing is forced on after.) */
    range_counts(before);
    for (int i = 0; i < 100; i++)
        vyre_nvtx_pop();
    vyre_range_timing_enable(1);
    range_counts(after);
    for (int id = 0; id < VYRE_RANGE_COUNT; id++)
        cr_assert_eq(after[id], before[id], "range %d: a pop without a push recorded a time", id);

    /* One push, then 100 pops: exactly one range is timed, the other 99
     * pops are ignored. */
    vyre_nvtx_push(VYRE_RANGE_CODEGEN);
    for (int i = 0; i < 100; i++)
        vyre_nvtx_pop();
    range_counts(after);
    for (int id = 0; id < VYRE_RANGE_COUNT; id++)
        cr_assert_eq(after[id], before[id] + (id == VYRE_RANGE_CODEGEN),
                     "range %d: %llu timed, expected %llu", id, (unsigned long long)after[id],
                     (unsigned long long)(before[id] + (id == VYRE_RANGE_CODEGEN)));

    /* The stray pops left the range stack sound: a nested pair afterwards
     * pairs up as pushed (inner first), one time each. */
    vyre_nvtx_push(VYRE_RANGE_PIPELINE_COMPILE);
    vyre_nvtx_push(VYRE_RANGE_MODULE_LOAD);
    vyre_nvtx_pop();
    range_counts(after);
    cr_assert_eq(after[VYRE_RANGE_MODULE_LOAD], before[VYRE_RANGE_MODULE_LOAD] + 1);
    cr_assert_eq(after[VYRE_RANGE_PIPELINE_COMPILE], before[VYRE_RANGE_PIPELINE_COMPILE],
                 "the outer range closed with the inner one");
    vyre_nvtx_pop();
    range_counts(after);
    cr_assert_eq(after[VYRE_RANGE_PIPELINE_COMPILE], before[VYRE_RANGE_PIPELINE_COMPILE] + 1);
    cr_assert_eq(after[VYRE_RANGE_MODULE_LOAD], before[VYRE_RANGE_MODULE_LOAD] + 1);
    if (saved)
        setenv("NVTX_INJECTION64_PATH", saved, 1);
    free(saved);
}

static void *push_pop_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        vyre_nvtx_push((vyre_range_id)(i % VYRE_RANGE_COUNT));
        vyre_nvtx_push_payload(VYRE_RANGE_BENCH_POINT, (uint64_t)i);
        vyre_nvtx_pop();
        vyre_nvtx_pop();
    }
    return NULL;
}

Test(nvtx, push_pop_without_a_tool)
{
    const char *inj = getenv("NVTX_INJECTION64_PATH");
    char *saved = inj ? strdup(inj) : NULL;
    unsetenv("NVTX_INJECTION64_PATH");

    for (int round = 0; round < 1000; round++) {
        for (int id = 0; id < VYRE_RANGE_COUNT; id++)
            vyre_nvtx_push((vyre_range_id)id);
        for (int id = 0; id < VYRE_RANGE_COUNT; id++)
            vyre_nvtx_push_payload((vyre_range_id)id, (uint64_t)round * 1000 + (uint64_t)id);
        for (int id = 0; id < 2 * VYRE_RANGE_COUNT; id++)
            vyre_nvtx_pop();
    }
    /* Out-of-range ids are ignored, pops without pushes too. */
    static const int bad[] = {-1, -1000, VYRE_RANGE_COUNT, VYRE_RANGE_COUNT + 1, 1 << 30};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vyre_nvtx_push((vyre_range_id)bad[i]);
        vyre_nvtx_push_payload((vyre_range_id)bad[i], UINT64_MAX);
    }
    for (int i = 0; i < 50; i++)
        vyre_nvtx_pop();

    /* From several threads at once. */
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, push_pop_thread, NULL), 0);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);

    if (saved)
        setenv("NVTX_INJECTION64_PATH", saved, 1);
    free(saved);
}
