/*
 * vyre/inductor.h - reading TorchInductor's cache (another tool's cache).
 *
 * This header is part of libvyrecore's public API.
 *
 * TorchInductor (torch.compile's back end) keeps its cache in
 * $TORCHINDUCTOR_CACHE_DIR, else <temp dir>/torchinductor_<user> (Python's
 * tempfile.gettempdir(): $TMPDIR, $TEMP or $TMP when it names a directory,
 * else /tmp; the user as getpass.getuser() finds it, with \ / : * ? " < > |
 * replaced by '_'). Inside: generated kernels (<2 chars>/<key>.py), autotune
 * results (<2 chars>/<hash>.best_config, JSON), fxgraph/ and aotautograd/
 * entries (pickles: vyre never unpickles them), and, unless
 * TRITON_CACHE_DIR is set, a Triton cache per device under triton/<device>/
 * (vyre/triton.h reads it).
 */
#ifndef VYRE_INDUCTOR_H
#define VYRE_INDUCTOR_H

#include <stddef.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The directory TorchInductor uses, resolved as above. *source (may be
 * NULL) gets "TORCHINDUCTOR_CACHE_DIR" or "default" (static). Touches
 * nothing. Returns 0, VYRE_EENV (no user name found) or VYRE_ETOOBIG.
 */
VYRE_EXTERN int vyre_inductor_cache_dir(char *out, size_t size, const char **source,
                                        vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_INDUCTOR_H */
