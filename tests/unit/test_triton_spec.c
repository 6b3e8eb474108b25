/*
 * test_triton_spec.c - the inference of a Triton kernel's spec
 * (vyre/triton_spec.h) and its readers: the TTIR's parameters and folded
 * blocks, the metadata's launch fields, TorchInductor's .best_config,
 * module and output code (on the torch.compile fixture), a tensor's
 * storage, and the spec made through the public call.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/foreign/inductor_launch.h"
#include "testutil.h"
#include "cache/foreign/triton_ttir.h"
#include "vyre/triton_spec.h"

#define FIXTURE  VYRE_TEST_SOURCE_DIR "/fixtures/torch_block/cache"
#define SOFTMAX  "triton_per_fused__softmax_amax_mul_sub_view_3"
#define SOFT_KEY "7DQT7L24OCZYNVTKEMFNAWW5YR6ZOTJR2IC446YUUQDBWOZTXN7Q"

/* A TTIR as Triton 3.6 writes one, cut to what is read. */
static const char k_ttir[] =
    "#loc = loc(\"k.py\":18:0)\n"
    "module {\n"
    "  tt.func public @kern(%in_ptr0: !tt.ptr<bf16> {tt.divisibility = 16 : i32} "
    "loc(\"in_ptr0\"(#loc)), %out_ptr0: !tt.ptr<f32> loc(\"out_ptr0\"(#loc)), %ynumel: i32 "
    "{tt.divisibility = 16 : i32} loc(\"ynumel\"(#loc)), %xnumel: i64 loc(\"xnumel\"(#loc)), "
    "%eps: f32 loc(\"eps\"(#loc))) attributes {noinline = false} {\n"
    "    %c16_i32 = arith.constant 16 : i32 loc(#loc2)\n"
    "    %c256_i32 = arith.constant 256 : i32 loc(#loc2)\n"
    "    %yoffset = tt.get_program_id y : i32 loc(#loc3)\n"
    "    %yoffset_0 = arith.muli %yoffset, %c256_i32 : i32 loc(#loc4)\n"
    "    %xoffset = tt.get_program_id x : i32 loc(#loc5)\n"
    "    %xoffset_1 = arith.muli %c16_i32, %xoffset : i32 loc(#loc6)\n"
    "    tt.return loc(#loc7)\n"
    "  } loc(#loc)\n"
    "} loc(#loc)\n";

Test(triton_spec, ttir_parameters_and_blocks)
{
    vyre__ttir t;
    vyre_error err;
    cr_assert_eq(vyre__ttir_parse(k_ttir, "kern", "k.ttir", &t, &err), 0, "%s", err.message);
    cr_assert_eq(t.nparams, 5);
    static const struct {
        const char *name, *type;
        int ptr;
    } want[] = {{"in_ptr0", "bf16", 1},
                {"out_ptr0", "f32", 1},
                {"ynumel", "i32", 0},
                {"xnumel", "i64", 0},
                {"eps", "f32", 0}};
    for (size_t i = 0; i < 5; i++) {
        cr_expect_str_eq(t.params[i].name, want[i].name);
        cr_expect_str_eq(t.params[i].type, want[i].type);
        cr_expect_eq(t.params[i].is_ptr, want[i].ptr, "%s", want[i].name);
    }
    /* The constant on either side of the multiply; z never read. */
    cr_expect_eq(t.block[0], 16);
    cr_expect_eq(t.block[1], 256);
    cr_expect_eq(t.block[2], 0);
}

Test(triton_spec, ttir_block_of_one_is_an_unmultiplied_program_id)
{
    static const char text[] = "tt.func public @k(%xnumel: i32) {\n"
                               "    %xoffset = tt.get_program_id x : i32\n"
                               "    %xoffset_0 = arith.muli %xoffset_9, %c4_i32 : i32\n"
                               "    %c4_i32 = arith.constant 4 : i32\n";
    vyre__ttir t;
    cr_assert_eq(vyre__ttir_parse(text, "k", "k.ttir", &t, NULL), 0);
    /* %xoffset_9 is another value: not %xoffset multiplied. */
    cr_expect_eq(t.block[0], 1);
}

/* A looped reduction (triton_red_fused_mul_sum_0 as Triton 3.6 wrote it,
 * cut): XBLOCK 1 is folded away, and %xoffset times 8192 is the row's
 * offset (`8192*x0`), not a block of 8192 rows a program. */
