#ifndef RECD_CEBUR128_SHIM_H
#define RECD_CEBUR128_SHIM_H
#include <ebur128.h>
#include <math.h>

/* A linear peak as dB (true peak in dBTP): Codec imports no libm of its own. */
static inline double recd_ebur128_decibels(double ratio) { return 20.0 * log10(ratio); }
#endif
