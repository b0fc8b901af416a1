// Which JACK clients are RTP streams that PipeWire receives, for the FROM column of `routes` and
// for the RTP monitor: recd runs `pw-dump` (pipewire-bin), which prints every object as JSON, and
// NetworkAudio's `PipeWireDump` reads the nodes that carry `rtp.session`. It runs on the slow worker
// (it takes 10 to 30 ms, and PipeWire could be slow to answer), its output kept in memory
// (`runCapturingOutput`, at most `PipeWireDump.maximumBytes`), whenever JACK ports came or went on a
// PipeWire server; `routes` shows what the last run found.
//
// Threads: `RTPSessionDirectory`'s methods run on the control thread; the `pw-dump` job on the slow
// worker.
import AudioEngine
import Foundation
import NetworkAudio
import Platform
import SystemSupport

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
                return .failure(
                    PWDumpFailure(
                        message: "\(pwDump) wrote more than the \(PipeWireDump.maximumBytes) bytes recd reads"))
            }
            guard let sessions = PipeWireDump.rtpSessions(json: output) else {
                return .failure(
                    PWDumpFailure(
                        message: "\(pwDump) wrote what recd cannot read (not JSON, or nested deeper than "
                            + "\(PipeWireDump.maximumDepth))"))
            }
            return .success(sessions)
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
