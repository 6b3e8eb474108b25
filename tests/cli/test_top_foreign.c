/*
 * test_top_foreign.c - vyre-top and a telemetry page written in another PID
 * namespace (issue 22, seen 10: an `unshare --pid --fork` publisher, or a
 * container with --ipc=host sharing /dev/shm).
 *
 * The page is made by the real writer in this process, then given pid 1, a
 * start time that is not host pid 1's and a namespace that is not ours:
 * exactly what the publisher's pid 1 looks like from here. Read as ours it
 * is "pid reused", and vyre-top's first reap used to unlink it while its
 * process ran. It must stay, its row must say it is foreign (text and
 * --json), and nothing of host pid 1 (/proc: user, CPU, memory) may be put
 * on it. A page of a live process of ours, beside it, is not marked.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace/telemetry_internal.h"
#include "testutil.h"
#include "vyre/telemetry.h"

#ifndef VYRE_TOP_BIN
#error "tests/CMakeLists.txt must define VYRE_TOP_BIN"
#endif

static char g_tmp[512];
static char g_tel[600];
static char g_foreign[700];
static char g_ours[700];
static char g_env_tel[700];
static char g_env_cache[700];
static char g_env_home[700];

static void write_page(const char *path, const void *img, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(img, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(chmod(path, 0600), 0);
}

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_tel, sizeof g_tel, "%s/tel", g_tmp);
    snprintf(g_env_tel, sizeof g_env_tel, "VYRE_TELEMETRY_DIR=%s", g_tel);
    snprintf(g_env_cache, sizeof g_env_cache, "VYRE_PTX_CACHE_DIR=%s/ptx-cache", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    setenv("VYRE_TELEMETRY_DIR", g_tel, 1);
    unsetenv("VYRE_TELEMETRY");

    /* This process's own page, by the real writer. */
    vyre_telemetry *t = NULL;
    vyre_error e = {0};
    cr_assert_eq(vyre__telemetry_open(&t, &e), VYRE_OK, "%s", e.message);
    vyre_telemetry_kernel_record k = {.name = "far_kernel", .grid = {1, 1, 1}, .block = {32, 1, 1}};
    cr_assert_eq(vyre_telemetry_add_kernel(t, &k), VYRE_OK);
    cr_assert_eq(vyre_telemetry_publish(t), VYRE_OK);
    char own[700];
    snprintf(own, sizeof own, "%s/%d.vtel", g_tel, (int)getpid());
    size_t len;
    unsigned char *img = (unsigned char *)tu_read_file(own, &len);
    cr_assert_eq(len, sizeof(vyre__tel_page));
    vyre__telemetry_close(t);

    /* Ours: this live process, kept as it was. */
    snprintf(g_ours, sizeof g_ours, "%s", own);
    write_page(g_ours, img, len);

    /* The other namespace's pid 1. */
    vyre__tel_header *h = (vyre__tel_header *)(void *)img;
    uint64_t init_start = 0;
    cr_assert_eq(vyre__telemetry_start_time(1, &init_start), VYRE_OK);
    cr_assert_neq(h->pid_ns_ino, 0, "the writer records its PID namespace");
    h->pid = 1;
    h->start_time = init_start + 4242;
    h->pid_ns_ino += 1;
    snprintf(g_foreign, sizeof g_foreign, "%s/1.vtel", g_tel);
    write_page(g_foreign, img, len);
    free(img);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(top_foreign, .init = setup, .fini = teardown, .timeout = 120);

static void run_top(tu_proc *p, const char *const *args)
{
    const char *env[] = {g_env_tel, g_env_cache, g_env_home, "VYRE_TELEMETRY", "COLUMNS", NULL};
    tu_run_bin(p, VYRE_TOP_BIN, args, env, NULL);
}

/* The text line of pid's row in a --batch frame ("<pid> " right-aligned,
 * at the start of the line after spaces), copied into out. */
static int row_of(const char *frame, int pid, char *out, size_t size)
{
    char pat[32];
    snprintf(pat, sizeof pat, "%d ", pid);
    for (const char *line = frame; *line;) {
        size_t n = strcspn(line, "\n");
        size_t lead = strspn(line, " ");
        if (lead < n && strncmp(line + lead, pat, strlen(pat)) == 0) {
            snprintf(out, size, "%.*s", (int)n, line);
            return 1;
        }
        line += n + (line[n] == '\n');
    }
    return 0;
}

Test(top_foreign, a_foreign_page_is_kept_and_marked_in_batch_output)
{
    tu_proc p;
    const char *args[] = {"--batch", "-n", "2", "-d", "0.1", "--width=200", NULL};
    run_top(&p, args);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    cr_assert_eq(access(g_foreign, F_OK), 0, "vyre-top unlinked the foreign page:\n%s", p.out);
    cr_assert_eq(access(g_ours, F_OK), 0, "our live page stays");

    char row[512], ours[512];
    cr_assert(row_of(p.out, 1, row, sizeof row), "no row for the foreign pid 1:\n%s", p.out);
    /* Marked in the USER column (/proc cannot tell its user: host pid 1's
     * is not put on it), and none of host pid 1's figures: CPU% and RSS
     * unknown. */
    cr_assert(strstr(row, " 1 foreign  test_cli "), "the foreign row is marked: '%s'", row);
    cr_assert_null(strstr(row, "root"), "host pid 1's user on the row: '%s'", row);
    cr_assert(strstr(row, " -     -        0 "), "CPU% and RSS unknown: '%s'", row);
    cr_assert(row_of(p.out, (int)getpid(), ours, sizeof ours), "no row for us:\n%s", p.out);
    cr_assert_null(strstr(ours, "foreign"), "our row is not marked: '%s'", ours);
    tu_proc_free(&p);
}

Test(top_foreign, json_says_which_process_is_foreign)
{
    tu_proc p;
    const char *args[] = {"--json", "-n", "1", "-d", "0.1", NULL};
    run_top(&p, args);
    cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
    cr_assert_eq(access(g_foreign, F_OK), 0, "vyre-top unlinked the foreign page");
    json_error_t je;
    json_t *root = json_loads(p.out, JSON_DISABLE_EOF_CHECK, &je);
    cr_assert_not_null(root, "json: %s\n%s", je.text, p.out);
    json_t *procs = json_object_get(root, "processes");
    cr_assert(json_is_array(procs));
    int seen = 0;
    size_t i;
    json_t *o;
    json_array_foreach(procs, i, o)
    {
        json_int_t pid = json_integer_value(json_object_get(o, "pid"));
        json_t *foreign = json_object_get(o, "foreign");
        cr_assert(json_is_boolean(foreign), "pid %d: 'foreign' must be a boolean:\n%s", (int)pid,
                  p.out);
        if (pid == 1) {
            cr_assert(json_is_true(foreign), "pid 1 is foreign:\n%s", p.out);
            cr_assert(json_is_true(json_object_get(o, "telemetry")));
            cr_assert(json_is_null(json_object_get(o, "uid")), "no uid from host pid 1");
            cr_assert(json_is_null(json_object_get(o, "rss_bytes")), "no rss from host pid 1");
            seen |= 1;
        } else if (pid == getpid()) {
            cr_assert(json_is_false(foreign), "our page is not foreign:\n%s", p.out);
            seen |= 2;
        }
    }
    cr_assert_eq(seen, 3, "both processes in --json:\n%s", p.out);
    json_decref(root);
    tu_proc_free(&p);
}
