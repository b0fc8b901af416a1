// Which JACK clients are RTP streams that PipeWire receives, for the FROM column of `routes`.
//
// PipeWire's module-rtp-source (0.3.65) makes one node for each session a SAP announcement brings
// and names it after the session (the SDP's `s=`): through PipeWire's libjack it is a client of
// that name, like any application. Only the node's properties tell it apart (`rtp.session`,
// `rtp.origin` = the SDP's `o=`: "USER SESSION-ID VERSION IN IP4 ADDRESS"), and libjack does not
// show them. So recd asks PipeWire: `pw-dump` (pipewire-bin) prints every object as JSON, and this
// file reads the nodes that carry `rtp.session`. It runs on the slow worker (it takes 10 to 30 ms,
// and PipeWire could be slow to answer), its output kept in memory (`runCapturingOutput`), whenever
// JACK ports came or went on a PipeWire server; `routes` shows what the last run found.
//
// Threads: `RTPSessionDirectory`'s methods run on the control thread; the `pw-dump` job on the slow
// worker; `PipeWireDump` is pure.
import AudioEngine
import Foundation
import Platform
import SystemSupport

/// An RTP session as PipeWire's rtp-source announces it: the session's name and its sender.
struct RTPSession: Hashable, Sendable {
    /// The SDP's session name (`s=`; module-rtp-sink's `sess.name`).
    var name: String
    /// The sender's address: the SDP origin's (`o=`; nil when it announced 0.0.0.0, a
    /// module-rtp-sink without `source.ip`); for the sender's own node, where it sends.
    var address: String?
    /// A receiver's node: the SDP origin line (`rtp.origin`), which its SAP announcements carry
    /// too (the RTP monitor matches them by it); nil for a sender's own node.
    var origin: String? = nil
    /// A receiver's node: its buffer (`sess.latency.msec`), when the node says.
    var latencyMilliseconds: Int? = nil
}

/// Reading `pw-dump`'s JSON. Pure.
enum PipeWireDump {
    /// The most of `pw-dump`'s output read (a graph of a few hundred objects is under 1 MiB).
    static let maximumBytes = 8 << 20

    /// The RTP sessions among the nodes of a `pw-dump` (a JSON array of objects), by the JACK
    /// client name each node shows as. Objects that are not nodes, nodes without `rtp.session`,
    /// and anything that is not the shape pw-dump prints are passed over; text that is not JSON
    /// gives none.
    static func rtpSessions(json: Data) -> [String: RTPSession] {
        guard let objects = try? JSONSerialization.jsonObject(with: json) as? [Any] else { return [:] }
        var sessions: [String: RTPSession] = [:]
        for case let object as [String: Any] in objects {
            guard (object["type"] as? String)?.hasSuffix(":Node") == true,
                let props = (object["info"] as? [String: Any])?["props"] as? [String: Any],
                let session = props["rtp.session"] as? String,
                let client = jackClientName(props)
            else { continue }
            // A receiver's node names its sender (the SDP origin); a sender's own (module-rtp-sink)
            // where it sends.
            let address =
                (props["rtp.origin"] as? String).flatMap(senderAddress(origin:))
                ?? (props["rtp.destination.ip"] as? String)
            let latency =
                (props["sess.latency.msec"] as? Int) ?? (props["sess.latency.msec"] as? String).flatMap { Int($0) }
            sessions[client] = RTPSession(
                name: session, address: address, origin: props["rtp.origin"] as? String,
                latencyMilliseconds: latency.flatMap { (1...10_000).contains($0) ? $0 : nil })
        }
        return sessions
    }

    /// The JACK client name PipeWire's libjack gives a node (pipewire-jack 0.3.65): its
    /// description, else its nick, else its name; prefixed with its application's name and `/`
    /// when it has one that differs.
    static func jackClientName(_ props: [String: Any]) -> String? {
        let name =
            (props["node.description"] as? String) ?? (props["node.nick"] as? String) ?? (props["node.name"] as? String)
        guard let name, !name.isEmpty else { return nil }
        guard let application = props["application.name"] as? String, application != name else { return name }
        return application + "/" + name
    }

    /// The address of an SDP origin line's value (`USER SESSION-ID VERSION IN IP4|IP6 ADDRESS`);
    /// nil for another shape or an unspecified address.
    static func senderAddress(origin: String) -> String? {
        let fields = origin.split(separator: " ")
        guard fields.count == 6, fields[3] == "IN", fields[4] == "IP4" || fields[4] == "IP6" else { return nil }
        let address = String(fields[5])
        return address == "0.0.0.0" || address == "::" ? nil : address
    }
}

