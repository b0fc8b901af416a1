#ifndef RECD_CEBUR128_SHIM_H
#define RECD_CEBUR128_SHIM_H
#include <ebur128.h>
#include <math.h>

/* A linear peak as dB (true peak in dBTP): Codec imports no libm of its own. */
static inline double recd_ebur128_decibels(double ratio) { return 20.0 * log10(ratio); }

/* Mean-square (K-weighted) energy as LUFS, spelled exactly as libebur128 1.2.6 spells it
   (ebur128_energy_to_loudness), so a reading made from energies matches the library's. */
static inline double recd_ebur128_loudness(double energy) { return 10 * (log(energy) / log(10.0)) - 0.691; }

/* The inverse: a window's LUFS back to its energy; -inf (silence) is 0. */
static inline double recd_ebur128_energy(double lufs) {
    return isinf(lufs) && lufs < 0 ? 0.0 : pow(10.0, (lufs + 0.691) / 10.0);
}

/* The libm functions R128Engine derives its filter coefficients with (Codec imports no libm). */
static inline double recd_r128_tan(double x) { return tan(x); }
static inline double recd_r128_sin(double x) { return sin(x); }
static inline double recd_r128_cos(double x) { return cos(x); }
static inline double recd_r128_pow(double x, double y) { return pow(x, y); }
#endif
