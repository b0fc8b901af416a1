// Which sessions keep a pre-roll, and of which input; armed recorders and their
// level-triggered takes. The policy says who may record; this feature is the one writer of
// the pre-roll taps (`preRolls`) and the armed recorders (`armed`): the recorder service asks
// it for a pre-roll when a recorder starts (`TakeSource`), the coordinator arms and disarms.
//
// Threads: the control thread (requests and the tick).
import Archive
import AudioEngine
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

/// What the take trigger asks of the coordinator: the policy's state, and a recorder started
/// under the policy's checks. Control thread.
protocol TakeHost: AnyObject {
    var store: SessionStore { get }
    func startTake(_ spec: RecorderSpec) throws -> RecorderStream
}

/// Level-triggered takes and the pre-roll they start with: a feature the coordinator ticks.
final class TakeTriggerFeature: DaemonFeature, TakeSource {
    private unowned let host: any TakeHost
    private let config: RecdConfig
    private let engine: EngineController
    private let recorders: RecorderService
    private let recovery: RecorderRecovery
    private let events: any EventSink
    /// The sessions' pre-roll taps.
    private let preRolls: PreRollKeeper
    /// The armed recorders, by app.
    private var armed: [String: ArmedTrigger] = [:]

    init(
        host: any TakeHost, config: RecdConfig, engine: EngineController, recorders: RecorderService,
        events: any EventSink
    ) {
        self.host = host
        self.config = config
        self.engine = engine
        self.recorders = recorders
        recovery = recorders.recovery
        self.events = events
        preRolls = PreRollKeeper(engine: engine.audio)
    }

    private var store: SessionStore { host.store }

    func tick(now: Double) { keepPreRolls() }

    /// The armed recorders' levels are read every tick.
    var wantsFrequentTicks: Bool { !armed.isEmpty }

    /// Without a JACK server no input is kept.
    func handle(_ effect: PolicyEffect) {
        if case .mediaServicesWereLost = effect { preRolls.releaseAll(except: []) }
    }

    // MARK: What the recorders and the coordinator ask

    func takePreRoll(app: String, port: String, channels: Int) -> PreRollKeeper.Taken? {
        preRolls.take(app: app, port: port, channels: channels)
    }

    func isArmed(_ app: String) -> Bool { armed[app] != nil }

    /// The apps armed now (a session armed is in use).
    var armedApps: Set<String> { Set(armed.keys) }

    /// `pre_roll_seconds` of `app`: its session section's, else `[archive]`'s.
    func preRollSeconds(of app: String) -> Int {
        config.sessions.first { $0.app == app }?.preRollSeconds ?? config.archive.preRollSeconds
    }

    /// From the tick: every session that could start recording now keeps its pre-roll of its
    /// route input (an armed one: of its input, pre-roll or not); the others keep none. No
    /// sample of an input is held for a session that is not granted, or whose input is muted
    /// (SPEC §8). Armed recorders look at the level before the pre-rolls are trimmed.
    func keepPreRolls() {
        let keeping = updatePreRollTaps()
        preRolls.releaseAll(except: keeping)
        for app in Array(armed.keys) { stepTrigger(app) }
        // A take that started has taken its tap: the next pre-roll starts now.
        _ = updatePreRollTaps()
        preRolls.trim()
    }

    private func updatePreRollTaps() -> Set<String> {
        var keeping: Set<String> = []
        for (app, session) in store.sessions {
            let seconds = preRollSeconds(of: app)
            let trigger = armed[app]
            guard seconds > 0 || trigger != nil, (try? store.checkCanRecord(app: app)) != nil,
                !store.capturesSilenced(app: app),
                let port = trigger?.input ?? session.route.inputs.first, let decl = config.port(named: port),
                engine.isAvailable(port: port)
            else { continue }
            // Kept while recording too: a triggered take's next start needs its pre-roll.
            keeping.insert(app)
            // A processed session's far end, as its recorder would take it (`VoiceSetup`).
            let reference =
                session.captureProcessing == .none
                ? nil : session.route.outputs.first.flatMap { engine.output(port: $0)?.group }
            preRolls.keep(
                app: app, port: port, inputGroup: engine.inputGroup(port: port),
                channels: session.preferences.inputChannels(ofPort: decl.channels), seconds: seconds,
                reference: reference, evenWithoutPreRoll: trigger != nil)
        }
        return keeping
    }

