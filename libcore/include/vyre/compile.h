/*
 * vyre/compile.h - turning a pipeline's source into a cubin, and through the
 * pipeline cache: what the run-time pipeline path and `vyre-cachectl seed`
 * share, so that a blob seeded ahead of time is a hit at run time.
 *
 * This header is part of libvyrecore's public API.
 *
 * Paths to a cubin: CUDA C -> cubin by NVRTC directly; PTX -> cubin by
 * nvJitLink; cubin -> used as is. All three run on the CPU: seeding needs
 * the CUDA toolkit's libraries, not a GPU or driver. The driver version is
 * therefore not part of the key: a cubin does not depend on it.
 */
#ifndef VYRE_COMPILE_H
#define VYRE_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "cache.h"
#include "error.h"
#include "export.h"
#include "key.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What to compile. Everything is owned by the caller. */
typedef struct vyre_compile_request {
    vyre_source_kind kind;   /* CUDA C, PTX or cubin */
    const void *src;         /* source bytes */
    size_t len;              /* bytes in src */
    const char *arch;        /* real architecture: "sm_90", "sm_90a", "sm_100f" */
    const char *entry;       /* kernel entry point (extern "C" name) the module must define;
                                NULL: none checked. Not part of the key (key v2): one blob
                                per module, whichever of its kernels is asked for */
    const char *const *opts; /* ordered options: NVRTC's for CUDA C, nvJitLink's for PTX */
    size_t nopts;
} vyre_compile_request;

/* A compiled cubin. Owned by the caller: vyre_compile_result_release(). */
typedef struct vyre_compile_result {
    void *cubin; /* malloc'ed cubin bytes; NULL on failure */
    size_t size;
    char *log;           /* compiler/linker log (malloc'ed, NUL-terminated; "" for cubin input);
                            kept on a compile failure */
    uint64_t compile_ns; /* time the compile took (the copy, for cubin input) */
    char toolchain[VYRE_BLOB_TOOLCHAIN_MAX]; /* see vyre_compile_toolchain() */
    char arch[VYRE_BLOB_ARCH_MAX];
} vyre_compile_result;

/* Frees what res holds and zeroes it. NULL or a zeroed struct: no-op. */
VYRE_EXTERN void vyre_compile_result_release(vyre_compile_result *res);

/*
 * The current toolchain identities of every source kind that can be told
 * (CUDA C, PTX, cubin), for pruning stale blobs: writes up to cap of them
 * into out and their count into *n. Returns 0 when at least two are known
 * (a machine with NVRTC or nvJitLink, plus "cubin"), else the error of the
 * first kind that could not be told (VYRE_ENONVRTC, VYRE_ENOJITLINK, ...).
 */
VYRE_EXTERN int vyre_compile_toolchains(char (*out)[VYRE_BLOB_TOOLCHAIN_MAX], size_t cap, size_t *n,
                                        vyre_error *err);

/* 1 when arch is "sm_" then 2 or 3 digits (no leading zero), then nothing,
 * "a" (arch-specific, e.g. sm_90a) or "f" (family, e.g. sm_100f). */
VYRE_EXTERN int vyre_compile_arch_valid(const char *arch);

/* The inputs vyre_compile_key hashes for req, into *in: its strings point
 * into req and into toolchain (the caller's buffer), so both must outlive
 * it. For `vyre-cachectl explain`-like reports (vyre_key_explain). Errors
 * as vyre_compile_key. */
VYRE_EXTERN int vyre_compile_key_input(const vyre_compile_request *req, vyre_key_input *in,
                                       char toolchain[VYRE_BLOB_TOOLCHAIN_MAX], vyre_error *err);

/*
 * Compiles req to a cubin for req->arch, naming the source source_name in
 * the compiler's messages and log ("bad.cu(3): error ..."; NULL:
 * "kernel.cu" or "kernel.ptx"). res is always initialised; release it in
 * every case (on VYRE_ECOMPILE its log holds the whole compiler log, and
 * the error message quotes the first failing line). A cubin input is
 * checked for the ELF magic (VYRE_EINVAL otherwise) and copied.
 */
VYRE_EXTERN int vyre_compile_cubin(const vyre_compile_request *req, const char *source_name,
                                   vyre_compile_result *res, vyre_error *err);

