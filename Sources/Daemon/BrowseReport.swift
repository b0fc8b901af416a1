// `/api/report?feed=APP/STREAM&date=YYYY-MM-DD`: the printed proof of one feed's UTC day, the
// page `recctl archive prove --report FILE.html` writes (ArchiveEvidence: `ProofCertificate`,
// `ProofReportPage`, `TimeStampProof`), proved by recd against the key it signs with and its own
// record of what it signed — not the archive's copies, which whoever could write the archive chose.
//
// Rights: the caller must be able to read every segment of the day the index holds (the gate of
// every archive route, `BrowseService.authorize`: the same 403), and, once proved, every chain the
// proof read and every file the page tells of, time-stamp tokens too (a file it cannot read fails
// the whole answer: 403): the page never tells more than `recctl archive prove` run by the caller
// itself would.
//
// Cost: the proof hashes the day's segments on the slow worker (`submitRequest`: at most
// `SlowRequestWorker.maxQueuedPerUser` waiting per uid), one report per caller at a time and
// `ReportSlots.atOnce` in all, its slot held until the prover's job ends (a request that gave up
// waiting does not free it); the request waits at most `ReportSlots.waitSeconds`.
//
// Threads: the listener's connection threads wait; the proof runs on the slow worker.
import Archive
import ArchiveEvidence
import ArchiveProof
import ControlProtocol
import HTTPServer
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

/// The reports being made, per caller (`HTTPCaller.owner`). Any thread, under one lock.
final class ReportSlots: Sendable {
    static let perCaller = 1
    static let atOnce = 2
    /// How long a request waits for its report before it gets 503.
    static let waitSeconds = 600.0

    private let taken = Mutex<[String: Int]>([:])

    /// A slot for `owner`, or the 429 that says why not.
    func begin(_ owner: String) -> HTTPResponse? {
        taken.withLock { taken in
            if taken[owner, default: 0] >= Self.perCaller {
                return .error(
                    429, "Too Many Requests: a proof report of yours is still being made; wait for it, then ask again",
                    headers: [("Retry-After", "5")])
            }
            if taken.values.reduce(0, +) >= Self.atOnce {
                return .error(
                    429,
                    "Too Many Requests: recd is making \(Self.atOnce) proof reports already, the most at once; "
                        + "ask again in a minute", headers: [("Retry-After", "10")])
            }
            taken[owner, default: 0] += 1
            return nil
        }
    }

    func end(_ owner: String) {
        taken.withLock { taken in
            let left = taken[owner, default: 1] - 1
            taken[owner] = left > 0 ? left : nil
        }
    }
}

/// One report's work: values only, run on the slow worker.
struct ReportJob: Sendable {
    var archiveDirectory: String
    var stateDirectory: String
    var tsaRoots: String?
    var app: String
    var stream: String
    var from: UTCTime
    var to: UTCTime
    var caller: HTTPCaller
    var feed: String { "\(app)/\(stream)" }

    struct Page: Sendable {
        var html: String
        var holds: Bool
    }

    /// The proof, the caller's rights over what it names, the page. Worker thread.
    func run() -> Result<Page, HTTPResponse> {
        let key: ArchivePublicKey
        do throws(ProofError) {
            key = try ArchiveSigningKey.load(path: stateDirectory + "/" + SegmentProver.keyFileName).publicKey
        } catch {
            return .failure(
                .error(
                    503,
                    "Service Unavailable: recd has no signing key (\(error.message)), so its archive proves nothing; "
                        + "see recd's log"))
        }
        let headsPath = stateDirectory + "/" + ChainHeads.directoryName
        let heads = FileSystem.isListableDirectory(headsPath) ? ChainHeads(directory: headsPath) : nil
        let scope = ProofScope(app: app, stream: stream, from: from.iso8601, to: to.iso8601)
        var report = ArchiveProver.prove(archiveDirectory: archiveDirectory, key: key, scope: scope, heads: heads)
        if let refusal = refusal(report) { return .failure(refusal) }
        let stamps = TimeStampProof.check(root: archiveDirectory, report: report, caFile: tsaRoots)
        var tokens = stamps.trustedTokens.map(\.token)
        for finding in stamps.findings {
            if case .badTimeStamp(let path, _) = finding { tokens.append(path) }
        }
        if let refusal = refusal(files: tokens) { return .failure(refusal) }
        report.findings += stamps.findings
        let record =
            heads != nil
            ? "checked against recd's record of what it signed (\(headsPath))"
            : "recd's record of what it signed (\(headsPath)) is missing: a chain cut short or put back is not caught"
        let certificate = ProofCertificate.archive(
            directory: archiveDirectory, scope: scope, key: key, keyGiven: false,
            keyNote: "the key recd signs with, from its state directory, not the archive's copy", record: record,
            roots: tsaRoots ?? "the system's roots", report: report, stamps: stamps,
            summary: ProofCertificate.summary(of: report, key: key),
            checkedBy:
                "recd \(recdVersion) on \(ProofCertificate.hostName()) for \(caller.shown), through the web console")
        return .success(Page(html: ProofReportPage.html(certificate), holds: report.holds))
    }