/// The RTP sessions PipeWire receives, as the last `pw-dump` showed them; owned by the engine
/// controller. Control thread only (`@unchecked Sendable`: the worker's completion, which captures
/// it, runs there too).
final class RTPSessionDirectory: @unchecked Sendable {
    /// pipewire-bin's; without it (a machine with jackd2 only) nothing is asked.
    static let pwDump = "/usr/bin/pw-dump"
    /// How long one `pw-dump` may take.
    static let timeLimit = 5.0

    /// By JACK client name.
    private(set) var sessions: [String: RTPSession] = [:]
    private var running = false
    /// Ports changed while a run was under way: one more run when it ends.
    private var again = false
    private var loggedFailure = false
    /// Told which receivers' streams to listen to after each run (nil: no monitor).
    private let monitor: RTPMonitor?

    init(monitor: RTPMonitor?) { self.monitor = monitor }

    /// What the monitor listens to: the receivers' nodes, by SDP origin.
    static func wanted(_ sessions: [String: RTPSession]) -> [String: RTPMonitor.Wanted] {
        var wanted: [String: RTPMonitor.Wanted] = [:]
        for (client, session) in sessions {
            guard let origin = session.origin else { continue }
            wanted[origin] = RTPMonitor.Wanted(
                client: client, session: session.name, address: session.address,
                latencyMilliseconds: session.latencyMilliseconds ?? RTPMonitor.defaultLatencyMilliseconds)
        }
        return wanted
    }

    /// `origin` as `routes` shows it: a client that is an RTP session's node becomes `.rtp`.
    func origin(_ origin: PortOrigin) -> PortOrigin {
        guard case .local(let client) = origin, let session = sessions[client] else { return origin }
        return .rtp(session: session.name, address: session.address, client: client)
    }

    /// Reads PipeWire's nodes again on `worker` (JACK ports came or went). `remote`: the PipeWire
    /// server recd's libjack reached. Nothing on jackd2, where there is nothing to ask.
    func refresh(remote: String, onPipeWire: Bool, worker: SlowRequestWorker) {
        guard onPipeWire, FileSystem.isExecutableFile(Self.pwDump) else { return }
        guard !running else {
            again = true
            return
        }
        running = true
        let environment = Self.environment()
        worker.submit(for: nil) { _ -> Result<[String: RTPSession], PWDumpFailure> in
            Self.read(remote: remote, environment: environment)
        } completion: { [weak self] result in
            guard let self else { return }
            running = false
            switch result {
            case .success(let found):
                if found != sessions { Log.info("RTP sessions PipeWire receives: \(Self.describe(found))") }
                sessions = found
                monitor?.watch(Self.wanted(found))
                loggedFailure = false
            case .failure(let failure):
                // Once until a run succeeds again: ports come and go often.
                if !loggedFailure { Log.warning("\(failure.message); recctl routes shows RTP streams as local") }
                loggedFailure = true
            }
            if again {
                again = false
                refresh(remote: remote, onPipeWire: onPipeWire, worker: worker)
            }
        }
    }

    struct PWDumpFailure: Error { var message: String }

    /// One `pw-dump` of `remote`, its output read and parsed. Worker thread.
    private static func read(
        remote: String, environment: [String: String]
    ) -> Result<[String: RTPSession], PWDumpFailure> {
        do {
            // One byte more than recd reads: a dump that fills it is too large, not cut short.
            let (outcome, output) = try ChildProcess.runCapturingOutput(
                path: pwDump, arguments: ["-N", "-r", remote], environment: environment, timeLimit: timeLimit,
                maximumOutputBytes: PipeWireDump.maximumBytes + 1)
            guard outcome.succeeded else {
                let how = outcome.timedOut ? "took over \(Int(timeLimit)) s" : "ended with \(outcome.termination)"
                return .failure(PWDumpFailure(message: "\(pwDump) -r \(remote) \(how)"))
            }
            guard output.count <= PipeWireDump.maximumBytes else {
                return .failure(PWDumpFailure(message: "\(pwDump) wrote more than the \(PipeWireDump.maximumBytes) bytes recd reads"))
            }
            return .success(PipeWireDump.rtpSessions(json: Data(output)))
        } catch {
            return .failure(PWDumpFailure(message: "cannot run \(pwDump) (Debian package pipewire-bin): \(error)"))
        }
    }

    /// What `pw-dump` needs of recd's environment to find the PipeWire recd's libjack found.
    private static func environment() -> [String: String] {
        let mine = ProcessInfo.processInfo.environment
        var environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        for key in ["XDG_RUNTIME_DIR", "PIPEWIRE_RUNTIME_DIR", "PIPEWIRE_REMOTE", "HOME"] {
            if let value = mine[key] { environment[key] = value }
        }
        return environment
    }

    private static func describe(_ sessions: [String: RTPSession]) -> String {
        guard !sessions.isEmpty else { return "none" }
        return sessions.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value.name)@\($0.value.address ?? "?"))" }
            .joined(separator: ", ")
    }
}
