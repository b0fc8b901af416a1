// What a session's mode and preferences do to its captured samples (SPEC: "modes are not
// labels"): pure rules; the daemon runs the processing they name (VoiceProcessing) on a worker.

/// The processing a session's capture goes through.
public enum CaptureProcessing: String, Sendable, Equatable, CaseIterable {
    /// Samples as the port delivered them: every mode but the two below, and always for
    /// measurement (which turns every processing step off).
    case none
    /// Echo cancellation against the session's own output, nothing else: a playAndRecord
    /// session that prefers echo-cancelled input (`prefersEchoCancelledInput`).
    case echoCancellation
    /// voiceChat and videoChat: echo cancellation, noise suppression and gain control.
    case voice

    /// Whether AVAudioSession's `isEchoCancelledInputAvailable` holds: category playAndRecord
    /// (the one that both plays the far end and records), on a route with both an input and an
    /// output (nothing to cancel without an output, nothing to process without an input), and
    /// not in mode measurement, which promises unprocessed samples.
    public static func isEchoCancelledInputAvailable(
        category: Category, mode: Mode, routeHasInput: Bool, routeHasOutput: Bool
    ) -> Bool {
        category == .playAndRecord && mode != .measurement && routeHasInput && routeHasOutput
    }

    /// The processing for a session now. voiceChat and videoChat process whatever the
    /// preference (their processing includes echo cancellation); otherwise
    /// `prefersEchoCancelledInput` asks for echo cancellation alone, honoured only while it is
    /// available (a route change can take it away and give it back).
    public static func of(
        category: Category, mode: Mode, prefersEchoCancelledInput: Bool, routeHasInput: Bool, routeHasOutput: Bool
    ) -> CaptureProcessing {
        let available = isEchoCancelledInputAvailable(
            category: category, mode: mode, routeHasInput: routeHasInput, routeHasOutput: routeHasOutput)
        guard available else { return .none }
        if mode == .voiceChat || mode == .videoChat { return .voice }
        return prefersEchoCancelledInput ? .echoCancellation : .none
    }

    /// Checks `prefersEchoCancelledInput` being set (session.prefer). Asking for it in a
    /// category that cannot have it is an error that says which to use; a route without both
    /// directions is not (the route may change: the preference waits, as AVAudioSession's does).
    public static func validatePreference(_ prefers: Bool, category: Category) throws(SessionError) {
        guard prefers, category != .playAndRecord else { return }
        throw SessionError(
            .incompatibleCategory,
            "category \(category.rawValue) cannot have echo-cancelled input; use playAndRecord (it plays the far "
                + "end and records), or leave prefersEchoCancelledInput false")
    }
}
