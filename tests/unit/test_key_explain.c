/*
 * test_key_explain.c - "why did this miss?" in libcore: a key's inputs
 * (vyre__key_inputs_from, vyre__key_inputs_diff), their record in the index
 * (schema 4, vyre__cache_note_inputs) and vyre_key_explain over a real
 * cache: entries of the same source name, bytes or kernel, with exactly
 * the inputs that differ; entries stored before inputs were recorded.
 */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/key_internal.h"
#include "testutil.h"
#include "vyre/blob.h"
#include "vyre/cache.h"
#include "vyre/key.h"

static char g_dir[1024];
static char g_root[1100];

static void setup(void)
{
    tu_mkdtemp(g_dir, sizeof g_dir);
    snprintf(g_root, sizeof g_root, "%s/cache", g_dir);
    char conf[1100];
    snprintf(conf, sizeof conf, "%s/config", g_dir);
    setenv("XDG_CONFIG_HOME", conf, 1);
}

static void teardown(void)
{
    tu_rm_rf(g_dir);
}

TestSuite(key_explain, .init = setup, .fini = teardown, .timeout = 60);

static const char k_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                            ".visible .entry scale(.param .u64 p)\n{\n ret;\n}\n";

/* The inputs the compile path hashes for k_ptx on arch with opts. */
static vyre_key_input ptx_input(const char *arch, const char *const *opts, size_t nopts)
{
    return (vyre_key_input){.backend = "cuda",
                            .toolchain = "nvjitlink-13.0",
                            .arch = arch,
                            .options = opts,
                            .n_options = nopts,
                            .source_kind = VYRE_SOURCE_PTX,
                            .source = k_ptx,
                            .source_len = strlen(k_ptx)};
}

static vyre_cache *open_ok(unsigned flags)
{
    vyre_cache *c = NULL;
    vyre_error e;
    vyre_error_clear(&e);
    int rc = vyre_cache_open(g_root, TU_OPEN_FLAGS(flags), &c, &e);
    cr_assert_eq(rc, 0, "open: %s: %s", vyre_err_name(rc), e.message);
    return c;
}

/* Stores a blob under the key of in, named source, with kernels (one
 * name), and records its inputs when note is set. Returns the key. */
static vyre_key put(vyre_cache *c, const vyre_key_input *in, const char *source, const char *kernel,
                    int note)
{
    vyre_key k;
    vyre_error e;
    cr_assert_eq(vyre__key_compute(in, &k, &e), 0, "%s", e.message);
    vyre_blob_header h;
    memset(&h, 0, sizeof h);
    h.format_version = VYRE_BLOB_FORMAT_VERSION;
    h.key_version = VYRE_KEY_VERSION;
    h.key = k;
    h.kind = VYRE_BLOB_CUBIN;
    snprintf(h.arch, sizeof h.arch, "%s", in->arch);
    snprintf(h.toolchain, sizeof h.toolchain, "%s", in->toolchain);
    snprintf(h.source, sizeof h.source, "%s", source);
    h.compile_ns = 1;
    h.kernels = kernel;
    h.kernels_size = (uint32_t)strlen(kernel) + 1;
    h.n_kernels = 1;
    static const char payload[] = "\x7f"
                                  "ELF not really a cubin";
    cr_assert_eq(vyre_cache_put(c, &h, payload, sizeof payload, &e), 0, "%s", e.message);
    if (note)
        cr_assert_eq(vyre__cache_note_inputs(c, &k, in, &e), 0, "%s", e.message);
    return k;
}

