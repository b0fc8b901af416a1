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
