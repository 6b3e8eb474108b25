/*
 * testutil.h - helpers for the Criterion suites: temp directories, running
 * real processes with a controlled environment, reading files.
 */
#ifndef VYRE_TESTUTIL_H
#define VYRE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Creates a fresh directory "vyre-test-XXXXXX" under $TMPDIR (or /tmp) and
 * returns its path in buf. Aborts the test on failure. The directory is
 * removed (rm -rf) when the process that made it exits, also after
 * cr_skip_test() or a failed assertion; a suite's .fini may remove it
 * earlier with tu_rm_rf. */
void tu_mkdtemp(char *buf, size_t size);

/* As tu_mkdtemp, but on a memory filesystem where there is room: under
 * /dev/shm when it is a tmpfs with at least 2 GiB free, else under $TMPDIR
 * as tu_mkdtemp. For scratch space that a program under test fills with
 * fsync'ed files nobody inspects: the TMPDIR of vyre-bench, whose cache
 * suite puts and prunes hundreds of durable blobs per run (on a busy disk
 * a run waited 12 s of its 17 on fsync; the results database and every
 * file a test reads stay in the tu_mkdtemp directory). Removed as
 * tu_mkdtemp's are. */
void tu_mkdtemp_mem(char *buf, size_t size);

/* rm -rf path (best effort). */
void tu_rm_rf(const char *path);

/* vyre_cache_open's options with flags set and every other field as
 * vyre_cache_open_opts_init sets it (umask not set, configuration loaded):
 * vyre_cache_open(root, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &c, &e). The
 * struct lives as long as the enclosing block. */
#define TU_OPEN_FLAGS(f) (&(vyre_cache_open_opts){.flags = (f), .umask = -1, .config = NULL})

/* Result of tu_run: captured output (malloc'ed, NUL-terminated) and status. */
typedef struct tu_proc {
    char *out;
    char *err;
    int exit_code; /* exit status, or 128+signal */
} tu_proc;

/* Runs argv[0] with argv, its environment being the current one with
 * `env_set` applied ("NAME=value" sets, "NAME" alone unsets; NULL-terminated
 * list, may be NULL). stdin is /dev/null. */
void tu_run(tu_proc *p, char *const argv[], const char *const env_set[]);
void tu_proc_free(tu_proc *p);

/* tu_run of the program bin with the NULL-terminated args (at most
 * TU_ARGS_MAX) and the environment changes of env, then those of extra
 * (each a NULL-terminated list as tu_run takes, or NULL; at most
 * TU_ENV_SET_MAX in all). For the CLI tests' per-suite runners. */
#define TU_ARGS_MAX    63
#define TU_ENV_SET_MAX 63
void tu_run_bin(tu_proc *p, const char *bin, const char *const *args, const char *const *env,
                const char *const *extra);

/* A small, valid PTX module (sm_80) with one kernel, scale(u32 *p), that
 * stores 7 through p: for the tests that compile or seed real PTX. */
#define TU_PTX_SCALE                                                                               \
    ".version 8.0\n"                                                                               \
    ".target sm_80\n"                                                                              \
    ".address_size 64\n"                                                                           \
    ".visible .entry scale(.param .u64 p)\n"                                                       \
    "{\n"                                                                                          \
    "    .reg .b64 %rd<3>;\n"                                                                      \
    "    .reg .b32 %r<2>;\n"                                                                       \
    "    ld.param.u64 %rd1, [p];\n"                                                                \
    "    cvta.to.global.u64 %rd2, %rd1;\n"                                                         \
    "    mov.u32 %r1, 7;\n"                                                                        \
    "    st.global.u32 [%rd2], %r1;\n"                                                             \
    "    ret;\n"                                                                                   \
    "}\n"

/* 1 when text holds `line` as a whole line (between line starts and a
 * newline or the end). */
int tu_has_line(const char *text, const char *line);

#define tu_assert_line(text, line)                                                                 \
    cr_assert(tu_has_line((text), (line)), "missing line '%s' in:\n%s", (line), (text))

/* The newlines in text. */
int tu_count_lines(const char *text);

/* The first column of the first row of sql (which must return a row) in
 * the SQLite database at path, opened read-only: for checking what a
 * program under test stored. */
long long tu_db_int(const char *path, const char *sql);

/* Saved values of environment variables a test changes. */
#define TU_ENV_MAX 32
typedef struct tu_env {
    const char *const *names;
    size_t n;
    char *saved[TU_ENV_MAX];
    int was_set[TU_ENV_MAX];
} tu_env;

/* Saves names[0..n) (n <= TU_ENV_MAX) and unsets them. */
void tu_env_save(tu_env *e, const char *const *names, size_t n);

/* Puts back what tu_env_save saved (set or unset) and frees the copies. */
void tu_env_restore(tu_env *e);

/* Copies the tree src to dst (created 0700; must not exist): directories
 * and regular files, names starting with '.' left out (a fixture copied
 * into a temp dir). Asserts on failure. */
void tu_copy_tree(const char *src, const char *dst);

/* Sets the access and modification times of path and of everything below
 * it (links not followed) to `seconds` before now. A fixture copied with
 * tu_copy_tree is as old as the copy; output that says "12s ago" then
 * changes from one run to the next. Asserts on failure. */
void tu_age_tree(const char *path, int64_t seconds);

/* The bytes on disk of path and all below it, as du counts them:
 * st_blocks * 512 of every inode from lstat, symbolic links not followed
 * (never the apparent size: a 100-byte file takes a whole block). */
uint64_t tu_disk_bytes(const char *path);

/* What `du -sk path` prints: KiB on disk (asserts that du ran). */
uint64_t tu_du_sk(const char *path);

/* The bytes on disk (st_blocks * 512) of every blob file (<64 hex>.vblob)
 * in a real shard directory of vyre's cache at `cache` (a shard that is a
 * link is not the cache's): what its limits count. */
uint64_t tu_blobs_disk(const char *cache);

/* vyre_format_size of bytes ("26.5 KiB"), in one of 8 static buffers
 * used in turn: for building the lines a test expects. */
const char *tu_size_text(uint64_t bytes);

/* printf into one of 8 static buffers (512 bytes) used in turn. */
const char *tu_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads a whole file (malloc'ed, NUL-terminated); NULL when unreadable. */
char *tu_read_file(const char *path, size_t *len);

/* Writes a whole file; aborts the test on failure. */
void tu_write_file(const char *path, const void *data, size_t len);

/* Reads an HTTP/1.x answer from fd until the server closes it, at most ms
 * milliseconds, then closes fd. Returns its status (0: none in time) and
 * copies the start of its body into body[size]. */
int tu_http_answer(int fd, int ms, char *body, size_t size);

#endif /* VYRE_TESTUTIL_H */
