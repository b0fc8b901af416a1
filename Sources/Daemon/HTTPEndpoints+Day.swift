// The day view's routes: `GET /day` (the page, DayPageAssets.swift), `/api/day` (a feed's level
// overview, segments and journal for a day or the last hours) and `/api/events` (the journal
// with filters), added by `HTTPEndpoints.routes()`.
//
// Threads: the listener's connection threads. Everything is read from the index on the day
// view's own connection (`DayArchive`, WAL: never waits for the recorders' writes) and never
// reaches the control thread. Every parameter is bounded where it is read (`DayQuery`): a range
// is at most `maxDayHours` for /api/day and `maxEventDays` for /api/events, answers are capped
// (`maxSegments`, `maxEvents`) and say `truncated` — a year-long range costs one 400.
import Archive
import ControlProtocol
import Foundation
import HTTPServer
import Synchronization
import SystemSupport

extension HTTPEndpoints {
    /// Adds the day view's routes. Called once, while the listener is made.
    func addDay(to routes: inout HTTPServer.Routes) {
        let archive = DayArchive(directory: coordinator.config.archive.dir)
        routes.add("/day") { _ in
            HTTPResponse(
                contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")],
                body: .bytes(Array(DayPageAssets.html.utf8)))
        }
        routes.add("/api/day") { request in
            switch DayQuery.day(request.query, now: .now()) {
            case .failure(let refusal): return .error(400, "Bad Request: \(refusal.message)")
            case .success(let query):
                do throws(ArchiveError) {
                    return HTTPResponse(
                        contentType: "application/json", headers: [("Cache-Control", "no-store")],
                        body: .bytes(Array(try archive.day(query).utf8)))
                } catch {
                    return .error(503, "Service Unavailable: the archive index cannot be read (\(error.message))")
                }
            }
        }
        routes.add("/api/events") { request in
            switch EventsQuery.events(request.query, now: .now()) {
            case .failure(let refusal): return .error(400, "Bad Request: \(refusal.message)")
            case .success(let query):
                return Self.answer { () throws(ArchiveError) in try archive.events(query) }
            }
        }
    }

    private static func answer(_ build: () throws(ArchiveError) -> JSONValue) -> HTTPResponse {
        do throws(ArchiveError) {
            return json(try build())
        } catch {
            return .error(503, "Service Unavailable: the archive index cannot be read (\(error.message))")
        }
    }
}

/// What the index gives the day view. Any thread: the connection is used under `lock`, one
/// request at a time (hence `@unchecked Sendable`).
final class DayArchive: @unchecked Sendable {
    let indexPath: String
    private let lock = Mutex(())
    private var connection: ArchiveIndex?

    /// The most segments, overview runs and journal entries one answer holds.
    static let maxSegments = 5_000
    static let maxEvents = 2_000
    static let maxFeeds = 200

    init(directory: String) { indexPath = directory + "/index.sqlite" }

    private func withIndex<T>(_ body: (ArchiveIndex) throws(ArchiveError) -> T) throws(ArchiveError) -> T {
        lock._unsafeLock()
        defer { lock._unsafeUnlock() }
        if connection == nil { connection = try ArchiveIndex(path: indexPath) }
        return try body(connection!)
    }

