/*
 * test_remote.c - remote stores of the pipeline cache (vyre/remote.h and
 * the remote half of vyre/cache.h).
 *
 * remote_parse: remote lists good and bad, with exact messages; token
 * files and their mode; CA files. remote_fault: a fault-injecting HTTP
 * server of the test's own (a body cut short, a stalled response, an endless body, a
 * 500, garbage): each is a miss, counted, bounded in time, and backs off.
 * remote_nginx / remote_redis: real servers on loopback ports. Two cache
 * directories as two machines sharing one store; corrupted, truncated,
 * wrong-key and oversized objects refused and never stored; the server
 * stopped mid-run; 4 processes sharing a store at once. remote_https: nginx
 * over TLS with a throwaway CA made by openssl: verified through
 * '|ca-file=', and refused (a miss counted as an error, nothing stored)
 * without it, for a certificate naming another host, or signed by another
 * CA. remote_rediss: redis-server with TLS and the same kind of CA: two
 * machines over TLS (by address and by name, with a password), a server
 * whose CA is not trusted or whose certificate names another host refused
 * (an error, nothing stored, the local put unharmed), and a server that
 * accepts TCP but never answers the handshake bounded by the timeout.
 * remote_redis_fault: a fake Redis server of the test's own that answers
 * GET with a bulk string it trickles one byte at a time (stopped by the
 * command's one deadline, not reset by every byte) or with a declared
 * length of 2 GiB (refused from the header, the body never read).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache/blob_internal.h"
#include "cache/cache_internal.h"
#include "cache/remote/remote_internal.h"
#include "cache/remote/resp.h"
#include "fakeredis.h"
#include "servers.h"
#include "testutil.h"
#include "vyre/cache.h"
#include "vyre/remote.h"

static char g_dir[1024];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    unsetenv(VYRE_REMOTE_ENV);
}

static void teardown(void)
{
    if (g_dir[0])
        tu_rm_rf(g_dir);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void key_of(vyre_key *k, uint64_t id)
{
    for (int i = 0; i < 4; i++) {
        uint64_t v = XXH64(&id, sizeof id, (uint64_t)i + 1);
        memcpy(k->bytes + 8 * i, &v, 8);
    }
}

/* A deterministic payload for id. */
static void payload_of(uint8_t *p, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(id * 131 + i * 7);
}

static vyre_blob_header header_of(const vyre_key *k)
{
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.key = *k;
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "sm_90");
    snprintf(h.toolchain, sizeof h.toolchain, "test-toolchain");
    h.compile_ns = 1000;
    return h;
}

/* The whole blob file for key id with an n-byte payload, as a store holds
 * it (malloc'ed). */
static uint8_t *blob_bytes(uint64_t id, size_t n, size_t *len)
{
    vyre_key k;
    key_of(&k, id);
    vyre_blob_header h = header_of(&k);
    h.format_version = VYRE_BLOB_FORMAT_VERSION;
    h.key_version = VYRE_KEY_VERSION;
    h.raw_size = h.stored_size = n;
    h.created_unix_ns = 1;
    uint8_t *buf = malloc(VYRE_BLOB_HEADER_SIZE + n);
    cr_assert_not_null(buf);
    payload_of(buf + VYRE_BLOB_HEADER_SIZE, n, id);
    vyre__blob_payload_sum(buf + VYRE_BLOB_HEADER_SIZE, n, h.payload_xxh128);
    cr_assert_eq(vyre_blob_header_encode(&h, buf, NULL), VYRE_OK);
    *len = VYRE_BLOB_HEADER_SIZE + n;
    return buf;
}

static vyre_cache *open_cache(const char *name, const char *spec)
{
    char root[1200];
    snprintf(root, sizeof root, "%s/%s", g_dir, name);
    vyre_cache *c = NULL;
    vyre_error e;
    cr_assert_eq(vyre_cache_open(root, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &c, &e), VYRE_OK, "%s",
                 e.message);
    if (spec)
        cr_assert_eq(vyre__cache_set_remotes(c, spec, &e), VYRE_OK, "%s", e.message);
    return c;
}

static void put_id(vyre_cache *c, uint64_t id, size_t n)
{
    vyre_key k;
    key_of(&k, id);
    vyre_blob_header h = header_of(&k);
    uint8_t *p = malloc(n);
    payload_of(p, n, id);
    vyre_error e;
    cr_assert_eq(vyre_cache_put(c, &h, p, n, &e), VYRE_OK, "%s", e.message);
    free(p);
}

/* vyre_cache_get of id: the return code; a hit is checked byte for byte. */
static int get_id(vyre_cache *c, uint64_t id, size_t n)
{
    vyre_key k;
    key_of(&k, id);
    vyre_blob *b = NULL;
    vyre_error e;
    int rc = vyre_cache_get(c, &k, &b, NULL, &e);
    if (rc == VYRE_OK) {
        cr_assert_eq(b->size, n);
        uint8_t *p = malloc(n);
        payload_of(p, n, id);
        cr_assert_eq(memcmp(b->payload, p, n), 0, "payload of %" PRIu64 " differs", id);
        cr_assert_eq(memcmp(b->header.key.bytes, k.bytes, VYRE_KEY_BYTES), 0);
        free(p);
        vyre_blob_free(b);
    }
    return rc;
}

/* Whether the local cache has a valid blob for id (no remote asked). */
static int local_has(const char *name, uint64_t id)
{
    char root[1200];
    snprintf(root, sizeof root, "%s/%s", g_dir, name);
    vyre_key k;
    key_of(&k, id);
    vyre_blob *b = NULL;
    int rc = vyre__blob_load(root, &k, &b, NULL, NULL);
    vyre_blob_free(b);
    return rc == VYRE_OK;
}

static vyre_remote_stats stats_of(vyre_cache *c, size_t i)
{
    vyre_remote_stats st;
    cr_assert_eq(vyre_cache_remote_get(c, i, 0, NULL, &st, NULL), VYRE_OK);
    return st;
}

/* ---- parsing ------------------------------------------------------------ */

TestSuite(remote_parse, .init = setup, .fini = teardown);

Test(remote_parse, http_with_attributes)
{
    vyre_remote_list *l = NULL;
    vyre_error e;
    cr_assert_eq(vyre_remote_list_parse("http://cache.example:8080/vyre/store/|read-only|connect-"
                                        "timeout=250|operation-timeout=2000",
                                        &l, &e),
                 VYRE_OK, "%s", e.message);
    cr_assert_eq(vyre_remote_list_count(l), 1);
    const vyre_remote_info *r = vyre_remote_list_info(l, 0);
    cr_assert_eq(r->scheme, VYRE_REMOTE_HTTP);
    cr_assert_str_eq(r->host, "cache.example");
    cr_assert_eq(r->port, 8080);
    cr_assert_str_eq(r->prefix, "/vyre/store");
    cr_assert_eq(r->read_only, 1);
    cr_assert_eq(r->connect_timeout_ms, 250);
    cr_assert_eq(r->operation_timeout_ms, 2000);
    cr_assert_str_eq(r->url, "http://cache.example:8080/vyre/store");
    cr_assert_null(vyre_remote_list_info(l, 1));
    vyre_remote_list_free(l);
}

Test(remote_parse, defaults_and_several)
{
    vyre_remote_list *l = NULL;
    vyre_error e;
    cr_assert_eq(vyre_remote_list_parse("  http://h1\thttps://u:s3cr%40t@h2/p  redis://r:6380/3|"
                                        "expiry=60 redis://[::1]\n",
                                        &l, &e),
                 VYRE_OK, "%s", e.message);
    cr_assert_eq(vyre_remote_list_count(l), 4);
    const vyre_remote_info *a = vyre_remote_list_info(l, 0), *b = vyre_remote_list_info(l, 1),
                           *c = vyre_remote_list_info(l, 2), *d = vyre_remote_list_info(l, 3);
    cr_assert_eq(a->port, 80);
    cr_assert_str_eq(a->prefix, "");
    cr_assert_eq(a->connect_timeout_ms, VYRE_REMOTE_CONNECT_TIMEOUT_MS);
    cr_assert_eq(a->operation_timeout_ms, VYRE_REMOTE_OPERATION_TIMEOUT_MS);
    cr_assert_eq(a->read_only, 0);
    cr_assert_eq(a->max_object_bytes,
                 VYRE_BLOB_HEADER_SIZE + VYRE_BLOB_MAX_PAYLOAD + VYRE_BLOB_KERNELS_MAX);
    cr_assert_eq(b->scheme, VYRE_REMOTE_HTTPS);
    cr_assert_eq(b->port, 443);
    cr_assert_eq(b->has_user, 1);
    cr_assert_eq(b->has_password, 1);
    cr_assert_str_eq(b->url, "https://u:***@h2:443/p", "the password is never shown");
    cr_assert_eq(c->scheme, VYRE_REMOTE_REDIS);
    cr_assert_eq(c->port, 6380);
    cr_assert_eq(c->db, 3);
    cr_assert_eq(c->expiry_s, 60);
    cr_assert_str_eq(c->url, "redis://r:6380/3");
    cr_assert_str_eq(d->host, "::1");
    cr_assert_eq(d->port, 6379);
    cr_assert_str_eq(d->url, "redis://[::1]:6379/0");
    vyre_remote_list_free(l);

    cr_assert_eq(vyre_remote_list_parse(" \t ", &l, &e), VYRE_OK);
    cr_assert_eq(vyre_remote_list_count(l), 0);
    vyre_remote_list_free(l);
    cr_assert_eq(vyre_remote_list_parse(NULL, &l, &e), VYRE_OK);
    cr_assert_eq(vyre_remote_list_count(l), 0);
    vyre_remote_list_free(l);
}

static void bad_spec(const char *spec, int code, const char *message, const char *hint_part)
{
    vyre_remote_list *l = (vyre_remote_list *)1;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), code, "'%s': %s", spec, e.message);
    cr_assert_null(l);
    cr_assert_str_eq(e.message, message, "'%s'", spec);
    cr_assert(strstr(e.hint, hint_part), "'%s': hint '%s' lacks '%s'", spec, e.hint, hint_part);
}

