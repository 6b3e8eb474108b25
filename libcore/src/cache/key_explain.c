/*
 * key_explain.c - "why did this miss?": a key's inputs, one by one, beside
 * the inputs recorded for the cache's other entries of the same source or
 * kernel (see vyre/key.h).
 *
 * A key is a SHA-256: two keys tell nothing about why they differ. So the
 * compile path records each blob's inputs in the index right after storing
 * it (vyre__cache_note_inputs, schema 4), and explain compares them field
 * by field. Entries stored before that (or fetched from a remote store, or
 * re-found by a reindex) still have the three inputs the blob header
 * keeps: key version, toolchain and architecture.
 */
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "cache/cache_internal.h"
#include "cache/key_internal.h"
#include "vyre/key.h"

/* The inputs every row knows from its blob header. */
#define HEADER_FIELDS                                                                              \
    ((1u << VYRE_KEY_FIELD_VERSION) | (1u << VYRE_KEY_FIELD_TOOLCHAIN) |                           \
     (1u << VYRE_KEY_FIELD_ARCH))
#define ALL_FIELDS ((1u << VYRE_KEY_FIELD_COUNT) - 1)

_Static_assert(sizeof(((vyre_key_explain_entry *)0)->source) == VYRE_BLOB_SOURCE_MAX &&
                   sizeof(((vyre_key_explain_entry *)0)->kernels) == VYRE_CACHE_ENTRY_KERNELS &&
                   VYRE_KEY_TEXT_MAX >= VYRE_BLOB_ARCH_MAX &&
                   VYRE_KEY_TEXT_MAX >= VYRE_BLOB_TOOLCHAIN_MAX,
               "an entry's fields hold what the index rows hold");

const char *vyre_key_field_name(vyre_key_field f)
{
    static const char *const names[VYRE_KEY_FIELD_COUNT] = {
        "key_version", "backend", "toolchain",   "arch",          "features",
        "options",     "entry",   "source_kind", "source_sha256",
    };
    return (unsigned)f < VYRE_KEY_FIELD_COUNT ? names[f] : NULL;
}

static int copy_field(char *dst, size_t size, const char *src, const char *what, vyre_error *err)
{
    if (vyre__strlcpy(dst, src ? src : "", size) >= size)
        /* bounded: excerpt, marked "...", of a value too long */
        return vyre__fail(err, VYRE_ETOOBIG, NULL, "the key's %s '%.40s...' is over %zu bytes",
                          what, src, size - 1);
    return VYRE_OK;
}

int vyre__key_inputs_from(const vyre_key_input *in, vyre_key_inputs *out, vyre_error *err)
{
    if (!in || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__key_inputs_from: NULL argument");
    memset(out, 0, sizeof *out);
    if ((in->n_options && !in->options) || (in->source_len && !in->source))
        return vyre__fail(err, VYRE_EINVAL, NULL,
                          "vyre__key_inputs_from: NULL options or source with a non-zero count");
    out->key_version = VYRE_KEY_VERSION;
    int rc = copy_field(out->backend, sizeof out->backend, in->backend, "backend", err);
    if (!rc)
        rc = copy_field(out->toolchain, sizeof out->toolchain, in->toolchain, "toolchain", err);
    if (!rc)
        rc = copy_field(out->arch, sizeof out->arch, in->arch, "architecture", err);
    if (!rc)
        rc = copy_field(out->entry, sizeof out->entry, in->entry, "entry", err);
    for (size_t i = 0; !rc && i < in->n_options; i++) {
        if (!in->options[i])
            return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__key_inputs_from: option %zu is NULL",
                              i);
        size_t l = strlen(in->options[i]) + 1;
        if (l > sizeof out->options - out->options_len)
            return vyre__fail(err, VYRE_ETOOBIG, "pass fewer or shorter options",
                              "the key's %zu options are over %d bytes", in->n_options,
                              VYRE_KEY_OPTIONS_MAX);
        memcpy(out->options + out->options_len, in->options[i], l);
        out->options_len += (uint32_t)l;
        out->n_options++;
    }
    if (rc)
        return rc;
    out->features = in->features;
    out->source_kind = (uint32_t)in->source_kind;
    return vyre__sha256_hex(in->source, in->source_len, out->source_sha256, err);
}

