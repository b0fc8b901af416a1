// Typed replies: every reply object survives json → init(json:) unchanged, a reply that lacks a
// key (or has one of the wrong type) fails with a message naming it, and the session object
// keeps the key order of docs/protocol.md.

import Testing

@testable import ControlProtocol

let sampleSession = SessionInfo(
    app: "radio", ownerUID: 1000, category: "playAndRecord", mode: "voiceChat",
    options: ["allowBluetoothHFP", "duckOthers"],
    requestedOptions: ["allowBluetoothHFP", "duckOthers", "mixWithOthers"],
    ignoredOptions: [.init(option: "mixWithOthers", why: "implied off by duckOthers")], policy: "default",
    priority: "normal", background: false, autoResume: true, micUsage: "calls to the studio", state: "interrupted",
    interruption: .init(reason: "default", by: "phone", since: "2026-12-02T10:42:03.000000Z"),
    route: RouteInfo(inputs: ["headset"], outputs: ["headset"]),
    bandwidth: [.init(port: "headset", bandwidth: "hfp-msbc")],
    preferences: .init(preferredInput: "headset", sampleRate: 16_000, ioBufferDuration: 0.005),
    actual: .init(
        sampleRate: 48_000, ioBufferDuration: 0.021_333, inputLatency: 0.0427, outputLatency: 0.0427, inputChannels: 1,
        outputChannels: 2),
    recordPermission: "granted", inputMuted: false, duckedBy: nil, override: "none",
    prefersInterruptionOnRouteDisconnect: true, streamsRunning: false, declaredInConfig: true,
    routeDescription: .init(
        inputs: [.init(name: "headset", type: "bluetoothHFP", channels: 1)],
        outputs: [.init(name: "headset", type: "bluetoothHFP", channels: 2)]),
    availableInputs: [
        .init(name: "mic", type: "builtInMic", channels: 2), .init(name: "headset", type: "bluetoothHFP", channels: 1),
    ],
    maximumInputChannels: 1, maximumOutputChannels: 2, isOtherAudioPlaying: true,
    secondaryAudioShouldBeSilencedHint: true, prefersNoInterruptionsFromSystemAlerts: true,
    prefersEchoCancelledInput: true, isEchoCancelledInputAvailable: true)

let sampleQuietSession = SessionInfo(
    app: "logger", ownerUID: 0, category: "record", mode: "default", options: [], requestedOptions: [],
    ignoredOptions: [], policy: "default", priority: "high", background: true, autoResume: false, micUsage: nil,
    state: "active", interruption: nil, route: RouteInfo(inputs: ["mic"]), bandwidth: [], preferences: .init(),
    actual: .init(), recordPermission: "undetermined", inputMuted: true, duckedBy: "radio", override: "speaker",
    prefersInterruptionOnRouteDisconnect: false, streamsRunning: true, declaredInConfig: false)

let samplePlayer = PlayerInfo(
    app: "dj", stream: "deckA", file: "/music/set one.flac", port: "pa", state: "paused", pausedBy: "user",
    channels: 2, framesPlayed: 1_234_567, underruns: 0)

let sampleRecorder = RecorderInfo(
    app: "logger", stream: "mic", port: "mic", bandwidth: "full", sampleRate: 48_000,
    files: ["/var/lib/recd/archive/logger/mic/2026-12-01T10-00-00Z-0001.flac.partial"], seconds: 3601,
    segments: 2, gaps: 1, overruns: 0, droppedFrames: 512, zeroed: false)

let sampleSegment = SegmentInfo(
    path: "/var/lib/recd/archive/logger/mic/2026-12-01T10-00-00Z-0001.flac", app: "logger", stream: "mic", group: 3,
    segment: 1, start: "2026-12-01T10:00:00Z", seconds: 3600.5, frames: 172_824_000, sampleRate: 48_000,
    channels: 1, bits: 24, endReason: "rotation", gaps: 0, recovered: false, bytes: 301_234_567,
    loudnessLufs: -23.02, loudnessRangeLu: 4.5, truePeakDbtp: -1.3, clockDriftPpm: -12.3)

