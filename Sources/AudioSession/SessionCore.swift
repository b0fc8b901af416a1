// The session's connections and its thread: one request connection (calls, serialized), one
// watch connection read by the "audiosession" thread, which delivers notifications and
// reconnects after recd went away.
import ControlClient
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import Synchronization

final class SessionCore: Sendable {
    let app: String
    let candidates: [String]
    let micUsage: String?

    /// The request connection; nil until the first call or after a failure. Held while a
    /// call waits for its reply: calls are serialized.
    private let requests = Mutex<Connection?>(nil)
    private let configuration = Mutex(AppliedConfiguration())
    private let observers = Mutex<(next: Int, handlers: [Int: @Sendable (AudioSessionNotification) -> Void])>((0, [:]))
    private let closed = Atomic<Bool>(false)
    private let thread = Mutex<NamedThread?>(nil)
    /// Set once the first watch is up (or the first attempt failed): `start` waits for it.
    private let firstAttempt = DispatchSemaphore(value: 0)

    init(app: String, candidates: [String], micUsage: String?) {
        self.app = app
        self.candidates = candidates
        self.micUsage = micUsage
    }

    func start() {
        do {
            let started = try NamedThread(name: "audiosession") { [self] in run() }
            thread.withLock { $0 = started }
            _ = firstAttempt.wait(timeout: .now() + 1)
        } catch {
            // No thread: calls still work; notifications do not come.
            FileHandle.standardError.write(Data("audiosession: no notification thread: \(error.message)\n".utf8))
        }
    }

    func close() {
        guard !closed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let running = thread.withLock { thread -> NamedThread? in
            defer { thread = nil }
            return thread
        }
        running?.join()
        requests.withLock { $0 = nil }
    }

    func remember(_ change: (inout AppliedConfiguration) -> Void) { configuration.withLock { change(&$0) } }

    // MARK: Calls

    /// Sends `command` and returns its successful reply; recd's error, or mediaServicesFailed
    /// when recd cannot be reached.
    func call(_ command: Command) throws(SessionError) -> JSONValue {
        try exchange(what: command.op.rawValue) { try $0.call(command) }
    }

    private func exchange(what: String, _ send: (Connection) throws -> JSONValue) throws(SessionError) -> JSONValue {
        let outcome: Result<JSONValue, SessionError> = requests.withLock { connection in
            // A connection that failed is dropped; one more try on a fresh one covers a recd
            // that restarted since the last call.
            // A kept connection with something to read was closed by recd meanwhile (idle).
            if connection?.hasUnsolicitedInput == true { connection = nil }
            for attempt in 0..<2 {
                if connection == nil {
                    do {
                        connection = try Connection(candidates: candidates, interface: .swift)
                    } catch let error as Unreachable {
                        return .failure(unreachable(error.reason))
                    } catch {
                        return .failure(unreachable("\(error)"))
                    }
                }
                do {
                    return .success(try send(connection!))
                } catch ClientFailure.io(let message) {
                    connection = nil
                    if attempt == 1 { return .failure(unreachable(message)) }
                } catch {
                    connection = nil
                    return .failure(SessionError(.unspecified, "\(what): \(error)"))
                }
            }
            return .failure(unreachable("no answer"))
        }
        let reply = try outcome.get()
        if reply["ok"]?.boolValue != true {
            throw Wire.error(from: reply)
                ?? SessionError(.unspecified, "recd answered \(what) without ok: \(reply.jsonText)")
        }
        return reply
    }

    private func unreachable(_ reason: String) -> SessionError {
        SessionError(
            .mediaServicesFailed,
            "recd is not reachable (looked at \(candidates.joined(separator: ", ")): \(reason)); start recd "
                + "(systemctl start recd) — the session reconnects by itself and applies its configuration again")
    }

    func attach(jackClient: String, playPorts: [String], capturePorts: [String]) throws(SessionError)
        -> AudioSession.Attachment
    {
        let request = AttachRequest(app: app, client: jackClient, playPorts: playPorts, capturePorts: capturePorts)
        let reply = try call(.sessionAttach(request))
        do {
            return try AttachmentInfo(reply: reply, key: "attachment")
        } catch {
            throw SessionError(
                .unspecified,
                "recd sent an attachment this library cannot read: \(error.message); use a library as new as recd")
        }
    }

    /// `permission.request` on a connection of its own (the reply waits for an administrator),
    /// on a thread of its own; `completion` gets the decision.
    func requestPermission(_ completion: @escaping @Sendable (Result<RecordPermission, SessionError>) -> Void) {
        let app = self.app
        let candidates = self.candidates
        let body: @Sendable () -> Void = { [self] in
            let result: Result<RecordPermission, SessionError>
            do {
                let connection = try Connection(candidates: candidates, interface: .swift)
                let reply = try connection.call(.permissionRequest(app: app), timeout: nil)
                if reply["ok"]?.boolValue == true {
                    result = .success(
                        reply["state"]?.stringValue.flatMap(RecordPermission.init(rawValue:)) ?? .undetermined)
                } else {
                    result = .failure(Wire.error(from: reply) ?? SessionError(.unspecified, reply.jsonText))
                }
            } catch let error as Unreachable {
                result = .failure(unreachable(error.reason))
            } catch {
                result = .failure(unreachable("\(error)"))
            }
            completion(result)
        }
        do {
            _ = try NamedThread(name: "audiosession ask", body: body)
        } catch {
            completion(.failure(SessionError(.unspecified, "no thread to ask for permission: \(error.message)")))
        }
    }

