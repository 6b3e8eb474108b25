/*
 * inductor_names.c - the names TorchInductor gives what it writes
 * (inductor_internal.h), so that only those count as its entries.
 *
 * torch/_inductor/codecache.py names a generated kernel by its source:
 * code_hash() is "c" followed by the first 51 characters of the base32
 * (RFC 4648, lowercase) SHA-256 of the code, and get_path() writes it as
 * <key[1:3]>/<key>.py, the folder named by the key's 2nd and 3rd
 * characters. An autotune result sits beside its kernel: <hash>.best_config
 * where hash is a SHA-256 in hex (autotune_cache.py), or the kernel's own
 * key in older releases. FX graph entries are fxgraph/<key[1:3]>/<key>/
 * with key "f" + 51 base32 characters, AOTAutograd entries
 * aotautograd/<key>/ with "a" + 51. Anything else in those places was not
 * written by Inductor: it is foreign, listed and reported, never removed.
 */
#include <string.h>

#include "cache/foreign/inductor_internal.h"

/* The base32 characters of one of Inductor's keys after the prefix. */
#define KEY_B32_LEN 51
#define HEX_LEN     64

static int is_b32(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '2' && ch <= '7');
}

static int is_hex(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

/* 1 when name[0..len) is `prefix` then 51 base32 characters. */
static int is_key(const char *name, size_t len, char prefix)
{
    if (len != 1 + KEY_B32_LEN || name[0] != prefix)
        return 0;
    for (size_t i = 1; i < len; i++)
        if (!is_b32(name[i]))
            return 0;
    return 1;
}

/* 1 when key belongs in the folder `bucket`: its 2nd and 3rd characters. */
static int in_its_bucket(const char *bucket, const char *key)
{
    return strlen(bucket) == 2 && bucket[0] == key[1] && bucket[1] == key[2];
}

/* The length of name without `suffix`, or 0 when it does not end so. */
static size_t stem(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n > s && !strcmp(name + n - s, suffix) ? n - s : 0;
}

int vyre__inductor_is_kernel_name(const char *bucket, const char *name)
{
    size_t len = stem(name, ".py");
    return len && is_key(name, len, 'c') && in_its_bucket(bucket, name);
}

int vyre__inductor_is_autotune_name(const char *bucket, const char *name)
{
    size_t len = stem(name, ".best_config");
    if (!len || strlen(bucket) != 2 || !is_b32(bucket[0]) || !is_b32(bucket[1]))
        return 0;
    if (is_key(name, len, 'c'))
        return in_its_bucket(bucket, name);
    if (len != HEX_LEN)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!is_hex(name[i]))
            return 0;
    return 1;
}

int vyre__inductor_is_fxgraph_key(const char *bucket, const char *name)
{
    return is_key(name, strlen(name), 'f') && in_its_bucket(bucket, name);
}

int vyre__inductor_is_aot_key(const char *name)
{
    return is_key(name, strlen(name), 'a');
}

int vyre__inductor_looks_like_entry(const char *name)
{
    return stem(name, ".py") || stem(name, ".best_config");
}