Test(remote_parse, bad_specs)
{
    bad_spec("cache.example/x", VYRE_EINVAL,
             "remote store 'cache.example/x': not a URL (no 'scheme://')", "http://host");
    bad_spec("ftp://h/x", VYRE_EINVAL, "remote store 'ftp://h/x': unknown scheme 'ftp'",
             "http, https, redis or rediss");
    bad_spec("http://h:0", VYRE_EINVAL, "remote store 'http://h:0': bad port '0'", "1 to 65535");
    bad_spec("http://h:99999/x", VYRE_EINVAL, "remote store 'http://h:99999/x': bad port '99999'",
             "1 to 65535");
    bad_spec("http://h:80x", VYRE_EINVAL, "remote store 'http://h:80x': bad port '80x'",
             "1 to 65535");
    bad_spec("http:///x", VYRE_EINVAL, "remote store 'http:///x': no host", "host name");
    bad_spec("http://h$t/x", VYRE_EINVAL,
             "remote store 'http://h$t/x': bad character '$' in host 'h$t'", "letters, digits");
    bad_spec("http://h/a?b=1", VYRE_EINVAL,
             "remote store 'http://h/a?b=1': bad character '?' in prefix '/a?b=1'", "plain path");
    bad_spec("http://h/a/../b", VYRE_EINVAL,
             "remote store 'http://h/a/../b': prefix '/a/../b' has a dot component", "'..'");
    bad_spec("http://h|nope", VYRE_EINVAL, "remote store 'http://h|nope': unknown attribute 'nope'",
             "|read-only");
    bad_spec("http://h||read-only", VYRE_EINVAL,
             "remote store 'http://h||read-only': empty attribute", "|read-only");
    bad_spec("http://h|read-only=1", VYRE_EINVAL,
             "remote store 'http://h|read-only=1': attribute 'read-only' takes no value", "alone");
    bad_spec("http://h|connect-timeout=abc", VYRE_EINVAL,
             "remote store 'http://h|connect-timeout=abc': attribute 'connect-timeout=abc' has "
             "value 'abc'",
             "milliseconds");
    bad_spec("http://h|operation-timeout=0", VYRE_EINVAL,
             "remote store 'http://h|operation-timeout=0': attribute 'operation-timeout=0' has "
             "value '0'",
             "milliseconds");
    bad_spec("http://h|expiry=60", VYRE_EINVAL,
             "remote store 'http://h|expiry=60': attribute 'expiry' is for Redis stores only",
             "expires objects itself");
    bad_spec("redis://h|max-object-size=12", VYRE_EINVAL,
             "remote store 'redis://h|max-object-size=12': attribute 'max-object-size' has value "
             "'12'",
             "256");
    bad_spec("redis://h/x", VYRE_EINVAL, "remote store 'redis://h/x': bad database 'x'",
             "database number");
    bad_spec("rediss://h|ca-file", VYRE_EINVAL,
             "remote store 'rediss://h|ca-file': attribute 'ca-file' needs a path",
             "|ca-file=PATH");
    bad_spec("http://[zz]/", VYRE_EINVAL, "remote store 'http://[zz]/': bad IPv6 host", "[::1]");
    /* A password never shows in a message. */
    bad_spec("https://u:topsecret@h:0/x", VYRE_EINVAL,
             "remote store 'https://***@h:0/x': bad port '0'", "1 to 65535");
    bad_spec("http://u:pw%4@h", VYRE_EINVAL, "remote store 'http://***@h': bad password in the URL",
             "percent-encode");
    bad_spec("http://a http://b http://c http://d http://e http://f http://g http://h http://i",
             VYRE_ETOOBIG, "more than 8 remote stores", "at most 8");
}

static void write_token(const char *path, const char *text, mode_t mode)
{
    tu_write_file(path, text, strlen(text));
    cr_assert_eq(chmod(path, mode), 0);
}

Test(remote_parse, token_file)
{
    char tok[1200], spec[1400];
    snprintf(tok, sizeof tok, "%s/token", g_dir);
    write_token(tok, "abc.DEF-123\n", 0600);
    snprintf(spec, sizeof spec, "https://store.example/c|token-file=%s", tok);
    vyre_remote_list *l = NULL;
    vyre_error e;
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(vyre_remote_list_info(l, 0)->token_file, tok);
    vyre_remote_list_free(l);

    /* Readable by others: refused, with the chmod that fixes it. */
    cr_assert_eq(chmod(tok, 0644), 0);
    char msg[4096], hint[1400];
    snprintf(msg, sizeof msg,
             "remote store '%s': token file '%s' has mode 0644: others may read it, so it is "
             "not used",
             spec, tok);
    snprintf(hint, sizeof hint, "run: chmod 600 '%s'", tok);
    bad_spec(spec, VYRE_EUNSAFE, msg, hint);
    cr_assert_eq(chmod(tok, 0640), 0);
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_EUNSAFE);

    write_token(tok, "\n", 0600);
    snprintf(msg, sizeof msg, "remote store '%s': token file '%s' is empty", spec, tok);
    bad_spec(spec, VYRE_EINVAL, msg, "first line");

    write_token(tok, "two words\n", 0600);
    snprintf(msg, sizeof msg,
             "remote store '%s': token file '%s' holds a character 0x20 at offset 3", spec, tok);
    bad_spec(spec, VYRE_EINVAL, msg, "printable");

    write_token(tok, "t0k\n", 0600);
    snprintf(spec, sizeof spec, "https://u:p@store.example/c|token-file=%s", tok);
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_EINVAL);
    cr_assert(strstr(e.message, "both basic-auth credentials and a bearer token given"), "%s",
              e.message);

    snprintf(spec, sizeof spec, "https://h|token-file=%s/missing", g_dir);
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "cannot open token file"), "%s", e.message);

    /* A symlink to a good token file is not followed. */
    char link[1200];
    snprintf(link, sizeof link, "%s/token-link", g_dir);
    cr_assert_eq(symlink(tok, link), 0);
    snprintf(spec, sizeof spec, "https://h|token-file=%s", link);
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_EUNSAFE, "%s", e.message);
}

/* A file that passes the parse-time check (a PEM certificate marker); TLS
 * itself is tested against real certificates in remote_https. */
static void write_pem(const char *path)
{
    const char *pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    tu_write_file(path, pem, strlen(pem));
}

Test(remote_parse, ca_file)
{
    char ca[1200], spec[2600], msg[4096];
    snprintf(ca, sizeof ca, "%s/ca.pem", g_dir);
    write_pem(ca);
    cr_assert_eq(chmod(ca, 0644), 0, "a CA certificate is public: any mode is fine");
    snprintf(spec, sizeof spec, "https://store.example/c|ca-file=%s|read-only", ca);
    vyre_remote_list *l = NULL;
    vyre_error e;
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(vyre_remote_list_info(l, 0)->ca_file, ca);
    cr_assert_eq(vyre_remote_list_info(l, 0)->read_only, 1);
    cr_assert_str_eq(vyre_remote_list_info(l, 0)->url, "https://store.example:443/c");
    vyre_remote_list_free(l);
    /* Without the attribute: the system's CA store. */
    cr_assert_eq(vyre_remote_list_parse("https://store.example/c", &l, &e), VYRE_OK);
    cr_assert_str_eq(vyre_remote_list_info(l, 0)->ca_file, "");
    vyre_remote_list_free(l);

    /* A symbolic link is followed, as the system's CA files are links. */
    char link[1200];
    snprintf(link, sizeof link, "%s/ca-link.pem", g_dir);
    cr_assert_eq(symlink(ca, link), 0);
    snprintf(spec, sizeof spec, "https://h|ca-file=%s", link);
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_OK, "%s", e.message);
    vyre_remote_list_free(l);

    /* Missing. */
    snprintf(spec, sizeof spec, "https://h|ca-file=%s/missing.pem", g_dir);
    snprintf(msg, sizeof msg,
             "remote store '%s': cannot open CA file '%s/missing.pem': No such file or directory",
             spec, g_dir);
    bad_spec(spec, VYRE_ENOENT, msg, "check the ca-file= path");

    /* A directory (a c_rehash'ed one included) is not a CA file. */
    snprintf(spec, sizeof spec, "https://h|ca-file=%s", g_dir);
    snprintf(msg, sizeof msg, "remote store '%s': CA file '%s' is not a regular file", spec, g_dir);
    bad_spec(spec, VYRE_EINVAL, msg, "not a directory");

    /* Empty, or not PEM. */
    char other[1200];
    snprintf(other, sizeof other, "%s/empty.pem", g_dir);
    tu_write_file(other, "", 0);
    snprintf(spec, sizeof spec, "https://h|ca-file=%s", other);
    snprintf(msg, sizeof msg, "remote store '%s': CA file '%s' is 0 bytes long", spec, other);
    bad_spec(spec, VYRE_EINVAL, msg, "PEM");
    snprintf(other, sizeof other, "%s/ca.der", g_dir);
    tu_write_file(other, "\x30\x82\x01\x0a", 4);
    snprintf(spec, sizeof spec, "https://h|ca-file=%s", other);
    snprintf(msg, sizeof msg,
             "remote store '%s': CA file '%s' holds no PEM certificate ('-----BEGIN "
             "CERTIFICATE-----')",
             spec, other);
    bad_spec(spec, VYRE_EINVAL, msg, "openssl x509 -inform DER");

    /* Unreadable (root reads anything, so only as another user). */
    if (geteuid() != 0) {
        snprintf(other, sizeof other, "%s/locked.pem", g_dir);
        write_pem(other);
        cr_assert_eq(chmod(other, 0), 0);
        snprintf(spec, sizeof spec, "https://h|ca-file=%s", other);
        snprintf(msg, sizeof msg, "remote store '%s': cannot open CA file '%s': Permission denied",
                 spec, other);
        bad_spec(spec, VYRE_EPERM, msg, "readable");
    }

    /* No path; not an https:// store. */
    bad_spec("https://h|ca-file", VYRE_EINVAL,
             "remote store 'https://h|ca-file': attribute 'ca-file' needs a path", "|ca-file=PATH");
    bad_spec("https://h|ca-file=", VYRE_EINVAL,
             "remote store 'https://h|ca-file=': attribute 'ca-file' needs a path",
             "|ca-file=PATH");
    snprintf(spec, sizeof spec, "http://h|ca-file=%s", ca);
    snprintf(msg, sizeof msg,
             "remote store '%s': attribute 'ca-file' is for https:// and rediss:// "
             "stores only",
             spec);
    bad_spec(spec, VYRE_EINVAL, msg, "https://");
    snprintf(spec, sizeof spec, "redis://h|ca-file=%s", ca);
    snprintf(msg, sizeof msg,
             "remote store '%s': attribute 'ca-file' is for https:// and rediss:// "
             "stores only",
             spec);
    bad_spec(spec, VYRE_EINVAL, msg, "https://");

    /* There is no attribute that turns verification off. */
    bad_spec("https://h|insecure", VYRE_EINVAL,
             "remote store 'https://h|insecure': unknown attribute 'insecure'", "|ca-file=PATH");
    bad_spec("https://h|verify=0", VYRE_EINVAL,
             "remote store 'https://h|verify=0': unknown attribute 'verify=0'", "|ca-file=PATH");
}

