/*
 * vyre/config.h - the pipeline cache's configuration (ccache-like).
 *
 * This header is part of libvyrecore's public API.
 *
 * Layers, lowest first; each key takes the value of the highest layer that
 * sets it:
 *   1. built-in defaults
 *   2. the user's file, $XDG_CONFIG_HOME/vyre/vyre.conf (default
 *      ~/.config/vyre/vyre.conf)
 *   3. the cache's own file, <cache dir>/vyre.conf: it wins over the user's,
 *      so a cache shared by a group carries its settings with it
 *   4. environment variables VYRE_CACHE_<KEY> (VYRE_CACHE_MAX_SIZE, ...;
 *      remote_storage's is VYRE_REMOTE_CACHE)
 *   5. overrides "key=value" (vyre-cachectl -o key=value)
 *
 * File format: one "key = value" per line; blank lines and lines whose first
 * non-blank character is '#' are ignored; no quoting, no inline comments.
 * An unknown key in a file is a warning (vyre_config_problems, naming the
 * file and line, with the nearest key as a hint) and the line is ignored,
 * so that a typo never locks anybody out; a bad value of a known key is
 * VYRE_ECONFIG naming the file and line. libcore prints neither: the
 * caller shows the problems.
 *
 * Trust follows ownership: remote_storage (it makes the tool send blobs,
 * and its token-file= and ca-file= attributes read the user's files) is
 * taken from a file only when the user running or root owns that file.
 * In a file owned by anybody else it is refused, whatever its value
 * (VYRE_EUNSAFE naming the file and its owner): a member of a group cache
 * who writes the cache's vyre.conf must not make the other members send
 * their tokens to a server of his choosing. The environment and -o are
 * the user's own and always trusted.
 *
 * Keys:
 *   max_size            cache size limit; a put that takes the cache over it
 *                       cleans up to 90% of it, least recently used first.
 *                       Sizes as vyre_parse_cache_size: a size without a
 *                       unit is GiB, as in ccache (10 = 10G; 5G, 500M,
 *                       1.5GiB, 17B); 0: no limit. Default 5 GiB (ccache's
 *                       default).
 *   max_age             automatic cleanup also removes blobs unused for
 *                       longer (30d, 12h); 0: off (default).
 *   umask               octal (002, 022, 077) applied to files and
 *                       directories the cache creates; unset by default.
 *                       It must keep the owner's rwx and deny others write
 *                       (group write is allowed, for a group's cache):
 *                       000, 020 or 0777 are bad values wherever written.
 *   read_only           true/false: puts and prunes are refused (gets work).
 *   quarantine_max_age  quarantined files older than this are removed by
 *                       prune and by automatic cleanup; 0: kept. Default 7d.
 *   remote_storage      remote stores shared by a fleet (vyre/remote.h):
 *                       URLs separated by blanks, each with '|'-separated
 *                       attributes, checked with vyre_remote_list_parse (a
 *                       bad list is VYRE_ECONFIG naming the file and line,
 *                       the variable or -o). Its environment variable is
 *                       VYRE_REMOTE_CACHE (not VYRE_CACHE_REMOTE_STORAGE);
 *                       an empty value means none. Shown with passwords
 *                       masked. vyre_cache_open uses the stores of the
 *                       configuration in force. Default: none.
 *   triton_max_size     the size Triton's kernel cache (vyre/triton.h) is
 *                       pruned to when asked to apply the configuration
 *                       (whole groups, least recently used first); sizes
 *                       as max_size. Triton itself never evicts. Default 0:
 *                       no limit. VYRE_CACHE_TRITON_MAX_SIZE.
 *   inductor_max_size   the same for TorchInductor's cache (vyre/inductor.h).
 *                       Default 0: no limit. VYRE_CACHE_INDUCTOR_MAX_SIZE.
 *   results_db          where benchmark results go (vyre/results.h): an
 *                       absolute path or a postgresql:// URL. Its
 *                       environment variable is VYRE_RESULTS_DB. Like
 *                       remote_storage it is taken from a file only when
 *                       the user or root owns it: it makes the tool send
 *                       the user's password (.pgpass, password-file=) to
 *                       the server it names. Shown with its password
 *                       masked. Default: the local file.
 */