Test(key_explain, inputs_and_their_differences)
{
    vyre_key_input a = ptx_input("sm_90", NULL, 0), b = ptx_input("sm_90a", NULL, 0);
    vyre_key_inputs ia, ib;
    vyre_error e;
    cr_assert_eq(vyre__key_inputs_from(&a, &ia, &e), 0, "%s", e.message);
    cr_assert_eq(vyre__key_inputs_from(&b, &ib, &e), 0, "%s", e.message);
    cr_assert_eq(ia.key_version, VYRE_KEY_VERSION);
    cr_assert_str_eq(ia.backend, "cuda");
    cr_assert_eq(ia.source_kind, (uint32_t)VYRE_SOURCE_PTX);
    char sha[VYRE_KEY_HEX_LEN + 1];
    cr_assert_eq(vyre__sha256_hex(k_ptx, strlen(k_ptx), sha, &e), 0);
    cr_assert_str_eq(ia.source_sha256, sha);
    cr_assert_eq(vyre__key_inputs_diff(&ia, &ib), 1u << VYRE_KEY_FIELD_ARCH);
    cr_assert_eq(vyre__key_inputs_diff(&ia, &ia), 0);

    /* Options: order and count matter, as in the key. */
    const char *o1[] = {"-O3", "-lineinfo"}, *o2[] = {"-lineinfo", "-O3"}, *o3[] = {"-O3"};
    vyre_key_input x = ptx_input("sm_90", o1, 2), y = ptx_input("sm_90", o2, 2),
                   z = ptx_input("sm_90", o3, 1);
    vyre_key_inputs ix, iy, iz;
    cr_assert_eq(vyre__key_inputs_from(&x, &ix, &e), 0);
    cr_assert_eq(vyre__key_inputs_from(&y, &iy, &e), 0);
    cr_assert_eq(vyre__key_inputs_from(&z, &iz, &e), 0);
    cr_assert_eq(ix.n_options, 2);
    cr_assert_eq(ix.options_len, sizeof "-O3" + sizeof "-lineinfo");
    cr_assert_eq(vyre__key_inputs_diff(&ix, &iy), 1u << VYRE_KEY_FIELD_OPTIONS);
    cr_assert_eq(vyre__key_inputs_diff(&ix, &iz), 1u << VYRE_KEY_FIELD_OPTIONS);
    cr_assert_eq(vyre__key_inputs_diff(&ia, &iz), 1u << VYRE_KEY_FIELD_OPTIONS);

    /* Options that do not fit are refused, not cut. */
    static char big[VYRE_KEY_OPTIONS_MAX + 1];
    memset(big, 'x', sizeof big - 1);
    const char *ob[] = {big};
    vyre_key_input w = ptx_input("sm_90", ob, 1);
    cr_assert_eq(vyre__key_inputs_from(&w, &ix, &e), VYRE_ETOOBIG);

    for (int f = 0; f < VYRE_KEY_FIELD_COUNT; f++)
        cr_assert_not_null(vyre_key_field_name((vyre_key_field)f));
    cr_assert_str_eq(vyre_key_field_name(VYRE_KEY_FIELD_ARCH), "arch");
    cr_assert_null(vyre_key_field_name(VYRE_KEY_FIELD_COUNT));
}

Test(key_explain, sm_90_beside_sm_90a_differs_in_the_architecture_only)
{
    vyre_cache *c = open_ok(0);
    vyre_key_input in90 = ptx_input("sm_90", NULL, 0), in90a = ptx_input("sm_90a", NULL, 0);
    vyre_key k90 = put(c, &in90, "scale.ptx", "scale", 1);
    /* Unrelated: another source, another name, another kernel. */
    static const char other[] = ".version 8.0\n.target sm_80\n";
    vyre_key_input in_other = ptx_input("sm_80", NULL, 0);
    in_other.source = other;
    in_other.source_len = strlen(other);
    put(c, &in_other, "other.ptx", "other", 1);
    vyre_cache_close(c);

    c = open_ok(VYRE_CACHE_READONLY);
    vyre_key_explanation x;
    vyre_error e;
    cr_assert_eq(vyre_key_explain(c, &in90a, "dir/scale.ptx", NULL, &x, &e), 0, "%s", e.message);
    vyre_key want;
    vyre__key_compute(&in90a, &want, NULL);
    cr_assert_eq(memcmp(x.key.bytes, want.bytes, VYRE_KEY_BYTES), 0);
    cr_assert_eq(x.state, VYRE_KEY_ABSENT);
    cr_assert_str_eq(x.inputs.arch, "sm_90a");
    cr_assert_eq(x.n_entries, 1);
    const vyre_key_explain_entry *en = &x.entries[0];
    cr_assert_eq(memcmp(en->key.bytes, k90.bytes, VYRE_KEY_BYTES), 0);
    cr_assert_eq(en->inputs_recorded, 1);
    cr_assert_eq(en->differ, 1u << VYRE_KEY_FIELD_ARCH);
    cr_assert_eq(en->related, VYRE_KEY_RELATED_NAME | VYRE_KEY_RELATED_SOURCE);
    cr_assert_str_eq(en->inputs.arch, "sm_90");
    cr_assert_str_eq(en->inputs.source_sha256, x.inputs.source_sha256);
    vyre_key_explanation_release(&x);

    /* The key that is there: present, and the sm_90a one is not listed
     * because it is not cached; found by kernel name alone too. */
    cr_assert_eq(vyre_key_explain(c, &in90, NULL, NULL, &x, &e), 0, "%s", e.message);
    cr_assert_eq(x.state, VYRE_KEY_PRESENT);
    cr_assert_eq(x.n_entries, 0);
    vyre_key_explanation_release(&x);
    static const char third[] = ".version 8.0\n.target sm_90\n// edited\n";
    vyre_key_input in_third = ptx_input("sm_90", NULL, 0);
    in_third.source = third;
    in_third.source_len = strlen(third);
    cr_assert_eq(vyre_key_explain(c, &in_third, NULL, "scale", &x, &e), 0, "%s", e.message);
    cr_assert_eq(x.n_entries, 1);
    cr_assert_eq(x.entries[0].related, VYRE_KEY_RELATED_KERNEL);
    cr_assert_eq(x.entries[0].differ, 1u << VYRE_KEY_FIELD_SOURCE);
    vyre_key_explanation_release(&x);
    vyre_cache_close(c);
}