Test(triton_spec, ttir_index_multiply_of_the_program_id_is_no_block)
{
    static const char text[] =
        "tt.func public @k(%in_ptr0: !tt.ptr<f32>, %xnumel: i32, %r0_numel: i32) {\n"
        "    %c8192_i32 = arith.constant 8192 : i32 loc(#loc3)\n"
        "    %xoffset = tt.get_program_id x : i32 loc(#loc30)\n"
        "    %xmask_1 = arith.cmpi slt, %xoffset, %xmask : i32 loc(#loc29)\n"
        "    %_tmp3 = scf.for %r0_offset = %c0_i32 to %c8192_i32 step %c2048_i32 {\n"
        "      %tmp0 = arith.muli %xoffset, %c8192_i32 : i32 loc(#loc36)\n";
    vyre__ttir t;
    cr_assert_eq(vyre__ttir_parse(text, "k", "k.ttir", &t, NULL), 0);
    cr_expect_eq(t.block[0], 1);
    /* Other naming: the first constant multiply of the program id. */
    static const char plain[] = "tt.func public @k(%n: i32) {\n"
                                "    %c1024_i32 = arith.constant 1024 : i32\n"
                                "    %pid = tt.get_program_id x : i32\n"
                                "    %block_start = arith.muli %pid, %c1024_i32 : i32\n";
    cr_assert_eq(vyre__ttir_parse(plain, "k", "k.ttir", &t, NULL), 0);
    cr_expect_eq(t.block[0], 1024);
}

Test(triton_spec, ttir_errors_name_the_file_and_function)
{
    vyre__ttir t;
    vyre_error err;
    cr_expect_eq(vyre__ttir_parse(k_ttir, "other", "k.ttir", &t, &err), VYRE_EINVAL);
    cr_expect_str_eq(err.message, "'k.ttir' has no function '@other'");
    cr_expect_eq(vyre__ttir_parse("tt.func public @k(%a: i32, b: i32) {", "k", "k.ttir", &t, &err),
                 VYRE_EINVAL);
    cr_expect_str_eq(err.message, "'k.ttir': parameter 2 of '@k' does not read as '%name: type'");
    cr_expect_eq(vyre__ttir_parse("tt.func public @k(%a: i32", "k", "k.ttir", &t, &err),
                 VYRE_EINVAL);
    cr_expect_str_eq(err.message, "'k.ttir': the parameter list of '@k' does not close");
}

Test(triton_spec, launch_meta_reads_the_fields_triton_launches_with)
{
    vyre__triton_launch_meta m;
    vyre_error err;
    const char *text = "{\"target\": {\"backend\": \"cuda\", \"arch\": 90, \"warp_size\": 32}, "
                       "\"num_warps\": 8, \"num_ctas\": 1, \"shared\": 16384, "
                       "\"launch_cooperative_grid\": false, \"launch_pdl\": true, "
                       "\"global_scratch_size\": 64, \"profile_scratch_size\": 0}";
    cr_assert_eq(vyre__triton_launch_meta_parse(text, "m.json", &m, &err), 0, "%s", err.message);
    cr_expect_eq(m.num_warps, 8);
    cr_expect_eq(m.warp_size, 32);
    cr_expect_eq(m.shared, 16384);
    cr_expect_eq(m.global_scratch_size, 64);
    cr_expect_eq(m.scratch_ptrs, 2);
    cr_expect_eq(m.cooperative, 0);
    cr_expect_eq(m.pdl, 1);
    cr_expect_str_eq(m.arch, "90");
    /* Before Triton added scratch pointers, none; no num_warps is refused. */
    cr_assert_eq(vyre__triton_launch_meta_parse(
                     "{\"target\": {\"arch\": 80, \"warp_size\": 32}, \"num_warps\": 4}", "m.json",
                     &m, NULL),
                 0);
    cr_expect_eq(m.scratch_ptrs, 0);
    cr_expect_eq(vyre__triton_launch_meta_parse("{\"target\": {}}", "m.json", &m, &err),
                 VYRE_EINVAL);
    cr_expect_str_eq(err.message, "'m.json' has no usable num_warps, warp_size or shared");
}

Test(triton_spec, storage_of_a_strided_tensor)
{
    const int64_t shape[] = {8, 4, 128, 64}, stride[] = {32768, 8192, 64, 1};
    cr_expect_eq(vyre__inductor_storage_elems(shape, stride, 4), 262144);
    const int64_t tshape[] = {256, 768}, tstride[] = {1, 256}; /* a transposed view */
    cr_expect_eq(vyre__inductor_storage_elems(tshape, tstride, 2), 196608);
    const int64_t empty[] = {0, 5}, s2[] = {5, 1};
    cr_expect_eq(vyre__inductor_storage_elems(empty, s2, 2), 0);
    const int64_t huge[] = {INT64_MAX, 2}, s3[] = {2, 1};
    cr_expect_eq(vyre__inductor_storage_elems(huge, s3, 2), -1);
}

