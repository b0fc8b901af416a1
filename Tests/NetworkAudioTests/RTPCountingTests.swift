// Counting a stream's sequence numbers (wraparound, reordering, duplicates, a jump the time since
// the last packet cannot hold) and placing a network loss by the timestamps. Pure; the monitor's use of
// them against forged packets: RTPMonitorCoreTests; on real sockets: RTPMonitorSocketTests.
import Testing

@testable import NetworkAudio

@Suite("RTP counting: sequence numbers and timestamps")
struct RTPCountingTests {
    /// Feeds `sequences`, any skip allowed, and returns the counter.
    static func counted(_ sequences: [UInt16], maximumSkip: Int = 30_000) -> RTPSequenceCounter {
        var counter = RTPSequenceCounter()
        for sequence in sequences { _ = counter.count(sequence: sequence, maximumSkip: maximumSkip) }
        return counter
    }

    @Test("in order: every packet received, none lost")
    func inOrder() {
        let counter = Self.counted(Array(100..<1100))
        #expect(counter.received == 1000 && counter.lost == 0 && counter.duplicates == 0)
    }

    @Test("the 16-bit sequence number wraps without a loss, and a loss across the wrap is counted")
    func wraparound() {
        let steady = Self.counted((65_000...65_535).map { UInt16($0) } + (0..<1000).map { UInt16($0) })
        #expect(steady.received == 1536 && steady.lost == 0)
        let lossy = Self.counted([65_533, 65_534, 2, 3])
        #expect(lossy.received == 4 && lossy.lost == 3, "65535, 0 and 1 are missing")
    }

    @Test("skipped numbers are lost; one that comes late is taken back off the loss; a duplicate is not counted")
    func reorderAndDuplicates() {
        var counter = RTPSequenceCounter()
        #expect(counter.count(sequence: 10, maximumSkip: 100) == .first)
        #expect(counter.count(sequence: 13, maximumSkip: 100) == .inOrder(skipped: 2))
        #expect(counter.lost == 2)
        #expect(counter.count(sequence: 11, maximumSkip: 100) == .late)
        #expect(counter.lost == 1 && counter.received == 3)
        #expect(counter.count(sequence: 11, maximumSkip: 100) == .duplicate)
        #expect(counter.count(sequence: 13, maximumSkip: 100) == .duplicate)
        #expect(counter.count(sequence: 12, maximumSkip: 100) == .late)
        #expect(counter.lost == 0 && counter.received == 4 && counter.duplicates == 2)
        // Numbers before the first are no loss to take back: a late one of them is a duplicate.
        #expect(counter.count(sequence: 9, maximumSkip: 100) == .duplicate)
        #expect(counter.lost == 0)
    }

    @Test("a duplicate up to 3000 back is still one (the 4096-number history): it takes nothing off the loss")
    func farDuplicates() {
        var counter = Self.counted(Array(0..<2000) + [2500])
        #expect(counter.lost == 500)
        #expect(counter.count(sequence: 100, maximumSkip: 10_000) == .duplicate)
        #expect(counter.count(sequence: 2100, maximumSkip: 10_000) == .late)
        #expect(counter.count(sequence: 2100, maximumSkip: 10_000) == .duplicate)
        #expect(counter.lost == 499 && counter.received == 2002)
    }

    @Test("a link cut the time allows is its packets lost; a jump further than the time allows is none")
    func cutsAndJumps() {
        // 3000 packets missing, and the caller allows 4000 (3 s of 1 ms packets since the last, + 1 s).
        var cut = Self.counted(Array(0..<100), maximumSkip: 100)
        #expect(cut.count(sequence: 3100, maximumSkip: 4000) == .inOrder(skipped: 3000))
        #expect(cut.lost == 3000)
        // 30000 ahead when 1000 are allowed (1 ms since the last + 1 s): a jump, not counted.
        var forged = Self.counted(Array(0..<100), maximumSkip: 1000)
        for _ in 0..<10 {
            #expect(forged.count(sequence: 30_099, maximumSkip: 1000) == .jump)
        }
        #expect(forged.count(sequence: 100, maximumSkip: 1000) == .inOrder(skipped: 0))
        #expect(forged.lost == 0 && forged.received == 101 && forged.jumps == 10)
        // A step back of more than 3000: a jump too.
        #expect(forged.count(sequence: 60_000, maximumSkip: 1000) == .jump)
        #expect(forged.lost == 0)
    }