#ifndef VYRE_CONFIG_H
#define VYRE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VYRE_CONFIG_FILE_NAME                     "vyre.conf"
#define VYRE_CONFIG_MAX_FILE                      (64 * 1024) /* larger files are refused */
#define VYRE_CONFIG_WHERE_MAX                     1024
#define VYRE_CONFIG_VALUE_MAX                     128
#define VYRE_CONFIG_LONG_VALUE_MAX                4096 /* remote_storage's value, at most */
#define VYRE_CONFIG_DEFAULT_MAX_SIZE              (UINT64_C(5) << 30)
#define VYRE_CONFIG_DEFAULT_QUARANTINE_MAX_AGE_NS (INT64_C(7) * 86400 * 1000000000)

typedef enum vyre_config_key {
    VYRE_CONF_MAX_SIZE = 0,
    VYRE_CONF_MAX_AGE,
    VYRE_CONF_UMASK,
    VYRE_CONF_READ_ONLY,
    VYRE_CONF_QUARANTINE_MAX_AGE,
    VYRE_CONF_REMOTE_STORAGE,
    VYRE_CONF_TRITON_MAX_SIZE,
    VYRE_CONF_INDUCTOR_MAX_SIZE,
    VYRE_CONF_RESULTS_DB,
    VYRE_CONF_N_KEYS
} vyre_config_key;

/* Where a value came from, lowest layer first. */
typedef enum vyre_config_origin {
    VYRE_CONF_FROM_DEFAULT = 0,
    VYRE_CONF_FROM_USER_FILE,
    VYRE_CONF_FROM_CACHE_FILE,
    VYRE_CONF_FROM_ENV,
    VYRE_CONF_FROM_OVERRIDE,
} vyre_config_origin;

typedef struct vyre_config_where {
    vyre_config_origin origin;
    char file[VYRE_CONFIG_WHERE_MAX]; /* the file, or the variable's name (ENV) */
    unsigned line;                    /* 1-based line in file; 0: none */
    char text[VYRE_CONFIG_VALUE_MAX]; /* the value as written (remote_storage: masked, cut) */
} vyre_config_where;

/* A problem met while loading, kept for the caller to show. */
typedef struct vyre_config_problem {
    int is_error;     /* 0: a warning (an unknown key: the line was ignored);
                         1: an error that VYRE_CONFIG_KEEP_GOING went past */
    int key;          /* the key it is about (VYRE_CONF_MAX_SIZE, ...; its name:
                         vyre_config_key_name); -1: none (a line that is not
                         "key = value", an unknown key, a file that cannot be
                         read) */
    vyre_error error; /* "file:line: ..." and a hint */
} vyre_config_problem;

/*
 * A loaded configuration. Opaque: its layout is libcore's, so a key added
 * later changes no program built against this library. Read it with the
 * getters below; change the cache's file with vyre_config_write and load
 * again.
 */
typedef struct vyre_config vyre_config;

/* A configuration holding the built-in defaults; NULL when out of memory.
 * Free with vyre_config_free. */
VYRE_EXTERN vyre_config *vyre_config_new(void);

/* Frees c (NULL: nothing). */
VYRE_EXTERN void vyre_config_free(vyre_config *c);

/* Sets key (by name) to value in c alone, as "-o key=value" would (origin
 * VYRE_CONF_FROM_OVERRIDE): for a program that fixes its configuration
 * instead of reading one. Unknown key or bad value: VYRE_ECONFIG with a
 * hint, c unchanged. The files are vyre_config_write's. */
VYRE_EXTERN int vyre_config_set(vyre_config *c, const char *key, const char *value,
                                vyre_error *err);

/* The value of a number key: a size in bytes (max_size, triton_max_size,
 * inductor_max_size; 0: no limit), a duration in nanoseconds (max_age,
 * quarantine_max_age; 0: off), umask (-1: unset) or read_only (0 or 1).
 * 0 for a text key or one out of range. */
VYRE_EXTERN int64_t vyre_config_get_int(const vyre_config *c, int key);

