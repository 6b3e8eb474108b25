/*
 * batch.h - vyre-top's non-interactive output: --batch text frames (like
 * top -b, built from the same view and format functions as the screen)
 * and --json snapshots (one object per line, schema_version
 * TOP_JSON_SCHEMA_VERSION, plain numbers, base units in key names, null for
 * unknown values: docs/JSON.md, docs/schema/vyre-top-batch.schema.json).
 */
#ifndef VYRE_TOP_BATCH_H
#define VYRE_TOP_BATCH_H

#include <stdio.h>

#include "collect.h"
#include "ui.h"

/* Version of the --json object; bumped when its shape changes. */
#define TOP_JSON_SCHEMA_VERSION 5 /* 5: cache sizes on disk (st_blocks * 512) */

/* Prints one text frame `cols` wide (trailing spaces trimmed) followed by
 * a blank line. Returns 0, or -1 on a write error or out of memory. */
int top_batch_frame(FILE *out, const top_snapshot *s, top_ui *ui, int cols);

/* Prints one JSON object on one line. Returns 0 or -1. */
int top_batch_json(FILE *out, const top_snapshot *s);

#endif /* VYRE_TOP_BATCH_H */
