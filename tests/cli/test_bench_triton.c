/*
 * test_bench_triton.c - `vyre-bench run --triton NAME|KEY` on a real
 * torch.compile cache (tests/fixtures/torch_block/), with no GPU: every
 * pointwise and persistent-reduction kernel's spec inferred by --dry-run
 * (its parameter count checked against the PTX's .entry), the group
 * TorchInductor's autotuning picked, --emit-spec round-tripping through
 * `run --spec --dry-run`, and each bad input one message naming what to
 * pass, exit 2.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define FIXTURE  VYRE_TEST_SOURCE_DIR "/fixtures/torch_block/cache"
#define TRITON   FIXTURE "/triton"
#define INDUCTOR FIXTURE "/inductor"

#define SOFTMAX     "triton_per_fused__softmax_amax_mul_sub_view_3"
#define SOFTMAX_KEY "7DQT7L24OCZYNVTKEMFNAWW5YR6ZOTJR2IC446YUUQDBWOZTXN7Q"
#define VIEW2       "triton_poi_fused_addmm_clone_split_transpose_view_2"
#define CLONE5      "triton_poi_fused_clone_transpose_view_5"
#define CLONE5_KEY  "CK3S4AFM5DXRU46HVLIXVJEBAZQAL6YZOA26QJEHHIERLDHXU3GQ"

static char g_tmp[512];
static char g_env_home[700], g_env_xdg[700], g_env_data[700], g_env_inductor[800];

static void setup(void)
{
    tu_mkdtemp(g_tmp, sizeof g_tmp);
    snprintf(g_env_home, sizeof g_env_home, "HOME=%s", g_tmp);
    snprintf(g_env_xdg, sizeof g_env_xdg, "XDG_CACHE_HOME=%s/xdg", g_tmp);
    snprintf(g_env_data, sizeof g_env_data, "XDG_DATA_HOME=%s/data", g_tmp);
    /* No TorchInductor cache unless a test gives one. */
    snprintf(g_env_inductor, sizeof g_env_inductor, "TORCHINDUCTOR_CACHE_DIR=%s/no-inductor",
             g_tmp);
}

static void teardown(void)
{
    tu_rm_rf(g_tmp);
}

TestSuite(bench_triton, .init = setup, .fini = teardown, .timeout = 120);

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void bench(tu_proc *p, const char *const *args)
{
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_data,
                               g_env_inductor,
                               "VYRE_CUDA_LIBRARY=/nonexistent",
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, NULL);
}

/* The parameters of the PTX's .entry of group key's kernel name, counted
 * from the file (not through vyre). */
static int ptx_params(const char *dir, const char *key, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s.ptx", dir, key, name);
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    cr_assert(text, "cannot read %s", path);
    const char *entry = strstr(text, ".entry");
    cr_assert(entry);
    const char *end = strchr(entry, ')');
    int n = 0;
    for (const char *p = strstr(entry, ".param"); p && p < end; p = strstr(p + 1, ".param"))
        n++;
    free(text);
    return n;
}

/* Expects exit 2, nothing on stdout and exactly want on stderr. */
static void expect_error(tu_proc *p, const char *want)
{
    cr_expect_eq(p->exit_code, 2, "exit %d: %s", p->exit_code, p->err);
    cr_expect_str_eq(p->err, want);
    cr_expect_str_eq(p->out, "");
    tu_proc_free(p);
}

