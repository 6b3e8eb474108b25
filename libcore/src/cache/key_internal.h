/*
 * key_internal.h - key computation with an explicit format version, so tests
 * can show that a version bump changes every key (internal).
 */
#ifndef VYRE_KEY_INTERNAL_H
#define VYRE_KEY_INTERNAL_H

#include "vyre/key.h"

int vyre__key_compute_version(const vyre_key_input *in, uint32_t version, vyre_key *out,
                              vyre_error *err);

/* SHA-256 of p[0..n) as 64 lowercase hex digits and a NUL. 0 or
 * VYRE_ENOMEM (libcrypto failed). */
int vyre__sha256_hex(const void *p, size_t n, char out[VYRE_KEY_HEX_LEN + 1], vyre_error *err);

/* Records in c's index the inputs `key` was computed from, so that a later
 * vyre_key_explain can say which of them another key differs in. in must
 * compute to key (VYRE_EINVAL otherwise: nothing recorded). A key with no
 * row, or a cache without an index, records nothing and returns 0. Called
 * after a put by the compile path; a failure there does not fail the put. */
int vyre__cache_note_inputs(vyre_cache *c, const vyre_key *key, const vyre_key_input *in,
                            vyre_error *err);

#endif /* VYRE_KEY_INTERNAL_H */
