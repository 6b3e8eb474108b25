-- db/results_v2.sql - results database migration step 1 -> 2: benchmark
-- runs, their points, the samples of each point, and kernel records per
-- point (timings.point_id).
--
-- Embedded into libcore as vyre__sql_results_v2 and run by
-- libcore/src/bench/results.c as k_schema_steps[1], inside the same BEGIN
-- IMMEDIATE transaction as every other step and the user_version update (see
-- the top of db/results_v1.sql). A new database runs results_v1.sql then this
-- file, so there is one path to v2. Like every step it only adds: v1 rows are
-- untouched (their run_id and point_id stay NULL). Never edit this file once
-- released; v3 is another file.
--
-- Lifecycle: vyre-bench inserts the run row when it starts (status
-- 'running'), one points row and its samples in one transaction as each
-- point finishes, and sets the status at the end: 'done', 'interrupted'
-- (Ctrl-C: the points finished so far are kept) or 'failed' (the run's
-- points, samples and timings are removed in the same transaction, so a
-- failed run leaves only its row and message). A 'running' row whose process
-- is gone was killed.

CREATE TABLE runs (
    id           INTEGER PRIMARY KEY,
    started_ns   INTEGER NOT NULL,            -- Unix ns
    finished_ns  INTEGER,                     -- NULL while running
    status       TEXT NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running', 'done', 'failed', 'interrupted')),
    suites       TEXT NOT NULL,               -- "launch,memcpy" or "sweep:kernel.cu:entry"
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    gpu_name     TEXT,                        -- first device of the run; NULL: none
    gpu_uuid     TEXT,
    devices      TEXT,                        -- "0,1" (CUDA ordinals); NULL: none
    driver       TEXT,                        -- "13000 (580.65.06)"
    cuda_version TEXT,                        -- toolkit the build used, "13.0.48"
    clocks       TEXT,                        -- "sm 1980/1980 MHz, mem 2619 MHz" at start
    git_rev      TEXT,                        -- of the working directory, when known
    command_line TEXT NOT NULL,
    vyre_version TEXT NOT NULL,
    message      TEXT                         -- why it failed, what was skipped
);

CREATE TABLE points (
    id            INTEGER PRIMARY KEY,        -- the NVTX payload of its range
    run_id        INTEGER NOT NULL REFERENCES runs (id),
    seq           INTEGER NOT NULL,           -- order within the run
    suite         TEXT NOT NULL,
    benchmark     TEXT NOT NULL,              -- "launch.stream", "memcpy.h2d.pinned"
    axes          TEXT NOT NULL,              -- "N=1024 BLOCK=128" ("" for none)
    device        INTEGER,                    -- CUDA ordinal; NULL: host only
    mode          TEXT NOT NULL CHECK (mode IN ('hot', 'cold', 'host')),
    unit          TEXT NOT NULL,              -- of the samples: "ns"
    timer         TEXT NOT NULL,              -- "gpu" (CUDA events) or "wall"
    n             INTEGER NOT NULL,
    min           REAL, max REAL, mean REAL, median REAL, stddev REAL, noise REAL,
    p5            REAL, p95 REAL, mad REAL,
    n_outliers    INTEGER NOT NULL DEFAULT 0,
    n_throttled   INTEGER NOT NULL DEFAULT 0,
    wall_median   REAL,                       -- host wall time per sample, median (ns)
    bytes         REAL,                       -- bytes moved per sample; NULL: n/a
    items         REAL,                       -- items (launches, blobs) per sample; NULL: n/a
    metric_name   TEXT,                       -- derived figure: "GB/s", "ratio_d2d", ...
    metric        REAL,
    stop_reason   TEXT NOT NULL,              -- vyre_stats_stop_reason_name()
    stop          TEXT NOT NULL,              -- vyre_stats_stop_format()
    note          TEXT,
    created_ns    INTEGER NOT NULL
);
CREATE UNIQUE INDEX points_run_seq ON points (run_id, seq);
CREATE INDEX points_key ON points (suite, benchmark, axes);

-- One row per sample. value is in the point's unit, per item when the point
-- has items (a batch of 100 launches stores the time of one).
CREATE TABLE samples (
    point_id     INTEGER NOT NULL REFERENCES points (id),
    seq          INTEGER NOT NULL,
    value        REAL NOT NULL,
    wall         REAL,                        -- host wall ns of the sample
    sm_clock_mhz INTEGER,                     -- NVML, NULL when unknown
    throttled    INTEGER NOT NULL DEFAULT 0,  -- a clocks-event reason other than idle
    outlier      INTEGER NOT NULL DEFAULT 0,  -- MAD rule (vyre/stats.h)
    PRIMARY KEY (point_id, seq)
) WITHOUT ROWID;

-- Kernel records per point (CUPTI, gathered in a separate pass): timings
-- rows with run_id and point_id set.
ALTER TABLE timings ADD COLUMN point_id INTEGER;
CREATE INDEX timings_run_kind ON timings (run_id, kind, name);
CREATE INDEX timings_point ON timings (point_id) WHERE point_id IS NOT NULL;