    // MARK: Notifications

    func addObserver(_ handler: @escaping @Sendable (AudioSessionNotification) -> Void) -> ObserverToken {
        observers.withLock { state in
            state.next += 1
            state.handlers[state.next] = handler
            return ObserverToken(id: state.next)
        }
    }

    func removeObserver(_ token: ObserverToken) { _ = observers.withLock { $0.handlers.removeValue(forKey: token.id) } }

    private func deliver(_ notification: AudioSessionNotification) {
        let handlers = observers.withLock { state in state.handlers.sorted { $0.key < $1.key }.map(\.value) }
        for handler in handlers { handler(notification) }
    }

    // MARK: The session's thread

    /// Watches the app's events; when recd goes away, tells the app (mediaServicesWereLost),
    /// waits for it to come back, applies the configuration again and tells the app
    /// (mediaServicesWereReset).
    private func run() {
        var everConnected = false
        var signalled = false
        while !closed.load(ordering: .sequentiallyConsistent) {
            guard let watch = try? Connection(candidates: candidates, interface: .swift),
                (try? watch.call(.watch(app: app)))?["ok"]?.boolValue == true
            else {
                if !signalled {
                    signalled = true
                    firstAttempt.signal()
                }
                SystemClock.sleep(seconds: 0.1)
                continue
            }
            if everConnected {
                reapply()
                deliver(.mediaServicesWereReset)
            }
            everConnected = true
            if !signalled {
                signalled = true
                firstAttempt.signal()
            }
            readEvents(watch)
            if closed.load(ordering: .sequentiallyConsistent) { return }
            requests.withLock { $0 = nil }
            deliver(.mediaServicesWereLost)
        }
    }

    /// Delivers events until the connection fails or the session closes.
    private func readEvents(_ watch: Connection) {
        while !closed.load(ordering: .sequentiallyConsistent) {
            let message: JSONValue
            do {
                message = try watch.readMessage(timeout: 0.2)
            } catch ClientFailure.timedOut {
                continue
            } catch {
                return
            }
            // An event this library cannot read (a newer recd's shape) tells the app nothing.
            guard message["event"] != nil, message["id"] == nil, let event = try? Event(json: message) else {
                continue
            }
            mirror(event)
            if case .attachmentDetached(app, let client, let reason) = event, Self.endsForGood(reason) {
                remember { $0.attachments.removeAll { $0.client == client } }
            }
            // recd's JACK server came back: recd applied the sessions again, but attachments
            // end with the server; make ours again (those whose JACK client survived) before
            // the app hears of it. An app that reopened its JACK client attaches it itself.
            if event == .mediaServicesWereReset { reattach() }
            if let notification = AudioSessionNotification(event: event) { deliver(notification) }
        }
    }

    /// Whether an attachment that ended for `reason` is gone for good: not to be made again
    /// after a reconnection (one that ended with the connection or the server is).
    private static func endsForGood(_ reason: AttachmentEndReason) -> Bool {
        switch reason {
        case .detached, .clientGone, .sessionDeleted: true
        case .connectionClosed, .mediaServicesLost: false
        }
    }

    /// Keeps the remembered activation equal to recd's: an activation or deactivation, an
    /// interruption that began (the session is no longer active; the app activates it again
    /// itself when it ends), the loss of recd's JACK server. After a reconnection the session
    /// is activated again only if it was active when the connection was lost.
    private func mirror(_ event: Event) {
        switch event {
        case .session(app, let state):
            remember { $0.active = state == .active }
        case .sessionDeleted(app), .interruption(app, .began, _, _, _), .mediaServicesWereLost:
            remember { $0.active = false }
        default:
            break
        }
    }

    private func reattach() {
        for attachment in configuration.withLock({ $0.attachments }) {
            _ = try? attach(
                jackClient: attachment.client, playPorts: attachment.playPorts, capturePorts: attachment.capturePorts)
        }
    }

    /// Applies what the app asked for again, in the order the app would: configuration,
    /// preferences, attachments, activation. What fails is skipped (the app sees the state
    /// through the calls it makes next).
    private func reapply() {
        let wanted = configuration.withLock { $0 }
        if let settings = wanted.settings { _ = try? call(.sessionSet(settings)) }
        if let input = wanted.preferredInput { _ = try? call(.sessionPrefer(PreferenceChange(app: app, input: input))) }
        if wanted.speakerOverride { _ = try? call(.sessionOverride(app: app, speaker: true)) }
        if let prefers = wanted.prefersNoInterruptionsFromSystemAlerts {
            _ = try? call(.sessionPrefer(PreferenceChange(app: app, prefersNoInterruptionsFromSystemAlerts: prefers)))
        }
        if let prefers = wanted.prefersEchoCancelledInput {
            _ = try? call(.sessionPrefer(PreferenceChange(app: app, prefersEchoCancelledInput: prefers)))
        }
        reattach()
        if wanted.active { _ = try? call(.sessionActivate(app: app, hold: true)) }
    }
}
