// recctl against a real recd: the SPEC §1 tables, §2 codes, §3 events, persistence, admin.
import ControlProtocol
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §1, category × mode, written out from the spec (not from the code under test).
let specModes: [String: [String]] = [
    "ambient": ["default", "spokenAudio"],
    "soloAmbient": ["default", "spokenAudio"],
    "playback": ["default", "measurement", "moviePlayback", "shortFormVideo", "spokenAudio", "voicePrompt"],
    "record": ["default", "measurement", "videoRecording"],
    "playAndRecord": ["default", "measurement", "spokenAudio", "videoChat", "videoRecording", "voiceChat"],
    "multiRoute": ["default", "measurement", "spokenAudio", "dualRoute"],
]
let allModes = ["default", "gameChat", "measurement", "moviePlayback", "shortFormVideo", "spokenAudio", "videoChat", "videoRecording", "voiceChat", "voicePrompt", "dualRoute"]
let allCategories = ["ambient", "soloAmbient", "playback", "record", "playAndRecord", "multiRoute"]

/// SPEC §1, option × category.
let specOptions: [String: [String]] = [
    "mixWithOthers": allCategories,
    "duckOthers": allCategories,
    "interruptSpokenAudioAndMixWithOthers": allCategories,
    "overrideMutedMicrophoneInterruption": ["soloAmbient", "playback", "record", "playAndRecord", "multiRoute"],
    "allowAirPlay": ["playAndRecord"],
    "allowBluetoothA2DP": ["playAndRecord"],
    "allowBluetoothHFP": ["record", "playAndRecord", "multiRoute"],
    "defaultToSpeaker": ["playAndRecord", "multiRoute"],
    "bluetoothHighQualityRecording": ["record", "playAndRecord", "multiRoute"],
]

@Suite("recctl session set against the SPEC §1 tables")
struct CompatibilityTableTests {
    @Test("every category × mode cell: ✔ accepted, others badParam naming the mode")
    func categoryModeCells() throws {
        let daemon = try Daemon()
        for category in allCategories {
            for mode in allModes {
                var args = ["session", "set", "t", "--category", category, "--mode", mode]
                if mode == "dualRoute" { args += ["--options", "allowBluetoothHFP"] }
                let result = try daemon.recctl(arguments: args)
                if specModes[category]!.contains(mode) {
                    #expect(result.status == 0, "\(category)/\(mode) should be accepted: \(result.stderr)")
                } else {
                    #expect(result.status == 1, "\(category)/\(mode) should be rejected")
                    #expect(result.stderr.hasPrefix("error: badParam (-50): "), "\(category)/\(mode): \(result.stderr)")
                    #expect(result.stderr.contains(mode), "message should name \(mode): \(result.stderr)")
                }
            }
        }
    }

    @Test("every option × category cell: ✔ accepted, others badParam naming the option")
    func optionCategoryCells() throws {
        let daemon = try Daemon()
        for (option, categories) in specOptions.sorted(by: { $0.key < $1.key }) {
            for category in allCategories {
                var args = ["session", "set", "t", "--category", category, "--options", option]
                // allowBluetoothHFP is accepted with multiRoute only in mode dualRoute.
                if category == "multiRoute" && option == "allowBluetoothHFP" { args += ["--mode", "dualRoute"] }
                let result = try daemon.recctl(arguments: args)
                if categories.contains(category) {
                    #expect(result.status == 0, "\(option) with \(category) should be accepted: \(result.stderr)")
                } else {
                    #expect(result.status == 1, "\(option) with \(category) should be rejected")
                    #expect(result.stderr.hasPrefix("error: badParam (-50): ") && result.stderr.contains(option), "\(option)/\(category): \(result.stderr)")
                }
            }
        }
        let multiRouteHFP = try daemon.recctl("session", "set", "t", "--category", "multiRoute", "--options", "allowBluetoothHFP")
        #expect(multiRouteHFP.status == 1 && multiRouteHFP.stderr.contains("allowBluetoothHFP"))
    }