/*
 * The cache path: looks the key of req up in c; a hit returns the stored
 * cubin blob (*was_hit = 1). A miss (including a stored file that failed
 * validation) compiles, stores a VYRE_BLOB_CUBIN blob with the arch,
 * toolchain, compile time and the module's kernel names
 * (vyre_cubin_kernels), and returns it (*was_hit = 0). When
 * req->entry is set and the module does not define it, VYRE_ENOENT names
 * the kernels it does define (*out NULL; a module compiled for that check
 * is not stored). *out is the
 * caller's: vyre_blob_free(). was_hit may be NULL.
 *
 * source_name's basename (truncated to VYRE_BLOB_SOURCE_MAX - 1 bytes;
 * NULL: unknown) is recorded in a blob it stores; it is not part of the
 * key: the same module under another name is the same blob. The module
 * must define every one of entries[0..n_entries) too (as req->entry;
 * entries may be NULL when n_entries is 0): the first missing one is
 * VYRE_ENOENT naming the kernels it does define, and a module compiled for
 * that check is not stored.
 *
 * When the compile succeeds but the store fails (VYRE_EROFS, VYRE_ENOSPC,
 * ...), that code is returned and *out still holds the compiled blob, so a
 * run-time caller may go on without the cache; otherwise *out is NULL on
 * failure. Thread-safe as the cache handle is.
 */
VYRE_EXTERN int vyre_compile_through_cache(vyre_cache *c, const vyre_compile_request *req,
                                           const char *source_name, const char *const *entries,
                                           size_t n_entries, vyre_blob **out, int *was_hit,
                                           vyre_error *err);

/*
 * Guesses what a file holds: by path extension first (".cu"/".cuh": CUDA C,
 * ".ptx": PTX, ".cubin": cubin), else by content (ELF magic: cubin;
 * ".version" and ".target" directives within the first KiB: PTX; anything
 * else: CUDA C). path or data may be NULL. Returns 0 or VYRE_EINVAL (kind
 * NULL, or data NULL with len > 0).
 */
VYRE_EXTERN int vyre_source_kind_detect(const char *path, const void *data, size_t len,
                                        vyre_source_kind *kind);

/*
 * The architecture a PTX module targets, from its ".target" directive (the
 * first real architecture listed, e.g. "sm_90a" from ".target sm_90a" or
 * ".target sm_80, texmode_independent"; comments are skipped). Returns 0,
 * VYRE_ENOENT (no .target, or none naming a real architecture) or
 * VYRE_EINVAL.
 */
VYRE_EXTERN int vyre_ptx_target_arch(const void *ptx, size_t len, char *arch, size_t size);

/* "cuda-c", "ptx", "cubin", or NULL for an unknown kind (static). */
VYRE_EXTERN const char *vyre_source_kind_name(vyre_source_kind kind);

/* ---- seeding: many files compiled into the cache ahead of time ------------
 *
 * What a fleet runs to ship a warm cache: a list of files (operands as
 * named, directories walked) compiled and stored under exactly the key the
 * run-time path computes (vyre_compile_through_cache), by a pool of
 * threads, with the results handed back file by file in list order.
 */

#define VYRE_SEED_MAX_ARCHS 16      /* architectures one run compiles each file for */
#define VYRE_SEED_MAX_JOBS  256     /* threads one run uses at most */
#define VYRE_SEED_MAX_DEPTH 64      /* directory levels a walk goes down below the named one */
#define VYRE_SEED_MAX_WALK  4000000 /* entries a walk looks at, all directories together */

/* The files a seed run compiles, in order. Caller-owned: start from
 * VYRE_SEED_LIST_INIT (or all zeroes: an empty list), free what it holds
 * with vyre_seed_list_release. */
typedef struct vyre_seed_list {
    char **paths; /* n malloc'ed paths, owned by the list */
    size_t n, cap;
    uint64_t skipped; /* files a walk passed over: cubins beside their PTX */
} vyre_seed_list;

/* An empty list, as git's STRBUF_INIT: `vyre_seed_list l = VYRE_SEED_LIST_INIT;`. */
/* clang-format off */
#define VYRE_SEED_LIST_INIT {NULL, 0, 0, 0}
/* clang-format on */

/* Frees every path and the array, and leaves l empty. NULL: no-op. */
VYRE_EXTERN void vyre_seed_list_release(vyre_seed_list *l);

/*
 * Adds operand to l: a directory (a symbolic link to one counts: it is
 * walked where it points, its files named under operand as given) is
 * walked for *.ptx, *.cu and *.cubin regular files (any case), which are
 * appended in strcmp order of their paths; anything else is appended as
 * named (whether it can be read is the run's business). The walk follows
 * no symbolic link below operand and reads a directory it may not open
 * (the named one included) as empty. Triton's rule: a .cubin beside a .ptx
 * of the same stem is not a module of its own (the PTX is), so a walk
 * passes it over and counts it in l->skipped. *is_dir (may be NULL) is set
 * to 1 when operand was walked.
 *
 * Bounded: more than VYRE_SEED_MAX_DEPTH levels below operand, or more
 * than VYRE_SEED_MAX_WALK entries, is VYRE_ETOOBIG; a directory that cannot
 * be opened for another reason than permission is the errno's code
 * ("cannot walk 'DIR': reason"); VYRE_ENOMEM.
 * On an error l keeps what was added before the call. Not thread-safe on
 * one list; different lists may be filled at once (no process-wide state:
 * no nftw, no chdir).
 */
