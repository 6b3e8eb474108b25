-- db/results_v3.sql - results database migration step 2 -> 3: the start
-- time of the process that runs a benchmark.
--
-- Embedded into libcore as vyre__sql_results_v3 and run as
-- k_schema_steps[2] (see the top of db/results_v1.sql). Only adds.
--
-- runs.pid_start is field 22 of /proc/<pid>/stat (starttime, clock ticks
-- since boot) of the run's process when it began. A 'running' row whose pid
-- is gone, or is alive with another start time (the pid was reused), or was
-- written on another boot, belongs to a process that was killed: the next
-- reader of the runs marks it 'interrupted' (libcore/src/bench/runs_db.c).
-- NULL for rows written before v3: those are judged on the pid alone.

ALTER TABLE runs ADD COLUMN pid_start INTEGER;
ALTER TABLE runs ADD COLUMN boot_id TEXT;
