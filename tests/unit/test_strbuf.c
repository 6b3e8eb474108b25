/*
 * test_strbuf.c - base/strbuf.c: the growable string that never cuts what
 * it is given (messages, paths and names built from input).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "base/strbuf.h"

Test(strbuf, init_is_an_empty_terminated_string)
{
    vyre__strbuf a = VYRE__STRBUF_INIT;
    cr_assert_str_eq(a.buf, "");
    cr_assert_eq(a.len, 0);
    cr_assert_eq(a.alloc, 0, "nothing is allocated until something is added");
    vyre__strbuf_release(&a); /* release of an empty strbuf frees nothing */
    cr_assert_str_eq(a.buf, "");

    vyre__strbuf b;
    cr_assert_eq(vyre__strbuf_init(&b, 1000), VYRE_OK);
    cr_assert_str_eq(b.buf, "");
    cr_assert_geq(b.alloc, 1001, "the hint is room for 1000 bytes and the terminator");
    vyre__strbuf_release(&b);
    cr_assert_eq(b.alloc, 0);
}

Test(strbuf, add_adds_and_addf_append)
{
    vyre__strbuf sb = VYRE__STRBUF_INIT;
    cr_assert_eq(vyre__strbuf_adds(&sb, "remote "), VYRE_OK);
    cr_assert_eq(vyre__strbuf_add(&sb, "http://xyz", 8), VYRE_OK, "add takes a length");
    cr_assert_eq(vyre__strbuf_addf(&sb, " %s=%d", "hits", 42), VYRE_OK);
    cr_assert_str_eq(sb.buf, "remote http://x hits=42");
    cr_assert_eq(sb.len, strlen(sb.buf));
    cr_assert_eq(vyre__strbuf_add(&sb, "", 0), VYRE_OK);
    cr_assert_eq(vyre__strbuf_addf(&sb, "%s", ""), VYRE_OK);
    cr_assert_str_eq(sb.buf, "remote http://x hits=42");
    vyre__strbuf_release(&sb);
}

/* What a fixed array with "%.560s" would cut is kept whole: 100,000 bytes
 * through addf, in pieces that cross every growth step. */
Test(strbuf, long_text_is_never_cut)
{
    enum { N = 100000 };
    char *big = malloc(N + 1);
    for (size_t i = 0; i < N; i++)
        big[i] = (char)('a' + i % 26);
    big[N] = '\0';
    vyre__strbuf sb = VYRE__STRBUF_INIT;
    cr_assert_eq(vyre__strbuf_addf(&sb, "<%s>", big), VYRE_OK);
    cr_assert_eq(sb.len, (size_t)N + 2);
    cr_assert_eq(sb.buf[0], '<');
    cr_assert_eq(memcmp(sb.buf + 1, big, N), 0);
    cr_assert_eq(sb.buf[N + 1], '>');
    cr_assert_eq(sb.buf[N + 2], '\0');
    vyre__strbuf_reset(&sb);
    for (size_t i = 0; i < N; i += 7)
        cr_assert_eq(vyre__strbuf_addf(&sb, "%.*s", (int)(i + 7 > N ? N - i : 7), big + i),
                     VYRE_OK);
    cr_assert_eq(sb.len, (size_t)N);
    cr_assert_str_eq(sb.buf, big);
    cr_assert_not(vyre__strbuf_failed(&sb));
    vyre__strbuf_release(&sb);
    free(big);
}

Test(strbuf, reset_keeps_the_allocation)
{
    vyre__strbuf sb = VYRE__STRBUF_INIT;
    vyre__strbuf_adds(&sb, "some text");
    size_t alloc = sb.alloc;
    char *buf = sb.buf;
    vyre__strbuf_reset(&sb);
    cr_assert_str_eq(sb.buf, "");
    cr_assert_eq(sb.len, 0);
    cr_assert_eq(sb.alloc, alloc);
    cr_assert_eq(sb.buf, buf);
    vyre__strbuf_release(&sb);
}

/* Adding a piece of itself: the buffer may move while growing. */
Test(strbuf, add_of_its_own_content)
{
    vyre__strbuf sb = VYRE__STRBUF_INIT;
    vyre__strbuf_adds(&sb, "abc");
    for (int i = 0; i < 10; i++)
        cr_assert_eq(vyre__strbuf_add(&sb, sb.buf, sb.len), VYRE_OK);
    cr_assert_eq(sb.len, 3u << 10);
    for (size_t i = 0; i < sb.len; i++)
        cr_assert_eq(sb.buf[i], "abc"[i % 3]);
    vyre__strbuf_release(&sb);
}

/* detach hands the caller a malloc'ed string (freed with free()) and
 * leaves the strbuf empty and usable; an empty one gives a fresh "". */
Test(strbuf, detach_hands_over_the_buffer)
{
    vyre__strbuf sb = VYRE__STRBUF_INIT;
    vyre__strbuf_addf(&sb, "path/%s", "name");
    size_t len = 0;
    char *s = vyre__strbuf_detach(&sb, &len);
    cr_assert_str_eq(s, "path/name");
    cr_assert_eq(len, 9);
    cr_assert_str_eq(sb.buf, "");
    cr_assert_eq(sb.alloc, 0);
    vyre__strbuf_adds(&sb, "again");
    cr_assert_str_eq(sb.buf, "again");
    vyre__strbuf_release(&sb);
    free(s);

    char *e = vyre__strbuf_detach(&sb, &len);
    cr_assert_not_null(e);
    cr_assert_str_eq(e, "");
    cr_assert_eq(len, 0);
    cr_assert_neq(e, vyre__strbuf_empty, "the caller may free it");
    free(e);
}

/* A size no allocation can meet: refused, content unchanged, failed set. */
Test(strbuf, impossible_growth_fails_and_keeps_the_content)
{
    vyre__strbuf sb = VYRE__STRBUF_INIT;
    vyre__strbuf_adds(&sb, "kept");
    cr_assert_eq(vyre__strbuf_grow(&sb, SIZE_MAX - 2), VYRE_ENOMEM);
    cr_assert_eq(vyre__strbuf_grow(&sb, SIZE_MAX), VYRE_ENOMEM);
    cr_assert(vyre__strbuf_failed(&sb));
    cr_assert_str_eq(sb.buf, "kept");
    cr_assert_eq(sb.len, 4);
    vyre__strbuf_reset(&sb);
    cr_assert_not(vyre__strbuf_failed(&sb));
    vyre__strbuf_release(&sb);
}
