// The C surface of include/CWebRTCAudioProcessing.h over webrtc::AudioProcessing (0.3).
// Why a shim: the library is C++ only; recd's Swift modules import C. Each function catches
// nothing because the library does not throw (it reports int error codes); `new (std::nothrow)`
// keeps an out-of-memory from unwinding into Swift.

#include "CWebRTCAudioProcessing.h"

#include <new>

#include <webrtc/modules/audio_processing/include/audio_processing.h>

// Gain control's curve (RECD_APM_GAIN_CONTROL): the peak level it aims at, in dB below full
// scale, and the most gain it gives quiet input.
static const int kGainTargetLevelDbfs = 10;
static const int kGainCompressionDb = 12;

struct recd_apm {
    webrtc::AudioProcessing *module;
    webrtc::StreamConfig capture;
    webrtc::StreamConfig reference;
};

extern "C" recd_apm *recd_apm_create(int sample_rate, int capture_channels, int reference_channels,
                                     uint32_t features, int *error) {
    *error = webrtc::AudioProcessing::kNoError;
    if (sample_rate <= 0 || capture_channels <= 0 || reference_channels <= 0) {
        *error = webrtc::AudioProcessing::kBadParameterError;
        return nullptr;
    }
    webrtc::Config config;
    // The experimental AGC steers an analog microphone volume, which a JACK port does not have.
    config.Set<webrtc::ExperimentalAgc>(new webrtc::ExperimentalAgc(false));
    config.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic((features & RECD_APM_DELAY_AGNOSTIC) != 0));
    config.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter((features & RECD_APM_EXTENDED_FILTER) != 0));
    webrtc::AudioProcessing *module = webrtc::AudioProcessing::Create(config);
    if (module == nullptr) {
        *error = webrtc::AudioProcessing::kCreationFailedError;
        return nullptr;
    }
    recd_apm *apm = new (std::nothrow) recd_apm{module, webrtc::StreamConfig(sample_rate, capture_channels),
                                                webrtc::StreamConfig(sample_rate, reference_channels)};
    if (apm == nullptr) {
        delete module;
        *error = webrtc::AudioProcessing::kCreationFailedError;
        return nullptr;
    }
    webrtc::ProcessingConfig processing;
    processing.input_stream() = apm->capture;
    processing.output_stream() = apm->capture;
    processing.reverse_input_stream() = apm->reference;
    processing.reverse_output_stream() = apm->reference;
    int status = module->Initialize(processing);
    // Each component is configured before it is enabled: enabling allocates its state.
    if (status == 0 && (features & RECD_APM_HIGH_PASS_FILTER)) {
        status = module->high_pass_filter()->Enable(true);
    }
    if (status == 0 && (features & RECD_APM_ECHO_CANCELLATION) && (features & RECD_APM_MOBILE_ECHO_CONTROL)) {
        webrtc::EchoControlMobile *aecm = module->echo_control_mobile();
        status = aecm->set_routing_mode(webrtc::EchoControlMobile::kLoudSpeakerphone);
        if (status == 0) status = aecm->enable_comfort_noise(false);
        if (status == 0) status = aecm->Enable(true);
    } else if (status == 0 && (features & RECD_APM_ECHO_CANCELLATION)) {
        webrtc::EchoCancellation *aec = module->echo_cancellation();
        status = aec->enable_drift_compensation(false);
        webrtc::EchoCancellation::SuppressionLevel level = webrtc::EchoCancellation::kModerateSuppression;
        if (features & RECD_APM_SUPPRESSION_HIGH) level = webrtc::EchoCancellation::kHighSuppression;
        if (features & RECD_APM_SUPPRESSION_LOW) level = webrtc::EchoCancellation::kLowSuppression;
        if (status == 0) status = aec->set_suppression_level(level);
        if (status == 0) status = aec->enable_metrics(true);
        if (status == 0) status = aec->Enable(true);
    }
    if (status == 0 && (features & RECD_APM_NOISE_SUPPRESSION)) {
        webrtc::NoiseSuppression::Level level = webrtc::NoiseSuppression::kHigh;
        if (features & RECD_APM_NOISE_MODERATE) level = webrtc::NoiseSuppression::kModerate;
        if (features & RECD_APM_NOISE_LOW) level = webrtc::NoiseSuppression::kLow;
        status = module->noise_suppression()->set_level(level);
        if (status == 0) status = module->noise_suppression()->Enable(true);
    }
    if (status == 0 && (features & RECD_APM_GAIN_CONTROL)) {
        // The digital compressor alone, not kAdaptiveDigital: on speech-like test signals from
        // -24 to -54 dBFS the adaptive mode's level estimate never moved, so it lifted every
        // level alike by its compressor's fixed +4-5 dB, a normal talker included. This curve
        // gives up to 12 dB to quiet input and bends towards a -10 dBFS peak target, so a talker
        // at -25 dBFS RMS (the tests' level) comes out within 1 dB, one 20 dB quieter is raised
        // by about 11 dB, and the limiter holds the peaks at the target (docs/voice-processing.md).
        webrtc::GainControl *agc = module->gain_control();
        status = agc->set_mode(webrtc::GainControl::kFixedDigital);
        if (status == 0) status = agc->set_target_level_dbfs(kGainTargetLevelDbfs);
        if (status == 0) status = agc->set_compression_gain_db(kGainCompressionDb);
        if (status == 0) status = agc->enable_limiter(true);
        if (status == 0) status = agc->Enable(true);
    }
    if (status != 0) {
        recd_apm_destroy(apm);
        *error = status;
        return nullptr;
    }
    return apm;
}

extern "C" int recd_apm_chunk_frames(const recd_apm *apm) { return static_cast<int>(apm->capture.num_frames()); }

extern "C" int recd_apm_process_reverse(recd_apm *apm, const float *const *channels) {
    // The reverse output is not used (no intelligibility enhancer), so it may alias the input;
    // the library only reads it then. The const_cast is for the signature, nothing is written.
    return apm->module->ProcessReverseStream(channels, apm->reference, apm->reference,
                                             const_cast<float *const *>(channels));
}

extern "C" int recd_apm_process_capture(recd_apm *apm, float *const *channels, int delay_ms) {
    int warning = 0;
    if (apm->module->echo_cancellation()->is_enabled() || apm->module->echo_control_mobile()->is_enabled()) {
        int status = apm->module->set_stream_delay_ms(delay_ms);
        if (status == webrtc::AudioProcessing::kBadStreamParameterWarning) {
            warning = -status;
        } else if (status != 0) {
            return status;
        }
    }
    int status = apm->module->ProcessStream(channels, apm->capture, apm->capture, channels);
    return status != 0 ? status : warning;
}

extern "C" int recd_apm_echo_metrics(recd_apm *apm, int *erle_db, int *erl_db) {
    webrtc::EchoCancellation::Metrics metrics;
    int status = apm->module->echo_cancellation()->GetMetrics(&metrics);
    if (status != 0) return status;
    *erle_db = metrics.echo_return_loss_enhancement.average;
    *erl_db = metrics.echo_return_loss.average;
    return 0;
}

extern "C" void recd_apm_destroy(recd_apm *apm) {
    if (apm == nullptr) return;
    delete apm->module;
    delete apm;
}
