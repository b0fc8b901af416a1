// The archive browser's routes (docs/status-page.md "The archive in the browser"):
// `GET /browse` and `/loudness` (the pages), `/api/feeds` (what the archive holds),
// `/api/range` (typed times resolved, the segments in between), `/api/export` (a clip as
// FLAC or WAV, a download), `/api/export/progress` and `/api/export/proof` (a job's progress
// and its proof), `/api/listen` (a FLAC clip to play, the open segment included) and
// `/api/loudness` (the loudness report of a day or a range, JSON or CSV) and `/api/report` (a
// day's printed proof, BrowseReport.swift).
//
// Every route that serves audio or measures it asks `HTTPCallerRule` who the caller is and
// serves only what that caller may read, as `/archive/` does (HTTPCaller.swift); the clip
// itself is `ArchiveService.export`'s, with the caller's uid and groups (BrowseClips.swift).
// Times are typed in the forms `recctl archive export` takes (`TimeForms`), in UTC.
//
// Threads: the listener's connection threads; they wait for the control thread (the export's
// start) and the worker (the clip), never the other way round.
import Archive
import Codec
import ControlProtocol
import Foundation
import HTTPServer
import Platform
import SessionPolicy
import Synchronization
import SystemSupport

extension HTTPEndpoints {
    func addBrowse(to routes: inout HTTPServer.Routes) {
        let browse = BrowseService(
            coordinator: coordinator, control: control, callers: callers,
            clips: BrowseClips(stateDirectory: coordinator.config.daemon.stateDir))
        routes.add("/browse") { _ in Self.page(BrowseAssets.html) }
        routes.add("/loudness") { _ in Self.page(LoudnessAssets.html) }
        routes.add("/api/feeds") { request in browse.feeds(request) }
        routes.add("/api/range") { request in browse.range(request) }
        routes.add("/api/export") { request in browse.export(request, listening: false) }
        routes.add("/api/listen") { request in browse.export(request, listening: true) }
        routes.add("/api/export/progress") { request in browse.progress(request) }
        routes.add("/api/export/proof") { request in browse.proof(request) }
        routes.add("/api/loudness") { request in browse.loudness(request) }
        routes.add("/api/report") { request in browse.report(request) }
    }

    static func page(_ html: String) -> HTTPResponse {
        HTTPResponse(
            contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")],
            body: .bytes(Array(html.utf8)))
    }
}

/// What the browser's routes share: the coordinator (for the export), the clip jobs, and an
/// index connection of their own (feeds, the segments of a range).
struct BrowseService: Sendable {
    let coordinator: SessionCoordinator
    let control: ControlThreadQuery
    let callers: HTTPCallerRule
    let clips: BrowseClips
    let archive: BrowseIndex
    let reports = ReportSlots()

    init(coordinator: SessionCoordinator, control: ControlThreadQuery, callers: HTTPCallerRule, clips: BrowseClips) {
        self.coordinator = coordinator
        self.control = control
        self.callers = callers
        self.clips = clips
        archive = BrowseIndex(directory: coordinator.config.archive.dir)
    }

    /// A request's feed and range, checked: 400 with what to do otherwise.
    struct Range {
        var app: String
        var stream: String?
        var from: UTCTime
        var to: UTCTime
        var feed: String { stream.map { "\(app)/\($0)" } ?? app }
    }

    static func badRequest(_ message: String) -> HTTPResponse { .error(400, "Bad Request: " + message) }