VYRE_EXTERN int vyre_seed_list_add(vyre_seed_list *l, const char *operand, int *is_dir,
                                   vyre_error *err);

typedef enum vyre_seed_status {
    VYRE_SEED_SEEDED,  /* compiled and stored by this run */
    VYRE_SEED_PRESENT, /* the cache held it already */
    VYRE_SEED_FETCHED, /* a remote store had it: fetched, not compiled */
    VYRE_SEED_FAILED,
} vyre_seed_status;

/* One file for one architecture (or a file that failed before any). */
typedef struct vyre_seed_outcome {
    vyre_seed_status status;
    const char *arch;      /* NULL: failed before an architecture was chosen */
    const vyre_blob *blob; /* the blob in the cache, unless failed */
    vyre_error error;      /* failed: error.code, and message (may be empty: use
                              vyre_strerror(error.code)) and hint */
    const char *log;       /* failed to compile: the compiler's whole log; else NULL */
} vyre_seed_outcome;

/* What a run did with one file, handed to vyre_seed_opts.on_file. */
typedef struct vyre_seed_file {
    const char *path;
    size_t index;                      /* its place in the list */
    vyre_source_kind kind;             /* as vyre_source_kind_detect told it (CUDA C when unread) */
    const vyre_seed_outcome *outcomes; /* in architecture order */
    size_t n_outcomes;                 /* 0 only when the run ran out of memory for this file */
} vyre_seed_file;

/* Called once per file, in list order, never two at once (under the run's
 * lock), from any of the run's threads. Everything f points to is the
 * run's and is freed when the call returns. */
typedef void (*vyre_seed_file_fn)(void *ctx, const vyre_seed_file *f);

/* Called, under the same lock, each time a file is done: done of total. */
typedef void (*vyre_seed_progress_fn)(void *ctx, size_t done, size_t total);

/* How to seed. Everything is the caller's and must outlive the run. All
 * zeroes (`vyre_seed_opts o = {0};` or memset) mean: a PTX file's own target,
 * no entries or options, one job per online CPU, nothing called back. */
typedef struct vyre_seed_opts {
    const char *const *archs;   /* valid real architectures (vyre_compile_arch_valid), or
                                   NULL: a PTX file's own .target (other kinds then fail) */
    size_t n_archs;             /* at most VYRE_SEED_MAX_ARCHS */
    const char *const *entries; /* kernels every module must define (not part of the key) */
    size_t n_entries;
    const char *const *copts; /* compiler options, in order: part of the key */
    size_t n_copts;
    unsigned jobs;                     /* threads; 0: one per online CPU; never more than files or
                                          VYRE_SEED_MAX_JOBS */
    vyre_seed_file_fn on_file;         /* may be NULL */
    vyre_seed_progress_fn on_progress; /* may be NULL */
    void *ctx;                         /* passed to both */
} vyre_seed_opts;

/* What a run did, summed over its files. */
typedef struct vyre_seed_totals {
    uint64_t seeded, present, fetched, failed; /* outcomes of each status */
    uint64_t kernels;                          /* kernels of the modules seeded */
    unsigned jobs;                             /* threads it used */
} vyre_seed_totals;

/*
 * Seeds every file of files into c: each is read (sources are limited to
 * VYRE_BLOB_MAX_PAYLOAD), its kind told by vyre_source_kind_detect, and
 * compiled for each architecture through the cache with
 * vyre_compile_through_cache under its own name (a hit is "present",
 * or "fetched" when only a remote store held it). A module lacking one of
 * o->entries fails once and is tried for no other architecture. A failed
 * file does not stop the others. Results go to o->on_file in list order,
 * whatever order the threads finish in.
 *
 * Returns 0 when every file was tried (totals->failed counts the failed
 * outcomes, and a file the run had no memory for), VYRE_EINVAL for bad options (err says which) or
 * VYRE_ENOMEM. *totals (may be NULL) is filled in either case. c must stay
 * open through the run; the run is as thread-safe as c is.
 */
VYRE_EXTERN int vyre_seed_run(vyre_cache *c, const vyre_seed_list *files, const vyre_seed_opts *o,
                              vyre_seed_totals *totals, vyre_error *err);

#ifdef __cplusplus
}
#endif

#endif /* VYRE_COMPILE_H */
