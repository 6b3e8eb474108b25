/*
 * test_inject.c - libvyre-inject.so without a GPU: the library
 * loads and initialises, exports nothing but InitializeInjection, prints at
 * most one line, and never changes the host program's output or exit code:
 * with a usable or unusable telemetry directory, without CUPTI, with CUPTI
 * held by another profiler, with threads and a forked child. Where there is
 * no driver, a fake CUPTI (inject/testing/fakecupti.c) plays the driver so
 * that the publishing path runs for real: the host reads its own page back.
 *
 * The host (inject/testing/inject_host.c) is built without sanitizers, like
 * the programs the library is loaded into.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cupti.h>

#include "tel_v1.h"
#include "testutil.h"
#include "vyre/cupti.h"
#include "vyre/error.h"

#if !defined(VYRE_INJECT_LIB) || !defined(INJECT_HOST_BIN) || !defined(FAKECUPTI_LIB)
#error "tests/CMakeLists.txt must define VYRE_INJECT_LIB, INJECT_HOST_BIN and FAKECUPTI_LIB"
#endif

#define LINE_PREFIX "vyre-inject: "

static char g_tmp[512];
static char g_env_dir[600];
static tu_proc g_base;

/* Runs inject_host with the NULL-terminated args (tu_run wants mutable
 * strings: they are copied). */
static void run_args(tu_proc *p, const char *const *args, const char *const *env)
{
    static char buf[16][700];
    char *argv[17];
    size_t n = 0;
    argv[n] = buf[n];
    snprintf(buf[n++], sizeof buf[0], "%s", INJECT_HOST_BIN);
    for (; args[n - 1] && n < 16; n++) {
        snprintf(buf[n], sizeof buf[0], "%s", args[n - 1]);
        argv[n] = buf[n];
    }
    argv[n] = NULL;
    tu_run(p, argv, env);
}

static void run_host(tu_proc *p, int inject, const char *const *env)
{
    const char *with[] = {"--inject", VYRE_INJECT_LIB, "--threads", "4", "--fork", NULL};
    const char *without[] = {"--threads", "4", "--fork", NULL};
    run_args(p, inject ? with : without, env);
}

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_env_dir, sizeof g_env_dir, "VYRE_TELEMETRY_DIR=%s/tel", g_tmp);
    const char *env[] = {g_env_dir,        "VYRE_INJECT",    "VYRE_CUPTI_LIBRARY",
                         "VYRE_TELEMETRY", "FAKECUPTI_BUSY", NULL};
    run_host(&g_base, 0, env);
    cr_assert_eq(g_base.exit_code, 3, "baseline host: %s", g_base.err);
    cr_assert_str_eq(g_base.out, "host: start\nhost: 4 threads done\nchild: done\n"
                                 "parent: child exited 5\nhost: end\n");
}

static void teardown(void)
{
    tu_proc_free(&g_base);
    tu_rm_rf(g_tmp);
}

TestSuite(inject, .init = setup, .fini = teardown, .timeout = 120);

/* Runs the host with the injection and the given environment, checks that
 * stdout and the exit code equal the run without it and that stderr is one
 * line (or none) starting with LINE_PREFIX and containing `expect`; an
 * `expect` that is a whole line (ends in a newline) must be stderr exactly. */
static void check_untouched(const char *const *env, const char *expect)
{
    tu_proc p;
    run_host(&p, 1, env);
    cr_assert_eq(p.exit_code, g_base.exit_code, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.out, g_base.out);
    if (!expect) {
        cr_assert_str_empty(p.err);
    } else {
        cr_assert(strncmp(p.err, LINE_PREFIX, strlen(LINE_PREFIX)) == 0, "stderr: %s", p.err);
        char *nl = strchr(p.err, '\n');
        cr_assert(nl && nl[1] == '\0', "not exactly one line: %s", p.err);
        cr_assert(strstr(p.err, expect), "'%s' not in: %s", expect, p.err);
        if (expect[strlen(expect) - 1] == '\n')
            cr_assert_str_eq(p.err, expect);
    }
    tu_proc_free(&p);
}

