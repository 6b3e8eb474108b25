-- db/cache_v2.sql - pipeline-cache index migration step 1 -> 2: what a blob
-- holds (key format v2).
--
-- Embedded into libcore as vyre__sql_cache_v2 and run by
-- libcore/src/cache/index.c as k_schema_steps[1], in the same BEGIN
-- IMMEDIATE transaction as every other step and the user_version update (see
-- the top of db/cache_v1.sql). Never edit this file once released.
--
-- Rows of an index migrated from v1 describe blobs stored before key format
-- v2: key_version defaults to 1, so they count as stale until a reindex reads
-- their headers.

-- VYRE_KEY_VERSION the blob's key was computed with (1: stale since v2).
ALTER TABLE blobs ADD COLUMN key_version INTEGER NOT NULL DEFAULT 1;
-- The source file's basename, from the blob header ('' when unknown).
ALTER TABLE blobs ADD COLUMN source TEXT NOT NULL DEFAULT '';
-- How many kernels the module defines (0: unknown), and their names joined
-- by ',' (cut at 255 bytes, ending in '...' when cut: the blob's own table
-- has them all).
ALTER TABLE blobs ADD COLUMN n_kernels INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blobs ADD COLUMN kernels TEXT NOT NULL DEFAULT '';