Test(remote_parse, rediss_and_ca_file)
{
    char ca[1200], spec[1400];
    snprintf(ca, sizeof ca, "%s/ca.pem", g_dir);
    write_pem(ca);
    snprintf(spec, sizeof spec, "rediss://:pw@h/2|ca-file=%s", ca);
    vyre_remote_list *l = NULL;
    vyre_error e;
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_OK, "%s", e.message);
    const vyre_remote_info *i = vyre_remote_list_info(l, 0);
    cr_assert_eq(i->scheme, VYRE_REMOTE_REDISS);
    cr_assert_eq(i->port, 6379);
    cr_assert_eq(i->db, 2);
    cr_assert_str_eq(i->url, "rediss://:***@h:6379/2");
    cr_assert_str_eq(i->ca_file, ca);
    vyre_remote_list_free(l);
    cr_assert_eq(vyre_remote_list_parse("rediss://h", &l, &e), VYRE_OK, "%s", e.message);
    cr_assert_str_eq(vyre_remote_list_info(l, 0)->ca_file, "");
    vyre_remote_list_free(l);
}

Test(remote_parse, from_the_environment)
{
    char root[1200];
    snprintf(root, sizeof root, "%s/c", g_dir);
    setenv(VYRE_REMOTE_ENV, "http://127.0.0.1:1/x|read-only redis://127.0.0.1:1", 1);
    vyre_cache *c = NULL;
    vyre_error e;
    cr_assert_eq(vyre_cache_open(root, NULL, &c, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(vyre_cache_remote_count(c), 2);
    vyre_cache_close(c);
    cr_assert_eq(vyre_cache_open(root, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &c, &e), VYRE_OK);
    cr_assert_eq(vyre_cache_remote_count(c), 0);
    vyre_cache_close(c);

    setenv(VYRE_REMOTE_ENV, "http://h|bogus", 1);
    c = (vyre_cache *)1;
    cr_assert_eq(vyre_cache_open(root, NULL, &c, &e), VYRE_ECONFIG);
    cr_assert_null(c);
    cr_assert_str_eq(e.message, "VYRE_REMOTE_CACHE: bad value for remote_storage: remote store "
                                "'http://h|bogus': unknown attribute 'bogus'");
    unsetenv(VYRE_REMOTE_ENV);
}

/* An object from a store gets every check a local load makes, in the v2
 * format of issue 12: the kernel-name table after the payload is checked
 * (checksum and form) and comes with the blob; a damaged table, an object
 * larger than any blob and an intact blob of an older key format (v1,
 * stale) are refused. */
Test(remote_parse, objects_get_the_local_load_checks)
{
    char root[1200];
    snprintf(root, sizeof root, "%s/local", g_dir);
    vyre_cache *c = NULL;
    vyre_error e;
    cr_assert_eq(vyre_cache_open(root, TU_OPEN_FLAGS(VYRE_CACHE_NO_REMOTE), &c, &e), 0, "%s",
                 e.message);
    vyre_cache_close(c); /* the directories */
    vyre_key k;
    key_of(&k, 77);
    vyre_blob_header h = header_of(&k);
    static const char names[] = "saxpy\0negate";
    h.kernels = names;
    h.kernels_size = sizeof names;
    h.n_kernels = 2;
    uint8_t payload[1000];
    payload_of(payload, sizeof payload, 77);
    cr_assert_eq(vyre__blob_store(root, &h, payload, sizeof payload, NULL, &e), 0, "%s", e.message);
    char path[1400];
    cr_assert_eq(vyre_blob_path(root, &k, path, sizeof path, &e), 0);
    size_t len = 0;
    uint8_t *file = (uint8_t *)tu_read_file(path, &len);
    cr_assert_not_null(file);
    cr_assert_eq(len, VYRE_BLOB_HEADER_SIZE + sizeof payload + sizeof names);

    vyre_blob *b = NULL;
    vyre_blob_reject why = VYRE_REJECT_NONE;
    cr_assert_eq(vyre__blob_from_memory(file, len, "store/x", &k, &b, &why, &e), 0, "%s",
                 e.message);
    cr_assert_eq(b->header.n_kernels, 2);
    cr_assert(vyre__kernel_list_has(b->header.kernels, b->header.kernels_size, "negate"));
    cr_assert_eq(b->size, sizeof payload);
    cr_assert_eq(memcmp(b->payload, payload, sizeof payload), 0);
    vyre_blob_free(b);

    /* The kernel table damaged: its checksum. */
    file[len - 2] ^= 0x20;
    b = (vyre_blob *)1;
    cr_assert_eq(vyre__blob_from_memory(file, len, "store/x", &k, &b, &why, &e), VYRE_ECORRUPT);
    cr_assert_null(b);
    cr_assert_eq(why, VYRE_REJECT_PAYLOAD_SUM, "%s", e.message);
    cr_assert(strstr(e.message, "kernel-name table"), "%s", e.message);
    file[len - 2] ^= 0x20;

    /* Cut before its table: truncated. */
    cr_assert_eq(vyre__blob_from_memory(file, len - 3, "store/x", &k, &b, &why, &e), VYRE_ECORRUPT);
    cr_assert_eq(why, VYRE_REJECT_TRUNCATED);

    /* Larger than any blob: refused before anything is looked at. */
    cr_assert_eq(vyre__blob_from_memory(file,
                                        (size_t)VYRE_BLOB_HEADER_SIZE + VYRE_BLOB_MAX_PAYLOAD +
                                            VYRE_BLOB_KERNELS_MAX + 1,
                                        "store/x", &k, &b, &why, &e),
                 VYRE_ECORRUPT);
    cr_assert_eq(why, VYRE_REJECT_TRAILING);

    /* The same blob under key format 1: intact, but stale. */
    vyre_blob_header old;
    cr_assert_eq(vyre__blob_header_decode(file, len, &old, &why, &e), 0, "%s", e.message);
    old.key_version = 1;
    cr_assert_eq(vyre_blob_header_encode(&old, file, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__blob_from_memory(file, len, "store/x", &k, &b, &why, &e), VYRE_EVERSION);
    cr_assert_null(b);
    cr_assert_eq(why, VYRE_REJECT_STALE, "%s", e.message);
    cr_assert(strstr(e.message, "stale"), "%s", e.message);
    free(file);
}

/* ---- a fault-injecting server -------------------------------------------- */

/* No Criterion .timeout on these suites: suite timeouts make libcriterion
 * 2.4.1's runner leak (see test_adversarial_trace.c); every wait in them is
 * bounded by the remotes' own timeouts and ts_wait_port's. */

TestSuite(remote_fault, .init = setup, .fini = teardown);

static void fault_case(ts_fault_mode mode, const char *attrs, uint64_t max_ms, int want_rejected)
{
    ts_fault f;
    ts_fault_start(&f, mode);
    char spec[256];
    snprintf(spec, sizeof spec, "http://127.0.0.1:%d/store%s", f.port, attrs);
    vyre_cache *c = open_cache("c", spec);
    uint64_t t0 = mono_ns();
    cr_assert_eq(get_id(c, 1, 100), VYRE_ENOENT, "a faulty answer is a miss");
    uint64_t ms = (mono_ns() - t0) / 1000000;
    cr_assert_lt(ms, max_ms, "the miss took %" PRIu64 " ms", ms);
    vyre_remote_stats st = stats_of(c, 0);
    cr_assert_eq(st.hits, 0);
    cr_assert_eq(st.rejected, (uint64_t)want_rejected);
    cr_assert_eq(st.errors, (uint64_t)!want_rejected);
    cr_assert_eq(f.requests, 1);
    cr_assert_not(local_has("c", 1), "nothing is stored");
    if (!want_rejected) {
        /* Backing off: the next miss asks no one, and is immediate. */
        t0 = mono_ns();
        cr_assert_eq(get_id(c, 2, 100), VYRE_ENOENT);
        cr_assert_lt((mono_ns() - t0) / 1000000, 50);
        st = stats_of(c, 0);
        cr_assert_eq(st.skipped, 1);
        cr_assert_eq(f.requests, 1);
        /* A put does not fail and asks no one either. */
        put_id(c, 3, 100);
        cr_assert_eq(stats_of(c, 0).skipped, 2);
        cr_assert(local_has("c", 3));
    }
    vyre_cache_close(c);
    ts_fault_stop(&f);
}

Test(remote_fault, body_cut_short)
{
    fault_case(TS_FAULT_SHORT_BODY, "", 2000, 0);
}

Test(remote_fault, stalled_response_times_out)
{
    fault_case(TS_FAULT_STALL, "|operation-timeout=300", 1500, 0);
}

Test(remote_fault, server_error)
{
    fault_case(TS_FAULT_STATUS_500, "", 2000, 0);
}

Test(remote_fault, endless_body_refused_by_size)
{
    fault_case(TS_FAULT_HUGE, "|max-object-size=65536", 3000, 1);
}

Test(remote_fault, garbage_and_foreign_blobs_refused)
{
    ts_fault f;
    static const char junk[] = "<html>not found, really</html>";
    f.body = junk;
    f.body_len = sizeof junk - 1;
    ts_fault_start(&f, TS_FAULT_BODY);
    char spec[256];
    snprintf(spec, sizeof spec, "http://127.0.0.1:%d/store", f.port);
    vyre_cache *c = open_cache("c", spec);
    cr_assert_eq(get_id(c, 1, 100), VYRE_ENOENT);
    /* A valid blob, but of another key: the server answers it for every key. */
    size_t len = 0;
    uint8_t *other = blob_bytes(99, 100, &len);
    f.body = other;
    f.body_len = len;
    cr_assert_eq(get_id(c, 1, 100), VYRE_ENOENT);
    vyre_remote_stats st = stats_of(c, 0);
    cr_assert_eq(st.rejected, 2);
    cr_assert_eq(st.errors, 0);
    cr_assert_eq(st.hits, 0);
    cr_assert_not(local_has("c", 1));
    cr_assert_not(local_has("c", 99));
    /* For its own key it is accepted: the same bytes, asked for id 99. */
    cr_assert_eq(get_id(c, 99, 100), VYRE_OK);
    cr_assert_eq(stats_of(c, 0).hits, 1);
    cr_assert(local_has("c", 99), "an accepted object is stored locally");
    vyre_cache_close(c);
    ts_fault_stop(&f);
    free(other);
}

Test(remote_fault, unreachable_remote_is_bounded)
{
    /* Nothing listens on that port: refused at once, then backing off. */
    int port = ts_free_port();
    char spec[128];
    snprintf(spec, sizeof spec, "http://127.0.0.1:%d/x redis://127.0.0.1:%d", port, port);
    vyre_cache *c = open_cache("c", spec);
    uint64_t t0 = mono_ns();
    put_id(c, 1, 64);
    cr_assert_eq(get_id(c, 2, 64), VYRE_ENOENT);
    cr_assert_eq(get_id(c, 1, 64), VYRE_OK, "the local put went through");
    cr_assert_lt((mono_ns() - t0) / 1000000, 1000);
    for (size_t i = 0; i < 2; i++) {
        vyre_remote_stats st = stats_of(c, i);
        cr_assert_eq(st.put_errors, 1, "remote %zu", i);
        cr_assert_eq(st.skipped, 1, "remote %zu: the get after the failed put was skipped", i);
    }
    vyre_remote_check chk;
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_check(c, 0, &chk, &e), VYRE_OK);
    cr_assert_eq(chk.reachable, 0);
    cr_assert(strstr(chk.message, "Couldn't connect") || strstr(chk.message, "connect"), "%s",
              chk.message);
    vyre_cache_close(c);
}

/* Counters are keyed by the whole URL: two remotes whose URLs differ only
 * in their last character (URLs as long as the parser takes, so past the
 * 560 characters "remote %.560s" kept when VYRE_REMOTE_URL_MAX allows it)
 * each keep their own lifetime counters in the index. */
static void long_url(char *out, size_t size, int port, char last)
{
    int n = snprintf(out, size, "http://127.0.0.1:%d/", port);
    size_t len = VYRE_REMOTE_URL_MAX - 1; /* the longest URL the parser takes */
    cr_assert_lt(len, size);
    memset(out + n, 'p', len - (size_t)n);
    out[len - 1] = last;
    out[len] = '\0';
}

Test(remote, long_urls_keep_their_own_counters, .init = setup, .fini = teardown)
{
    int port = ts_free_port(); /* nothing listens: every put is an error */
    char url_a[VYRE_REMOTE_URL_MAX], url_b[VYRE_REMOTE_URL_MAX];
    long_url(url_a, sizeof url_a, port, 'a');
    long_url(url_b, sizeof url_b, port, 'b');
    cr_assert_eq(strncmp(url_a, url_b, strlen(url_a) - 1), 0);
    vyre_cache *c = open_cache("c", url_a);
    put_id(c, 1, 64);
    cr_assert_eq(stats_of(c, 0).put_errors, 1);
    vyre_cache_close(c); /* records remote a's counters in the index */

    c = open_cache("c", url_b);
    vyre_remote_stats t;
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_get(c, 0, VYRE_CACHE_REMOTE_TOTALS, NULL, &t, &e), VYRE_OK, "%s",
                 e.message);
    cr_assert_eq(t.put_errors, 0, "remote b has counted nothing, it got a's %" PRIu64,
                 t.put_errors);
    vyre_cache_close(c);

    c = open_cache("c", url_a);
    cr_assert_eq(vyre_cache_remote_get(c, 0, VYRE_CACHE_REMOTE_TOTALS, NULL, &t, &e), VYRE_OK, "%s",
                 e.message);
    cr_assert_eq(t.put_errors, 1, "remote a keeps its own");
    vyre_cache_close(c);
}

/* ---- real servers --------------------------------------------------------- */

static void http_spec(char *spec, size_t size, const ts_server *s, const char *attrs)
{
    snprintf(spec, size, "http://127.0.0.1:%d/fleet/store%s", s->port, attrs);
}

static void store_path(char *out, size_t size, const ts_server *s, uint64_t id)
{
    vyre_key k;
    key_of(&k, id);
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&k, hex);
    snprintf(out, size, "%s/fleet/store/%.2s/%s.vblob", s->root, hex, hex);
}

