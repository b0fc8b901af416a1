// Which JACK clients are RTP streams, read from `pw-dump`'s JSON: the fixture is what PipeWire
// 0.3.65 printed here (trimmed to a few objects) for module-rtp-source receiving a session
// "studio2" that module-rtp-sink on 10.232.0.2 announced, and for that sender's own node.
// RTPAudioTests checks the whole path on a real stream. The reader is total: anything that is not
// pw-dump's JSON, too long or nested too deep gives nil, never a trap (fuzz/NetworkFuzz.swift too).
import Foundation
import TestSupport
import Testing

@testable import NetworkAudio

@Suite("RTP streams from pw-dump")
struct PipeWireDumpTests {
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
            PipeWireDump.rtpStreams(json: Array(Self.loggerDump.utf8))
                == [
                    "studio2": AnnouncedRTPStream(
                        name: "studio2", address: "10.232.0.2", origin: "root 4005211321 0 IN IP4 10.232.0.2")
                ])
    }

    @Test("the sender's node is the session too, going to its multicast group")
    func sender() {
        #expect(
            PipeWireDump.rtpStreams(json: Array(Self.senderDump.utf8))
                == ["rtp-sink": AnnouncedRTPStream(name: "studio2", address: "239.255.42.1")])
    }

    @Test("the JACK client's name is PipeWire's libjack's: description, else nick, else name; with its application's")
    func clientNames() {
        #expect(PipeWireDump.jackClientName(["node.name": .string("studio2")]) == "studio2")
        #expect(PipeWireDump.jackClientName(["node.name": .string("studio2"), "node.nick": .string("nick")]) == "nick")
        #expect(
            PipeWireDump.jackClientName([
                "node.name": .string("a"), "node.nick": .string("b"), "node.description": .string("Studio 2"),
            ]) == "Studio 2")
        #expect(
            PipeWireDump.jackClientName(["node.name": .string("rx"), "application.name": .string("app")]) == "app/rx")
        #expect(
            PipeWireDump.jackClientName(["node.name": .string("app"), "application.name": .string("app")]) == "app")
        #expect(PipeWireDump.jackClientName(["node.name": .string("")]) == nil)
        #expect(PipeWireDump.jackClientName(["node.name": .integer(7)]) == nil)
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

    @Test("JSON that is not pw-dump's shape gives no sessions; what is not JSON gives nil")
    func notADump() {
        for text in ["[]", "[1, 2]", #"[{"type": "PipeWire:Interface:Node"}]"#, #"[{"info": {"props": 3}}]"#, "[null]"]
        {
            #expect(PipeWireDump.rtpStreams(json: Array(text.utf8)) == [:], "\(text)")
        }
        let broken = [
            "", "not json", "{}", "[", "[1,]", "[01]", #"["\x"]"#, #"["\u12"]"#, "[1] 2", "[tru]",
            #"[{"a" 1}]"#, "[\"\u{01}\"]", "[-]", "[1.]", "[1e]",
        ]
        for text in broken {
            #expect(PipeWireDump.rtpStreams(json: Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test("escapes are decoded (a surrogate pair, a lone surrogate as U+FFFD); numbers and strings both give a latency")
    func escapesAndNumbers() throws {
        let dump = #"""
            [{"type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "st\u00fcdio \ud83c\udfb5 \udc00",
              "rtp.session": "s\"1\\", "rtp.origin": "root 1 0 IN IP4 10.0.0.9", "sess.latency.msec": "250",
              "other": [1, {"deep": [true, false, null, -1.5e-3]}]}}},
             {"type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "b", "rtp.session": "t",
              "sess.latency.msec": 1.5}}},
             {"type": "PipeWire:Interface:Node", "info": {"props": {"node.name": "c", "rtp.session": "u",
              "sess.latency.msec": 99999999999999999999}}}]
            """#
        let sessions = try #require(PipeWireDump.rtpStreams(json: Array(dump.utf8)))
        #expect(
            sessions["stüdio 🎵 \u{FFFD}"]
                == AnnouncedRTPStream(
                    name: "s\"1\\", address: "10.0.0.9", origin: "root 1 0 IN IP4 10.0.0.9", latencyMilliseconds: 250))
        #expect(sessions["b"] == AnnouncedRTPStream(name: "t", address: nil))
        #expect(sessions["c"] == AnnouncedRTPStream(name: "u", address: nil))
    }

    @Test("bounded: more than 8 MiB or nesting deeper than 64 is refused whole; 64 deep is read")
    func bounds() {
        let deep = { (levels: Int) in
            "[{\"type\": \"x:Node\", \"info\": {\"props\": {\"a\": " + String(repeating: "[", count: levels)
                + String(repeating: "]", count: levels) + "}}}]"
        }
        // The object, info and props are 4 levels of the 64 with the array around them.
        #expect(PipeWireDump.rtpStreams(json: Array(deep(PipeWireDump.maximumDepth - 4).utf8)) == [:])
        #expect(PipeWireDump.rtpStreams(json: Array(deep(PipeWireDump.maximumDepth - 3).utf8)) == nil)
        #expect(PipeWireDump.rtpStreams(json: Array(deep(100_000).utf8)) == nil, "no stack overflow")
        let long = "[\"" + String(repeating: "a", count: PipeWireDump.maximumBytes) + "\"]"
        #expect(PipeWireDump.rtpStreams(json: Array(long.utf8)) == nil)
    }

    @Test("a real pw-dump of the logger (PipeWire 0.3.65, the seed of the fuzz target) gives the session")
    func realDump() throws {
        let path = ExternalTools.packageRoot + "/fuzz/corpus/network/pw-dump-logger.json"
        let bytes = try #require(FileManager.default.contents(atPath: path), "\(path)")
        #expect(
            PipeWireDump.rtpStreams(json: Array(bytes))
                == [
                    "studio2": AnnouncedRTPStream(
                        name: "studio2", address: "10.231.0.2", origin: "root 4005561041 0 IN IP4 10.231.0.2")
                ])
    }
}