    @Test("a jump followed by the next number is a sender that started over: counted from there, nothing lost")
    func resynchronization() {
        var counter = Self.counted(Array(0..<100), maximumSkip: 1000)
        #expect(counter.count(sequence: 40_000, maximumSkip: 1000) == .jump)
        #expect(counter.count(sequence: 40_001, maximumSkip: 1000) == .resynchronized)
        #expect(counter.count(sequence: 40_002, maximumSkip: 1000) == .inOrder(skipped: 0))
        #expect(counter.count(sequence: 40_005, maximumSkip: 1000) == .inOrder(skipped: 2))
        #expect(counter.received == 103 && counter.lost == 2)
        // The old numbers are far behind now: a jump, never a late packet.
        #expect(counter.count(sequence: 99, maximumSkip: 1000) == .jump)
        #expect(counter.lost == 2)
    }

    @Test("missing audio by the timestamps: a cut is its samples; packets in bursts, a lost packet or two, are none")
    func audioGaps() {
        var gaps = NetworkLossFinder(thresholdSamples: 960, samplesPerPacket: 48)
        var counter = RTPSequenceCounter()
        func packet(_ sequence: UInt16, _ timestamp: UInt32, maximumSamples: Int = 1_000_000) -> Int? {
            gaps.missing(
                before: timestamp, arrival: counter.count(sequence: sequence, maximumSkip: 10_000),
                maximumSamples: maximumSamples)
        }
        #expect(packet(0, 4_294_967_200) == nil)
        #expect(packet(1, 4_294_967_248) == nil)
        #expect(packet(2, 0) == nil, "the timestamp wraps")
        #expect(packet(5, 144) == nil, "two packets lost: 2 ms, under the 20 ms threshold")
        #expect(packet(3005, 144_144) == 143_952, "3000 packets of 48 samples lost but this one's")
        #expect(packet(3006, 154_144) == 9952, "the sender stood still 0.2 s: no number skipped, time missing")
        // 60 s of timestamps where the time since the last packet allows 1 s: no network loss, and the
        // timestamps are followed from there (the next packet's step is the packet's own).
        #expect(packet(3007, 154_144 + 60 * 48_000, maximumSamples: 48_048) == nil)
        #expect(packet(3008, 154_144 + 60 * 48_000 + 48) == nil)
        var learning = NetworkLossFinder(thresholdSamples: 960, samplesPerPacket: nil)
        var second = RTPSequenceCounter()
        _ = learning.missing(before: 1000, arrival: second.count(sequence: 7, maximumSkip: 10), maximumSamples: 1000)
        _ = learning.missing(before: 1048, arrival: second.count(sequence: 8, maximumSkip: 10), maximumSamples: 1000)
        #expect(learning.samplesPerPacket == 48)
        // A first step longer than the threshold teaches nothing (a forged pair cannot set it).
        var wary = NetworkLossFinder(thresholdSamples: 960, samplesPerPacket: nil)
        var third = RTPSequenceCounter()
        _ = wary.missing(before: 0, arrival: third.count(sequence: 1, maximumSkip: 10), maximumSamples: 1 << 30)
        _ = wary.missing(before: 96_000, arrival: third.count(sequence: 2, maximumSkip: 10), maximumSamples: 1 << 30)
        #expect(wary.samplesPerPacket == nil)
    }
}