/* The value of a text key (remote_storage, results_db; "": unset) as
 * written, remote_storage's passwords included (show it with
 * vyre_config_format_value); NULL for a number key or one out of range.
 * Valid until c is loaded again or freed. */
VYRE_EXTERN const char *vyre_config_get_str(const vyre_config *c, int key);

/* Where key's value came from (origin, file and line, the text as
 * written); NULL for a key out of range. Valid until c is loaded again or
 * freed. */
VYRE_EXTERN const vyre_config_where *vyre_config_get_where(const vyre_config *c, int key);

/* The problems the last vyre_config_load met (warnings, and errors that
 * VYRE_CONFIG_KEEP_GOING went past), in order: the first few are kept in
 * the array returned, *kept of them (NULL when none), and *total (may be
 * NULL) counts all of them, those only counted included. kept may be NULL
 * too. Valid until c is loaded again or freed. The caller shows them:
 * libcore never prints. */
VYRE_EXTERN const vyre_config_problem *vyre_config_problems(const vyre_config *c, size_t *kept,
                                                            size_t *total);

/* "max_size", ... (NULL out of range). */
VYRE_EXTERN const char *vyre_config_key_name(int key);

/* The key named name, or -1. */
VYRE_EXTERN int vyre_config_key_find(const char *name);

/* $XDG_CONFIG_HOME/vyre/vyre.conf, else $HOME/.config/vyre/vyre.conf;
 * VYRE_EENV when neither is usable, or in a set-id program (the variables
 * are the invoker's: there is no user file then). Touches nothing. */
VYRE_EXTERN int vyre_config_user_path(char *buf, size_t size, vyre_error *err);

/* vyre_config_load's flags. */
enum {
    /* Go past bad values and refused settings: each is kept in c's
     * problems (is_error 1, vyre_config_problems) and leaves the key as
     * the layers below set it; the first one is still returned (and in
     * err), with c complete otherwise. For showing a broken configuration (vyre-cachectl config).
     */
    VYRE_CONFIG_KEEP_GOING = 1u << 0,
};

/*
 * Every layer: defaults, the user's file, cache_root's vyre.conf (cache_root
 * may be NULL: none), the environment, then overrides[0..n) ("key=value"
 * each, origin OVERRIDE). Files that do not exist are skipped. flags: 0 or
 * VYRE_CONFIG_KEEP_GOING.
 */
VYRE_EXTERN int vyre_config_load(vyre_config *c, const char *cache_root,
                                 const char *const *overrides, size_t n_overrides, unsigned flags,
                                 vyre_error *err);

/* The value of key in c in a form vyre_config_write reads back ("5G", "7d",
 * "002", "true"; "unset" for an unset umask; a size that is not whole KiB
 * in bytes with its unit: "429496730B"), but remote_storage, whose
 * URL passwords show as "***" (buf: VYRE_CONFIG_LONG_VALUE_MAX for it). */
VYRE_EXTERN void vyre_config_format_value(const vyre_config *c, int key, char *buf, size_t size);

/* Where key's value came from: "default", "/path/vyre.conf:3",
 * "env VYRE_CACHE_MAX_SIZE", "-o". */
VYRE_EXTERN void vyre_config_format_where(const vyre_config *c, int key, char *buf, size_t size);

/*
 * Sets key = value in cache_root's vyre.conf: the value is checked first;
 * the file is rewritten atomically (a temporary file in the same directory,
 * fsync, rename), the last line setting key replaced (the others, comments
 * and blank lines kept), or a line appended. A missing cache directory is
 * created (0700). value NULL removes the key's lines. umask is the cache's
 * (vyre_config_get_int(c, VYRE_CONF_UMASK); -1: unset): with one, the file is written
 * 0660 & ~umask whatever its mode was and whatever the process's umask (a
 * group cache's vyre.conf under 002 is 0660, so its members can read it,
 * and others never: it may hold remote_storage credentials); without one
 * the file keeps its mode (a new one: 0600). Setting the umask key itself
 * uses the new value.
 */
VYRE_EXTERN int vyre_config_write(const char *cache_root, const char *key, const char *value,
                                  int umask, vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_CONFIG_H */