    @Test("a rejected set changes nothing; effective options include the implied ones")
    func rejectedSetKeepsConfiguration() throws {
        let daemon = try Daemon()
        try #require(daemon.recctl("session", "set", "a", "--category", "playAndRecord", "--mode", "voiceChat", "--options", "duckOthers", "--mic-usage", "calls").status == 0)
        let before = try #require(daemon.recctl("--json", "session", "show", "a").json)
        #expect(before["options"] == ["mixWithOthers", "duckOthers", "allowBluetoothHFP"])
        let rejected = try daemon.recctl("session", "set", "a", "--category", "playback", "--options", "defaultToSpeaker")
        #expect(rejected.status == 1 && rejected.stderr.contains("defaultToSpeaker"))
        let after = try #require(daemon.recctl("--json", "session", "show", "a").json)
        #expect(after == before)
        for (words, name) in [(["--category", "audioProcessing"], "audioProcessing"), (["--category", "playback", "--mode", "gameChat"], "gameChat"),
                              (["--category", "playback", "--policy", "independent"], "independent"), (["--category", "nonsense"], "nonsense"),
                              (["--category", "multiRoute", "--mode", "dualRoute"], "allowBluetoothHFP"), (["--category", "record", "--policy", "longFormAudio"], "longFormAudio")] {
            let result = try daemon.recctl(arguments: ["session", "set", "a"] + words)
            #expect(result.status == 1 && result.stderr.hasPrefix("error: badParam (-50)") && result.stderr.contains(name), "\(words): \(result.stderr)")
        }
        #expect(try #require(daemon.recctl("--json", "session", "show", "a").json) == before)
        // Options are not sticky: a new category replaces the whole set.
        try #require(daemon.recctl("session", "set", "a", "--category", "playback").status == 0)
        #expect(try #require(daemon.recctl("--json", "session", "show", "a").json)["options"] == [])
    }
}

@Suite("error codes and exit statuses")
struct ErrorReplyTests {
    @Test("replies carry SPEC §2 names and numeric codes, in text and --json")
    func errorCodes() throws {
        let daemon = try Daemon(extraConfig: """

            [session bg]
            category = playback
            background = yes

            [session phone]
            category = playAndRecord
            mode = voiceChat
            priority = call
            mic_usage = calls

            """)
        let cases: [([String], String, Int32)] = [
            (["session", "activate", "ghost"], "expiredSession", 561_210_739),
            (["session", "prefer", "bg", "--input", "mic"], "incompatibleCategory", 560_161_140),
            (["session", "prefer", "bg", "--sample-rate", "-1"], "badParam", -50),
        ]
        for (args, name, code) in cases {
            let text = try daemon.recctl(arguments: args)
            #expect(text.status == 1 && text.stderr.hasPrefix("error: \(name) (\(code)): "), "\(args): \(text.stderr)")
            let json = try daemon.recctl(arguments: ["--json"] + args)
            #expect(json.status == 1)
            #expect(json.json?["error"]?["name"]?.stringValue == name && json.json?["error"]?["code"]?.intValue == Int(code), "\(json.stdout)")
        }
        try #require(daemon.recctl("session", "set", "rec", "--category", "record").status == 0)
        let noUsage = try daemon.recctl("session", "activate", "rec")
        #expect(noUsage.stderr.hasPrefix("error: missingEntitlement (1701737535): ") && noUsage.stderr.contains("--mic-usage"))

        try #require(daemon.recctl("session", "activate", "phone").status == 0)
        try #require(daemon.recctl("session", "set", "radio", "--category", "playback").status == 0)
        let low = try daemon.recctl("session", "activate", "radio")
        #expect(low.stderr.hasPrefix("error: insufficientPriority (561017449): "), "\(low.stderr)")
        try #require(daemon.recctl("session", "deactivate", "phone").status == 0)
        try #require(daemon.recctl("session", "activate", "radio").status == 0)
        let background = try daemon.recctl("session", "activate", "bg")
        #expect(background.stderr.hasPrefix("error: cannotInterruptOthers (560557684): "), "\(background.stderr)")
        // Deleted sessions are expired.
        try #require(daemon.recctl("session", "delete", "radio").status == 0)
        #expect(try daemon.recctl("session", "show", "radio").stderr.hasPrefix("error: expiredSession (561210739): "))
    }

