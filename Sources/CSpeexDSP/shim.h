#ifndef RECD_CSPEEXDSP_SHIM_H
#define RECD_CSPEEXDSP_SHIM_H
// SpeexDSP: its echo canceller (speex_echo_*, the MDF adaptive filter) and the preprocessor's
// residual echo suppression and denoiser (speex_preprocess_*) that go with it.
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
#endif
