/*
 * test_bench_spec.c - `vyre-bench run` sweeps of real kernels without a
 * GPU: --dry-run of the shipped examples (examples/bench/) for sm_90a,
 * --arch, and bad specs rejected with one message naming the JSON path or
 * the expression's column, exit 2, nothing on stdout.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define EXAMPLES VYRE_TEST_SOURCE_DIR "/../examples/bench"
#define ADD_PTX  EXAMPLES "/add_kernel.ptx"

static char g_tmp[512];
static char g_env_home[700], g_env_xdg[700], g_env_data[700];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(bench_spec, .init = setup, .fini = teardown, .timeout = 120);

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void bench(tu_proc *p, const char *const *args)
{
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_data,
                               "VYRE_CUDA_LIBRARY=/nonexistent",
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, NULL);
}

/* The add example's parameters, with `extra` spliced in as the spec's
 * other top-level members. */
static void write_spec(const char *args, const char *extra, char *path, size_t size)
{
    snprintf(path, size, "%s/spec.json", g_tmp);
    char text[4096];
    snprintf(text, sizeof text,
             "{\"version\": 2, \"kernel\": \"%s\", \"entry\": \"add_kernel\",\n"
             " \"axes\": {\"N\": [1024, 4096]},\n"
             " \"args\": %s%s%s}\n",
             ADD_PTX, args, extra[0] ? ",\n " : "", extra);
    tu_write_file(path, text, strlen(text));
}

#define ADD_ARGS                                                                                   \
    "[{\"buffer\": \"N\", \"fill\": \"random\", \"seed\": 1}, {\"buffer\": \"N\"}, "               \
    "{\"buffer\": \"N\"}, {\"int\": \"N\"}, {\"null\": true}, {\"null\": true}]"

/* Runs a dry run of spec.json (plus extra arguments) and expects exit 2
 * with exactly `want` on stderr, "%s" standing for the spec's path. */
static void expect_spec_error(const char *args, const char *extra, const char *arch,
                              const char *want_fmt)
{
    char spec[600];
    write_spec(args, extra, spec, sizeof spec);
    tu_proc p;
    if (arch)
        bench(&p, ARGS("run", "--spec", spec, "--dry-run", "--arch", arch));
    else
        bench(&p, ARGS("run", "--spec", spec, "--dry-run"));
    /* want_fmt's one "%s" is the spec's path (spliced: the text is not a format). */
    char want[2048];
    const char *at = strstr(want_fmt, "%s");
    if (at)
        snprintf(want, sizeof want, "%.*s%s%s", (int)(at - want_fmt), want_fmt, spec, at + 2);
    else
        snprintf(want, sizeof want, "%s", want_fmt);
    cr_expect_eq(p.exit_code, 2, "exit %d for %s", p.exit_code, extra);
    cr_expect_str_eq(p.err, want);
    cr_expect_str_eq(p.out, "");
    tu_proc_free(&p);
}