    /// 403 when the page would tell of a file the caller may not read: a chain the proof read (its
    /// findings are the chain's content), a segment in the range, a file found renamed or unchained
    /// (what its bytes hash to decides which).
    private func refusal(_ report: ProofReport) -> HTTPResponse? {
        var files = Array(report.entriesByChain.keys)
        for entries in report.inScope.values { files += entries.map(\.path) }
        for finding in report.findings {
            switch finding {
            case .renamed(let path, _), .unchained(let path): files.append(path)
            default: break
            }
        }
        return refusal(files: files)
    }

    /// 403 for the first of `files` (under the archive) that exists and the caller may not read;
    /// the time-stamp tokens the page tells of too.
    private func refusal(files: [String]) -> HTTPResponse? {
        for file in files {
            let path = archiveDirectory + "/" + file
            // A missing segment is a finding of the chain the caller may read, not a file to read.
            guard FileSystem.exists(path), !caller.mayRead(path, feed: feed) else { continue }
            Log.debug("archive browser: report of \(feed) refused: \(caller.shown) may not read \(file)")
            return .error(
                403,
                "Forbidden: \(caller.shown) may not read \(FileSystem.fileName(of: file)), which the proof of \(feed) "
                    + "names; \(caller.advice)")
        }
        return nil
    }
}

extension BrowseService {
    /// `/api/report?feed=APP/STREAM&date=YYYY-MM-DD`: the day's proof report, one HTML page.
    func report(_ request: HTTPRequest) -> HTTPResponse {
        guard let date = request.query["date"], DayQuery.date(date) != nil else {
            return Self.badRequest("give date=YYYY-MM-DD (UTC): the report proves one day of one feed")
        }
        let range: Range
        switch Self.parseRange(request, longest: 86_400) {
        case .success(let value): range = value
        case .failure(let answer): return answer
        }
        guard let stream = range.stream else {
            return Self.badRequest("name the stream too: feed=APP/STREAM (/api/feeds lists them)")
        }
        let caller: HTTPCaller
        switch authorize(request, range, action: "report") {
        case .success(let found):
            guard !found.1.isEmpty else {
                return .error(404, "Not Found: no finished segment of \(range.feed) on \(date) (UTC) in the index")
            }
            caller = found.0
        case .failure(let answer): return answer
        }
        if let refused = reports.begin(caller.owner) { return refused }
        let job = ReportJob(
            archiveDirectory: coordinator.config.archive.dir, stateDirectory: coordinator.config.daemon.stateDir,
            tsaRoots: coordinator.config.evidence.tsaCAFile, app: range.app, stream: stream, from: range.from,
            to: range.to, caller: caller)
        let (coordinator, reports, owner) = (coordinator, reports, caller.owner)
        let answer = control.askLater(timeout: ReportSlots.waitSeconds) {
            (finish: @escaping @Sendable (Result<ReportJob.Page, HTTPResponse>) -> Void) in
            do throws(SessionError) {
                try coordinator.worker.submitRequest(
                    for: BrowseClips.client, of: caller.uid, administrator: false, { _ in job.run() },
                    completion: { result in
                        reports.end(owner)
                        finish(result)
                    })
            } catch {
                reports.end(owner)
                finish(.failure(Self.refusal(error)))
            }
        }
        let page: ReportJob.Page
        switch answer {
        case nil:
            return .error(
                503,
                "Service Unavailable: the proof of \(range.feed) on \(date) took longer than "
                    + "\(Readable.duration(ReportSlots.waitSeconds)); `recctl archive prove --app \(range.app) "
                    + "--stream \(stream) --report FILE.html` proves it without a time limit")
        case .failure(let refusal)?: return refusal
        case .success(let made)?: page = made
        }
        Log.info(
            "archive browser: \(caller.shown) gets the proof report of \(range.feed) on \(date): "
                + (page.holds ? "holds" : "does not hold"))
        let fileName = "proof_\(range.app)_\(stream)_\(date).html"
        return HTTPResponse(
            contentType: "text/html; charset=utf-8",
            headers: [
                ("Cache-Control", "no-store"),
                // The page has no script, link or image: a policy that lets none run or load.
                (
                    "Content-Security-Policy",
                    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
                        + "frame-ancestors 'none'"
                ),
                ("Content-Disposition", "inline; filename=\"\(fileName)\""),
                ("X-Recd-Proof", page.holds ? "holds" : "does-not-hold"),
            ], body: .bytes(Array(page.html.utf8)))
    }
}