    @Test("usage errors exit 2, an unreachable daemon exits 3 and says where it looked")
    func exitStatuses() throws {
        let recctl = productsDirectory.appendingPathComponent("recctl").path
        let usage = try runProgram(recctl, ["session", "set"])
        #expect(usage.status == 2 && usage.stderr.contains("usage:"))
        let unknown = try runProgram(recctl, ["frobnicate"])
        #expect(unknown.status == 2)
        let badFlag = try runProgram(recctl, ["session", "deactivate", "x", "--bogus"])
        #expect(badFlag.status == 2 && badFlag.stderr.contains("--bogus"))
        let unreachable = try runProgram(recctl, ["--socket", "/nonexistent/recd.sock", "status"])
        #expect(unreachable.status == 3 && unreachable.stderr.contains("/nonexistent/recd.sock"))
    }
}

@Suite("interruptions, ducking and resumption seen through recctl watch")
struct ArbitrationEventTests {
    @Test("non-mixable interrupts non-mixable; notify-others ends it with shouldResume")
    func interruptionAndResumption() throws {
        let daemon = try Daemon()
        try #require(daemon.recctl("session", "set", "music", "--category", "playback").status == 0)
        try #require(daemon.recctl("session", "set", "call", "--category", "playback", "--mode", "spokenAudio").status == 0)
        try #require(daemon.recctl("session", "activate", "music").status == 0)
        let watcher = try daemon.watch()
        try #require(daemon.recctl("session", "activate", "call").status == 0)
        let began = watcher.waitFor { $0["event"] == "interruption" && $0["type"] == "began" }
        let beganEvent = try #require(began.first { $0["event"] == "interruption" })
        #expect(beganEvent["app"] == "music" && beganEvent["reason"] == "default" && beganEvent["options"] == [])
        #expect(try daemon.recctl("--json", "session", "show", "music").json?["state"] == "interrupted")

        try #require(daemon.recctl("session", "deactivate", "call", "--notify-others").status == 0)
        let ended = watcher.waitFor { $0["event"] == "interruption" && $0["type"] == "ended" }
        let endedEvent = try #require(ended.first { $0["type"] == "ended" })
        #expect(endedEvent["app"] == "music" && endedEvent["options"] == ["shouldResume"])

        // Without --notify-others the end carries no options.
        try #require(daemon.recctl("session", "activate", "music").status == 0)
        try #require(daemon.recctl("session", "activate", "call").status == 0)
        try #require(daemon.recctl("session", "deactivate", "call").status == 0)
        let plain = watcher.waitFor(count: 2) { $0["event"] == "interruption" && $0["type"] == "ended" }
        #expect(plain.filter { $0["type"] == "ended" }.last?["options"] == [])
    }

    @Test("duckOthers ducks the other active session at the configured level and unducks on deactivation")
    func ducking() throws {
        let daemon = try Daemon(extraConfig: "\n[policy]\nduck_level_db = -20\n")
        try #require(daemon.recctl("session", "set", "music", "--category", "playback", "--options", "mixWithOthers").status == 0)
        try #require(daemon.recctl("session", "set", "nav", "--category", "playback", "--mode", "voicePrompt", "--options", "duckOthers").status == 0)
        try #require(daemon.recctl("session", "activate", "music").status == 0)
        let watcher = try daemon.watch("music")
        try #require(daemon.recctl("session", "activate", "nav").status == 0)
        let ducked = watcher.waitFor { $0["event"] == "ducked" }
        let event = try #require(ducked.first { $0["event"] == "ducked" })
        #expect(event["app"] == "music" && event["by"] == "nav" && event["levelDB"]?.doubleValue == -20)
        #expect(try daemon.recctl("--json", "session", "show", "music").json?["state"] == "active")
        try #require(daemon.recctl("session", "deactivate", "nav").status == 0)
        let unducked = watcher.waitFor { $0["event"] == "unducked" }
        #expect(unducked.contains { $0["event"] == "unducked" && $0["app"] == "music" })
        // The filter: only music's events reach this watcher.
        #expect(watcher.events.allSatisfy { $0["app"] == nil || $0["app"] == "music" })
    }