let sampleVerify = VerifyInfo(results: [
    VerifyResultInfo(path: "/a/1.flac", ok: true, outcome: "ok", frames: 48_000),
    VerifyResultInfo(path: "/a/2.flac", ok: false, outcome: "truncated(at: 1024)", frames: 1024),
])

let sampleHello = HelloInfo(protocolVersion: 2, version: "0.9.0", uid: 1000, admin: false)

let sampleStatus = StatusInfo(
    daemon: .init(
        version: "0.9.0", protocolVersion: 2, pid: 4242, uptime: 86_401, config: "/etc/recd/recd.conf",
        socket: "/run/recd/control.sock", stateDir: "/var/lib/recd", archiveDir: "/var/lib/recd/archive"),
    jack: .init(
        connected: true, client: "recd", server: "default", sampleRate: 48_000, bufferSize: 1024, xruns: 3,
        mediaServicesAvailable: true, error: nil, churning: ["recd:out_1 → system:playback_1"],
        cycle: .init(
            boundsMicros: [25, 50], startDelay: [7, 2, 1], duration: [9, 1, 0], maxStartDelayMicros: 900,
            maxDurationMicros: 31, late: 1, overlong: 0, cycles: 10, startDelayMicrosTotal: 1_400,
            durationMicrosTotal: 120)),
    sessions: [sampleSession, sampleQuietSession], active: ["logger"], players: [samplePlayer],
    recorders: [sampleRecorder], cards: [.init(index: 1, id: "USB", name: "Scarlett 2i2", usb: true)],
    archive: .init(
        dir: "/var/lib/recd/archive", space: .init(freeBytes: 1.5e11, freePercent: 42.5, segments: 120)),
    attachments: [sampleAttachment], waiting: [sampleWaiting])

let sampleWaiting = WaitingRecorderInfo(
    app: "logger", stream: "mic", port: "mic", reason: "diskFull", since: "2026-12-01T10:42:03.250Z", declared: true,
    resumesWhen: "512 MiB are free in /var/lib/recd/archive (3.1 MiB now)", resumeFreeBytes: 536_870_912,
    detail: nil)

let sampleAttachment = AttachmentInfo(
    app: "voip", client: "phone", playPorts: ["phone:out_1"], capturePorts: ["phone:in_1"],
    recdPlayPorts: ["recd:phone-1-play_1"], recdCapturePorts: ["recd:phone-1-capture_1"])

let sampleDisconnectedStatus = StatusInfo(
    daemon: sampleStatus.daemon,
    jack: .init(
        connected: false, client: nil, server: "default", sampleRate: nil, bufferSize: nil, xruns: 0,
        mediaServicesAvailable: false, error: "cannot connect to server"),
    sessions: [], active: [], players: [], recorders: [], cards: [],
    archive: .init(dir: "/var/lib/recd/archive", space: nil))

let sampleRoutes = RoutesInfo(
    ports: [
        PortInfo(
            name: "headset", type: "bluetoothHFP", direction: "duplex", channels: 1, available: true,
            jack: ["bluez:capture_1", "bluez:playback_1"], recdPorts: ["recd:headset_in_1"],
            capabilities: ["input", "output"], codec: "msbc", sense: nil, connectedOrder: 2,
            origins: [
                .init(jack: "bluez:capture_1", origin: "local", client: "bluez"),
                .init(jack: "studio2:to_slave_1", origin: "netjack2", client: "studio2"),
                .init(
                    jack: "studio3:output_FL", origin: "rtp", client: "studio3", session: "Studio 3",
                    address: "10.0.0.3"),
            ]),
        PortInfo(
            name: "phones", type: "headphones", direction: "output", channels: 2, available: false,
            jack: ["system:playback_3", "system:playback_4"], recdPorts: [], capabilities: [], codec: nil,
            sense: "hw:0/Headphone Jack", connectedOrder: 0),
    ],
    sessions: [.init(app: "radio", state: "active", route: RouteInfo(inputs: ["headset"], outputs: ["headset"]))])