/* No page, and no temporary page, is left in dir. */
static void assert_no_pages(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        cr_assert(de->d_name[0] == '.', "left behind: %s/%s", dir, de->d_name);
    closedir(d);
}

Test(inject, exports_only_InitializeInjection)
{
    tu_proc p;
    const char *args[] = {"--exports", VYRE_INJECT_LIB, NULL};
    run_args(&p, args, NULL);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "InitializeInjection\n");
    tu_proc_free(&p);

    /* Loading it runs nothing; its libcore copy stays invisible. */
    void *h = dlopen(VYRE_INJECT_LIB, RTLD_NOW | RTLD_LOCAL);
    cr_assert(h, "%s", dlerror());
    cr_assert(dlsym(h, "InitializeInjection"));
    cr_assert_null(dlsym(h, "vyre_telemetry_global"));
    cr_assert_null(dlsym(h, "vyre_cupti_load"));
    cr_assert_null(dlsym(h, "vyre__fail"));
}

/* What the library must print with the machine's own CUPTI, worked out
 * here by doing what it does first: load CUPTI the same way (same
 * environment), then subscribe. Returns the exact line, or NULL with
 * *publishing set when CUPTI subscribes (a GPU machine): the line then
 * names a page whose pid only the host knows. */
static char *expected_system_cupti_line(int *publishing)
{
    static char line[VYRE_ERROR_MESSAGE_MAX + VYRE_ERROR_HINT_MAX + 128];
    *publishing = 0;
    vyre_error err;
    vyre_error_clear(&err);
    int rc = vyre_cupti_load(&err);
    if (rc) {
        cr_assert_neq(err.hint[0], '\0', "no hint for: %s", err.message);
        snprintf(line, sizeof line, LINE_PREFIX "not publishing: %s (%s)\n", err.message, err.hint);
        return line;
    }
    vyre_cupti_stats st;
    vyre_cupti_stats_get(&st);
    void *h = dlopen(st.library, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    cr_assert_not_null(h, "'%s' loaded but cannot be reopened: %s", st.library, dlerror());
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*result_string)(CUptiResult, const char **);
    *(void **)&subscribe = dlsym(h, "cuptiSubscribe");
    *(void **)&unsubscribe = dlsym(h, "cuptiUnsubscribe");
    *(void **)&result_string = dlsym(h, "cuptiGetResultString");
    cr_assert(subscribe && unsubscribe && result_string, "'%s' lacks the subscribe API",
              st.library);
    CUpti_SubscriberHandle sub = NULL;
    CUptiResult r = subscribe(&sub, NULL, NULL);
    if (r == CUPTI_SUCCESS) {
        unsubscribe(sub);
        *publishing = 1;
        return NULL;
    }
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(line, sizeof line,
                 LINE_PREFIX "not publishing: CUPTI is already held by another profiler (Nsight "
                             "Systems? torch.profiler?); the program runs untouched\n");
        return line;
    }
    const char *text = NULL;
    if (result_string(r, &text) != CUPTI_SUCCESS || !text)
        text = "unknown CUPTI error";
    /* inject_host never loads libcuda.so.1: a failed subscribe there is
     * the no-driver case. */
    snprintf(line, sizeof line,
             LINE_PREFIX "not publishing: no NVIDIA driver in this process (libcuda.so.1 is not "
                         "loaded; cuptiSubscribe: %s); check the driver with nvidia-smi\n",
             text);
    return line;
}

