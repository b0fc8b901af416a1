#ifndef RECD_CFLAC_SHIM_H
#define RECD_CFLAC_SHIM_H
// libFLAC for Swift. libFLAC's status-to-text tables are arrays of unknown size, which Swift
// cannot import; these accessors index them instead.
#include <FLAC/stream_encoder.h>
#include <FLAC/stream_decoder.h>
#include <FLAC/metadata.h>

/// FLAC__VERSION_STRING is a mutable global in C; Swift 6 only reads it through a function.
static inline const char *recd_flac_version(void) { return FLAC__VERSION_STRING; }

static inline const char *recd_flac_encoder_init_status_string(FLAC__StreamEncoderInitStatus status) {
    return FLAC__StreamEncoderInitStatusString[status];
}
static inline const char *recd_flac_encoder_state_string(FLAC__StreamEncoderState state) {
    return FLAC__StreamEncoderStateString[state];
}
static inline const char *recd_flac_decoder_init_status_string(FLAC__StreamDecoderInitStatus status) {
    return FLAC__StreamDecoderInitStatusString[status];
}
static inline const char *recd_flac_decoder_state_string(FLAC__StreamDecoderState state) {
    return FLAC__StreamDecoderStateString[state];
}
static inline const char *recd_flac_decoder_error_status_string(FLAC__StreamDecoderErrorStatus status) {
    return FLAC__StreamDecoderErrorStatusString[status];
}
static inline const char *recd_flac_simple_iterator_status_string(FLAC__Metadata_SimpleIteratorStatus status) {
    return FLAC__Metadata_SimpleIteratorStatusString[status];
}
#endif