Test(triton_spec, inductor_facts_of_the_softmax_kernel)
{
    vyre__inductor_kernel *k = malloc(sizeof *k);
    const char *keys[] = {"NOTAKEY", SOFT_KEY};
    cr_assert_eq(vyre__inductor_kernel_read(FIXTURE "/inductor", SOFTMAX, keys, 2, k, NULL), 0);
    cr_expect_eq(k->best_key, 1);
    cr_expect_str_eq(
        k->best_file,
        "ya/bfd311bf258ac22af81b8e64ef3da6f920f73bddff66996e5b6de4a2f848efb1.best_config");
    cr_expect_eq(k->xblock, 32);
    cr_expect_eq(k->r0block, 0);
    cr_expect(k->have_module);
    cr_expect_str_eq(k->grid_type, "Grid1D");
    cr_assert_eq(k->nhints, 2);
    cr_expect_str_eq(k->hint_axis[0], "x");
    cr_expect_eq(k->hint[0], 4096);
    cr_expect_str_eq(k->hint_axis[1], "r0_");
    cr_expect_eq(k->hint[1], 128);
    cr_assert_eq(k->nsig, 3);
    cr_expect_str_eq(k->sig[2], "r0_numel");
    cr_assert(k->have_launch);
    cr_expect_eq(k->nlaunches, 1);
    cr_expect_eq(k->launch_line, 648);
    cr_assert_eq(k->nargs, 3);
    cr_expect_str_eq(k->arg[0], "buf10");
    cr_expect_not(k->is_int[0]);
    cr_expect_eq(k->elems[0], 524288); /* buf10 reinterprets buf7: (32, 128, 128) */
    cr_expect_str_eq(k->base[0], "buf7");
    cr_expect(k->is_int[1] && k->value[1] == 4096);
    cr_expect(k->is_int[2] && k->value[2] == 128);
    free(k);
}

Test(triton_spec, spec_of_a_kernel_through_the_public_call)
{
    vyre_triton_spec_opts o = {
        .what = SOFTMAX, .triton_dir = FIXTURE "/triton", .inductor_dir = FIXTURE "/inductor"};
    vyre_triton_spec s;
    vyre_error err;
    cr_assert_eq(vyre_triton_spec_make(&o, &s, &err), 0, "%s", err.message);
    cr_expect_str_eq(s.key, SOFT_KEY);
    cr_expect_str_eq(s.name, SOFTMAX);
    cr_expect(s.model_sizes);
    cr_expect(strstr(s.json, "\"grid\": \"ceil(xnumel/32)\",\n  \"block\": 64,\n"), "%s", s.json);
    cr_expect_str_eq(s.sweep.entry, SOFTMAX);
    cr_expect_str_eq(s.sweep.kernel_path, s.kernel_path);
    cr_expect_eq(s.sweep.axes.n, 2); /* xnumel and r0_numel */
    vyre_triton_spec_release(&s);
    vyre_triton_spec_release(&s); /* twice is fine */
    vyre_triton_spec_release(NULL);

    o.what = "no_such_kernel";
    cr_expect_eq(vyre_triton_spec_make(&o, &s, &err), VYRE_ENOENT);
    cr_expect(s.json == NULL);
    o.what = SOFTMAX;
    o.triton_dir = FIXTURE "/no-such-dir";
    cr_expect_eq(vyre_triton_spec_make(&o, &s, &err), VYRE_ENOENT);
}

Test(triton_spec, launch_arguments_of_an_older_inductor_keep_their_brackets)
{
    char dir[512];
    tu_mkdtemp(dir, sizeof dir);
    char sub[600], path[700];
    snprintf(sub, sizeof sub, "%s/ab", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    snprintf(path, sizeof path, "%s/cab.py", sub);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("def call(args):\n"
          "    buf0 = empty_strided_cuda((64, 32), (32, 1), torch.float32)\n"
          "    k_0.run(buf0, 2048, 32, grid=grid(2048, 32), stream=stream0)\n",
          f);
    fclose(f);
    vyre__inductor_kernel *k = malloc(sizeof *k);
    cr_assert_eq(vyre__inductor_kernel_read(dir, "k_0", NULL, 0, k, NULL), 0);
    cr_expect(k->have_launch);
    cr_expect_eq(k->nargs, 3);
    cr_expect_eq(k->elems[0], 2048);
    cr_expect_eq(k->value[2], 32);
    free(k);
    tu_rm_rf(dir);
}
