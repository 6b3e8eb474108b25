/*
 * config_show.c - print vyre's cache configuration the way a program of
 * its own would read it, with nothing but libcore's public API.
 *
 *   config_show [CACHE_DIR] [KEY=VALUE...]
 *
 * Loads every layer (defaults, the user's vyre.conf, CACHE_DIR's vyre.conf
 * when given, the VYRE_CACHE_* environment, then KEY=VALUE overrides),
 * walks the keys by index and prints each one's typed value
 * (vyre_config_get_int or vyre_config_get_str), its value as vyre-cachectl
 * shows it and where it came from. Then the problems the load went past
 * (an unknown key is a warning) and, as a program that fixes its own
 * configuration would, the same load with max_size set in memory.
 *
 * vyre_config is opaque: a key added to a later libvyrecore changes
 * nothing here.
 *
 * Exit status: 0, or 2 when the configuration does not load (message and
 * hint on stderr).
 *
 * Build against an installed libvyrecore:
 *   cc config_show.c $(pkg-config --cflags --libs vyrecore) -o config_show
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <vyre/vyre.h>

#define PROG "config_show"

static int fail(const char *what, int rc, const vyre_error *err)
{
    fprintf(stderr, PROG ": error: %s: %s\n", what,
            err->message[0] ? err->message : vyre_strerror(rc));
    if (err->hint[0])
        fprintf(stderr, "hint: %s\n", err->hint);
    return 2;
}

static void print_key(const vyre_config *c, int k)
{
    char shown[VYRE_CONFIG_LONG_VALUE_MAX + 16], where[VYRE_CONFIG_WHERE_MAX + 32];
    vyre_config_format_value(c, k, shown, sizeof shown);
    vyre_config_format_where(c, k, where, sizeof where);
    const char *text = vyre_config_get_str(c, k);
    if (text) /* a text key: printed as vyre shows it, passwords masked */
        printf("%-20s %-24s (text, %zu bytes) from %s\n", vyre_config_key_name(k), shown,
               strlen(text), where);
    else
        printf("%-20s %-24s (%" PRId64 ") from %s\n", vyre_config_key_name(k), shown,
               vyre_config_get_int(c, k), where);
    const vyre_config_where *w = vyre_config_get_where(c, k);
    if (w->origin == VYRE_CONF_FROM_USER_FILE || w->origin == VYRE_CONF_FROM_CACHE_FILE)
        printf("%-20s written as '%s' on line %u of %s\n", "", w->text, w->line, w->file);
}

static void print_problems(const vyre_config *c)
{
    size_t shown = 0, n = 0;
    const vyre_config_problem *ps = vyre_config_problems(c, &shown, &n);
    for (size_t i = 0; i < shown; i++) {
        const vyre_config_problem *p = &ps[i];
        printf("%s: %s%s%s\n", p->is_error ? "error" : "warning", p->error.message,
               p->key >= 0 ? " (key " : "", p->key >= 0 ? vyre_config_key_name(p->key) : "");
    }
    if (n > shown)
        printf("... and %zu more problems\n", n - shown);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        printf("usage: " PROG " [CACHE_DIR] [KEY=VALUE...]\n");
        return 0;
    }
    const char *root = argc > 1 && !strchr(argv[1], '=') ? argv[1] : NULL;
    int first = root ? 2 : 1;
    vyre_error err;
    vyre_error_clear(&err);
    vyre_config *c = vyre_config_new();
    if (!c) {
        fprintf(stderr, PROG ": error: out of memory\n");
        return 2;
    }
    char user[4096];
    if (vyre_config_user_path(user, sizeof user, NULL) == VYRE_OK)
        printf("user file: %s\n", user);
    int rc = vyre_config_load(c, root, (const char *const *)argv + first, (size_t)(argc - first), 0,
                              &err);
    if (rc) {
        print_problems(c);
        vyre_config_free(c);
        return fail("cannot load the configuration", rc, &err);
    }
    for (int k = 0; vyre_config_key_name(k); k++)
        print_key(c, k);
    print_problems(c);

    /* A program that fixes a key itself: as "-o max_size=1G" would. */
    rc = vyre_config_set(c, "max_size", "1G", &err);
    if (rc == VYRE_OK)
        printf("set in memory: max_size = %" PRId64 " bytes (key %d)\n",
               vyre_config_get_int(c, vyre_config_key_find("max_size")),
               vyre_config_key_find("max_size"));
    vyre_config_free(c);
    return rc ? fail("cannot set max_size", rc, &err) : 0;
}
