/*
 * fuzz_telemetry_page.c - libFuzzer target for the telemetry page reader's
 * validate-and-copy path (vyre__telemetry_parse, the code behind
 * vyre__telemetry_read once the file checks have passed): the bytes another
 * process put in shared memory.
 *
 * Each input is read twice: as it is, and fitted into a page (cut or
 * zero-padded to the page size, with the magic, a layout version and the
 * owner's uid stamped in) so that mutations reach the field checks behind
 * the size and magic checks. The stamped version is the current one or,
 * when the input's first byte (overwritten by the magic) is odd, 2: the
 * same size, read without its PID namespace. Invariants checked:
 *   - the reader never reads past the input (ASan) and never crashes (UBSan);
 *   - a reject is VYRE_ECORRUPT, VYRE_EVERSION or VYRE_EBUSY with a message
 *     and a hint, and leaves the snapshot all zero;
 *   - an accepted page has the size of its layout (1, 2 or the current
 *     one), its owner's uid, a positive pid, terminated printable strings,
 *     counts within their capacities, no PID namespace unless its layout
 *     records one (3 on), and kernels in strictly increasing serial order,
 *     each from its own slot.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace/telemetry_internal.h"
#include "trace/telemetry_v1.h"

#define OWNER 1000u /* the uid the page's file would belong to */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static vyre_telemetry_snapshot g_snap;
static const vyre_telemetry_snapshot g_zero;

static int printable(const char *s, size_t size)
{
    const char *nul = memchr(s, '\0', size);
    if (!nul)
        return 0;
    for (const char *p = s; p < nul; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static void check_ok(size_t size)
{
    const vyre_telemetry_snapshot *s = &g_snap;
    int full = size == sizeof(vyre__tel_page) &&
               (s->layout_version == VYRE_TELEMETRY_LAYOUT_VERSION || s->layout_version == 2);
    int v1 = size == sizeof(vyre__tel_v1_page) && s->layout_version == 1;
    if ((!full && !v1) || s->pid <= 0 || s->uid != OWNER)
        abort();
    if (s->layout_version < 3 && (s->pid_ns_dev || s->pid_ns_ino))
        abort(); /* those bytes were reserved before layout 3 */
    if (!printable(s->exe, sizeof s->exe) || !printable(s->cmdline, sizeof s->cmdline))
        abort();
    if (s->n_counters > VYRE__TEL_COUNTERS_CAP || s->n_ranges > VYRE__TEL_RANGES_CAP ||
        s->n_kernels > VYRE_TELEMETRY_RING_CAPACITY)
        abort();
    uint8_t seen[VYRE_TELEMETRY_RING_CAPACITY] = {0};
    for (uint32_t i = 0; i < s->n_kernels; i++) {
        const vyre_telemetry_kernel *k = &s->kernels[i];
        if (k->serial == 0 || (i && k->serial <= s->kernels[i - 1].serial))
            abort();
        uint64_t slot = (k->serial - 1) % VYRE_TELEMETRY_RING_CAPACITY;
        if (seen[slot]++)
            abort();
        if (!printable(k->name, sizeof k->name))
            abort();
    }
    if (s->n_kernels && s->kernels_total < s->kernels[s->n_kernels - 1].serial)
        abort();
}

static void check_one(const void *page, size_t size)
{
    vyre_error err;
    vyre_error_clear(&err);
    memset(&g_snap, 0xa5, sizeof g_snap);
    int rc = vyre__telemetry_parse("fuzz.vtel", page, size, OWNER, &g_snap, &err);
    if (rc == VYRE_OK) {
        check_ok(size);
        return;
    }
    if (rc != VYRE_ECORRUPT && rc != VYRE_EVERSION && rc != VYRE_EBUSY)
        abort();
    if (err.code != rc || !err.message[0] || !err.hint[0])
        abort();
    if (memcmp(&g_snap, &g_zero, sizeof g_snap) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size heap copy: aligned as the reader needs, and ASan sees
     * any read past its end. */
    void *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    check_one(copy, size);
    free(copy);

    vyre__tel_page *page = calloc(1, sizeof *page);
    if (!page)
        return 0;
    memcpy(page, data, size < sizeof *page ? size : sizeof *page);
    memcpy(page->h.magic, VYRE__TEL_MAGIC, sizeof page->h.magic);
    page->h.version = size && (data[0] & 1) ? 2 : VYRE_TELEMETRY_LAYOUT_VERSION;
    page->h.uid = OWNER;
    check_one(page, sizeof *page);
    free(page);
    return 0;
}
