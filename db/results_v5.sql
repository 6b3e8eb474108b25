-- db/results_v5.sql - results database migration: rounds (issue 23,
-- point 3).
--
-- Embedded into libcore as vyre__sql_results_v5 and run as a step of
-- k_schema_steps (libcore/src/bench/results.c; see the top of
-- db/results_v1.sql). Only adds columns: older rows keep NULL / 0, which the
-- readers take as "one round".
--
-- A point's samples are taken in rounds spread over the run (every suite
-- measured R times in turn); samples.round is the round (0 .. R-1) a
-- sample was taken in, points.rounds how many rounds the point has, and
-- points.round_noise its noise with the rounds taken into account
-- (vyre_stats_round_noise: the larger of the samples' robust spread and
-- the spread of the round medians). Fixed references of the machine are
-- ordinary points of suite 'reference'.
--
-- Numbered 5 because results_v4.sql (the kernel-time views) was written at
-- the same time; the step list in results.c orders them.

ALTER TABLE samples ADD COLUMN round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE points ADD COLUMN rounds INTEGER;
ALTER TABLE points ADD COLUMN round_noise REAL;
