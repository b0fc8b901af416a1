// The front end and the coordinator: request lines in, replies and events out, with clients of
// chosen uids (the handler's seam: the server hands the front end each client's credentials).
// The engine, the services, the worker threads and the files are real; the client link only
// collects what recd sends and runs what it posts on the test thread (the control thread here).
import AudioEngine
import AudioTestSupport
import Codec
import ControlProtocol
import Foundation
import Glibc
import Platform
import SessionPolicy
import SystemSupport
import Testing

@testable import Daemon

@Suite("front end and coordinator against jackd", .serialized)
final class CoordinatorTests {
    let rig: RouterRig
    let root: ClientID
    let alice: ClientID
    let bob: ClientID

    init() throws {
        rig = try RouterRig()
        root = rig.connect(uid: 0)
        alice = rig.connect(uid: 1000)
        bob = rig.connect(uid: 1001)
    }

    func error(_ reply: JSONValue?) -> String? { reply?["error"]?["name"]?.stringValue }

    @Test("requests are decoded, run and answered with their id: hello, session.set (legacy keys too), show, list")
    func answers() throws {
        let hello = try #require(rig.send(alice, #"{"id":"h1","op":"hello"}"#))
        #expect(hello["id"] == "h1" && hello["ok"] == true && hello["uid"]?.intValue == 1000 && hello["admin"] == false)
        #expect(rig.send(root, #"{"id":2,"op":"hello"}"#)?["admin"] == true)

        let set = try #require(
            rig.send(
                alice,
                #"{"id":3,"op":"session.set","app":"radio","category":"playback","mic_usage":"m"}"#
            ))
        #expect(set["ok"] == true && set["session"]?["owner_uid"]?.intValue == 1000)
        #expect(set["session"]?["mic_usage"] == "m" && set["session"]?["route"]?["outputs"] == ["spk"])
        #expect(rig.send(bob, #"{"id":4,"op":"session.show","app":"radio"}"#)?["session"]?["category"] == "playback")
        #expect(rig.send(bob, #"{"id":5,"op":"session.list"}"#)?["sessions"]?.arrayValue?.count == 1)
        #expect(error(rig.send(bob, #"{"id":6,"op":"session.show","app":"nope"}"#)) == "expiredSession")
    }

    @Test("a change to another's session is notSessionOwner; its owner and administrators may; anyone may read")
    func owners() throws {
        try #require(
            rig.send(alice, #"{"id":1,"op":"session.set","app":"radio","category":"playback"}"#)?["ok"] == true)
        for line in [
            #"{"id":2,"op":"session.activate","app":"radio"}"#,
            #"{"id":3,"op":"session.set","app":"radio","category":"ambient"}"#,
            #"{"id":4,"op":"mute","app":"radio","muted":true}"#,
            #"{"id":5,"op":"session.delete","app":"radio"}"#,
        ] {
            let reply = rig.send(bob, line)
            #expect(error(reply) == "notSessionOwner", "\(line): \(String(describing: reply))")
            #expect(reply?["error"]?["message"]?.stringValue?.contains("uid 1000") == true)
        }
        #expect(
            rig.coordinator.store.sessions["radio"]?.configuration.category == .playback,
            "a refused change changed something")
        #expect(rig.send(bob, #"{"id":6,"op":"session.show","app":"radio"}"#)?["ok"] == true)
        #expect(rig.send(alice, #"{"id":7,"op":"session.activate","app":"radio"}"#)?["ok"] == true)
        #expect(rig.send(root, #"{"id":8,"op":"session.deactivate","app":"radio"}"#)?["ok"] == true)
    }

    @Test("administrators-only requests are notAdministrator for anyone else, checked after the arguments")
    func administrators() throws {
        let denied = rig.send(alice, #"{"id":1,"op":"permission.grant","app":"radio"}"#)
        #expect(error(denied) == "notAdministrator")
        #expect(denied?["error"]?["message"]?.stringValue?.contains("root") == true)
        #expect(error(rig.send(alice, #"{"id":2,"op":"archive.reindex"}"#)) == "notAdministrator")
        #expect(error(rig.send(alice, #"{"id":3,"op":"permission.grant"}"#)) == "badParam", "arguments come first")
        #expect(rig.coordinator.store.permission("radio") == .undetermined)
        #expect(rig.send(root, #"{"id":4,"op":"permission.grant","app":"radio"}"#)?["state"] == "granted")
        #expect(rig.coordinator.store.permission("radio") == .granted)
    }

    @Test("a request the typed command refuses is badParam naming what is wrong, and changes nothing")
    func badCommands() throws {
        let missing = rig.send(alice, #"{"id":1,"op":"session.activate"}"#)
        #expect(error(missing) == "badParam" && missing?["error"]?["message"]?.stringValue?.contains("\"app\"") == true)
        let mistyped = rig.send(alice, #"{"id":2,"op":"mute","app":"radio","muted":"yes"}"#)
        #expect(
            error(mistyped) == "badParam" && mistyped?["error"]?["message"]?.stringValue?.contains("\"muted\"") == true)
        #expect(error(rig.send(alice, #"{"id":3,"op":"session.set","app":"radio","category":"loud"}"#)) == "badParam")
        #expect(error(rig.send(alice, #"{"id":4,"op":"fly"}"#)) == "badParam")
        #expect(
            error(rig.send(alice, #"{"id":5,"op":"status"}"#, descriptors: [dup(0)])) == "badParam",
            "a descriptor with status")
        #expect(rig.coordinator.store.sessions.isEmpty)
    }

    @Test("play: a file that is not audio is cannotStartPlaying and activates nothing")
    func playBadFile() throws {
        try #require(
            rig.send(alice, #"{"id":1,"op":"session.set","app":"radio","category":"playback"}"#)?["ok"] == true)
        let path = rig.directory.path + "/notes.txt"
        try "text".write(toFile: path, atomically: true, encoding: .utf8)
        let reply = rig.request(
            alice, #"{"id":2,"op":"play","app":"radio","file":"\#(path)"}"#, descriptors: [try openReadOnly(path)])
        #expect(error(reply) == "cannotStartPlaying")
        #expect(rig.coordinator.store.sessions["radio"]?.state == .inactive, "a bad file activated the session")
        #expect(rig.coordinator.players.all.isEmpty)
    }

    @Test("play replies once the player plays; the control thread returns at once and serves others meanwhile")
    func playIsNotSlow() throws {
        try #require(
            rig.send(alice, #"{"id":1,"op":"session.set","app":"radio","category":"playback"}"#)?["ok"] == true)
        #expect(rig.send(alice, #"{"id":2,"op":"watch","app":"radio"}"#)?["ok"] == true)
        let path = rig.directory.path + "/dc.wav"
        try writeConstantWAV(path: path, seconds: 10)
        let began = SystemClock.monotonicSeconds()
        let immediate = rig.send(
            alice, #"{"id":3,"op":"play","app":"radio","file":"\#(path)"}"#, descriptors: [try openReadOnly(path)])
        let busy = SystemClock.monotonicSeconds() - began
        #expect(immediate == nil, "play answered before its file was read")
        #expect(busy < 0.05, "the control thread spent \(Int(busy * 1000)) ms in play")
        #expect(rig.send(bob, #"{"id":9,"op":"status"}"#)?["ok"] == true, "another client waited for the play")

        var slowest = 0.0
        #expect(
            rig.pump {
                let began = SystemClock.monotonicSeconds()
                let ran = rig.link.mailbox.run()
                if ran > 0 { slowest = max(slowest, SystemClock.monotonicSeconds() - began) }
                return rig.link.reply(to: alice, id: 3) != nil
            })
        #expect(slowest < 0.05, "a completion held the control thread \(Int(slowest * 1000)) ms")
        let reply = try #require(rig.link.reply(to: alice, id: 3))
        #expect(reply["ok"] == true && reply["player"]?["state"] == "playing", "\(reply)")
        #expect(
            rig.coordinator.store.sessions["radio"]?.state == .active
                && rig.coordinator.store.sessions["radio"]?.streamsRunning == true)
        let events = rig.link.events(to: alice).compactMap { $0["event"]?.stringValue }
        #expect(events.contains("player"), "\(events)")
        let request = String(format: "%.2f", busy * 1000)
        let completion = String(format: "%.2f", slowest * 1000)
        Swift.print("play: control thread busy \(request) ms in the request, at most \(completion) ms in a completion")
    }

    @Test("an interruption's effects reach the player service: the interrupted app's player pauses, and resumes")
    func effectsToPlayers() throws {
        try #require(
            rig.send(alice, #"{"id":1,"op":"session.set","app":"radio","category":"playback"}"#)?["ok"] == true)
        try #require(rig.send(bob, #"{"id":1,"op":"session.set","app":"alarm","category":"playback"}"#)?["ok"] == true)
        #expect(rig.send(alice, #"{"id":2,"op":"watch","app":"radio"}"#)?["ok"] == true)
        let path = rig.directory.path + "/dc.wav"
        try writeConstantWAV(path: path, seconds: 10)
        let played = rig.request(
            alice, #"{"id":3,"op":"play","app":"radio","file":"\#(path)"}"#, descriptors: [try openReadOnly(path)])
        try #require(played?["ok"] == true)

        #expect(rig.send(bob, #"{"id":4,"op":"session.activate","app":"alarm"}"#)?["ok"] == true)
        #expect(rig.coordinator.players.get("radio", "main")?.pausedBy == .interruption)
        let paused = rig.link.events(to: alice).first { $0["event"] == "player" && $0["state"] == "paused" }
        #expect(paused?["reason"] == "interruption")
        #expect(rig.link.events(to: alice).contains { $0["event"] == "interruption" && $0["type"] == "began" })

        #expect(rig.send(bob, #"{"id":5,"op":"session.deactivate","app":"alarm","notify_others":true}"#)?["ok"] == true)
        #expect(rig.link.events(to: alice).contains { $0["event"] == "interruption" && $0["type"] == "ended" })
        // No auto_resume for a session made at run time: the app resumes itself.
        #expect(
            rig.send(alice, #"{"id":6,"op":"play","app":"radio"}"#)?["players"]?.arrayValue?.first?["state"]
                == "playing")
    }

    @Test("facts in: a player that plays out by itself ends the hint and isOtherAudioPlaying at once, without a tick's safety net")
    func factsFromServices() throws {
        try #require(rig.send(alice, #"{"id":1,"op":"session.set","app":"game","category":"ambient"}"#)?["ok"] == true)
        try #require(rig.send(alice, #"{"id":2,"op":"session.activate","app":"game"}"#)?["ok"] == true)
        try #require(rig.send(bob, #"{"id":3,"op":"session.set","app":"music","category":"playback"}"#)?["ok"] == true)
        #expect(rig.send(alice, #"{"id":4,"op":"watch","app":"game"}"#)?["ok"] == true)
        let path = rig.directory.path + "/short.wav"
        try writeConstantWAV(path: path, seconds: 0.5)
        let played = rig.request(
            bob, #"{"id":5,"op":"play","app":"music","file":"\#(path)"}"#, descriptors: [try openReadOnly(path)])
        try #require(played?["ok"] == true, "\(played?.jsonText ?? "no reply")")
        func hints() -> [String] {
            rig.link.events(to: alice).filter { $0["event"] == "silenceSecondaryAudioHint" }.compactMap {
                $0["type"]?.stringValue
            }
        }
        #expect(hints() == ["begin"], "the player's start was not a fact for the policy: \(hints())")
        #expect(rig.coordinator.store.isOtherAudioPlaying(app: "game"))
        // The tick only reaps the finished player; the service reports its end, the policy decides.
        #expect(rig.pump { hints() == ["begin", "end"] }, "\(hints())")
        #expect(!rig.coordinator.store.isOtherAudioPlaying(app: "game"))
        #expect(rig.coordinator.store.sessions["music"]?.streamsRunning == false)
    }

    @Test("permission and deletion effects reach the recorder and monitoring services")
    func effectsToRecordersAndMonitoring() throws {
        try #require(rig.send(root, #"{"id":1,"op":"permission.grant","app":"dj"}"#)?["ok"] == true)
        let set = rig.send(alice, #"{"id":2,"op":"session.set","app":"dj","category":"multiRoute","micUsage":"dj"}"#)
        try #require(set?["ok"] == true)
        let started = rig.send(alice, #"{"id":3,"op":"record.start","app":"dj","input":"mic"}"#)
        #expect(started?["recorder"]?["port"] == "mic", "\(String(describing: started))")
        #expect(rig.coordinator.recorders.isRecording("dj"))
        #expect(rig.send(alice, #"{"id":4,"op":"cue.outputs","app":"dj","main":"spk"}"#)?["monitoring"]?["app"] == "dj")
        #expect(rig.coordinator.monitoring.owner == "dj")

        #expect(rig.send(root, #"{"id":5,"op":"permission.deny","app":"dj"}"#)?["state"] == "denied")
        #expect(!rig.coordinator.recorders.isRecording("dj"), "a denied app still records")
        #expect(rig.pump { rig.coordinator.recorders.stopping.isEmpty })

        #expect(rig.send(alice, #"{"id":6,"op":"session.delete","app":"dj"}"#)?["ok"] == true)
        #expect(rig.coordinator.monitoring.owner == nil, "a deleted session kept the buses")
    }

    @Test("record.stop replies once the recorder has finished its files")
    func recordStopRepliesLater() throws {
        try #require(rig.send(root, #"{"id":1,"op":"permission.grant","app":"logger"}"#)?["ok"] == true)
        try #require(
            rig.send(alice, #"{"id":2,"op":"session.set","app":"logger","category":"record","mic_usage":"log"}"#)?["ok"]
                == true)
        try #require(rig.send(alice, #"{"id":3,"op":"record.start","app":"logger"}"#)?["ok"] == true)
        #expect(rig.pump { rig.coordinator.recorders.recorders.first?.tap.framesCaptured ?? 0 > 12_000 })
        #expect(
            rig.send(alice, #"{"id":4,"op":"record.stop","app":"logger"}"#) == nil,
            "record.stop answered before the files were finished")
        let reply = rig.request(alice, #"{"id":5,"op":"status"}"#)
        #expect(reply?["recorders"]?.arrayValue == [])
        #expect(rig.pump { rig.link.reply(to: alice, id: 4) != nil })
        #expect(rig.link.reply(to: alice, id: 4)?["recorders"]?.arrayValue?.first?["stream"] == "mic")
        #expect(rig.coordinator.store.sessions["logger"]?.streamsRunning == false)
    }
}
