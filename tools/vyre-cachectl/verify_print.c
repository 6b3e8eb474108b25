/*
 * verify_print.c - the one report of verify for every kind (see
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
    size_t unusable, moved, failed, young, unrepaired;
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

/* A problem repaired on its own: "KIND ENTRY (MESSAGE): ACTION", the
 * action once repair ran ("left" says why repair did not). */
static void print_one(const cachectl_vproblem *p, int repair)
{
    printf("%-17s ", p->kind);
    tool_clean_fputs(p->entry, stdout);
    if (p->message) {
        fputs(" (", stdout);
        tool_clean_fputs(p->message, stdout);
        fputs(")", stdout);
    }
    if (p->action && (p->repaired || repair))
        printf(": %s", p->action);
    putchar('\n');
}

/* The problem lines, each entry's run, then its failed move. */
static void print_lines(const cachectl_verify *k, int repair, tally *t)
{
    char moved[128];
    snprintf(moved, sizeof moved, " (moved to %s)", k->quarantine);
    char still[128];
    snprintf(still, sizeof still, " (not moved: %s still finds it)", k->who);
    int text = !g_tool.json && !g_cachectl.quiet;
    for (size_t i = 0, end; i < k->n; i = end) {
        cachectl_vproblem bad, p;
        end = entry_end(k, i, &bad);
        t->unusable += bad.unusable;
        t->moved += bad.quarantined > 0;
        t->young += (size_t)left_young(&bad);
        for (size_t j = i; j < end; j++) {
            k->get(k->ctx, j, &p);
            t->unrepaired += !p.repaired;
            if (text && k->one_by_one)
                print_one(&p, repair);
            else if (text)
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

static void print_json(const cachectl_verify *k, int clean)
{
    json_t *d = k->json_root(k->ctx), *a = json_array();
    for (size_t i = 0; i < k->n; i++) {
        cachectl_vproblem p;
        k->get(k->ctx, i, &p);
        json_t *o = json_object();
        json_array_append_new(a, o);
        if (!k->one_by_one)
            k->json_problem(k->ctx, i, o);
        json_object_set_new(o, "kind", json_string(p.kind));
        if (k->one_by_one) {
            k->json_problem(k->ctx, i, o);
            continue;
        }
        json_object_set_new(o, "message", json_string(p.message));
        json_object_set_new(o, k->unusable_field, json_boolean(p.unusable));
        json_object_set_new(o, "quarantined", json_boolean(p.quarantined > 0));
        json_object_set_new(o, "left_young", json_boolean(left_young(&p)));
        if (p.quarantined < 0)
            json_object_set_new(o, "quarantine_error", json_string(p.repair_error->message));
    }
    json_object_set_new(d, "problems", a);
    json_object_set_new(d, "clean", json_boolean(clean));
    tool_json_print(stdout, d);
}

int cachectl_verify_report(const cachectl_verify *k, int repair)
{
    tally t = {0};
    print_lines(k, repair, &t);
    /* Clean: no problem, or (repaired one by one) --repair left none. */
    int clean = k->n == 0 || (k->one_by_one && repair && !t.unrepaired);
    if (g_tool.json)
        print_json(k, clean);
    else if (g_cachectl.quiet)
        ;
    else if (k->one_by_one)
        k->summary(k->ctx, repair);
    else
        print_summary(k, repair, &t);
    return clean && !t.failed ? TOOL_EXIT_OK : TOOL_EXIT_PROBLEMS;
}