unsigned vyre__key_inputs_diff(const vyre_key_inputs *a, const vyre_key_inputs *b)
{
    if (!a || !b)
        return 0;
    unsigned d = 0;
    d |= (unsigned)(a->key_version != b->key_version) << VYRE_KEY_FIELD_VERSION;
    d |= (unsigned)(strcmp(a->backend, b->backend) != 0) << VYRE_KEY_FIELD_BACKEND;
    d |= (unsigned)(strcmp(a->toolchain, b->toolchain) != 0) << VYRE_KEY_FIELD_TOOLCHAIN;
    d |= (unsigned)(strcmp(a->arch, b->arch) != 0) << VYRE_KEY_FIELD_ARCH;
    d |= (unsigned)(a->features != b->features) << VYRE_KEY_FIELD_FEATURES;
    int opts = a->n_options != b->n_options || a->options_len != b->options_len ||
               (a->options_len <= sizeof a->options &&
                memcmp(a->options, b->options, a->options_len) != 0);
    d |= (unsigned)opts << VYRE_KEY_FIELD_OPTIONS;
    d |= (unsigned)(strcmp(a->entry, b->entry) != 0) << VYRE_KEY_FIELD_ENTRY;
    d |= (unsigned)(a->source_kind != b->source_kind) << VYRE_KEY_FIELD_SOURCE_KIND;
    d |= (unsigned)(strcmp(a->source_sha256, b->source_sha256) != 0) << VYRE_KEY_FIELD_SOURCE;
    return d;
}

int vyre__cache_note_inputs(vyre_cache *c, const vyre_key *key, const vyre_key_input *in,
                            vyre_error *err)
{
    if (!c || !key || !in)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre__cache_note_inputs: NULL argument");
    if (!c->idx || c->readonly)
        return VYRE_OK;
    vyre_key k;
    int rc = vyre__key_compute(in, &k, err);
    if (rc)
        return rc;
    if (memcmp(k.bytes, key->bytes, VYRE_KEY_BYTES) != 0)
        return vyre__fail(err, VYRE_EINVAL, NULL,
                          "vyre__cache_note_inputs: the inputs do not compute to the key");
    vyre_key_inputs *ki = malloc(sizeof *ki);
    if (!ki)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate a key's inputs");
    rc = vyre__key_inputs_from(in, ki, err);
    if (!rc)
        rc = vyre__index_set_inputs(c->idx, key, ki, err);
    free(ki);
    return rc;
}

/* ---- explain ---------------------------------------------------------------- */

typedef struct entry_list {
    vyre_key_explain_entry *v;
    size_t n, cap;
    const vyre_key *self;
    const char *name;   /* basename asked about, or NULL */
    const char *kernel; /* kernel asked about, or NULL */
    int oom;
} entry_list;

/* 1 when kernel is one of the ','-joined names of list (a cut list ends
 * in "..."; what was cut cannot match). */
static int list_has(const char *list, const char *kernel)
{
    size_t kl = strlen(kernel);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == kl && strncmp(p, kernel, l) == 0)
            return 1;
        p += l + (p[l] == ',');
    }
    return 0;
}

/* Keeps every entry but the key asked about; which are related is decided
 * once their inputs are read (the same source bytes need them). */
static int collect(const vyre_cache_entry *e, void *ctx)
{
    entry_list *l = ctx;
    if (memcmp(e->key.bytes, l->self->bytes, VYRE_KEY_BYTES) == 0)
        return 0;
    if (vyre__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v, 16)) {
        l->oom = 1;
        return 1;
    }
    vyre_key_explain_entry *x = &l->v[l->n++];
    memset(x, 0, sizeof *x);
    x->key = e->key;
    vyre__strlcpy(x->source, e->source, sizeof x->source);
    vyre__strlcpy(x->kernels, e->kernels, sizeof x->kernels);
    x->n_kernels = e->n_kernels;
    x->created_unix_ns = e->created_unix_ns;
    x->inputs.key_version = e->key_version;
    vyre__strlcpy(x->inputs.toolchain, e->toolchain, sizeof x->inputs.toolchain);
    vyre__strlcpy(x->inputs.arch, e->arch, sizeof x->inputs.arch);
    x->related |=
        l->name && *l->name && strcmp(l->name, e->source) == 0 ? VYRE_KEY_RELATED_NAME : 0;
    x->related |=
        l->kernel && *l->kernel && list_has(e->kernels, l->kernel) ? VYRE_KEY_RELATED_KERNEL : 0;
    return 0;
}

