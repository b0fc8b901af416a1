// Which JACK clients are RTP streams that PipeWire receives: `pw-dump` (pipewire-bin) prints
// every object as JSON, and `PipeWireDump` reads the nodes that carry `rtp.session`. Its output
// is kept in memory (`runCapturingOutput`, at most `PipeWireDump.maximumBytes`); a run takes 10
// to 30 ms, and PipeWire could be slow to answer, so `read` is for a worker thread, never the
// control thread. What the RTP monitor listens to follows from what a run found (`wanted`).
//
// Threads: `read` on the caller's (a worker); the rest is pure, any thread.
import Platform

public enum PipeWireRTPStreams {
    /// pipewire-bin's; without it (a machine with jackd2 only) nothing is asked.
    public static let pwDump = "/usr/bin/pw-dump"
    /// How long one `pw-dump` may take.
    public static let timeLimit = 5.0
    /// What of the caller's environment `pw-dump` needs to find the PipeWire the caller's
    /// libjack found.
    public static let environmentKeys = ["XDG_RUNTIME_DIR", "PIPEWIRE_RUNTIME_DIR", "PIPEWIRE_REMOTE", "HOME"]

    /// Why a run gave no sessions, in words for the log.
    public struct Failure: Error, Equatable, Sendable {
        public var message: String
    }

    /// Whether `pw-dump` is there to be run.
    public static var isInstalled: Bool { FileSystem.isExecutableFile(pwDump) }

    /// `pw-dump`'s environment: a fixed PATH and locale, and `environmentKeys` of `environment`.
    public static func environment(from environment: [String: String]) -> [String: String] {
        var chosen = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        for key in environmentKeys { chosen[key] = environment[key] }
        return chosen
    }

    /// One `pw-dump` of `remote` (the PipeWire server the caller's libjack reached), its output
    /// read and parsed. Blocks for the run: a worker thread.
    public static func read(remote: String, environment: [String: String]) -> Result<[String: AnnouncedRTPStream], Failure> {
        do {
            // One byte more than is read: a dump that fills it is too large, not cut short.
            let (outcome, output) = try ChildProcess.runCapturingOutput(
                path: pwDump, arguments: ["-N", "-r", remote], environment: environment, timeLimit: timeLimit,
                maximumOutputBytes: PipeWireDump.maximumBytes + 1)
            guard outcome.succeeded else {
                let how = outcome.timedOut ? "took over \(Int(timeLimit)) s" : "ended with \(outcome.termination)"
                return .failure(Failure(message: "\(pwDump) -r \(remote) \(how)"))
            }
            guard output.count <= PipeWireDump.maximumBytes else {
                return .failure(
                    Failure(message: "\(pwDump) wrote more than the \(PipeWireDump.maximumBytes) bytes recd reads"))
            }
            guard let sessions = PipeWireDump.rtpStreams(json: output) else {
                return .failure(
                    Failure(
                        message: "\(pwDump) wrote what recd cannot read (not JSON, or nested deeper than "
                            + "\(PipeWireDump.maximumDepth))"))
            }
            return .success(sessions)
        } catch {
            return .failure(Failure(message: "cannot run \(pwDump) (Debian package pipewire-bin): \(error)"))
        }
    }

    /// What the monitor listens to: the receivers' nodes, by SDP origin (a session without an
    /// origin cannot be told apart from another sender's, so it is not listened to).
    public static func wanted(_ sessions: [String: AnnouncedRTPStream]) -> [String: RTPMonitor.Wanted] {
        var wanted: [String: RTPMonitor.Wanted] = [:]
        for (client, session) in sessions {
            guard let origin = session.origin else { continue }
            wanted[origin] = RTPMonitor.Wanted(
                client: client, session: session.name, address: session.address,
                latencyMilliseconds: session.latencyMilliseconds ?? RTPMonitor.defaultLatencyMilliseconds)
        }
        return wanted
    }

    /// The sessions for the log: "client (name@address), ...", or "none".
    public static func describe(_ sessions: [String: AnnouncedRTPStream]) -> String {
        guard !sessions.isEmpty else { return "none" }
        return sessions.sorted { $0.key < $1.key }.map { "\($0.key) (\($0.value.name)@\($0.value.address ?? "?"))" }
            .joined(separator: ", ")
    }
}
