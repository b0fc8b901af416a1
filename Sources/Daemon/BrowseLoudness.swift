// `/api/loudness?feed=&date=|from=&to=&format=json|csv[&target=&tolerance=]`: a day's or a
// range's loudness report. The range is exported by recd's exporter (as FLAC, with the caller's
// rights, as `/api/export`) and measured by `LoudnessReportBuilder` over all its samples, the
// same code `recctl archive loudness` runs on the same clip: integrated loudness gated over the
// whole range, not an average of the segments' readings. Target and tolerance: `[archive]
// loudness_target` and `loudness_tolerance` unless the request names others.
//
// `BrowseIndex`: the browser's own connection to the index (feeds, a range's segments), as the
// status page has its own (StatusPage.swift).
//
// Threads: the listener's connection threads.
import Archive
import Codec
import ControlProtocol
import HTTPServer
import Platform
import Synchronization
import SystemSupport

extension BrowseService {
    func loudness(_ request: HTTPRequest) -> HTTPResponse {
        var range: Range
        switch Self.parseRange(request, longest: Int64(LoudnessReportBuilder.longestSeconds)) {
        case .success(let value): range = value
        case .failure(let answer): return answer
        }
        let format = request.query["format"] ?? "json"
        guard format == "json" || format == "csv" else {
            return Self.badRequest("format=\"\(String(format.prefix(20)))\" is neither json nor csv")
        }
        let settings = coordinator.config.archive
        var target = settings.loudnessTarget
        var tolerance = settings.loudnessTolerance
        if let text = request.query["target"] {
            guard let value = Double(text), ArchiveSection.loudnessTargetRange.contains(value) else {
                return Self.badRequest(
                    "target=\(String(text.prefix(20))) is no target; give LUFS from -60 to 0, e.g. -23")
            }
            target = value
        }
        if let text = request.query["tolerance"] {
            guard let value = Double(text), ArchiveSection.loudnessToleranceRange.contains(value) else {
                return Self.badRequest(
                    "tolerance=\(String(text.prefix(20))) is no tolerance; give LU from 0 to 20, e.g. 1")
            }
            tolerance = value
        }
        let (caller, records): (HTTPCaller, [SegmentRecord])
        switch authorize(request, range, action: "loudness") {
        case .success(let found): (caller, records) = found
        case .failure(let answer): return answer
        }
        // A day's report starts at its first finished segment, not in hours of silence before
        // it (which would cost decoding them); recctl starts at the same one.
        if let first = records.first?.startTime, first > range.from, first < range.to { range.from = first }
        let clip: Clip
        switch makeClip(request, range, format: "flac", proof: false, caller: caller, records: records) {
        case .success(let made): clip = made
        case .failure(let answer): return answer
        }
        let report: LoudnessReport
        do throws(MediaError) {
            let reader = try AudioFileReader(file: ReadOnlyFile(adopting: clip.file.relinquish(), name: clip.fileName))
            report = try LoudnessReportBuilder.measure(reader, target: target, tolerance: tolerance)
        } catch {
            return .error(500, "Internal Server Error: the clip could not be measured (\(error.message))")
        }
        let start = clip.reply.first { $0.0 == "start" }?.1.stringValue ?? range.from.iso8601
        let startTime = UTCTime(iso8601WithZone: start) ?? range.from
        let measured = Readable.duration(report.seconds)
        Log.info("archive browser: \(caller.shown) measures \(range.feed) from \(start) (\(measured))")
        if format == "csv" {
            let csv = report.csv(feed: range.feed, start: start) { index in
                startTime.advanced(bySeconds: Double(index + 1)).iso8601
            }
            return HTTPResponse(
                contentType: "text/csv; charset=utf-8",
                headers: [
                    ("Cache-Control", "no-store"),
                    ("Content-Disposition", "attachment; filename=\"loudness_\(clip.fileName.dropLast(5)).csv\""),
                ], body: .bytes(Array(csv.utf8)))
        }
        return HTTPEndpoints.json(Self.json(report, feed: range.feed, start: start))
    }

    static func json(_ report: LoudnessReport, feed: String, start: String) -> JSONValue {
        func number(_ value: Double?) -> JSONValue {
            value.flatMap { Double(LoudnessReport.fixed($0)) }.map { .number($0) } ?? .null
        }
        return [
            "feed": .string(feed), "from": .string(start), "seconds": number(report.seconds),
            "integratedLUFS": number(report.summary.integratedLUFS), "rangeLU": number(report.summary.rangeLU),
            "truePeakDBTP": number(report.summary.truePeakDBTP), "targetLUFS": number(report.target),
            "toleranceLU": number(report.tolerance), "secondsAbove": .number(Double(report.secondsAbove)),
            "shortTermLUFS": .array(report.shortTerm.map { number($0) }),
        ]
    }
}

/// The browser's connection to the index. Any connection thread (one at a time, under a lock).
final class BrowseIndex: @unchecked Sendable {
    private let indexPath: String
    private let lock = Mutex(())
    private var connection: ArchiveIndex?

    /// Feeds listed by `/api/feeds`: those with segments in the last `feedDays` days, read
    /// from at most `feedRows` rows.
    static let feedDays = 31.0
    static let feedRows = 50_000

    init(directory: String) { indexPath = directory + "/index.sqlite" }

    private func withIndex<T>(_ body: (ArchiveIndex) throws(ArchiveError) -> T) throws(ArchiveError) -> T {
        lock._unsafeLock()
        defer { lock._unsafeUnlock() }
        if connection == nil { connection = try ArchiveIndex(path: indexPath) }
        return try body(connection!)
    }

    func feeds() throws(ArchiveError) -> [String] {
        let since = UTCTime.now().advanced(bySeconds: -Self.feedDays * 86_400)
        let records = try withIndex { (index) throws(ArchiveError) in
            try index.list(since: since, limit: Self.feedRows)
        }
        return Set(records.filter { $0.group == 0 }.map { "\($0.app)/\($0.stream)" }).sorted()
    }

    func segments(app: String, stream: String?, from: UTCTime, to: UTCTime) throws(ArchiveError) -> [SegmentRecord] {
        try withIndex { (index) throws(ArchiveError) in
            try index.list(app: app, since: from, until: to, limit: 100_000)
        }.filter { $0.group == 0 && (stream == nil || $0.stream == stream) }
    }
}
