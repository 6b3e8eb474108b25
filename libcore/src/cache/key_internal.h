/*
 * key_internal.h - key computation with an explicit format version, so tests
 * can show that a version bump changes every key (internal).
 */
#ifndef VYRE_KEY_INTERNAL_H
#define VYRE_KEY_INTERNAL_H

#include "vyre/key.h"

int vyre__key_compute_version(const vyre_key_input *in, uint32_t version, vyre_key *out,
                              vyre_error *err);

#endif /* VYRE_KEY_INTERNAL_H */
