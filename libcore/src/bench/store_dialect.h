/*
 * store_dialect.h - the SQL of the results store (store.h's portable
 * subset and db/results_vN.sql) as PostgreSQL reads it. Not public API.
 */
#ifndef VYRE_BENCH_STORE_DIALECT_H
#define VYRE_BENCH_STORE_DIALECT_H

/* Flags of vyre__pg_sql. */
enum { VYRE__PG_SCHEMA = 1 /* a db/results_vN.sql step: the DDL rules too */ };

/* Rewrites sql for PostgreSQL (the rules are at the top of
 * store_dialect.c). Returns a malloc'ed string (the caller frees it), or
 * NULL when out of memory. */
char *vyre__pg_sql(const char *sql, unsigned flags);

#endif /* VYRE_BENCH_STORE_DIALECT_H */