Test(inject, system_cupti_without_a_driver_leaves_the_host_alone)
{
    /* The machine's own libcupti, if any: without a GPU it cannot
     * subscribe; with one (not in CI) it publishes. Either way, one line,
     * and exactly the one the situation calls for. */
    unsetenv("VYRE_CUPTI_LIBRARY"); /* as in the host's environment below */
    int publishing = 0;
    const char *want = expected_system_cupti_line(&publishing);
    const char *env[] = {g_env_dir, "VYRE_INJECT", "VYRE_CUPTI_LIBRARY", "FAKECUPTI_BUSY", NULL};
    tu_proc p;
    run_host(&p, 1, env);
    cr_assert_eq(p.exit_code, g_base.exit_code, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.out, g_base.out);
    if (want) {
        cr_assert_str_eq(p.err, want);
    } else {
        /* "vyre-inject: publishing to <dir>/tel/<pid>.vtel (counters; ...)\n" */
        char head[700];
        snprintf(head, sizeof head, LINE_PREFIX "publishing to %s/tel/", g_tmp);
        static const char tail[] = ".vtel (counters; VYRE_INJECT=kernels adds kernel names)\n";
        cr_assert_eq(strncmp(p.err, head, strlen(head)), 0, "stderr: %s", p.err);
        const char *q = p.err + strlen(head);
        size_t digits = strspn(q, "0123456789");
        cr_assert_gt(digits, 0, "no pid in: %s", p.err);
        cr_assert_str_eq(q + digits, tail);
    }
    tu_proc_free(&p);
}

Test(inject, no_driver_says_so_once)
{
    /* As the real CUPTI answers on a machine without a driver. */
    const char *env[] = {
        g_env_dir,        "VYRE_INJECT",           "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
        "FAKECUPTI_BUSY", "FAKECUPTI_NO_DRIVER=1", NULL};
    check_untouched(env, LINE_PREFIX "not publishing: no NVIDIA driver in this process "
                                     "(libcuda.so.1 is not loaded; cuptiSubscribe: "
                                     "CUPTI_ERROR_UNKNOWN); check the driver with nvidia-smi\n");
}

Test(inject, ld_preload_says_it_does_nothing)
{
    /* Preloaded into the host (no --inject): one line naming the fix. */
    const char *env[] = {g_env_dir, "VYRE_INJECT", "LD_PRELOAD=" VYRE_INJECT_LIB,
                         "CUDA_INJECTION64_PATH", NULL};
    tu_proc p;
    run_host(&p, 0, env);
    cr_assert_eq(p.exit_code, g_base.exit_code, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.out, g_base.out);
    cr_assert_str_eq(p.err,
                     LINE_PREFIX "LD_PRELOAD loads this library but does nothing: the CUDA "
                                 "driver loads injections from CUDA_INJECTION64_PATH; run "
                                 "CUDA_INJECTION64_PATH=" VYRE_INJECT_LIB " PROGRAM instead\n");
    tu_proc_free(&p);
    /* Preloaded and named by CUDA_INJECTION64_PATH, or turned off: silent. */
    const char *named[] = {g_env_dir, "VYRE_INJECT", "LD_PRELOAD=" VYRE_INJECT_LIB,
                           "CUDA_INJECTION64_PATH=" VYRE_INJECT_LIB, NULL};
    const char *off[] = {g_env_dir, "VYRE_INJECT=off", "LD_PRELOAD=" VYRE_INJECT_LIB,
                         "CUDA_INJECTION64_PATH", NULL};
    const char *const *quiet[] = {named, off};
    for (int i = 0; i < 2; i++) {
        run_host(&p, 0, quiet[i]);
        cr_assert_eq(p.exit_code, g_base.exit_code, "exit %d, stderr: %s", p.exit_code, p.err);
        cr_assert_str_eq(p.err, "", "case %d", i);
        tu_proc_free(&p);
    }
}

Test(inject, missing_cupti_says_so_once)
{
    const char *env[] = {g_env_dir, "VYRE_INJECT", "VYRE_CUPTI_LIBRARY=/nonexistent/libcupti.so",
                         NULL};
    check_untouched(env, "not publishing: CUPTI not available");
}

