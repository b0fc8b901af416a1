#ifndef RECD_CWEBRTC_AUDIO_PROCESSING_H
#define RECD_CWEBRTC_AUDIO_PROCESSING_H
// WebRTC's audio processing module (libwebrtc-audio-processing 0.3) for Swift. Its API is C++
// (webrtc::AudioProcessing and its components), which Swift does not import without C++
// interoperability for every module above it; this is the small C surface recd needs, compiled
// in shim.cpp. Frames are 10 ms of deinterleaved float in [-1, 1] (the library's only frame
// length): `recd_apm_chunk_frames` of them per channel.
//
// Threads: one handle is used by one thread at a time (the library's own rule: stream calls
// never run concurrently with processing). Not for the JACK process thread: the library
// takes a lock in every call.

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One audio processing module and its stream configuration; owned by whoever created it,
/// freed with `recd_apm_destroy`.
typedef struct recd_apm recd_apm;

/// Which processing to switch on (`recd_apm_create`'s `features`).
enum {
    /// Acoustic echo cancellation (the AEC, not the mobile AECM) against the reference stream,
    /// suppression level moderate.
    RECD_APM_ECHO_CANCELLATION = 1 << 0,
    /// Noise suppression, level high.
    RECD_APM_NOISE_SUPPRESSION = 1 << 1,
    /// Automatic gain control: the digital compressor (no analog volume to steer), up to 12 dB
    /// for quiet input, a -10 dBFS peak target, limiter on.
    RECD_APM_GAIN_CONTROL = 1 << 2,
    /// A high-pass filter on the capture (removes DC and rumble).
    RECD_APM_HIGH_PASS_FILTER = 1 << 3,
    /// The AEC estimates the echo path's delay itself instead of trusting the delay given to
    /// `recd_apm_process_capture` (for paths whose delay is not known).
    RECD_APM_DELAY_AGNOSTIC = 1 << 4,
    /// The AEC's 128 ms filter instead of its 48 ms one (longer rooms, looser delays).
    RECD_APM_EXTENDED_FILTER = 1 << 5,
    /// The AEC's non-linear suppression at level low instead of moderate (neither bit) ...
    RECD_APM_SUPPRESSION_LOW = 1 << 6,
    /// ... or high (both bits: low wins).
    RECD_APM_SUPPRESSION_HIGH = 1 << 7,
    /// The mobile echo canceller (AECM, loudspeaker routing mode, comfort noise off) instead of
    /// the AEC, with RECD_APM_ECHO_CANCELLATION.
    RECD_APM_MOBILE_ECHO_CONTROL = 1 << 8,
    /// Noise suppression at level low, or moderate, instead of high (both bits: low wins).
    RECD_APM_NOISE_LOW = 1 << 9,
    RECD_APM_NOISE_MODERATE = 1 << 10,
};

/// Creates and initializes a module for `sample_rate` Hz, `capture_channels` channels of
/// capture processed in place and `reference_channels` of far-end reference. NULL on failure,
/// with the library's error code (`webrtc::AudioProcessing::Error`, negative) in `*error`.
recd_apm *recd_apm_create(int sample_rate, int capture_channels, int reference_channels, uint32_t features,
                          int *error);

/// Frames per channel in one 10 ms chunk at the handle's rate.
int recd_apm_chunk_frames(const recd_apm *apm);

/// Gives the module one chunk of the far-end reference (what was sent to the loudspeaker):
/// `reference_channels` pointers to `recd_apm_chunk_frames` floats each. 0 or the library's
/// negative error code.
int recd_apm_process_reverse(recd_apm *apm, const float *const *channels);

/// Processes one chunk of capture in place: `capture_channels` pointers to
/// `recd_apm_chunk_frames` floats each. `delay_ms` is the time from a reference chunk's
/// `recd_apm_process_reverse` to its echo's arrival in this call's capture. 0, a positive
/// warning the library reports (`kBadStreamParameterWarning` as 13: the delay was clamped), or
/// the library's negative error code.
int recd_apm_process_capture(recd_apm *apm, float *const *channels, int delay_ms);

/// The AEC's own estimate of its echo return loss enhancement in dB (the long-term average),
/// or a negative error code when echo cancellation is off. For diagnostics; tests measure
/// ERLE themselves.
int recd_apm_echo_metrics(recd_apm *apm, int *erle_db, int *erl_db);

/// Frees the module.
void recd_apm_destroy(recd_apm *apm);

#ifdef __cplusplus
}
#endif

#endif
