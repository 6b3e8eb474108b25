/*
 * vyre/units.h - parsing and formatting sizes, durations and percentages for
 * the tools,
 * and the nearest word for "did you mean" (what users type).
 *
 * This header is part of libvyrecore's public API.
 *
 * Sizes follow GNU coreutils: K, M, G, T (and KiB, MiB, GiB, TiB) are powers
 * of 1024; KB, MB, GB, TB are powers of 1000; B or no suffix is bytes. A
 * decimal fraction is allowed ("1.5GiB"); signs, exponents, spaces and
 * overflow are rejected. Cache sizes (vyre_parse_cache_size) differ, as
 * ccache's do: there a size without a unit is GiB. Durations are a number
 * and one unit: s, m, h, d, w ("90m", "12h", "30d", "1.5h"). Percentages
 * are a number in percent, '%' optional ("0.5", "0.5%").
 */
#ifndef VYRE_UNITS_H
#define VYRE_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses a size into bytes. 0 or VYRE_EINVAL / VYRE_ERANGE with a hint. */
VYRE_EXTERN int vyre_parse_size(const char *s, uint64_t *bytes, vyre_error *err);

/* Parses a cache size as ccache writes it (max_size, prune --max-size): a
 * size without a unit is GiB ("10" is 10 GiB, "0.4" 0.4 GiB); the units are
 * vyre_parse_size's; a fraction is rounded to the nearest byte (half up);
 * a value that is not zero but comes to less than one byte is VYRE_EINVAL,
 * so that only a zero ("0", "0G") gives 0. 0, or VYRE_EINVAL / VYRE_ERANGE
 * with a hint; *bytes untouched on failure. Thread-safe. */
VYRE_EXTERN int vyre_parse_cache_size(const char *s, uint64_t *bytes, vyre_error *err);

/* Parses a plain decimal count ("4294967296"): digits only, no sign,
 * space, suffix or fraction, as the CUDA driver reads CUDA_CACHE_MAXSIZE.
 * Returns 0 and *out (0 included), VYRE_EINVAL for anything that is not all
 * digits or VYRE_ERANGE above UINT64_MAX, whichever comes first reading
 * left to right. *out is untouched on failure. Thread-safe. */
VYRE_EXTERN int vyre_parse_uint(const char *s, uint64_t *out);

/* The candidate nearest to word by edit distance (Levenshtein, case
 * sensitive), when it is close enough to be a typo of it (at most 2 edits,
 * or a third of word's length if longer); else NULL. For "did you mean"
 * hints on commands, options and configuration keys. Words over 64 bytes
 * match nothing. Returns one of candidates (not a copy). Thread-safe. */
VYRE_EXTERN const char *vyre_nearest_word(const char *word, const char *const *candidates,
                                          size_t n);

/* Parses a percentage as every share option and key of the tools takes it
 * (--max-noise, --min-effect, --alpha): a number in percent, with or
 * without a trailing '%', as nvbench's --max-noise ("0.5" and "0.5%" are
 * both 0.5 %, never 50 %), into a ratio (0.005). Decimal digits with an
 * optional fraction ("2", "0.5", "12.25%"); signs, exponents, spaces and
 * other suffixes are refused. Returns 0 and *ratio, or VYRE_EINVAL (not a
 * percentage) / VYRE_ERANGE (too large) with the offending value and a
 * hint in err; *ratio is untouched on failure. The range an option allows
 * is its caller's to check. Thread-safe. */
VYRE_EXTERN int vyre_parse_percent(const char *s, double *ratio, vyre_error *err);

/* Parses a duration into nanoseconds. 0 or VYRE_EINVAL / VYRE_ERANGE. */
VYRE_EXTERN int vyre_parse_duration(const char *s, int64_t *ns, vyre_error *err);

/* "1.5 GiB", "812.0 KiB", "17 B". */
VYRE_EXTERN void vyre_format_size(uint64_t bytes, char *buf, size_t size);

/* A short age: "45s", "12m", "3h", "4d", "9w", or "-" for a negative one.
 * Rounded down (40 days is "5w"): for how old something is, not for a
 * limit someone configured (vyre_format_duration_exact). */
VYRE_EXTERN void vyre_format_age(int64_t ns, char *buf, size_t size);

/* A configured duration exactly, in the largest of d, h, m, s that divides
 * it ("30d", "36h", "90m"; 1.5 s is "1.500000000s"): what
 * vyre_parse_duration reads back to the same value, as the user most
 * likely wrote it (weeks print as days: "2w" is "14d"). Zero is "0", as a
 * configuration value for "off" is written. */
VYRE_EXTERN void vyre_format_duration_exact(int64_t ns, char *buf, size_t size);

/* A measured duration for people: "0 s", "850 ns", "12.3 us", "20.0 ms",
 * "4.56 s", and from two minutes on vyre_format_age's "12m", "3h". */
VYRE_EXTERN void vyre_format_duration(uint64_t ns, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_UNITS_H */
