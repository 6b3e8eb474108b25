/*
 * inject_host.c - a stand-in host program for libvyre-inject.so tests
 * (tests/cli/test_inject.c). Built without sanitizers, like the programs the
 * library is loaded into.
 *
 *   inject_host [--inject LIB] [--threads N] [--fork] [--probe]
 *       With --inject, loads LIB and calls its InitializeInjection as
 *       libcuda would. Then does its work: prints a fixed text, runs N
 *       threads and, with --fork, a child; when the injection loaded the
 *       fake CUPTI ($VYRE_CUPTI_LIBRARY = fakecupti), the work also plays
 *       the driver (launches, copies, syncs, kernel records). Exits 3. The
 *       output and exit code must not depend on --inject.
 *       --probe (only with --inject) then waits for a publish and prints the
 *       process's own telemetry page: what a reader sees from outside.
 *   inject_host --exports LIB
 *       Prints LIB's defined dynamic symbols, one a line (nm -D
 *       --defined-only), from the ELF file itself.
 *   inject_host --env-probe
 *       Prints whether the process runs in secure-execution mode (AT_SECURE:
 *       set-user/group-ID), then what libcore made of the environment: the
 *       telemetry directory, the CUPTI library loaded (or why none) and the
 *       CUDA driver's load result. For the secure_getenv test: a setgid copy
 *       must not take paths or libraries from the environment.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h> /* also the generated *_params structs */
#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/telemetry_internal.h" /* the page reader */
#include "vyre/counters.h"
#include "vyre/cuda.h"
#include "vyre/cupti.h"
#include "vyre/telemetry.h"

#define EXIT_HOST     3
#define LAUNCHES_EACH 100
#define THREADS_MAX   64

typedef void (*fire_fn)(int domain, unsigned cbid, const void *params, int result);
typedef void (*nested_fn)(unsigned rt_cbid, unsigned drv_cbid);
typedef int (*kernel_fn)(const char *name, uint64_t start_ns, uint64_t end_ns);
static fire_fn g_fire;
static nested_fn g_nested;
static kernel_fn g_kernel;

/* The fake CUPTI is there only when the injection loaded it. */
static void find_fake(void)
{
    const char *lib = getenv("VYRE_CUPTI_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD) : NULL;
    if (!h)
        return;
    *(void **)&g_fire = dlsym(h, "fakecupti_fire");
    *(void **)&g_nested = dlsym(h, "fakecupti_fire_nested");
    *(void **)&g_kernel = dlsym(h, "fakecupti_kernel");
}

/* What a training step looks like to CUPTI's driver domain: the launches
 * (runtime launches arrive as the driver calls the runtime makes), a copy
 * each way, a sync; a runtime call wrapping its driver call (counted once);
 * and a failed launch (not counted). */
static void play_driver(int launches)
{
    if (!g_fire)
        return;
    /* The real CUPTI delivers a runtime call's own driver call to the
     * driver domain, which is all the injection subscribes to. */
    for (int i = 0; i < launches; i++)
        g_fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "",
               CUDA_SUCCESS);
    g_fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "", CUDA_SUCCESS);
    if (g_nested) /* one launch, seen twice */
        g_nested(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                 CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    /* A failed launch is not a launch. */
    g_fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "",
           CUDA_ERROR_INVALID_VALUE);
    cuMemcpyHtoDAsync_v2_params up = {.ByteCount = 4096};
    g_fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &up,
           CUDA_SUCCESS);
    cuMemcpyDtoH_v2_params down = {.ByteCount = 512};
    g_fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, &down,
           CUDA_SUCCESS);
    g_fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "",
           CUDA_SUCCESS);
}

static void *worker(void *arg)
{
    (void)arg;
    play_driver(LAUNCHES_EACH);
    return NULL;
}

