/*
 * cubin.c - the kernels a cubin defines, read from its ELF symbol table.
 * In base/, below the cache: the cache (blob kernel lists, Triton verify)
 * and the compiler both read cubins, and neither may call up a layer.
 *
 * A cubin is an ELF64 little-endian object. Each kernel is a global
 * function symbol (STT_FUNC, STB_GLOBAL) defined in its own section named
 * ".text.<kernel>"; device functions the compiler did not inline live in
 * ".text.<name>" sections too, but NVIDIA marks entry points with
 * STO_CUDA_ENTRY (0x10) in st_other: when any symbol carries that mark, only
 * marked symbols count.
 *
 * The input is untrusted (a blob on disk, a file given to `seed`): every
 * offset, size, count and index is checked against the buffer before it is
 * used, with overflow-safe arithmetic; nothing is read outside [0, len).
 * Hostile input yields VYRE_EINVAL with what was wrong, never a crash.
 */
#include "base/cubin.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"

enum {
    EHDR_SIZE = 64,
    SHDR_SIZE = 64,
    SYM_SIZE = 24,
    SHT_SYMTAB = 2,
    STT_FUNC = 2,
    STB_GLOBAL = 1,
    STO_CUDA_ENTRY = 0x10,
    SHN_LORESERVE = 0xff00,
};

/* Bounds on what a cubin may hold (far above real ones). */
#define CUBIN_MAX_KERNELS    65536u
#define CUBIN_MAX_NAMES_SIZE ((size_t)1 << 20)

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* 1 when [off, off + size) lies within [0, len). */
static int in_bounds(uint64_t off, uint64_t size, size_t len)
{
    return off <= (uint64_t)len && size <= (uint64_t)len - off;
}

typedef struct shdr {
    uint32_t name;
    uint32_t type;
    uint64_t offset;
    uint64_t size;
    uint32_t link;
    uint64_t entsize;
} shdr;

typedef struct elf {
    const uint8_t *p;
    size_t len;
    uint64_t shoff;
    uint16_t shnum;
    uint16_t shstrndx;
} elf;

static void read_shdr(const elf *e, uint16_t i, shdr *s)
{
    const uint8_t *q = e->p + e->shoff + (uint64_t)i * SHDR_SIZE;
    s->name = rd32(q);
    s->type = rd32(q + 4);
    s->offset = rd64(q + 24);
    s->size = rd64(q + 32);
    s->link = rd32(q + 40);
    s->entsize = rd64(q + 56);
}

/* The NUL-terminated string at off in the string table tab, or NULL when it
 * runs off the table. */
static const char *str_at(const elf *e, const shdr *tab, uint32_t off)
{
    if (off >= tab->size)
        return NULL;
    const char *s = (const char *)e->p + tab->offset + off;
    return memchr(s, 0, (size_t)(tab->size - off)) ? s : NULL;
}

static int bad(vyre_error *err, const char *what)
{
    return vyre__fail(err, VYRE_EINVAL,
                      "pass a cubin (an ELF file from nvcc -cubin, NVRTC or nvJitLink)",
                      "not a readable cubin: %s", what);
}

/* Appends name to the NUL-separated list unless it is already there. */
static int add_name(char **buf, size_t *used, size_t *cap, size_t *count, const char *name,
                    vyre_error *err)
{
    size_t n = strlen(name);
    for (size_t o = 0; o < *used;) {
        size_t l = strlen(*buf + o);
        if (l == n && memcmp(*buf + o, name, n) == 0)
            return VYRE_OK;
        o += l + 1;
    }
    if (*count >= CUBIN_MAX_KERNELS || *used + n + 1 > CUBIN_MAX_NAMES_SIZE)
        return bad(err, "more kernels than any cubin holds");
    if (*used + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *used + n + 1)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return vyre__fail(err, VYRE_ENOMEM, NULL, "cannot allocate kernel names");
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *used, name, n + 1);
    *used += n + 1;
    (*count)++;
    return VYRE_OK;
}

/* One pass over every symbol table; entry_only: only STO_CUDA_ENTRY ones.
 * *marked counts the functions listed that carry the mark. */
