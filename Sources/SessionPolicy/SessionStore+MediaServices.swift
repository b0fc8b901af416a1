// The JACK server lost and back (SPEC §6): every session deactivated, and those that asked
// for it activated and resumed again.

extension SessionStore {
    public mutating func mediaServicesLost() -> [PolicyEffect] {
        guard mediaServicesAvailable else { return [] }
        mediaServicesAvailable = false
        var effects: [PolicyEffect] = [.mediaServicesWereLost]
        for app in sessions.keys.sorted() {
            let session = sessions[app]!
            if session.streamsRunning { effects.append(.stopStreams(app: app, reason: .mediaServicesLost)) }
            sessions[app]!.activation.resumeAfterReset = session.autoResume && session.streamsRunning
            sessions[app]!.streams.running = false
            sessions[app]!.streams.playing = false
            if session.state == .active { sessions[app]!.activation.state = .inactive }
        }
        return effects + updateDucking() + updateHints()
    }

    public mutating func mediaServicesReset() -> [PolicyEffect] {
        guard !mediaServicesAvailable else { return [] }
        mediaServicesAvailable = true
        var effects: [PolicyEffect] = [.mediaServicesWereReset]
        for app in sessions.keys.sorted() where sessions[app]!.activation.resumeAfterReset {
            sessions[app]!.activation.resumeAfterReset = false
            if let activated = try? activate(app: app, holder: sessions[app]!.holder) {
                effects += activated
                sessions[app]!.streams.running = true
                effects.append(.resumeStreams(app: app))
            }
        }
        return effects
    }
}
