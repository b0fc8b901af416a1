#ifndef RECD_CSNDFILE_SHIM_H
#define RECD_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