static int scan(const elf *e, const shdr *shstr, int entry_only, char **buf, size_t *used,
                size_t *cap, size_t *count, size_t *marked, vyre_error *err)
{
    for (uint16_t i = 0; i < e->shnum; i++) {
        shdr st;
        read_shdr(e, i, &st);
        if (st.type != SHT_SYMTAB)
            continue;
        if (st.entsize != SYM_SIZE || st.size % SYM_SIZE != 0 ||
            !in_bounds(st.offset, st.size, e->len))
            return bad(err, "a symbol table lies outside the file or has a bad entry size");
        if (st.link >= e->shnum)
            return bad(err, "a symbol table names a string table that does not exist");
        shdr strtab;
        read_shdr(e, (uint16_t)st.link, &strtab);
        if (!in_bounds(strtab.offset, strtab.size, e->len))
            return bad(err, "a string table lies outside the file");
        uint64_t nsym = st.size / SYM_SIZE;
        for (uint64_t k = 1; k < nsym; k++) { /* symbol 0 is the null symbol */
            const uint8_t *s = e->p + st.offset + k * SYM_SIZE;
            uint32_t name_off = rd32(s);
            uint8_t info = s[4], other = s[5];
            uint16_t shndx = rd16(s + 6);
            if ((info & 0xf) != STT_FUNC || (info >> 4) != STB_GLOBAL)
                continue;
            if (shndx == 0 || shndx >= SHN_LORESERVE || shndx >= e->shnum)
                continue; /* undefined, absolute, common: not a kernel here */
            if (entry_only && !(other & STO_CUDA_ENTRY))
                continue;
            const char *name = str_at(e, &strtab, name_off);
            if (!name)
                return bad(err, "a symbol name runs off its string table");
            if (!*name)
                continue;
            shdr sec;
            read_shdr(e, shndx, &sec);
            const char *secname = str_at(e, shstr, sec.name);
            if (!secname)
                return bad(err, "a section name runs off the section-name table");
            if (strncmp(secname, ".text.", 6) != 0 || strcmp(secname + 6, name) != 0)
                continue;
            size_t before = *count;
            int rc = add_name(buf, used, cap, count, name, err);
            if (rc)
                return rc;
            if ((other & STO_CUDA_ENTRY) && *count > before)
                (*marked)++; /* a function listed, and marked as an entry */
        }
    }
    return VYRE_OK;
}

int vyre_cubin_kernels(const void *image, size_t len, char **names, size_t *names_len,
                       size_t *count, vyre_error *err)
{
    if (names)
        *names = NULL;
    if (names_len)
        *names_len = 0;
    if (count)
        *count = 0;
    if (!names || !names_len || !count || (!image && len))
        return vyre__fail(err, VYRE_EINVAL, NULL, "vyre_cubin_kernels: NULL argument");
    const uint8_t *p = image;
    if (len < EHDR_SIZE || memcmp(p,
                                  "\x7f"
                                  "ELF",
                                  4) != 0)
        return bad(err, "no ELF header");
    if (p[4] != 2 || p[5] != 1)
        return bad(err, "not a 64-bit little-endian ELF file");
    elf e = {.p = p, .len = len};
    e.shoff = rd64(p + 40);
    uint16_t shentsize = rd16(p + 58);
    e.shnum = rd16(p + 60);
    e.shstrndx = rd16(p + 62);
    if (e.shnum == 0)
        return bad(err, "no section headers");
    if (shentsize != SHDR_SIZE)
        return bad(err, "section headers of an unexpected size");
    if (!in_bounds(e.shoff, (uint64_t)e.shnum * SHDR_SIZE, len))
        return bad(err, "section headers lie outside the file");
    if (e.shstrndx >= e.shnum)
        return bad(err, "no section-name table");
    shdr shstr;
    read_shdr(&e, e.shstrndx, &shstr);
    if (!in_bounds(shstr.offset, shstr.size, len))
        return bad(err, "the section-name table lies outside the file");

    char *buf = NULL;
    size_t used = 0, cap = 0, n = 0, marked = 0;
    int rc = scan(&e, &shstr, 0, &buf, &used, &cap, &n, &marked, err);
    if (!rc && marked > 0 && marked < n) {
        /* Entry marks present: drop the unmarked device functions. */
        used = n = marked = 0;
        rc = scan(&e, &shstr, 1, &buf, &used, &cap, &n, &marked, err);
    }
    if (rc || n == 0) {
        free(buf);
        return rc;
    }
    *names = buf;
    *names_len = used;
    *count = n;
    return VYRE_OK;
}
