/*
 * verify_print.c - the one report of verify for the managed kinds (see
 * verify_print.h). An entry is said to be moved only once its move
 * succeeded; a move that failed is a line of its own
 * ("quarantine-failed"), and the exit status is 1. An unusable entry
 * libcore left in place because it changed less than a minute ago (a
 * writer may be creating it) says so on its lines.
 */
#include "verify_print.h"

#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "tool_json.h"
#include "tool_sanitize.h"

/* What an unusable entry left in place says. */
#define YOUNG_TEXT "left alone: changed less than a minute ago"

typedef struct tally {
    size_t unusable, moved, failed, young;
    const vyre_error *first_fail;
} tally;

/* 1: p's entry was not moved because it changed less than a minute ago
 * (libcore's repair_error VYRE_EBUSY with quarantined 0). */
static int left_young(const cachectl_vproblem *p)
{
    return p->unusable && p->quarantined == 0 && p->repair_error &&
           p->repair_error->code == VYRE_EBUSY;
}

/* The end of the run of problems of i's entry; its state into *bad. */
static size_t entry_end(const cachectl_verify *k, size_t i, cachectl_vproblem *bad)
{
    cachectl_vproblem p, q;
    k->get(k->ctx, i, &p);
    memset(bad, 0, sizeof *bad);
    size_t j = i;
    for (; j < k->n; j++) {
        k->get(k->ctx, j, &q);
        if (strcmp(q.entry, p.entry))
            break;
        if (q.unusable && !bad->unusable)
            *bad = q;
    }
    return j;
}

static void print_line(const char *kind, const char *entry, const char *message, const char *tail)
{
    printf("%s: ", kind);
    if (entry) {
        tool_clean_fputs(entry, stdout);
        fputs(": ", stdout);
    }
    tool_clean_fputs(message, stdout);
    printf("%s\n", tail);
}

/* The problem lines, each entry's run, then its failed move. */
static void print_lines(const cachectl_verify *k, tally *t)
{
    char moved[128];
    snprintf(moved, sizeof moved, " (moved to %s)", k->quarantine);
    char still[128];
    snprintf(still, sizeof still, " (not moved: %s still finds it)", k->who);
    for (size_t i = 0, end; i < k->n; i = end) {
        cachectl_vproblem bad, p;
        end = entry_end(k, i, &bad);
        t->unusable += bad.unusable;
        t->moved += bad.quarantined > 0;
        t->young += (size_t)left_young(&bad);
        for (size_t j = i; !g_tool.json && j < end; j++) {
            k->get(k->ctx, j, &p);
            print_line(p.kind, k->name_entry ? p.entry : NULL, p.message,
                       p.quarantined > 0 ? moved
                       : left_young(&p)  ? " (" YOUNG_TEXT ")"
                                         : "");
        }
        if (bad.quarantined >= 0)
            continue;
        if (!t->failed++)
            t->first_fail = bad.repair_error;
        if (!g_tool.json)
            print_line("quarantine-failed", bad.entry, bad.repair_error->message, still);
    }
}

static void print_summary(const cachectl_verify *k, int repair, const tally *t)
{
    k->checked(k->ctx);
    printf("%zu unusable, %zu problem%s\n", t->unusable, k->n, k->n == 1 ? "" : "s");
    if (repair && t->unusable)
        printf("%zu %s moved to %s, %zu could not be moved\n", t->moved,
               t->moved == 1 ? k->one : k->many, k->quarantine, t->failed);
    if (repair && t->young)
        printf("%zu %s " YOUNG_TEXT " (a writer may still be creating %s; run 'vyre-cachectl "
               "%s verify --repair' again later)\n",
               t->young, t->young == 1 ? k->one : k->many, t->young == 1 ? "it" : "them", k->cmd);
    if (t->failed && *t->first_fail->hint) {
        fputs("hint: ", stdout);
        tool_clean_fputs(t->first_fail->hint, stdout);
        putchar('\n');
    }
    if (k->after)
        k->after(k->ctx);
    if (t->unusable && !repair)
        printf("hint: 'vyre-cachectl %s verify --repair' moves the unusable %s into %s (%s "
               "compiles them again)\n",
               k->cmd, k->many, k->quarantine, k->who);
}

static void print_json(const cachectl_verify *k)
{
    json_t *d = k->json_root(k->ctx), *a = json_array();
    for (size_t i = 0; i < k->n; i++) {
        cachectl_vproblem p;
        k->get(k->ctx, i, &p);
        json_t *o = json_object();
        k->json_problem(k->ctx, i, o);
        json_object_set_new(o, "kind", json_string(p.kind));
        json_object_set_new(o, "message", json_string(p.message));
        json_object_set_new(o, k->unusable_field, json_boolean(p.unusable));
        json_object_set_new(o, "quarantined", json_boolean(p.quarantined > 0));
        json_object_set_new(o, "left_young", json_boolean(left_young(&p)));
        if (p.quarantined < 0)
            json_object_set_new(o, "quarantine_error", json_string(p.repair_error->message));
        json_array_append_new(a, o);
    }
    json_object_set_new(d, "problems", a);
    json_object_set_new(d, "clean", json_boolean(k->n == 0));
    tool_json_print(stdout, d);
}

int cachectl_verify_report(const cachectl_verify *k, int repair)
{
    tally t = {0};
    print_lines(k, &t);
    if (g_tool.json)
        print_json(k);
    else if (!g_cachectl.quiet)
        print_summary(k, repair, &t);
    return k->n || t.failed ? TOOL_EXIT_PROBLEMS : TOOL_EXIT_OK;
}
