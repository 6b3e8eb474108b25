/*
 * triton_spec_args.c - a Triton kernel's parameters as a version-2 spec
 * (see triton_spec_internal.h): each integer or float parameter an axis
 * of its own name, each pointer a typed buffer, Triton's scratch pointers
 * null (or sized as the metadata says), the grid from TorchInductor's
 * naming, the block and shared memory from the metadata. Every choice is
 * written into the notes, so the user sees how the spec was inferred.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/triton_spec_internal.h"

/* The spec's element type of a TTIR type, or NULL. Triton stores i1
 * (bool) tensors as bytes; fp8 types are bytes too. */
static const char *buffer_type(const char *t)
{
    static const char *const same[] = {"f32", "f16", "bf16", "f64", "i8", "i32", "i64"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        if (!strcmp(t, same[i]))
            return same[i];
    if (!strcmp(t, "i1") || !strncmp(t, "f8", 2))
        return "u8";
    return NULL;
}

static int is_numel(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && !strcmp(name + n - 5, "numel");
}

/* A scalar parameter the spec can pass: "i32"/"i64" ints, "f32"/"f64". */
static int is_int_param(const vyre__ttir_param *p)
{
    return !p->is_ptr && (!strcmp(p->type, "i32") || !strcmp(p->type, "i64"));
}

static int is_float_param(const vyre__ttir_param *p)
{
    return !p->is_ptr && (!strcmp(p->type, "f32") || !strcmp(p->type, "f64"));
}

static int param_index(const vyre__ttir *t, const char *name, size_t len)
{
    for (size_t i = 0; i < t->nparams; i++)
        if (strlen(t->params[i].name) == len && !strncmp(t->params[i].name, name, len))
            return (int)i;
    return -1;
}

/* The size hint's axis for a numel parameter: "x" for xnumel, "r0_" for
 * r0_numel and rnumel. */
static int hint_for(const vyre__inductor_kernel *k, const char *param, int64_t *v)
{
    char want[16];
    if (!strcmp(param, "rnumel"))
        snprintf(want, sizeof want, "r0_");
    else if (strlen(param) == 6 && is_numel(param))
        snprintf(want, sizeof want, "%c", param[0]);
    else if (is_numel(param) && strlen(param) < 12 && param[0] == 'r')
        snprintf(want, sizeof want, "%.*s_", (int)(strlen(param) - 6), param);
    else
        return 0;
    for (size_t i = 0; i < k->nhints; i++)
        if (!strcmp(k->hint_axis[i], want)) {
            *v = k->hint[i];
            return 1;
        }
    return 0;
}

void vyre__triton_infer_model(vyre__triton_infer *x)
{
    const vyre__inductor_kernel *k = &x->ind;
    const vyre__ttir *t = &x->ttir;
    if (x->have_ind && k->have_launch) {
        /* The launch passes the signature's runtime arguments in order;
         * without the module, the TTIR's (Triton drops none at Inductor's
         * own launches when the counts agree). */
        int by_sig = k->nsig == k->nargs;
        if (!by_sig && k->nargs != t->nparams)
            return;
        for (size_t a = 0; a < k->nargs; a++) {
            const char *name = by_sig ? k->sig[a] : t->params[a].name;
            int i = param_index(t, name, strlen(name));
            if (i < 0)
                continue;
            if (k->is_int[a] || k->elems[a] >= 0) {
                x->model[i] = k->is_int[a] ? k->value[a] : k->elems[a];
                x->have_model[i] = 1;
                x->model_base[i] = k->is_int[a] ? NULL : k->base[a];
                x->model_arg[i] = k->arg[a];
            }
        }
        x->sizes_from = "launch";
        return;
    }
    if (!x->have_ind || !k->have_module)
        return;
    for (size_t i = 0; i < t->nparams; i++)
        if (is_int_param(&t->params[i]) && hint_for(k, t->params[i].name, &x->model[i])) {
            x->have_model[i] = 1;
            x->sizes_from = "hints";
        }
}

/* The -a value given for parameter name, or NULL. */
static const char *axis_given(const vyre_triton_spec_opts *o, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < o->naxes; i++)
        if (!strncmp(o->axes[i], name, len) && o->axes[i][len] == '=')
            return o->axes[i] + len + 1;
    return NULL;
}

