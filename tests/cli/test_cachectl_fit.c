/*
 * test_cachectl_fit.c - issue 25 for vyre-cachectl: its tables (ls, stats,
 * config, remote check) fit --width N (80, 200) or $COLUMNS on a terminal,
 * with --wide for everything; configured ages print as written (30d, not
 * 4w) and a zero duration as "0 s"; the bash completion offers subcommands
 * as words (not 'remote/' when a folder of that name is here) and the keys
 * of the cache after 'show'; the man page's synopsis lines stay apart.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "servers.h"
#include "testutil.h"
#include "vyre/vyre.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

static char g_tmp[512];
static char g_cache[600];
static char g_env_home[700];
static char g_env_xdg[700];
static char g_env_conf[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_conf, sizeof g_env_conf, "XDG_CONFIG_HOME=%s/config", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_fit, .init = setup, .fini = teardown, .timeout = 120);

static const char *const k_env[] = {g_env_home,
                                    g_env_xdg,
                                    g_env_conf,
                                    "VYRE_PTX_CACHE_DIR",
                                    "VYRE_REMOTE_CACHE",
                                    "VYRE_CACHE_MAX_AGE",
                                    "VYRE_CACHE_QUARANTINE_MAX_AGE",
                                    "COLUMNS",
                                    NULL};

/* vyre-cachectl --cache-dir <cache> args... */
static void cc(tu_proc *p, const char *const *extra, const char *const *args)
{
    const char *argv[TU_ARGS_MAX + 1] = {"--cache-dir", g_cache};
    size_t n = 2;
    for (; args[n - 2] && n < TU_ARGS_MAX; n++)
        argv[n] = args[n - 2];
    argv[n] = NULL;
    tu_run_bin(p, VYRE_CACHECTL_BIN, argv, k_env, extra);
}

#define CC(p, ...)          cc((p), NULL, (const char *const[]){__VA_ARGS__, NULL})
#define CC_ENV(p, env, ...) cc((p), (env), (const char *const[]){__VA_ARGS__, NULL})

/* The longest line of text. */
static size_t longest_line(const char *text)
{
    size_t best = 0;
    for (const char *p = text; *p;) {
        size_t l = strcspn(p, "\n");
        if (l > best)
            best = l;
        p += l + (p[l] == '\n');
    }
    return best;
}

#define assert_fits(out, width)                                                                    \
    cr_assert_leq(longest_line(out), (size_t)(width), "a line over %d columns:\n%s", (width), (out))

/* A blob with a long source name and several kernels: ls's widest row. */
static void populate(void)
{
    vyre_cache *c = NULL;
    vyre_error err;
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &err), 0, "open: %s", err.message);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    cr_assert_eq(vyre_key_from_hex("abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567"
                                   "89",
                                   &h.key),
                 0);
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90a");
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc-13.0");
    snprintf(h.source, sizeof h.source, "flash_attention_forward_v2.cu");
    static const char kernels[] = "flash_fwd_kernel_hdim128\0flash_fwd_splitkv_kernel\0"
                                  "flash_fwd_combine_kernel";
    h.kernels = kernels;
    h.kernels_size = sizeof kernels;
    h.n_kernels = 3;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h.created_unix_ns = ((int64_t)ts.tv_sec - 3 * 86400) * 1000000000;
    h.compile_ns = 0;
    static const unsigned char payload[700];
    cr_assert_eq(vyre_cache_put(c, &h, payload, sizeof payload, &err), 0, "put: %s", err.message);
    vyre_cache_close(c);
}

/* ---- tables fit --width, --wide shows everything --------------------------- */

Test(cachectl_fit, ls_fits_80_and_200_columns_wide_shows_all)
{
    populate();
    tu_proc p;
    CC(&p, "ls", "--width", "80");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_fits(p.out, 80);
    /* The key, size and last use stay; the kernels are cut, not dropped. */
    cr_assert(strncmp(p.out, "KEY ", 4) == 0, "%s", p.out);
    cr_assert(strstr(p.out, "LAST USE") && strstr(p.out, "SIZE") && strstr(p.out, "abcdef012345"),
              "%s", p.out);
    cr_assert(strstr(p.out, "KERNELS") && strstr(p.out, "flash_fwd"), "%s", p.out);
    tu_proc_free(&p);

    CC(&p, "ls", "--width", "200");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_fits(p.out, 200);
    cr_assert(strstr(p.out, "flash_attention_forward_v2.cu  flash_fwd_kernel_hdim128,"
                            "flash_fwd_splitkv_kernel,flash_fwd_combine_kernel\n"),
              "%s", p.out);
    tu_proc_free(&p);

    CC(&p, "ls", "--width", "80", "--wide", "-v");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_gt(longest_line(p.out), 80, "%s", p.out);
    cr_assert(strstr(p.out, "flash_fwd_combine_kernel  nvrtc-13.0\n"), "%s", p.out);
    tu_proc_free(&p);

    CC(&p, "ls", "--width", "8x");
    cr_assert_eq(p.exit_code, 2);
    cr_assert(strstr(p.err, "vyre-cachectl: error: bad value '8x' for --width\n"
                            "hint: give the columns to fit, such as 80 (20 to 10000)\n"),
              "%s", p.err);
    tu_proc_free(&p);
}

