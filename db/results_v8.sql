-- db/results_v8.sql - results database migration: one noise figure, one
-- name (issue 34, point 3).
--
-- Embedded into libcore as vyre__sql_results_v8 and run as a step of
-- vyre__results_schema_steps (libcore/src/bench/results.c; see the top of
-- db/results_v1.sql), on a local file as it is and on a PostgreSQL server
-- through store_dialect.c's rules (RENAME COLUMN and UPDATE ... CASE are
-- in both engines' common subset: SQLite 3.25 and later).
--
-- Until v7, points.noise held stddev / mean while every table, `show`,
-- `compare`, CSV and JSON called the robust figure `noise`; `history`, which
-- read the column, showed 93% and 208% for points whose noise elsewhere was
-- 7.8% and 3.3%. From v8:
--   points.rel_stddev  stddev / mean (the old column, renamed; rows kept)
--   points.noise       the point's robust noise, the figure the stopping
--                      rule and the `noise` column use: with 2 rounds or
--                      more round_noise (vyre_stats_round_noise), else
--                      1.4826 * mad / median; NULL when undefined (n < 2,
--                      a median <= 0)
-- This is the one step that does more than add: the rename keeps every
-- stored value under its true name, and the new column is filled from
-- columns every row already has, so no row loses anything and the step
-- runs again identically on any copy.

ALTER TABLE points RENAME COLUMN noise TO rel_stddev;
ALTER TABLE points ADD COLUMN noise REAL;
UPDATE points SET noise = CASE
    WHEN rounds >= 2 AND round_noise IS NOT NULL THEN round_noise
    WHEN n >= 2 AND median > 0 AND mad IS NOT NULL THEN 1.4826 * mad / median
END;