let sampleMeters = MetersInfo(
    meters: [
        MeterInfo(name: "mic", group: "mic", channel: 1, direction: "input", peakDB: -6.02, rmsDB: -9.03),
        MeterInfo(name: "main", group: "main", channel: 2, direction: "output", peakDB: -120, rmsDB: -120),
    ],
    windowMs: 100,
    recordings: [
        RecordingLoudnessInfo(app: "logger", stream: "mic", momentaryLufs: -22.5, shortTermLufs: -23.1),
        RecordingLoudnessInfo(app: "logger", stream: "room", momentaryLufs: nil, shortTermLufs: nil),
    ])

let sampleMonitoring = MonitoringInfo(
    app: "dj", main: "pa", cue: "phones", mix: 0.25, split: true,
    sources: [
        .init(name: "deckA", kind: "player", bus: "both", gainDB: -3.5),
        .init(name: "mic", kind: "input", bus: "main", gainDB: 0),
    ])

/// `value` survives encoding to a line and decoding back; without any one of its keys it still
/// decodes (an optional key, read as unknown) or fails naming the key (a required one: which
/// ones are is TolerantReaderTests' table, checked on real replies).
private func checkReply<T: ReplyObject>(_ value: T) throws {
    let line = value.json.jsonText
    let parsed = try JSONValue.parse(line)
    #expect(try T(json: parsed) == value)
    #expect(try T(json: value.json) == value)
    guard case .object(let pairs) = value.json else {
        Issue.record("\(T.self).json is not an object")
        return
    }
    for (key, _) in pairs {
        let without = JSONValue.object(pairs.filter { $0.0 != key })
        do {
            _ = try T(json: without)
        } catch {
            #expect(error.message.contains("\"\(key)\""), "\(T.self) without \(key): \(error)")
        }
    }
}

@Suite struct ReplyTests {
    @Test func sessionsRoundTrip() throws {
        try checkReply(sampleSession)
        try checkReply(sampleQuietSession)
        try checkReply(sampleSession.route)
        try checkReply(sampleSession.preferences)
        try checkReply(sampleSession.actual)
        try checkReply(sampleSession.interruption!)
        try checkReply(sampleSession.ignoredOptions[0])
        try checkReply(sampleSession.bandwidth[0])
        try checkReply(sampleSession.routeDescription)
        try checkReply(sampleSession.availableInputs[0])
        try checkReply(sampleQuietSession.routeDescription)
    }

    @Test func portDescriptionsHaveNameTypeAndChannels() throws {
        #expect(
            sampleSession.routeDescription.json.jsonText
                == #"{"inputs":[{"name":"headset","type":"bluetoothHFP","channels":1}],"#
                + #""outputs":[{"name":"headset","type":"bluetoothHFP","channels":2}]}"#)
        // A session that reports nothing new still carries every key, with empty values.
        let quiet = sampleQuietSession.json
        #expect(quiet["routeDescription"]?.jsonText == #"{"inputs":[],"outputs":[]}"#)
        #expect(quiet["availableInputs"] == [])
        #expect(quiet["maximumInputChannels"] == 0 && quiet["maximumOutputChannels"] == 0)
        #expect(quiet["isOtherAudioPlaying"] == false && quiet["secondaryAudioShouldBeSilencedHint"] == false)
        // Version 2 keys only: none of the new keys has a snake_case spelling to rename.
        #expect(WireKeys.line(sampleSession.json.jsonText, forVersion: 1).contains(#""isOtherAudioPlaying":true"#))
    }

