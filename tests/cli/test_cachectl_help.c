/*
 * test_cachectl_help.c - vyre-cachectl's help and completion show every
 * command and action (issue 36 point 4): the top-level --help lists each
 * command and each action of triton, inductor and remote, from the same
 * tables the completion helper answers from; "did you mean" suggests only
 * names of the level typed (an action of that command, or a command); the
 * bash completion offers an action's own options (`triton prune --<TAB>`).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

static char g_tmp[512];
static char g_env_home[700];
static char g_env_xdg[700];
static char g_env_conf[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_conf, sizeof g_env_conf, "XDG_CONFIG_HOME=%s/config", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_help, .init = setup, .fini = teardown, .timeout = 120);

static const char *const k_env[] = {g_env_home,
                                    g_env_xdg,
                                    g_env_conf,
                                    "VYRE_PTX_CACHE_DIR",
                                    "VYRE_REMOTE_CACHE",
                                    "TRITON_CACHE_DIR",
                                    "TORCHINDUCTOR_CACHE_DIR",
                                    "COLUMNS",
                                    NULL};

static void run(tu_proc *p, const char *const *args)
{
    tu_run_bin(p, VYRE_CACHECTL_BIN, args, k_env, NULL);
}

#define RUN(p, ...) run((p), (const char *const[]){__VA_ARGS__, NULL})

/* The names the completion helper lists after words (no option, no
 * operand), space-separated with a trailing space. */
static void helper_words(const char *const *words, char *out, size_t size)
{
    tu_proc p;
    run(&p, words);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    size_t off = 0;
    out[0] = '\0';
    for (const char *l = p.out; *l;) {
        size_t n = strcspn(l, "\t\n");
        const char *tab = l[n] == '\t' ? l + n : NULL;
        if (l[0] != '-' && tab && tab[1] == '0' && off + n + 2 < size) {
            memcpy(out + off, l, n);
            off += n;
            out[off++] = ' ';
            out[off] = '\0';
        }
        l += strcspn(l, "\n");
        l += *l == '\n';
    }
    tu_proc_free(&p);
}

/* A line of text starting with prefix. */
static int has_line_starting(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *l = text; *l;) {
        if (strncmp(l, prefix, n) == 0)
            return 1;
        l += strcspn(l, "\n");
        l += *l == '\n';
    }
    return 0;
}

