/*
 * test_cachectl_remote.c - vyre-cachectl with remote stores, against real
 * servers (tests/common/servers.h): what one machine seeds, another gets
 * with its compilers made unloadable; `remote check|push|pull` output and
 * exit codes; per-remote counters in `stats`; a Redis server that trickles
 * its reply or declares a 2 GiB value (tests/common/fakeredis.h) costs a
 * seed at most the operation timeout and never fails it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda/compile_internal.h"
#include "fakeredis.h"
#include "servers.h"
#include "testutil.h"
#include "vyre/vyre.h"

static char g_tmp[512];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
}

static void teardown(void)
{
    if (g_tmp[0])
        tu_rm_rf(g_tmp);
}

TestSuite(cachectl_remote, .init = setup, .fini = teardown);

static const char k_ptx[] = TU_PTX_SCALE;

/* Runs vyre-cachectl --cache-dir <g_tmp>/<cache> args... with env. */
static void cc(tu_proc *p, const char *cache, const char *const *env, const char *const *args)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/%s", g_tmp, cache);
    const char *argv[24] = {"--cache-dir", dir};
    size_t n = 2;
    for (; args[n - 2] && n < 23; n++)
        argv[n] = args[n - 2];
    argv[n] = NULL;
    tu_run_bin(p, VYRE_CACHECTL_BIN, argv, env, NULL);
}

#define CC(p, cache, env, ...) cc((p), (cache), (env), (const char *const[]){__VA_ARGS__, NULL})

static void need_jitlink(void)
{
    char tc[VYRE_BLOB_TOOLCHAIN_MAX];
    vyre_error err;
    if (vyre_compile_toolchain(VYRE_SOURCE_PTX, tc, sizeof tc, &err))
        cr_skip_test("nvJitLink cannot be loaded: %s", err.message);
}

static void ptx_key(char hex[VYRE_KEY_HEX_LEN + 1])
{
    vyre_compile_request req = {VYRE_SOURCE_PTX, k_ptx, strlen(k_ptx), "sm_90", "scale", NULL, 0};
    vyre_key k;
    vyre_error err;
    cr_assert_eq(vyre_compile_key(&req, &k, &err), 0, "%s", err.message);
    vyre_key_to_hex(&k, hex);
}

/* The counters of stats' row for http://127.0.0.1:port/vyre: hits,
 * misses, errors, skipped, rejected, writes. */
static void remote_counters(const char *out, int port, long c[6])
{
    char url[128];
    snprintf(url, sizeof url, "\nhttp://127.0.0.1:%d/vyre ", port);
    const char *row = strstr(out, "\nREMOTE ") ? strstr(out, url) : NULL;
    cr_assert_not_null(row, "no row for %s in:\n%s", url, out);
    int n = sscanf(row + strlen(url), "%ld %ld %ld %ld %ld %ld", &c[0], &c[1], &c[2], &c[3], &c[4],
                   &c[5]);
    cr_assert_eq(n, 6, "%s", out);
}

