/*
 * cmds.h - vyre-bench subcommands, one file each (git's builtin/ layout).
 */
#ifndef VYRE_BENCH_CMDS_H
#define VYRE_BENCH_CMDS_H

int cmd_devices(int argc, char **argv);

#endif /* VYRE_BENCH_CMDS_H */
