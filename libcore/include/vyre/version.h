/*
 * vyre/version.h - library version.
 *
 * This header is part of libvyrecore's public API.
 */
#ifndef VYRE_VERSION_H
#define VYRE_VERSION_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0". Static storage. */
VYRE_EXTERN const char *vyre_version(void);

/* CUDA toolkit version the library was built against, e.g. "13.0.48". */
VYRE_EXTERN const char *vyre_cuda_toolkit_version(void);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_VERSION_H */