Test(cachectl_remote, seeded_on_one_machine_hit_on_another)
{
    need_jitlink();
    ts_server s;
    ts_nginx_start(&s);
    char ptx[700], remote[128];
    snprintf(ptx, sizeof ptx, "%s/scale.ptx", g_tmp);
    tu_write_file(ptx, k_ptx, strlen(k_ptx));
    snprintf(remote, sizeof remote, "VYRE_REMOTE_CACHE=http://127.0.0.1:%d/vyre", s.port);
    const char *with_remote[] = {remote, NULL};
    const char *no_compilers[] = {remote, "VYRE_NVJITLINK_LIBRARY=/nonexistent/libnvJitLink.so",
                                  "VYRE_NVRTC_LIBRARY=/nonexistent/libnvrtc.so", NULL};
    const char *no_compilers_no_remote[] = {"VYRE_REMOTE_CACHE",
                                            "VYRE_NVJITLINK_LIBRARY=/nonexistent/libnvJitLink.so",
                                            "VYRE_NVRTC_LIBRARY=/nonexistent/libnvrtc.so", NULL};
    tu_proc p;
    CC(&p, "a", with_remote, "seed", ptx, "--arch", "sm_90", "--entry", "scale");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(tu_has_line(p.out, "Seeded 1 module (1 kernel), fetched 0, already present 0, "
                                 "failed 0"),
              "%s", p.out);
    tu_proc_free(&p);
    char hex[VYRE_KEY_HEX_LEN + 1], obj[1400];
    ptx_key(hex);
    snprintf(obj, sizeof obj, "%s/vyre/%.2s/%s.vblob", s.root, hex, hex);
    cr_assert_eq(access(obj, R_OK), 0, "the seed was written back to the store");

    /* Control: without the store, machine C cannot compile at all. */
    CC(&p, "c", no_compilers_no_remote, "seed", ptx, "--arch", "sm_90", "--entry", "scale");
    cr_assert_neq(p.exit_code, 0, "compilers should be unloadable: %s", p.out);
    tu_proc_free(&p);

    /* Machine B: no compiler, the store has it: fetched, not "already
     * present" (it was not there before the seed). */
    CC(&p, "b", no_compilers, "seed", ptx, "--arch", "sm_90", "--entry", "scale");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char line[128];
    snprintf(line, sizeof line, "fetched  %.12s  sm_90  ", hex);
    cr_assert(strncmp(p.out, line, strlen(line)) == 0, "%s", p.out);
    cr_assert(tu_has_line(p.out, "Seeded 0 modules (0 kernels), fetched 1, already present 0, "
                                 "failed 0"),
              "%s", p.out);
    tu_proc_free(&p);
    /* Again: now it is present. */
    CC(&p, "b", no_compilers, "--json", "seed", ptx, "--arch", "sm_90", "--entry", "scale");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "\"fetched\": 0,") && strstr(p.out, "\"present\": 1,") &&
                  strstr(p.out, "\"status\": \"present\""),
              "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "b", with_remote, "verify");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    tu_proc_free(&p);
    CC(&p, "b", with_remote, "ls", "-q");
    cr_assert(tu_has_line(p.out, hex), "%s", p.out);
    tu_proc_free(&p);

    /* --json says fetched too (machine D, no compiler either). */
    CC(&p, "d", no_compilers, "--json", "seed", ptx, "--arch", "sm_90", "--entry", "scale");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "\"fetched\": 1,") && strstr(p.out, "\"present\": 0,") &&
                  strstr(p.out, "\"status\": \"fetched\"") &&
                  strstr(p.out, "\"schema_version\": 2"),
              "%s", p.out);
    tu_proc_free(&p);

    /* stats shows what B's seed did with the store. */
    CC(&p, "b", with_remote, "stats");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    /* A table: REMOTE HITS MISSES ERRORS SKIPPED REJECTED WRITES READ WRITTEN. */
    long c[6];
    remote_counters(p.out, s.port, c);
    cr_assert(c[0] == 1 && c[1] == 0 && c[4] == 0 && c[5] == 0, "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "a", with_remote, "stats");
    remote_counters(p.out, s.port, c);
    cr_assert_eq(c[5], 1, "%s", p.out);
    tu_proc_free(&p);
    ts_server_stop(&s);
}