    @Test("recctl watch in words: one line per event, the words recctl has always printed")
    func watchInWords() throws {
        let daemon = try Daemon(extraConfig: "\n[policy]\nduck_level_db = -20\n")
        let sessions = [
            ["music", "--category", "playback", "--options", "mixWithOthers"],
            ["nav", "--category", "playback", "--mode", "voicePrompt", "--options", "duckOthers"],
        ]
        for session in sessions { try #require(daemon.recctl(arguments: ["session", "set"] + session).status == 0) }
        try #require(daemon.recctl("session", "set", "radio", "--category", "playback").status == 0)
        try #require(
            daemon.recctl("session", "set", "call", "--category", "playback", "--mode", "spokenAudio").status == 0)
        let watcher = try daemon.watchInWords()
        try #require(daemon.recctl("session", "activate", "music").status == 0)
        try #require(daemon.recctl("session", "activate", "nav").status == 0)
        try #require(daemon.recctl("session", "deactivate", "nav").status == 0)
        try #require(daemon.recctl("session", "deactivate", "music").status == 0)
        try #require(daemon.recctl("session", "activate", "radio").status == 0)
        try #require(daemon.recctl("session", "activate", "call").status == 0)
        try #require(daemon.recctl("session", "deactivate", "call", "--notify-others").status == 0)
        try #require(daemon.recctl("permission", "grant", "music").status == 0)
        try #require(daemon.recctl("session", "delete", "nav").status == 0)
        let expected = [
            "music: session active", "music: ducked by nav to -20 dB", "nav: session active", "music: unducked",
            "nav: session inactive", "music: session inactive", "radio: interruption began (reason default, by call)",
            "radio: interruption ended (reason default) shouldResume", "music: record permission granted",
            "nav: session deleted",
        ]
        let printed = watcher.waitForTexts(expected)
        for line in expected { #expect(printed.contains(line), "\(line) not among \(printed)") }
    }

    @Test("interruptSpokenAudioAndMixWithOthers interrupts spokenAudio and resumes it")
    func spokenAudio() throws {
        let daemon = try Daemon()
        try #require(daemon.recctl("session", "set", "podcast", "--category", "playback", "--mode", "spokenAudio", "--options", "mixWithOthers").status == 0)
        try #require(daemon.recctl("session", "set", "nav", "--category", "playback", "--options", "interruptSpokenAudioAndMixWithOthers").status == 0)
        try #require(daemon.recctl("session", "activate", "podcast").status == 0)
        let watcher = try daemon.watch()
        try #require(daemon.recctl("session", "activate", "nav").status == 0)
        watcher.waitFor { $0["event"] == "interruption" && $0["type"] == "began" }
        try #require(daemon.recctl("session", "deactivate", "nav").status == 0)
        let events = watcher.waitFor { $0["event"] == "interruption" && $0["type"] == "ended" }
        let interruptions = events.filter { $0["event"] == "interruption" }
        #expect(interruptions.map { $0["type"] } == ["began", "ended"])
        #expect(interruptions.allSatisfy { $0["app"] == "podcast" })
        #expect(interruptions.last?["options"] == ["shouldResume"])
    }
}

@Suite("persistence, permission and administrators")
struct PersistenceTests {
    @Test("a session and a granted permission survive a daemon restart")
    func survivesRestart() throws {
        let daemon = try Daemon()
        try #require(daemon.recctl("session", "set", "logger", "--category", "record", "--mode", "measurement", "--options", "mixWithOthers", "--mic-usage", "archive").status == 0)
        try #require(daemon.recctl("permission", "grant", "logger").status == 0)
        try #require(daemon.recctl("mute", "logger", "on").status == 0)
        let before = try #require(daemon.recctl("--json", "session", "show", "logger").json)
        let firstPID = daemon.process?.processIdentifier
        try daemon.restart()
        #expect(daemon.process?.processIdentifier != firstPID)
        let after = try #require(daemon.recctl("--json", "session", "show", "logger").json)
        for key in ["app", "ownerUID", "category", "mode", "options", "policy", "recordPermission", "inputMuted", "micUsage"] {
            #expect(after[key] == before[key], "\(key): \(String(describing: after[key])) != \(String(describing: before[key]))")
        }
        #expect(after["recordPermission"] == "granted" && after["inputMuted"] == true)
    }

