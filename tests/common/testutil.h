/*
 * testutil.h - helpers for the Criterion suites: temp directories, running
 * real processes with a controlled environment, reading files.
 */
#ifndef VYRE_TESTUTIL_H
#define VYRE_TESTUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Creates a fresh directory under $TMPDIR (or /tmp) and returns its path in
 * buf. Aborts the test on failure. */
void tu_mkdtemp(char *buf, size_t size);

/* rm -rf path (best effort). */
void tu_rm_rf(const char *path);

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

/* Reads a whole file (malloc'ed, NUL-terminated); NULL when unreadable. */
char *tu_read_file(const char *path, size_t *len);

/* Writes a whole file; aborts the test on failure. */
void tu_write_file(const char *path, const void *data, size_t len);

#endif /* VYRE_TESTUTIL_H */
