// ALSA jack sense and capture switches through an injected event source (there is no sound
// card on these machines): the event → port → route logic of the real daemon, end to end.
import ControlProtocol
import Foundation
import TestSupport
import Testing

@Suite("device sensing end to end (scripted ALSA events)")
struct DeviceSensingTests {
    func inject(_ daemon: Daemon, _ events: String) throws -> CommandResult {
        let client = try RawClient(path: daemon.socket)
        client.send("{\"id\":1,\"op\":\"devices.inject\",\"events\":\(events)}\n")
        let reply = client.readJSON()
        return CommandResult(status: reply?["ok"] == true ? 0 : 1, stdout: reply?.jsonText ?? "", stderr: "")
    }

    @Test("jack sense unplugs and plugs the headphones (routeChange), the capture switch interrupts with builtInMicMuted")
    func senseAndMute() throws {
        let daemon = try Daemon(ports: """
            [port mic]
            type = builtInMic
            direction = input
            jack = system:capture_1, system:capture_2
            mute_switch = Capture Switch

            [port speaker]
            type = builtInSpeaker
            direction = output
            jack = system:playback_1

            [port phones]
            type = headphones
            direction = output
            jack = system:playback_2
            sense = Headphone Jack

            """, environment: ["RECD_DEVICE_EVENTS": "scripted"])
        try #require(daemon.recctl("session", "set", "talk", "--category", "playAndRecord", "--mic-usage", "test").status == 0)
        try #require(daemon.recctl("session", "activate", "talk").status == 0)
        #expect(try eventually { try daemon.recctl("--json", "session", "show", "talk").json?["route"]?["outputs"] == ["phones"] })
        let watcher = try daemon.watch("talk")
        try #require(try inject(daemon, #"[{"type":"jackSense","card":"PCH","control":"Headphone Jack","plugged":false}]"#).status == 0)
        let unplugged = watcher.waitFor { $0["event"] == "routeChange" }
        let change = try #require(unplugged.first { $0["event"] == "routeChange" })
        #expect(change["reason"] == "oldDeviceUnavailable" && change["previousRoute"]?["outputs"] == ["phones"] && change["route"]?["outputs"] == ["speaker"])
        #expect(try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first { $0["name"] == "phones" }?["available"] == false)

        try #require(try inject(daemon, #"[{"type":"jackSense","card":"PCH","control":"Headphone Jack","plugged":true}]"#).status == 0)
        let plugged = watcher.waitFor(count: 2) { $0["event"] == "routeChange" }
        #expect(plugged.last { $0["event"] == "routeChange" }?["reason"] == "newDeviceAvailable")

        try #require(try inject(daemon, #"[{"type":"captureSwitch","card":"PCH","control":"Capture Switch","on":false}]"#).status == 0)
        let muted = watcher.waitFor { $0["event"] == "interruption" && $0["type"] == "began" }
        #expect(muted.contains { $0["event"] == "interruption" && $0["reason"] == "builtInMicMuted" && $0["reasonCode"]?.intValue == 2 })
        try #require(try inject(daemon, #"[{"type":"captureSwitch","card":"PCH","control":"Capture Switch","on":true}]"#).status == 0)
        let unmuted = watcher.waitFor { $0["event"] == "interruption" && $0["type"] == "ended" }
        #expect(unmuted.contains { $0["type"] == "ended" && $0["options"] == ["shouldResume"] })
    }

    @Test("without RECD_DEVICE_EVENTS=scripted recd watches ALSA (none here) and refuses injection; bad sense values are config errors")
    func realSourceAndErrors() throws {
        let daemon = try Daemon()
        #expect(try inject(daemon, "[]").status == 1)
        #expect(daemon.process?.isRunning == true, "no sound card is no error")
        let directory = try makeTemporaryDirectory("recd-sense")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/bad.conf"
        try "[port phones]\ntype = headphones\ndirection = output\njack = system:playback_1\nsense = hw:/Headphone Jack\n".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runProgram(productsDirectory.appendingPathComponent("recd").path, ["--check-config", path])
        #expect(result.status == 1 && result.stderr.contains("\(path):1:"), "\(result.stderr)")
    }
}