/* Two machines: what one puts (write-back), the other reads it through (read-through);
 * then the second serves it locally. */
static void two_machines(const char *spec)
{
    vyre_cache *a = open_cache("a", spec), *b = open_cache("b", spec);
    put_id(a, 1, 3000);
    put_id(a, 2, 10);
    vyre_remote_stats sa = stats_of(a, 0);
    cr_assert_eq(sa.puts, 2);
    cr_assert_eq(sa.put_errors, 0);
    cr_assert_eq(sa.bytes_written, 2 * VYRE_BLOB_HEADER_SIZE + 3010);

    cr_assert_not(local_has("b", 1));
    cr_assert_eq(get_id(b, 1, 3000), VYRE_OK);
    cr_assert_eq(get_id(b, 2, 10), VYRE_OK);
    cr_assert_eq(get_id(b, 3, 10), VYRE_ENOENT, "nobody put 3");
    vyre_remote_stats sb = stats_of(b, 0);
    cr_assert_eq(sb.hits, 2);
    cr_assert_eq(sb.misses, 1);
    cr_assert_eq(sb.errors + sb.rejected, 0);
    cr_assert_eq(sb.bytes_read, 2 * VYRE_BLOB_HEADER_SIZE + 3010);
    cr_assert_eq(sb.puts, 0, "a blob fetched from the store is not written back");
    cr_assert(local_has("b", 1), "read-through stores locally");
    /* Now a local hit: the remote is not asked again. */
    cr_assert_eq(get_id(b, 1, 3000), VYRE_OK);
    cr_assert_eq(stats_of(b, 0).hits, 2);
    vyre_cache_stats st;
    vyre_error e;
    cr_assert_eq(vyre_cache_stats_get(b, &st, &e), VYRE_OK);
    cr_assert_eq(st.session_remote_hits, 2);
    cr_assert_eq(st.entries, 2);

    /* remote check and pull through the API. */
    vyre_remote_check chk;
    cr_assert_eq(vyre_cache_remote_check(b, 0, &chk, &e), VYRE_OK);
    cr_assert_eq(chk.reachable, 1, "%s", chk.message);
    cr_assert_eq(chk.writable, 1, "%s", chk.message);
    vyre_key k;
    key_of(&k, 2);
    vyre_cache *c = open_cache("c", spec);
    size_t from = 9;
    cr_assert_eq(vyre_cache_remote_pull(c, &k, &from, &e), VYRE_OK, "%s", e.message);
    cr_assert_eq(from, 0);
    cr_assert(local_has("c", 2));
    key_of(&k, 3);
    cr_assert_eq(vyre_cache_remote_pull(c, &k, NULL, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "has no blob"), "%s", e.message);
    vyre_cache_close(c);
    vyre_cache_close(a);
    vyre_cache_close(b);

    /* The counters outlive the handles: recorded in each cache's index. */
    b = open_cache("b", spec);
    vyre_remote_stats t;
    cr_assert_eq(vyre_cache_remote_get(b, 0, VYRE_CACHE_REMOTE_TOTALS, NULL, &t, &e), VYRE_OK, "%s",
                 e.message);
    cr_assert_eq(t.hits, 2);
    cr_assert_eq(t.misses, 1);
    cr_assert_eq(t.bytes_read, 2 * VYRE_BLOB_HEADER_SIZE + 3010);
    cr_assert_eq(get_id(b, 3, 10), VYRE_ENOENT);
    cr_assert_eq(vyre_cache_remote_get(b, 0, VYRE_CACHE_REMOTE_TOTALS, NULL, &t, &e), VYRE_OK);
    cr_assert_eq(t.misses, 2, "this handle's unrecorded miss counts too");
    vyre_cache_close(b);
    a = open_cache("a", spec);
    cr_assert_eq(vyre_cache_remote_get(a, 0, VYRE_CACHE_REMOTE_TOTALS, NULL, &t, &e), VYRE_OK);
    cr_assert_eq(t.puts, 2);
    cr_assert_eq(t.hits, 0);
    vyre_cache_close(a);
}

TestSuite(remote_nginx, .init = setup, .fini = teardown);