    @Test func playersRecordersSegmentsRoundTrip() throws {
        try checkReply(samplePlayer)
        try checkReply(sampleRecorder)
        try checkReply(sampleSegment)
        var unfinished = sampleSegment
        unfinished.endReason = nil
        try checkReply(unfinished)
        var open = unfinished
        open.state = "open"
        open.path += ".partial"
        try checkReply(open)
        #expect(open.json["state"]?.stringValue == "open" && sampleSegment.json["state"]?.stringValue == "finished")
    }

    @Test func verifyAndHelloRoundTrip() throws {
        try checkReply(sampleVerify)
        try checkReply(sampleVerify.results[1])
        #expect(sampleVerify.allOK == false)
        #expect(VerifyInfo(results: [sampleVerify.results[0]]).allOK)
        try checkReply(sampleHello)
        #expect(sampleHello.json.jsonText == #"{"protocol":2,"version":"0.9.0","uid":1000,"admin":false}"#)
    }

    @Test func sessionPageRoundTrips() throws {
        let page = SessionPage(sessions: [sampleSession, sampleQuietSession], total: 600, offset: 256, next: 258)
        // An older recd sends `sessions` only: one whole page.
        try checkReply(page)
        try checkReply(SessionPage(sessions: [], total: 0, offset: 0, next: nil))
        let old = try SessionPage(json: ["sessions": .array([sampleSession.json])])
        #expect(old == SessionPage(sessions: [sampleSession], total: 1, offset: 0, next: nil))
        #expect(page.json["next"]?.intValue == 258)
    }

    @Test func exportRoundTrip() throws {
        let clip = ExportInfo(
            file: "/tmp/clip.flac", format: "flac", app: "radio", stream: "mic", start: "2026-12-01T09:02:00.000000Z",
            end: "2026-12-01T09:07:00.000000Z", frames: 14_400_000, sampleRate: 48_000, channels: 2,
            gaps: "12000+4800", segments: ["/a.flac", "/b.flac"])
        try checkReply(clip)
        #expect(clip.json["sampleRate"]?.intValue == 48_000)
        #expect(clip.json["requestedEnd"] == .null)
        var clamped = clip
        clamped.requestedEnd = "2026-12-01T09:08:00.000000Z"
        try checkReply(clamped)
    }

    @Test func replicationStatusRoundTrips() throws {
        let replication = StatusInfo.Replication(
            remote: "box:recd", backlog: 3, lastSuccess: 1_764_590_000.25, lastError: "rclone copyto failed")
        try checkReply(replication)
        try checkReply(StatusInfo.Replication(remote: "/srv/copies", backlog: 0, lastSuccess: nil, lastError: nil))
        var status = sampleStatus
        status.replication = replication
        try checkReply(status)
        // Absent without a remote (and from an older recd).
        #expect(sampleStatus.json["replication"] == nil)
        let version1 = WireKeys.line(status.json.jsonText, forVersion: 1)
        #expect(version1.contains(#""last_success":"#) && version1.contains(#""last_error":"rclone copyto failed""#))
        #expect(!version1.contains("lastSuccess") && !version1.contains("lastError"))
    }

