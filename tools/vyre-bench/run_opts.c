/*
 * run_opts.c - vyre-bench run's option table (tools/common/tool_opt.h):
 * --help's OPTIONS, getopt's arrays and the completion come from it. The
 * parsing is cmd_run.c's (plan_option, measure_option) and run_triton.c's.
 */
#include "cmds.h"
#include "run_triton.h"
#include "tool_dispatch.h"
#include "tool_opt.h"

const tool_opt bench_run_opts[] = {
    {'a', 'a', "axis", "NAME=VALUES",
     "1024:64M:x4 (geometric), 0:100:+25, 128,256 (list);\n"
     "with --spec, replaces the spec's axis NAME",
     NULL},
    {'s', 's', "suite", "NAME", "a built-in suite (repeatable; default: all)",
     ",launch memcpy bandwidth compile cache"},
    {'e', 0, "entry", "NAME", "kernel entry point", NULL},
    {'S', 0, "spec", "FILE", "JSON sweep spec (kernel, entry, axes, args)", TOOL_OPT_FILE},
    {'m', 0, "mode", "hot|cold|both", "L2 warm, or flushed before each sample (default hot)",
     "hot cold both"},
    {'A', 0, "arch", "sm_XY[a|f]",
     "compile for this architecture (default: the PTX's\n"
     ".target when the GPU runs it, else the GPU's)",
     NULL},
    {'R', 0, "dry-run", NULL,
     "check the spec, compile for --arch (else the PTX's\n"
     ".target, else sm_90; no GPU needed) and list the\n"
     "points with their launches; runs nothing",
     NULL},
    {'V', 0, "vs", "FILE",
     "A/B: measure FILE's kernel of the same entry at the\n"
     "same points and arguments too, samples alternating\n"
     "A, B, A, B; print B/A per point with its interval\n"
     "and a verdict (exit 1 when any is SLOWER)",
     TOOL_OPT_FILE},
    BENCH_TRITON_OPTIONS,
    {TOOL_OPT_SECTION, 0, "", NULL,
     "measurement (nvbench's stopping rule; noise is the robust relative spread\n"
     "1.4826 * MAD / median in every table, history, CSV and JSON, stddev / mean\n"
     "is rel_stddev there):",
     NULL},
    {'n', 0, "min-samples", "N", "at least N samples a point (default 10)", NULL},
    {'t', 0, "min-time", "S", "at least S seconds a point (default 0.5)", NULL},
    {'N', 0, "max-noise", "PCT",
     "stop once the noise is below PCT (default 0.5)\n"
     "(a bare number is a percent, as nvbench's and in\n"
     "compare: 0.5 and 0.5% are both 0.5%)",
     NULL},
    {'T', 0, "timeout", "S", "at most S seconds a point (default 15)", NULL},
    {'Q', 0, "quick", NULL, "0.05 s, 2%, 3 s (--min-samples still holds); fewer sizes", NULL},
    {'r', 0, "rounds", "N",
     "measure the whole run N times in turn (default 5), each\n"
     "point with 1/N of the rule each time; a point's samples\n"
     "keep their round, so drift during the run is seen\n"
     "between rounds",
     NULL},
    {'K', 0, "no-kernels", NULL, "skip the CUPTI pass that records kernels per point", NULL},
    {'B', 0, "disable-blocking-kernel", NULL,
     "time GPU samples without first holding the stream\n"
     "(each start event is then stamped before its launch\n"
     "arrives: short kernels read long by the launch gap)",
     NULL},
    {'d', 0, "devices", "LIST|all", "CUDA ordinals, e.g. 0,1 (default 0)", "all 0 1 2 3"},
    {TOOL_OPT_SECTION, 0, "", NULL, "output:", NULL},
    {'c', 0, "csv", NULL, "CSV rows instead of the table", NULL},
    {TOOL_OPT_JSON, 0, "json", NULL,
     "one JSON document (schema_version " TOOL_STR(BENCH_JSON_SCHEMA_VERSION) ") at the end", NULL},
    {'W', 0, "wide", NULL,
     "on a terminal, every column and the full stop text (the\n"
     "table is fitted to the terminal, one table per suite;\n"
     "piped, markdown)",
     NULL},
    {'w', 'w', "width", "N", "fit the table to N columns, terminal or not", "80 120 160 200"},
    {'q', 'q', "quiet", NULL, "no progress line", NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};
