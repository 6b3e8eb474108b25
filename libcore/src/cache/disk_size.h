/*
 * disk_size.h - the size of a file on disk, as du and ccache count it
 * (internal): st_blocks in 512-byte units, whatever the filesystem's block
 * size. Every limit, stat, report and metric of the three caches (vyre's,
 * Triton's, TorchInductor's) counts this; st_size is the apparent size,
 * shown beside it where it helps.
 */
#ifndef VYRE_DISK_SIZE_H
#define VYRE_DISK_SIZE_H

#include <stdint.h>
#include <sys/stat.h>

/* POSIX leaves the unit of st_blocks open; Linux, the BSDs and macOS all
 * use 512 bytes (du's own assumption). */
#define VYRE__ST_BLOCK_UNIT 512u

static inline uint64_t vyre__disk_bytes(const struct stat *st)
{
    return st->st_blocks > 0 ? (uint64_t)st->st_blocks * VYRE__ST_BLOCK_UNIT : 0;
}

#endif