Test(remote_nginx, two_machines_share_a_store)
{
    ts_server s;
    ts_nginx_start(&s);
    char spec[256];
    http_spec(spec, sizeof spec, &s, "");
    two_machines(spec);
    char path[1400];
    store_path(path, sizeof path, &s, 1);
    size_t len = 0;
    char *data = tu_read_file(path, &len);
    cr_assert_not_null(data, "the store holds <prefix>/<2 hex>/<64 hex>.vblob");
    cr_assert_eq(len, VYRE_BLOB_HEADER_SIZE + 3000);
    free(data);
    ts_server_stop(&s);
}

Test(remote_nginx, bad_objects_refused)
{
    ts_server s;
    ts_nginx_start(&s);
    char spec[256];
    http_spec(spec, sizeof spec, &s, "|max-object-size=65536");
    char path[1400], dir[1400];
    /* 1: corrupted payload, 2: truncated, 3: another key's blob, 4: a valid
     * blob larger than max-object-size, 5: garbage, 6: good. */
    size_t len;
    for (uint64_t id = 1; id <= 6; id++) {
        uint8_t *b = blob_bytes(id == 3 ? 33 : id, id == 4 ? 100000 : 500, &len);
        if (id == 1)
            b[VYRE_BLOB_HEADER_SIZE + 17] ^= 0x40;
        if (id == 2)
            len -= 50;
        if (id == 5)
            memset(b, 'g', len);
        store_path(path, sizeof path, &s, id);
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(path, '/') - path), path);
        char mk[1500];
        snprintf(mk, sizeof mk, "%s", dir);
        for (char *p = mk + strlen(s.root) + 1; *p; p++)
            if (*p == '/') {
                *p = '\0';
                mkdir(mk, 0700);
                *p = '/';
            }
        mkdir(mk, 0700);
        tu_write_file(path, b, len);
        free(b);
    }
    vyre_cache *c = open_cache("c", spec);
    for (uint64_t id = 1; id <= 5; id++) {
        cr_assert_eq(get_id(c, id, id == 4 ? 100000 : 500), VYRE_ENOENT, "object %" PRIu64, id);
        cr_assert_not(local_has("c", id), "object %" PRIu64 " was stored", id);
    }
    cr_assert_eq(get_id(c, 6, 500), VYRE_OK);
    vyre_remote_stats st = stats_of(c, 0);
    cr_assert_eq(st.rejected, 5);
    cr_assert_eq(st.hits, 1);
    cr_assert_eq(st.errors, 0);
    cr_assert_eq(st.skipped, 0, "a bad object is not a failing server");
    /* Nothing of them reached the cache: no quarantine, one blob. */
    vyre_cache_stats cs;
    vyre_error e;
    cr_assert_eq(vyre_cache_stats_get(c, &cs, &e), VYRE_OK);
    cr_assert_eq(cs.entries, 1);
    cr_assert_eq(cs.quarantined, 0);
    /* pull names the reason. */
    vyre_key k;
    key_of(&k, 1);
    cr_assert_eq(vyre_cache_remote_pull(c, &k, NULL, &e), VYRE_ECORRUPT);
    cr_assert(strstr(e.message, "rejected (payload-checksum)"), "%s", e.message);
    key_of(&k, 3);
    cr_assert_eq(vyre_cache_remote_pull(c, &k, NULL, &e), VYRE_ECORRUPT);
    cr_assert(strstr(e.message, "rejected (key-mismatch)"), "%s", e.message);
    key_of(&k, 2);
    cr_assert_eq(vyre_cache_remote_pull(c, &k, NULL, &e), VYRE_ECORRUPT);
    cr_assert(strstr(e.message, "rejected (truncated)"), "%s", e.message);
    key_of(&k, 4);
    cr_assert_eq(vyre_cache_remote_pull(c, &k, NULL, &e), VYRE_ETOOBIG);
    cr_assert(strstr(e.message, "is larger than 65536 bytes: refused"), "%s", e.message);
    vyre_cache_close(c);
    ts_server_stop(&s);
}

Test(remote_nginx, server_stopped_mid_run)
{
    ts_server s;
    ts_nginx_start(&s);
    char spec[256];
    http_spec(spec, sizeof spec, &s, "");
    vyre_cache *a = open_cache("a", spec);
    put_id(a, 1, 100);
    cr_assert_eq(stats_of(a, 0).puts, 1);
    ts_server_stop(&s);
    uint64_t t0 = mono_ns();
    put_id(a, 2, 100); /* fails remotely, not locally */
    put_id(a, 3, 100); /* backing off: not even tried */
    cr_assert_eq(get_id(a, 4, 100), VYRE_ENOENT);
    uint64_t ms = (mono_ns() - t0) / 1000000;
    cr_assert_lt(ms, 1000, "three operations against a stopped server took %" PRIu64 " ms", ms);
    vyre_remote_stats st = stats_of(a, 0);
    cr_assert_eq(st.puts, 1);
    cr_assert_eq(st.put_errors, 1);
    cr_assert_eq(st.skipped, 2);
    cr_assert(local_has("a", 2) && local_has("a", 3));
    /* vyre_cache_remote_push ignores the back-off, and says why it failed. */
    vyre_key k;
    key_of(&k, 2);
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_push(a, 0, &k, &e), VYRE_EREMOTE);
    cr_assert(strstr(e.message, "PUT '"), "%s", e.message);
    cr_assert(strstr(e.hint, "server runs"), "%s", e.hint);
    vyre_cache_close(a);
}

/* Child of the four-process test: cache <name> puts ids [base, base+20)
 * and the 5 shared ids 1000..1004, then gets every id the others put. */
static int fleet_child(const char *spec, int who)
{
    char name[16];
    snprintf(name, sizeof name, "p%d", who);
    vyre_cache *c = open_cache(name, spec);
    for (uint64_t j = 0; j < 20; j++)
        put_id(c, (uint64_t)who * 100 + j, 200 + j);
    for (uint64_t j = 1000; j < 1005; j++)
        put_id(c, j, 64);
    int bad = 0;
    for (int other = 0; other < 4; other++)
        for (uint64_t j = 0; j < 20; j++) {
            int rc = get_id(c, (uint64_t)other * 100 + j, 200 + j);
            /* Another process may not have written it yet: a miss is fine,
             * a wrong blob is not (get_id asserts the bytes). */
            if (rc != VYRE_OK && rc != VYRE_ENOENT)
                bad++;
        }
    vyre_remote_stats st = stats_of(c, 0);
    vyre_cache_close(c);
    return bad || st.put_errors || st.rejected || st.errors ? 1 : 0;
}

static void four_processes(const char *spec)
{
    pid_t pids[4];
    for (int i = 0; i < 4; i++) {
        pids[i] = fork();
        cr_assert(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(fleet_child(spec, i));
    }
    for (int i = 0; i < 4; i++) {
        int status = 0;
        cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d failed (%d)", i,
                  status);
    }
    /* A fifth machine gets everything, all of it from the store. */
    vyre_cache *c = open_cache("late", spec);
    for (int who = 0; who < 4; who++)
        for (uint64_t j = 0; j < 20; j++)
            cr_assert_eq(get_id(c, (uint64_t)who * 100 + j, 200 + j), VYRE_OK);
    for (uint64_t j = 1000; j < 1005; j++)
        cr_assert_eq(get_id(c, j, 64), VYRE_OK);
    vyre_remote_stats st = stats_of(c, 0);
    cr_assert_eq(st.hits, 85);
    cr_assert_eq(st.rejected + st.errors, 0);
    vyre_cache_close(c);
}

Test(remote_nginx, four_processes_share_a_store)
{
    ts_server s;
    ts_nginx_start(&s);
    char spec[256];
    http_spec(spec, sizeof spec, &s, "");
    four_processes(spec);
    ts_server_stop(&s);
}

Test(remote_nginx, read_only_remote_is_not_written)
{
    ts_server s;
    ts_nginx_start(&s);
    char spec[256];
    http_spec(spec, sizeof spec, &s, "|read-only");
    vyre_cache *a = open_cache("a", spec);
    put_id(a, 1, 100);
    vyre_remote_stats st = stats_of(a, 0);
    cr_assert_eq(st.puts + st.put_errors, 0);
    char path[1400];
    store_path(path, sizeof path, &s, 1);
    cr_assert_neq(access(path, F_OK), 0);
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_push(a, 0, &k, &e), VYRE_EROFS);
    vyre_remote_check chk;
    cr_assert_eq(vyre_cache_remote_check(a, 0, &chk, &e), VYRE_OK);
    cr_assert_eq(chk.reachable, 1);
    cr_assert_eq(chk.writable, -1);
    vyre_cache_close(a);
    ts_server_stop(&s);
}

/* ---- HTTPS ------------------------------------------------------------------ */

TestSuite(remote_https, .init = setup, .fini = teardown);

/* A throwaway PKI in <g_dir>/pki: the CA "ca" and its server certificate
 * "good" for 127.0.0.1 and localhost. */