    @Test func statusRoundTrips() throws {
        // `waiting` and `sessionCount` may be absent: a recd older than them (read as none
        // waiting; its list is all of the sessions).
        try checkReply(sampleStatus)
        try checkReply(sampleDisconnectedStatus)
        try checkReply(sampleWaiting)
        try checkReply(
            WaitingRecorderInfo(
                app: "desk", stream: "line", port: "line", reason: "stop", since: "2026-12-01T10:50:00Z",
                declared: false, resumesWhen: nil, detail: "`recctl record start desk` starts it"))
        try checkReply(
            WaitingRecorderInfo(
                app: "logger", stream: "mic", port: "mic", reason: "interruption", since: "2026-12-01T10:50:00Z",
                declared: true, resumesWhen: "the interruption ends (with auto_resume)", by: "voice"))
        var older = sampleStatus.json.objectValue ?? []
        older.removeAll { $0.0 == "waiting" }
        #expect(try StatusInfo(json: .object(older)).waiting.isEmpty)
        var old = sampleStatus.json
        old = .object(old.objectValue!.filter { $0.0 != "sessionCount" })
        #expect(try StatusInfo(json: old).sessionCount == sampleStatus.sessions.count)
        var listed = sampleStatus
        listed.sessionCount = 1000
        #expect(try StatusInfo(json: listed.json).sessionCount == 1000)
        try checkReply(sampleStatus.daemon)
        // `churning` may be absent: a recd older than it (read as none).
        try checkReply(sampleStatus.jack)
        try checkReply(try #require(sampleStatus.jack.cycle))
        let unbalanced = StatusInfo.CycleTimes(
            boundsMicros: [25], startDelay: [1], duration: [1, 0], maxStartDelayMicros: 0, maxDurationMicros: 0,
            late: 0,
            overlong: 0, cycles: 1, startDelayMicrosTotal: 0, durationMicrosTotal: 0)
        #expect(throws: ReplyDecodingError.self) { try StatusInfo.CycleTimes(json: unbalanced.json) }
        let olderJack = JSONValue.object((sampleStatus.jack.json.objectValue ?? []).filter { $0.0 != "churning" })
        #expect(try StatusInfo.Jack(json: olderJack).churning.isEmpty)
        #expect(try StatusInfo.Jack(json: sampleStatus.jack.json).churning == ["recd:out_1 → system:playback_1"])
        try checkReply(sampleStatus.cards[0])
        // Without the file system's figures the archive object has `dir` and its two lists only
        // (absent from an older recd's: empty).
        try checkReply(sampleStatus.archive)
        #expect(
            sampleDisconnectedStatus.archive.json.jsonText
                == #"{"dir":"/var/lib/recd/archive","chainAlarms":[],"unrecovered":[]}"#)
        #expect(try StatusInfo.Archive(json: JSONValue.parse(#"{"dir":"/a"}"#)).chainAlarms.isEmpty)
        let alarm = StatusInfo.ChainAlarm(
            chain: "2026/12/01/logger-main.chain", app: "logger", stream: "main", since: "2026-12-01T15:00:00Z",
            detail: "chain 2026/12/01/logger-main.chain at entry 3 does not hold what recd signed: …",
            segmentsUnchained: 2)
        try checkReply(alarm)
        try checkReply(
            StatusInfo.UnrecoveredPartial(
                path: "/a/x.flac.partial", since: "2026-12-01T15:00:00Z", error: "disk full",
                resumesWhen: "1.2 MiB are free in /a"))
        var alarmed = sampleStatus.archive
        alarmed.chainAlarms = [alarm]
        try checkReply(alarmed)
    }

    @Test func routesMetersMonitoringRoundTrip() throws {
        try checkReply(sampleRoutes)
        // `origins` may be absent: a recd older than it (read as none).
        try checkReply(sampleRoutes.ports[0])
        try checkReply(sampleRoutes.ports[1])
        let older = JSONValue.object((sampleRoutes.ports[0].json.objectValue ?? []).filter { $0.0 != "origins" })
        #expect(try PortInfo(json: older).origins.isEmpty)
        try checkReply(sampleRoutes.ports[0].origins[1])
        // An RTP origin's session and sender are there only for RTP (and the sender only when known).
        try checkReply(sampleRoutes.ports[0].origins[2])
        #expect(
            sampleRoutes.ports[0].origins.map(\.text)
                == ["local", "netjack2 peer studio2", "RTP stream Studio 3@10.0.0.3"])
        #expect(PortOriginInfo(jack: "s:output_FL", origin: "rtp", client: "s", session: "s").text == "RTP stream s")
        // Every key is sent: a local origin's session and sender are explicit nulls.
        #expect(sampleRoutes.ports[0].origins[0].json["session"] == .null)
        try checkReply(sampleRoutes.sessions[0])
        try checkReply(sampleMeters)
        try checkReply(sampleMeters.meters[0])
        try checkReply(sampleMeters.recordings[0])
        try checkReply(sampleMonitoring)
        try checkReply(sampleMonitoring.sources[0])
        try checkReply(MonitoringInfo(app: nil, main: nil, cue: nil, mix: 0, split: false, sources: []))
    }

