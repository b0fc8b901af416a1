// The router's part in streams following the route: the routeChange effect
// reaches the recorder service for a recorder declared in the config (`record = route`). The
// engine, services, archiver threads and files are real; the device is a JACK client that
// goes away.
import AudioTestSupport
import ControlProtocol
import Foundation
import Testing

@testable import Daemon

@Suite("router: streams follow the route", .serialized)
final class RouteFollowRouterTests {
    @Test("a declared recorder (record = route) follows the input route: the last-in input goes, it goes on from the mic (END_REASON=routeChange, no stopped event)")
    func declaredRecorderFollows() throws {
        let device = try StandInDevice()
        let rig = try RouterRig(
            ports: systemPorts + port("line", "lineIn", "input", jack: device.sourcePorts),
            extra: "[session logger]\ncategory = record\nmic_usage = archive\nrecord = route\npermission = granted\n")
        let root = rig.connect(uid: 0)
        #expect(rig.send(root, #"{"id":1,"op":"watch","app":"logger"}"#)?["ok"] == true)
        var requests = 1
        func recorders() -> [JSONValue] {
            requests += 1  // replies are found by id
            return rig.send(root, "{\"id\":\(requests),\"op\":\"status\"}")?["recorders"]?.arrayValue ?? []
        }
        // Both inputs were there at start-up; the later one in the config is the last in.
        #expect(recorders().map { $0["port"] } == ["line"])
        func recording(_ state: String) -> [JSONValue] {
            rig.link.events(to: root).filter {
                $0["event"]?.stringValue == "recording" && $0["state"]?.stringValue == state
            }
        }
        #expect(rig.pump { !recording("segment").isEmpty }, "the declared recorder never opened a segment")

        device.unplug()
        #expect(rig.pump { !recording("switched").isEmpty }, "the recorder did not go on from the mic")
        let switched = try #require(recording("switched").first)
        #expect(switched["port"] == "mic" && switched["previousPort"] == "line" && switched["stream"] == "line")
        #expect(recorders().map { $0["port"] } == ["mic"])
        #expect(rig.pump { !recording("finished").isEmpty })
        #expect(recording("finished").first?["reason"] == "routeChange")
        #expect(recording("stopped").isEmpty, "the stream did not stop")
    }
}