    /// `/api/day`: the feeds of the range, and for the feed asked its overview, segments and
    /// journal, as JSON text. Built as text, not as a `JSONValue` tree: a day is 1 440 segments
    /// and 86 400 cells, and this answer must cost recd little (docs/status-page.md).
    /// `levels`: base64 of two bytes (peak, RMS `LevelOverview` codes) per second from `from`;
    /// `segments`: `[startMs, endMs, segment, loudnessLufs, truePeakDbtp, endReason,
    /// [[gapAtMs, gapMs], ...], [[networkLossAtMs, networkLossMs], ...]]` (ms since the epoch;
    /// a network loss: the segment's NETWORK_LOSS, where the receiver played zeros).
    func day(_ query: DayQuery) throws(ArchiveError) -> String {
        let (from, to) = (query.from, query.to)
        return try withIndex { (index) throws(ArchiveError) -> String in
            let feeds = try index.feeds(from: from, to: to, limit: Self.maxFeeds)
            var text =
                "{\"from\":\(JSONValue.string(from.iso8601).jsonText),\"to\":\(JSONValue.string(to.iso8601).jsonText)"
            text += ",\"cellSeconds\":\(LevelOverview.cellSeconds)"
            text += ",\"feeds\":" + JSONValue(feeds.map { "\($0.app)/\($0.stream)" }).jsonText
            guard let feed = query.feed else { return text + ",\"feed\":null}" }
            let runs = try index.levelOverviews(
                app: feed.app, stream: feed.stream, from: from, to: to, limit: Self.maxSegments)
            let segments = try index.daySegments(
                app: feed.app, stream: feed.stream, from: from, to: to, limit: Self.maxSegments + 1)
            let events = try index.journal(
                app: feed.app, stream: feed.stream, from: from, to: to, limit: Self.maxEvents + 1)
            text += ",\"feed\":" + JSONValue.string("\(feed.app)/\(feed.stream)").jsonText
            text += ",\"levels\":\"" + Self.levels(runs, from: from, to: to) + "\""
            text += ",\"segments\":["
            for (number, segment) in segments.prefix(Self.maxSegments).enumerated() {
                if number > 0 { text += "," }
                text += Self.segment(segment)
            }
            text += "],\"events\":" + JSONValue.array(events.prefix(Self.maxEvents).map(Self.event)).jsonText
            let truncated = segments.count > Self.maxSegments || events.count > Self.maxEvents
            return text + ",\"truncated\":\(truncated)}"
        }
    }

    /// The overview's cells from `from` to `to`, one contiguous base64 text (0 where none).
    static func levels(_ runs: [LevelOverviewRun], from: UTCTime, to: UTCTime) -> String {
        let cellMicros = Int64(LevelOverview.cellSeconds) * 1_000_000
        let cells = Int((to.microsecondsSinceEpoch - from.microsecondsSinceEpoch + cellMicros - 1) / cellMicros)
        var codes = [UInt8](repeating: 0, count: max(0, cells) * 2)
        for run in runs {
            let offset = run.start.microsecondsSinceEpoch - from.microsecondsSinceEpoch
            let first = Int((offset >= 0 ? offset + cellMicros / 2 : offset - cellMicros / 2) / cellMicros)
            for cell in max(0, -first)..<(run.codes.count / 2) {
                let target = first + cell
                guard target < cells else { break }
                codes[2 * target] = run.codes[2 * cell]
                codes[2 * target + 1] = run.codes[2 * cell + 1]
            }
        }
        return Data(codes).base64EncodedString()
    }

    static func segment(_ segment: DaySegment) -> String {
        func number(_ value: Double?) -> String { value.map { String(($0 * 100).rounded() / 100) } ?? "null" }
        var text = "[\(segment.start.microsecondsSinceEpoch / 1_000),\(segment.end.microsecondsSinceEpoch / 1_000)"
        text += ",\(segment.segment),\(number(segment.loudnessLUFS)),\(number(segment.truePeakDBTP)),"
        text += JSONValue(segment.endReason).jsonText + ",["
        for (number, gap) in segment.gaps.enumerated() {
            text += (number > 0 ? ",[" : "[") + "\(gap.at / 1_000),\(gap.microseconds / 1_000)]"
        }
        text += "],["
        for (number, loss) in segment.networkLosses.enumerated() {
            text += (number > 0 ? ",[" : "[") + "\(loss.at / 1_000),\(loss.microseconds / 1_000)]"
        }
        return text + "]]"
    }

    /// `/api/events`: the journal with the query's filters.
    func events(_ query: EventsQuery) throws(ArchiveError) -> JSONValue {
        let entries = try withIndex { (index) throws(ArchiveError) in
            try index.journal(
                app: query.feed?.app, stream: query.feed?.stream, from: query.from, to: query.to, kinds: query.kinds,
                limit: query.limit + 1)
        }
        return [
            "from": .string(query.from.iso8601), "to": .string(query.to.iso8601),
            "events": .array(entries.prefix(query.limit).map(Self.event)),
            "truncated": .bool(entries.count > query.limit),
        ]
    }

    static func event(_ entry: JournalEntry) -> JSONValue {
        let feed: String? = entry.app.map { app in entry.stream.map { "\(app)/\($0)" } ?? app }
        return [
            "id": .number(Double(entry.id)), "time": .string(entry.time.iso8601), "feed": JSONValue(feed),
            "kind": .string(entry.kind), "text": .string(entry.text), "seconds": JSONValue(entry.seconds),
        ]
    }
}
