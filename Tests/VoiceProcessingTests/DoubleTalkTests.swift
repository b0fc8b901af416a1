// Double talk offline: the processing the daemon uses keeps the near talker while the far end
// talks, in the suite's rooms (DoubleTalkSuite), and still removes the echo when the far end
// talks alone. bench/doubletalk tables the whole grid and the configurations compared.

import Testing
import VoiceProcessing

@Suite("double talk: the near end kept, the echo removed (offline)")
struct DoubleTalkTests {
    /// The issue's cases and the grid's corners: near/echo 0 dB and -6 dB, a short dry path and
    /// the longest with a reverberant tail, at 256- and 1024-frame blocks.
    static let cases: [DoubleTalkCase] = [256, 1_024].flatMap { period in
        [
            DoubleTalkCase(nearToEchoDecibels: 0, delaySeconds: 0.030, reverberant: false, period: period),
            DoubleTalkCase(nearToEchoDecibels: 0, delaySeconds: 0.120, reverberant: true, period: period),
            DoubleTalkCase(nearToEchoDecibels: -6, delaySeconds: 0.060, reverberant: true, period: period),
        ]
    }

    @Test(
        "voiceChat: near end in double talk within 6 dB of alone (9 at -6 dB), back in 0.3 s; ERLE 25 dB",
        arguments: cases)
    func voiceChatKeepsTheNearEnd(test: DoubleTalkCase) throws {
        let figures = try DoubleTalkSuite.measure(test, canceller: DoubleTalkSuite.voiceProcessor(.voiceChat))
        print(
            "double talk, \(test): ERLE \(figures.erle) dB, near end in double talk \(figures.doubleTalk) dB "
                + "(worst 0.5 s \(figures.doubleTalkWorst) dB), back within 1 dB after "
                + "\(figures.returnSeconds.map { "\($0) s" } ?? "never"), leakage \(figures.leakage) dB")
        let bound = test.nearToEchoDecibels < 0 ? -9.0 : -6.0
        #expect(figures.erle >= 25, "ERLE with the far end alone \(figures.erle) dB")
        #expect(figures.doubleTalk >= bound, "near end in double talk \(figures.doubleTalk) dB")
        #expect(figures.doubleTalkWorst >= bound, "near end's worst half second \(figures.doubleTalkWorst) dB")
        #expect(
            (figures.returnSeconds ?? .infinity) <= 0.3,
            "back within 1 dB after \(String(describing: figures.returnSeconds))")
    }
}
