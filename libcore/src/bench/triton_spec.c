/*
 * triton_spec.c - the spec of a kernel in Triton's cache (see
 * vyre/triton_spec.h): the group found by name or key as `triton show`
 * finds it, one of several picked by TorchInductor's autotuning record or
 * the GPU's architecture, its metadata and TTIR read from the group's
 * directory (never through a link), TorchInductor's facts read when its
 * cache is known, and the spec built by triton_spec_args.c.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "bench/axes_internal.h"
#include "bench/triton_spec_internal.h"
#include "cache/foreign/triton_internal.h"
#include "vyre/inductor.h"

/* The kernel groups `what` names: the key, a key prefix of 8 characters or
 * more, or the kernel name (as `triton show`); a group whose metadata names
 * no kernel (a launcher, a half-written group) is none. Returns how many,
 * their indexes into idx when it is not NULL. No limit: torch.compile
 * recompiles a kernel for every shape, and caches with 201 groups of one
 * kernel have been seen. */
static size_t find_groups(const vyre_triton_cache *c, const char *what, size_t *idx)
{
    size_t n = 0, len = strlen(what);
    if (!len)
        return 0;
    for (size_t i = 0; i < c->n_groups; i++)
        if (c->groups[i].kind == VYRE_TRITON_KERNEL && c->groups[i].name[0] &&
            !strcmp(c->groups[i].key, what)) {
            if (idx)
                idx[0] = i;
            return 1;
        }
    for (size_t i = 0; i < c->n_groups; i++) {
        const vyre_triton_group *g = &c->groups[i];
        if (g->kind == VYRE_TRITON_KERNEL && g->name[0] &&
            ((len >= 8 && !strncmp(g->key, what, len)) || !strcmp(g->name, what))) {
            if (idx)
                idx[n] = i;
            n++;
        }
    }
    return n;
}

/* No group: the nearest kernel names in the hint. */
static int no_group(const vyre_triton_cache *c, const char *what, vyre_error *err)
{
    vyre_triton_explanation x;
    int rc = vyre_triton_explain(c, what, &x, err);
    if (rc)
        return rc;
    vyre__strbuf hint = VYRE__STRBUF_INIT;
    if (x.n_nearest)
        vyre__strbuf_addf(&hint, "the nearest kernel names:");
    for (size_t i = 0; i < x.n_nearest; i++)
        vyre__strbuf_addf(&hint, "%s %s", i ? "," : "", x.nearest[i]);
    if (!x.n_nearest)
        vyre__strbuf_addf(&hint, "the cache has no kernel groups: check --dir "
                                 "(TRITON_CACHE_DIR)");
    vyre_triton_explanation_release(&x);
    rc = vyre__fail(err, VYRE_ENOENT, hint.buf, "no Triton kernel or group '%s' in '%s'", what,
                    c->dir);
    vyre__strbuf_release(&hint);
    return rc;
}

/* ", XBLOCK 16, YBLOCK 256": the blocks folded into group g's TTIR, which
 * tell autotuning configs apart ("" when it does not read). */
static void group_blocks(const vyre_triton_cache *c, const vyre_triton_group *g, char *out,
                         size_t size)
{
    out[0] = '\0';
    int gfd = vyre__open_dir_at(c->fd, g->key);
    if (gfd < 0)
        return;
    char file[VYRE_TRITON_NAME_MAX + 16], why[128], *text = NULL;
    size_t len = 0;
    snprintf(file, sizeof file, "%s.ttir", g->name);
    vyre__ttir *t = malloc(sizeof *t);
    if (t &&
        vyre__triton_read_at(gfd, file, VYRE_TRITON_CUBIN_MAX, &text, &len, why, sizeof why) ==
            VYRE_OK &&
        vyre__ttir_parse(text, g->name, file, t, NULL) == VYRE_OK) {
        size_t used = 0;
        for (int a = 0; a < 3 && used < size; a++)
            if (t->block[a]) {
                int n = snprintf(out + used, size - used, ", %cBLOCK %lld", "XYZ"[a],
                                 (long long)t -> block[a]);
                used += n > 0 ? (size_t)n : 0;
            }
    }
    free(t);
    free(text);
    close(gfd);
}

#define SEVERAL_LISTED 3 /* groups a refusal describes one by one */

/* Several groups and nothing to pick one: how they differ (the first
 * SEVERAL_LISTED one by one: a kernel recompiled for every shape has
 * dozens, which would make one line of thousands of characters). */
