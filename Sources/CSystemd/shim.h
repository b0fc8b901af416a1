#ifndef RECD_CSYSTEMD_SHIM_H
#define RECD_CSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#endif
