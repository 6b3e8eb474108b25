-- db/cache_v3.sql - pipeline-cache index, schema version 2 -> 3: the
-- cache's total size kept in meta ('total_bytes') by triggers, so that a
-- put can compare the cache with its max_size in one point lookup instead
-- of summing every row (26 ms at 100,000 rows). Never edited once released.
--
-- An upsert's DO UPDATE fires the UPDATE trigger; the index never uses
-- INSERT OR REPLACE (whose implicit delete fires no trigger).
INSERT INTO meta (name, value)
    VALUES ('total_bytes', (SELECT coalesce(sum(file_size), 0) FROM blobs))
    ON CONFLICT (name) DO UPDATE SET value = excluded.value;

CREATE TRIGGER blobs_total_insert AFTER INSERT ON blobs BEGIN
    UPDATE meta SET value = value + NEW.file_size WHERE name = 'total_bytes';
END;

CREATE TRIGGER blobs_total_delete AFTER DELETE ON blobs BEGIN
    UPDATE meta SET value = value - OLD.file_size WHERE name = 'total_bytes';
END;

CREATE TRIGGER blobs_total_update AFTER UPDATE OF file_size ON blobs
    WHEN OLD.file_size IS NOT NEW.file_size BEGIN
    UPDATE meta SET value = value - OLD.file_size + NEW.file_size WHERE name = 'total_bytes';
END;
