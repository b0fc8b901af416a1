// Numbers as a person writes them (Platform's Readable): the table every text recd and recctl
// show people goes by.
import Testing

@testable import Platform

@Suite("numbers a person reads")
struct ReadableTests {
    @Test(
        "durations: at most three significant digits and a unit below a minute; minutes, hours and days above",
        arguments: [
            (0.011706785000001219, "11.7 ms"), (0.036333333333333336, "36.3 ms"), (1.5, "1.5 s"), (360, "6 min"),
            (0, "0 s"), (0.000012, "12 µs"), (0.00000025, "250 ns"), (0.0004166, "417 µs"), (0.9996, "1 s"),
            (0.99949, "999 ms"), (1, "1 s"), (2.0000001, "2 s"), (4.07, "4.07 s"), (12.345, "12.3 s"),
            (59.94, "59.9 s"), (59.96, "1 min"), (61, "1 min 1 s"), (90.5, "1 min 31 s"), (3599.6, "1 h"),
            (3725, "1 h 2 min"), (7200, "2 h"), (86_400, "1 day"), (90_000, "1 day 1 h"), (3 * 86_400, "3 days"),
            (-0.5, "-500 ms"), (Double.nan, "unknown"), (Double.infinity, "unknown"),
        ] as [(Double, String)])
    func durations(seconds: Double, expected: String) {
        #expect(Readable.duration(seconds) == expected)
    }

    @Test("counts take their noun in the right number")
    func counts() {
        #expect(Readable.count(1, "chain") == "1 chain")
        #expect(Readable.count(2, "chain") == "2 chains")
        #expect(Readable.count(0, "segment") == "0 segments")
        #expect(Readable.count(1, "entry", "entries") == "1 entry")
        #expect(Readable.count(3, "entry", "entries") == "3 entries")
    }

    @Test(
        "positions: seconds to the hundredth, then minutes and hours as a clock",
        arguments: [
            (16.539208, "16.54 s"), (0, "0.00 s"), (0.25, "0.25 s"), (59.999, "1:00.00"), (136.54, "2:16.54"),
            (3736.54, "1:02:16.54"), (-1.5, "-1.50 s"),
        ] as [(Double, String)])
    func positions(seconds: Double, expected: String) {
        #expect(Readable.position(seconds) == expected)
    }

    @Test("positions and lengths in frames carry the frames in brackets; without a rate, the frames alone")
    func frames() {
        #expect(Readable.position(frames: 793_882, sampleRate: 48_000) == "16.54 s [793882]")
        #expect(Readable.length(frames: 1744, sampleRate: 48_000) == "36.3 ms [1744]")
        #expect(Readable.length(frames: 96_000, sampleRate: 48_000) == "2 s [96000]")
        #expect(Readable.position(frames: 793_882, sampleRate: nil) == "793882 frames")
        #expect(Readable.length(frames: 1, sampleRate: 0) == "1 frame")
    }
}