    // MARK: Level-triggered takes

    /// `record.start` with `triggerDB`: arms `app`'s recorder (event `recording`, state
    /// `armed`); takes start from the tick. `activate` activates the session (the store's).
    func arm(
        _ start: RecordStartRequest, triggerDB: Double, activate: () throws -> Void
    ) throws -> [(String, JSONValue)] {
        let app = start.app
        guard start.bus == nil else {
            throw SessionError(.badParam, "a level trigger watches an input, not a bus; leave out --bus or --trigger")
        }
        guard ArmedTrigger.triggerRange.contains(triggerDB) else {
            throw SessionError(.badParam, "--trigger \(triggerDB) is not a level from -120 to 0 dBFS; use e.g. -30")
        }
        let hold = start.holdSeconds ?? ArmedTrigger.defaultHoldSeconds
        guard ArmedTrigger.holdRange.contains(hold) else {
            throw SessionError(.badParam, "--hold \(hold) is not from 0 to 86400 seconds")
        }
        guard armed[app] == nil else {
            throw SessionError(.badParam, "\(app) is armed already; `recctl record stop \(app)` disarms it")
        }
        let session = try store.session(app)
        if !session.isActive { try activate() }
        if let input = start.input { try store.checkRecordInput(app: app, port: input) }
        guard start.input != nil || store.sessions[app]?.route.inputs.first != nil else {
            throw SessionError(
                .resourceNotAvailable, "\(app) has no input route (no available input suits it); see `recctl routes`")
        }
        let trigger = ArmedTrigger(
            app: app, stream: start.stream, input: start.input, triggerDB: triggerDB, holdSeconds: hold)
        armed[app] = trigger
        _ = updatePreRollTaps()
        if let held = preRolls.held[app] {
            armed[app]?.scanFrom = held.tap.readPosition
            armed[app]?.scanned = held.serial
        }
        announceArmed(trigger)
        Log.info("\(app): armed at \(JSONValue.format(triggerDB)) dBFS, hold \(Readable.duration(hold))")
        return [("armed", .object(trigger.fields))]
    }

    /// A declared recorder with `trigger_db` is armed, not started (unattended takes). Whether
    /// it has a trigger (armed now or already).
    func armDeclared(app: String, input: String?) throws -> Bool {
        guard let decl = config.sessions.first(where: { $0.app == app }), let triggerDB = decl.triggerDB else {
            return false
        }
        if armed[app] == nil {
            _ = try arm(
                RecordStartRequest(app: app, input: input, triggerDB: triggerDB, holdSeconds: decl.triggerHoldSeconds),
                triggerDB: triggerDB, activate: {})
        }
        return true
    }

    /// `record.stop` of an armed app: no more takes. Whether it was armed.
    func disarm(_ app: String) -> Bool {
        armed.removeValue(forKey: app) != nil
    }

    private func announceArmed(_ trigger: ArmedTrigger) {
        let port = preRolls.held[trigger.app]?.port ?? trigger.input
        events.broadcast(
            .recording(
                RecordingEvent(
                    app: trigger.app, stream: trigger.stream ?? port, state: .armed, port: port,
                    triggerDB: trigger.triggerDB, holdSeconds: trigger.holdSeconds)))
    }

