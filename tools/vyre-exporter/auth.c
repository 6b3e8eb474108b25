/*
 * auth.c - see auth.h. The cache holds AUTH_CACHE digests of
 * "user\0password\0hash" that bcrypt accepted, replaced in turn; a hash
 * changed by a new config is a new key. An unknown user still costs one
 * bcrypt (against the first user's hash), so the time of an answer does
 * not tell which user names exist.
 */
#include "auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AUTH_CACHE 16
#define AUTH_MAX   1024 /* decoded "user:password" bytes */

struct exp_auth {
    const exp_web_user *users;
    size_t n;
    pthread_mutex_t mu;
    struct crypt_data *cd; /* crypt_rn's scratch (about 32 KiB) */
    unsigned char good[AUTH_CACHE][32];
    size_t ngood, next;
};

exp_auth *exp_auth_new(const exp_web_user *users, size_t n)
{
    exp_auth *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cd = calloc(1, sizeof *a->cd);
    if (!a->cd) {
        free(a);
        return NULL;
    }
    a->users = users;
    a->n = n;
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

void exp_auth_free(exp_auth *a)
{
    if (!a)
        return;
    OPENSSL_cleanse(a->cd, sizeof *a->cd);
    free(a->cd);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 (padding required, as RFC 7617 sends it) into out;
 * the length, or -1 when malformed or too long. */
static long b64_decode(const char *in, unsigned char *out, size_t size)
{
    size_t len = strlen(in), n = 0;
    if (len == 0 || len % 4 != 0 || len / 4 * 3 > size)
        return -1;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)in[i + k];
            v[k] = c == '=' && i + 4 == len && k >= 2 ? 0 : b64_value(c);
            if (v[k] < 0)
                return -1;
        }
        int pad = (in[i + 2] == '=') + (in[i + 3] == '=');
        if (in[i + 2] == '=' && in[i + 3] != '=')
            return -1;
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[n++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[n++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[n++] = (unsigned char)w;
    }
    return (long)n;
}

/* SHA-256 of user, password and hash, NUL-separated. */
static int digest_of(const char *user, const char *pass, size_t pass_len, const char *hash,
                     unsigned char out[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
             EVP_DigestUpdate(ctx, user, strlen(user) + 1) &&
             EVP_DigestUpdate(ctx, pass, pass_len) && EVP_DigestUpdate(ctx, "", 1) &&
             EVP_DigestUpdate(ctx, hash, strlen(hash)) && EVP_DigestFinal_ex(ctx, out, &len) &&
             len == 32;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : -1;
}

/* bcrypt of pass with hash's salt and cost equals hash (a->mu held). */
static int bcrypt_matches(exp_auth *a, const char *pass, const char *hash)
{
    const char *got = crypt_rn(pass, hash, a->cd, (int)sizeof *a->cd);
    size_t n = strlen(hash);
    return got && strlen(got) == n && CRYPTO_memcmp(got, hash, n) == 0;
}

static int check_locked(exp_auth *a, const char *user, const char *pass, size_t pass_len)
{
    const exp_web_user *u = NULL;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->users[i].name, user) == 0)
            u = &a->users[i];
    if (!u) {
        (void)bcrypt_matches(a, pass, a->users[0].hash); /* same time as a known user */
        return 0;
    }
    unsigned char d[32];
    int have = digest_of(u->name, pass, pass_len, u->hash, d) == 0;
    int hit = 0;
    for (size_t i = 0; have && i < a->ngood; i++)
        hit |= CRYPTO_memcmp(a->good[i], d, sizeof d) == 0;
    if (hit)
        return 1;
    if (!bcrypt_matches(a, pass, u->hash))
        return 0;
    if (have) {
        memcpy(a->good[a->next], d, sizeof d);
        a->next = (a->next + 1) % AUTH_CACHE;
        if (a->ngood < AUTH_CACHE)
            a->ngood++;
    }
    return 1;
}

int exp_auth_check(exp_auth *a, const char *authorization)
{
    if (!a || !a->n || !authorization)
        return 0;
    const char *p = authorization;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, "Basic", 5) != 0 || (p[5] != ' ' && p[5] != '\t'))
        return 0;
    p += 5;
    while (*p == ' ' || *p == '\t')
        p++;
    unsigned char buf[AUTH_MAX + 1];
    long n = b64_decode(p, buf, AUTH_MAX);
    if (n < 0)
        return 0;
    buf[n] = '\0';
    char *colon = memchr(buf, ':', (size_t)n);
    if (!colon || memchr(buf, '\0', (size_t)n)) {
        OPENSSL_cleanse(buf, sizeof buf);
        return 0; /* no user:password, or a NUL inside */
    }
    *colon = '\0';
    const char *pass = colon + 1;
    pthread_mutex_lock(&a->mu);
    int ok = check_locked(a, (const char *)buf, pass, strlen(pass));
    pthread_mutex_unlock(&a->mu);
    OPENSSL_cleanse(buf, sizeof buf);
    return ok;
}
