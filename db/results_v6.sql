-- db/results_v6.sql - results database migration: the variant of a point
-- (issue 23, point 6: `vyre-bench run ... --vs OTHER`).
--
-- Embedded into libcore as vyre__sql_results_v6 and run as a step of
-- k_schema_steps (libcore/src/bench/results.c; see the top of
-- db/results_v1.sql). Only adds a column: older rows keep NULL.
--
-- An A/B run measures two kernels in one process, alternating their
-- samples; both are stored in the one run, each point twice: the
-- baseline's with variant 'A', the other kernel's with 'B'. Points of a
-- normal run, and the references of an A/B run (measured once, shared by
-- both sides), have NULL.

ALTER TABLE points ADD COLUMN variant TEXT;
