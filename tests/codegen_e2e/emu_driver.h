// emu_driver.h: what the emulator drivers of bnncc's generated kernel steps (resd_emu.cc,
// rcode_emu.cc; emu_steps.py writes their kernels.inc and runs them) share on the host side: the
// shared memory bconv_emu.h's blocks run in, the table of kernels, the manifest, a launch's input
// files and its guarded outputs. Each driver is one translation unit, so bnn_dsmem is defined
// here.
#ifndef BNN_EMU_DRIVER_H
#define BNN_EMU_DRIVER_H
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "bconv_emu.h"

extern "C" {
alignas(128) unsigned char bnn_dsmem[EMU_DSMEM];
}

// kernels.inc's table emu_kernels[]: each kernel's launcher by name.
struct EmuKernel {
    const char *name;
    EmuCall call;
};

// POISON: the outputs' fill before a launch (emu_steps.py's POISON), what the kernel does not
// write reads so; GUARD: GUARD_WORDS words after each output, which it must not write.
enum : uint32_t { POISON = 0x5EADBEEFu, GUARD = 0xC0FFEE11u, GUARD_WORDS = 64 };

inline const char *emu_driver = "emu_driver"; // the driver's name, for its messages

// The manifest argv names (usage: DRIVER MANIFEST, one launch a line); exits 2 without one.
inline FILE *emu_manifest(int argc, char **argv, const char *driver) {
    emu_driver = driver;
    if (argc != 2) {
        fprintf(stderr, "usage: %s MANIFEST\n", driver);
        exit(2);
    }
    FILE *m = fopen(argv[1], "r");
    if (!m) {
        fprintf(stderr, "%s: cannot open %s\n", driver, argv[1]);
        exit(2);
    }
    return m;
}

// The launcher of the manifest's kernel name; exits 2 where the table has none.
template <size_t N> EmuCall emu_kernel(const EmuKernel (&table)[N], const char *name) {
    for (const EmuKernel &k : table)
        if (strcmp(k.name, name) == 0) return k.call;
    fprintf(stderr, "%s: no kernel %s\n", emu_driver, name);
    exit(2);
}

// A file's bytes in an allocation of their own (16-byte aligned: cp.async's sources), freed
// with it; path "-": none (a null pointer, 0 bytes).
struct EmuFile {
    void *p = nullptr;
    size_t bytes = 0;
    explicit EmuFile(const char *path) {
        if (strcmp(path, "-") == 0) return;
        FILE *f = fopen(path, "rb");
        if (!f) {
            fprintf(stderr, "%s: cannot open %s\n", emu_driver, path);
            exit(2);
        }
        fseek(f, 0, SEEK_END);
        bytes = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        p = aligned_alloc(16, bytes ? (bytes + 15) / 16 * 16 : 16);
        if (!p || fread(p, 1, bytes, f) != bytes) {
            fprintf(stderr, "%s: cannot read %s\n", emu_driver, path);
            exit(2);
        }
        fclose(f);
    }
    ~EmuFile() { free(p); }
    EmuFile(const EmuFile &) = delete;
    EmuFile &operator=(const EmuFile &) = delete;
};

// EmuArgs of the files X, W, P, ep0 and ep1 (the pointers every kernel takes first) and the
// batch argument nb; the driver adds its outputs and R.
inline EmuArgs emu_args(const EmuFile &X, const EmuFile &W, const EmuFile &P, const EmuFile &ep0, const EmuFile &ep1,
                        int nb) {
    EmuArgs a{};
    a.X = (const unsigned *)X.p;
    a.W = (const unsigned *)W.p;
    a.P = (const int *)P.p;
    a.ep0 = ep0.p;
    a.ep1 = ep1.p;
    a.nb = nb;
    return a;
}

// The launch's buffers cp.async may read (bconv_emu.h's emu_global).
inline void emu_sources(std::initializer_list<const EmuFile *> files) {
    emu_nglobal = 0;
    for (const EmuFile *f : files) {
        emu_global_base[emu_nglobal] = f->p;
        emu_global_bytes[emu_nglobal++] = f->bytes;
    }
}

// An output of words words, POISON, then the guard.
struct EmuGuarded {
    std::vector<uint32_t> v;
    size_t words;
    explicit EmuGuarded(size_t n) : v(n + GUARD_WORDS, POISON), words(n) {
        for (size_t i = words; i < v.size(); i++) v[i] = GUARD;
    }
    uint32_t *data() { return v.data(); }
    // The guard's words the launch changed.
    size_t guard_changed() const {
        size_t n = 0;
        for (size_t i = words; i < v.size(); i++) n += v[i] != GUARD;
        return n;
    }
    // The words (not the guard) to path, for the script to compare; exits 2 where it cannot.
    void store(const char *path) const {
        FILE *o = fopen(path, "wb");
        if (!o || fwrite(v.data(), 4, words, o) != words || fclose(o)) {
            fprintf(stderr, "%s: cannot write %s\n", emu_driver, path);
            exit(2);
        }
    }
};
#endif
