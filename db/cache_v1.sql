-- db/cache_v1.sql - the pipeline-cache index, schema version 1.
--
-- Embedded into libcore as vyre__sql_cache_v1 and run by libcore/src/cache/index.c,
-- inside one BEGIN IMMEDIATE transaction, on a database whose
-- PRAGMA user_version is 0 (a new or empty file). index.c then sets
-- PRAGMA user_version = 1 and PRAGMA application_id in the same transaction,
-- so a half-created schema is never visible to another process.
--
-- This file is the v1 schema and is never edited once released. Later
-- versions are forward migrations: index.c keeps an array of SQL strings,
-- entry i taking user_version i+1 to i+2, applied in order in the same
-- transaction as above; a new database is created at v1 and then migrated
-- like any other, so there is one path to every version. db/cache_vN.sql
-- is the step that makes schema version N (db/results_vN.sql likewise).
--
-- The index is a cache of the blobs' headers plus usage (last access, hits):
-- losing it loses nothing, 'vyre-cachectl reindex' rebuilds it from the
-- blobs. Unsigned 64-bit values from C are stored as SQLite INTEGER (signed
-- 64-bit); index.c refuses values above INT64_MAX.

-- One row per blob file blobs/<2 hex>/<64 hex>.vblob. WITHOUT ROWID: the
-- 64-hex key is the natural primary key and every lookup is by key, so the
-- rows live in the key's b-tree and there is no second rowid b-tree.
CREATE TABLE blobs (
    key            TEXT PRIMARY KEY NOT NULL
                   CHECK (length(key) = 64 AND key NOT GLOB '*[^0-9a-f]*'),
    kind           INTEGER NOT NULL,            -- vyre_blob_kind
    arch           TEXT NOT NULL,               -- e.g. 'sm_90a'
    toolchain      TEXT NOT NULL,               -- e.g. 'nvrtc-13.0;driver-13000'
    raw_size       INTEGER NOT NULL,            -- payload bytes before encoding
    stored_size    INTEGER NOT NULL,            -- payload bytes in the file
    file_size      INTEGER NOT NULL,            -- header + payload, bytes on disk
    created_ns     INTEGER NOT NULL,            -- Unix ns, from the blob header
    last_access_ns INTEGER NOT NULL DEFAULT 0,  -- Unix ns; 0 = never read
    hits           INTEGER NOT NULL DEFAULT 0,  -- loads served from this blob
    compile_ns     INTEGER NOT NULL DEFAULT 0   -- compile time a hit saves
) WITHOUT ROWID;

-- LRU order for prune and foreach_lru: (last_access_ns, created_ns, key) is
-- exactly the ORDER BY, so iteration walks this index without sorting and
-- pages through it with a row-value range.
CREATE INDEX blobs_lru ON blobs (last_access_ns, created_ns, key);

-- No index on (arch, toolchain): prune and stats read every row anyway,
-- and each extra index costs a b-tree update per put and per pruned blob
-- (pruning 100,000 blobs is measured against unlinking them, bench/).

-- Free-form facts about the index (e.g. when it was created or last
-- rebuilt). Nothing depends on it for correctness.
CREATE TABLE meta (
    name  TEXT PRIMARY KEY NOT NULL,
    value
) WITHOUT ROWID;

INSERT INTO meta (name, value) VALUES ('schema', 'vyre pipeline-cache index');
