// Which JACK clients are RTP streams, read from `pw-dump`'s JSON: the fixture is what PipeWire
// 0.3.65 printed here (trimmed to a few objects) for module-rtp-source receiving a session
// "studio2" that module-rtp-sink on 10.232.0.2 announced, and for that sender's own node.
// RTPAudioTests checks the whole path on a real stream.
import Foundation
import Testing

@testable import Daemon

@Suite("RTP sessions from pw-dump")
struct RTPSessionsTests {
    /// The logger's graph: the null sink headless-system.conf makes, the rtp-source's node for
    /// the session, one of its ports, and a JACK client (recd-signal under pw-jack).
    static let loggerDump = #"""
        [
          { "id": 30, "type": "PipeWire:Interface:Node", "version": 3, "permissions": [ "r", "w", "x", "m" ],
            "info": { "max-input-ports": 65, "max-output-ports": 0, "state": "running", "error": null,
              "props": { "adapter.auto-port-config": "{ mode = dsp position = unknown }", "audio.channels": 2,
                "factory.name": "support.null-audio-sink", "media.class": "Audio/Sink",
                "node.description": "system", "node.driver": true, "node.name": "system-playback",
                "object.id": 30, "object.serial": 31 } } },
          { "id": 40, "type": "PipeWire:Interface:Node", "version": 3, "permissions": [ "r", "w", "x", "m" ],
            "info": { "max-input-ports": 0, "max-output-ports": 65, "state": "running", "error": null,
              "props": { "adapt.follower.spa-node": "",
                "adapter.auto-port-config": "{ mode = dsp position = preserve }", "audio.adapt.follower": "",
                "client.id": 39, "clock.quantum-limit": 8192, "factory.id": 17, "factory.mode": "split",
                "library.name": "audioconvert/libspa-audioconvert", "media.class": "Stream/Output/Audio",
                "media.name": "RTP Stream (studio2)", "node.autoconnect": true, "node.latency": "2400/48000",
                "node.name": "studio2", "node.network": true, "node.rate": "1/48000", "node.virtual": true,
                "node.want-driver": true, "object.id": 40, "object.register": false, "object.serial": 41,
                "rtp.fmt": "L24/48000/2", "rtp.origin": "root 4005211321 0 IN IP4 10.232.0.2", "rtp.payload": 127,
                "rtp.session": "studio2", "stream.is-live": true } } },
          { "id": 41, "type": "PipeWire:Interface:Port",
            "info": { "direction": "output",
              "props": { "audio.channel": "FL", "format.dsp": "32 bit float mono audio", "node.id": 40,
                "object.path": "studio2:output_0", "port.alias": "studio2:output_FL", "port.direction": "out",
                "port.id": 0, "port.name": "output_FL", "rtp.session": "not a node's" } } },
          { "id": 44, "type": "PipeWire:Interface:Node",
            "info": { "state": "running",
              "props": { "client.api": "jack", "client.id": 43, "client.name": "studiodeck",
                "media.type": "Audio", "node.always-process": true, "node.description": "studiodeck",
                "node.group": "jack-24239", "node.name": "studiodeck", "object.id": 44 } } }
        ]
        """#

    /// The sender's own node (module-rtp-sink with `stream.props = { node.name = rtp-sink }`): it
    /// has rtp.session too, and where it sends, but no origin.
    static let senderDump = #"""
        [ { "id": 40, "type": "PipeWire:Interface:Node",
            "info": { "state": "running",
              "props": { "media.class": "Stream/Input/Audio", "media.name": "RTP Sender Stream",
                "node.description": "rtp-sink", "node.name": "rtp-sink", "node.network": true,
                "rtp.destination.ip": "239.255.42.1", "rtp.destination.port": 46000, "rtp.mtu": 1280,
                "rtp.ptime": 4, "rtp.session": "studio2", "rtp.source.ip": "10.232.0.2", "rtp.ttl": 1 } } } ]
        """#

    @Test("the rtp-source's node is session studio2 from 10.232.0.2; a null sink, a port, a JACK client are not")
    func receiver() {
        #expect(
            PipeWireDump.rtpSessions(json: Data(Self.loggerDump.utf8))
                == [
                    "studio2": RTPSession(
                        name: "studio2", address: "10.232.0.2", origin: "root 4005211321 0 IN IP4 10.232.0.2")
                ])
    }

    @Test("the sender's node is the session too, going to its multicast group")
    func sender() {
        #expect(
            PipeWireDump.rtpSessions(json: Data(Self.senderDump.utf8))
                == ["rtp-sink": RTPSession(name: "studio2", address: "239.255.42.1")])
    }

    @Test("the JACK client's name is PipeWire's libjack's: description, else nick, else name; with its application's")
    func clientNames() {
        #expect(PipeWireDump.jackClientName(["node.name": "studio2"]) == "studio2")
        #expect(PipeWireDump.jackClientName(["node.name": "studio2", "node.nick": "nick"]) == "nick")
        #expect(
            PipeWireDump.jackClientName(["node.name": "a", "node.nick": "b", "node.description": "Studio 2"])
                == "Studio 2")
        #expect(PipeWireDump.jackClientName(["node.name": "rx", "application.name": "app"]) == "app/rx")
        #expect(PipeWireDump.jackClientName(["node.name": "app", "application.name": "app"]) == "app")
        #expect(PipeWireDump.jackClientName(["node.name": ""]) == nil)
        #expect(PipeWireDump.jackClientName([:]) == nil)
    }

    @Test(
        "an SDP origin's address; none for 0.0.0.0 (a sender without source.ip) or another shape",
        arguments: [
            ("root 4005211321 0 IN IP4 10.232.0.2", "10.232.0.2"),
            ("- 1 0 IN IP6 fd00::2", "fd00::2"),
            ("root 4005211321 0 IN IP4 0.0.0.0", nil),
            ("root 1 0 IN IP6 ::", nil),
            ("root 4005211321 0 IN IP4", nil),
            ("root 4005211321 0 XX IP4 10.0.0.1", nil),
            ("", nil),
        ] as [(String, String?)])
    func origins(origin: String, address: String?) {
        #expect(PipeWireDump.senderAddress(origin: origin) == address)
    }

    @Test("text that is not pw-dump's gives no sessions")
    func notADump() {
        for text in ["", "not json", "{}", "[1, 2]", #"[{"type": "PipeWire:Interface:Node"}]"#] {
            #expect(PipeWireDump.rtpSessions(json: Data(text.utf8)).isEmpty, "\(text)")
        }
    }
}