/* "xnumel, r0_numel": the scalar parameters, for hints. */
static void scalar_names(const vyre__ttir *t, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < t->nparams && used < size; i++)
        if (is_int_param(&t->params[i]) || is_float_param(&t->params[i])) {
            int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", t->params[i].name);
            used += n > 0 ? (size_t)n : 0;
        }
    if (!buf[0])
        snprintf(buf, size, "none");
}

/* Every -a names a scalar parameter. */
static int check_axes(const vyre__triton_infer *x, vyre_error *err)
{
    for (size_t i = 0; i < x->o->naxes; i++) {
        const char *a = x->o->axes[i];
        size_t len = strcspn(a, "=");
        int p = param_index(&x->ttir, a, len);
        if (p >= 0 && a[len] == '=' &&
            (is_int_param(&x->ttir.params[p]) || is_float_param(&x->ttir.params[p])))
            continue;
        char names[512], hint[600];
        scalar_names(&x->ttir, names, sizeof names);
        snprintf(hint, sizeof hint,
                 "axes are the kernel's integer and float parameters (-a PARAM=VALUES): %s", names);
        return vyre__fail(err, VYRE_EINVAL, hint, "-a '%s': kernel '%s' has no such parameter", a,
                          x->g->name);
    }
    return VYRE_OK;
}

/* "axes": each scalar parameter, from -a, else the model's size. */
static int make_axes(vyre__triton_infer *x, json_t *axes, vyre_error *err)
{
    int rc = check_axes(x, err);
    if (rc)
        return rc;
    char missing[512] = "", example[128] = "";
    for (size_t i = 0; i < x->ttir.nparams; i++) {
        const vyre__ttir_param *p = &x->ttir.params[i];
        if (!is_int_param(p) && !is_float_param(p))
            continue;
        const char *given = axis_given(x->o, p->name);
        if (given)
            json_object_set_new(axes, p->name, json_string(given));
        else if (x->have_model[i])
            json_object_set_new(axes, p->name, json_pack("[I]", (json_int_t)x->model[i]));
        else {
            size_t used = strlen(missing);
            snprintf(missing + used, sizeof missing - used, "%s'%s'", used ? ", " : "", p->name);
            if (!example[0])
                snprintf(example, sizeof example, "-a %s=%s", p->name,
                         is_numel(p->name) ? "1M:64M:x4" : "VALUES");
        }
    }
    if (!missing[0])
        return VYRE_OK;
    char hint[400];
    snprintf(hint, sizeof hint, "pass the sizes to run it at, such as %s%s", example,
             x->have_ind ? ""
                         : ", or give TorchInductor's cache (--inductor-dir) for the sizes "
                           "the model used");
    return vyre__fail(err, VYRE_EINVAL, hint, "no size for %s of kernel '%s'", missing, x->g->name);
}

/* base: the product of the numel parameters ("xnumel*r0_numel"), and its
 * value at the model's sizes (*model, 0 when one is unknown). */