Test(key_explain, entries_without_recorded_inputs_compare_what_the_header_keeps)
{
    vyre_cache *c = open_ok(0);
    vyre_key_input in90 = ptx_input("sm_90", NULL, 0), in90a = ptx_input("sm_90a", NULL, 0);
    const char *opts[] = {"-O3"};
    vyre_key_input in90a_o = ptx_input("sm_90a", opts, 1);
    put(c, &in90, "scale.ptx", "scale", 0);    /* as a remote fetch or a reindex leaves it */
    put(c, &in90a_o, "scale.ptx", "scale", 1); /* options differ */
    vyre_key_explanation x;
    vyre_error e;
    cr_assert_eq(vyre_key_explain(c, &in90a, "scale.ptx", NULL, &x, &e), 0, "%s", e.message);
    cr_assert_eq(x.n_entries, 2);
    /* One difference each; the recorded entry first. */
    cr_assert_eq(x.entries[0].inputs_recorded, 1);
    cr_assert_eq(x.entries[0].differ, 1u << VYRE_KEY_FIELD_OPTIONS);
    cr_assert_eq(x.entries[1].inputs_recorded, 0);
    cr_assert_eq(x.entries[1].known, (1u << VYRE_KEY_FIELD_VERSION) |
                                         (1u << VYRE_KEY_FIELD_TOOLCHAIN) |
                                         (1u << VYRE_KEY_FIELD_ARCH));
    cr_assert_eq(x.entries[1].differ, 1u << VYRE_KEY_FIELD_ARCH);
    cr_assert_eq(x.entries[1].related, VYRE_KEY_RELATED_NAME);
    vyre_key_explanation_release(&x);

    /* Inputs that do not compute to the key are not recorded. */
    vyre_key k;
    vyre__key_compute(&in90, &k, NULL);
    cr_assert_eq(vyre__cache_note_inputs(c, &k, &in90a, &e), VYRE_EINVAL);
    vyre_cache_close(c);
}

/* A cache whose index is at schema 3 (no input columns, no disk_size:
 * its size triggers sum file_size), as an older build left it. */