static void make_pki(char *dir, size_t size)
{
    snprintf(dir, size, "%s/pki", g_dir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    ts_tls_ca(dir, "ca");
    ts_tls_cert(dir, "ca", "good", "IP:127.0.0.1,DNS:localhost");
}

/* nginx over TLS with the certificate <dir>/<name>.pem. */
static void https_start(ts_server *s, const char *dir, const char *name)
{
    char cert[1200], key[1200];
    int nc = snprintf(cert, sizeof cert, "%s/%s.pem", dir, name);
    int nk = snprintf(key, sizeof key, "%s/%s.key", dir, name);
    cr_assert(nc > 0 && (size_t)nc < sizeof cert && nk > 0 && (size_t)nk < sizeof key,
              "certificate path too long");
    ts_nginx_tls_start(s, cert, key);
}

/* https://127.0.0.1:PORT/fleet/store, with '|ca-file=<dir>/<ca>.pem' unless
 * ca is NULL. curl counts the TLS handshake in the connect timeout, whose
 * default (100 ms) a handshake with nginx under ASan on a busy 2-core CI
 * machine overran: the certificate test then saw "Timeout was reached"
 * instead of the verification failure. These tests are about trust, so
 * they give the handshake time, as the rediss tests do. */
#define HTTPS_CONNECT "|connect-timeout=5000"
static void https_spec(char *spec, size_t size, const ts_server *s, const char *dir, const char *ca)
{
    int n = ca ? snprintf(spec, size,
                          "https://127.0.0.1:%d/fleet/store|ca-file=%s/%s.pem" HTTPS_CONNECT,
                          s->port, dir, ca)
               : snprintf(spec, size, "https://127.0.0.1:%d/fleet/store" HTTPS_CONNECT, s->port);
    cr_assert(n > 0 && (size_t)n < size);
}

/* Puts blob id straight into the store's files, as a trusted writer would
 * have: what a client that must not trust the server would be offered. */
static void place(const ts_server *s, uint64_t id, size_t n)
{
    char path[1400], dir[1400];
    store_path(path, sizeof path, s, id);
    snprintf(dir, sizeof dir, "%s/fleet", s->root);
    mkdir(dir, 0700);
    snprintf(dir, sizeof dir, "%s/fleet/store", s->root);
    mkdir(dir, 0700);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdir(dir, 0700);
    size_t len = 0;
    uint8_t *blob = blob_bytes(id, n, &len);
    tu_write_file(path, blob, len);
    free(blob);
}

/* The client of spec refuses the server's certificate: blob 1, which the
 * store has, is a miss counted as an error (never a hit, never stored
 * locally); a put still succeeds locally and reaches nothing remote; pull
 * and check report the TLS failure with a hint naming hint_part. */
static void refused(const ts_server *s, const char *spec, const char *hint_part)
{
    place(s, 1, 500);
    vyre_cache *b = open_cache("b", spec);
    cr_assert_eq(get_id(b, 1, 500), VYRE_ENOENT, "an untrusted server's blob is never a hit");
    vyre_remote_stats st = stats_of(b, 0);
    cr_assert_eq(st.errors, 1, "the TLS failure is an error");
    cr_assert_eq(st.hits + st.misses + st.rejected, 0);
    cr_assert_eq(st.bytes_read, 0, "no byte of the object was accepted");
    cr_assert_not(local_has("b", 1), "nothing from an untrusted server is stored");
    vyre_cache_close(b);

    vyre_cache *c = open_cache("c", spec);
    put_id(c, 2, 300); /* asserts VYRE_OK: the local put does not depend on the remote */
    cr_assert(local_has("c", 2));
    st = stats_of(c, 0);
    cr_assert_eq(st.puts, 0);
    cr_assert_eq(st.put_errors, 1);
    cr_assert_eq(st.bytes_written, 0);
    char path[1400];
    store_path(path, sizeof path, s, 2);
    cr_assert_neq(access(path, F_OK), 0, "nothing was written to the store");
    vyre_cache_close(c);

    /* Pull and check, which ignore the back-off, say why. */
    vyre_cache *p = open_cache("p", spec);
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_remote_pull(p, &k, NULL, &e), VYRE_EREMOTE, "%s", e.message);
    cr_assert(strstr(e.message, "GET") && strstr(e.message, "SSL"), "%s", e.message);
    cr_assert(strstr(e.hint, hint_part), "hint '%s' lacks '%s'", e.hint, hint_part);
    cr_assert(strstr(e.hint, "verification is never turned off"), "%s", e.hint);
    cr_assert_not(local_has("p", 1));
    vyre_remote_check chk;
    cr_assert_eq(vyre_cache_remote_check(p, 0, &chk, &e), VYRE_OK);
    cr_assert_eq(chk.reachable, 0, "a server that fails verification is not reachable");
    cr_assert(strstr(chk.message, "SSL"), "%s", chk.message);
    vyre_cache_close(p);
}

Test(remote_https, two_machines_share_a_store_through_ca_file)
{
    char pki[1200], spec[2600];
    make_pki(pki, sizeof pki);
    ts_server s;
    https_start(&s, pki, "good");
    https_spec(spec, sizeof spec, &s, pki, "ca");
    two_machines(spec);
    char path[1400];
    store_path(path, sizeof path, &s, 1);
    size_t len = 0;
    char *data = tu_read_file(path, &len);
    cr_assert_not_null(data, "the blob was written back over TLS");
    cr_assert_eq(len, VYRE_BLOB_HEADER_SIZE + 3000);
    free(data);
    ts_server_stop(&s);
}

Test(remote_https, untrusted_certificate_is_refused)
{
    char pki[1200], spec[2600];
    make_pki(pki, sizeof pki);
    ts_server s;
    https_start(&s, pki, "good");
    https_spec(spec, sizeof spec, &s, pki, NULL);
    refused(&s, spec, "'|ca-file=PATH'");
    ts_server_stop(&s);
}

Test(remote_https, wrong_host_name_is_refused)
{
    char pki[1200], spec[2600];
    make_pki(pki, sizeof pki);
    ts_tls_cert(pki, "ca", "wrong", "DNS:wrong.example");
    ts_server s;
    https_start(&s, pki, "wrong");
    https_spec(spec, sizeof spec, &s, pki, "ca");
    refused(&s, spec, "does not name the host");
    ts_server_stop(&s);
}

Test(remote_https, another_ca_is_refused)
{
    char pki[1200], spec[2600];
    make_pki(pki, sizeof pki);
    ts_tls_ca(pki, "other");
    ts_server s;
    https_start(&s, pki, "good");
    https_spec(spec, sizeof spec, &s, pki, "other");
    refused(&s, spec, "not signed by a CA of '|ca-file='");
    ts_server_stop(&s);
}

TestSuite(remote_redis, .init = setup, .fini = teardown);

static redisContext *redis_at(const ts_server *s)
{
    redisContext *r = redisConnect("127.0.0.1", s->port);
    cr_assert(r && !r->err);
    return r;
}

Test(remote_redis, two_machines_share_a_store)
{
    ts_server s;
    ts_redis_start(&s);
    char spec[256];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d/2|expiry=3600", s.port);
    two_machines(spec);
    /* Stored in database 2 under vyre:<hex>, with the expiry. */
    redisContext *r = redis_at(&s);
    vyre_key k;
    key_of(&k, 1);
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&k, hex);
    redisReply *rep = redisCommand(r, "SELECT 2");
    freeReplyObject(rep);
    rep = redisCommand(r, "TTL vyre:%s", hex);
    cr_assert_eq(rep->type, REDIS_REPLY_INTEGER);
    cr_assert(rep->integer > 3500 && rep->integer <= 3600, "TTL %lld", rep->integer);
    freeReplyObject(rep);
    rep = redisCommand(r, "STRLEN vyre:%s", hex);
    cr_assert_eq(rep->integer, VYRE_BLOB_HEADER_SIZE + 3000);
    freeReplyObject(rep);
    redisFree(r);
    ts_server_stop(&s);
}

Test(remote_redis, bad_objects_refused)
{
    ts_server s;
    ts_redis_start(&s);
    redisContext *r = redis_at(&s);
    size_t len;
    for (uint64_t id = 1; id <= 4; id++) {
        uint8_t *b = blob_bytes(id == 3 ? 33 : id, id == 4 ? 100000 : 500, &len);
        if (id == 1)
            b[VYRE_BLOB_HEADER_SIZE + 3] ^= 1;
        if (id == 2)
            len = VYRE_BLOB_HEADER_SIZE - 1;
        vyre_key k;
        key_of(&k, id);
        char hex[VYRE_KEY_HEX_LEN + 1];
        vyre_key_to_hex(&k, hex);
        redisReply *rep = redisCommand(r, "SET vyre:%s %b", hex, b, len);
        cr_assert_eq(rep->type, REDIS_REPLY_STATUS);
        freeReplyObject(rep);
        free(b);
    }
    /* A key holding a list is not an object either. */
    vyre_key k;
    key_of(&k, 5);
    char hex[VYRE_KEY_HEX_LEN + 1];
    vyre_key_to_hex(&k, hex);
    freeReplyObject(redisCommand(r, "RPUSH vyre:%s a", hex));
    redisFree(r);

    char spec[256];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d|max-object-size=65536", s.port);
    vyre_cache *c = open_cache("c", spec);
    for (uint64_t id = 1; id <= 4; id++) {
        cr_assert_eq(get_id(c, id, id == 4 ? 100000 : 500), VYRE_ENOENT, "object %" PRIu64, id);
        cr_assert_not(local_has("c", id));
    }
    vyre_remote_stats st = stats_of(c, 0);
    cr_assert_eq(st.rejected, 4);
    cr_assert_eq(st.errors, 0);
    cr_assert_eq(get_id(c, 5, 10), VYRE_ENOENT);
    st = stats_of(c, 0);
    cr_assert_eq(st.errors, 1, "a wrong reply type is an error");
    vyre_cache_close(c);
    ts_server_stop(&s);
}

Test(remote_redis, password_and_server_stopped)
{
    ts_server s;
    ts_redis_start(&s);
    redisContext *r = redis_at(&s);
    freeReplyObject(redisCommand(r, "CONFIG SET requirepass s3cret"));
    redisFree(r);

    char spec[1400];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d", s.port);
    vyre_cache *a = open_cache("a", spec);
    put_id(a, 1, 100);
    vyre_remote_stats st = stats_of(a, 0);
    cr_assert_eq(st.put_errors, 1, "no password: refused");
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_push(a, 0, &k, &e), VYRE_EREMOTE);
    cr_assert(strstr(e.message, "NOAUTH"), "%s", e.message);
    cr_assert(strstr(e.hint, "password"), "%s", e.hint);
    vyre_cache_close(a);

    /* From a token file. */
    char tok[1200];
    snprintf(tok, sizeof tok, "%s/redis-token", g_dir);
    write_token(tok, "s3cret\n", 0600);
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d|token-file=%s", s.port, tok);
    a = open_cache("a", spec);
    cr_assert_eq(vyre_cache_remote_push(a, 0, &k, &e), VYRE_OK, "%s", e.message);
    vyre_cache_close(a);
    snprintf(spec, sizeof spec, "redis://:s3cret@127.0.0.1:%d", s.port);
    vyre_cache *b = open_cache("b", spec);
    cr_assert_eq(get_id(b, 1, 100), VYRE_OK);

    ts_server_stop(&s);
    uint64_t t0 = mono_ns();
    put_id(b, 2, 100);
    put_id(b, 3, 100);
    cr_assert_eq(get_id(b, 4, 100), VYRE_ENOENT);
    cr_assert_lt((mono_ns() - t0) / 1000000, 1000);
    st = stats_of(b, 0);
    cr_assert_eq(st.put_errors, 1);
    cr_assert_eq(st.skipped, 2);
    vyre_cache_close(b);
}

