/*
 * ptxinfo.c - the PTX facts a sweep needs (see bench/ptxinfo.h): .target,
 * an entry's parameters and its .reqntid/.maxntid, and the choice of the
 * architecture to compile for.
 *
 * The reader is a tolerant scanner, not a PTX parser: it skips comments
 * and looks only at the directives it names, so PTX it does not
 * understand yields "unknown" (empty fields), never an error; nvJitLink
 * remains the judge of the PTX itself.
 */
#include "bench/ptxinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

typedef struct scan {
    const char *p, *end;
} scan;

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_ident(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '.' || c == '%';
}

/* Skips white space and comments. */
static void skip(scan *s)
{
    for (;;) {
        while (s->p < s->end && is_space(*s->p))
            s->p++;
        if (s->end - s->p >= 2 && s->p[0] == '/' && s->p[1] == '/') {
            while (s->p < s->end && *s->p != '\n')
                s->p++;
            continue;
        }
        if (s->end - s->p >= 2 && s->p[0] == '/' && s->p[1] == '*') {
            s->p += 2;
            while (s->end - s->p >= 2 && !(s->p[0] == '*' && s->p[1] == '/'))
                s->p++;
            s->p = s->end - s->p >= 2 ? s->p + 2 : s->end;
            continue;
        }
        return;
    }
}

/* The next token (an identifier-like run, or one other character) into
 * buf; "" at the end. */
static void token(scan *s, char *buf, size_t size)
{
    skip(s);
    size_t n = 0;
    if (s->p < s->end && is_ident(*s->p)) {
        while (s->p < s->end && is_ident(*s->p)) {
            if (n + 1 < size)
                buf[n++] = *s->p;
            s->p++;
        }
    } else if (s->p < s->end) {
        buf[n++] = *s->p++;
    }
    buf[n] = '\0';
}

static unsigned type_bytes(const char *t)
{
    static const struct {
        const char *name;
        unsigned bytes;
    } types[] = {
        {".u8", 1},  {".s8", 1},  {".b8", 1},  {".u16", 2}, {".s16", 2},
        {".b16", 2}, {".f16", 2}, {".u32", 4}, {".s32", 4}, {".b32", 4},
        {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t, types[i].name) == 0)
            return types[i].bytes;
    return 0;
}

/* "128, 1, 1" / "128" after .reqntid or .maxntid. */
static void read_dims(scan *s, unsigned dims[3])
{
    dims[0] = dims[1] = dims[2] = 1;
    for (int d = 0; d < 3; d++) {
        char tok[32];
        token(s, tok, sizeof tok);
        dims[d] = (unsigned)strtoul(tok, NULL, 10);
        const char *save = s->p;
        char sep[4];
        token(s, sep, sizeof sep);
        if (strcmp(sep, ",") != 0) {
            s->p = save;
            for (int k = d + 1; k < 3; k++)
                dims[k] = 1;
            return;
        }
    }
}

/* Reads "( .param ... , ... )" and the directives up to '{'. */
static void read_entry(scan *s, vyre__ptx_info *out)
{
    char tok[256];
    token(s, tok, sizeof tok);
    if (strcmp(tok, "(") == 0) {
        for (;;) {
            token(s, tok, sizeof tok);
            if (!tok[0] || strcmp(tok, ")") == 0)
                break;
            if (strcmp(tok, ".param") != 0)
                continue;
            unsigned bytes = 0, count = 1;
            char type[8] = "";
            for (;;) {
                const char *save = s->p;
                token(s, tok, sizeof tok);
                if (!tok[0] || strcmp(tok, ",") == 0)
                    break;
                if (strcmp(tok, ")") == 0) {
                    s->p = save;
                    break;
                }
                if (strcmp(tok, ".align") == 0) {
                    token(s, tok, sizeof tok); /* the alignment */
                } else if (strcmp(tok, "[") == 0) {
                    token(s, tok, sizeof tok);
                    count = (unsigned)strtoul(tok, NULL, 10);
                } else if (!bytes && type_bytes(tok)) {
                    bytes = type_bytes(tok);
                    vyre__strlcpy(type, tok, sizeof type);
                }
            }
            if (out->nparams < VYRE__PTX_PARAMS_MAX) {
                out->param_bytes[out->nparams] = bytes * (count ? count : 1);
                vyre__strlcpy(out->param_type[out->nparams], type, sizeof out->param_type[0]);
            }
            out->nparams++;
        }
    }
    for (;;) {
        token(s, tok, sizeof tok);
        if (!tok[0] || strcmp(tok, "{") == 0 || strcmp(tok, ";") == 0)
            return;
        if (strcmp(tok, ".reqntid") == 0)
            read_dims(s, out->reqntid);
        else if (strcmp(tok, ".maxntid") == 0)
            read_dims(s, out->maxntid);
    }
}

void vyre__ptx_info_read(const char *ptx, size_t len, const char *entry, vyre__ptx_info *out)
{
    memset(out, 0, sizeof *out);
    if (!ptx)
        return;
    scan s = {ptx, ptx + len};
    char tok[256];
    for (;;) {
        token(&s, tok, sizeof tok);
        if (!tok[0])
            return;
        if (strcmp(tok, ".target") == 0 && !out->target[0]) {
            token(&s, tok, sizeof tok);
            vyre__strlcpy(out->target, tok, sizeof out->target);
        } else if (strcmp(tok, ".entry") == 0 && entry && !out->found) {
            token(&s, tok, sizeof tok);
            if (strcmp(tok, entry) == 0) {
                out->found = 1;
                read_entry(&s, out);
                if (out->nparams > VYRE__PTX_PARAMS_MAX)
                    out->nparams = VYRE__PTX_PARAMS_MAX;
            }
        }
    }
}

