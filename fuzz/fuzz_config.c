/*
 * fuzz_config.c - libFuzzer target for the cache configuration parser
 * (libcore/src/cache/config.c): the "key = value" text of a vyre.conf,
 * which in a shared cache another member of the group may have written.
 *
 * Each input is parsed as a whole file, and its first line is also given
 * as one -o override. Invariants checked:
 *   - no crash, no read past the text (ASan), no undefined behaviour (UBSan);
 *   - a reject is VYRE_ECONFIG (VYRE_EINVAL never: the arguments are sound)
 *     with a message naming the file and the 1-based line it stopped at,
 *     and a value set before the bad line stays set;
 *   - every value accepted formats (vyre_config_format_value) to text that
 *     vyre__config_set reads back to the same value, and says where it came
 *     from (the file and a line within the input);
 *   - ranges hold: umask -1 or 0..0777, read_only 0 or 1, ages >= 0;
 *     a umask accepted keeps the owner's rwx and denies others write;
 *   - an unknown key is a warning (is_error 0) naming the file and a line
 *     within the input, never a reject (issue 22).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/config_internal.h"
#include "vyre/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FILE_NAME "fuzz/vyre.conf"

static unsigned count_lines(const uint8_t *data, size_t size)
{
    unsigned n = 1;
    for (size_t i = 0; i < size; i++)
        n += data[i] == '\n';
    return n;
}

static void check_roundtrip(const vyre_config *c, unsigned max_line)
{
    if (c->umask < -1 || c->umask > 0777 || (c->read_only != 0 && c->read_only != 1) ||
        c->max_age_ns < 0 || c->quarantine_max_age_ns < 0)
        abort();
    if (c->umask >= 0 && ((c->umask & 0700) || !(c->umask & 0002)))
        abort(); /* a umask that locks the owner out or lets others write */
    for (int k = 0; k < VYRE_CONF_N_KEYS; k++) {
        char text[VYRE_CONFIG_LONG_VALUE_MAX];
        vyre_config_format_value(c, k, text, sizeof text);
        if (c->where[k].origin == VYRE_CONF_FROM_CACHE_FILE &&
            (c->where[k].line == 0 || c->where[k].line > max_line ||
             strcmp(c->where[k].file, FILE_NAME) != 0))
            abort();
        if (k == VYRE_CONF_UMASK && c->umask < 0)
            continue; /* "unset" is not a value one can set */
        if (k == VYRE_CONF_REMOTE_STORAGE)
            continue; /* shown with passwords masked: checked by fuzz_remote_spec */
        vyre_config back;
        vyre__config_init(&back);
        vyre_error err;
        vyre_error_clear(&err);
        if (vyre__config_set(&back, vyre_config_key_name(k), text, VYRE_CONF_FROM_OVERRIDE, "-o", 0,
                             &err) != 0) {
            fprintf(stderr, "%s = '%s' does not read back: %s\n", vyre_config_key_name(k), text,
                    err.message);
            abort();
        }
        int same = 1;
        switch (k) {
        case VYRE_CONF_MAX_SIZE:
            same = back.max_size == c->max_size;
            break;
        case VYRE_CONF_MAX_AGE:
            same = back.max_age_ns == c->max_age_ns;
            break;
        case VYRE_CONF_QUARANTINE_MAX_AGE:
            same = back.quarantine_max_age_ns == c->quarantine_max_age_ns;
            break;
        case VYRE_CONF_UMASK:
            same = back.umask == c->umask;
            break;
        case VYRE_CONF_READ_ONLY:
            same = back.read_only == c->read_only;
            break;
        }
        if (!same) {
            fprintf(stderr, "%s = '%s' reads back to another value\n", vyre_config_key_name(k),
                    text);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > VYRE_CONFIG_MAX_FILE)
        return 0;
    /* The parser takes a length: give it an exact-size heap copy, so that
     * ASan catches any read past the end. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    if (size)
        memcpy(text, data, size);
    vyre_config c;
    vyre__config_init(&c);
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre__config_parse(&c, text, size, VYRE_CONF_FROM_CACHE_FILE, FILE_NAME, &err);
    unsigned lines = count_lines(data, size);
    if (rc != 0) {
        if (rc != VYRE_ECONFIG || err.code != VYRE_ECONFIG ||
            strncmp(err.message, FILE_NAME ":", strlen(FILE_NAME ":")) != 0) {
            fprintf(stderr, "bad reject %d: %s\n", rc, err.message);
            abort();
        }
        unsigned at = (unsigned)strtoul(err.message + strlen(FILE_NAME ":"), NULL, 10);
        if (at == 0 || at > lines)
            abort();
    }
    check_roundtrip(&c, lines);
    size_t kept = c.n_problems < VYRE_CONFIG_MAX_PROBLEMS ? c.n_problems : VYRE_CONFIG_MAX_PROBLEMS;
    for (size_t i = 0; i < kept; i++) {
        const char *m = c.problems[i].error.message;
        if (c.problems[i].is_error || strncmp(m, FILE_NAME ":", strlen(FILE_NAME ":")) != 0)
            abort();
        unsigned at = (unsigned)strtoul(m + strlen(FILE_NAME ":"), NULL, 10);
        if (at == 0 || at > lines)
            abort();
    }

    /* The first line as -o key=value. */
    size_t n = 0;
    while (n < size && data[n] != '\n' && data[n] != '\0')
        n++;
    char *o = malloc(n + 1);
    if (o) {
        memcpy(o, data, n);
        o[n] = '\0';
        const char *ov[1] = {o};
        vyre_config d;
        vyre_error_clear(&err);
        /* No files here: a cache root that does not exist, no user file. */
        setenv("XDG_CONFIG_HOME", "/nonexistent/vyre-fuzz", 1);
        rc = vyre_config_load(&d, "/nonexistent/vyre-fuzz-cache", ov, 1, 0, &err);
        if (rc != 0 && rc != VYRE_ECONFIG)
            abort();
        if (rc == 0)
            check_roundtrip(&d, 1);
        free(o);
    }
    free(text);
    return 0;
}