Test(cachectl_help, top_level_help_lists_every_command_and_action)
{
    tu_proc h;
    RUN(&h, "--help");
    cr_assert_eq(h.exit_code, 0, "%s", h.err);

    /* What the issue saw missing: triton's prune, clear, show, explain;
     * inductor's own list; remote's actions. */
    static const char *const want[] = {
        "  triton stats ",   "  triton ls ",    "  triton show ",     "  triton explain ",
        "  triton verify ",  "  triton prune ", "  triton clear ",    "  triton relocate ",
        "  inductor stats ", "  inductor ls ",  "  inductor verify ", "  inductor prune ",
        "  inductor clear ", "  remote check ", "  remote push ",     "  remote pull ",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(has_line_starting(h.out, want[i]), "no line '%s' in:\n%s", want[i], h.out);

    /* And everything the tables hold, as the completion sees them. */
    char cmds[1024], acts[1024], line[2200];
    helper_words((const char *const[]){"--completion-helper", NULL}, cmds, sizeof cmds);
    cr_assert(strstr(cmds, "triton ") && strstr(cmds, "zero-stats "), "%s", cmds);
    for (char *c = cmds, *end; (end = strchr(c, ' ')); c = end + 1) {
        *end = '\0';
        snprintf(line, sizeof line, "  %s ", c);
        cr_assert(has_line_starting(h.out, line), "command %s is not in --help:\n%s", c, h.out);
        if (strcmp(c, "triton") && strcmp(c, "inductor") && strcmp(c, "remote"))
            continue;
        char *save = strdup(c);
        helper_words((const char *const[]){"--completion-helper", save, NULL}, acts, sizeof acts);
        cr_assert(acts[0], "%s has no actions", save);
        for (char *a = acts, *sp; (sp = strchr(a, ' ')); a = sp + 1) {
            *sp = '\0';
            snprintf(line, sizeof line, "  %s %s ", save, a);
            cr_assert(has_line_starting(h.out, line), "'%s %s' is not in --help:\n%s", save, a,
                      h.out);
        }
        free(save);
    }
    tu_proc_free(&h);
}

Test(cachectl_help, an_actions_help_lists_its_options)
{
    tu_proc p;
    RUN(&p, "triton", "prune", "--help");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(has_line_starting(p.out, "      --keep-arch ARCH  prune: "), "%s", p.out);
    cr_assert(has_line_starting(p.out, "      --print-timer     with --auto: "), "%s", p.out);
    cr_assert(has_line_starting(p.out, "      --cache-dir DIR   "), "%s", p.out);
    /* Its own options only: verify's --repair is not prune's. */
    cr_assert(!has_line_starting(p.out, "      --repair "), "%s", p.out);
    cr_assert_str_empty(p.err);
    tu_proc_free(&p);
    /* Without an action, every action's. */
    RUN(&p, "triton", "--help");
    cr_assert(has_line_starting(p.out, "      --repair          verify: "), "%s", p.out);
    cr_assert(has_line_starting(p.out, "      --keep-arch ARCH  prune: "), "%s", p.out);
    tu_proc_free(&p);
    RUN(&p, "inductor", "prune", "--help");
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(has_line_starting(p.out, "      --max-age AGE     prune: "), "%s", p.out);
    tu_proc_free(&p);
}

/* The three lines of a usage error. */
static void assert_usage(const tu_proc *p, const char *message, const char *hint, const char *sub)
{
    char want[512];
    cr_assert_eq(p->exit_code, 2, "exit %d: %s", p->exit_code, p->err);
    snprintf(want, sizeof want,
             "vyre-cachectl: error: %s\nhint: %s\ntry 'vyre-cachectl %s%s--help'\n", message, hint,
             sub ? sub : "", sub ? " " : "");
    cr_assert_str_eq(p->err, want);
}

Test(cachectl_help, did_you_mean_suggests_only_the_level_typed)
{
    tu_proc p;
    /* inductor has no explain: its own actions, never the top-level
     * explain (nor "did you mean 'stats'", which it said before). */
    RUN(&p, "inductor", "explian");
    assert_usage(&p, "unknown action 'explian'",
                 "inductor's actions: stats, ls, verify, prune, clear", "inductor");
    tu_proc_free(&p);
    RUN(&p, "inductor", "explain");
    assert_usage(&p, "unknown action 'explain'",
                 "inductor's actions: stats, ls, verify, prune, clear", "inductor");
    tu_proc_free(&p);
    RUN(&p, "inductor", "stat");
    assert_usage(&p, "unknown action 'stat'", "did you mean 'stats'?", "inductor");
    tu_proc_free(&p);
    /* triton's explain is triton's own. */
    RUN(&p, "triton", "explian");
    assert_usage(&p, "unknown action 'explian'", "did you mean 'explain'?", "triton");
    tu_proc_free(&p);
    RUN(&p, "remote", "chek");
    assert_usage(&p, "unknown action 'chek'", "did you mean 'check'?", "remote");
    tu_proc_free(&p);
    /* A mistyped command: the commands. */
    RUN(&p, "trtion", "stats");
    assert_usage(&p, "unknown command 'trtion'", "did you mean 'triton'?", NULL);
    tu_proc_free(&p);
}

/* The bash completion (completions/vyre.bash) of the words, the last one
 * being completed: one candidate a line. */
static void complete_words(tu_proc *p, const char *words)
{
    char script[4096];
    snprintf(script, sizeof script,
             ". '%s/../completions/vyre.bash'\n"
             "COMP_WORDS=('%s' %s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
             "_vyre_tool\n"
             "for w in \"${COMPREPLY[@]}\"; do printf '%%s\\n' \"$w\"; done\n",
             VYRE_TEST_SOURCE_DIR, VYRE_CACHECTL_BIN, words);
    char bash[] = "/bin/bash", norc[] = "--norc", c[] = "-c";
    char *const argv[] = {bash, norc, c, script, NULL};
    tu_run(p, argv, k_env);
    cr_assert_eq(p->exit_code, 0, "bash: %s%s", p->out, p->err);
}

Test(cachectl_help, completion_offers_an_actions_own_options)
{
    tu_proc p;
    complete_words(&p, "triton prune --");
    tu_assert_line(p.out, "--keep-arch");
    tu_assert_line(p.out, "--triton-version");
    tu_assert_line(p.out, "--dir");
    tu_assert_line(p.out, "--cache-dir");
    cr_assert(!tu_has_line(p.out, "--repair"), "verify's option offered for prune:\n%s", p.out);
    tu_proc_free(&p);
    complete_words(&p, "triton ''");
    cr_assert(tu_has_line(p.out, "relocate") && tu_has_line(p.out, "explain"), "%s", p.out);
    tu_proc_free(&p);
    complete_words(&p, "inductor ex");
    cr_assert_str_empty(p.out);
    tu_proc_free(&p);
    /* config's keys come from libcore's list (the old script lacked
     * triton_max_size, inductor_max_size and results_db). */
    complete_words(&p, "config tr");
    cr_assert_str_eq(p.out, "triton_max_size\n");
    tu_proc_free(&p);
    complete_words(&p, "config res");
    cr_assert_str_eq(p.out, "results_db\n");
    tu_proc_free(&p);
    /* -o's keys, from the same list. */
    complete_words(&p, "-o inductor");
    cr_assert_str_eq(p.out, "inductor_max_size=\n");
    tu_proc_free(&p);
    complete_words(&p, "stats --option triton_m");
    cr_assert_str_eq(p.out, "triton_max_size=\n");
    tu_proc_free(&p);
}