static int several(const vyre_triton_cache *c, const char *what, const size_t *idx, size_t n,
                   int had_inductor, vyre_error *err)
{
    vyre__strbuf msg = VYRE__STRBUF_INIT;
    vyre__strbuf_addf(&msg, "kernel '%s' has %zu groups in '%s':", what, n, c->dir);
    if (n > SEVERAL_LISTED)
        vyre__strbuf_addf(&msg, " %s", "the first");
    for (size_t i = 0; i < n && i < SEVERAL_LISTED; i++) {
        const vyre_triton_group *g = &c->groups[idx[i]];
        char blocks[96];
        group_blocks(c, g, blocks, sizeof blocks);
        vyre__strbuf_addf(&msg, "%s %s (sm_%s, num_warps %lld, shared %lld%s)", i ? "," : "",
                          g->key, g->arch, (long long)g->num_warps, (long long)g->shared, blocks);
    }
    if (n > SEVERAL_LISTED)
        vyre__strbuf_addf(&msg, ", and %zu more", n - SEVERAL_LISTED);
    vyre_triton_explanation x;
    if (vyre_triton_explain(c, what, &x, NULL) == VYRE_OK) {
        int first = 1;
        for (int f = 0; f < VYRE_TRITON_FIELD_COUNT; f++)
            if (x.differ & (1u << f)) {
                vyre__strbuf_addf(&msg, "%s %s", first ? "; they differ in" : ",",
                                  vyre_triton_field_name((vyre_triton_field)f));
                first = 0;
            }
        vyre_triton_explanation_release(&x);
    }
    int rc = vyre__fail(err, VYRE_EINVAL,
                        had_inductor ? "name one by its key (--triton KEY): TorchInductor's "
                                       "cache has no autotuning record of any of them"
                                     : "name one by its key (--triton KEY), or give "
                                       "TorchInductor's cache (--inductor-dir DIR) to take its "
                                       "autotuning's choice",
                        "%s", msg.buf);
    vyre__strbuf_release(&msg);
    return rc;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The TorchInductor cache to read (see vyre_triton_spec_opts), or NULL. */
static const char *inductor_dir(const vyre_triton_spec_opts *o, const vyre_triton_cache *c,
                                char *buf, size_t size)
{
    if (o->inductor_dir)
        return o->inductor_dir[0] ? o->inductor_dir : NULL;
    /* Inductor's own layout: <cache>/triton/<device>/. */
    vyre__strlcpy(buf, c->abs_dir, size);
    char *slash = strrchr(buf, '/');
    if (slash && slash > buf) {
        *slash = '\0';
        char *up = strrchr(buf, '/');
        if (up && !strcmp(up + 1, "triton") && up > buf) {
            *up = '\0';
            if (is_dir(buf))
                return buf;
        }
    }
    if (vyre_inductor_cache_dir(buf, size, NULL, NULL) == VYRE_OK && is_dir(buf))
        return buf;
    return NULL;
}

/* Picks the group among idx[0..n): the only one, the autotuning's, or
 * the one built for the GPU. Notes why. */
static int pick(vyre__triton_infer *x, const vyre_triton_cache *c, const size_t *idx, size_t n,
                vyre_error *err)
{
    const char *name = c->groups[idx[0]].name;
    if (x->ind_dir) {
        const char **keys = malloc(n * sizeof *keys);
        if (!keys)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
        for (size_t i = 0; i < n; i++)
            keys[i] = c->groups[idx[i]].key;
        int rc = vyre__inductor_kernel_read(x->ind_dir, name, keys, n, &x->ind, err);
        free(keys);
        if (rc)
            return rc;
        x->have_ind = 1;
    }
    const char *why = NULL;
    size_t pickd = 0;
    if (n == 1) {
        why = !strcmp(x->o->what, name) ? "the only group of the kernel" : "named by its key";
    } else if (x->have_ind && x->ind.best_key >= 0) {
        pickd = (size_t)x->ind.best_key;
        why = "TorchInductor's autotuning picked it";
    } else if (x->o->gpu_arch) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!strcmp(c->groups[idx[i]].arch, x->o->gpu_arch)) {
                pickd = i;
                m++;
            }
        why = m == 1 ? "the only one built for this GPU" : NULL;
    }
    if (!why)
        return several(c, name, idx, n, x->have_ind, err);
    x->g = &c->groups[idx[pickd]];
    vyre__strbuf_addf(&x->notes, "group: %s of kernel %s (Triton %s, sm_%s): %s", x->g->key,
                      x->g->name, x->g->triton_version[0] ? x->g->triton_version : "before 3.3",
                      x->g->arch, why);
    if (n > 1)
        vyre__strbuf_addf(&x->notes, ", of %zu groups", n);
    if (x->have_ind && x->ind.best_key == (int)pickd)
        vyre__strbuf_addf(&x->notes, n > 1 ? " (%s)" : "; TorchInductor's autotuning record: %s",
                          x->ind.best_file);
    vyre__strbuf_addf(&x->notes, "\n");
    if (x->have_ind && x->ind.best_key != (int)pickd)
        x->ind.best_key = -1; /* its blocks are another group's */
    return VYRE_OK;
}

