-- db/cache_v5.sql - pipeline-cache index, schema version 4 -> 5: each
-- blob's size on disk, as du and ccache count it (st_blocks * 512), beside
-- its apparent size file_size; the total that max_size limits (meta
-- 'total_bytes', kept by triggers since v3) now sums it. Never edited once
-- released.
--
-- A blob of 100 bytes takes a whole block: counted by file_size, a cache
-- pruned to a size held more than that on disk (issue 35).
--
-- SQL cannot stat a file, so a migrated row gets file_size rounded up to
-- 4 KiB (the block of ext4, xfs and tmpfs) until the next put of that key
-- or a `vyre-cachectl reindex`, which stores what lstat reports.
ALTER TABLE blobs ADD COLUMN disk_size INTEGER NOT NULL DEFAULT 0;
UPDATE blobs SET disk_size = (file_size + 4095) / 4096 * 4096;

DROP TRIGGER blobs_total_insert;
DROP TRIGGER blobs_total_delete;
DROP TRIGGER blobs_total_update;

CREATE TRIGGER blobs_total_insert AFTER INSERT ON blobs BEGIN
    UPDATE meta SET value = value + NEW.disk_size WHERE name = 'total_bytes';
END;

CREATE TRIGGER blobs_total_delete AFTER DELETE ON blobs BEGIN
    UPDATE meta SET value = value - OLD.disk_size WHERE name = 'total_bytes';
END;

CREATE TRIGGER blobs_total_update AFTER UPDATE OF disk_size ON blobs
    WHEN OLD.disk_size IS NOT NEW.disk_size BEGIN
    UPDATE meta SET value = value - OLD.disk_size + NEW.disk_size WHERE name = 'total_bytes';
END;

INSERT INTO meta (name, value)
    VALUES ('total_bytes', (SELECT coalesce(sum(disk_size), 0) FROM blobs))
    ON CONFLICT (name) DO UPDATE SET value = excluded.value;
