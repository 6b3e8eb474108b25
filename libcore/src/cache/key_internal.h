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

/* Fills *out from in (key_version VYRE_KEY_VERSION, the source hashed).
 * VYRE_ETOOBIG when a string or the options do not fit the fields above
 * (naming which), VYRE_EINVAL as vyre__key_compute, VYRE_ENOMEM. */
int vyre__key_inputs_from(const vyre_key_input *in, vyre_key_inputs *out, vyre_error *err);

/* A bit per vyre_key_field whose values differ between a and b. */
unsigned vyre__key_inputs_diff(const vyre_key_inputs *a, const vyre_key_inputs *b);

/* Moved from the installed key.h: no program outside libcore calls them. */

/* Computes the key for `in`. Returns 0, VYRE_EINVAL (NULL arguments, or
 * options/source NULL with a non-zero count/length) or VYRE_ENOMEM. */
int vyre__key_compute(const vyre_key_input *in, vyre_key *out, vyre_error *err);

#endif /* VYRE_KEY_INTERNAL_H */
