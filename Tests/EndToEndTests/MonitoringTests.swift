// Issue 5 end to end: meters, multiRoute/dualRoute, main/cue monitoring, through recctl.
import ControlProtocol
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("monitoring and meters end to end", .serialized)
struct MonitoringEndToEndTests {
    @Test("a -6 dBFS sine reads -6.0 ± 0.1 dB peak on recctl meter --once --json")
    func meterReadsSine() throws {
        let deck = uniqueName("deck")
        let daemon = try Daemon(ports: """
            [port mic]
            type = builtInMic
            direction = input
            jack = \(deck):out_1, \(deck):out_2

            """)
        let source = try SignalClient(["--name", deck, "play", "--ports", "out_1,out_2", "--signal", "sine:997", "--level", "-6"])
        #expect(try eventually { try daemon.recctl("--json", "routes").json?["ports"]?.arrayValue?.first?["available"] == true })
        usleep(300_000)
        let reading = try daemon.recctl("--json", "meter", "--once")
        try #require(reading.status == 0, "\(reading.stderr)")
        let meters = try #require(reading.json?["meters"]?.arrayValue)
        #expect(meters.map { $0["name"] } == ["mic_1", "mic_2"])
        for meter in meters {
            let peak = try #require(meter["peak_db"]?.doubleValue)
            let rms = try #require(meter["rms_db"]?.doubleValue)
            #expect(abs(peak - -6) <= 0.1, "peak \(peak)")
            #expect(abs(rms - (-6 - 3.01)) <= 0.1, "rms \(rms)")
        }
        let human = try daemon.recctl("meter", "--once")
        #expect(human.stdout.contains("mic_1") && human.stdout.contains("peak   -6.0 dB"))
        source.stop()
        usleep(300_000)
        let silent = try #require(daemon.recctl("--json", "meter", "--once").json?["meters"]?.arrayValue)
        #expect(silent.allSatisfy { $0["peak_db"] == -120 }, "silence reads the -120 dB floor")
    }
}
