/*
 * fakecubin.h - a minimal ELF64 cubin with chosen kernels, for tests and
 * the fake nvJitLink (tests/fakes/fakejitlink.c): what vyre_cubin_kernels
 * reads, laid out as nvcc lays it out (a ".text.<name>" section per
 * function, a global STT_FUNC symbol in it, entry points marked
 * STO_CUDA_ENTRY), and nothing else.
 *
 * Layout: ELF header | .shstrtab | .strtab | .symtab | one 16-byte
 * .text.<name> per function | an optional note | section headers.
 */
#ifndef VYRE_TESTS_FAKECUBIN_H
#define VYRE_TESTS_FAKECUBIN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline void fc_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void fc_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void fc_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/*
 * kernels[0..n_kernels): entry points (marked when mark_entries); funcs
 * [0..n_funcs): device functions (global, in their own .text section,
 * unmarked). note (may be NULL) is copied into a ".note.fake" section, so
 * that different inputs give different images. Returns malloc'ed bytes and
 * their count in *len, or NULL.
 */
static inline unsigned char *fake_cubin(const char *const *kernels, size_t n_kernels,
                                        const char *const *funcs, size_t n_funcs, int mark_entries,
                                        const char *note, size_t *len)
{
    size_t nf = n_kernels + n_funcs;
    size_t nsec = 4 + nf + (note ? 1 : 0); /* null, shstrtab, strtab, symtab, texts, note */
    /* Section names and symbol names. */
    size_t shstr_size = 1 + sizeof ".shstrtab" + sizeof ".strtab" + sizeof ".symtab" +
                        (note ? sizeof ".note.fake" : 0);
    size_t str_size = 1;
    for (size_t i = 0; i < nf; i++) {
        const char *name = i < n_kernels ? kernels[i] : funcs[i - n_kernels];
        shstr_size += 6 + strlen(name) + 1;
        str_size += strlen(name) + 1;
    }
    size_t sym_size = 24 * (nf + 1);
    size_t note_size = note ? strlen(note) : 0;
    size_t off_shstr = 64, off_str = off_shstr + shstr_size, off_sym = off_str + str_size;
    off_sym = (off_sym + 7) & ~(size_t)7;
    size_t off_text = off_sym + sym_size;
    size_t off_note = off_text + 16 * nf;
    size_t off_sh = (off_note + note_size + 7) & ~(size_t)7;
    size_t total = off_sh + 64 * nsec;
    unsigned char *b = calloc(1, total);
    if (!b)
        return NULL;
    /* ELF header: 64-bit, little-endian, ET_EXEC, EM_CUDA (190). */
    memcpy(b,
           "\x7f"
           "ELF",
           4);
    b[4] = 2;
    b[5] = 1;
    b[6] = 1;
    fc_put16(b + 16, 2);
    fc_put16(b + 18, 190);
    fc_put32(b + 20, 1);
    fc_put64(b + 40, off_sh);
    fc_put16(b + 52, 64);
    fc_put16(b + 58, 64);
    fc_put16(b + 60, (uint16_t)nsec);
    fc_put16(b + 62, 1);

    char *shstr = (char *)b + off_shstr, *str = (char *)b + off_str;
    size_t sp = 1, tp = 1;
    uint32_t name_shstrtab = (uint32_t)sp;
    memcpy(shstr + sp, ".shstrtab", sizeof ".shstrtab");
    sp += sizeof ".shstrtab";
    uint32_t name_strtab = (uint32_t)sp;
    memcpy(shstr + sp, ".strtab", sizeof ".strtab");
    sp += sizeof ".strtab";
    uint32_t name_symtab = (uint32_t)sp;
    memcpy(shstr + sp, ".symtab", sizeof ".symtab");
    sp += sizeof ".symtab";
    uint32_t name_note = 0;
    if (note) {
        name_note = (uint32_t)sp;
        memcpy(shstr + sp, ".note.fake", sizeof ".note.fake");
        sp += sizeof ".note.fake";
    }
    unsigned char *sh = b + off_sh;
#define FC_SH(i, name, type, off, size, link, info, entsize)                                       \
    do {                                                                                           \
        unsigned char *q = sh + 64 * (i);                                                          \
        fc_put32(q, (name));                                                                       \
        fc_put32(q + 4, (type));                                                                   \
        fc_put64(q + 24, (off));                                                                   \
        fc_put64(q + 32, (size));                                                                  \
        fc_put32(q + 40, (link));                                                                  \
        fc_put32(q + 44, (info));                                                                  \
        fc_put64(q + 56, (entsize));                                                               \
    } while (0)
    FC_SH(1, name_shstrtab, 3, off_shstr, shstr_size, 0, 0, 0);
    FC_SH(2, name_strtab, 3, off_str, str_size, 0, 0, 0);
    FC_SH(3, name_symtab, 2, off_sym, sym_size, 2, 1, 24);
    for (size_t i = 0; i < nf; i++) {
        const char *name = i < n_kernels ? kernels[i] : funcs[i - n_kernels];
        size_t nl = strlen(name);
        uint32_t secname = (uint32_t)sp;
        memcpy(shstr + sp, ".text.", 6);
        memcpy(shstr + sp + 6, name, nl + 1);
        sp += 6 + nl + 1;
        FC_SH(4 + i, secname, 1, off_text + 16 * i, 16, 3, 0, 0);
        uint32_t symname = (uint32_t)tp;
        memcpy(str + tp, name, nl + 1);
        tp += nl + 1;
        unsigned char *s = b + off_sym + 24 * (i + 1);
        fc_put32(s, symname);
        s[4] = (1 << 4) | 2; /* STB_GLOBAL, STT_FUNC */
        s[5] = (unsigned char)(mark_entries && i < n_kernels ? 0x10 : 0);
        fc_put16(s + 6, (uint16_t)(4 + i));
        fc_put64(s + 16, 16);
    }
    if (note) {
        memcpy(b + off_note, note, note_size);
        FC_SH(4 + nf, name_note, 7, off_note, note_size, 0, 0, 0);
    }
#undef FC_SH
    *len = total;
    return b;
}

#endif /* VYRE_TESTS_FAKECUBIN_H */
