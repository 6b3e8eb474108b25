/*
 * child.c - the host program's side of the bench child protocol: the one
 * call a program that runs suites makes first in main()
 * (vyre_bench_host_start, vyre/bench.h), and what it tells a run
 * (vyre__bench_child_exe). The compile suite times a cold PTX JIT in a
 * fresh process, and the cheapest fresh process that has libvyrecore is
 * the host program itself, started again: the call serves that child when
 * this process is one, and otherwise records that the program can be one,
 * so vyre_bench_run_suites re-runs /proc/self/exe without the front end
 * naming it. The child's work and the parent's spawn are bench_gpu.c's.
 */
#include <stdatomic.h>
#include <stddef.h>

#include "bench/bench_internal.h"
#include "vyre/bench.h"

/* 1 once this process made the call and is not a child. Written before any
 * run starts (first thing in main), read by runs on any thread. */
static atomic_int g_host_is_child_capable;

int vyre_bench_host_start(int argc, char **argv, int *exit_code)
{
    if (vyre_bench_child_main(argc, argv, exit_code))
        return 1;
    atomic_store(&g_host_is_child_capable, 1);
    return 0;
}

const char *vyre__bench_child_exe(const vyre_bench_run_opts *o)
{
    if (o && o->child_exe)
        return o->child_exe;
    return atomic_load(&g_host_is_child_capable) ? "/proc/self/exe" : NULL;
}