    /// One armed recorder, from the tick: look for the crossing that starts a take, or for the
    /// end of the running take's hold.
    private func stepTrigger(_ app: String) {
        guard var trigger = armed[app], let held = preRolls.held[app],
            let rate = engine.audio.sampleRate, let firstFrameTime = held.tap.firstFrameTime
        else { return }
        let tap = held.tap
        let holdFrames = Int(trigger.holdSeconds * Double(rate))
        if var take = trigger.take {
            defer { armed[app] = trigger }
            guard recorders.isRunning(take.recorder) else {
                // Stopped by itself (disk full) or by the policy: armed again from now. A take
                // is not resumed as a continuous recording after an interruption, and one whose
                // input route changed ends there (the trigger watches the new input).
                _ = recovery.takeSuspended(of: app)
                if let successor = take.recorder.successor, recorders.isRunning(successor) {
                    recorders.stop(successor, reason: .routeChange)
                }
                trigger.take = nil
                trigger.scanFrom = tap.readPosition + tap.availableToRead
                trigger.notBefore = trigger.scanFrom
                trigger.scanned = held.serial
                announceArmed(trigger)
                return
            }
            /// Frames from the take's first frame to `position` of this tap.
            func offset(_ position: Int) -> Int {
                Int(Int32(bitPattern: (firstFrameTime &+ UInt32(truncatingIfNeeded: position)) &- take.startFrameTime))
            }
            if take.watched != held.serial {
                // Frames before this tap's first were not looked at: counted as loud.
                take.watched = held.serial
                take.watchFrom = tap.readPosition
                take.lastAbove = max(take.lastAbove, offset(tap.readPosition) - 1)
            }
            let scan = tap.scanLevel(from: take.watchFrom, reaching: trigger.threshold)
            take.watchFrom = scan.scannedTo
            if let last = scan.last { take.lastAbove = max(take.lastAbove, offset(last)) }
            let end = take.lastAbove + 1 + holdFrames
            take.recorder.source.limit(toFrames: end)
            if offset(scan.scannedTo) >= end {
                recorders.stop(take.recorder, reason: EndReason(rawValue: "triggerHold"))
                trigger.take = nil
                trigger.scanFrom = end - offset(0)
                trigger.notBefore = trigger.scanFrom
                trigger.scanned = held.serial
                announceArmed(trigger)
                Log.info(
                    "\(app): take ended \(Readable.duration(trigger.holdSeconds)) after the level fell below "
                        + "\(JSONValue.format(trigger.triggerDB)) dBFS")
            } else {
                trigger.take = take
            }
            return
        }
        if trigger.scanned != held.serial {
            trigger.scanned = held.serial
            trigger.scanFrom = tap.readPosition
            trigger.notBefore = 0
        }
        let scan = tap.scanLevel(from: trigger.scanFrom, reaching: trigger.threshold)
        trigger.scanFrom = scan.scannedTo
        armed[app] = trigger
        guard let crossing = scan.first, var last = scan.last else { return }
        let from = max(tap.readPosition, crossing - held.frames, trigger.notBefore)
        // The next tap first, then what came meanwhile: the frames no tap's scan sees are
        // at most the period under way.
        preRolls.prepareNext(app: app)
        if let later = tap.scanLevel(from: scan.scannedTo, reaching: trigger.threshold).last { last = later }
        preRolls.setTakeFrom(app: app, position: from)
        let spec = RecorderSpec(
            app: app, stream: trigger.stream ?? held.port, port: held.port, followsRoute: trigger.input == nil)
        let stream: RecorderStream
        do {
            stream = try host.startTake(spec)
        } catch {
            Log.warning(
                "\(app): the level reached \(JSONValue.format(trigger.triggerDB)) dBFS but the take could not start: "
                    + "\(error)")
            return
        }
        if stream.tap !== tap {
            Log.warning("\(app): the take started without its pre-roll (the input's tap did not fit)")
        }
        let take = ArmedTrigger.Take(
            recorder: stream, startFrameTime: firstFrameTime &+ UInt32(truncatingIfNeeded: from),
            lastAbove: last - from)
        stream.source.limit(toFrames: take.lastAbove + 1 + holdFrames)
        armed[app]?.take = take
        Log.info(
            "\(app): the level reached \(JSONValue.format(trigger.triggerDB)) dBFS; take started with "
                + "\(Readable.length(frames: crossing - from, sampleRate: engine.audio.sampleRate)) before it"
        )
    }
}
