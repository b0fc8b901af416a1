#ifndef RECD_CSOXR_SHIM_H
#define RECD_CSOXR_SHIM_H
#include <soxr.h>
#endif