    /// `feed=APP/STREAM` (or `APP`), `from=`, `to=` in recctl's forms (UTC), or `date=YYYY-MM-DD`
    /// (that UTC day, up to now); `longest` seconds at most.
    static func parseRange(_ request: HTTPRequest, longest: Int64, defaultLength: Int64? = nil)
        -> Result<Range, HTTPResponse>
    {
        guard let feed = request.query["feed"], !feed.isEmpty else {
            return .failure(badRequest("name a feed: feed=APP/STREAM, as `recctl archive list` names it (/api/feeds)"))
        }
        let parts = feed.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.allSatisfy({ isName($0) }) else {
            return .failure(
                badRequest(
                    "feed \"\(String(feed.prefix(80)))\" is no feed name: write APP/STREAM with letters, digits, "
                        + "'.', '_' or '-' (/api/feeds lists them)"))
        }
        let now = Date()
        let utc = TimeZone(identifier: "UTC") ?? TimeZone.current
        func time(_ key: String, _ text: String) -> Result<UTCTime, HTTPResponse> {
            let refusal: String
            do throws(TimeForms.Refusal) {
                let wire = try TimeForms.resolve(text, now: now, timeZone: utc)
                if let time = UTCTime(iso8601WithZone: wire) { return .success(time) }
                refusal = "is not a time"
            } catch .tooFarBack {
                refusal = "reaches back more than ten years"
            } catch .noSuchLocalTime {
                refusal = "is no time (no such day)"
            } catch {
                refusal = "is not a time"
            }
            return .failure(
                badRequest(
                    "\(key)=\"\(String(text.prefix(80)))\" \(refusal); write one of (UTC): \(TimeForms.forms)"))
        }
        let nowTime = UTCTime(microsecondsSinceEpoch: Int64((now.timeIntervalSince1970 * 1e6).rounded()))
        var from: UTCTime
        var to: UTCTime
        if let date = request.query["date"] {
            guard date.utf8.count == 10, case .success(let day) = time("date", date) else {
                return .failure(
                    badRequest("date=\"\(String(date.prefix(80)))\" is no day; write date=YYYY-MM-DD (UTC)"))
            }
            from = day
            to = min(day.advanced(bySeconds: 86_400), nowTime)
        } else {
            guard let fromText = request.query["from"] else {
                return .failure(badRequest("give from= (and to=), or date=YYYY-MM-DD; times as recctl takes them"))
            }
            switch time("from", fromText) {
            case .success(let value): from = value
            case .failure(let answer): return .failure(answer)
            }
            if let toText = request.query["to"] {
                switch time("to", toText) {
                case .success(let value): to = value
                case .failure(let answer): return .failure(answer)
                }
            } else if let defaultLength {
                to = min(from.advanced(bySeconds: Double(defaultLength)), nowTime)
            } else {
                return .failure(badRequest("give to= as well (the range's end), e.g. to=now"))
            }
        }
        guard to > from else {
            return .failure(badRequest("the range must end after it begins: to (\(to.iso8601)) is not after from"))
        }
        let (length, overflow) = to.nanosecondsSinceEpoch.subtractingReportingOverflow(from.nanosecondsSinceEpoch)
        guard !overflow, length <= longest * 1_000_000_000 else {
            return .failure(
                badRequest(
                    "the range is longer than \(Readable.duration(Double(longest))), the most one request "
                        + "may ask for; ask for it in parts"))
        }
        return .success(Range(app: parts[0], stream: parts.count > 1 ? parts[1] : nil, from: from, to: to))
    }

    static func isName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E
                    || c == 0x5F || c == 0x2D
            }
    }

    /// The caller, and whether it may read every indexed segment of `range` (403 otherwise).
    /// `action` ("listen", "export", "loudness", "range"): what the audit line says it got, through
    /// the one gate of audio (`HTTPCallerRule.audio`).
    func authorize(_ request: HTTPRequest, _ range: Range, action: String) -> Result<
        (HTTPCaller, [SegmentRecord]), HTTPResponse
    > {
        let records: [SegmentRecord]
        do throws(ArchiveError) {
            records = try archive.segments(app: range.app, stream: range.stream, from: range.from, to: range.to)
        } catch {
            return .failure(.error(503, "Service Unavailable: the archive index cannot be read (\(error.message))"))
        }
        let caller: HTTPCaller
        let shown = "\(range.feed) from \(range.from.iso8601) to \(range.to.iso8601)"
        // No segment in the range: no audio to gate; the exporter says there is no recording.
        let gate =
            records.first.map {
                callers.audio(request, feed: range.feed, path: $0.path, action: action, naming: shown)
            } ?? callers.caller(of: request)
        switch gate {
        case .caller(let found): caller = found
        case .refused(let answer): return .failure(answer)
        }
        for record in records where !caller.mayRead(record.path, feed: range.feed) {
            Log.debug("archive browser: \(range.feed) refused: \(caller.shown) may not read \(record.path)")
            return .failure(
                .error(
                    403,
                    "Forbidden: \(caller.shown) may not read \(FileSystem.fileName(of: record.path)), a segment of "
                        + "\(range.feed) in this range; \(caller.advice)"))
        }
        return .success((caller, records))
    }

    func feeds(_ request: HTTPRequest) -> HTTPResponse {
        do throws(ArchiveError) {
            return HTTPEndpoints.json(["feeds": .array(try archive.feeds().map { .string($0) })])
        } catch {
            return .error(503, "Service Unavailable: the archive index cannot be read (\(error.message))")
        }
    }

    /// `/api/range`: the typed times resolved (UTC) and the finished segments in between.
    func range(_ request: HTTPRequest) -> HTTPResponse {
        let range: Range
        switch Self.parseRange(request, longest: Int64(LoudnessReportBuilder.longestSeconds)) {
        case .success(let value): range = value
        case .failure(let answer): return answer
        }
        let records: [SegmentRecord]
        switch authorize(request, range, action: "range") {
        case .success(let found): records = found.1
        case .failure(let answer): return answer
        }
        return HTTPEndpoints.json([
            "feed": .string(range.feed), "from": .string(range.from.iso8601), "to": .string(range.to.iso8601),
            "seconds": .number(Double(range.to.nanosecondsSinceEpoch - range.from.nanosecondsSinceEpoch) / 1e9),
            "segments": .array(
                records.map { record in
                    [
                        "start": .string(record.startTime.iso8601),
                        "end": .string(record.endTime.iso8601), "stream": .string(record.stream),
                        "loudnessLUFS": record.loudness.integratedLUFS.map { .number($0) } ?? .null,
                    ]
                }),
        ])
    }
}
