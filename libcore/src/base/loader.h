/*
 * loader.h - opening a shared library at run time and resolving its
 * function table (internal). Every library vyre uses without linking it
 * (libcuda, NVML, NVRTC, nvJitLink, CUPTI) is found, opened and resolved
 * here, so that they all follow one set of rules:
 *
 *   - an operator's explicit choice ($VYRE_*_LIBRARY) wins and is never
 *     silently replaced by another file; set but empty is VYRE_EENV;
 *   - otherwise each candidate name through the dynamic linker's search,
 *     then under each install root ($<root_env>, then root_default) in each
 *     of the spec's subdirectories;
 *   - a library that does not load, or lacks a required symbol, is an error
 *     code with a message naming the file (and the symbol) and a hint, never
 *     a crash;
 *   - RTLD_NOW | RTLD_LOCAL: symbols are bound up front and never leak into
 *     the process (NVRTC and nvJitLink both carry LLVM).
 *
 * The modules keep what is theirs: which names, which messages and hints,
 * what to check once the symbols are there.
 */
#ifndef VYRE_LOADER_H
#define VYRE_LOADER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "vyre/error.h"

#define VYRE__LIB_PATH_MAX 512

/* How to find one library and how to word its failures. */
typedef struct vyre__lib_spec {
    const char *fail;           /* a failed load's message starts with it: "NVRTC not
                                   available", "no NVIDIA driver found" */
    const char *env;            /* override variable, e.g. "VYRE_NVRTC_LIBRARY" */
    int env_named;              /* 1: a failing $env file is reported "(from $env)" */
    const char *const *names;   /* NULL-terminated candidates, most specific first */
    const char *root_env;       /* variable naming an install root ("CUDA_HOME") or NULL;
                                   set but empty counts as unset */
    const char *root_default;   /* the usual install root, or NULL */
    const char *const *subdirs; /* NULL-terminated, under each root; NULL: no roots */
    const char *(*first)(void); /* optional: a file to try before the search when $env is
                                   unset (a copy the process already uses); one that does not
                                   load is skipped silently */
    int missing_code;           /* VYRE_ENONVRTC, VYRE_ENODRIVER, ... */
    const char *hint;           /* when nothing could be loaded */
    const char *env_hint;       /* when the $env file does not load; NULL: hint */
    const char *empty_hint;     /* when $env is set but empty; NULL: hint */
    /* A missing required symbol reads
     * "<sym_lead>'<file>' has no <sym_noun><symbol><sym_tail>": noun and tail
     * carry the quotes around the symbol, e.g. "symbol '" and "' (...)". */
    const char *sym_lead, *sym_noun, *sym_tail;
    const char *sym_hint; /* NULL: hint */
} vyre__lib_spec;

/* One entry of a function table: the symbol and where its address goes in
 * the caller's table struct (offsetof a function pointer member). */
typedef struct vyre__lib_sym {
    const char *name;
    size_t offset;
    int optional; /* 1: a missing symbol leaves NULL; 0: loading fails */
} vyre__lib_sym;

/*
 * Opens the library following spec (rules above). On success *handle is
 * the library and path (size bytes, may be 0) holds what was opened: the
 * $env value, a bare name found by the linker's search, or a full path.
 * On failure *handle is NULL, path is "" and err says what was tried.
 * Closing the handle is the caller's (libraries with process-wide state
 * are never closed).
 */
int vyre__lib_open(const vyre__lib_spec *spec, void **handle, char *path, size_t size,
                   vyre_error *err);

/*
 * Resolves syms[0..n) from handle into table. A missing required symbol
 * fails with spec->missing_code naming path and the symbol; the table may
 * then be partly filled (callers clear it).
 */
int vyre__lib_resolve(const vyre__lib_spec *spec, void *handle, const char *path,
                      const vyre__lib_sym *syms, size_t n, void *table, vyre_error *err);

/*
 * A library loaded once per process: open, resolve into table, then the
 * module's own check. Initialise statically with VYRE__LIB_ONCE_STATE and
 * the fields above the state; vyre__lib_load is thread-safe and answers
 * every call after the first from the stored result (status and error).
 */
typedef struct vyre__lib_once {
    const vyre__lib_spec *spec;
    const vyre__lib_sym *syms;
    size_t nsyms;
    void *table; /* the function table, cleared when loading fails */
    size_t table_size;
    /* Optional, after the symbols: version checks and the like. May
     * rewrite path (size VYRE__LIB_PATH_MAX). A non-zero return fails the
     * load with err filled. */
    int (*ready)(void *handle, char *path, vyre_error *err);
    /* State. */
    pthread_mutex_t mu;
    atomic_int done;
    int status;
    vyre_error error;
    void *handle;                  /* never closed */
    char path[VYRE__LIB_PATH_MAX]; /* what was opened, "" until loaded */
} vyre__lib_once;

#define VYRE__LIB_ONCE_STATE .mu = PTHREAD_MUTEX_INITIALIZER

/* Loads lib once; returns its status and, on failure, copies its error
 * into err (when non-NULL). */
int vyre__lib_load(vyre__lib_once *lib, vyre_error *err);

#endif /* VYRE_LOADER_H */
