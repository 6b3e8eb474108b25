/*
 * sweep_spec.c - the sweep spec parser (see vyre/axes.h): a JSON document
 * ({"kernel", "entry", "axes", ...}) read into a vyre_sweep_spec, from
 * text or a file; each axis through axes.c (vyre__axes_add_json). What
 * the rest of the spec means for a launch ("args", "grid", ...) is the
 * binding's (sweep_binding.c), read later from spec->json.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/internal.h"
#include "base/jsonutil.h"
#include "bench/axes_internal.h"
#include "vyre/axes.h"

const char vyre__sweep_spec_hint[] =
    "a sweep spec is an object such as {\"kernel\": \"saxpy.cu\", \"entry\": \"saxpy\", "
    "\"axes\": {\"N\": \"1K:64M:x4\", \"BLOCK\": [128, 256]}}";

static int json_opt_string(json_t *root, const char *key, char **out, const char *origin,
                           vyre_error *err)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return VYRE_OK;
    if (!json_is_string(v))
        return vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint,
                          "'%s': $.%s must be a string, not %s", origin, key, vyre__json_kind(v));
    if (json_string_length(v) == 0)
        return vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint, "'%s': $.%s is empty", origin,
                          key);
    *out = strdup(json_string_value(v));
    if (!*out)
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading '%s'", origin);
    return VYRE_OK;
}

int vyre__sweep_spec_parse(vyre_sweep_spec *spec, const char *text, const char *origin,
                           vyre_error *err)
{
    if (!spec || !text)
        return vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint, "missing sweep spec");
    if (!origin)
        origin = "spec";
    memset(spec, 0, sizeof *spec);
    vyre_axes_init(&spec->axes);
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return vyre__fail(err, VYRE_EINVAL,
                          "check the JSON syntax: a trailing comma, a missing quote or a "
                          "repeated key is the usual cause",
                          "'%s' is not valid JSON: %s (line %d, column %d)", origin, jerr.text,
                          jerr.line, jerr.column);
    int rc = VYRE_OK;
    if (!json_is_object(root))
        rc = vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint,
                        "'%s': $ must be an object, not %s", origin, vyre__json_kind(root));
    if (rc == 0)
        rc = json_opt_string(root, "kernel", &spec->kernel, origin, err);
    if (rc == 0)
        rc = json_opt_string(root, "entry", &spec->entry, origin, err);
    json_t *axes = rc == 0 ? json_object_get(root, "axes") : NULL;
    if (axes && !json_is_object(axes))
        rc = vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint,
                        "'%s': $.axes must be an object, not %s", origin, vyre__json_kind(axes));
    if (rc == 0 && axes) {
        const char *key;
        json_t *v;
        json_object_foreach(axes, key, v)
        {
            rc = vyre__axes_add_json(&spec->axes, key, v, origin, err);
            if (rc)
                break;
        }
    }
    if (rc == 0) {
        spec->json = json_dumps(root, JSON_COMPACT);
        if (spec->kernel)
            spec->kernel_path = strdup(spec->kernel);
        if (!spec->json || (spec->kernel && !spec->kernel_path))
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading '%s'", origin);
    }
    json_decref(root);
    if (rc)
        vyre_sweep_spec_release(spec);
    return rc;
}

/* Spec files are small; this bounds what a mistaken path can make us read. */
#define SPEC_MAX_BYTES (16u << 20)

int vyre_sweep_spec_load(vyre_sweep_spec *spec, const char *path, vyre_error *err)
{
    if (!spec || !path)
        return vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint, "missing sweep spec path");
    char *buf = NULL;
    size_t len = 0;
    int rc = vyre__read_file(path, SPEC_MAX_BYTES - 1, &buf, &len, err);
    if (rc == VYRE_ETOOBIG)
        return vyre__fail(err, rc, "a sweep spec is a small JSON file",
                          "spec '%s' is larger than 16 MiB", path);
    if (rc && rc != VYRE_ENOMEM && rc != VYRE_EINVAL) { /* EINVAL: not a regular file, said */
        int e = errno;
        return vyre__fail(err, rc, "check the path of the spec file", "cannot read spec '%s': %s",
                          path, strerror(e));
    }
    if (rc)
        return rc;
    if (strlen(buf) != len) {
        free(buf);
        return vyre__fail(err, VYRE_EINVAL, vyre__sweep_spec_hint, "spec '%s' contains a NUL byte",
                          path);
    }
    rc = vyre__sweep_spec_parse(spec, buf, path, err);
    free(buf);
    if (rc || !spec->kernel || spec->kernel[0] == '/')
        return rc;
    const char *slash = strrchr(path, '/');
    if (!slash)
        return VYRE_OK;
    size_t dlen = (size_t)(slash - path) + 1;
    size_t klen = strlen(spec->kernel);
    char *joined = malloc(dlen + klen + 1);
    if (!joined) {
        vyre_sweep_spec_release(spec);
        return vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory reading '%s'", path);
    }
    memcpy(joined, path, dlen);
    memcpy(joined + dlen, spec->kernel, klen + 1);
    free(spec->kernel_path);
    spec->kernel_path = joined;
    return VYRE_OK;
}

void vyre_sweep_spec_release(vyre_sweep_spec *spec)
{
    if (!spec)
        return;
    free(spec->kernel);
    free(spec->kernel_path);
    free(spec->entry);
    free(spec->json);
    vyre_axes_release(&spec->axes);
    spec->kernel = spec->kernel_path = spec->entry = spec->json = NULL;
}
