// Typed events: every case survives json → line → init(json:) unchanged, its line is the one
// recd has always sent (keys in the order docs/protocol.md lists them), version-1 clients still
// get their spellings, a known event that lacks a key fails naming it, and an event this client
// does not know decodes to `.unknown`.

import SessionPolicy
import Testing

@testable import ControlProtocol

/// Each event with the exact line recd sent for it before events were typed.
let sampleEvents: [(Event, String)] = [
    (
        .interruption(app: "radio", type: .began, reason: .default, shouldResume: false, by: "voice"),
        #"{"event":"interruption","app":"radio","type":"began","typeCode":1,"reason":"default","reasonCode":0,"#
            + #""options":[],"by":"voice"}"#
    ),
    (
        .interruption(app: "radio", type: .ended, reason: .routeDisconnected, shouldResume: true, by: nil),
        #"{"event":"interruption","app":"radio","type":"ended","typeCode":0,"reason":"routeDisconnected","#
            + #""reasonCode":4,"options":["shouldResume"]}"#
    ),
    (
        .routeChange(
            RouteChangeEvent(
                app: "radio", reason: .oldDeviceUnavailable,
                previousRoute: RouteInfo(inputs: ["mic"], outputs: ["phones"]),
                route: RouteInfo(inputs: ["mic"], outputs: ["speaker"]),
                previousRouteDescription: RouteDescriptionInfo(
                    inputs: [.init(name: "mic", type: "builtInMic", channels: 2)],
                    outputs: [.init(name: "phones", type: "headphones", channels: 2)]),
                routeDescription: RouteDescriptionInfo(
                    inputs: [.init(name: "mic", type: "builtInMic", channels: 2)],
                    outputs: [.init(name: "speaker", type: "builtInSpeaker", channels: 2)]))),
        #"{"event":"routeChange","app":"radio","reason":"oldDeviceUnavailable","reasonCode":2,"#
            + #""previousRoute":{"inputs":["mic"],"outputs":["phones"]},"#
            + #""route":{"inputs":["mic"],"outputs":["speaker"]},"#
            + #""previousRouteDescription":{"inputs":[{"name":"mic","type":"builtInMic","channels":2}],"#
            + #""outputs":[{"name":"phones","type":"headphones","channels":2}]},"#
            + #""routeDescription":{"inputs":[{"name":"mic","type":"builtInMic","channels":2}],"#
            + #""outputs":[{"name":"speaker","type":"builtInSpeaker","channels":2}]}}"#
    ),
    (
        .silenceSecondaryAudioHint(app: "radio", begin: true),
        #"{"event":"silenceSecondaryAudioHint","app":"radio","type":"begin"}"#
    ),
    (
        .silenceSecondaryAudioHint(app: "radio", begin: false),
        #"{"event":"silenceSecondaryAudioHint","app":"radio","type":"end"}"#
    ),
    (
        .ducked(app: "radio", by: "phone", levelDB: -14.5),
        #"{"event":"ducked","app":"radio","by":"phone","levelDB":-14.5}"#
    ),
    (.unducked(app: "radio"), #"{"event":"unducked","app":"radio"}"#),
    (.inputMuteStateChange(app: "radio", muted: true), #"{"event":"inputMuteStateChange","app":"radio","muted":true}"#),
    (.permission(app: "radio", state: .granted), #"{"event":"permission","app":"radio","state":"granted"}"#),
    (.session(app: "radio", state: .active), #"{"event":"session","app":"radio","state":"active"}"#),
    (.session(app: "radio", state: .interrupted), #"{"event":"session","app":"radio","state":"interrupted"}"#),
    (.sessionDeleted(app: "radio"), #"{"event":"session","app":"radio","state":"deleted"}"#),
    (
        .player(
            PlayerEvent(app: "dj", stream: "deckA", state: .playing, file: "/music/a.flac", port: "pa", reason: nil)),
        #"{"event":"player","app":"dj","stream":"deckA","state":"playing","file":"/music/a.flac","port":"pa","#
            + #""reason":null}"#
    ),
    (
        .player(
            PlayerEvent(
                app: "dj", stream: "deckA", state: .paused, file: "/music/a.flac", port: "phones",
                reason: "oldDeviceUnavailable",
                reaction: PortReaction(frames: 212, periodFrames: 1024, microseconds: 4416))),
        #"{"event":"player","app":"dj","stream":"deckA","state":"paused","file":"/music/a.flac","port":"phones","#
            + #""reason":"oldDeviceUnavailable","reactionFrames":212,"periodFrames":1024,"reactionUs":4416}"#
    ),
    (
        .player(
            PlayerEvent(
                app: "dj", stream: "deckA", state: .playing, file: "/music/a.flac", port: "phones",
                reason: "newDeviceAvailable", previousPort: "pa",
                reaction: PortReaction(frames: 300, periodFrames: nil, microseconds: nil))),
        #"{"event":"player","app":"dj","stream":"deckA","state":"playing","file":"/music/a.flac","port":"phones","#
            + #""reason":"newDeviceAvailable","previousPort":"pa","reactionFrames":300,"periodFrames":null,"#
            + #""reactionUs":null}"#
    ),
    (
        .player(
            PlayerEvent(
                app: "dj", stream: "deckA", state: .playing, file: "/music/a.flac", port: "pa", reason: nil,
                previousPort: "phones")),
        #"{"event":"player","app":"dj","stream":"deckA","state":"playing","file":"/music/a.flac","port":"pa","#
            + #""reason":null,"previousPort":"phones"}"#
    ),
    (
        .player(
            PlayerEvent(
                app: "dj", stream: "deckA", state: .stopped, file: "/music/a.flac", port: "pa", reason: "error: EIO")),
        #"{"event":"player","app":"dj","stream":"deckA","state":"stopped","file":"/music/a.flac","port":"pa","#
            + #""reason":"error: EIO"}"#
    ),
    (
        .recording(RecordingEvent(app: "logger", stream: "mic", state: .started, port: "mic")),
        #"{"event":"recording","app":"logger","stream":"mic","state":"started","file":null,"reason":null,"port":"mic"}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .switched, reason: "routeChange", port: "headset",
                previousPort: "mic")),
        #"{"event":"recording","app":"logger","stream":"mic","state":"switched","file":null,"reason":"routeChange","#
            + #""port":"headset","previousPort":"mic"}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .resumed, reason: "diskFull", port: "mic",
                since: "2026-12-01T10:42:03.250Z")),
        #"{"event":"recording","app":"logger","stream":"mic","state":"resumed","file":null,"reason":"diskFull","#
            + #""port":"mic","since":"2026-12-01T10:42:03.250Z"}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .stalled, file: "/a/mic/0001.flac.partial", reason: "noFrames",
                port: "mic", since: "2026-12-01T10:42:03.250Z")),
        #"{"event":"recording","app":"logger","stream":"mic","state":"stalled","file":"/a/mic/0001.flac.partial","#
            + #""reason":"noFrames","port":"mic","since":"2026-12-01T10:42:03.250Z"}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .segment, file: "/a/mic/0001.flac.partial", port: "mic")),
        #"{"event":"recording","app":"logger","stream":"mic","state":"segment","file":"/a/mic/0001.flac.partial","#
            + #""reason":null,"port":"mic"}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .finished, file: "/a/mic/0001.flac", reason: "rotation",
                port: "mic", frames: 172_800_000, gaps: 1)),
        #"{"event":"recording","app":"logger","stream":"mic","state":"finished","file":"/a/mic/0001.flac","#
            + #""reason":"rotation","port":"mic","frames":172800000,"gaps":1}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .abandoned, file: "/a/mic/0002.flac.partial",
                reason: "write failed: EIO", port: "mic")),
        #"{"event":"recording","app":"logger","stream":"mic","state":"abandoned","file":"/a/mic/0002.flac.partial","#
            + #""reason":"write failed: EIO","port":"mic"}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .gap, reason: "overrun", port: "mic", position: 48_000, length: 512
            )),
        #"{"event":"recording","app":"logger","stream":"mic","state":"gap","file":null,"reason":"overrun","#
            + #""port":"mic","position":48000,"length":512}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .stopped, reason: "diskFull", port: "mic",
                error: SessionError(.cannotStartRecording, "the disk is full; free space"),
                resumesWhen: "512 MiB are free in /a (3.1 MiB now)")),
        #"{"event":"recording","app":"logger","stream":"mic","state":"stopped","file":null,"reason":"diskFull","#
            + #""port":"mic","error":{"name":"cannotStartRecording","code":561145187,"#
            + #""message":"the disk is full; free space"},"resumesWhen":"512 MiB are free in /a (3.1 MiB now)"}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "mic", state: .stopped, file: "/a/mic/0003.flac", reason: "stop", port: "mic")),
        #"{"event":"recording","app":"logger","stream":"mic","state":"stopped","file":"/a/mic/0003.flac","#
            + #""reason":"stop","port":"mic"}"#
    ),
    (
        .recording(
            RecordingEvent(
                app: "logger", stream: "take", state: .armed, port: "mic", triggerDB: -30, holdSeconds: 2.5)),
        #"{"event":"recording","app":"logger","stream":"take","state":"armed","port":"mic","triggerDB":-30,"#
            + #""holdSeconds":2.5}"#
    ),
    (
        .recording(
            RecordingEvent(app: "logger", stream: nil, state: .armed, port: nil, triggerDB: -30.5, holdSeconds: 2)),
        #"{"event":"recording","app":"logger","stream":null,"state":"armed","port":null,"triggerDB":-30.5,"#
            + #""holdSeconds":2}"#
    ),
    (
        .silence(
            SilenceEvent(
                app: "logger", stream: "mic", state: .began, seconds: 30.01, levelDB: -62.5,
                since: "2026-12-01T10:00:00.000Z")),
        #"{"event":"silence","app":"logger","stream":"mic","state":"began","seconds":30.01,"levelDB":-62.5,"#
            + #""since":"2026-12-01T10:00:00.000Z"}"#
    ),
    (
        .silence(
            SilenceEvent(
                app: "logger", stream: "mic", state: .ended, seconds: 95, levelDB: -144,
                since: "2026-12-01T10:01:05.000Z")),
        #"{"event":"silence","app":"logger","stream":"mic","state":"ended","seconds":95,"levelDB":-144,"#
            + #""since":"2026-12-01T10:01:05.000Z"}"#
    ),
    (
        .attachmentDetached(app: "voip", client: "phone", reason: .connectionClosed),
        #"{"event":"attachment","app":"voip","client":"phone","state":"detached","reason":"connectionClosed"}"#
    ),
    (.mediaServicesWereLost, #"{"event":"mediaServicesWereLost"}"#),
    (.mediaServicesWereReset, #"{"event":"mediaServicesWereReset"}"#),
    (
        .health(
            HealthInfo(
                state: "alarm", since: "2026-12-06T22:40:01.000Z",
                reasons: [
                    .init(
                        state: "alarm", reason: "jack-stalled", feed: nil,
                        text: "JACK server 'x' stalled: no process cycle for 4 s", since: "2026-12-06T22:40:00.000Z")
                ],
                feeds: [.init(feed: "logger/mic", state: "ok", reasons: [])])),
        #"{"event":"health","state":"alarm","since":"2026-12-06T22:40:01.000Z","reasons":[{"state":"alarm","#
            + #""reason":"jack-stalled","feed":null,"text":"JACK server 'x' stalled: no process cycle for 4 s","#
            + #""since":"2026-12-06T22:40:00.000Z"}],"feeds":[{"feed":"logger/mic","state":"ok","reasons":[]}]}"#
    ),
]

/// Which case an event is: the switch has no default, so a new case does not compile until
/// it is named here, and `everyCaseHasASample` then asks for a sample of it.
private func caseName(_ event: Event) -> String {
    switch event {
    case .interruption: "interruption"
    case .routeChange: "routeChange"
    case .silenceSecondaryAudioHint: "silenceSecondaryAudioHint"
    case .ducked: "ducked"
    case .unducked: "unducked"
    case .inputMuteStateChange: "inputMuteStateChange"
    case .permission: "permission"
    case .session: "session"
    case .sessionDeleted: "sessionDeleted"
    case .player: "player"
    case .recording: "recording"
    case .silence: "silence"
    case .attachmentDetached: "attachmentDetached"
    case .mediaServicesWereLost: "mediaServicesWereLost"
    case .mediaServicesWereReset: "mediaServicesWereReset"
    case .health: "health"
    case .unknown: "unknown"
    }
}

@Suite struct EventTests {
    @Test func everyCaseHasASample() {
        let covered = Set(sampleEvents.map { caseName($0.0) })
        let all: Set<String> = [
            "interruption", "routeChange", "silenceSecondaryAudioHint", "ducked", "unducked", "inputMuteStateChange",
            "permission", "session", "sessionDeleted", "player", "recording", "silence", "attachmentDetached",
            "mediaServicesWereLost", "mediaServicesWereReset", "health",
        ]
        #expect(covered == all)
        let states = Set(sampleEvents.compactMap { if case .recording(let r) = $0.0 { r.state } else { nil } })
        #expect(states == Set(RecordingEvent.State.allCases))
        let playerStates = Set(sampleEvents.compactMap { if case .player(let p) = $0.0 { p.state } else { nil } })
        #expect(playerStates == Set(PlayerEvent.State.allCases))
    }

    @Test func linesAreTheWireAsItWas() {
        for (event, line) in sampleEvents {
            #expect(event.json.jsonText == line)
        }
    }

    @Test func everyEventRoundTrips() throws {
        for (event, line) in sampleEvents {
            // Through the line as a client reads it (the parser sorts keys: order must not matter).
            #expect(try Event(json: JSONValue.parse(line)) == event, "\(line)")
            #expect(try Event(json: event.json) == event)
        }
    }

    @Test func appIsTheWatchFilters() {
        for (event, line) in sampleEvents {
            let app = (try? JSONValue.parse(line))?["app"]?.stringValue
            #expect(event.app == app, "\(line)")
        }
        #expect(Event.mediaServicesWereLost.app == nil && Event.mediaServicesWereReset.app == nil)
        #expect(Event.ducked(app: "radio", by: "phone", levelDB: -14).app == "radio")
    }

    @Test func version1ClientsKeepTheirSpellings() {
        let ducked = Event.ducked(app: "radio", by: "phone", levelDB: -14)
        #expect(
            WireKeys.line(ducked.json.jsonText, forVersion: 1)
                == #"{"event":"ducked","app":"radio","by":"phone","level_db":-14}"#)
        let paused = Event.player(
            PlayerEvent(
                app: "dj", stream: "deckA", state: .paused, file: "/music/a.flac", port: "phones",
                reason: "oldDeviceUnavailable",
                reaction: PortReaction(frames: 212, periodFrames: 1024, microseconds: 4416)))
        #expect(
            WireKeys.line(paused.json.jsonText, forVersion: 1)
                == #"{"event":"player","app":"dj","stream":"deckA","state":"paused","file":"/music/a.flac","#
                + #""port":"phones","reason":"oldDeviceUnavailable","reaction_frames":212,"period_frames":1024,"#
                + #""reaction_us":4416}"#)
        let armed = Event.recording(
            RecordingEvent(app: "logger", stream: "take", state: .armed, port: "mic", triggerDB: -30, holdSeconds: 2.5))
        #expect(
            WireKeys.line(armed.json.jsonText, forVersion: 1)
                == #"{"event":"recording","app":"logger","stream":"take","state":"armed","port":"mic","#
                + #""trigger_db":-30,"#
                + #""hold_seconds":2.5}"#)
        let silence = Event.silence(
            SilenceEvent(
                app: "logger", stream: "mic", state: .began, seconds: 30, levelDB: -62.5, since: "2026-12-01T10:00:00Z")
        )
        #expect(
            WireKeys.line(silence.json.jsonText, forVersion: 1)
                == #"{"event":"silence","app":"logger","stream":"mic","state":"began","seconds":30,"level_db":-62.5,"#
                + #""since":"2026-12-01T10:00:00Z"}"#)
        // Version 2 keeps the camelCase line as it is.
        #expect(WireKeys.line(silence.json.jsonText, forVersion: 2) == silence.json.jsonText)
    }

    @Test func unknownEventsDecodeToUnknown() throws {
        let line = #"{"event":"meterAlarm","app":"radio","levelDB":-3}"#
        let parsed = try JSONValue.parse(line)
        let event = try Event(json: parsed)
        #expect(event == .unknown(name: "meterAlarm", parsed))
        #expect(event.name == "meterAlarm" && event.app == "radio")
        #expect(event.json == parsed)
        let global = try Event(json: JSONValue.parse(#"{"event":"jackRestarted","after":3}"#))
        #expect(global.app == nil && global.name == "jackRestarted")
    }

    @Test func aKnownEventWithoutAKeyReadsItAsUnknownOrFailsNamingIt() throws {
        // Which keys are required is TolerantReaderTests' table, checked on real events.
        for (event, _) in sampleEvents {
            guard case .object(let pairs) = event.json else {
                Issue.record("\(event.name).json is not an object")
                continue
            }
            for (key, _) in pairs {
                let without = JSONValue.object(pairs.filter { $0.0 != key })
                do {
                    _ = try Event(json: without)
                } catch {
                    #expect(error.message.contains("\"\(key)\""), "\(event.name) without \(key): \(error)")
                }
            }
        }
    }

    @Test func valuesThisClientCannotReadFailNamingTheKey() throws {
        let cases: [(String, String)] = [
            (
                #"{"event":"interruption","app":"a","type":"began","typeCode":1,"reason":"x","reasonCode":3,"#
                    + #""options":[]}"#,
                "reasonCode"
            ),
            (
                #"{"event":"interruption","app":"a","type":"ended","typeCode":1,"reason":"default","reasonCode":0,"#
                    + #""options":[]}"#,
                "type"
            ),
            (
                #"{"event":"recording","app":"a","stream":"s","state":"paused","file":null,"reason":null,"port":"p"}"#,
                "state"
            ),
            (
                #"{"event":"recording","app":"a","stream":"s","state":"gap","file":null,"reason":null,"port":"p","#
                    + #""position":"x"}"#,
                "position"
            ),
            (
                #"{"event":"recording","app":"a","stream":"s","state":"stopped","file":null,"reason":null,"port":"p","#
                    + #""error":"x"}"#,
                "error"
            ),
            (#"{"event":"session","app":"a","state":"sleeping"}"#, "state"),
            (#"{"event":"permission","app":"a","state":"maybe"}"#, "state"),
            (#"{"event":"silenceSecondaryAudioHint","app":"a","type":"maybe"}"#, "type"),
            (#"{"event":"attachment","app":"a","client":"c","state":"attached","reason":"detached"}"#, "state"),
            (#"{"event":"attachment","app":"a","client":"c","state":"detached","reason":"bored"}"#, "reason"),
            (#"{"event":"ducked","app":"a","by":"b","levelDB":"loud"}"#, "levelDB"),
            (#"{"event":3}"#, "event"),
            (#"{"app":"a"}"#, "event"),
        ]
        for (line, key) in cases {
            let error = #expect(throws: ReplyDecodingError.self) { try Event(json: JSONValue.parse(line)) }
            #expect(error?.message.contains("\"\(key)\"") == true, "\(line): \(String(describing: error))")
        }
        #expect(throws: ReplyDecodingError.self) { try Event(json: ["interruption"]) }
    }
}