static int run_fork(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* The child's CUDA calls must reach neither its counters' page nor
         * its parent's. */
        play_driver(10000);
        if (g_kernel)
            g_kernel("child_kernel", 1, 2);
        printf("child: done\n");
        fflush(stdout);
        struct timespec ts = {0, 300 * 1000000L};
        nanosleep(&ts, NULL);
        exit(5);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    printf("parent: child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

static void probe(void)
{
    if (g_kernel) {
        g_kernel("vyre_test_gemm", 1000, 3500);
        g_kernel("vyre_test_gemm", 4000, 6500);
        g_kernel("vyre_test_relu", 7000, 7100);
    }
    struct timespec ts = {0, 450 * 1000000L}; /* two publisher periods */
    nanosleep(&ts, NULL);
    char dir[VYRE_TELEMETRY_PATH_MAX], path[VYRE_TELEMETRY_PATH_MAX + 32];
    if (vyre_telemetry_dir(dir, sizeof dir, NULL) != VYRE_OK) {
        printf("probe: no telemetry directory\n");
        return;
    }
    snprintf(path, sizeof path, "%s/%d.vtel", dir, (int)getpid());
    static vyre_telemetry_snapshot s;
    vyre_error err;
    int rc = vyre__telemetry_read(path, &s, &err);
    if (rc != VYRE_OK) {
        printf("probe: %s\n", vyre_err_name(rc));
        return;
    }
    printf("probe: publishes %s\n", s.publish_count > 0 ? "yes" : "no");
    for (int i = 0; i < VYRE_CTR_COUNT; i++)
        if (s.counters.v[i])
            printf("probe: %s %llu\n", vyre_counter_name((vyre_counter_id)i),
                   (unsigned long long)s.counters.v[i]);
    for (uint32_t i = 0; i < s.n_kernels; i++)
        printf("probe: kernel %s %llu ns\n", s.kernels[i].name,
               (unsigned long long)s.kernels[i].duration_ns);
}

static int env_probe(void)
{
    printf("secure: %lu\n", getauxval(AT_SECURE));
    char dir[VYRE_TELEMETRY_PATH_MAX];
    vyre_error err;
    vyre_error_clear(&err);
    if (vyre_telemetry_dir(dir, sizeof dir, &err) == VYRE_OK)
        printf("telemetry dir: %s\n", dir);
    else
        printf("telemetry dir: %s\n", err.message);
    vyre_error_clear(&err);
    if (vyre_cupti_load(&err) == VYRE_OK) {
        vyre_cupti_stats st;
        vyre_cupti_stats_get(&st);
        printf("cupti: loaded %s\n", st.library);
    } else {
        printf("cupti: %s\n", err.message);
    }
    vyre_error_clear(&err);
    int version = 0;
    int rc = vyre_cuda_driver_version(&version, &err);
    printf("cuda: %s %s\n", vyre_err_name(rc), rc ? err.message : "");
    return 0;
}

static int print_exports(const char *lib)
{
    FILE *f = fopen(lib, "rb");
    if (!f)
        return 2;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *img = size > 0 ? malloc((size_t)size) : NULL;
    int ok = img && fread(img, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!ok || (size_t)size < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) != 0) {
        free(img);
        return 2;
    }
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)size) {
        free(img);
        return 2;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
        const char *names = (const char *)(img + sh[sh[i].sh_link].sh_offset);
        size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
        for (size_t j = 1; j < n; j++) {
            int bind = ELF64_ST_BIND(sym[j].st_info);
            if (sym[j].st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK))
                printf("%s\n", names + sym[j].st_name);
        }
    }
    free(img);
    return 0;
}

int main(int argc, char **argv)
{
    const char *lib = NULL;
    int threads = 0, do_fork = 0, do_probe = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--inject") == 0 && i + 1 < argc)
            lib = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--fork") == 0)
            do_fork = 1;
        else if (strcmp(argv[i], "--probe") == 0)
            do_probe = 1;
        else if (strcmp(argv[i], "--exports") == 0 && i + 1 < argc)
            return print_exports(argv[i + 1]);
        else if (strcmp(argv[i], "--env-probe") == 0)
            return env_probe();
        else
            return 2;
    }
    if (threads < 0 || threads > THREADS_MAX)
        return 2;
    if (lib) {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        int (*init)(void) = NULL;
        if (h)
            *(void **)&init = dlsym(h, "InitializeInjection");
        if (!init) {
            fprintf(stderr, "inject_host: cannot load '%s'\n", lib);
            return 2;
        }
        if (init() != 1)
            fprintf(stderr, "inject_host: InitializeInjection did not return 1\n");
        find_fake();
    }

    printf("host: start\n");
    play_driver(LAUNCHES_EACH);
    pthread_t tids[THREADS_MAX];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tids[i], NULL, worker, NULL) != 0)
            return 2;
    for (int i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    printf("host: %d threads done\n", threads);
    if (do_fork && run_fork() != 0)
        return 2;
    if (do_probe)
        probe();
    printf("host: end\n");
    return EXIT_HOST;
}