static const char k_rebuild[] =
    "run the model again so that Triton compiles the kernel, or name another group of it by its "
    "key";

/* Reads <name>.<ext> of the group (held directory gfd) into *text. */
static int read_group_file(const vyre__triton_infer *x, int gfd, const char *ext, char **text,
                           vyre_error *err)
{
    char file[VYRE_TRITON_NAME_MAX + 16], why[160];
    snprintf(file, sizeof file, "%s.%s", x->g->name, ext);
    size_t len = 0;
    int rc = vyre__triton_read_at(gfd, file, VYRE_TRITON_CUBIN_MAX, text, &len, why, sizeof why);
    if (rc == VYRE_ENOMEM)
        return vyre__fail(err, rc, NULL, "out of memory reading '%s/%s'", x->g->key, file);
    if (rc)
        return vyre__fail(err, VYRE_EINVAL, k_rebuild,
                          "group '%s' of kernel '%s': cannot read %s: %s", x->g->key, x->g->name,
                          file, why);
    if (strlen(*text) != len)
        return vyre__fail(err, VYRE_EINVAL, k_rebuild, "group '%s': %s holds a NUL byte", x->g->key,
                          file);
    return VYRE_OK;
}

/* The metadata's launch fields and the TTIR's parameters. */
static int read_group(vyre__triton_infer *x, const vyre_triton_cache *c, vyre_error *err)
{
    int gfd = vyre__open_dir_at(c->fd, x->g->key);
    if (gfd < 0)
        return vyre__fail(err, VYRE_EINVAL, k_rebuild, "cannot open group '%s' in '%s'", x->g->key,
                          c->dir);
    char *meta = NULL, *ttir = NULL, origin[VYRE_TRITON_NAME_MAX * 2 + 16];
    int rc = read_group_file(x, gfd, "json", &meta, err);
    snprintf(origin, sizeof origin, "%s/%s.json", x->g->key, x->g->name);
    if (!rc)
        rc = vyre__triton_launch_meta_parse(meta, origin, &x->meta, err);
    if (!rc)
        rc = read_group_file(x, gfd, "ttir", &ttir, err);
    snprintf(origin, sizeof origin, "%s/%s.ttir", x->g->key, x->g->name);
    if (!rc)
        rc = vyre__ttir_parse(ttir, x->g->name, origin, &x->ttir, err);
    x->scratch_args = x->meta.scratch_ptrs;
    free(meta);
    free(ttir);
    close(gfd);
    return rc;
}

static int has_file(const vyre_triton_group *g, const char *name, const char *ext)
{
    char file[VYRE_TRITON_NAME_MAX + 16];
    snprintf(file, sizeof file, "%s.%s", name, ext);
    const vyre_triton_file *f = vyre_triton_group_file(g, file);
    return f && f->regular && f->apparent_bytes > 0;
}

/* The kernel file: the cubin when it is the GPU's, else the PTX. */
static int kernel_file(vyre__triton_infer *x, const vyre_triton_cache *c, vyre_triton_spec *out,
                       vyre_error *err)
{
    const vyre_triton_group *g = x->g;
    int ptx = has_file(g, g->name, "ptx"), cubin = has_file(g, g->name, "cubin");
    int same = x->o->gpu_arch && !strcmp(x->o->gpu_arch, x->meta.arch);
    if (!ptx && !cubin)
        return vyre__fail(err, VYRE_EINVAL, k_rebuild,
                          "group '%s' of kernel '%s' has no .ptx or "
                          ".cubin",
                          g->key, g->name);
    if (!ptx && x->o->gpu_arch && !same)
        return vyre__fail(err, VYRE_EINVAL, k_rebuild,
                          "group '%s' of kernel '%s' has no .ptx, and its cubin is for sm_%s, "
                          "not this GPU's sm_%s",
                          g->key, g->name, x->meta.arch, x->o->gpu_arch);
    const char *ext = cubin && (same || !ptx) ? "cubin" : "ptx";
    const char *why = !strcmp(ext, "cubin") ? (same ? "Triton's own cubin, built for this GPU"
                                                    : "the group has no PTX")
                      : !cubin              ? "the group has no cubin"
                      : x->o->gpu_arch      ? "the cubin is another GPU's: the PTX, compiled "
                                              "for this one"
                                            : "no GPU to match the cubin against: the PTX";
    vyre__strbuf p = VYRE__STRBUF_INIT;
    vyre__strbuf_addf(&p, "%s/%s/%s.%s", c->abs_dir, g->key, g->name, ext);
    if (vyre__strbuf_failed(&p))
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
    out->kernel_path = vyre__strbuf_detach(&p, NULL);
    vyre__strbuf_addf(&x->notes, "kernel: %s.%s (%s)\n", g->name, ext, why);
    return out->kernel_path ? VYRE_OK : vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
}

