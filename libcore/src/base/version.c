/*
 * version.c - the library and toolkit versions baked in at build time.
 */
#include "vyre/version.h"

const char *vyre_version(void)
{
    return VYRE_VERSION_STRING;
}

const char *vyre_cuda_toolkit_version(void)
{
    return VYRE_CUDA_TOOLKIT_VERSION;
}