Test(remote_redis, four_processes_share_a_store)
{
    ts_server s;
    ts_redis_start(&s);
    char spec[256];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d", s.port);
    four_processes(spec);
    ts_server_stop(&s);
}

Test(remote_redis, http_then_redis_in_order)
{
    ts_server n, r;
    ts_nginx_start(&n);
    ts_redis_start(&r);
    char spec[512];
    snprintf(spec, sizeof spec, "http://127.0.0.1:%d/s redis://127.0.0.1:%d", n.port, r.port);
    vyre_cache *a = open_cache("a", spec);
    put_id(a, 1, 100);
    cr_assert_eq(stats_of(a, 0).puts, 1);
    cr_assert_eq(stats_of(a, 1).puts, 1, "write-back goes to every writable remote");
    /* Only in Redis: the HTTP store misses, Redis has it. */
    char only[256];
    snprintf(only, sizeof only, "redis://127.0.0.1:%d", r.port);
    vyre_cache *x = open_cache("x", only);
    put_id(x, 2, 100);
    vyre_cache_close(x);
    vyre_cache *b = open_cache("b", spec);
    cr_assert_eq(get_id(b, 1, 100), VYRE_OK);
    cr_assert_eq(get_id(b, 2, 100), VYRE_OK);
    cr_assert_eq(stats_of(b, 0).hits, 1);
    cr_assert_eq(stats_of(b, 0).misses, 1);
    cr_assert_eq(stats_of(b, 1).hits, 1, "the second remote is asked after the first missed");
    vyre_cache_close(a);
    vyre_cache_close(b);
    ts_server_stop(&n);
    ts_server_stop(&r);
}

/* ---- Redis over TLS (rediss://) ------------------------------------------ */

TestSuite(remote_rediss, .init = setup, .fini = teardown);

/* The PKI of one test, under g_dir/pki: a CA, a server certificate for
 * 127.0.0.1 and localhost, and one for another host, both signed by it. */
typedef struct certs_t {
    char ca[1200];
    char cert[1200];
    char key[1200];
    char other_cert[1200];
    char other_key[1200];
} certs_t;

static void certs(certs_t *c)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/pki", g_dir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    ts_tls_ca(dir, "ca");
    ts_tls_cert(dir, "ca", "server", "IP:127.0.0.1,DNS:localhost");
    ts_tls_cert(dir, "ca", "other", "DNS:elsewhere.example");
    snprintf(c->ca, sizeof c->ca, "%s/ca.pem", dir);
    snprintf(c->cert, sizeof c->cert, "%s/server.pem", dir);
    snprintf(c->key, sizeof c->key, "%s/server.key", dir);
    snprintf(c->other_cert, sizeof c->other_cert, "%s/other.pem", dir);
    snprintf(c->other_key, sizeof c->other_key, "%s/other.key", dir);
}

Test(remote_rediss, two_machines_share_a_store)
{
    certs_t c;
    certs(&c);
    ts_server s;
    ts_redis_tls_start(&s, c.cert, c.key, c.ca, NULL);
    char spec[1400];
    snprintf(spec, sizeof spec, "rediss://127.0.0.1:%d/2|ca-file=%s|expiry=3600", s.port, c.ca);
    two_machines(spec);
    /* By name too: SNI and a DNS name checked against the certificate. */
    snprintf(spec, sizeof spec, "rediss://localhost:%d/2|ca-file=%s|connect-timeout=1000", s.port,
             c.ca);
    vyre_cache *d = open_cache("d", spec);
    cr_assert_eq(get_id(d, 1, 3000), VYRE_OK);
    cr_assert_eq(stats_of(d, 0).hits, 1);
    vyre_cache_close(d);
    ts_server_stop(&s);
}

Test(remote_rediss, password_over_tls)
{
    certs_t c;
    certs(&c);
    ts_server s;
    ts_redis_tls_start(&s, c.cert, c.key, c.ca, "s3cret");
    char spec[1400];
    snprintf(spec, sizeof spec, "rediss://127.0.0.1:%d|ca-file=%s", s.port, c.ca);
    vyre_cache *a = open_cache("a", spec);
    put_id(a, 1, 100);
    cr_assert_eq(stats_of(a, 0).put_errors, 1, "no password: refused");
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_push(a, 0, &k, &e), VYRE_EREMOTE);
    cr_assert(strstr(e.message, "NOAUTH"), "%s", e.message);
    vyre_cache_close(a);
    snprintf(spec, sizeof spec, "rediss://:s3cret@127.0.0.1:%d/1|ca-file=%s", s.port, c.ca);
    two_machines(spec);
    ts_server_stop(&s);
}

Test(remote_rediss, untrusted_certificate_refused)
{
    certs_t c;
    certs(&c);
    ts_server s;
    ts_redis_tls_start(&s, c.cert, c.key, c.ca, NULL);
    char untrusted[256], trusted[1400];
    snprintf(untrusted, sizeof untrusted, "rediss://127.0.0.1:%d", s.port);
    snprintf(trusted, sizeof trusted, "rediss://127.0.0.1:%d|ca-file=%s", s.port, c.ca);

    /* Write-back to a server whose CA is not trusted: an error, the local
     * put goes through, nothing reaches the store. */
    vyre_cache *u = open_cache("u", untrusted);
    put_id(u, 1, 100);
    cr_assert(local_has("u", 1));
    vyre_remote_stats st = stats_of(u, 0);
    cr_assert_eq(st.put_errors, 1);
    cr_assert_eq(st.puts, 0);
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_push(u, 0, &k, &e), VYRE_EREMOTE);
    cr_assert(strstr(e.message, "certificate"), "%s", e.message);
    cr_assert(strstr(e.hint, "ca-file"), "%s", e.hint);
    vyre_cache_close(u);

    vyre_cache *t = open_cache("t", trusted);
    cr_assert_eq(get_id(t, 1, 100), VYRE_ENOENT, "nothing was stored");
    cr_assert_eq(stats_of(t, 0).misses, 1);
    put_id(t, 2, 100);
    cr_assert_eq(stats_of(t, 0).puts, 1);
    vyre_cache_close(t);

    /* Read-through from it: a miss counted as an error, nothing stored. */
    vyre_cache *v = open_cache("v", untrusted);
    cr_assert_eq(get_id(v, 2, 100), VYRE_ENOENT);
    st = stats_of(v, 0);
    cr_assert_eq(st.errors, 1);
    cr_assert_eq(st.hits + st.misses, 0);
    cr_assert_not(local_has("v", 2));
    vyre_cache_close(v);
    ts_server_stop(&s);
}

Test(remote_rediss, wrong_host_certificate_refused)
{
    certs_t c;
    certs(&c);
    ts_server s;
    /* Signed by the trusted CA, but for elsewhere.example. */
    ts_redis_tls_start(&s, c.other_cert, c.other_key, c.ca, NULL);
    char spec[1400];
    snprintf(spec, sizeof spec, "rediss://127.0.0.1:%d|ca-file=%s", s.port, c.ca);
    vyre_cache *a = open_cache("a", spec);
    put_id(a, 1, 100);
    cr_assert(local_has("a", 1));
    cr_assert_eq(stats_of(a, 0).put_errors, 1);
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_push(a, 0, &k, &e), VYRE_EREMOTE);
    cr_assert(strstr(e.message, "certificate") && strstr(e.message, "mismatch"), "%s", e.message);
    vyre_cache_close(a);
    /* By name: the same, through SNI and SSL_set1_host. */
    snprintf(spec, sizeof spec, "rediss://localhost:%d|ca-file=%s|connect-timeout=1000", s.port,
             c.ca);
    a = open_cache("b", spec);
    cr_assert_eq(get_id(a, 1, 100), VYRE_ENOENT);
    cr_assert_eq(stats_of(a, 0).errors, 1);
    vyre_cache_close(a);
    ts_server_stop(&s);
}

Test(remote_rediss, silent_server_is_bounded)
{
    /* Accepts TCP (the kernel does), never answers the TLS handshake. */
    certs_t c;
    certs(&c);
    int port = 0;
    int fd = ts_silent_listen(&port);
    char spec[1400];
    snprintf(spec, sizeof spec, "rediss://127.0.0.1:%d|ca-file=%s|operation-timeout=300", port,
             c.ca);
    vyre_cache *a = open_cache("a", spec);
    uint64_t t0 = mono_ns();
    put_id(a, 1, 100);
    uint64_t ms = (mono_ns() - t0) / 1000000;
    cr_assert_geq(ms, 250, "waited the operation timeout (%" PRIu64 " ms)", ms);
    cr_assert_lt(ms, 1500, "bounded by the operation timeout (%" PRIu64 " ms)", ms);
    cr_assert(local_has("a", 1));
    cr_assert_eq(stats_of(a, 0).put_errors, 1);
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_push(a, 0, &k, &e), VYRE_EREMOTE);
    cr_assert(strstr(e.message, "TLS handshake: timed out"), "%s", e.message);
    vyre_cache_close(a);
    close(fd);
}

