/*
 * machine.c - small facts about the machine a run describes: the datasheet
 * bandwidth of known GPUs, and the git revision and branch of the working
 * tree (git run through base/subprocess.c: no shell, a time limit).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/internal.h"
#include "base/strbuf.h"
#include "base/subprocess.h"
#include "bench/bench_internal.h"

/* Each git call gets this long; git answers these in milliseconds on any
 * ordinary checkout, so only a hung filesystem reaches it. */
#define GIT_TIMEOUT_MS 5000

/* ---- facts about the machine ----------------------------------------------------- */

double vyre_bench_peak_bandwidth(const char *gpu_name, const char **label)
{
    static const struct {
        const char *needle, *also, *label;
        double bps;
    } parts[] = {
        {"H200", NULL, "H200 (4.8 TB/s)", 4.8e12},
        {"H100", "PCIe", "H100 PCIe (2.0 TB/s)", 2.0e12},
        {"H100", NULL, "H100 SXM (3.35 TB/s)", 3.35e12},
    };
    if (label)
        *label = NULL;
    for (size_t i = 0; gpu_name && i < VYRE_ARRAY_SIZE(parts); i++) {
        if (!strstr(gpu_name, parts[i].needle))
            continue;
        if (parts[i].also && !strcasestr(gpu_name, parts[i].also))
            continue;
        if (label)
            *label = parts[i].label;
        return parts[i].bps;
    }
    return 0;
}

/* ---- the git state a run records ------------------------------------------------- */

/* The first executable "git" on $PATH, into *path. VYRE_ENOENT when none. */
static int find_git(vyre__strbuf *path, vyre_error *err)
{
    const char *p = secure_getenv("PATH");
    if (!p || !*p)
        p = "/usr/bin:/bin";
    while (*p) {
        size_t n = strcspn(p, ":");
        vyre__strbuf_reset(path);
        vyre__strbuf_add(path, n ? p : ".", n ? n : 1);
        vyre__strbuf_adds(path, "/git");
        if (vyre__strbuf_failed(path))
            return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot look for git: out of memory");
        if (access(path->buf, X_OK) == 0)
            return VYRE_OK;
        p += n + (p[n] == ':');
    }
    return vyre__fail(err, VYRE_ENOENT, "install git, or put it on PATH", "no 'git' on PATH '%s'",
                      secure_getenv("PATH") ? secure_getenv("PATH") : "");
}

/* Runs git [-C dir] args... with its first line of output in out (the end
 * of line dropped); *ok is whether it exited 0. */
static int git_line(const char *git, const char *dir, const char *const *args, char *out,
                    size_t size, int *ok, vyre_error *err)
{
    char *argv[12];
    size_t n = 0;
    argv[n++] = (char *)(uintptr_t) "git";
    if (dir) {
        argv[n++] = (char *)(uintptr_t) "-C";
        argv[n++] = (char *)(uintptr_t)dir;
    }
    for (size_t i = 0; args[i] && n + 1 < VYRE_ARRAY_SIZE(argv); i++)
        argv[n++] = (char *)(uintptr_t)args[i];
    argv[n] = NULL;
    /* No lock taken on the index by a status (git's own advice for tools
     * that poll), and messages that do not depend on the user's locale. */
    static const char *const env[] = {"GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", NULL};
    vyre__subprocess sp = {git, argv, env, 1, GIT_TIMEOUT_MS, 1};
    int status = -1;
    int rc = vyre__subprocess_run(&sp, out, size, &status, err);
    out[strcspn(out, "\r\n")] = '\0';
    *ok = rc == VYRE_OK && status == 0;
    return rc;
}

static int git_rev(const char *git, const char *dir, vyre_bench_git *g, vyre_error *err)
{
    static const char *const rev[] = {"rev-parse", "--short=12", "HEAD", NULL};
    static const char *const st[] = {"status", "--porcelain", "--untracked-files=no", NULL};
    int ok = 0;
    int rc = git_line(git, dir, rev, g->rev, sizeof g->rev, &ok, err);
    if (rc || !ok) {
        g->rev[0] = '\0';
        return rc;
    }
    char out[64];
    rc = git_line(git, dir, st, out, sizeof out, &ok, err);
    g->dirty = !rc && ok && out[0];
    return rc;
}

static int git_ref(const char *git, const char *dir, vyre_bench_git *g, vyre_error *err)
{
    static const char *const branch[] = {"symbolic-ref", "--short", "-q", "HEAD", NULL};
    static const char *const tag[] = {"describe", "--tags", "--exact-match", NULL};
    int ok = 0;
    int rc = git_line(git, dir, branch, g->ref, sizeof g->ref, &ok, err);
    if (!rc && (!ok || !g->ref[0]))
        rc = git_line(git, dir, tag, g->ref, sizeof g->ref, &ok, err);
    if (rc || !ok)
        g->ref[0] = '\0';
    return rc;
}

int vyre_bench_git_state(const char *dir, vyre_bench_git *g, vyre_error *err)
{
    if (!g)
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_bench_git_state: NULL argument");
    memset(g, 0, sizeof *g);
    vyre__strbuf git = VYRE__STRBUF_INIT;
    int rc = find_git(&git, err);
    if (!rc)
        rc = git_rev(git.buf, dir, g, err);
    if (!rc)
        rc = git_ref(git.buf, dir, g, err);
    vyre__strbuf_release(&git);
    if (!g->ref[0]) { /* a detached checkout of a branch, as CI makes */
        const char *ci = getenv("GITHUB_REF_NAME");
        if (!(ci && *ci))
            ci = getenv("CI_COMMIT_REF_NAME"); /* GitLab */
        if (ci && *ci)
            vyre__strlcpy(g->ref, ci, sizeof g->ref);
    }
    return rc;
}
