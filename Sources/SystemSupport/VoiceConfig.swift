// `[voice]`: how voiceChat's, videoChat's and prefersEchoCancelledInput's processing treats the
// echo (docs/voice-processing.md), and its reading from the config.

/// `[voice]`: the voice processing of voiceChat, videoChat and prefersEchoCancelledInput
/// sessions (docs/voice-processing.md).
public struct VoiceSection: Sendable, Equatable {
    /// How hard the echo canceller suppresses what its filter left of the echo.
    public var echoSuppression = EchoSuppressionSetting.moderate
    public init() {}
}

/// `[voice] echo_suppression`: loudspeakers loud and close to the microphone need more; a
/// headset or a quiet speaker keeps more of the near talker while both talk with less.
public enum EchoSuppressionSetting: String, Sendable, CaseIterable {
    case low, moderate, high
}

extension ConfigInterpreter {
    /// The keys of `[voice]`.
    static func readVoice(_ fields: ConfigSectionFields, in issues: inout ConfigIssues) -> VoiceSection {
        var section = VoiceSection()
        if let value = fields["echo_suppression"]?.word(
            EchoSuppressionSetting.self, noun: "an echo suppression strength", in: &issues)
        {
            section.echoSuppression = value
        }
        return section
    }
}
