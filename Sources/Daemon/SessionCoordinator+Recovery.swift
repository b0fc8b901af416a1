// The coordinator's share of recorders that come back by themselves (RecorderRecovery.swift): the
// policy's checks before a waiting recorder starts again (a declared one through
// `startDeclared`, as at start-up).
//
// Threads: the control thread.
import SessionPolicy
import SystemSupport

extension SessionCoordinator {
    /// From the tick: the waiting recorders whose cause is gone start again.
    func resumeWaitingRecorders(now: Double) {
        recovery.resumeWaiting(
            now: now, servicesAvailable: store.mediaServicesAvailable && engine.audio.isRunning,
            inputAvailable: { spec in inputAvailable(for: spec) }, start: { entry in try resume(entry) })
    }

    /// Whether `spec`'s input can be recorded now: its port, or the route's input for one that
    /// follows the route (a bus always).
    private func inputAvailable(for spec: RecorderSpec) -> Bool {
        if spec.bus != nil { return true }
        guard spec.followsRoute else { return engine.isAvailable(port: spec.port) }
        guard let input = store.sessions[spec.app]?.route.inputs.first else { return false }
        return engine.isAvailable(port: input)
    }

    /// Starts a waiting recorder again, as its app or the config would: a declared one as at
    /// start-up (its session activated if inactive); another only while its session is active.
    private func resume(_ entry: WaitingRecorder) throws -> RecorderRecovery.ResumeOutcome {
        let app = entry.spec.app
        guard let session = store.sessions[app] else { return .dropped("session \(app) was deleted") }
        // The interruption's end (resumeStreams, auto_resume) or the app decides.
        if session.state == .interrupted { return .notYet }
        if entry.cause == .interruption {
            // Over, and resumeStreams did not take it: the session has no auto_resume (SPEC §3).
            let why = "the interruption ended; without auto_resume `recctl record start \(app)` starts it"
            return entry.declared ? .held(why) : .dropped(why)
        }
        if entry.declared, let declaration = config.sessions.first(where: { $0.app == app }) {
            var port: String?
            if case .port(let name) = declaration.record { port = name }
            return try startDeclared(app: app, port: port)
                ? .started : .dropped("it is armed for level-triggered takes")
        }
        guard session.isActive else {
            return .dropped("its session is not active (no auto_resume); `recctl record start \(app)` starts it")
        }
        try store.checkCanRecord(app: app)
        try startRecorder(entry.spec)

        return .started
    }
}