Test(remote_rediss, server_stopped_mid_run)
{
    /* A connection made, then the server goes: writes to a dead TLS
     * connection are errors (never a SIGPIPE that ends the process), bounded
     * and then backed off. */
    certs_t c;
    certs(&c);
    ts_server s;
    ts_redis_tls_start(&s, c.cert, c.key, c.ca, NULL);
    char spec[1400];
    snprintf(spec, sizeof spec, "rediss://127.0.0.1:%d|ca-file=%s", s.port, c.ca);
    vyre_cache *a = open_cache("a", spec);
    put_id(a, 1, 100);
    cr_assert_eq(stats_of(a, 0).puts, 1);
    ts_server_stop(&s);
    uint64_t t0 = mono_ns();
    put_id(a, 2, 70000); /* larger than a socket buffer's first write */
    put_id(a, 3, 100);
    cr_assert_eq(get_id(a, 4, 100), VYRE_ENOENT);
    cr_assert_lt((mono_ns() - t0) / 1000000, 1000);
    vyre_remote_stats st = stats_of(a, 0);
    cr_assert_eq(st.put_errors, 1);
    cr_assert_eq(st.skipped, 2);
    cr_assert(local_has("a", 2) && local_has("a", 3));
    vyre_cache_close(a);
}

/* ---- a fake Redis server -------------------------------------------------- */

TestSuite(remote_redis_fault, .init = setup, .fini = teardown);

Test(remote_redis_fault, trickled_reply_stops_at_the_operation_timeout)
{
    /* One byte every 50 ms never lets a 300 ms read timeout expire: only a
     * deadline for the whole command stops it (seen: > 200 s with the
     * default 10 s timeout). */
    fake_redis f;
    fake_redis_start(&f, FAKE_REDIS_TRICKLE);
    char spec[256];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d|operation-timeout=300", f.port);
    vyre_cache *c = open_cache("c", spec);
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    uint64_t t0 = mono_ns();
    cr_assert_eq(vyre_cache_remote_pull(c, &k, NULL, &e), VYRE_EREMOTE, "%s", e.message);
    uint64_t ms = (mono_ns() - t0) / 1000000;
    cr_assert(strstr(e.message, "timed out"), "%s", e.message);
    /* A hang detector, not a timing: the server trickles for 10 s. */
    cr_assert_lt(ms, 5000, "the command ran %" PRIu64 " ms", ms);
    cr_assert_lt(f.sent, 100, "the client stopped reading: %zu bytes trickled", (size_t)f.sent);

    /* A compile goes on locally: the get is a miss, the put is stored. */
    cr_assert_eq(get_id(c, 2, 100), VYRE_ENOENT);
    put_id(c, 2, 100);
    cr_assert(local_has("c", 2));
    vyre_cache_close(c);
    fake_redis_stop(&f);
}

Test(remote_redis_fault, declared_length_above_max_object_size_is_not_read)
{
    /* "$2147483647" is refused from the header: the client hangs up at
     * once, so the server gets no more in than the sockets' buffers hold
     * (seen: 1.5 GB RSS while the client read it whole). */
    fake_redis f;
    fake_redis_start(&f, FAKE_REDIS_HUGE);
    char spec[256];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d|max-object-size=65536", f.port);
    vyre_cache *c = open_cache("c", spec);
    vyre_key k;
    key_of(&k, 1);
    vyre_error e;
    cr_assert_eq(vyre_cache_remote_pull(c, &k, NULL, &e), VYRE_ETOOBIG, "%s", e.message);
    cr_assert(strstr(e.message, "2147483647") && strstr(e.message, "65536"), "%s", e.message);
    cr_assert(strstr(e.hint, "max-object-size"), "%s", e.hint);
    cr_assert_lt(f.sent, (size_t)16 << 20, "the client read %zu bytes of the body", (size_t)f.sent);
    vyre_remote_stats st = stats_of(c, 0);
    cr_assert_eq(st.rejected, 1);
    cr_assert_eq(st.errors, 0);

    /* Through the cache: a miss, and the local put goes on. */
    cr_assert_eq(get_id(c, 2, 100), VYRE_ENOENT);
    cr_assert_eq(stats_of(c, 0).rejected, 2);
    put_id(c, 2, 100);
    cr_assert(local_has("c", 2));
    vyre_cache_close(c);
    fake_redis_stop(&f);
}

/* vyre__resp_frame on whole, partial, oversized and foreign replies. */
static vyre__resp_status frame(const char *text, uint64_t max, size_t *end, uint64_t *declared)
{
    return vyre__resp_frame(text, strlen(text), max, end, declared);
}

Test(remote_redis_fault, replies_are_framed_and_bounded)
{
    size_t end = 0;
    uint64_t decl = 0;
    cr_assert_eq(frame("+OK\r\n", 10, &end, &decl), VYRE__RESP_COMPLETE);
    cr_assert_eq(end, 5);
    cr_assert_eq(frame("$-1\r\n", 10, &end, &decl), VYRE__RESP_COMPLETE);
    cr_assert_eq(frame("$5\r\nhello\r\n+extra", 10, &end, &decl), VYRE__RESP_COMPLETE);
    cr_assert_eq(end, 11, "bytes after the reply are not part of it");
    cr_assert_eq(decl, 5);
    cr_assert_eq(frame("$5\r\nhel", 10, &end, &decl), VYRE__RESP_PARTIAL);
    cr_assert_eq(frame("$5", 10, &end, &decl), VYRE__RESP_PARTIAL);
    cr_assert_eq(frame("", 10, &end, &decl), VYRE__RESP_PARTIAL);
    /* Refused from the header alone, the body absent. */
    cr_assert_eq(frame("$2147483647\r\n", 65536, &end, &decl), VYRE__RESP_TOOBIG);
    cr_assert_eq(decl, 2147483647u);
    cr_assert_eq(frame("$11\r\n", 10, &end, &decl), VYRE__RESP_TOOBIG);
    cr_assert_eq(frame("$10\r\n", 10, &end, &decl), VYRE__RESP_PARTIAL);
    /* Bulk strings of an array count together. */
    cr_assert_eq(frame("*2\r\n$6\r\nabcdef\r\n$6\r\n", 10, &end, &decl), VYRE__RESP_TOOBIG);
    cr_assert_eq(decl, 12);
    cr_assert_eq(frame("*2\r\n:1\r\n*1\r\n+x\r\n", 10, &end, &decl), VYRE__RESP_COMPLETE);
    cr_assert_eq(end, 16);
    /* Not RESP, or past the bounds. */
    cr_assert_eq(frame("HTTP/1.1 200 OK\r\n", 10, &end, &decl), VYRE__RESP_BAD);
    cr_assert_eq(frame("$-2\r\n", 10, &end, &decl), VYRE__RESP_BAD);
    cr_assert_eq(frame("$+5\r\n", 10, &end, &decl), VYRE__RESP_BAD);
    cr_assert_eq(frame("$99999999999999999999\r\n", 10, &end, &decl), VYRE__RESP_BAD);
    cr_assert_eq(frame("$2\r\nabcd\r\n", 10, &end, &decl), VYRE__RESP_BAD);
    cr_assert_eq(frame("*1025\r\n", 10, &end, &decl), VYRE__RESP_BAD);
    cr_assert_eq(frame("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n", 10, &end, &decl), VYRE__RESP_BAD);
    char *line = malloc(VYRE__RESP_LINE_MAX + 16);
    line[0] = '-';
    memset(line + 1, 'e', VYRE__RESP_LINE_MAX + 8);
    line[VYRE__RESP_LINE_MAX + 9] = '\0';
    cr_assert_eq(frame(line, 10, &end, &decl), VYRE__RESP_BAD, "an endless line is refused");
    free(line);
}

/* Pushing a key the cache lacks: the listing command is the front end's to
 * name (VYRE_REMEDY_CACHE_LIST), never libcore's. */
Test(remote, push_missing_key_names_no_front_end, .init = setup, .fini = teardown)
{
    vyre_cache *a = open_cache("a", "http://127.0.0.1:1/c");
    vyre_key k;
    key_of(&k, 77);
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_cache_remote_push(a, 0, &k, &e), VYRE_ENOENT);
    cr_assert(strstr(e.message, "no valid blob '"), "%s", e.message);
    cr_assert_null(strstr(e.hint, "cachectl"), "libcore names a front end: %s", e.hint);
    cr_assert_eq(e.remedy, VYRE_REMEDY_CACHE_LIST);
    vyre_cache_close(a);
}

/* The backends' head (HTTP HEAD, Redis EXISTS), reached through the
 * operations table spec.c picks from the scheme: present, absent, and the
 * object names each store uses. */
static void head_tells_present_from_absent(const char *spec, const vyre__remote_ops *want)
{
    vyre_cache *a = open_cache("a", spec);
    put_id(a, 1, 100); /* written back to the store */
    vyre_cache_close(a);
    vyre_remote_list *l = NULL;
    vyre_error e;
    cr_assert_eq(vyre_remote_list_parse(spec, &l, &e), VYRE_OK, "%s", e.message);
    vyre__remote *r = &l->r[0];
    cr_assert_eq(r->ops, want);
    vyre_key k;
    char name[VYRE_KEY_HEX_LEN + 16];
    key_of(&k, 1);
    r->ops->object_name(&k, name, sizeof name);
    cr_assert_eq(r->ops->head(r, name, &e), VYRE_OK, "%s: %s", name, e.message);
    key_of(&k, 2);
    r->ops->object_name(&k, name, sizeof name);
    cr_assert_eq(r->ops->head(r, name, &e), VYRE_ENOENT, "%s: %s", name, e.message);
    r->ops->close(r);
    cr_assert_eq(r->ops->head(r, name, &e), VYRE_ENOENT, "usable again after close");
    vyre_remote_list_free(l);
}

Test(remote_nginx, head_tells_present_from_absent)
{
    ts_server s;
    ts_nginx_start(&s);
    char spec[256];
    http_spec(spec, sizeof spec, &s, "");
    head_tells_present_from_absent(spec, &vyre__http_ops);
    ts_server_stop(&s);
}

Test(remote_redis, head_tells_present_from_absent)
{
    ts_server s;
    ts_redis_start(&s);
    char spec[256];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d/2", s.port);
    head_tells_present_from_absent(spec, &vyre__redis_ops);
    ts_server_stop(&s);
}