Test(bench_spec, examples_dry_run_for_sm_90a)
{
    static const struct {
        const char *spec;
        const char *head;
        const char *row; /* one row's leading cells: point, axes, grid, block */
        const char *tail;
    } cases[] = {
        {"add.json", "entry add_kernel, 6 parameters, spec version 2\ncompiled for sm_90a (--arch)",
         "| 2 | N=4194304 | 4096 | 128 |", "dry run: 5 points would run"},
        {"softmax.json",
         "entry softmax_kernel, 7 parameters, spec version 2\ncompiled for sm_90a (--arch)",
         "| 6 | M=65536 N=1024 | 65536 | 128 |", "dry run: 6 points would run"},
        {"layer_norm.json",
         "entry _layer_norm_fwd_fused, 11 parameters, spec version 2\ncompiled for sm_90a (--arch)",
         "| 1 | M=4096 N=1024 | 4096 | 128 |", "dry run: 6 points would run"},
        {"matmul.json",
         "entry matmul_kernel, 8 parameters, spec version 2\ncompiled for sm_90a (--arch)",
         "| 4 | M=8192 N=4096 K=4096 | 2048 | 256 |", "dry run: 4 points would run"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char spec[600];
        snprintf(spec, sizeof spec, "%s/%s", EXAMPLES, cases[i].spec);
        tu_proc p;
        bench(&p, ARGS("run", "--spec", spec, "--dry-run", "--arch", "sm_90a"));
        cr_expect_eq(p.exit_code, 0, "%s: exit %d: %s", cases[i].spec, p.exit_code, p.err);
        cr_expect_str_eq(p.err, "", "%s", cases[i].spec);
        cr_expect(strstr(p.out, cases[i].head) != NULL, "%s: no '%s' in:\n%s", cases[i].spec,
                  cases[i].head, p.out);
        cr_expect(strstr(p.out, cases[i].row) != NULL, "%s: no '%s' in:\n%s", cases[i].spec,
                  cases[i].row, p.out);
        cr_expect(strstr(p.out, cases[i].tail) != NULL, "%s: no '%s' in:\n%s", cases[i].spec,
                  cases[i].tail, p.out);
        tu_proc_free(&p);
    }
}

Test(bench_spec, dry_run_takes_the_ptx_target_and_shows_bytes_and_flops)
{
    char spec[600];
    write_spec(ADD_ARGS, "\"grid\": \"ceil(N/1024)\", \"bytes\": \"3*4*N\", \"flops\": \"N\"", spec,
               sizeof spec);
    tu_proc p;
    bench(&p, ARGS("run", "--spec", spec, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    char want[2048];
    snprintf(want, sizeof want,
             "kernel %s (ptx), entry add_kernel, 6 parameters, spec version 2\n"
             "compiled for sm_90a (the PTX's .target): cubin ",
             ADD_PTX);
    cr_assert(strncmp(p.out, want, strlen(want)) == 0, "%s", p.out);
    const char *table = strstr(p.out, "\n\n");
    cr_assert_not_null(table);
    cr_assert_str_eq(table, "\n\n| point | axes | grid | block | shared | memory | bytes/launch | "
                            "flops/launch |\n"
                            "|---:|---|---:|---:|---:|---:|---:|---:|\n"
                            "| 1 | N=1024 | 1 | 128 | - | 12.0 KiB | 12.0 KiB | 1.0 K |\n"
                            "| 2 | N=4096 | 4 | 128 | - | 48.0 KiB | 48.0 KiB | 4.1 K |\n"
                            "\ndry run: 2 points would run; nothing was launched\n");
    tu_proc_free(&p);
}

Test(bench_spec, bad_specs_name_the_json_path_or_column)
{
    expect_spec_error("[{\"buffer\": \"N\", \"fill\": \"rand\"}]", "\"grid\": 1", NULL,
                      "vyre-bench: error: '%s': $.args[0].fill: 'rand' is not one of zeros, "
                      "ones, iota, random\n"
                      "hint: a parameter is {\"buffer\": COUNT, \"type\": \"bf16\", \"fill\": "
                      "\"random\", \"seed\": 1}, {\"int\": EXPR, \"type\": \"i64\"}, {\"float\": "
                      "X, \"type\": \"f64\"} or {\"null\": true}\n");
    expect_spec_error("[{\"buffer\": \"N\", \"fil\": \"ones\"}]", "\"grid\": 1", NULL,
                      "vyre-bench: error: '%s': $.args[0].fil: unknown key (buffer, type, fill, "
                      "seed, in)\n"
                      "hint: a parameter is {\"buffer\": COUNT, \"type\": \"bf16\", \"fill\": "
                      "\"random\", \"seed\": 1}, {\"int\": EXPR, \"type\": \"i64\"}, {\"float\": "
                      "X, \"type\": \"f64\"} or {\"null\": true}\n");
    expect_spec_error("[{\"buffer\": \"N\", \"type\": \"f8\"}]", "\"grid\": 1", NULL,
                      "vyre-bench: error: '%s': $.args[0].type: 'f8' is not one of f32, f16, "
                      "bf16, f64, i8, i32, i64, u8\n"
                      "hint: a parameter is {\"buffer\": COUNT, \"type\": \"bf16\", \"fill\": "
                      "\"random\", \"seed\": 1}, {\"int\": EXPR, \"type\": \"i64\"}, {\"float\": "
                      "X, \"type\": \"f64\"} or {\"null\": true}\n");
    expect_spec_error("[{\"buffer\": \"N\", \"seed\": 3}]", "\"grid\": 1", NULL,
                      "vyre-bench: error: '%s': $.args[0].seed: only a random fill takes a seed\n"
                      "hint: add \"fill\": \"random\", or drop the seed\n");
    expect_spec_error("[{\"null\": false}]", "\"grid\": 1", NULL,
                      "vyre-bench: error: '%s': $.args[0].null must be true\n"
                      "hint: write {\"null\": true} for a null pointer\n");
    expect_spec_error(ADD_ARGS, "\"grid\": \"ceil(N/1024\"", NULL,
                      "vyre-bench: error: '%s': $.grid: column 12: expected ',' or ')', found "
                      "the end\n"
                      "hint: write an integer expression of the axes such as ceil(N/1024), M/64, "
                      "2*M*N*K or min(N, 4096): + - * / and parentheses, ceil() floor() min() "
                      "max(), numbers (64K)\n");
    expect_spec_error(ADD_ARGS, "\"grid\": [\"N/1024\", \"Q\"]", NULL,
                      "vyre-bench: error: '%s': $.grid[1]: column 1: 'Q' is not an axis "
                      "(declare it under \"axes\" or with -a)\n"
                      "hint: write an integer expression of the axes such as ceil(N/1024), M/64, "
                      "2*M*N*K or min(N, 4096): + - * / and parentheses, ceil() floor() min() "
                      "max(), numbers (64K)\n");
    expect_spec_error(ADD_ARGS, "\"grid\": \"N/1000\"", NULL,
                      "vyre-bench: error: '%s': $.grid at N=1024: 'N/1000' is 128/125, not a "
                      "whole number\n"
                      "hint: round it: ceil(...) for a count of blocks that covers everything\n");
    expect_spec_error(ADD_ARGS, "\"grid\": \"ceil(N/1024)\", \"shared\": \"N/(N-N)\"", NULL,
                      "vyre-bench: error: '%s': $.shared at N=1024: column 2: division by zero\n"
                      "hint: guard the divisor, e.g. max(X, 1), or leave out the axis value 0\n");
    expect_spec_error(ADD_ARGS, "\"grid\": \"ceil(N/1024)\", \"flop\": 1", NULL,
                      "vyre-bench: error: '%s': $.flop: unknown key\n"
                      "hint: the keys are kernel, entry, axes, args, grid, block, shared, bytes, "
                      "flops, cooperative, pdl, version (and name, description, comment, _*)\n");
}

Test(bench_spec, the_kernel_checks_the_spec)
{
    expect_spec_error("[{\"buffer\": \"N\"}, {\"buffer\": \"N\"}, {\"buffer\": \"N\"}, {\"int\": "
                      "\"N\"}]",
                      "\"grid\": \"ceil(N/1024)\"", NULL,
                      "vyre-bench: error: '%s': $.args: the kernel takes 6 parameters, the spec "
                      "gives 4\n"
                      "hint: list every parameter in order; Triton kernels end with two scratch "
                      "pointers: {\"null\": true}, {\"null\": true}\n");
    expect_spec_error("[{\"buffer\": \"N\"}, {\"buffer\": \"N\"}, {\"buffer\": \"N\"}, {\"int\": "
                      "\"N\", \"type\": \"i64\"}, {\"null\": true}, {\"null\": true}]",
                      "\"grid\": \"ceil(N/1024)\"", NULL,
                      "vyre-bench: error: '%s': $.args[3] is 8 bytes, the kernel's parameter 3 "
                      "is 4 (.u32)\n"
                      "hint: match the kernel's parameter: a pointer or i64/f64 is 8 bytes, "
                      "i32/f32 4\n");
    expect_spec_error(ADD_ARGS, "\"grid\": \"ceil(N/1024)\", \"block\": 256", NULL,
                      "vyre-bench: error: '%s': $.block at N=1024 is 256, 1, 1, the PTX requires "
                      ".reqntid 128, 1, 1\n"
                      "hint: leave \"block\" out to take it from the PTX, or regenerate the "
                      "kernel for that block\n");
    expect_spec_error(ADD_ARGS, "\"grid\": \"ceil(N/1024)\"", "sm_90",
                      "vyre-bench: error: the PTX's .target sm_90a cannot be compiled for --arch "
                      "sm_90\n"
                      "hint: arch-specific PTX compiles only for exactly its target: leave "
                      "--arch out or regenerate the PTX\n");
}

/* A misspelled entry is the error, in a dry run too, naming the module's
 * entries (issue 25: --dry-run passed; a version-2 spec said "$.block is
 * missing", the block being the missing entry's .reqntid). */
Test(bench_spec, a_wrong_entry_is_named_first_with_the_modules_entries)
{
    tu_proc p;
    bench(&p, ARGS("run", ADD_PTX, "--entry", "add_kernl", "-a", "N=1024", "--dry-run"));
    cr_expect_eq(p.exit_code, 2);
    char want[2048];
    snprintf(want, sizeof want,
             "vyre-bench: error: kernel '%s' has no entry 'add_kernl'\n"
             "hint: check --entry; the module has: add_kernel\n",
             ADD_PTX);
    cr_expect_str_eq(p.err, want);
    cr_expect_str_eq(p.out, "");
    tu_proc_free(&p);

    char spec[600];
    snprintf(spec, sizeof spec, "%s/typo.json", g_tmp);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"version\": 2, \"kernel\": \"%s\", \"entry\": \"add_kernal\",\n"
             " \"axes\": {\"N\": [1024]}, \"grid\": \"ceil(N/1024)\",\n \"args\": %s}\n",
             ADD_PTX, ADD_ARGS);
    tu_write_file(spec, text, strlen(text));
    bench(&p, ARGS("run", "--spec", spec, "--dry-run"));
    cr_expect_eq(p.exit_code, 2);
    snprintf(want, sizeof want,
             "vyre-bench: error: kernel '%s' has no entry 'add_kernal'\n"
             "hint: fix \"entry\" in the spec; the module has: add_kernel\n",
             ADD_PTX);
    cr_expect_str_eq(p.err, want);
    tu_proc_free(&p);

    /* CUDA C: the __global__ functions it defines. */
    char cu[600];
    snprintf(cu, sizeof cu, "%s/two.cu", g_tmp);
    static const char src[] = "extern \"C\" __global__ void scale(float *x, int n) {}\n"
                              "extern \"C\" __global__ void\nshift (float *x, int n) {}\n";
    tu_write_file(cu, src, strlen(src));
    bench(&p, ARGS("run", cu, "--entry", "scal", "-a", "N=1024", "--dry-run"));
    cr_expect_eq(p.exit_code, 2);
    snprintf(want, sizeof want,
             "vyre-bench: error: kernel '%s' has no entry 'scal'\n"
             "hint: check --entry; the module has: scale, shift\n",
             cu);
    cr_expect_str_eq(p.err, want);
    tu_proc_free(&p);
}

/* NVRTC's log names the file compiled (issue 25: "kernel.cu(1): error"
 * for bad.cu). */
Test(bench_spec, the_compiler_log_names_the_real_file)
{
    char cu[600];
    snprintf(cu, sizeof cu, "%s/bad.cu", g_tmp);
    static const char src[] = "extern \"C\" __global__ void k(float *x) { x[0] = undefined_y; }\n";
    tu_write_file(cu, src, strlen(src));
    tu_proc p;
    bench(&p, ARGS("run", cu, "--entry", "k", "-a", "N=1024", "--dry-run"));
    cr_expect_eq(p.exit_code, 2, "%s", p.err);
    char want[700];
    snprintf(want, sizeof want, "%s(1): error", cu);
    cr_expect(strstr(p.err, want), "%s", p.err);
    cr_expect(!strstr(p.err, "kernel.cu"), "%s", p.err);
    tu_proc_free(&p);
}

Test(bench_spec, version_1_specs_keep_their_meaning)
{
    /* Today's spec: grid is threads (ceil(N / block) blocks), no version. */
    char spec[600], k[600];
    snprintf(k, sizeof k, "%s/k.cu", g_tmp);
    const char src[] = "extern \"C\" __global__ void f(float a, float *o, const float *i, int n) "
                       "{}\n";
    tu_write_file(k, src, sizeof src - 1);
    snprintf(spec, sizeof spec, "%s/old.json", g_tmp);
    const char text[] = "{\"kernel\": \"k.cu\", \"entry\": \"f\",\n"
                        " \"axes\": {\"N\": \"1K:4K:x4\", \"ALPHA\": [0.5, 2]},\n"
                        " \"args\": [{\"float\": \"ALPHA\"}, {\"buffer\": \"N\", \"in\": true}, "
                        "{\"buffer\": \"N\"}, {\"int\": \"N\"}],\n"
                        " \"grid\": \"N\", \"block\": 256}\n";
    tu_write_file(spec, text, sizeof text - 1);
    tu_proc p;
    bench(&p, ARGS("run", "--spec", spec, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(strstr(p.out, "compiled for sm_90 (the default)") != NULL, "%s", p.out);
    cr_expect(strstr(p.out, "| 1 | N=1024 ALPHA=0.5 | 4 | 256 | - | 8.0 KiB | 8.0 KiB | - |\n") !=
                  NULL,
              "%s", p.out);
    cr_expect(strstr(p.out, "| 4 | N=4096 ALPHA=2 | 16 | 256 |") != NULL, "%s", p.out);
    tu_proc_free(&p);
    /* A version 1 grid that is an expression says how to get blocks. */
    const char text2[] = "{\"kernel\": \"k.cu\", \"entry\": \"f\", \"axes\": {\"N\": 1024},\n"
                         " \"args\": [{\"float\": 1}, {\"buffer\": \"N\"}, {\"buffer\": \"N\"}, "
                         "{\"int\": \"N\"}], \"grid\": \"ceil(N/256)\"}\n";
    tu_write_file(spec, text2, sizeof text2 - 1);
    bench(&p, ARGS("run", "--spec", spec, "--dry-run"));
    char want[1024];
    snprintf(want, sizeof want,
             "vyre-bench: error: '%s': $.grid: a version 1 spec's grid is an axis or a number of "
             "threads, not 'ceil(N/256)'\n"
             "hint: add \"version\": 2 to the spec: there \"grid\" counts blocks (programs) and "
             "takes expressions and [X, Y, Z]\n",
             spec);
    cr_expect_eq(p.exit_code, 2);
    cr_expect_str_eq(p.err, want);
    tu_proc_free(&p);
}

Test(bench_spec, arch_and_dry_run_usage_errors)
{
    tu_proc p;
    bench(&p, ARGS("run", ADD_PTX, "--entry", "add_kernel", "-a", "N=1024", "--arch", "sm90"));
    cr_expect_eq(p.exit_code, 2);
    cr_expect_str_eq(p.err, "vyre-bench: error: bad --arch 'sm90'\n"
                            "hint: write an architecture such as sm_90, sm_90a (Triton's) or "
                            "sm_100f\n"
                            "try 'vyre-bench run --help'\n");
    tu_proc_free(&p);
    bench(&p, ARGS("run", "--dry-run"));
    cr_expect_eq(p.exit_code, 2);
    cr_expect_str_eq(p.err, "vyre-bench: error: --dry-run without a kernel\n"
                            "hint: give a kernel or --spec: they apply to sweeps\n"
                            "try 'vyre-bench run --help'\n");
    tu_proc_free(&p);
    char spec[600];
    snprintf(spec, sizeof spec, "%s/add.json", EXAMPLES);
    bench(&p, ARGS("run", "--spec", spec, "--dry-run", "--json"));
    cr_expect_eq(p.exit_code, 2);
    cr_expect_str_eq(p.err, "vyre-bench: error: --dry-run prints no JSON\n"
                            "hint: leave out --csv/--json: a dry run lists points\n"
                            "try 'vyre-bench run --help'\n");
    tu_proc_free(&p);
    /* The default binding's three parameters against a six-parameter kernel. */
    bench(&p, ARGS("run", ADD_PTX, "--entry", "add_kernel", "-a", "N=1024", "--dry-run"));
    cr_expect_eq(p.exit_code, 2);
    cr_expect_str_eq(p.err, "vyre-bench: error: the kernel takes 6 parameters; the default binding "
                            "passes 3 (float *out, const float *in, int N)\n"
                            "hint: write a spec whose \"args\" list every parameter in order "
                            "(--spec; see examples/bench/)\n");
    tu_proc_free(&p);
}

/* Issue 34, point 5: -a overrides a spec's axis as nvbench's -a does:
 * narrower (N=1M, once "axis 'N' is given twice"), or new values; an axis
 * the spec lacks is an error naming the spec's axes. */
Test(bench_spec, axis_option_overrides_the_specs_axis)
{
    static const struct {
        const char *axis;
        const char *rows; /* the dry run's rows, in order */
        const char *tail;
    } cases[] = {
        {"N=1M", "| 1 | N=1048576 | 1024 | 128 |", "dry run: 1 point would run"},
        {"N=3M,1K", "| 1 | N=3145728 | 3072 | 128 |", "dry run: 2 points would run"},
        {"N=3M,1K", "| 2 | N=1024 | 1 | 128 |", "dry run: 2 points would run"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_proc p;
        bench(&p, ARGS("run", "--spec", EXAMPLES "/add.json", "-a", cases[i].axis, "--dry-run",
                       "--arch", "sm_90a"));
        cr_assert_eq(p.exit_code, 0, "-a %s: exit %d: %s", cases[i].axis, p.exit_code, p.err);
        cr_assert_str_eq(p.err, "");
        cr_assert(strstr(p.out, cases[i].rows), "-a %s: no '%s' in:\n%s", cases[i].axis,
                  cases[i].rows, p.out);
        cr_assert(strstr(p.out, cases[i].tail), "-a %s:\n%s", cases[i].axis, p.out);
        cr_assert(!strstr(p.out, "N=4194304"), "-a %s: the spec's N=4M still runs:\n%s",
                  cases[i].axis, p.out);
        tu_proc_free(&p);
    }
    tu_proc p;
    bench(&p, ARGS("run", "--spec", EXAMPLES "/add.json", "-a", "M=4", "--dry-run"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.out, "");
    cr_assert_str_eq(p.err, "vyre-bench: error: axis 'M' is not one of the spec's axes (N)\n"
                            "hint: -a narrows or replaces an axis the spec declares; add the axis "
                            "to the spec's \"axes\" to sweep it\n"
                            "try 'vyre-bench run --help'\n");
    tu_proc_free(&p);
    bench(&p, ARGS("run", "--spec", EXAMPLES "/add.json", "-a", "N=1M", "-a", "N=2M", "--dry-run"));
    cr_assert_eq(p.exit_code, 2);
    cr_assert_str_eq(p.err, "vyre-bench: error: axis 'N' is given twice\n"
                            "hint: give each axis once; list several values as N=1,2,3\n"
                            "try 'vyre-bench run --help'\n");
    tu_proc_free(&p);
}
