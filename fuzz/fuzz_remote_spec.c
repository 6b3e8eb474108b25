/*
 * fuzz_remote_spec.c - libFuzzer target for the remote store list
 * (libcore/src/cache/remote/spec.c): the text of $VYRE_REMOTE_CACHE, which any
 * user or launcher script sets.
 *
 * Invariants checked:
 *   - no crash, no read past the text (ASan), no undefined behaviour (UBSan);
 *   - a reject has a code, a message that names the store and a hint, and
 *     leaves no list behind;
 *   - an accepted list has at most VYRE_REMOTE_MAX remotes, each with a
 *     known scheme, a host, a port in 1..65535, timeouts > 0, and a shown
 *     URL that never contains the password the input gave (no '@' password
 *     survives unmasked: if the URL part had user info with ':', the shown
 *     URL has ":***@").
 * No connection is ever made: parsing only. A token-file= names a path the
 * fuzzer invents; it is opened read-only (O_NOFOLLOW) and must be the
 * caller's and 0600, so nothing outside the fuzzer's own files is read.
 * A ca-file= (https only) is opened read-only and, when it is a regular
 * file, read to look for a PEM certificate: nothing is written or kept.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "vyre/remote.h"
#include "cache/remote/remote_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec = fuzz_text(data, size, 8192);
    if (!spec)
        return 0;
    vyre_remote_list *l = (vyre_remote_list *)spec; /* must be reset */
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_remote_list_parse(spec, &l, &e);
    if (rc) {
        if (l || !e.message[0] || e.code != rc)
            abort();
        if (rc != VYRE_ENOMEM && !e.hint[0])
            abort();
    } else {
        size_t n = vyre_remote_list_count(l);
        if (n > VYRE_REMOTE_MAX)
            abort();
        for (size_t i = 0; i < n; i++) {
            const vyre_remote_info *r = vyre_remote_list_info(l, i);
            if (!r || r->scheme < VYRE_REMOTE_HTTP || r->scheme > VYRE_REMOTE_REDISS ||
                !r->host[0] || r->port < 1 || r->port > 65535 || !r->connect_timeout_ms ||
                !r->operation_timeout_ms || !r->url[0])
                abort();
            if (r->has_password && !strstr(r->url, ":***@"))
                abort();
        }
        if (vyre_remote_list_info(l, n))
            abort();
        vyre_remote_list_free(l);
    }
    free(spec);
    return 0;
}
