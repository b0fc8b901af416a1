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
                return Self.answer { () throws(ArchiveError) in try archive.day(query) }
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

    /// `/api/day`: the feeds of the range, and for the feed asked its overview, segments and journal.
    func day(_ query: DayQuery) throws(ArchiveError) -> JSONValue {
        let (from, to) = (query.from, query.to)
        return try withIndex { (index) throws(ArchiveError) -> JSONValue in
            let feeds = try index.feeds(from: from, to: to, limit: Self.maxFeeds)
            var answer: [(String, JSONValue)] = [
                ("from", .string(from.iso8601)), ("to", .string(to.iso8601)),
                ("cellSeconds", .number(Double(LevelOverview.cellSeconds))),
                ("feeds", JSONValue(feeds.map { "\($0.app)/\($0.stream)" })),
            ]
            guard let feed = query.feed else {
                answer.append(("feed", .null))
                return .object(answer)
            }
            let runs = try index.levelOverviews(
                app: feed.app, stream: feed.stream, from: from, to: to, limit: Self.maxSegments)
            let records = try index.list(app: feed.app, since: from, until: to, limit: Self.maxSegments + 1)
                .filter { $0.stream == feed.stream && $0.group <= 1 }
            let events = try index.journal(
                app: feed.app, stream: feed.stream, from: from, to: to, limit: Self.maxEvents + 1)
            answer += [
                ("feed", .string("\(feed.app)/\(feed.stream)")),
                ("levels", .array(runs.map { run in
                    ["start": .string(run.start.iso8601), "codes": .string(Data(run.codes).base64EncodedString())]
                })),
                ("segments", .array(records.prefix(Self.maxSegments).map(Self.segment))),
                ("events", .array(events.prefix(Self.maxEvents).map(Self.event))),
                ("truncated", .bool(records.count > Self.maxSegments || events.count > Self.maxEvents)),
            ]
            return .object(answer)
        }
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

    static func segment(_ record: SegmentRecord) -> JSONValue {
        var gaps: [JSONValue] = []
        var before = 0
        for gap in record.gaps where record.sampleRate > 0 {
            let at = record.startTime.advanced(byFrames: gap.position + before, sampleRate: record.sampleRate)
            gaps.append(["at": .string(at.iso8601), "seconds": .number(Double(gap.length) / Double(record.sampleRate))])
            before += gap.length
        }
        return [
            "start": .string(record.startTime.iso8601), "end": .string(record.endTime.iso8601),
            "segment": .number(Double(record.segment)), "endReason": JSONValue(record.endReason?.rawValue),
            "recovered": .bool(record.recovered), "loudnessLufs": JSONValue(record.loudness.integratedLUFS),
            "truePeakDbtp": JSONValue(record.loudness.truePeakDBTP), "gaps": .array(gaps),
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
