/*
 * cmd_devices.c - `vyre-bench devices`: list the GPUs and their capabilities.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tool_json.h"
#include "tool_cli.h"
#include "tool_dispatch.h"
#include "tool_opt.h"
#include "cmds.h"
#include "vyre/vyre.h"

const tool_opt bench_devices_opts[] = {
    {TOOL_OPT_JSON, 0, "json", NULL,
     "one JSON object (schema_version " TOOL_STR(
         BENCH_DEVICES_JSON_SCHEMA_VERSION) ") instead of a table",
     NULL},
    {0, 0, NULL, NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: vyre-bench devices [--json]\n\n"
                 "List each GPU the CUDA driver sees: name, UUID, architecture, compute\n"
                 "capability, SM count, memory, cooperative-launch support, driver version.\n\n");
    tool_cmd_options_help(out, bench_devices_opts);
    fprintf(out, "\nexit status: 0 listed, 2 usage or operational error,\n"
                 "             3 no NVIDIA driver or no GPU found\n");
}

static json_t *device_json(const vyre_device_info *d)
{
    return json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:b, s:i, s:i, s:i, s:i, "
        "s:b}",
        "ordinal", d->ordinal, "name", d->name, "uuid", d->uuid, "pci_bus_id", d->pci_bus_id,
        "arch", d->arch, "cc_major", d->cc_major, "cc_minor", d->cc_minor, "sm_count", d->sm_count,
        "memory_bytes", (json_int_t)d->total_mem_bytes, "cooperative_launch", d->cooperative_launch,
        "max_threads_per_block", d->max_threads_per_block, "max_shared_mem_per_block_bytes",
        d->max_shared_mem_per_block, "l2_cache_bytes", d->l2_cache_bytes, "memory_bus_width_bits",
        d->memory_bus_width_bits, "ecc_enabled", d->ecc_enabled);
}

static int print_json_empty(int code, int driver)
{
    json_t *o =
        json_pack("{s:i, s:b, s:o, s:[]}", "schema_version", BENCH_DEVICES_JSON_SCHEMA_VERSION,
                  "driver_found", code != VYRE_ENODRIVER, "driver_version",
                  driver > 0 ? json_integer(driver) : json_null(), "devices");
    tool_json_print(stdout, o);
    return 0;
}

int cmd_devices(int argc, char **argv)
{
    int c, stop = 0;
    /* Only the shared --json and --help: nothing else comes back. */
    while ((c = tool_getopt_table("devices", argc, argv, bench_devices_opts, usage, &stop)) != -1)
        if (c == TOOL_OPT_STOP)
            return stop;
    if (optind < argc)
        return tool_usage_error("devices", NULL, "unexpected argument '%s'", argv[optind]);

    vyre_error err;
    vyre_error_clear(&err);
    int count = 0, driver = 0;
    int rc = vyre_cuda_device_count(&count, &err);
    if (rc == 0)
        rc = vyre_cuda_driver_version(&driver, &err);
    else if (rc == VYRE_ENODEV)
        vyre_cuda_driver_version(&driver, NULL); /* for --json: the driver is there */
    if (rc == 0 && count == 0)
        rc = VYRE_ENODEV;
    if (rc) {
        if (rc == VYRE_ENODEV && !err.message[0]) {
            snprintf(err.message, sizeof err.message, "the NVIDIA driver reports no GPU");
            snprintf(err.hint, sizeof err.hint, "check nvidia-smi and CUDA_VISIBLE_DEVICES");
        }
        tool_report(&err);
        if (g_tool.json && (rc == VYRE_ENODRIVER || rc == VYRE_ENODEV))
            print_json_empty(rc, driver);
        return tool_exit_code(rc);
    }

    json_t *arr = g_tool.json ? json_array() : NULL;
    if (!g_tool.json)
        printf("%-3s  %-28s  %-6s  %4s  %10s  %4s  %-40s\n", "GPU", "NAME", "ARCH", "SMS", "MEMORY",
               "COOP", "UUID");
    for (int i = 0; i < count; i++) {
        vyre_device_info d;
        rc = vyre_cuda_device_info(i, &d, &err);
        if (rc) {
            tool_report(&err);
            json_decref(arr);
            return tool_exit_code(rc);
        }
        if (g_tool.json) {
            json_array_append_new(arr, device_json(&d));
            continue;
        }
        char mem[32];
        vyre_format_size(d.total_mem_bytes, mem, sizeof mem);
        printf("%-3d  %-28.28s  %-6s  %4d  %10s  %4s  %-40s\n", d.ordinal, d.name, d.arch,
               d.sm_count, mem, d.cooperative_launch ? "yes" : "no", d.uuid);
        printf("     compute capability %d.%d, %d threads/block, %d KiB shared/block, "
               "L2 %d MiB, %d-bit bus, ECC %s%s%s\n",
               d.cc_major, d.cc_minor, d.max_threads_per_block, d.max_shared_mem_per_block / 1024,
               d.l2_cache_bytes >> 20, d.memory_bus_width_bits, d.ecc_enabled ? "on" : "off",
               d.pci_bus_id[0] ? ", PCI " : "", d.pci_bus_id);
    }
    if (g_tool.json) {
        json_t *o =
            json_pack("{s:i, s:b, s:i, s:o}", "schema_version", BENCH_DEVICES_JSON_SCHEMA_VERSION,
                      "driver_found", 1, "driver_version", driver, "devices", arr);
        tool_json_print(stdout, o);
    } else {
        printf("driver: CUDA %d.%d (%d), %d device%s\n", driver / 1000, (driver % 1000) / 10,
               driver, count, count == 1 ? "" : "s");
    }
    return TOOL_EXIT_OK;
}
