/*
 * runs_secrets.c - no password is kept in a results store: the command
 * line a run records (runs.command_line) is masked before it is written
 * (vyre__runs_mask_command_line, used by runs_db.c, runs_read.c and by
 * runs_copy.c for push and pull), and rows written before this rule existed are masked
 * when a store is opened (vyre__runs_mask_stored).
 *
 * The masking is store_url.c's (vyre__mask_secrets): a postgresql:// or
 * postgres:// URL's password in any case of the scheme
 * (postgresql://bench:***@host/db) and the value of every key ending in
 * "password" followed by '=' (password=***, sslpassword=***,
 * PGPASSWORD=***). It is a data migration written in C, not SQL: neither
 * engine's SQL can find "the last '@' before the query" portably. It runs
 * at every open rather than once per schema version, because it is cheap
 * (one SELECT of the few rows that could hold a secret) and because a
 * row pushed by an older vyre of the same schema version would otherwise
 * stay as it came.
 */
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "bench/results_internal.h"
#include "bench/store_url.h"

void vyre__runs_mask_command_line(const char *in, char *buf, size_t size)
{
    vyre__mask_secrets(in, buf, size);
}

/* A row whose command line changes when masked. */
typedef struct masked_row {
    int64_t id;
    char *line;
} masked_row;

typedef struct masked_rows {
    masked_row *v;
    size_t n;
} masked_rows;

/* Rows that may hold a secret (a cheap filter both engines read the same
 * way, lower() for PostgreSQL's case-sensitive LIKE), those that do. */
static int find_rows(vyre_results *db, masked_rows *rows, vyre_error *err)
{
    vyre__stmt *st = NULL;
    int rc = vyre__results_prepare(db,
                                   "SELECT id, command_line FROM runs WHERE lower(command_line) "
                                   "LIKE '%password%' OR lower(command_line) LIKE '%postgres%@%'",
                                   &st, err);
    int s = 0;
    while (!rc && (s = vyre__stmt_step(st, "read", err)) == 1) {
        const char *z = vyre__stmt_col_text(st, 1);
        /* A secret becomes "***": at most two bytes more than each byte it was. */
        size_t len = z ? 3 * strlen(z) + 1 : 1;
        char *m = malloc(len);
        masked_row *grown = m ? realloc(rows->v, (rows->n + 1) * sizeof *rows->v) : NULL;
        if (!grown) {
            free(m);
            rc = vyre__fail(err, VYRE_ENOMEM, NULL, "out of memory masking command lines");
            break;
        }
        rows->v = grown;
        vyre__mask_secrets(z ? z : "", m, len);
        if (z && strcmp(m, z) != 0)
            rows->v[rows->n++] = (masked_row){vyre__stmt_col_int64(st, 0), m};
        else
            free(m);
    }
    vyre__stmt_finalize(st);
    return rc ? rc : s < 0 ? s : VYRE_OK;
}

static int update_rows(vyre_results *db, void *arg, vyre_error *err)
{
    const masked_rows *rows = arg;
    vyre__stmt *st = NULL;
    int rc = vyre__results_prepare(db, "UPDATE runs SET command_line = ?1 WHERE id = ?2", &st, err);
    for (size_t i = 0; !rc && i < rows->n; i++) {
        vyre__stmt_reset(st);
        vyre__stmt_text(st, 1, rows->v[i].line, strlen(rows->v[i].line));
        vyre__stmt_int64(st, 2, rows->v[i].id);
        int s = vyre__stmt_step(st, "mask the command lines of", err);
        rc = s < 0 ? s : VYRE_OK;
    }
    vyre__stmt_finalize(st);
    return rc;
}

int vyre__runs_mask_stored(vyre_results *db, vyre_error *err)
{
    masked_rows rows = {NULL, 0};
    vyre__results_lock(db);
    int rc = find_rows(db, &rows, err);
    vyre__results_unlock(db);
    if (!rc && rows.n)
        rc = vyre__results_tx(db, "mask the command lines of", update_rows, &rows, err);
    for (size_t i = 0; i < rows.n; i++)
        free(rows.v[i].line);
    free(rows.v);
    return rc;
}