/* root as text: one member a line, each arg on a line of its own (as the
 * examples in examples/bench/ are written). NULL: out of memory. */
static char *spec_text(json_t *root)
{
    vyre__strbuf sb = VYRE__STRBUF_INIT;
    const char *key;
    json_t *v;
    int first = 1;
    vyre__strbuf_adds(&sb, "{\n");
    json_object_foreach(root, key, v)
    {
        vyre__strbuf_addf(&sb, "%s  \"%s\": ", first ? "" : ",\n", key);
        first = 0;
        int rows = json_is_array(v) && !strcmp(key, "args");
        size_t n = rows ? json_array_size(v) : 1;
        if (rows)
            vyre__strbuf_adds(&sb, "[\n");
        for (size_t i = 0; i < n; i++) {
            char *d =
                json_dumps(rows ? json_array_get(v, i) : v, JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
            if (!d)
                sb.failed = 1;
            else
                vyre__strbuf_addf(&sb, "%s%s%s", rows ? "    " : "", d,
                                  rows && i + 1 < n ? ",\n" : "");
            free(d);
        }
        if (rows)
            vyre__strbuf_adds(&sb, "\n  ]");
    }
    vyre__strbuf_adds(&sb, "\n}\n");
    if (vyre__strbuf_failed(&sb)) {
        vyre__strbuf_release(&sb);
        return NULL;
    }
    return vyre__strbuf_detach(&sb, NULL);
}

/* The spec document: description, version, kernel, entry, then the
 * inferred members, as text into out->json. */
static int build(vyre__triton_infer *x, vyre_triton_spec *out, vyre_error *err)
{
    json_t *root = json_object();
    char desc[VYRE_TRITON_NAME_MAX * 2 + 96];
    snprintf(desc, sizeof desc, "Triton kernel %s (group %s), inferred from Triton's cache",
             x->g->name, x->g->key);
    json_object_set_new(root, "description", json_string(desc));
    json_object_set_new(root, "version", json_integer(2));
    json_object_set_new(root, "kernel", json_string(out->kernel_path));
    json_object_set_new(root, "entry", json_string(x->g->name));
    int rc = vyre__triton_infer_spec(x, root, err);
    if (!rc && !(out->json = spec_text(root)))
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
    json_decref(root);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The first of TorchInductor's own Triton caches (<inductor>/triton/<device>/,
 * devices in name order) with a group `what` names, scanned into *c. */
static int inductor_tritons(const char *what, vyre_triton_cache *c, size_t *n)
{
    char ind[VYRE_TRITON_PATH_MAX], top[VYRE_TRITON_PATH_MAX + 8];
    if (vyre_inductor_cache_dir(ind, sizeof ind, NULL, NULL) != VYRE_OK)
        return 0;
    snprintf(top, sizeof top, "%s/triton", ind);
    DIR *d = opendir(top);
    if (!d)
        return 0;
    char names[16][256];
    size_t nn = 0;
    for (struct dirent *e; nn < 16 && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && strlen(e->d_name) < sizeof names[0])
            vyre__strlcpy(names[nn++], e->d_name, sizeof names[0]);
    closedir(d);
    qsort(names, nn, sizeof names[0], cmp_name);
    for (size_t i = 0; i < nn; i++) {
        char dir[VYRE_TRITON_PATH_MAX * 2 + 16];
        snprintf(dir, sizeof dir, "%s/%s", top, names[i]);
        vyre_triton_cache t;
        if (vyre_triton_cache_scan(dir, &t, NULL) == VYRE_OK &&
            (*n = find_groups(&t, what, NULL))) {
            vyre_triton_cache_release(c);
            *c = t; /* the scan's held directory moves with it */
            return 1;
        }
        vyre_triton_cache_release(&t);
    }
    return 0;
}

/* Scans the Triton cache into *c and finds the groups o->what names:
 * --dir, else Triton's own default, and when that is only the home
 * default (no TRITON_CACHE_DIR or TRITON_HOME), TorchInductor's Triton
 * caches, where torch.compile's kernels are when TRITON_CACHE_DIR was not
 * set. No group anywhere: the nearest names of the first cache. */
static int locate(const vyre_triton_spec_opts *o, vyre_triton_cache *c, size_t *n, vyre_error *err)
{
    char dir[VYRE_TRITON_PATH_MAX];
    const char *source = "--dir";
    int rc = VYRE_OK;
    if (o->triton_dir)
        vyre__strlcpy(dir, o->triton_dir, sizeof dir);
    else
        rc = vyre_triton_cache_dir(dir, sizeof dir, &source, err);
    if (rc)
        return rc;
    vyre_error first;
    vyre_error_clear(&first);
    rc = vyre_triton_cache_scan(dir, c, &first);
    if (!rc && (*n = find_groups(c, o->what, NULL)) > 0)
        return VYRE_OK;
    if (source && !strcmp(source, "HOME") && inductor_tritons(o->what, c, n))
        return VYRE_OK;
    if (!rc)
        return no_group(c, o->what, err);
    if (err) {
        *err = first;
        if (!o->triton_dir)
            vyre__strlcpy(err->hint,
                          "pass --dir DIR: the TRITON_CACHE_DIR the model ran with, or "
                          "TorchInductor's triton/DEVICE folder (none of those under "
                          "TORCHINDUCTOR_CACHE_DIR has it either)",
                          sizeof err->hint);
    }
    return rc;
}

/* Finds the group; the rest of the inference. */
static int infer(vyre__triton_infer *x, vyre_triton_cache *c, vyre_triton_spec *out,
                 vyre_error *err)
{
    size_t n = 0;
    int rc = locate(x->o, c, &n, err);
    if (rc)
        return rc;
    size_t *idx = malloc(n * sizeof *idx);
    if (!idx)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
    find_groups(c, x->o->what, idx);
    char ibuf[VYRE_TRITON_PATH_MAX];
    x->ind_dir = inductor_dir(x->o, c, ibuf, sizeof ibuf);
    rc = pick(x, c, idx, n, err);
    free(idx); /* x->g points into the cache */
    if (!rc)
        rc = read_group(x, c, err);
    if (!rc)
        rc = kernel_file(x, c, out, err);
    if (rc)
        return rc;
    vyre__strlcpy(out->key, x->g->key, sizeof out->key);
    vyre__strlcpy(out->name, x->g->name, sizeof out->name);
    vyre__triton_infer_model(x);
    rc = build(x, out, err);
    out->model_sizes = x->sizes_from && !x->o->naxes;
    x->ind_dir = NULL; /* ibuf goes out of scope */
    return rc;
}

int vyre_triton_spec_make(const vyre_triton_spec_opts *o, vyre_triton_spec *out, vyre_error *err)
{
    if (!out)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_triton_spec_make: NULL out");
    memset(out, 0, sizeof *out);
    vyre_axes_init(&out->sweep.axes);
    if (!o || !o->what)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_triton_spec_make: no kernel named");
    vyre_triton_cache c;
    memset(&c, 0, sizeof c);
    int rc = VYRE_OK;
    vyre__triton_infer *x = calloc(1, sizeof *x);
    if (!x)
        rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
    if (!rc) {
        x->o = o;
        x->notes = (vyre__strbuf)VYRE__STRBUF_INIT;
        rc = infer(x, &c, out, err);
        out->notes = vyre__strbuf_detach(&x->notes, NULL);
    }
    if (!rc) {
        char origin[VYRE_TRITON_NAME_MAX + 32];
        snprintf(origin, sizeof origin, "the spec inferred for %s", out->name);
        rc = vyre__sweep_spec_parse(&out->sweep, out->json, origin, err);
    }
    free(x);
    vyre_triton_cache_release(&c);
    if (rc)
        vyre_triton_spec_release(out);
    return rc;
}

void vyre_triton_spec_release(vyre_triton_spec *s)
{
    if (!s)
        return;
    free(s->json);
    free(s->notes);
    free(s->kernel_path);
    vyre_sweep_spec_release(&s->sweep);
    memset(s, 0, sizeof *s);
    vyre_axes_init(&s->sweep.axes);
}