    @Test("permission request waits for an administrator's decision")
    func requestWaits() throws {
        let daemon = try Daemon()
        let recctl = daemon.recctlPath
        let socket = daemon.socket
        let result = Locked<CommandResult?>(nil)
        let thread = Thread {
            let r = try? runProgram(recctl, ["--socket", socket, "permission", "request", "newapp"])
            result.withLock { $0 = r }
        }
        thread.start()
        usleep(300_000)
        #expect(result.withLock { $0 } == nil, "request answered before a decision")
        try #require(daemon.recctl("permission", "deny", "newapp").status == 0)
        let deadline = Date().addingTimeInterval(5)
        while result.withLock({ $0 }) == nil && Date() < deadline { usleep(10_000) }
        let answer = try #require(result.withLock { $0 })
        #expect(answer.status == 0 && answer.stdout.contains("denied"))
        // Denied stays denied until reset.
        let regrant = try daemon.recctl("permission", "grant", "newapp")
        #expect(regrant.status == 1 && regrant.stderr.contains("permission reset"))
        try #require(daemon.recctl("permission", "reset", "newapp").status == 0)
        try #require(daemon.recctl("permission", "grant", "newapp").status == 0)
        #expect(try daemon.recctl("permission", "request", "newapp").stdout.contains("granted"))
    }

    @Test("a non-administrator cannot grant, nor change another user's session")
    func nonAdministrator() throws {
        try #require(getuid() == 0, "this test drops to user nobody and needs root")
        let daemon = try Daemon()
        daemon.openSocketToEveryone()
        let denied = try daemon.recctl("permission", "grant", "someapp", user: "nobody")
        #expect(denied.status == 1 && denied.stderr.contains("administrator"), "\(denied.stderr)")
        #expect(denied.stderr.hasPrefix("error: notAdministrator (560030829): "), "\(denied.stderr)")
        #expect(try daemon.recctl("--json", "permission", "list").stdout.contains("someapp") == false)
        try #require(daemon.recctl("session", "set", "rootapp", "--category", "playback").status == 0)
        let foreign = try daemon.recctl("session", "set", "rootapp", "--category", "ambient", user: "nobody")
        #expect(foreign.status == 1 && foreign.stderr.contains("belongs to uid 0"))
        #expect(foreign.stderr.hasPrefix("error: notSessionOwner (560953198): "), "\(foreign.stderr)")
        let foreignJSON = try daemon.recctl("--json", "session", "activate", "rootapp", user: "nobody")
        #expect(foreignJSON.json?["error"]?["name"]?.stringValue == "notSessionOwner", "\(foreignJSON.stdout)")
        #expect(foreignJSON.json?["error"]?["code"]?.intValue == 560_953_198)
        // nobody may create and drive its own session, owned by its uid.
        let own = try daemon.recctl("--json", "session", "set", "mine", "--category", "ambient", user: "nobody")
        #expect(own.status == 0)
        #expect(own.json?["ownerUID"]?.intValue == Int(try userIDs("nobody").uid))
        #expect(try daemon.recctl("permission", "grant", "mine").status == 0)  // root is an administrator
    }
}
