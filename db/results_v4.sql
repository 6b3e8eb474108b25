-- db/results_v4.sql - results database migration step 3 -> 4: the three
-- views of a GPU point's time (issue 23).
--
-- Embedded into libcore as vyre__sql_results_v4 and run as
-- k_schema_steps[3] (see the top of db/results_v1.sql). Only adds.
--
-- points.median of a point timed by GPU events is the `gpu` view: each
-- sample is two events around the work, enqueued behind a blocking kernel
-- so the start is not stamped before the launch arrives.
-- points.batch_ns: the `batch` view, ns per launch of back-to-back
-- launches between two events (nvbench's batch time); NULL when not
-- measured (host points, cold points, rows written before v4).
-- points.kernel_ns: the `kernel` view, the median CUPTI duration of the
-- point's main kernel (the one with the most total time) in the kernel
-- pass; NULL without a pass or without kernels.
-- points.block_timeouts: samples discarded because the blocking kernel
-- gave up waiting for its release (they were taken again); NULL before v4.

ALTER TABLE points ADD COLUMN batch_ns REAL;
ALTER TABLE points ADD COLUMN kernel_ns REAL;
ALTER TABLE points ADD COLUMN block_timeouts INTEGER;