Test(cachectl_remote, check_push_pull)
{
    ts_server s;
    ts_nginx_start(&s);
    /* A cubin seeds with no compiler. */
    char src[700];
    snprintf(src, sizeof src, "%s/k.cubin", g_tmp);
    static const char cubin[] = "\x7f"
                                "ELF\x02\x01\x01\x00 a stand-in cubin";
    tu_write_file(src, cubin, sizeof cubin - 1);
    const char *none[] = {"VYRE_REMOTE_CACHE", NULL};
    tu_proc p;
    CC(&p, "a", none, "seed", src, "--arch", "sm_90", "--entry", "k");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "a", none, "ls", "-q");
    char hex[VYRE_KEY_HEX_LEN + 1];
    cr_assert_eq(strlen(p.out), VYRE_KEY_HEX_LEN + 1, "%s", p.out);
    memcpy(hex, p.out, VYRE_KEY_HEX_LEN);
    hex[VYRE_KEY_HEX_LEN] = '\0';
    tu_proc_free(&p);

    char remote[256];
    snprintf(remote, sizeof remote, "VYRE_REMOTE_CACHE=http://127.0.0.1:%d/v", s.port);
    const char *env[] = {remote, NULL};

    CC(&p, "a", none, "remote", "check");
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-cachectl: error: no remote store is listed\n"
                            "hint: set VYRE_REMOTE_CACHE, e.g. "
                            "VYRE_REMOTE_CACHE='http://cache.example:8080/vyre'\n");
    tu_proc_free(&p);
    CC(&p, "a", env, "remote");
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-cachectl: error: remote needs an action\n"
                            "hint: use 'check', 'push' or 'pull'\n"
                            "try 'vyre-cachectl remote --help'\n");
    tu_proc_free(&p);
    CC(&p, "a", env, "remote", "push");
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "remote push needs keys or --all"), "%s", p.err);
    tu_proc_free(&p);
    CC(&p, "a", env, "remote", "pull", "abcd");
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "not a key: 'abcd'"), "%s", p.err);
    tu_proc_free(&p);

    CC(&p, "a", env, "remote", "check");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    char head[128];
    snprintf(head, sizeof head, "http://127.0.0.1:%d/v", s.port);
    /* The table: REMOTE, STATUS, RTT, WRITES (MESSAGE empty, left out). */
    cr_assert(strncmp(p.out, "REMOTE ", 7) == 0, "%s", p.out);
    char *row = strstr(p.out, head);
    cr_assert(row && row[-1] == '\n', "%s", p.out);
    cr_assert(strstr(row, "  reachable  ") && strstr(row, " ms  yes\n"), "%s", p.out);
    tu_proc_free(&p);

    CC(&p, "a", env, "remote", "push", "--all");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_str_eq(p.out, "pushed 1 blob (1 write, 0 failed) to 1 remote store\n");
    tu_proc_free(&p);

    CC(&p, "b", env, "remote", "pull", hex);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want[256];
    snprintf(want, sizeof want, "%s <- http://127.0.0.1:%d/v\n", hex, s.port);
    cr_assert_str_eq(p.out, want);
    tu_proc_free(&p);
    CC(&p, "b", env, "verify");
    cr_assert_eq(p.exit_code, 0, "%s", p.out);
    tu_proc_free(&p);

    /* A damaged object in the store: pull refuses it, with the reason. */
    char obj[1400];
    snprintf(obj, sizeof obj, "%s/v/%.2s/%s.vblob", s.root, hex, hex);
    size_t len = 0;
    char *data = tu_read_file(obj, &len);
    cr_assert_not_null(data);
    data[len - 1] ^= 0x55;
    tu_write_file(obj, data, len);
    free(data);
    CC(&p, "c", env, "remote", "pull", hex);
    cr_assert_eq(p.exit_code, 1);
    cr_assert(strstr(p.err, "rejected (payload-checksum)"), "%s", p.err);
    cr_assert(strstr(p.err, "hint: the object is not an intact vyre blob"), "%s", p.err);
    tu_proc_free(&p);

    /* The server gone: check says so, exit 1. */
    ts_server_stop(&s);
    CC(&p, "a", env, "remote", "check");
    cr_assert_eq(p.exit_code, 1);
    snprintf(want, sizeof want, "http://127.0.0.1:%d/v", s.port);
    cr_assert(strstr(p.out, want) && strstr(p.out, "UNREACHABLE"), "%s", p.out);
    tu_proc_free(&p);

    /* A bad list is one error with the hint. */
    const char *bad[] = {"VYRE_REMOTE_CACHE=http://h|ttl=5", NULL};
    CC(&p, "a", bad, "stats");
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "vyre-cachectl: error: VYRE_REMOTE_CACHE: bad value for "
                            "remote_storage: remote store 'http://h|ttl=5': unknown attribute "
                            "'ttl=5'\nhint: "),
              "%s", p.err);
    tu_proc_free(&p);
}

/* seed against a faulty Redis: bounded, an error counted, the module
 * seeded locally all the same. */
static void seed_against(fake_redis_mode mode, const char *attrs, const char *why)
{
    fake_redis f;
    fake_redis_start(&f, mode);
    char src[700], remote[256];
    snprintf(src, sizeof src, "%s/k.cubin", g_tmp);
    static const char cubin[] = "\x7f"
                                "ELF\x02\x01\x01\x00 a stand-in cubin";
    tu_write_file(src, cubin, sizeof cubin - 1);
    snprintf(remote, sizeof remote, "VYRE_REMOTE_CACHE=redis://127.0.0.1:%d%s", f.port, attrs);
    const char *env[] = {remote, NULL};
    tu_proc p;
    CC(&p, "a", env, "seed", src, "--arch", "sm_90");
    cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
    cr_assert(tu_has_line(p.out, "Seeded 1 module (0 kernels), fetched 0, already present 0, "
                                 "failed 0"),
              "%s", p.out);
    tu_proc_free(&p);
    CC(&p, "a", env, "remote", "check");
    cr_assert(strstr(p.out, why) || strstr(p.err, why), "[%s]\n%s%s", why, p.out, p.err);
    tu_proc_free(&p);
    fake_redis_stop(&f);
}

Test(cachectl_remote, a_trickling_redis_never_fails_a_seed)
{
    seed_against(FAKE_REDIS_TRICKLE, "|operation-timeout=300", "timed out");
}

Test(cachectl_remote, a_redis_declaring_2_gib_never_fails_a_seed)
{
    seed_against(FAKE_REDIS_HUGE, "|max-object-size=65536", "the reply declares 2147483647 bytes");
}