/* On a terminal (script(1) gives one), $COLUMNS is the width when the
 * terminal does not say its own. */
Test(cachectl_fit, ls_on_a_terminal_fits_columns)
{
    populate();
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "stty cols 0 2>/dev/null; COLUMNS=80 %s --cache-dir %s ls",
             VYRE_CACHECTL_BIN, g_cache);
    char sh[] = "/usr/bin/script", q[] = "-qec", dev[] = "/dev/null";
    char *const argv[] = {sh, q, cmd, dev, NULL};
    tu_proc p;
    tu_run(&p, argv, k_env);
    cr_assert_eq(p.exit_code, 0, "script(1) (util-linux): %s %s", p.out, p.err);
    for (char *r = p.out; (r = strchr(r, '\r'));)
        memmove(r, r + 1, strlen(r));
    assert_fits(p.out, 80);
    cr_assert(strstr(p.out, "abcdef012345"), "%s", p.out);
    tu_proc_free(&p);
}

/* A remote store with a long URL on a free port nobody listens on (a
 * refused connection): VYRE_REMOTE_CACHE=... into buf, the URL into url. */
static void long_remote(char *buf, size_t size, char *url, size_t url_size)
{
    snprintf(url, url_size, "http://127.0.0.1:%d/team-gpu-fleet/pipeline-cache/production/v2",
             ts_free_port());
    snprintf(buf, size, "VYRE_REMOTE_CACHE=%s|connect-timeout=200", url);
}

Test(cachectl_fit, stats_and_remote_check_fit_80_and_200_columns)
{
    populate();
    char remote[256], url[200], want[256];
    long_remote(remote, sizeof remote, url, sizeof url);
    const char *env[] = {remote, NULL};
    static const char *const widths[] = {"80", "200"};
    for (int w = 0; w < 2; w++) {
        int width = atoi(widths[w]);
        tu_proc p;
        CC_ENV(&p, env, "stats", "--width", widths[w]);
        cr_assert_eq(p.exit_code, 0, "%s", p.err);
        assert_fits(p.out, width);
        cr_assert(strstr(p.out, "REMOTE"), "%s", p.out);
        cr_assert(strstr(p.out, "\nhttp://127.0.0.1:"), "%s", p.out);
        snprintf(want, sizeof want, "\n%s  ", url);
        if (width == 200)
            cr_assert(strstr(p.out, want), "%s", p.out);
        tu_proc_free(&p);

        CC_ENV(&p, env, "remote", "check", "--width", widths[w]);
        cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
        assert_fits(p.out, width);
        cr_assert(strstr(p.out, "UNREACHABLE"), "%s", p.out);
        tu_proc_free(&p);
    }
}

Test(cachectl_fit, config_fits_80_and_200_columns)
{
    populate();
    char remote[256], url[200], want[400];
    long_remote(remote, sizeof remote, url, sizeof url);
    const char *env[] = {remote, NULL};
    tu_proc p;
    CC_ENV(&p, env, "config", "--width", "80");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_fits(p.out, 80);
    cr_assert(strstr(p.out, "max_size") && strstr(p.out, "remote_storage"), "%s", p.out);
    tu_proc_free(&p);

    CC_ENV(&p, env, "config", "--width", "200");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_fits(p.out, 200);
    cr_assert(strstr(p.out, "\nmax_size            5G  ") && strstr(p.out, "  default\n"), "%s",
              p.out);
    snprintf(want, sizeof want,
             "\nremote_storage      %s|connect-timeout=200  env VYRE_REMOTE_CACHE\n", url);
    cr_assert(strstr(p.out, want), "%s", p.out);
    tu_proc_free(&p);
}

/* ---- durations ---------------------------------------------------------------- */

/* A configured age prints as written in stats, as config shows it; a zero
 * duration is "0 s". */
Test(cachectl_fit, stats_prints_ages_as_configured_and_zero_as_0_s)
{
    populate();
    static const char *const ages[] = {"30d", "45d", "36h"};
    for (size_t i = 0; i < 3; i++) {
        char opt[64], want[128];
        snprintf(opt, sizeof opt, "max_age=%s", ages[i]);
        tu_proc p;
        CC(&p, "-o", opt, "stats", "-v");
        cr_assert_eq(p.exit_code, 0, "%s", p.err);
        snprintf(want, sizeof want, "  Unused blobs after:  %s (max_age)", ages[i]);
        tu_assert_line(p.out, want);
        tu_assert_line(p.out, "  Quarantine kept:     7d (quarantine_max_age)");
        tu_assert_line(p.out, "  tmp/ debris after:   1h");
        tu_assert_line(p.out, "Compile time saved:    0 s");
        tu_proc_free(&p);
        CC(&p, "-o", opt, "config", "max_age");
        cr_assert_eq(p.exit_code, 0, "%s", p.err);
        snprintf(want, sizeof want, "%s\n", ages[i]);
        cr_assert_str_eq(p.out, want);
        tu_proc_free(&p);
    }
}

