-- db/results_v1.sql - the results database, schema version 1.
--
-- Embedded into libcore as vyre__sql_results_v1 and run by libcore/src/bench/results.c,
-- inside one BEGIN IMMEDIATE transaction, on a database whose
-- PRAGMA user_version is 0 and which holds no tables (a new or empty file).
-- results.c then sets PRAGMA user_version = 1 and PRAGMA application_id
-- ("vyrs", 0x76797273) in the same transaction, so a half-created schema is
-- never visible to another process.
--
-- The file lives at $XDG_DATA_HOME/vyre/results.sqlite3 (else
-- $HOME/.local/share/vyre/results.sqlite3) and is PRECIOUS: unlike the cache
-- index it cannot be rebuilt from anything. libcore never deletes, truncates
-- or replaces it; a file that is not ours, is newer than the build, or is
-- damaged is refused with an error and left exactly as it was.
--
-- This file is the v1 schema and is never edited once released. Later
-- versions are forward migrations: results.c keeps an array of SQL strings,
-- k_schema_steps[v] taking user_version v to v + 1, applied in order in the
-- same transaction as above; a new database is created at v1 and migrated
-- like any other, so there is one path to every version. A migration only
-- adds (tables, indexes, nullable or defaulted columns through
-- ALTER TABLE ... ADD COLUMN); it never drops or rewrites rows, and a build
-- refuses a file whose user_version is newer than it knows.
--
-- v2 is db/results_v2.sql (runs, points, samples, timings.point_id). The plan
-- it was written from:
--   CREATE TABLE runs    (id INTEGER PRIMARY KEY, started_ns, host, pid,
--                         device, driver, toolkit, command line, git rev, ...);
--   CREATE TABLE points  (id INTEGER PRIMARY KEY, run_id REFERENCES runs(id),
--                         suite, benchmark, axis values as JSON, ...);
--   CREATE TABLE samples (point_id REFERENCES points(id), seq, value_ns, ...);
--   timings.run_id (present and NULL-able since v1) then names runs.id; SQLite
--   cannot add a foreign key to an existing column, so the link is kept by
--   the writer and checked by an index, not by a constraint:
--   CREATE INDEX timings_run_kind ON timings (run_id, kind, name);
-- Rows written by v1 keep run_id NULL and stay readable by (host, pid,
-- session_ns).
--
-- Unsigned 64-bit values from C are stored as SQLite INTEGER (signed
-- 64-bit); results.c refuses values above INT64_MAX.

-- One row per activity record captured by CUPTI (or written by a bench):
-- a kernel, a copy, a memset, a CUPTI overhead interval, an NVTX marker or
-- range. Timestamps are CUPTI's clock (cuptiGetTimestamp, ns); created_ns
-- is the Unix time the row was written.
CREATE TABLE timings (
    id          INTEGER PRIMARY KEY,           -- rowid
    run_id      INTEGER,                       -- bench run (v2 runs.id); NULL: none
    host        TEXT NOT NULL,                 -- gethostname() of the writer
    pid         INTEGER NOT NULL,              -- process that captured it
    session_ns  INTEGER NOT NULL,              -- Unix ns the writer opened: with host
                                               -- and pid, one capture session
    kind        TEXT NOT NULL
                CHECK (kind IN ('kernel', 'memcpy', 'memset', 'overhead', 'marker', 'range')),
    name        TEXT NOT NULL,                 -- kernel name, 'memcpy_htod', NVTX message, ...
    domain      TEXT,                          -- NVTX domain (markers, ranges)
    start_ns    INTEGER NOT NULL,
    end_ns      INTEGER NOT NULL,
    duration_ns INTEGER NOT NULL CHECK (duration_ns >= 0),
    grid_x      INTEGER, grid_y  INTEGER, grid_z  INTEGER,   -- kernels
    block_x     INTEGER, block_y INTEGER, block_z INTEGER,   -- kernels
    stream      INTEGER,                       -- CUPTI stream id
    device      INTEGER,                       -- CUDA device id
    bytes       INTEGER,                       -- copies, memsets
    copy_kind   TEXT,                          -- copies: 'htod', 'dtoh', 'dtod', ...
    correlation INTEGER,                       -- CUPTI correlation id
    payload     INTEGER,                       -- NVTX payload (ranges)
    created_ns  INTEGER NOT NULL
);

-- "Which kernels took the time" and "this kernel over time".
CREATE INDEX timings_kind_name ON timings (kind, name, start_ns);

-- Everything one capture session wrote.
CREATE INDEX timings_session ON timings (host, pid, session_ns);

-- Free-form facts about the file (what wrote it, when it was created).
-- Nothing depends on it for correctness.
CREATE TABLE meta (
    name  TEXT PRIMARY KEY NOT NULL,
    value
) WITHOUT ROWID;

INSERT INTO meta (name, value) VALUES ('schema', 'vyre results');
