-- db/results_v7.sql - results database migration: the git branch or tag
-- of a run (issue 27, point 3: baselines chosen by what matters).
--
-- Embedded into libcore as vyre__sql_results_v7 and run as a step of
-- vyre__results_schema_steps (libcore/src/bench/results.c; see the top of
-- db/results_v1.sql), on a local file as it is and on a PostgreSQL server
-- through store_dialect.c's rules. Only adds a column: older rows keep
-- NULL, which no branch selector matches.
--
-- runs.git_ref is the branch the working tree was on when the run ended
-- (`git symbolic-ref --short HEAD`), else the tag it stood on (`git
-- describe --tags --exact-match`), else the CI's ref name; NULL when none
-- is known. `compare --baseline 'gpu=H200 branch=main last'` selects on it.

ALTER TABLE runs ADD COLUMN git_ref TEXT;

-- `vyre-bench history BENCHMARK` reads one benchmark's points across every
-- run: points_key starts with the suite, so the benchmark has its own index.
CREATE INDEX points_benchmark ON points (benchmark, axes);
