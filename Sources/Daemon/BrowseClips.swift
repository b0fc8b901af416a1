// The archive browser's clips (`/api/export`, `/api/listen`, `/api/loudness`): each is made by
// recd's one exporter (`ArchiveService.export`, exactly what `recctl archive export` runs),
// with the HTTP caller's uid and groups, into a file of recd's own in `<state_dir>/http-clips/`
// (0700, emptied at start), which the listener then serves with its length known and unlinks.
//
// Bounds, where a request enters: the range's length (`longestClipSeconds` for a download,
// `listenSeconds` per listening request, `LoudnessReportBuilder.longestSeconds` for a report);
// clips made at once per caller (`perCaller`) and in all (`atOnce`); finished jobs' proofs kept
// (`keptProofs`, for `keptSeconds`). A job's progress is its file's size against an estimate
// from the index (`expectedBytes`), as the clip is written.
//
// Threads: the listener's connection threads; the export itself runs on recd's slow worker and
// the request only waits for it (at most `longestWaitSeconds`); state under one Mutex.
import Archive
import ControlProtocol
import Foundation
import HTTPServer
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

final class BrowseClips: Sendable {
    static let longestClipSeconds: Int64 = 6 * 3600
    static let listenSeconds: Int64 = 600
    static let perCaller = 2
    static let atOnce = 4
    static let keptProofs = 64
    static let keptSeconds = 900.0
    static let longestWaitSeconds = 1800.0
    /// The control connection's name for the browser's jobs: no control client has it, so the
    /// worker never cancels them for a client that went away.
    static let client = ClientID(rawValue: UInt64.max)

    struct Job: Sendable {
        /// Whose job it is (`HTTPCaller.owner`).
        var owner: String
        var path: String
        var expectedBytes: Int64
        var state: String
        var proof: String?
        var fileName: String
        /// Why it failed, as the refusal said (for the page, whose download cannot show it).
        var message: String?
        var finishedAt: Double?
    }

    private struct State {
        var jobs: [String: Job] = [:]
        var running: [String: Int] = [:]
        var total = 0
        /// Numbers the clips' files (a caller's name never becomes a path).
        var made = 0
    }

    let directory: String
    private let state = Mutex(State())

    init(stateDirectory: String) {
        directory = stateDirectory + "/http-clips"
        // Left by a recd that stopped mid-export: nobody can fetch them any more.
        for path in FileSystem.files(under: directory, withSuffix: ".clip") { try? FileSystem.removeIfPresent(path) }
        try? FileSystem.makeDirectories(directory, mode: 0o700)
    }

    /// Takes a slot for `owner`, or the 429 that says to wait.
    func begin(job id: String, owner: String, fileName: String, expectedBytes: Int64) -> HTTPResponse? {
        let now = Self.now()
        return state.withLock { state -> HTTPResponse? in
            state.jobs = state.jobs.filter { $0.value.finishedAt.map { now - $0 < Self.keptSeconds } ?? true }
            if state.jobs.count >= Self.keptProofs,
                let oldest = state.jobs.filter({ $0.value.finishedAt != nil }).min(by: {
                    ($0.value.finishedAt ?? 0) < ($1.value.finishedAt ?? 0)
                })
            {
                state.jobs[oldest.key] = nil
            }
            guard state.running[owner, default: 0] < Self.perCaller else {
                return .error(
                    429,
                    "Too Many Requests: \(owner) has \(Self.perCaller) clips being made already, the most one caller "
                        + "may; wait for them to finish, then ask again", headers: [("Retry-After", "2")])
            }
            guard state.total < Self.atOnce, state.jobs.count < Self.keptProofs else {
                return .error(
                    503, "Service Unavailable: recd is making \(Self.atOnce) clips already; retry in a few seconds",
                    headers: [("Retry-After", "2")])
            }
            // Keyed by caller too: one caller cannot learn another's job ids by colliding with them.
            guard state.jobs[Self.key(id, owner)] == nil else {
                return .error(409, "Conflict: job \(id) exists already; choose another job= (or leave it out)")
            }
            state.running[owner, default: 0] += 1
            state.total += 1
            state.made += 1
            state.jobs[Self.key(id, owner)] = Job(
                owner: owner, path: directory + "/" + String(state.made) + "-" + id + ".clip", expectedBytes: expectedBytes,
                state: "running",
                proof: nil,
                fileName: fileName, message: nil, finishedAt: nil)
            return nil
        }
    }

    /// The job is over (`state`: `done` or `failed`); its slot is free.
    func end(job id: String, owner: String, state ending: String, proof: String?, message: String? = nil) {
        let now = Self.now()
        state.withLock { state in
            guard var job = state.jobs[Self.key(id, owner)] else { return }
            state.running[job.owner, default: 1] -= 1
            state.total -= 1
            job.state = ending
            job.proof = proof
            job.message = message
            job.finishedAt = now
            state.jobs[Self.key(id, owner)] = job
        }
    }

    func job(_ id: String, owner: String) -> Job? {
        state.withLock { state in state.jobs[Self.key(id, owner)] }
    }

    /// `/api/export/progress`: bytes written so far against the estimate (at most 99 % until done).
    func progress(_ id: String, owner: String) -> JSONValue? {
        guard let job = job(id, owner: owner) else { return nil }
        let written = job.state == "running" ? (FileSystem.size(of: job.path) ?? 0) : 0
        let fraction =
            job.state == "running"
            ? min(0.99, job.expectedBytes > 0 ? Double(written) / Double(job.expectedBytes) : 0) : 1
        return [
            "job": .string(id), "state": .string(job.state), "bytes": .number(Double(written)),
            "expectedBytes": .number(Double(job.expectedBytes)),
            "fraction": .number((fraction * 1000).rounded() / 1000),
            "file": .string(job.fileName), "proof": .bool(job.proof != nil), "message": JSONValue(job.message),
        ]
    }

    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// A job id as a caller may choose it: 1 to 40 letters, digits, `-` or `_`.
    static func validJob(_ text: String) -> Bool {
        (1...40).contains(text.utf8.count)
            && text.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D
                    || c == 0x5F
            }
    }

    private static func key(_ id: String, _ owner: String) -> String { "\(owner)/\(id)" }

    static func newJobID() -> String {
        "j" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }
}