size_t vyre__ptx_entries(const char *ptx, size_t len, char *buf, size_t size)
{
    size_t count = 0, used = 0;
    if (size)
        buf[0] = '\0';
    if (!ptx)
        return 0;
    scan s = {ptx, ptx + len};
    char tok[256];
    for (;;) {
        token(&s, tok, sizeof tok);
        if (!tok[0])
            return count;
        if (strcmp(tok, ".entry") != 0)
            continue;
        token(&s, tok, sizeof tok);
        if (!tok[0])
            return count;
        int k = snprintf(buf + used, size > used ? size - used : 0, "%s%s", count ? ", " : "", tok);
        if (k > 0 && used + (size_t)k < size)
            used += (size_t)k;
        count++;
    }
}

static const char g_arch_hint[] =
    "write an architecture such as sm_90, sm_90a (Hopper-specific, Triton's) or sm_100f";

int vyre__arch_split(const char *arch, int *major, int *minor, char *suffix, vyre_error *err)
{
    const char *p = arch && strncmp(arch, "sm_", 3) == 0 ? arch + 3 : NULL;
    size_t nd = 0;
    while (p && p[nd] >= '0' && p[nd] <= '9')
        nd++;
    if (!p || nd < 2 || nd > 3 || p[0] == '0' ||
        !(p[nd] == '\0' || ((p[nd] == 'a' || p[nd] == 'f') && p[nd + 1] == '\0')))
        return vyre__fail(err, VYRE_EINVAL, g_arch_hint, "'%s' is not an architecture",
                          arch ? arch : "");
    int v = atoi(p);
    *major = v / 10;
    *minor = v % 10;
    *suffix = p[nd];
    return VYRE_OK;
}

/* A cubin for (X, Y, suffix) runs on compute capability (M, m). */
static int cubin_runs_on(int x, int y, char suf, int m_major, int m_minor)
{
    if (x != m_major)
        return 0;
    return suf == 'a' ? y == m_minor : y <= m_minor;
}

/* PTX with target (X, Y, tsuf) compiles for architecture (A, B, asuf). */
static int ptx_compiles_for(int x, int y, char tsuf, int a, int b, char asuf)
{
    if (tsuf == 'a')
        return x == a && y == b && asuf == 'a';
    if (tsuf == 'f')
        return x == a && y <= b && asuf != '\0';
    return a * 10 + b >= x * 10 + y;
}

int vyre__bench_choose_arch(const char *user_arch, const char *ptx_target, int dev_major,
                            int dev_minor, const char *fallback, char *out, size_t size,
                            const char **origin, vyre_error *err)
{
    int tx = 0, ty = 0, ax = 0, ay = 0;
    char ts = 0, as = 0;
    int have_target =
        ptx_target && ptx_target[0] && vyre__arch_split(ptx_target, &tx, &ty, &ts, NULL) == 0;
    char dev[16] = "";
    if (dev_major > 0)
        snprintf(dev, sizeof dev, "sm_%d%d", dev_major, dev_minor);
    if (user_arch) {
        int rc = vyre__arch_split(user_arch, &ax, &ay, &as, err);
        if (rc)
            return vyre__fail(err, rc, g_arch_hint, "bad --arch '%s'", user_arch);
        if (dev_major > 0 && !cubin_runs_on(ax, ay, as, dev_major, dev_minor))
            return vyre__fail(err, VYRE_EINVAL,
                              "leave --arch out to compile for the device, or run on a GPU of "
                              "that architecture",
                              "--arch %s cannot run on the device, %s (compute capability %d.%d)",
                              user_arch, dev, dev_major, dev_minor);
        if (have_target && !ptx_compiles_for(tx, ty, ts, ax, ay, as))
            return vyre__fail(err, VYRE_EINVAL,
                              ts == 'a' ? "arch-specific PTX compiles only for exactly its "
                                          "target: leave --arch out or regenerate the PTX"
                                        : "leave --arch out, or regenerate the PTX for that "
                                          "architecture",
                              "the PTX's .target %s cannot be compiled for --arch %s", ptx_target,
                              user_arch);
        vyre__strlcpy(out, user_arch, size);
        if (origin)
            *origin = "--arch";
        return VYRE_OK;
    }
    if (have_target) {
        if (dev_major <= 0) {
            vyre__strlcpy(out, ptx_target, size);
            if (origin)
                *origin = "the PTX's .target";
            return VYRE_OK;
        }
        if (ts != '\0' && cubin_runs_on(tx, ty, ts, dev_major, dev_minor)) {
            vyre__strlcpy(out, ptx_target, size);
            if (origin)
                *origin = "the PTX's .target";
            return VYRE_OK;
        }
        if (ts == '\0' && dev_major * 10 + dev_minor >= tx * 10 + ty) {
            vyre__strlcpy(out, dev, size);
            if (origin)
                *origin = "the device";
            return VYRE_OK;
        }
        return vyre__fail(
            err, VYRE_EINVAL,
            ts == 'a' ? "arch-specific PTX (Triton's sm_90a) runs only on exactly that compute "
                        "capability: regenerate it on this GPU, or run on one it was made for"
                      : "regenerate the PTX for this GPU, or run on a newer one",
            "the PTX's .target %s cannot run on the device, %s (compute capability %d.%d)",
            ptx_target, dev, dev_major, dev_minor);
    }
    if (dev_major > 0) {
        vyre__strlcpy(out, dev, size);
        if (origin)
            *origin = "the device";
        return VYRE_OK;
    }
    vyre__strlcpy(out, fallback ? fallback : "sm_90", size);
    if (origin)
        *origin = "the default";
    return VYRE_OK;
}