/* ---- bash completion ---------------------------------------------------------- */

/* Runs the completion function in bash for the words (the last is the one
 * completed), from directory dir; out: `complete -p`, then one candidate a
 * line. */
static void complete_words(tu_proc *p, const char *dir, const char *words)
{
    char script[4096];
    snprintf(script, sizeof script,
             "cd '%s' || exit 9; . '%s/../completions/vyre.bash'\n"
             "complete -p vyre-cachectl\n"
             "COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
             "COMP_LINE=\"${COMP_WORDS[*]}\"; COMP_POINT=${#COMP_LINE}\n"
             "_vyre_tool\n"
             "for w in \"${COMPREPLY[@]}\"; do printf '%%s\\n' \"$w\"; done\n",
             dir, VYRE_TEST_SOURCE_DIR, words);
    char bash[] = "/bin/bash", norc[] = "--norc", c[] = "-c";
    char *const argv[] = {bash, norc, c, script, NULL};
    tu_run(p, argv, k_env);
    cr_assert_eq(p->exit_code, 0, "bash: %s%s", p->out, p->err);
}

Test(cachectl_fit, completion_offers_subcommands_as_words_and_keys_after_show)
{
    populate();
    char dir[700], words[1600];
    snprintf(dir, sizeof dir, "%s/work", g_tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    char remote[800];
    snprintf(remote, sizeof remote, "%s/remote", dir);
    cr_assert_eq(mkdir(remote, 0755), 0);

    /* Subcommands are words: readline must not take them for files (with
     * '-o filenames' a folder 'remote' here made it 'remote/'). */
    tu_proc p;
    snprintf(words, sizeof words, "'%s' rem", VYRE_CACHECTL_BIN);
    complete_words(&p, dir, words);
    cr_assert(strncmp(p.out, "complete -F _vyre_tool vyre-cachectl\n", 37) == 0, "%s", p.out);
    cr_assert(strstr(p.out, "\nremote\n"), "%s", p.out);
    tu_proc_free(&p);
    /* --width's value is not the subcommand. */
    snprintf(words, sizeof words, "'%s' --width 80 st", VYRE_CACHECTL_BIN);
    complete_words(&p, dir, words);
    cr_assert(strstr(p.out, "\nstats\n"), "%s", p.out);
    tu_proc_free(&p);

    /* show completes the cache's keys (from ls -q), with --cache-dir. */
    snprintf(words, sizeof words, "'%s' --cache-dir '%s' show abc", VYRE_CACHECTL_BIN, g_cache);
    complete_words(&p, dir, words);
    cr_assert(strstr(p.out, "\nabcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789\n"),
              "%s", p.out);
    tu_proc_free(&p);
    snprintf(words, sizeof words, "'%s' --cache-dir '%s' show f", VYRE_CACHECTL_BIN, g_cache);
    complete_words(&p, dir, words);
    cr_assert_eq(tu_count_lines(p.out), 1, "no key starts with f:\n%s", p.out);
    tu_proc_free(&p);
    /* So does remote push. */
    snprintf(words, sizeof words, "'%s' --cache-dir '%s' remote push a", VYRE_CACHECTL_BIN,
             g_cache);
    complete_words(&p, dir, words);
    cr_assert(strstr(p.out, "\nabcdef0123456789"), "%s", p.out);
    tu_proc_free(&p);
}

/* ---- the man page ------------------------------------------------------------- */

/* Every synopsis line starts on its own line: each '.B vyre-cachectl' of
 * the SYNOPSIS after the first follows a .br or .PP (remote pull and
 * config ran together); every subcommand of COMMANDS is its own .TP. */
Test(cachectl_fit, man_page_synopsis_lines_stay_apart)
{
    size_t len = 0;
    char *man = tu_read_file(VYRE_TEST_SOURCE_DIR "/../docs/man/vyre-cachectl.1", &len);
    cr_assert_not_null(man);
    char *syn = strstr(man, "\n.SH SYNOPSIS\n");
    cr_assert_not_null(syn);
    char *end = strstr(syn + 1, "\n.SH ");
    cr_assert_not_null(end);
    *end = '\0';
    int n = 0;
    for (char *p = strstr(syn, "\n.B vyre-cachectl"); p; p = strstr(p + 1, "\n.B vyre-cachectl")) {
        if (n++ == 0)
            continue;
        char *prev = p - 1;
        while (prev > syn && *prev != '\n')
            prev--;
        cr_assert(strncmp(prev, "\n.br\n", 5) == 0 || strncmp(prev, "\n.PP\n", 5) == 0,
                  "synopsis line %d runs into the one before:\n%.80s", n, prev + 1);
    }
    cr_assert_gt(n, 10);
    *end = '\n';
    /* In the description, each command's paragraph. */
    static const char *const cmds[] = {"remote pull", "config"};
    for (size_t i = 0; i < 2; i++) {
        char want[64];
        snprintf(want, sizeof want, "\n.TP\n.B %s\n", cmds[i]);
        cr_assert(strstr(end, want), "no '.TP' before '.B %s'", cmds[i]);
    }
    free(man);
}
