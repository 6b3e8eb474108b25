/*
 * cmds.h - vyre-bench subcommands, one file each (git's builtin/ layout),
 * and what they share: opening the results database (db.c) and printing
 * points (output.c).
 */
#ifndef VYRE_BENCH_CMDS_H
#define VYRE_BENCH_CMDS_H

#include <jansson.h>
#include <stdio.h>

#include "vyre/bench.h"
#include "tool_opt.h"
#include "tool_rows.h"

int cmd_devices(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_rm(int argc, char **argv);

/* The commands' option tables (tools/common/tool_opt.h), for the
 * completion helper. */
extern const tool_opt bench_run_opts[], bench_devices_opts[], bench_runs_opts[], bench_show_opts[],
    bench_compare_opts[], bench_export_opts[], bench_plot_opts[], bench_rm_opts[],
    bench_history_opts[], bench_push_opts[], bench_pull_opts[];

/* schema_version of the `vyre-bench run/show/export --json` document
 * (docs/JSON.md, docs/schema/). Version 2: one JSON convention (_unix_ns,
 * _hz, axes as objects). Version 3: each point's three views, gpu_ns,
 * batch_ns and kernel_ns, and block_timeouts. Version 4: rounds, references and --vs variants.
 * Version 5: noise_ratio is the one noise figure the tables show (robust), rel_stddev_ratio is
 * stddev / mean (robust_noise_ratio is gone; issue 25). */
#define BENCH_JSON_SCHEMA_VERSION 5

/* tool_open_db for a command that only reads (or removes from) the
 * database: a database that does not exist is an error naming it (with a
 * hint), not a new empty file. Returns an exit code. */
int bench_open_db_existing(vyre_results **db);

/* For a command that reads one run: argv[first] must be the only operand,
 * RUN (an id, 'last' or 'last-N'). Opens the database (tool_open_db: --db PATH)
 * and loads the run into *run and its points into *pts, *n (free them with
 * vyre_free; close *db). Reports any error and returns
 * its exit code, leaving nothing open. */
int bench_open_run(const char *sub, int argc, char **argv, int first, vyre_results **db,
                   vyre_bench_run *run, vyre_bench_point **pts, size_t *n);

/* Versions of the --json documents other than the run document's
 * (BENCH_JSON_SCHEMA_VERSION); each is bumped when its shape changes. */
#define BENCH_RUNS_JSON_SCHEMA_VERSION    1
#define BENCH_COMPARE_JSON_SCHEMA_VERSION 4
#define BENCH_DEVICES_JSON_SCHEMA_VERSION 1
#define BENCH_RM_JSON_SCHEMA_VERSION      1
#define BENCH_HISTORY_JSON_SCHEMA_VERSION 1

/* Output formats of points. */
typedef enum bench_format { BENCH_TABLE = 0, BENCH_CSV = 1, BENCH_JSON = 2 } bench_format;

/* "4.12 us" for a time in ns. */
void bench_format_ns(double ns, char *buf, size_t size);

/* "host" or the device ordinal. */
void bench_format_device(const vyre_bench_point *p, char *buf, size_t size);

/* The console table (markdown): header, one row per point. */
void bench_table_header(FILE *out);
void bench_table_row(FILE *out, const vyre_bench_point *p);

/* The table for a terminal (term_table.c): the columns that fit `width`
 * by priority, one time unit per column, stop reasons as short codes with
 * a legend; width <= 0: every column, full stop text (--wide). */
void bench_term_table(FILE *out, const vyre_bench_point *pts, size_t n, int width);

/* The points (term_table.c's model: every field of export's CSV, the
 * table's columns by priority) in fmt: TOOL_FMT_TABLE or TOOL_FMT_MD fitted
 * to width (<= 0: every column, the full stop text; else stop codes and
 * their legend), TOOL_FMT_CSV every field. Not JSON: the points go into
 * the run document (bench_json_run). */
void bench_points_print(FILE *out, const vyre_bench_point *pts, size_t n, tool_rows_fmt fmt,
                        int width);

/* Which table stdout gets: 0 the markdown table (not a terminal), else the
 * width to fit (forced_width > 0: that one, as --width N; else the
 * terminal's), or -1 for --wide. */
int bench_table_width(int wide, int forced_width);

/* Parses --width N (20..10000) for run, show, compare and runs; returns an
 * exit code. */
int bench_parse_width(const char *sub, const char *s, int *out);

/* Prose lines (text may hold newlines) broken at blanks to fit width
 * (<= 0: as they are); the tables fit through tools/common/tool_table. */
void bench_print_wrapped(FILE *out, const char *text, int width);
/* run's CSV, a point at a time (the fields of bench_points_print's CSV). */
void bench_csv_header(FILE *out);
void bench_csv_row(FILE *out, const vyre_bench_point *p);

/* JSON (docs/JSON.md, docs/schema/vyre-bench-*.schema.json): the whole run
 * with its points (and their samples when with_samples):
 * {"schema_version": BENCH_JSON_SCHEMA_VERSION, "run": {...},
 * "points": [...]} on out. Reads the samples from db. Returns an exit code. */
int bench_json_run(FILE *out, vyre_results *db, const vyre_bench_run *run,
                   const vyre_bench_point *pts, size_t n, int with_samples);
/* The same with "ab" (consumed; NULL: none), an A/B run's B/A per point,
 * and "store" (consumed; NULL: none), what writing the run cost the store. */
int bench_json_run_ab(FILE *out, vyre_results *db, const vyre_bench_run *run,
                      const vyre_bench_point *pts, size_t n, int with_samples, json_t *ab,
                      json_t *store);

/* A point's benchmark as the tables show it, "sweep.k [B]" for a variant
 * of an A/B run (cleaned for a terminal); returns buf. */
const char *bench_label(const vyre_bench_point *p, char *buf, size_t size);

/* ---- run --vs (ab.c) ---- */

/* The usage error for --vs (vs, may be NULL) without a kernel or with
 * --dry-run; TOOL_EXIT_OK when it may go on. */
int bench_ab_usage(const char *vs, const char *kernel, int dry_run);

/* Compares the A and B points of A/B run run_id (vyre_bench_compare_runs
 * of the run with itself); BENCH_TABLE: prints the B/A table and a tally
 * on out; *json (may be NULL) receives the pairs as an array (the
 * caller's). Returns TOOL_EXIT_PROBLEMS when a point is SLOWER,
 * TOOL_EXIT_ERROR when the comparison failed (reported), else OK. */
int bench_ab_report(FILE *out, vyre_results *db, int64_t run_id, bench_format fmt, json_t **json);

/* The pieces, for the other documents: a run's facts, a point, and a
 * point's axes label ("N=1024 BLOCK=128") as {"N": 1024, "BLOCK": 128}.
 * New references (the caller's). */
json_t *bench_json_run_info(const vyre_bench_run *r);
json_t *bench_json_point(const vyre_bench_point *p);
json_t *bench_json_axes(const char *axes);

/* The usage error for --csv given with --json (exit 2). */
int bench_csv_json_conflict(const char *sub);

/* One line about a run: "run 12 done, 14 points, 2025-...". */
void bench_run_summary(FILE *out, const vyre_bench_run *r);

#endif /* VYRE_BENCH_CMDS_H */
