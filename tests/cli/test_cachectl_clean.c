/*
 * test_cachectl_clean.c - blob header strings are foreign text: a blob
 * whose source name, architecture, toolchain and kernel names carry
 * terminal escapes (stored through libcore, as any writer of a shared
 * cache could) is shown escaped by `vyre-cachectl ls`, `show` and
 * `stats`, never raw; JSON keeps the data (jansson escapes it).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vyre/vyre.h"

#ifndef VYRE_CACHECTL_BIN
#error "tests/CMakeLists.txt must define VYRE_CACHECTL_BIN"
#endif

static char g_tmp[512];
static char g_cache[600];
static char g_env_home[700], g_env_xdg[700], g_env_conf[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_cache, sizeof g_cache, "%s/cache", g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_conf, sizeof g_env_conf, "XDG_CONFIG_HOME=%s/config", g_tmp);
    setenv("XDG_CONFIG_HOME", g_env_conf + strlen("XDG_CONFIG_HOME="), 1);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(cachectl_clean, .init = setup, .fini = teardown, .timeout = 120);

static void cachectl(tu_proc *p, const char *const *args)
{
    const char *const env[] = {
        g_env_home,        g_env_xdg,           g_env_conf, "VYRE_PTX_CACHE_DIR",
        "CUDA_CACHE_PATH", "VYRE_REMOTE_CACHE", NULL};
    tu_run_bin(p, VYRE_CACHECTL_BIN, args, env, NULL);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* No raw ESC, BEL or C1 CSI in text. */
static void assert_no_raw_controls(const char *what, const char *text)
{
    for (const unsigned char *s = (const unsigned char *)text; *s; s++)
        cr_assert(!(*s == 0x1b || *s == 0x07 || (s[0] == 0xc2 && s[1] == 0x9b)),
                  "%s printed a raw control byte 0x%02x at offset %zu:\n%s", what, *s,
                  (size_t)(s - (const unsigned char *)text), text);
}

/* One blob whose header strings are hostile; its key's hex into hex. */
static void put_hostile_blob(char *hex)
{
    vyre_cache *c = NULL;
    vyre_error err;
    vyre_error_clear(&err);
    cr_assert_eq(vyre_cache_open(g_cache, NULL, &c, &err), 0, "open: %s", err.message);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    memset(h.key.bytes, 0xab, sizeof h.key.bytes);
    h.kind = VYRE_BLOB_CUBIN;
    h.key_version = VYRE_KEY_VERSION;
    snprintf(h.arch, sizeof h.arch, "sm_90\x1b[5m");
    snprintf(h.toolchain, sizeof h.toolchain, "nvrtc\x07 13.0");
    snprintf(h.source, sizeof h.source, "\x1b[2Jevil.cu");
    static const char names[] = "k\x1b]0;title\x07\0ok\xc2\x9b"
                                "1m";
    h.n_kernels = 2;
    h.kernels = names;
    h.kernels_size = sizeof names;
    h.created_unix_ns = 1700000000LL * 1000000000LL;
    static const unsigned char payload[64] = {1, 2, 3};
    cr_assert_eq(vyre_cache_put(c, &h, payload, sizeof payload, &err), 0, "put: %s", err.message);
    vyre_key_to_hex(&h.key, hex);
    vyre_cache_close(c);
}

Test(cachectl_clean, header_strings_are_shown_escaped)
{
    char hex[VYRE_KEY_HEX_LEN + 1];
    put_hostile_blob(hex);
    tu_proc p;
    cachectl(&p, ARGS("--cache-dir", g_cache, "-v", "ls"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_no_raw_controls("ls", p.out);
    cr_assert(strstr(p.out, "  \\x1b[2Jevil.cu  "), "%s", p.out);
    cr_assert(strstr(p.out, "  sm_90\\x1b[5m  "), "%s", p.out);
    cr_assert(strstr(p.out, "k\\x1b]0;title\\x07,ok\\u009b1m"), "%s", p.out);
    cr_assert(strstr(p.out, "nvrtc\\x07 13.0"), "%s", p.out);
    tu_proc_free(&p);

    cachectl(&p, ARGS("--cache-dir", g_cache, "show", hex));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_no_raw_controls("show", p.out);
    tu_assert_line(p.out, "Source:            \\x1b[2Jevil.cu");
    tu_assert_line(p.out, "Architecture:      sm_90\\x1b[5m");
    tu_assert_line(p.out, "Toolchain:         nvrtc\\x07 13.0");
    tu_assert_line(p.out, "Kernels:           2: k\\x1b]0;title\\x07, ok\\u009b1m");
    tu_proc_free(&p);

    cachectl(&p, ARGS("--cache-dir", g_cache, "stats"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    assert_no_raw_controls("stats", p.out);
    tu_proc_free(&p);

    cachectl(&p, ARGS("--cache-dir", g_cache, "verify"));
    assert_no_raw_controls("verify", p.out);
    tu_proc_free(&p);

    /* JSON keeps the name as stored, escaped by jansson. */
    cachectl(&p, ARGS("--cache-dir", g_cache, "--json", "show", hex));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert_null(strchr(p.out, 0x1b), "%s", p.out);
    cr_assert(strstr(p.out, "\"source\": \"\\u001B[2Jevil.cu\""), "%s", p.out);
    tu_proc_free(&p);
}