Test(inject, unusable_telemetry_directory_says_so_once)
{
    char file[600], env_dir[700];
    snprintf(file, sizeof file, "%s/a-file", g_tmp);
    tu_write_file(file, "x", 1);
    snprintf(env_dir, sizeof env_dir, "VYRE_TELEMETRY_DIR=%s/tel", file);
    const char *env[] = {env_dir, "VYRE_INJECT", "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                         "FAKECUPTI_BUSY", NULL};
    check_untouched(env, "not publishing: cannot create");

    const char *relative[] = {"VYRE_TELEMETRY_DIR=relative/dir", "VYRE_INJECT",
                              "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB, "FAKECUPTI_BUSY", NULL};
    check_untouched(relative, "not publishing: VYRE_TELEMETRY_DIR 'relative/dir' is not an "
                              "absolute path");

    if (geteuid() != 0) { /* root writes anywhere */
        char ro[600], env_ro[700];
        snprintf(ro, sizeof ro, "%s/ro", g_tmp);
        cr_assert_eq(mkdir(ro, 0500), 0);
        snprintf(env_ro, sizeof env_ro, "VYRE_TELEMETRY_DIR=%s/tel", ro);
        const char *env2[] = {env_ro, "VYRE_INJECT", "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                              "FAKECUPTI_BUSY", NULL};
        check_untouched(env2, "not publishing: ");
    }
}

Test(inject, telemetry_off_says_so_once)
{
    const char *env[] = {g_env_dir,        "VYRE_TELEMETRY=0",
                         "VYRE_INJECT",    "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                         "FAKECUPTI_BUSY", NULL};
    check_untouched(env, "not publishing: VYRE_TELEMETRY=0");
}

Test(inject, cupti_held_by_another_profiler_says_so_once)
{
    const char *env[] = {g_env_dir, "VYRE_INJECT", "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                         "FAKECUPTI_BUSY=1", NULL};
    check_untouched(env, LINE_PREFIX "not publishing: CUPTI is already held by another profiler "
                                     "(Nsight Systems? torch.profiler?); the program runs "
                                     "untouched\n");
}

Test(inject, mode_off_is_silent_and_bad_mode_says_so_once)
{
    const char *off[] = {g_env_dir, "VYRE_INJECT=off", "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                         "FAKECUPTI_BUSY", NULL};
    check_untouched(off, NULL);
    const char *bad[] = {g_env_dir, "VYRE_INJECT=everything", "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                         "FAKECUPTI_BUSY", NULL};
    check_untouched(bad, LINE_PREFIX "not publishing: VYRE_INJECT 'everything' is not one of off, "
                                     "counters, kernels, full\n");
}

Test(inject, publishing_with_threads_and_fork_leaves_the_host_alone)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/tel", g_tmp);
    const char *modes[] = {"VYRE_INJECT", "VYRE_INJECT=counters", "VYRE_INJECT=kernels",
                           "VYRE_INJECT=full"};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const char *env[] = {g_env_dir,
                             modes[i],
                             "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                             "FAKECUPTI_BUSY",
                             "NVTX_INJECTION64_PATH",
                             NULL};
        char expect[700];
        snprintf(expect, sizeof expect, "publishing to %s/", dir);
        check_untouched(env, expect);
        assert_no_pages(dir); /* unlinked at exit, by the parent only */
    }
}

/* Issue 22, seen 2: the reproduction. A 200 KiB tmpfs with 184 KiB used
 * holds a page's first blocks but not the page: the page used to be
 * ftruncate'd (sparse) and mapped, and the first store into an unbacked
 * block killed the host with SIGBUS (exit 135, none of its output). Now
 * the host runs as without the injection and the library says once that
 * it does not publish, and why. */
Test(inject, a_full_telemetry_file_system_never_kills_the_host)
{
    char mnt[600], why[512], env_dir[700];
    snprintf(mnt, sizeof mnt, "%s/mnt", g_tmp);
    cr_assert_eq(mkdir(mnt, 0700), 0);
    if (tu_tel_full_tmpfs(mnt, why, sizeof why) != 0)
        cr_skip_test("cannot mount a small tmpfs here: %s", why);
    snprintf(env_dir, sizeof env_dir, "VYRE_TELEMETRY_DIR=%s/tel", mnt);
    const char *env[] = {env_dir, "VYRE_INJECT=kernels", "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                         "FAKECUPTI_BUSY", NULL};
    check_untouched(env, LINE_PREFIX "not publishing: cannot reserve ");
    tu_proc p;
    run_host(&p, 1, env);
    cr_assert(strstr(p.err, "No space left on device") && strstr(p.err, "VYRE_TELEMETRY=0"),
              "the reason and the way out: %s", p.err);
    tu_proc_free(&p);
    char tel[620];
    snprintf(tel, sizeof tel, "%s/tel", mnt);
    assert_no_pages(tel);
    cr_assert_eq(umount2(mnt, MNT_DETACH), 0, "%s", strerror(errno));
}

/* Copies the host to dir as a set-group-ID program of group 65534: run by
 * root it keeps euid 0 (it reads everything as before) but runs in
 * secure-execution mode (AT_SECURE), as any set-user/group-ID program that
 * loads libcore or the injection would. Skips when that cannot be made or
 * the file system ignores set-ID bits (nosuid). */
static void setgid_host(const char *path)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to make a set-group-ID copy of the host; CI runs as root");
    size_t len = 0;
    char *img = tu_read_file(INJECT_HOST_BIN, &len);
    cr_assert_not_null(img);
    tu_write_file(path, img, len);
    free(img);
    cr_assert_eq(chown(path, (uid_t)-1, 65534), 0, "%s", strerror(errno));
    cr_assert_eq(chmod(path, 02755), 0, "%s", strerror(errno));
    tu_proc p;
    const char *args[] = {"--env-probe", NULL};
    tu_run_bin(&p, path, args, NULL, NULL);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    int secure = strncmp(p.out, "secure: 1\n", 10) == 0;
    tu_proc_free(&p);
    if (!secure)
        cr_skip_test("'%s' does not run in secure-execution mode (a nosuid file system?)", path);
}

/* Issue 22, point 14: a set-user/group-ID program must not load libraries
 * or write files named by its (untrusted) environment: libcore reads
 * VYRE_TELEMETRY_DIR, VYRE_*_LIBRARY, the toolkit root, NVTX_INJECTION64_PATH
 * and CUDA_CACHE_PATH with secure_getenv. A setgid host given all of them
 * loads neither the named CUPTI nor the named driver, publishes nowhere the
 * environment says, and the injection goes its default way. */
Test(inject, a_setgid_host_takes_no_paths_or_libraries_from_the_environment)
{
    char host[600], evil_cupti[620], env_tel[700], env_cupti[700], env_cuda[700], env_nvtx[700];
    snprintf(host, sizeof host, "%s/inject_host_sgid", g_tmp);
    setgid_host(host);
    /* A CUPTI named so that NVTX_INJECTION64_PATH counts as routed to it. */
    snprintf(evil_cupti, sizeof evil_cupti, "%s/libcupti-planted.so", g_tmp);
    size_t len = 0;
    char *img = tu_read_file(FAKECUPTI_LIB, &len);
    cr_assert_not_null(img);
    tu_write_file(evil_cupti, img, len);
    free(img);
    snprintf(env_tel, sizeof env_tel, "VYRE_TELEMETRY_DIR=%s/planted-tel", g_tmp);
    snprintf(env_cupti, sizeof env_cupti, "VYRE_CUPTI_LIBRARY=%s", FAKECUPTI_LIB);
    snprintf(env_cuda, sizeof env_cuda, "VYRE_CUDA_LIBRARY=%s", FAKECUPTI_LIB);
    snprintf(env_nvtx, sizeof env_nvtx, "NVTX_INJECTION64_PATH=%s", evil_cupti);

    const char *probe[] = {"--env-probe", NULL};
    const char *env1[] = {env_tel, env_cupti, env_cuda, "FAKECUPTI_BUSY", NULL};
    tu_proc p;
    tu_run_bin(&p, host, probe, env1, NULL);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want_dir[128];
    snprintf(want_dir, sizeof want_dir, "telemetry dir: /dev/shm/vyre-%u\n", (unsigned)geteuid());
    cr_assert(strstr(p.out, want_dir), "VYRE_TELEMETRY_DIR taken:\n%s", p.out);
    cr_assert_null(strstr(p.out, FAKECUPTI_LIB), "a library named by the environment:\n%s", p.out);
    cr_assert_null(strstr(p.out, g_tmp), "a path from the environment:\n%s", p.out);
    tu_proc_free(&p);

    const char *env2[] = {env_nvtx, "VYRE_CUPTI_LIBRARY", "FAKECUPTI_BUSY", NULL};
    tu_run_bin(&p, host, probe, env2, NULL);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_null(strstr(p.out, evil_cupti), "NVTX_INJECTION64_PATH loaded:\n%s", p.out);
    tu_proc_free(&p);

    /* The injection in the setgid host: never publishes where the
     * environment says, and the host runs untouched. */
    const char *with[] = {"--inject", VYRE_INJECT_LIB, "--threads", "4", "--fork", NULL};
    const char *env3[] = {env_tel, "VYRE_INJECT=kernels", env_cupti, "FAKECUPTI_BUSY", NULL};
    tu_run_bin(&p, host, with, env3, NULL);
    cr_assert_eq(p.exit_code, g_base.exit_code, "exit %d, stderr: %s", p.exit_code, p.err);
    cr_assert_str_eq(p.out, g_base.out);
    cr_assert_null(strstr(p.err, g_tmp), "published where the environment said: %s", p.err);
    char planted[620];
    snprintf(planted, sizeof planted, "%s/planted-tel", g_tmp);
    cr_assert_neq(access(planted, F_OK), 0, "'%s' was created", planted);
    tu_proc_free(&p);
}

/* The host reads its own page after two publisher periods: the counters of
 * five threads (each 100 runtime launches, a driver launch, a failed one,
 * a runtime launch with its nested driver call, a copy each way, a sync),
 * none of the forked child's, and the kernels by name. */
Test(inject, page_shows_launches_traffic_and_kernels)
{
    const char *env[] = {g_env_dir, "VYRE_INJECT=kernels", "VYRE_CUPTI_LIBRARY=" FAKECUPTI_LIB,
                         "FAKECUPTI_BUSY", NULL};
    const char *args[] = {"--inject", VYRE_INJECT_LIB, "--threads", "4", "--fork", "--probe", NULL};
    tu_proc p;
    run_args(&p, args, env);
    cr_assert_eq(p.exit_code, 3, "%s", p.err);
    cr_assert_str_eq(p.out, "host: start\nhost: 4 threads done\nchild: done\n"
                            "parent: child exited 5\n"
                            "probe: publishes yes\n"
                            "probe: launches 510\n"
                            "probe: h2d_copies 5\n"
                            "probe: h2d_bytes 20480\n"
                            "probe: d2h_copies 5\n"
                            "probe: d2h_bytes 2560\n"
                            "probe: syncs 5\n"
                            "probe: kernel_records 3\n"
                            "probe: kernel vyre_test_gemm 2500 ns\n"
                            "probe: kernel vyre_test_gemm 2500 ns\n"
                            "probe: kernel vyre_test_relu 100 ns\n"
                            "host: end\n");
    cr_assert(strstr(p.err, "(counters, kernels)"), "%s", p.err);
    tu_proc_free(&p);
}
