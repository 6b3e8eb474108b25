/*
 * test_bench_child.c - the host program's one call for the bench child
 * protocol (libcore/src/bench/child.c, vyre_bench_host_start): a program
 * that made it is re-run as the compile suite's cold-JIT child without
 * naming itself in the run options; one that did not is never re-run. The
 * child side itself runs through the real vyre-bench in
 * tests/cli/test_bench_cli.c (cold_jit_child_*).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_internal.h"
#include "vyre/bench.h"

TestSuite(bench_child);

Test(bench_child, a_host_that_made_the_call_is_its_own_child)
{
    unsetenv("VYRE__BENCH_CHILD"); /* not a child: the marker names no parent */
    vyre_bench_run_opts o;
    memset(&o, 0, sizeof o);
    cr_assert_null(vyre__bench_child_exe(&o), "no call yet: the cold-JIT points are left out");

    int code = 42;
    char host[] = "host";
    char *argv[] = {host, NULL};
    cr_assert_eq(vyre_bench_host_start(1, argv, &code), 0, "not a child: the host goes on");
    cr_assert_eq(code, 42, "exit code untouched when the host goes on");
    cr_assert_str_eq(vyre__bench_child_exe(&o), "/proc/self/exe");

    o.child_exe = "/usr/bin/other";
    cr_assert_str_eq(vyre__bench_child_exe(&o), "/usr/bin/other", "a named program wins");
}
