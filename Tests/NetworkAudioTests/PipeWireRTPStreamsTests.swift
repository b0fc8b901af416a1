// What a `pw-dump` run's sessions become: the streams the RTP monitor listens to (only
// receivers' nodes, by SDP origin), the environment `pw-dump` is given, the log's words. Pure.
import NetworkAudio
import Testing

@Suite("RTP streams from pw-dump, for the monitor")
struct PipeWireRTPStreamsTests {
    @Test(
        "the monitor listens to the receivers' nodes by SDP origin, with their latency or the default; a sender's node is not listened to"
    )
    func wanted() {
        let sessions = [
            "rtp-source-studio2": AnnouncedRTPStream(
                name: "studio2", address: "10.0.0.2", origin: "- 1 1 IN IP4 10.0.0.2", latencyMilliseconds: 40),
            "rtp-source-hall": AnnouncedRTPStream(name: "hall", address: nil, origin: "- 7 7 IN IP4 10.0.0.7"),
            "rtp-sink": AnnouncedRTPStream(name: "out", address: "239.0.0.1"),
        ]
        let wanted = PipeWireRTPStreams.wanted(sessions)
        #expect(Set(wanted.keys) == ["- 1 1 IN IP4 10.0.0.2", "- 7 7 IN IP4 10.0.0.7"])
        #expect(
            wanted["- 1 1 IN IP4 10.0.0.2"]
                == RTPMonitor.Wanted(
                    client: "rtp-source-studio2", session: "studio2", address: "10.0.0.2", latencyMilliseconds: 40))
        #expect(wanted["- 7 7 IN IP4 10.0.0.7"]?.latencyMilliseconds == RTPMonitor.defaultLatencyMilliseconds)
        #expect(PipeWireRTPStreams.describe(sessions).hasPrefix("rtp-sink (out@239.0.0.1), rtp-source-hall (hall@?)"))
        #expect(PipeWireRTPStreams.describe([:]) == "none")
    }

    @Test("pw-dump gets a fixed PATH and locale and only the variables that find PipeWire")
    func environment() {
        let given = [
            "XDG_RUNTIME_DIR": "/run/user/1000", "LD_PRELOAD": "/tmp/evil.so", "PATH": "/tmp", "HOME": "/home/a",
        ]
        #expect(
            PipeWireRTPStreams.environment(from: given)
                == ["PATH": "/usr/bin:/bin", "LC_ALL": "C", "XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/a"])
    }
}