static void downgrade_to_schema_3(void)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/index.sqlite3", g_root);
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK, "%s", path);
    cr_assert_eq(sqlite3_exec(db,
                              "DROP TRIGGER blobs_total_insert; DROP TRIGGER blobs_total_delete; "
                              "DROP TRIGGER blobs_total_update;",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    static const char *const cols[] = {"inputs",      "backend",       "features",
                                       "n_options",   "options",       "entry",
                                       "source_kind", "source_sha256", "disk_size"};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "ALTER TABLE blobs DROP COLUMN %s", cols[i]);
        char *msg = NULL;
        cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s", msg);
    }
    cr_assert_eq(
        sqlite3_exec(
            db,
            "CREATE TRIGGER blobs_total_insert AFTER INSERT ON blobs BEGIN UPDATE meta SET "
            "value = value + NEW.file_size WHERE name = 'total_bytes'; END; "
            "CREATE TRIGGER blobs_total_delete AFTER DELETE ON blobs BEGIN UPDATE meta SET "
            "value = value - OLD.file_size WHERE name = 'total_bytes'; END; "
            "CREATE TRIGGER blobs_total_update AFTER UPDATE OF file_size ON blobs WHEN "
            "OLD.file_size IS NOT NEW.file_size BEGIN UPDATE meta SET value = value - "
            "OLD.file_size + NEW.file_size WHERE name = 'total_bytes'; END; "
            "UPDATE meta SET value = (SELECT coalesce(sum(file_size), 0) FROM blobs) "
            "WHERE name = 'total_bytes'",
            NULL, NULL, NULL),
        SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version=3", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

Test(key_explain, an_index_of_schema_3_reads_as_inputs_not_recorded_and_migrates)
{
    vyre_cache *c = open_ok(0);
    vyre_key_input in90 = ptx_input("sm_90", NULL, 0), in90a = ptx_input("sm_90a", NULL, 0);
    put(c, &in90, "scale.ptx", "scale", 1);
    vyre_cache_close(c);
    char path[1200];
    snprintf(path, sizeof path, "%s/index.sqlite3", g_root);
    cr_assert_eq(tu_db_int(path, "PRAGMA user_version"), 5);
    downgrade_to_schema_3();

    /* Read-only: left at schema 3, read without the columns. */
    c = open_ok(VYRE_CACHE_READONLY);
    vyre_key_explanation x;
    vyre_error e;
    cr_assert_eq(vyre_key_explain(c, &in90a, "scale.ptx", NULL, &x, &e), 0, "%s", e.message);
    cr_assert_eq(x.n_entries, 1);
    cr_assert_eq(x.entries[0].inputs_recorded, 0);
    cr_assert_eq(x.entries[0].differ, 1u << VYRE_KEY_FIELD_ARCH);
    vyre_key_explanation_release(&x);
    vyre_cache_close(c);
    cr_assert_eq(tu_db_int(path, "PRAGMA user_version"), 3);

    /* A writer migrates: the old row has no inputs, a new put records them. */
    c = open_ok(0);
    cr_assert_eq(tu_db_int(path, "PRAGMA user_version"), 5);
    /* Its blob's size on disk until a reindex: file_size rounded up to 4 KiB. */
    cr_assert_eq(tu_db_int(path, "SELECT count(*) FROM blobs WHERE disk_size = "
                                 "(file_size + 4095) / 4096 * 4096"),
                 1);
    cr_assert_eq(tu_db_int(path, "SELECT count(*) FROM blobs WHERE inputs = 0"), 1);
    vyre_key_input in80 = ptx_input("sm_80", NULL, 0);
    put(c, &in80, "scale.ptx", "scale", 1);
    cr_assert_eq(tu_db_int(path, "SELECT count(*) FROM blobs WHERE inputs = 1"), 1);
    cr_assert_eq(vyre_key_explain(c, &in90a, "scale.ptx", NULL, &x, &e), 0, "%s", e.message);
    cr_assert_eq(x.n_entries, 2);
    cr_assert_eq(x.entries[0].inputs_recorded, 1);
    cr_assert_str_eq(x.entries[0].inputs.arch, "sm_80");
    cr_assert_eq(x.entries[1].inputs_recorded, 0);
    vyre_key_explanation_release(&x);
    vyre_cache_close(c);
}

Test(key_explain, damaged_input_columns_are_corrupt_not_trusted)
{
    vyre_cache *c = open_ok(0);
    vyre_key_input in90 = ptx_input("sm_90", NULL, 0), in90a = ptx_input("sm_90a", NULL, 0);
    put(c, &in90, "scale.ptx", "scale", 1);
    vyre_cache_close(c);
    char path[1200];
    snprintf(path, sizeof path, "%s/index.sqlite3", g_root);
    /* Three options claimed, two in the list. */
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(
        sqlite3_exec(db, "UPDATE blobs SET n_options = 3, options = x'41004200'", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    c = open_ok(VYRE_CACHE_READONLY);
    vyre_key_explanation x;
    vyre_error e;
    vyre_error_clear(&e);
    cr_assert_eq(vyre_key_explain(c, &in90a, "scale.ptx", NULL, &x, &e), VYRE_ECORRUPT);
    cr_assert(strstr(e.message, "damaged inputs"), "%s", e.message);
    cr_assert_eq(x.n_entries, 0);
    vyre_cache_close(c);
}

Test(key_explain, a_damaged_blob_is_a_miss)
{
    vyre_cache *c = open_ok(0);
    vyre_key_input in90 = ptx_input("sm_90", NULL, 0);
    vyre_key k = put(c, &in90, "scale.ptx", "scale", 1);
    vyre_cache_close(c);
    char path[1400];
    vyre_error e;
    cr_assert_eq(vyre_blob_path(g_root, &k, path, sizeof path, &e), 0, "%s", e.message);
    cr_assert_eq(truncate(path, 100), 0, "%s", path);
    c = open_ok(VYRE_CACHE_READONLY);
    vyre_key_explanation x;
    cr_assert_eq(vyre_key_explain(c, &in90, "scale.ptx", NULL, &x, &e), 0, "%s", e.message);
    cr_assert_eq(x.state, VYRE_KEY_DAMAGED);
    cr_assert_eq(x.n_entries, 0);
    vyre_key_explanation_release(&x);
    /* Read only: the damaged blob is still there, not quarantined. */
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    vyre_cache_close(c);
}