/* Reads each entry's recorded inputs, marks what differs from want, and
 * drops the unrelated ones. */
static int compare_all(vyre_cache *c, entry_list *l, const vyre_key_inputs *want, vyre_error *err)
{
    size_t kept = 0;
    for (size_t i = 0; i < l->n; i++) {
        vyre_key_explain_entry *x = &l->v[i];
        vyre_key_inputs rec;
        int recorded = 0;
        int rc = vyre__index_get_inputs(c->idx, &x->key, &rec, &recorded, err);
        if (rc == VYRE_ENOENT)
            continue; /* removed since the listing */
        if (rc)
            return rc;
        if (recorded) {
            x->inputs = rec;
            x->inputs_recorded = 1;
            x->known = ALL_FIELDS;
            if (strcmp(rec.source_sha256, want->source_sha256) == 0)
                x->related |= VYRE_KEY_RELATED_SOURCE;
        } else {
            x->known = HEADER_FIELDS;
        }
        x->differ = vyre__key_inputs_diff(&x->inputs, want) & x->known;
        if (x->related)
            l->v[kept++] = *x;
    }
    l->n = kept;
    return VYRE_OK;
}

static int popcount(unsigned v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

/* Fewest differing inputs first; of equals, those with every input
 * recorded; then by key. */
static int entry_cmp(const void *a, const void *b)
{
    const vyre_key_explain_entry *x = a, *y = b;
    int dx = popcount(x->differ), dy = popcount(y->differ);
    if (dx != dy)
        return dx < dy ? -1 : 1;
    if (x->inputs_recorded != y->inputs_recorded)
        return x->inputs_recorded ? -1 : 1;
    return memcmp(x->key.bytes, y->key.bytes, VYRE_KEY_BYTES);
}

static vyre_key_state key_state(vyre_cache *c, const vyre_key *key)
{
    vyre_blob_header h;
    uint64_t size = 0;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    int rc = vyre_cache_check_blob(c, key, &h, &size, &why, NULL, 0, NULL);
    if (rc == VYRE_OK)
        return VYRE_KEY_PRESENT;
    return rc == VYRE_ENOENT ? VYRE_KEY_ABSENT : VYRE_KEY_DAMAGED;
}

int vyre_key_explain(vyre_cache *c, const vyre_key_input *in, const char *source_name,
                     const char *kernel, vyre_key_explanation *out, vyre_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !in || !out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_key_explain: NULL argument");
    int rc = vyre__key_compute(in, &out->key, err);
    if (!rc)
        rc = vyre__key_inputs_from(in, &out->inputs, err);
    if (rc || vyre_cache_is_missing(c) || !c->idx)
        return rc; /* a cache not made yet: the key is absent, nothing else is cached */
    out->state = key_state(c, &out->key);
    const char *base = source_name ? strrchr(source_name, '/') : NULL;
    entry_list l = {.self = &out->key, .name = base ? base + 1 : source_name, .kernel = kernel};
    rc = vyre_cache_foreach(c, collect, &l, err);
    if (l.oom)
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory listing the cache");
    if (!rc)
        rc = compare_all(c, &l, &out->inputs, err);
    if (rc) {
        free(l.v);
        return rc;
    }
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, entry_cmp);
    out->entries = l.v;
    out->n_entries = l.n;
    return VYRE_OK;
}

void vyre_key_explanation_release(vyre_key_explanation *x)
{
    if (!x)
        return;
    free(x->entries);
    memset(x, 0, sizeof *x);
}