Test(bench_triton, dry_run_infers_every_kernel_of_the_model)
{
    static const struct {
        const char *name, *key;
        const char *grid; /* the grid note's start */
        const char *row;  /* the point's leading cells: point, axes, grid, block, shared */
    } cases[] = {
        {SOFTMAX, SOFTMAX_KEY,
         "  grid: ceil(xnumel/32) programs (Grid1D, XBLOCK 32 from the "
         "autotuning's .best_config; r0_numel is reduced within each program)",
         "| 1 | xnumel=4096 r0_numel=128 | 128 | 64 | - | 2.0 MiB |"},
        {"triton_per_fused_add_addmm_native_layer_norm_view_6",
         "FXLOL5RBNCX77SP4RYLRR3L3YIPGJWCBVIBPYFDYXVKWAOUYEXWA",
         "  grid: ceil(xnumel/4) programs (Grid1D, XBLOCK 4 from the TTIR; r0_numel is reduced "
         "within each program)",
         "| 1 | xnumel=1024 r0_numel=256 | 256 | 32 | - | 3.0 MiB |"},
        {"triton_per_fused_native_layer_norm_0",
         "6K5JAYXEFU2OZXGO2XPHFA7EI56XJBMCNCTNQ2TE4VZF7DJMFJEQ",
         "  grid: ceil(xnumel/4) programs (Grid1D, XBLOCK 4 from the TTIR; r0_numel is reduced "
         "within each program)",
         "| 1 | xnumel=1024 r0_numel=256 | 256 | 32 | - | 2.0 MiB |"},
        {"triton_poi_fused_add_addmm_view_8",
         "FQG5LGAKJALCMXMMMX4T2BPQMLDS3THERKJQ3BMBHS73JSMQLHGA",
         "  grid: ceil(xnumel/512) programs (Grid1D, XBLOCK 512 from the autotuning's "
         ".best_config)",
         "| 1 | xnumel=262144 | 512 | 256 | - | 3.0 MiB |"},
        {"triton_poi_fused_addmm_clone_split_transpose_view_1",
         "YK463IYXGJG64FMZVF3TUZ7QCRXEY5DSUOTZ5ZUKMU5YJRFNCP6A",
         "  grid: ceil(xnumel/1024) programs (Grid1D, XBLOCK 1024 from the autotuning's "
         ".best_config)",
         "| 1 | xnumel=262144 | 256 | 128 | - | 4.0 MiB |"},
        {VIEW2, "R3XIW7Z637BFQMFEEJ5FDZY5NACWNTUKGRRZVIRD53RP3KKPT7XQ",
         "  grid: ceil(xnumel/128) x ceil(ynumel/32) programs (Grid2D, XBLOCK 128 from the "
         "autotuning's .best_config, YBLOCK 32 from the autotuning's .best_config)",
         "| 1 | ynumel=2048 xnumel=128 | 1x64 | 256 | 16.0 KiB | 4.0 MiB |"},
        {"triton_poi_fused_addmm_clone_split_transpose_view_4",
         "7POGI7QVBEIM3L3F2UO56VXWL7AJUMCJGACQSGEAAJE576RV7AZA",
         "  grid: ceil(xnumel/512) programs (Grid1D, XBLOCK 512 from the autotuning's "
         ".best_config)",
         "| 1 | xnumel=262144 | 512 | 256 | - | 4.0 MiB |"},
        {"triton_poi_fused_addmm_gelu_view_7",
         "W4AL7KKF266ACJEQCMLUKPCJYVCLZAY5LZVJH4RCC34L5WER7RIA",
         "  grid: ceil(xnumel/1024) programs (Grid1D, XBLOCK 1024 from the autotuning's "
         ".best_config)",
         "| 1 | xnumel=1048576 | 1024 | 128 | - | 4.0 MiB |"},
        {CLONE5, CLONE5_KEY,
         "  grid: ceil(xnumel/512) programs (Grid1D, XBLOCK 512 from the autotuning's "
         ".best_config)",
         "| 1 | xnumel=262144 | 512 | 256 | - | 2.0 MiB |"},
        /* The looped reduction: one program a row (XBLOCK 1), each looping
         * over its 8192 columns; %xoffset * 8192 in its TTIR is the row's
         * offset (the grid read 1 program before). */
        {"triton_red_fused_mul_sum_0", "6EUFOWKT6NCOEJP24TFXA4DEUX54PXG6Z3SEALPG2IWPSFS6NHGA",
         "  grid: xnumel programs (Grid1D, XBLOCK 1 from the TTIR; r0_numel is reduced within "
         "each program)",
         "| 1 | xnumel=256 r0_numel=8192 | 256 | 512 | 64 B | 8.0 MiB |"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_proc p;
        bench(&p, ARGS("run", "--triton", cases[i].name, "--dir", TRITON, "--inductor-dir",
                       INDUCTOR, "--dry-run"));
        cr_expect_eq(p.exit_code, 0, "%s: exit %d: %s", cases[i].name, p.exit_code, p.err);
        cr_expect_str_eq(p.err, "", "%s", cases[i].name);
        char head[1024];
        snprintf(head, sizeof head,
                 "kernel %s/%s/%s.ptx (ptx), entry %s, %d parameters, spec version 2\n"
                 "compiled for sm_90a (the PTX's .target): cubin ",
                 TRITON, cases[i].key, cases[i].name, cases[i].name,
                 ptx_params(TRITON, cases[i].key, cases[i].name));
        cr_expect(strstr(p.out, head), "%s: no '%s' in:\n%s", cases[i].name, head, p.out);
        cr_expect(tu_has_line(p.out, cases[i].grid), "%s: no line '%s' in:\n%s", cases[i].name,
                  cases[i].grid, p.out);
        cr_expect(strstr(p.out, cases[i].row), "%s: no '%s' in:\n%s", cases[i].name, cases[i].row,
                  p.out);
        cr_expect(strstr(p.out, "\ndry run: 1 point would run; nothing was launched\n"), "%s",
                  cases[i].name);
        tu_proc_free(&p);
    }
}

/* The dry run's whole output but the cubin's size (the local compiler's). */
#define SOFTMAX_NOTES                                                                              \
    "inferred from Triton's cache:\n"                                                              \
    "  group: " SOFTMAX_KEY " of kernel " SOFTMAX " (Triton 3.6.0, sm_90): the only group of "     \
    "the kernel; TorchInductor's autotuning record: "                                              \
    "ya/bfd311bf258ac22af81b8e64ef3da6f920f73bddff66996e5b6de4a2f848efb1.best_config\n"            \
    "  kernel: " SOFTMAX ".ptx (no GPU to match the cubin against: the PTX)\n"                     \
    "  parameters: 3 from the TTIR, then Triton's 2 scratch pointers (global_scratch_size 0: "     \
    "null, profile_scratch_size 0: null)\n"                                                        \
    "  sizes: xnumel=4096 r0_numel=128; the model's launch at "                                    \
    "n4/cn4py7w7agtvjrfl5zbpmyugcqgrj7s2s7g55c52wblcmg6xgnfk.py:648\n"                             \
    "  buffer in_out_ptr0: f32, xnumel*r0_numel elements (the model's buf10, buf7's storage: "     \
    "524288 elements, scaled with xnumel*r0_numel)\n"                                              \
    "  grid: ceil(xnumel/32) programs (Grid1D, XBLOCK 32 from the autotuning's .best_config; "     \
    "r0_numel is reduced within each program)\n"                                                   \
    "  block: 64 threads (num_warps 2 x warp size 32); dynamic shared memory 0 bytes (the "        \
    "metadata's shared)\n\n"
#define SOFTMAX_PTX TRITON "/" SOFTMAX_KEY "/" SOFTMAX ".ptx"
#define SOFTMAX_SPEC                                                                               \
    "{\n"                                                                                          \
    "  \"description\": \"Triton kernel " SOFTMAX " (group " SOFTMAX_KEY                           \
    "), inferred from Triton's cache\",\n"                                                         \
    "  \"version\": 2,\n"                                                                          \
    "  \"kernel\": \"" SOFTMAX_PTX "\",\n"                                                         \
    "  \"entry\": \"" SOFTMAX "\",\n"                                                              \
    "  \"axes\": {\"xnumel\": [4096], \"r0_numel\": [128]},\n"                                     \
    "  \"args\": [\n"                                                                              \
    "    {\"buffer\": \"xnumel*r0_numel\", \"type\": \"f32\", \"fill\": \"random\"},\n"            \
    "    {\"int\": \"xnumel\", \"type\": \"i32\"},\n"                                              \
    "    {\"int\": \"r0_numel\", \"type\": \"i32\"},\n"                                            \
    "    {\"null\": true},\n"                                                                      \
    "    {\"null\": true}\n"                                                                       \
    "  ],\n"                                                                                       \
    "  \"grid\": \"ceil(xnumel/32)\",\n"                                                           \
    "  \"block\": 64,\n"                                                                           \
    "  \"shared\": 0\n"                                                                            \
    "}\n"
#define SOFTMAX_PLAN_HEAD                                                                          \
    "kernel " SOFTMAX_PTX " (ptx), entry " SOFTMAX ", 5 parameters, spec version 2\n"              \
    "compiled for sm_90a (the PTX's .target): cubin "
#define SOFTMAX_PLAN_TAIL                                                                          \
    "\n\n| point | axes | grid | block | shared | memory | bytes/launch | flops/launch |\n"        \
    "|---:|---|---:|---:|---:|---:|---:|---:|\n"                                                   \
    "| 1 | xnumel=4096 r0_numel=128 | 128 | 64 | - | 2.0 MiB | 2.0 MiB | - |\n\n"                  \
    "dry run: 1 point would run; nothing was launched\n"

/* out is head, a cubin size (digits, '.', a unit), then tail. */
static void expect_plan(const char *out, const char *head, const char *tail)
{
    size_t hl = strlen(head), tl = strlen(tail), ol = strlen(out);
    cr_assert(ol > hl + tl, "short output:\n%s", out);
    cr_expect(!strncmp(out, head, hl), "does not start with\n%s\nin:\n%s", head, out);
    cr_expect_str_eq(out + ol - tl, tail);
    const char *size = out + hl;
    cr_expect(strspn(size, "0123456789. KMiB") == ol - hl - tl, "cubin size '%.*s'",
              (int)(ol - hl - tl), size);
}

Test(bench_triton, dry_run_prints_the_inference_the_spec_and_the_points)
{
    tu_proc p;
    bench(&p, ARGS("run", "--triton", SOFTMAX, "--dir", TRITON, "--inductor-dir", INDUCTOR,
                   "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect_str_eq(p.err, "");
    expect_plan(p.out, SOFTMAX_NOTES "spec:\n" SOFTMAX_SPEC "\n" SOFTMAX_PLAN_HEAD,
                SOFTMAX_PLAN_TAIL);
    tu_proc_free(&p);
}

Test(bench_triton, emit_spec_round_trips_through_run_spec_dry_run)
{
    char spec[700];
    snprintf(spec, sizeof spec, "%s/softmax.json", g_tmp);
    tu_proc p;
    bench(&p, ARGS("run", "--triton", SOFTMAX, "--dir", TRITON, "--inductor-dir", INDUCTOR,
                   "--emit-spec", spec));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect_str_eq(p.out, "");
    cr_expect_str_eq(p.err, tu_text("vyre-bench: wrote the spec of %s to %s; run it with "
                                    "--spec %s\n",
                                    SOFTMAX, spec, spec));
    tu_proc_free(&p);
    size_t len = 0;
    char *text = tu_read_file(spec, &len);
    cr_assert(text);
    cr_expect_str_eq(text, SOFTMAX_SPEC);
    free(text);
    /* The file runs as any spec does: the same points, the same launch. */
    bench(&p, ARGS("run", "--spec", spec, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect_str_eq(p.err, "");
    expect_plan(p.out, SOFTMAX_PLAN_HEAD, SOFTMAX_PLAN_TAIL);
    tu_proc_free(&p);
    /* A second --emit-spec never overwrites the file. */
    bench(&p, ARGS("run", "--triton", SOFTMAX, "--dir", TRITON, "--emit-spec", spec, "-a",
                   "xnumel=64", "-a", "r0_numel=128"));
    expect_error(&p, tu_text("vyre-bench: error: cannot write '%s': File exists\n"
                             "hint: --emit-spec writes a new file: choose another name, or "
                             "remove that one first\n",
                             spec));
}

Test(bench_triton, several_groups_take_the_autotunings_choice_or_are_refused)
{
    tu_proc p;
    bench(&p, ARGS("run", "--triton", VIEW2, "--dir", TRITON, "--dry-run"));
    expect_error(
        &p, "vyre-bench: error: kernel '" VIEW2 "' has 2 groups in '" TRITON "': "
            "C3FHEVR3F2S5CA43DLHE4GY7N5ZWG4Q3DSR3NIARSG2MXV67RAJQ (sm_90, num_warps 8, shared "
            "16384, XBLOCK 16, YBLOCK 256), R3XIW7Z637BFQMFEEJ5FDZY5NACWNTUKGRRZVIRD53RP3KKPT7XQ "
            "(sm_90, num_warps 8, shared 16384, XBLOCK 128, YBLOCK 32); they differ in hash\n"
            "hint: name one by its key (--triton KEY), or give TorchInductor's cache "
            "(--inductor-dir DIR) to take its autotuning's choice\n");
    /* Found through TORCHINDUCTOR_CACHE_DIR as well as --inductor-dir. */
    snprintf(g_env_inductor, sizeof g_env_inductor, "TORCHINDUCTOR_CACHE_DIR=%s", INDUCTOR);
    bench(&p, ARGS("run", "--triton", VIEW2, "--dir", TRITON, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(tu_has_line(p.out, "  group: R3XIW7Z637BFQMFEEJ5FDZY5NACWNTUKGRRZVIRD53RP3KKPT7XQ of "
                                 "kernel " VIEW2 " (Triton 3.6.0, sm_90): TorchInductor's "
                                 "autotuning picked it, of 2 groups "
                                 "(sy/0bc72a6ac6b913915d180603094e3a4fb9f05580dfe1c04d6f72e5c8e335"
                                 "a882.best_config)"),
              "%s", p.out);
    tu_proc_free(&p);
}

Test(bench_triton, a_key_prefix_names_one_group_and_the_ttir_gives_its_blocks)
{
    tu_proc p;
    bench(&p, ARGS("run", "--triton", "C3FHEVR3", "--dir", TRITON, "-a", "xnumel=128", "-a",
                   "ynumel=2048,4096", "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(tu_has_line(p.out, "  grid: ceil(xnumel/16) x ceil(ynumel/256) programs (the "
                                 "program ids the TTIR reads, XBLOCK 16 from the TTIR, YBLOCK "
                                 "256 from the TTIR)"),
              "%s", p.out);
    cr_expect(tu_has_line(p.out, "  sizes: ynumel=2048,4096 (-a) xnumel=128 (-a)"), "%s", p.out);
    cr_expect(strstr(p.out, "| 1 | ynumel=2048 xnumel=128 | 8x8 | 256 | 16.0 KiB |"), "%s", p.out);
    cr_expect(strstr(p.out, "| 2 | ynumel=4096 xnumel=128 | 8x16 | 256 | 16.0 KiB |"), "%s", p.out);
    tu_proc_free(&p);
}

Test(bench_triton, an_unknown_name_lists_the_nearest)
{
    tu_proc p;
    bench(&p, ARGS("run", "--triton", "triton_poi_fused_clone_transpose_view_6", "--dir", TRITON,
                   "--dry-run"));
    expect_error(&p, "vyre-bench: error: no Triton kernel or group "
                     "'triton_poi_fused_clone_transpose_view_6' in '" TRITON "'\n"
                     "hint: the nearest kernel names: " CLONE5 ", "
                     "triton_poi_fused_addmm_clone_split_transpose_view_1, "
                     "triton_poi_fused_addmm_clone_split_transpose_view_2, "
                     "triton_poi_fused_addmm_clone_split_transpose_view_4, "
                     "triton_poi_fused_add_addmm_view_8\n");
}

Test(bench_triton, sizes_the_model_did_not_record_are_asked_for)
{
    tu_proc p;
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", TRITON, "--dry-run"));
    expect_error(&p, "vyre-bench: error: no size for 'xnumel' of kernel '" CLONE5 "'\n"
                     "hint: pass the sizes to run it at, such as -a xnumel=1M:64M:x4, or give "
                     "TorchInductor's cache (--inductor-dir) for the sizes the model used\n");
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", TRITON, "-a", "n=3", "--dry-run"));
    expect_error(&p, "vyre-bench: error: -a 'n=3': kernel '" CLONE5 "' has no such parameter\n"
                     "hint: axes are the kernel's integer and float parameters (-a "
                     "PARAM=VALUES): xnumel\n");
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", TRITON, "-a", "xnumel=1M", "--buffer",
                   "xnumel=4", "--dry-run"));
    expect_error(&p, "vyre-bench: error: --buffer 'xnumel=4': kernel '" CLONE5 "' has no such "
                     "pointer parameter\n"
                     "hint: write --buffer PARAM=COUNT[:TYPE], PARAM a pointer parameter of the "
                     "kernel (in_ptr0, out_ptr0, ...), COUNT an expression of the axes\n");
}

Test(bench_triton, buffers_follow_the_model_or_the_iteration_space_or_buffer)
{
    tu_proc p;
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", TRITON, "-a", "xnumel=1M", "--buffer",
                   "in_ptr0=2*xnumel", "--buffer", "out_ptr0=xnumel:u8", "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(tu_has_line(p.out, "  buffer in_ptr0: f32, 2*xnumel elements (--buffer)"), "%s",
              p.out);
    cr_expect(tu_has_line(p.out, "  buffer out_ptr0: u8, xnumel elements (--buffer)"), "%s", p.out);
    /* 2M f32 and 1M bytes. */
    cr_expect(strstr(p.out, "| 1 | xnumel=1048576 | 2048 | 256 | - | 9.0 MiB |"), "%s", p.out);
    tu_proc_free(&p);
    /* A transpose reads a tensor three times its iteration space: the
     * model's sizes say so, and scale with -a. */
    bench(&p, ARGS("run", "--triton", "triton_poi_fused_addmm_clone_split_transpose_view_1",
                   "--dir", TRITON, "--inductor-dir", INDUCTOR, "-a", "xnumel=1M", "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(tu_has_line(p.out, "  buffer in_ptr1: f32, 3*xnumel elements (the model's buf4: "
                                 "786432 elements, scaled with xnumel)"),
              "%s", p.out);
    cr_expect(tu_has_line(p.out, "  buffer in_ptr0: f32, ceil(3*xnumel/1024) elements (the "
                                 "model's arg4_1: 768 elements, scaled with xnumel)"),
              "%s", p.out);
    tu_proc_free(&p);
}

Test(bench_triton, option_mistakes_are_usage_errors)
{
    tu_proc p;
    bench(&p, ARGS("run", "--grid", "4", "--spec", "x.json", "--dry-run"));
    expect_error(&p, "vyre-bench: error: --dir, --inductor-dir, --grid, --buffer and --emit-spec "
                     "go with --triton\n"
                     "hint: give the kernel: --triton NAME|KEY\n"
                     "try 'vyre-bench run --help'\n");
    bench(&p, ARGS("run", "--triton", CLONE5, "--spec", "x.json", "--dry-run"));
    expect_error(&p, "vyre-bench: error: --triton with another kernel\n"
                     "hint: leave out --spec and the kernel file: --triton infers both\n"
                     "try 'vyre-bench run --help'\n");
}

/* ---- a copy of groups, changed ------------------------------------------------ */

/* Copies group key of the fixture into g_tmp/triton/; returns that cache. */
static const char *copy_group(const char *key)
{
    static char dir[700];
    snprintf(dir, sizeof dir, "%s/triton", g_tmp);
    mkdir(dir, 0700);
    char src[1024], dst[1024];
    snprintf(src, sizeof src, "%s/%s", TRITON, key);
    snprintf(dst, sizeof dst, "%s/%s", dir, key);
    tu_copy_tree(src, dst);
    return dir;
}

/* Replaces every `from` by `to` in group key's file name.ext of the copy. */
static void edit(const char *key, const char *name, const char *ext, const char *from,
                 const char *to)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/triton/%s/%s.%s", g_tmp, key, name, ext);
    size_t len = 0;
    char *text = tu_read_file(path, &len);
    cr_assert(text, "cannot read %s", path);
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    char *out = malloc(len * (tl > fl ? tl : 1) + 1), *o = out;
    for (const char *p = text; *p;) {
        if (!strncmp(p, from, fl)) {
            memcpy(o, to, tl);
            o += tl;
            p += fl;
            n++;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    cr_assert(n > 0, "no '%s' in %s", from, path);
    tu_write_file(path, out, (size_t)(o - out));
    free(out);
    free(text);
}

Test(bench_triton, a_group_without_ptx_or_cubin_says_so)
{
    const char *dir = copy_group(CLONE5_KEY);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s.ptx", dir, CLONE5_KEY, CLONE5);
    cr_assert_eq(unlink(path), 0);
    snprintf(path, sizeof path, "%s/%s/%s.cubin", dir, CLONE5_KEY, CLONE5);
    cr_assert_eq(unlink(path), 0);
    tu_proc p;
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", dir, "-a", "xnumel=1M", "--dry-run"));
    expect_error(&p, "vyre-bench: error: group '" CLONE5_KEY "' of kernel '" CLONE5
                     "' has no .ptx or .cubin\n"
                     "hint: run the model again so that Triton compiles the kernel, or name "
                     "another group of it by its key\n");
}

Test(bench_triton, a_parameter_type_a_spec_cannot_hold_says_what_to_pass)
{
    const char *dir = copy_group(CLONE5_KEY);
    edit(CLONE5_KEY, CLONE5, "ttir", "%in_ptr0: !tt.ptr<f32>", "%in_ptr0: !tt.ptr<i16>");
    tu_proc p;
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", dir, "-a", "xnumel=1M", "--dry-run"));
    expect_error(&p, "vyre-bench: error: parameter 'in_ptr0' of kernel '" CLONE5
                     "' points to 'i16', which a spec cannot hold\n"
                     "hint: pass --buffer in_ptr0=COUNT:TYPE with a type of the same element "
                     "size (f32, f16, bf16, f64, i8, i32, i64, u8)\n");
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", dir, "-a", "xnumel=1M", "--buffer",
                   "in_ptr0=xnumel:f16", "--dry-run"));
    cr_expect_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(tu_has_line(p.out, "  buffer in_ptr0: f16, xnumel elements (--buffer)"), "%s", p.out);
    tu_proc_free(&p);
    edit(CLONE5_KEY, CLONE5, "ttir", "%xnumel: i32", "%xnumel: i16");
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", dir, "--buffer", "in_ptr0=4:f16", "--buffer",
                   "out_ptr0=4", "--grid", "1", "--dry-run"));
    expect_error(&p, "vyre-bench: error: parameter 'xnumel' of kernel '" CLONE5
                     "' has type 'i16', which a spec cannot pass (i32, i64, f32, f64)\n"
                     "hint: write the spec by hand for this kernel (--spec FILE; examples/bench/ "
                     "has Triton kernels' specs), passing it as an int or float of its size\n");
}

Test(bench_triton, a_grid_that_cannot_be_inferred_asks_for_grid)
{
    const char *dir = copy_group(CLONE5_KEY);
    edit(CLONE5_KEY, CLONE5, "ttir", "xnumel", "count");
    tu_proc p;
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", dir, "-a", "count=1024", "--dry-run"));
    expect_error(&p, "vyre-bench: error: cannot infer the grid of kernel '" CLONE5
                     "': it reads program id x but has no xnumel parameter (not TorchInductor's "
                     "naming)\n"
                     "hint: pass --grid EXPR: the programs to launch, an expression of the axes "
                     "(such as ceil(xnumel/1024)), or three as EXPR,EXPR,EXPR\n");
    /* With no numel parameter the buffers are not sized either. */
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", dir, "-a", "count=1024", "--grid",
                   "ceil(count/512)", "--dry-run"));
    expect_error(&p, "vyre-bench: error: cannot size buffer 'in_ptr0' of kernel '" CLONE5
                     "': it has no numel parameter\n"
                     "hint: pass --buffer PARAM=COUNT for each pointer parameter (COUNT an "
                     "expression of the axes)\n");
    bench(&p, ARGS("run", "--triton", CLONE5, "--dir", dir, "-a", "count=1024", "--grid",
                   "ceil(count/512)", "--buffer", "in_ptr0=count", "--buffer", "out_ptr0=count",
                   "--dry-run"));
    cr_expect_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(tu_has_line(p.out, "  grid: ceil(count/512) programs (--grid)"), "%s", p.out);
    cr_expect(strstr(p.out, "| 1 | count=1024 | 2 | 256 | - | 8.0 KiB |"), "%s", p.out);
    tu_proc_free(&p);
}

/* A run (not dry) on the fake driver with compute capability cc: the
 * inference is printed on stderr before anything is loaded (the fake
 * cannot load a real cubin: the run fails after it, which is not what is
 * tested here). */
static void bench_on_gpu(tu_proc *p, const char *cc, const char *const *args)
{
    char fake_cc[64];
    snprintf(fake_cc, sizeof fake_cc, "FAKECUDA_CC=%s", cc);
    const char *const env[] = {g_env_home,
                               g_env_xdg,
                               g_env_data,
                               g_env_inductor,
                               "VYRE_CUDA_LIBRARY=" FAKECUDA_LIB,
                               fake_cc,
                               "VYRE_NVML_LIBRARY=/nonexistent",
                               NULL};
    tu_run_bin(p, VYRE_BENCH_BIN, args, env, NULL);
}

Test(bench_triton, a_gpu_gets_the_cubin_built_for_it_else_the_ptx)
{
    tu_proc p;
    bench_on_gpu(&p, "9.0",
                 ARGS("run", "--triton", SOFTMAX, "--dir", TRITON, "--inductor-dir", INDUCTOR,
                      "--quick", "-q", "--no-kernels"));
    cr_expect(tu_has_line(p.err, "vyre-bench: note: kernel: " SOFTMAX ".cubin (Triton's own "
                                 "cubin, built for this GPU)"),
              "%s", p.err);
    tu_proc_free(&p);
    bench_on_gpu(&p, "10.0",
                 ARGS("run", "--triton", SOFTMAX, "--dir", TRITON, "--inductor-dir", INDUCTOR,
                      "--quick", "-q", "--no-kernels"));
    cr_expect(tu_has_line(p.err, "vyre-bench: note: kernel: " SOFTMAX ".ptx (the cubin is "
                                 "another GPU's: the PTX, compiled for this one)"),
              "%s", p.err);
    tu_proc_free(&p);
}

Test(bench_triton, of_several_groups_the_one_built_for_the_gpu_is_picked)
{
    const char *dir = copy_group("C3FHEVR3F2S5CA43DLHE4GY7N5ZWG4Q3DSR3NIARSG2MXV67RAJQ");
    copy_group("R3XIW7Z637BFQMFEEJ5FDZY5NACWNTUKGRRZVIRD53RP3KKPT7XQ");
    edit("C3FHEVR3F2S5CA43DLHE4GY7N5ZWG4Q3DSR3NIARSG2MXV67RAJQ", VIEW2, "json", "\"arch\": 90,",
         "\"arch\": 80,");
    tu_proc p;
    bench_on_gpu(&p, "9.0",
                 ARGS("run", "--triton", VIEW2, "--dir", dir, "-a", "xnumel=128", "-a",
                      "ynumel=2048", "--quick", "-q", "--no-kernels"));
    cr_expect(tu_has_line(p.err,
                          "vyre-bench: note: group: "
                          "R3XIW7Z637BFQMFEEJ5FDZY5NACWNTUKGRRZVIRD53RP3KKPT7XQ of kernel " VIEW2
                          " (Triton 3.6.0, sm_90): the only one built for this GPU, of 2 "
                          "groups"),
              "%s", p.err);
    tu_proc_free(&p);
}

Test(bench_triton, without_the_output_code_the_size_hints_are_the_sizes)
{
    char dir[700], code[900];
    snprintf(dir, sizeof dir, "%s/inductor", g_tmp);
    tu_copy_tree(INDUCTOR, dir);
    snprintf(code, sizeof code, "%s/n4/cn4py7w7agtvjrfl5zbpmyugcqgrj7s2s7g55c52wblcmg6xgnfk.py",
             dir);
    cr_assert_eq(unlink(code), 0);
    tu_proc p;
    bench(&p,
          ARGS("run", "--triton", SOFTMAX, "--dir", TRITON, "--inductor-dir", dir, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(tu_has_line(p.out, "  sizes: xnumel=4096 r0_numel=128; TorchInductor's size hints "
                                 "in ya/cya53zwsj7agx7uinc7ii62tiuxcgy3ncdydluxl2d3a5crqzqdo.py "
                                 "(powers of two at least the model's sizes)"),
              "%s", p.out);
    cr_expect(tu_has_line(p.out, "  buffer in_out_ptr0: f32, xnumel*r0_numel elements (the "
                                 "iteration space; a kernel that reads a wider tensor needs "
                                 "--buffer in_out_ptr0=COUNT)"),
              "%s", p.out);
    cr_expect(strstr(p.out, "| 1 | xnumel=4096 r0_numel=128 | 128 | 64 | - | 2.0 MiB |"), "%s",
              p.out);
    tu_proc_free(&p);
}

Test(bench_triton, torch_compiles_default_layout_is_found_without_dir)
{
    /* TRITON_CACHE_DIR unset: torch.compile puts Triton's cache in
     * TorchInductor's, <inductor>/triton/<device>/; HOME has none. */
    char ind[700], dev[800];
    snprintf(ind, sizeof ind, "%s/inductor", g_tmp);
    tu_copy_tree(INDUCTOR, ind);
    snprintf(dev, sizeof dev, "%s/triton", ind);
    cr_assert_eq(mkdir(dev, 0700), 0);
    snprintf(dev, sizeof dev, "%s/triton/0", ind);
    tu_copy_tree(TRITON, dev);
    snprintf(g_env_inductor, sizeof g_env_inductor, "TORCHINDUCTOR_CACHE_DIR=%s", ind);
    tu_proc p;
    bench(&p, ARGS("run", "--triton", SOFTMAX, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(strstr(p.out, tu_text("kernel %s/%s/%s.ptx (ptx)", dev, SOFTMAX_KEY, SOFTMAX)), "%s",
              p.out);
    cr_expect(tu_has_line(p.out, "  sizes: xnumel=4096 r0_numel=128; the model's launch at "
                                 "n4/cn4py7w7agtvjrfl5zbpmyugcqgrj7s2s7g55c52wblcmg6xgnfk.py:648"),
              "%s", p.out);
    tu_proc_free(&p);
    /* Not there either: the home default's error. */
    bench(&p, ARGS("run", "--triton", "nope_kernel", "--dry-run"));
    cr_expect_eq(p.exit_code, 2);
    cr_expect_str_eq(p.err, tu_text("vyre-bench: error: Triton cache '%s/.triton/cache' does not "
                                    "exist\n"
                                    "hint: pass --dir DIR: the TRITON_CACHE_DIR the model ran "
                                    "with, or TorchInductor's triton/DEVICE folder (none of those "
                                    "under TORCHINDUCTOR_CACHE_DIR has it either)\n",
                                    g_tmp));
    tu_proc_free(&p);
}

/* A group whose metadata says Triton launches it as a cooperative grid
 * and with programmatic dependent launch (issue 38 point 1): the spec
 * says so ("cooperative", "pdl"), the inference notes it, --dry-run shows
 * the launch, and --emit-spec keeps it through run --spec --dry-run. */
Test(bench_triton, cooperative_and_pdl_groups_launch_as_triton_does)
{
    static const char key[] = "6K5JAYXEFU2OZXGO2XPHFA7EI56XJBMCNCTNQ2TE4VZF7DJMFJEQ";
    char dir[700], meta[1200];
    snprintf(dir, sizeof dir, "%s/triton", g_tmp);
    tu_copy_tree(TRITON, dir);
    snprintf(meta, sizeof meta, "%s/%s/triton_per_fused_native_layer_norm_0.json", dir, key);
    size_t len = 0;
    char *text = tu_read_file(meta, &len);
    cr_assert(text);
    char *c = strstr(text, "\"launch_cooperative_grid\": false");
    char *d = strstr(text, "\"launch_pdl\": false");
    cr_assert(c && d, "%s", text);
    /* Same length: "true " for "false". */
    memcpy(c + strlen("\"launch_cooperative_grid\": "), "true ", 5);
    memcpy(d + strlen("\"launch_pdl\": "), "true ", 5);
    tu_write_file(meta, text, len);
    free(text);

    tu_proc p;
    bench(&p, ARGS("run", "--triton", key, "--dir", dir, "--inductor-dir", INDUCTOR, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "  launch: a cooperative grid (launch_cooperative_grid) and programmatic "
                          "dependent launch (launch_pdl), as Triton launches it "
                          "(cuLaunchKernelEx)");
    tu_assert_line(p.out, "  \"cooperative\": true,");
    tu_assert_line(p.out, "  \"pdl\": true");
    tu_assert_line(p.out, "launch: cooperative, pdl (cuLaunchKernelEx)");
    tu_assert_line(p.out, "dry run: 1 point would run; nothing was launched");
    tu_proc_free(&p);

    char spec[700];
    snprintf(spec, sizeof spec, "%s/ln.json", g_tmp);
    bench(&p, ARGS("run", "--triton", key, "--dir", dir, "--inductor-dir", INDUCTOR, "--emit-spec",
                   spec));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_proc_free(&p);
    bench(&p, ARGS("run", "--spec", spec, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "launch: cooperative, pdl (cuLaunchKernelEx)");
    tu_proc_free(&p);

    /* Only PDL. */
    text = tu_read_file(meta, &len);
    c = strstr(text, "\"launch_cooperative_grid\": true ");
    cr_assert(c);
    memcpy(c + strlen("\"launch_cooperative_grid\": "), "false", 5);
    tu_write_file(meta, text, len);
    free(text);
    bench(&p, ARGS("run", "--triton", key, "--dir", dir, "--inductor-dir", INDUCTOR, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    tu_assert_line(p.out, "  launch: programmatic dependent launch (launch_pdl), as Triton "
                          "launches it (cuLaunchKernelEx)");
    cr_assert_null(strstr(p.out, "\"cooperative\""), "%s", p.out);
    tu_assert_line(p.out, "launch: pdl (cuLaunchKernelEx)");
    tu_proc_free(&p);
}

/* A kernel recompiled 70 times (torch.compile caches with 201 groups of
 * one kernel have been seen): every group is weighed, the autotuning's
 * choice found though it sorts last (it was not among the first 64 looked
 * at, and the refusal said "has 64 groups"), and a refusal describes the
 * first three and counts the rest, whole (a longer one was cut at the
 * message's 768 characters, before how the groups differ). */
Test(bench_triton, many_groups_of_one_kernel)
{
    static const char c3fh[] = "C3FHEVR3F2S5CA43DLHE4GY7N5ZWG4Q3DSR3NIARSG2MXV67RAJQ";
    char dir[700], src[1200];
    snprintf(dir, sizeof dir, "%s/triton", g_tmp);
    tu_copy_tree(TRITON, dir);
    snprintf(src, sizeof src, "%s/%s", dir, c3fh);
    for (int i = 0; i < 68; i++) {
        char dst[1300];
        snprintf(dst, sizeof dst, "%s/AA%03d%s", dir, i, c3fh + 5);
        tu_copy_tree(src, dst);
    }
    tu_proc p;
    bench(&p, ARGS("run", "--triton", VIEW2, "--dir", dir, "--dry-run"));
    const char *each = " (sm_90, num_warps 8, shared 16384, XBLOCK 16, YBLOCK 256)";
    char want[2048];
    snprintf(want, sizeof want,
             "vyre-bench: error: kernel '" VIEW2 "' has 70 groups in '%s': the first "
             "AA000%s%s, AA001%s%s, AA002%s%s, and 67 more; they differ in hash\n"
             "hint: name one by its key (--triton KEY), or give TorchInductor's cache "
             "(--inductor-dir DIR) to take its autotuning's choice\n",
             dir, c3fh + 5, each, c3fh + 5, each, c3fh + 5, each);
    expect_error(&p, want);
    bench(&p,
          ARGS("run", "--triton", VIEW2, "--dir", dir, "--inductor-dir", INDUCTOR, "--dry-run"));
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect(tu_has_line(p.out, "  group: R3XIW7Z637BFQMFEEJ5FDZY5NACWNTUKGRRZVIRD53RP3KKPT7XQ of "
                                 "kernel " VIEW2 " (Triton 3.6.0, sm_90): TorchInductor's "
                                 "autotuning picked it, of 70 groups "
                                 "(sy/0bc72a6ac6b913915d180603094e3a4fb9f05580dfe1c04d6f72e5c8e335"
                                 "a882.best_config)"),
              "%s", p.out);
    tu_proc_free(&p);
}
