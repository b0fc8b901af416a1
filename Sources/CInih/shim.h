#ifndef RECD_CINIH_SHIM_H
#define RECD_CINIH_SHIM_H
#include <ini.h>
#endif