static void iteration_space(const vyre__triton_infer *x, char *base, size_t size, int64_t *model)
{
    size_t used = 0;
    base[0] = '\0';
    *model = 1;
    for (size_t i = 0; i < x->ttir.nparams; i++) {
        const vyre__ttir_param *p = &x->ttir.params[i];
        if (!is_int_param(p) || !is_numel(p->name))
            continue;
        int n = snprintf(base + used, size - used, "%s%s", used ? "*" : "", p->name);
        used += n > 0 ? (size_t)n : 0;
        if (!x->have_model[i] || __builtin_mul_overflow(*model, x->model[i], model))
            *model = 0;
    }
    if (!base[0])
        *model = 0;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The count of buffer i: the model's storage scaled with the iteration
 * space (exact at the model's sizes), else the iteration space. */
static void buffer_count(vyre__triton_infer *x, size_t i, const char *base, int64_t bmodel,
                         char *out, size_t size)
{
    const vyre__ttir_param *p = &x->ttir.params[i];
    if (x->have_model[i] && bmodel > 0 && x->model[i] > 0) {
        int64_t g = gcd64(x->model[i], bmodel), m = x->model[i] / g, b = bmodel / g;
        if (b == 1 && m == 1)
            snprintf(out, size, "%s", base);
        else if (b == 1)
            snprintf(out, size, "%" PRId64 "*%s", m, base);
        else if (m == 1)
            snprintf(out, size, "ceil(%s/%" PRId64 ")", base, b);
        else
            snprintf(out, size, "ceil(%" PRId64 "*%s/%" PRId64 ")", m, base, b);
        vyre__strbuf_addf(&x->notes, "buffer %s: %s, %s elements (the model's %s", p->name, p->type,
                          out, x->model_arg[i]);
        if (strcmp(x->model_arg[i], x->model_base[i]) != 0)
            vyre__strbuf_addf(&x->notes, ", %s's storage", x->model_base[i]);
        vyre__strbuf_addf(&x->notes, ": %" PRId64 " elements, scaled with %s)\n", x->model[i],
                          base);
        return;
    }
    snprintf(out, size, "%s", base);
    vyre__strbuf_addf(&x->notes,
                      "buffer %s: %s, %s elements (the iteration space; a kernel that reads a "
                      "wider tensor needs --buffer %s=COUNT)\n",
                      p->name, p->type, out, p->name);
}

/* The --buffer given for parameter name ("COUNT" or "COUNT:TYPE"). */
static const char *buffer_given(const vyre_triton_spec_opts *o, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < o->nbuffers; i++)
        if (!strncmp(o->buffers[i], name, len) && o->buffers[i][len] == '=')
            return o->buffers[i] + len + 1;
    return NULL;
}

static int check_buffers(const vyre__triton_infer *x, vyre_error *err)
{
    for (size_t i = 0; i < x->o->nbuffers; i++) {
        const char *b = x->o->buffers[i];
        size_t len = strcspn(b, "=");
        int p = param_index(&x->ttir, b, len);
        if (b[len] == '=' && b[len + 1] && p >= 0 && x->ttir.params[p].is_ptr)
            continue;
        return vyre__fail(err, VYRE_EINVAL,
                          "write --buffer PARAM=COUNT[:TYPE], PARAM a pointer parameter of the "
                          "kernel (in_ptr0, out_ptr0, ...), COUNT an expression of the axes",
                          "--buffer '%s': kernel '%s' has no such pointer parameter", b,
                          x->g->name);
    }
    return VYRE_OK;
}

static const char k_types[] = "f32, f16, bf16, f64, i8, i32, i64, u8";

/* A pointer parameter as a buffer: {"buffer": COUNT, "type": T, "fill"}. */
static int buffer_arg(vyre__triton_infer *x, size_t i, const char *base, int64_t bmodel,
                      json_t **out, vyre_error *err)
{
    const vyre__ttir_param *p = &x->ttir.params[i];
    const char *given = buffer_given(x->o, p->name), *type = buffer_type(p->type);
    char count[256], gtype[16] = "";
    if (given) {
        const char *colon = strrchr(given, ':');
        size_t n = colon ? (size_t)(colon - given) : strlen(given);
        snprintf(count, sizeof count, "%.*s", (int)n, given);
        if (colon)
            vyre__strlcpy(gtype, colon + 1, sizeof gtype);
        if (gtype[0])
            type = gtype;
    }
    if (!type) {
        char hint[256];
        snprintf(hint, sizeof hint,
                 "pass --buffer %s=COUNT:TYPE with a type of the same element size (%s)", p->name,
                 k_types);
        return vyre__fail(err, VYRE_EINVAL, hint,
                          "parameter '%s' of kernel '%s' points to '%s', which a spec cannot hold",
                          p->name, x->g->name, p->type);
    }
    if (given)
        vyre__strbuf_addf(&x->notes, "buffer %s: %s, %s elements (--buffer)\n", p->name, type,
                          count);
    else if (!base[0])
        return vyre__fail(err, VYRE_EINVAL,
                          "pass --buffer PARAM=COUNT for each pointer parameter (COUNT an "
                          "expression of the axes)",
                          "cannot size buffer '%s' of kernel '%s': it has no numel parameter",
                          p->name, x->g->name);
    else
        buffer_count(x, i, base, bmodel, count, sizeof count);
    int input = strncmp(p->name, "out_", 4) != 0;
    *out = input ? json_pack("{s:s, s:s, s:s}", "buffer", count, "type", type, "fill", "random")
                 : json_pack("{s:s, s:s}", "buffer", count, "type", type);
    return *out ? VYRE_OK : vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
}

/* A scalar parameter: {"int": NAME, "type"} or {"float": NAME, "type"}. */
static int scalar_arg(const vyre__triton_infer *x, const vyre__ttir_param *p, json_t **out,
                      vyre_error *err)
{
    if (is_int_param(p))
        *out = json_pack("{s:s, s:s}", "int", p->name, "type", p->type);
    else if (is_float_param(p))
        *out = json_pack("{s:s, s:s}", "float", p->name, "type", p->type);
    else
        return vyre__fail(err, VYRE_EINVAL,
                          "write the spec by hand for this kernel (--spec FILE; examples/bench/ "
                          "has Triton kernels' specs), passing it as an int or float of its size",
                          "parameter '%s' of kernel '%s' has type '%s', which a spec cannot pass "
                          "(i32, i64, f32, f64)",
                          p->name, x->g->name, p->type);
    return *out ? VYRE_OK : vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory");
}

/* One grid dimension: "ceil(xnumel/512)", or "xnumel" for a block of 1. */
static void grid_dim(const char *numel, int64_t block, char *out, size_t size)
{
    if (block == 1)
        snprintf(out, size, "%s", numel);
    else
        snprintf(out, size, "ceil(%s/%" PRId64 ")", numel, block);
}

static int grid_fail(const vyre__triton_infer *x, const char *why, vyre_error *err)
{
    return vyre__fail(err, VYRE_EINVAL,
                      "pass --grid EXPR: the programs to launch, an expression of the axes "
                      "(such as ceil(xnumel/1024)), or three as EXPR,EXPR,EXPR",
                      "cannot infer the grid of kernel '%s': %s", x->g->name, why);
}

/* The grid TorchInductor launches: one program per block of each numel
 * axis the kernel reads its program id in (x, y, z). *dims into d. */
static int infer_grid(vyre__triton_infer *x, char d[3][96], int *ndims, vyre_error *err)
{
    const vyre__inductor_kernel *k = &x->ind;
    const char *gt = x->have_ind && k->have_module ? k->grid_type : "";
    if (gt[0] && strcmp(gt, "Grid1D") && strcmp(gt, "Grid2D") && strcmp(gt, "Grid3D")) {
        char why[128];
        snprintf(why, sizeof why, "TorchInductor launches it with a %s grid", gt);
        return grid_fail(x, why, err);
    }
    int best = x->have_ind && k->best_key >= 0;
    const int64_t bblock[3] = {k->xblock, k->yblock, k->zblock};
    static const char *const numel[3] = {"xnumel", "ynumel", "znumel"};
    *ndims = 0;
    vyre__strbuf how = VYRE__STRBUF_INIT;
    for (int a = 0; a < 3; a++) {
        int has = param_index(&x->ttir, numel[a], 6) >= 0;
        if (!x->ttir.block[a] && !(a == 0 && has))
            continue;
        if (!has || *ndims != a) {
            vyre__strbuf_release(&how);
            char why[160];
            snprintf(why, sizeof why,
                     "it reads program id %c but has no %s parameter "
                     "(not TorchInductor's naming)",
                     "xyz"[a], numel[a]);
            return grid_fail(x, why, err);
        }
        int from_best = best && bblock[a] > 0;
        int64_t b = from_best ? bblock[a] : x->ttir.block[a] ? x->ttir.block[a] : 1;
        grid_dim(numel[a], b, d[a], sizeof d[a]);
        vyre__strbuf_addf(&how, "%s%cBLOCK %" PRId64 " from %s", a ? ", " : "", "XYZ"[a], b,
                          from_best ? "the autotuning's .best_config" : "the TTIR");
        (*ndims)++;
    }
    if (!*ndims) {
        vyre__strbuf_release(&how);
        return grid_fail(x, "it has no xnumel parameter (not TorchInductor's naming)", err);
    }
    vyre__strbuf_addf(&x->notes, "grid: ");
    for (int a = 0; a < *ndims; a++)
        vyre__strbuf_addf(&x->notes, "%s%s", a ? " x " : "", d[a]);
    vyre__strbuf_addf(&x->notes, " programs (%s, %s", gt[0] ? gt : "the program ids the TTIR reads",
                      how.buf);
    for (size_t i = 0; i < x->ttir.nparams; i++)
        if (x->ttir.params[i].name[0] == 'r' && is_numel(x->ttir.params[i].name))
            vyre__strbuf_addf(&x->notes, "; %s is reduced within each program",
                              x->ttir.params[i].name);
    vyre__strbuf_addf(&x->notes, ")\n");
    vyre__strbuf_release(&how);
    return VYRE_OK;
}

/* "grid" into root, and the count of programs as an expression. */
static int make_grid(vyre__triton_infer *x, json_t *root, char *programs, size_t size,
                     vyre_error *err)
{
    char d[3][96];
    int nd = 0;
    if (x->o->grid) {
        vyre__strbuf_addf(&x->notes, "grid: %s programs (--grid)\n", x->o->grid);
        char buf[3][96];
        const char *s = x->o->grid;
        while (nd < 3 && *s) {
            size_t n = strcspn(s, ",");
            snprintf(buf[nd++], sizeof buf[0], "%.*s", (int)n, s);
            s += n + (s[n] == ',');
        }
        memcpy(d, buf, sizeof d);
    } else {
        int rc = infer_grid(x, d, &nd, err);
        if (rc)
            return rc;
    }
    json_t *g = nd == 1 ? json_string(d[0]) : json_array();
    size_t used = 0;
    programs[0] = '\0';
    for (int a = 0; a < nd; a++) {
        if (nd > 1)
            json_array_append_new(g, json_string(d[a]));
        int n = snprintf(programs + used, size - used, "%s(%s)", a ? "*" : "", d[a]);
        used += n > 0 ? (size_t)n : 0;
    }
    json_object_set_new(root, "grid", g);
    return VYRE_OK;
}

/* Triton's trailing scratch pointers: null, or programs * size bytes. */
static void scratch_args(vyre__triton_infer *x, json_t *args, const char *programs)
{
    const int64_t sizes[2] = {x->meta.global_scratch_size, x->meta.profile_scratch_size};
    for (int i = 0; i < x->scratch_args; i++) {
        if (sizes[i] <= 0) {
            json_array_append_new(args, json_pack("{s:b}", "null", 1));
            continue;
        }
        char count[256];
        snprintf(count, sizeof count, "%s*%" PRId64, programs, sizes[i]);
        json_array_append_new(args, json_pack("{s:s, s:s}", "buffer", count, "type", "u8"));
    }
}

/* The parameters' note: the TTIR's and the scratch pointers. */
static void note_params(vyre__triton_infer *x)
{
    const int64_t sizes[2] = {x->meta.global_scratch_size, x->meta.profile_scratch_size};
    static const char *const names[2] = {"global_scratch_size", "profile_scratch_size"};
    vyre__strbuf_addf(&x->notes, "parameters: %zu from the TTIR", x->ttir.nparams);
    if (x->scratch_args)
        vyre__strbuf_addf(&x->notes, ", then Triton's %d scratch pointer%s", x->scratch_args,
                          x->scratch_args == 1 ? "" : "s");
    for (int i = 0; i < x->scratch_args; i++)
        vyre__strbuf_addf(&x->notes, "%s%s %" PRId64 ": %s", i ? ", " : " (", names[i], sizes[i],
                          sizes[i] > 0 ? "allocated, that many bytes a program" : "null");
    vyre__strbuf_addf(&x->notes, "%s\n", x->scratch_args ? ")" : "");
}

/* "block" and "shared" from the metadata, "cooperative" and "pdl" as it
 * says Triton launches the kernel; a cluster, which a spec cannot launch,
 * is refused. */
static int make_launch(vyre__triton_infer *x, json_t *root, vyre_error *err)
{
    const vyre__triton_launch_meta *m = &x->meta;
    if (m->num_ctas > 1)
        return vyre__fail(err, VYRE_EINVAL,
                          "benchmark it through Triton (triton.testing.do_bench) for now",
                          "group '%s' of kernel '%s' launches with a cluster of CTAs "
                          "(num_ctas > 1), which a spec cannot launch yet",
                          x->g->key, x->g->name);
    int64_t block = m->num_warps * m->warp_size;
    json_object_set_new(root, "block", json_integer((json_int_t)block));
    json_object_set_new(root, "shared", json_integer((json_int_t)m->shared));
    vyre__strbuf_addf(&x->notes,
                      "block: %" PRId64 " threads (num_warps %" PRId64 " x warp size %" PRId64
                      "); dynamic shared memory %" PRId64 " bytes (the metadata's shared)\n",
                      block, m->num_warps, m->warp_size, m->shared);
    if (m->cooperative)
        json_object_set_new(root, "cooperative", json_true());
    if (m->pdl)
        json_object_set_new(root, "pdl", json_true());
    if (m->cooperative || m->pdl)
        vyre__strbuf_addf(&x->notes, "launch: %s%s%s, as Triton launches it (cuLaunchKernelEx)\n",
                          m->cooperative ? "a cooperative grid (launch_cooperative_grid)" : "",
                          m->cooperative && m->pdl ? " and " : "",
                          m->pdl ? "programmatic dependent launch (launch_pdl)" : "");
    return VYRE_OK;
}

/* The sizes' note: where the axes came from. */
static void note_sizes(vyre__triton_infer *x, json_t *axes)
{
    const vyre__inductor_kernel *k = &x->ind;
    vyre__strbuf_addf(&x->notes, "sizes:");
    const char *key;
    json_t *v;
    json_object_foreach(axes, key, v)
    {
        if (json_is_string(v))
            vyre__strbuf_addf(&x->notes, " %s=%s (-a)", key, json_string_value(v));
        else
            vyre__strbuf_addf(&x->notes, " %s=%" JSON_INTEGER_FORMAT, key,
                              json_integer_value(json_array_get(v, 0)));
    }
    if (x->sizes_from && !strcmp(x->sizes_from, "launch"))
        vyre__strbuf_addf(&x->notes, "; the model's launch at %s:%d%s", k->launch_file,
                          k->launch_line, k->nlaunches > 1 ? " (the first of its launches)" : "");
    else if (x->sizes_from)
        vyre__strbuf_addf(&x->notes,
                          "; TorchInductor's size hints in %s (powers of two "
                          "at least the model's sizes)",
                          k->module_file);
    vyre__strbuf_addf(&x->notes, "\n");
}

int vyre__triton_infer_spec(vyre__triton_infer *x, json_t *root, vyre_error *err)
{
    json_t *axes = json_object(), *args = json_array();
    json_object_set_new(root, "axes", axes);
    json_object_set_new(root, "args", args);
    note_params(x);
    int rc = make_axes(x, axes, err);
    if (!rc)
        rc = check_buffers(x, err);
    if (rc)
        return rc;
    note_sizes(x, axes);
    char base[256], programs[400];
    int64_t bmodel;
    iteration_space(x, base, sizeof base, &bmodel);
    /* The grid first (its member follows "args" all the same): a kernel
     * not named as TorchInductor names them fails there, not on a buffer. */
    vyre__strbuf later = VYRE__STRBUF_INIT;
    vyre__strbuf notes = x->notes;
    x->notes = later;
    rc = make_grid(x, root, programs, sizeof programs, err);
    later = x->notes;
    x->notes = notes;
    for (size_t i = 0; i < x->ttir.nparams && !rc; i++) {
        json_t *a = NULL;
        rc = x->ttir.params[i].is_ptr ? buffer_arg(x, i, base, bmodel, &a, err)
                                      : scalar_arg(x, &x->ttir.params[i], &a, err);
        if (!rc)
            json_array_append_new(args, a);
    }
    vyre__strbuf_add(&x->notes, later.buf, later.len);
    vyre__strbuf_release(&later);
    if (!rc)
        scratch_args(x, args, programs);
    if (!rc)
        rc = make_launch(x, root, err);
    return rc;
}
