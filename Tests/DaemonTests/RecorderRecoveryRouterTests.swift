// The router's share of recorders that come back by themselves, for the causes the policy
// decides: an interruption. The engine, the recorders and the files are real (the test's
// jackd); the tick runs on the test thread as the control loop would run it.
import ControlProtocol
import Foundation
import SystemSupport
import Testing

@testable import Daemon

@Suite("router: interrupted recorders in status's waiting", .serialized)
struct RecorderRecoveryRouterTests {
    /// A logger interrupted by a non-mixable `radio`; the interruption ends with shouldResume.
    /// Returns status's `waiting` while interrupted and after the end (ticks run in between).
    static func interruptAndEnd(_ rig: RouterRig, start: (ClientID) -> Void) throws -> (during: JSONValue?, after: JSONValue?) {
        let root = rig.connect(uid: 0)
        start(root)
        try #require(rig.pump { rig.coordinator.recorders.isRecording("logger") })
        try #require(rig.send(root, #"{"id":10,"op":"session.set","app":"radio","category":"playback"}"#)?["ok"] == true)
        try #require(rig.send(root, #"{"id":11,"op":"session.activate","app":"radio"}"#)?["ok"] == true)
        #expect(rig.coordinator.store.sessions["logger"]?.state == .interrupted)
        _ = rig.pump(seconds: 0.3) { false }
        let during = rig.request(root, #"{"id":12,"op":"status"}"#)?["waiting"]
        try #require(
            rig.send(root, #"{"id":13,"op":"session.deactivate","app":"radio","notifyOthers":true}"#)?["ok"] == true)
        _ = rig.pump(seconds: 0.3) { false }
        let after = rig.request(root, #"{"id":14,"op":"status"}"#)?["waiting"]
        #expect(!rig.coordinator.recorders.isRecording("logger"), "no auto_resume: recd does not resume it (SPEC §3)")
        return (during, after)
    }

    @Test("a recorder started by record start: waiting (interruption) while interrupted, forgotten when it ends without auto_resume")
    func startedRecorder() throws {
        let rig = try RouterRig()
        let (during, after) = try Self.interruptAndEnd(rig) { root in
            _ = rig.send(root, #"{"id":1,"op":"permission.grant","app":"logger"}"#)
            _ = rig.send(root, #"{"id":2,"op":"session.set","app":"logger","category":"record","micUsage":"log"}"#)
            _ = rig.send(root, #"{"id":3,"op":"record.start","app":"logger","input":"mic"}"#)
        }
        let waiting = try #require(during?.arrayValue?.first, "\(String(describing: during))")
        #expect(waiting["reason"] == "interruption" && waiting["declared"] == false && waiting["stream"] == "mic")
        #expect(after?.arrayValue == [], "\(String(describing: after))")
    }

    @Test("a declared recorder of a named port (another input came in later): its route shows that port; the port goes, it stops (routeChange), waits inputGone and the route has no input")
    func namedPortOffTheRouteStops() throws {
        let device = try StandInDevice()
        // The device's port first, the mic later: the mic is the last in, but the session records the line.
        let rig = try RouterRig(
            ports: port("line", "lineIn", "input", jack: device.sourcePorts) + systemPorts,
            extra: "[session logger]\ncategory = record\nmic_usage = log\nrecord = line\npermission = granted\n")
        let root = rig.connect(uid: 0)
        #expect(rig.send(root, #"{"id":1,"op":"watch","app":"logger"}"#)?["ok"] == true)
        try #require(rig.pump { rig.coordinator.recorders.isRecording("logger") })
        #expect(rig.coordinator.store.sessions["logger"]?.route.inputs == ["line"])

        device.unplug()
        #expect(rig.pump { !rig.coordinator.recorders.isRecording("logger") }, "the recorder of a vanished port went on")
        func stoppedEvent() -> JSONValue? {
            rig.link.events(to: root).first {
                $0["event"]?.stringValue == "recording" && $0["state"]?.stringValue == "stopped"
            }
        }
        #expect(rig.pump { stoppedEvent() != nil }, "\(rig.link.events(to: root))")
        let stopped = stoppedEvent()
        #expect(stopped?["reason"] == "routeChange" && stopped?["port"] == "line", "\(String(describing: stopped))")
        #expect(rig.coordinator.store.sessions["logger"]?.route.inputs == [], "the route has no input without the line")
        let waiting = rig.request(root, #"{"id":2,"op":"status"}"#)?["waiting"]?.arrayValue?.first
        #expect(waiting?["reason"] == "inputGone" && waiting?["port"] == "line", "\(String(describing: waiting))")
    }

    @Test("a declared recorder: waiting (interruption) while interrupted, then listed as failed, saying how to start it")
    func declaredRecorder() throws {
        let rig = try RouterRig(
            extra: """
                [session logger]
                category = record
                mic_usage = log
                record = mic
                permission = granted
                """)
        let (during, after) = try Self.interruptAndEnd(rig) { _ in }
        let waiting = try #require(during?.arrayValue?.first, "\(String(describing: during))")
        #expect(waiting["reason"] == "interruption" && waiting["declared"] == true)
        let held = try #require(after?.arrayValue?.first, "\(String(describing: after))")
        #expect(held["reason"] == "failed" && held["resumesWhen"] == .null && held["since"] == waiting["since"])
        #expect(held["detail"]?.stringValue?.contains("recctl record start logger") == true, "\(held.jsonText)")
    }
}
