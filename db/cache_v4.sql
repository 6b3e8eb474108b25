-- db/cache_v4.sql - pipeline-cache index, schema version 3 -> 4: the
-- inputs each blob's key was computed from, so that `explain` can say which
-- of them another key differs in ("why did this miss?"). Never edited once
-- released.
--
-- The key is a SHA-256 over these inputs (vyre/key.h); the blob header
-- keeps only the architecture, toolchain and key version, so the rest is
-- recorded here by the compile path right after it stores a blob. Rows
-- from before this version, blobs fetched from a remote store and rows a
-- reindex rebuilt have inputs = 0: "inputs not recorded". A reindex keeps
-- the inputs of rows it finds (its upsert leaves these columns alone).

-- 1: the columns below hold the key's inputs; 0: not recorded.
ALTER TABLE blobs ADD COLUMN inputs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blobs ADD COLUMN backend TEXT NOT NULL DEFAULT '';
ALTER TABLE blobs ADD COLUMN features INTEGER NOT NULL DEFAULT 0;
-- The ordered compile options, each followed by a NUL byte (a BLOB: an
-- option never holds a NUL, the list does), and their count.
ALTER TABLE blobs ADD COLUMN n_options INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blobs ADD COLUMN options BLOB NOT NULL DEFAULT x'';
ALTER TABLE blobs ADD COLUMN entry TEXT NOT NULL DEFAULT '';
ALTER TABLE blobs ADD COLUMN source_kind INTEGER NOT NULL DEFAULT 0;
-- SHA-256 of the source bytes, 64 lowercase hex digits ('' when not recorded).
ALTER TABLE blobs ADD COLUMN source_sha256 TEXT NOT NULL DEFAULT '';
