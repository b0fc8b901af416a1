// The journal of what happened per feed, for the day view (`/api/day`, `/api/events`): the
// events recd sends its watchers, each as one row of the index's `journal` table
// (ArchiveIndex+Day.swift) with a sentence a person reads. Nothing here decides a fact: every
// entry is an event another owner already sent (silence, recording, interruption, health, ...),
// plus recd's own start and stop. Segment boundaries, gaps inside segments and loudness are not
// journaled: the index's segment rows own them and the day view reads them there.
//
// Threads: the control thread (`ControlFrontEnd.broadcast`, which every event passes), through `ArchiveService`'s
// index connection, as the segment rows are written.
import Archive
import ControlProtocol
import Platform

enum EventJournal {
    /// The entry for `event`, or nil for events that are not part of a feed's day (meters,
    /// routes, players, permissions, segment rows the index already has).
    static func entry(for event: Event, at now: UTCTime) -> JournalEntry? {
        let detail = event.json.jsonText
        switch event {
        case .silence(let silence):
            let time = silence.since.flatMap(UTCTime.init(iso8601WithZone:)) ?? now
            let level = silence.levelDB.map { ", peak \(Self.decibels($0))" } ?? ""
            let text =
                silence.state == .began
                ? "went silent (alarm after \(silence.seconds.map(Readable.duration) ?? "a while"))\(level)"
                : "sound again after \(silence.seconds.map(Readable.duration) ?? "a silence")\(level)"
            return JournalEntry(
                time: time, app: silence.app, stream: silence.stream,
                kind: silence.state == .began ? "silence" : "sound", text: text, detail: detail,
                seconds: silence.seconds)
        case .recording(let recording):
            return recordingEntry(recording, at: now, detail: detail)
        case .interruption(let app, let type, let reason, _, let by):
            let who = by.map { " by \($0)" } ?? ""
            return JournalEntry(
                time: now, app: app, stream: nil, kind: "interruption",
                text: "interruption \(type) (\(reason))\(who)", detail: detail)
        case .mediaServicesWereLost:
            return JournalEntry(
                time: now, app: nil, stream: nil, kind: "jack", text: "the JACK server was lost", detail: detail)
        case .mediaServicesWereReset:
            return JournalEntry(
                time: now, app: nil, stream: nil, kind: "jack", text: "the JACK server is back", detail: detail)
        case .health(let health):
            // The box's health state (its owner sends it; the journal keeps its changes).
            let reason = health.reasons.first?.text
            return JournalEntry(
                time: now, app: nil, stream: nil, kind: "health",
                text: "health \(health.state)" + (reason.map { ": \($0)" } ?? ""), detail: detail)
        default:
            return nil
        }
    }

    private static func recordingEntry(_ recording: RecordingEvent, at now: UTCTime, detail: String) -> JournalEntry? {
        let app = recording.app
        let stream = recording.stream
        let reason = recording.reason.map { " (\($0))" } ?? ""
        switch recording.state {
        case .segment, .finished, .armed:
            return nil  // the index's segment rows
        case .stalled:
            let since = recording.since.flatMap(UTCTime.init(iso8601WithZone:)) ?? now
            return JournalEntry(
                time: since, app: app, stream: stream, kind: "stall", text: "stalled: no frames from its source",
                detail: detail)
        case .resumed:
            let since = recording.since.flatMap(UTCTime.init(iso8601WithZone:))
            let seconds = since.map { Double(now.microsecondsSinceEpoch - $0.microsecondsSinceEpoch) / 1e6 }
            let length = seconds.map { " after \(Readable.duration($0))" } ?? ""
            return JournalEntry(
                time: now, app: app, stream: stream, kind: "resumed", text: "recording again\(length)\(reason)",
                detail: detail, seconds: seconds)
        case .gap:
            let seconds = recording.length.flatMap { length in
                recording.sampleRate.flatMap { $0 > 0 ? Double(length) / Double($0) : nil }
            }
            let length = seconds.map { " of \(Readable.duration($0))" } ?? ""
            return JournalEntry(
                time: now, app: app, stream: stream, kind: "gap", text: "gap\(length): frames lost\(reason)",
                detail: detail, seconds: seconds)
        case .started, .switched, .abandoned, .stopped:
            let error = recording.error.map { ": \($0.message)" } ?? ""
            return JournalEntry(
                time: now, app: app, stream: stream, kind: "recording",
                text: "recording \(recording.state.rawValue)\(reason)\(error)", detail: detail)
        }
    }

    /// recd's own start and stop (restarts show as a stop and a start).
    static func daemon(_ text: String, at now: UTCTime) -> JournalEntry {
        JournalEntry(time: now, app: nil, stream: nil, kind: "recd", text: text)
    }

    static func decibels(_ value: Double) -> String { "\((value * 10).rounded() / 10) dBFS" }
}
