#ifndef RECD_CALSA_SHIM_H
#define RECD_CALSA_SHIM_H
#include <alsa/asoundlib.h>

// The control-event masks are macros; SND_CTL_EVENT_MASK_REMOVE is (~0U), which Swift does not
// import. Each gets a function so the Devices wrapper reads them with the right type.
static inline unsigned int recd_ctl_event_mask_remove(void) { return SND_CTL_EVENT_MASK_REMOVE; }
static inline unsigned int recd_ctl_event_mask_value(void) { return SND_CTL_EVENT_MASK_VALUE; }
static inline unsigned int recd_ctl_event_mask_info(void) { return SND_CTL_EVENT_MASK_INFO; }
static inline unsigned int recd_ctl_event_mask_add(void) { return SND_CTL_EVENT_MASK_ADD; }
static inline int recd_ctl_nonblock(void) { return SND_CTL_NONBLOCK; }

#endif
