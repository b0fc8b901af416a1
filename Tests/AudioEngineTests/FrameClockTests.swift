// Placing a JACK frame on the wall clock never traps, whatever a server answers (PipeWire's
// JACK once gave frame times that crashed recd at the first record start).
import AudioEngine
import Testing

@Suite("frame times on the wall clock")
struct FrameClockTests {
    let wallNow: Int64 = 1_764_547_200_000_000_000  // 2025-12-01T00:00:00Z

    @Test("a frame 0.5 s old lands 0.5 s before the wall clock's now")
    func plausible() {
        #expect(AudioEngine.wallNanoseconds(wallNow: wallNow, jackNowMicros: 10_500_000, frameMicros: 10_000_000) == wallNow - 500_000_000)
        #expect(AudioEngine.wallNanoseconds(wallNow: wallNow, jackNowMicros: 10_000_000, frameMicros: 10_250_000) == wallNow + 250_000_000)
        #expect(AudioEngine.wallNanoseconds(wallNow: wallNow, jackNowMicros: 5, frameMicros: 5) == wallNow)
    }

    @Test("a frame time is placed from the frame JACK is at now, across the 32-bit wrap")
    func framesToMicroseconds() {
        let now: UInt64 = 11_646_750_866
        func placed(_ frame: UInt32, now nowFrame: UInt32, micros: UInt64 = now, rate: Int = 48_000) -> UInt64? {
            AudioEngine.microseconds(ofFrame: frame, nowFrame: nowFrame, nowMicros: micros, sampleRate: rate)
        }
        #expect(placed(1_433_600, now: 1_437_800) == now - 87_500)
        #expect(placed(1_000, now: 1_000) == now)
        // Ahead of now (a frame of the cycle being processed).
        #expect(placed(1_048, now: 1_000) == now + 1_000)
        // The frame counter wrapped between the frame and now: 96 frames, 2 ms.
        #expect(placed(UInt32.max - 47, now: 48) == now - 2_000)
        // No rate, a time before JACK's clock began, a clock past Int64: nil, never a trap.
        #expect(placed(0, now: 48_000, rate: 0) == nil)
        #expect(placed(0, now: 480_000, micros: 5) == nil)
        #expect(placed(0, now: 0, micros: UInt64.max) == nil)
    }

    @Test("implausible or overflowing answers give nil, never a trap")
    func implausible() {
        let cases: [(UInt64, UInt64)] = [
            (0, UInt64.max), (UInt64.max, 0), (UInt64.max, UInt64.max - 1), (UInt64(Int64.max) + 1, 0),
            (0, UInt64(Int64.max)), (1_000_000_000_000, 0), (0, 700_000_000),
        ]
        for (now, frame) in cases {
            #expect(AudioEngine.wallNanoseconds(wallNow: wallNow, jackNowMicros: now, frameMicros: frame) == nil, "\(now) \(frame)")
        }
        // Right at the plausible edge, and a wall clock near the end of Int64, still no trap.
        let edge = UInt64(AudioEngine.plausibleFrameDistanceMicros)
        #expect(AudioEngine.wallNanoseconds(wallNow: wallNow, jackNowMicros: edge, frameMicros: 0) != nil)
        #expect(AudioEngine.wallNanoseconds(wallNow: Int64.min + 1, jackNowMicros: edge, frameMicros: 0) == nil)
        #expect(AudioEngine.wallNanoseconds(wallNow: Int64.max, jackNowMicros: 0, frameMicros: edge) == nil)
    }
}