    @Test func permissionsMuteReindexRoundTrip() throws {
        try checkReply(PermissionInfo(app: "logger", state: "granted"))
        try checkReply(MuteInfo(app: "radio", muted: true))
        try checkReply(sampleAttachment)
        try checkReply(ReindexInfo(indexed: 120, skipped: ["/var/lib/recd/archive/stray.flac"]))
        try checkReply(ReindexInfo(indexed: 0, skipped: []))
    }

    @Test func sessionKeysKeepTheirOrder() {
        let keys = sampleSession.json.objectValue?.map(\.0)
        #expect(
            keys == [
                "app", "ownerUID", "category", "mode", "options", "requestedOptions", "ignoredOptions", "policy",
                "priority", "background", "autoResume", "micUsage", "state", "heldBy", "interruption", "route",
                "routeDescription", "availableInputs", "bandwidth", "preferences", "actual", "maximumInputChannels",
                "maximumOutputChannels", "recordPermission", "inputMuted", "duckedBy", "override",
                "prefersInterruptionOnRouteDisconnect", "prefersNoInterruptionsFromSystemAlerts",
                "prefersEchoCancelledInput", "isEchoCancelledInputAvailable", "streamsRunning", "declaredInConfig",
                "isOtherAudioPlaying", "secondaryAudioShouldBeSilencedHint",
            ])
        // Unknown values are nulls, not missing keys.
        #expect(sampleQuietSession.json["interruption"] == .null)
        #expect(sampleQuietSession.json["micUsage"] == .null)
        #expect(sampleQuietSession.json["preferences"]?["sampleRate"] == .null)
    }

    @Test func missingAndMistypedKeysAreNamed() throws {
        var session = sampleSession.json
        session.set("ownerUID", "root")
        #expect(throws: ReplyDecodingError("\"ownerUID\" of a session must be an integer or null")) {
            try SessionInfo(json: session)
        }
        var player = samplePlayer.json
        player.set("pausedBy", 3)
        #expect(throws: ReplyDecodingError("\"pausedBy\" of a player must be a string or null")) {
            try PlayerInfo(json: player)
        }
        #expect(throws: ReplyDecodingError("a recorder must be a JSON object")) { try RecorderInfo(json: "mic") }
        let reply: JSONValue = ["id": 1, "ok": true]
        #expect(throws: ReplyDecodingError("the reply is missing \"session\"")) {
            try SessionInfo(reply: reply, key: "session")
        }
        #expect(throws: ReplyDecodingError("the reply is missing \"segments\"")) {
            try SegmentInfo.list(reply: reply, key: "segments")
        }
        // A missing required key inside a nested object is named too; a missing optional one
        // reads as unknown.
        var status = sampleStatus.json
        var jack = sampleStatus.jack.json
        jack = .object((jack.objectValue ?? []).filter { $0.0 != "connected" })
        status.set("jack", jack)
        #expect(throws: ReplyDecodingError("status's jack is missing \"connected\"")) { try StatusInfo(json: status) }
        jack = .object((sampleStatus.jack.json.objectValue ?? []).filter { $0.0 != "xruns" })
        status.set("jack", jack)
        #expect(try StatusInfo(json: status).jack.xruns == nil)
    }

    @Test func repliesReadAsVersion1ClientsSeeThem() throws {
        // WireKeys renames at send time; the typed objects carry version 2's spellings only.
        let line = WireKeys.line(sampleRecorder.json.jsonText, forVersion: 1)
        #expect(line.contains(#""dropped_frames":512"#))
        #expect(!sampleRecorder.json.jsonText.contains("_"))
    }
}
