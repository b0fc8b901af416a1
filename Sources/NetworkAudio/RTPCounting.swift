// Counting one RTP stream's packets by their sequence numbers and placing the audio they did not
// bring by their timestamps. Pure: no sockets, no clock (the caller says how far a jump may go,
// from the time that passed), no threads; bounded memory (a 4096-bit history) and time per packet.

/// Counts one SSRC's packets by their sequence numbers: received (each sequence number once),
/// lost (numbers skipped and not seen since), duplicates. A 16-bit sequence number wraps; the
/// counter follows the highest number seen as a count that does not (`highest`). A packet behind
/// the highest that was counted lost is taken back off the loss, if it is within
/// `largestReorder` numbers (a history of the last `history` numbers says which came, so a
/// duplicate that far back is still a duplicate).
///
/// A jump is a step forward that skips more numbers than the caller's `maximumSkip` (the packets
/// the time since the last packet could hold: a forged number, a sender that started over) or a
/// step back of more than `largestReorder`. Its packet is not counted and nothing is counted lost
/// for it; when the packet after it follows it in sequence (RFC 3550 A.1's probation), the stream
/// is taken as started again there (`resynchronized`): counting goes on from it, nothing lost
/// across.
public struct RTPSequenceCounter: Equatable, Sendable {
    /// Sequence numbers behind the highest whose arrival is remembered.
    public static let history = 4096
    /// A step back further than this is not a late packet but a jump.
    public static let largestReorder = 3000

    public enum Arrival: Equatable, Sendable {
        /// The first packet counted.
        case first
        /// The next number, or one after skipped numbers (`skipped` of them, now counted lost).
        case inOrder(skipped: Int)
        /// Behind the highest, not seen before: was counted lost, now received.
        case late
        case duplicate
        /// A jump (see the type): not counted.
        case jump
        /// The packet after a jump, in sequence with it: counted from here, nothing lost across.
        case resynchronized
    }

    public private(set) var received = 0
    public private(set) var lost = 0
    public private(set) var duplicates = 0
    /// Packets not counted because they jumped.
    public private(set) var jumps = 0
    /// The highest sequence number counted, extended past the 16-bit wrap; nil before the first.
    public private(set) var highest: Int?
    /// Bit n % 4096 (word n / 64 % 64): number n came, for the `history` numbers up to `highest`.
    private var seen: [UInt64] = []
    /// The number that would confirm the last jump (the one after it).
    private var probe: UInt16?

    public init() {}

    /// Counts a packet with `sequence`; a step forward may skip at most `maximumSkip` numbers.
    public mutating func count(sequence: UInt16, maximumSkip: Int) -> Arrival {
        guard let top = highest else {
            start(at: sequence, after: nil)
            return .first
        }
        let step = Int(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: top)))
        if step > 0 {
            guard step - 1 <= maximumSkip else { return jump(sequence, from: top) }
            advance(to: top + step, from: top)
            lost += step - 1
            received += 1
            return .inOrder(skipped: step - 1)
        }
        if step == 0 {
            duplicates += 1
            return .duplicate
        }
        let number = top + step
        guard -step <= Self.largestReorder else { return jump(sequence, from: top) }
        if isSeen(number) {
            duplicates += 1
            return .duplicate
        }
        mark(number)
        received += 1
        // Every number behind the highest not seen was counted lost when it was skipped.
        lost = max(0, lost - 1)
        return .late
    }

    private mutating func jump(_ sequence: UInt16, from top: Int) -> Arrival {
        guard sequence == probe else {
            probe = sequence &+ 1
            jumps += 1
            return .jump
        }
        start(at: sequence, after: top)
        return .resynchronized
    }

    /// Counts from `sequence`: every number before it taken as seen (none of them is a loss).
    private mutating func start(at sequence: UInt16, after top: Int?) {
        // Keep the extended count growing across a restart: only differences matter.
        highest = (top.map { ($0 & ~0xFFFF) + 0x1_0000 } ?? 0x1_0000) + Int(sequence)
        seen = [UInt64](repeating: ~0, count: Self.history / 64)
        probe = nil
        received += 1
    }

    private func slot(_ number: Int) -> (word: Int, bit: UInt64) {
        ((number >> 6) & (Self.history / 64 - 1), 1 << UInt64(number & 63))
    }

    private func isSeen(_ number: Int) -> Bool {
        let (word, bit) = slot(number)
        return seen[word] & bit != 0
    }

    private mutating func mark(_ number: Int) {
        let (word, bit) = slot(number)
        seen[word] |= bit
    }

    /// Moves the highest to `new`: the numbers skipped are not seen, `new` is.
    private mutating func advance(to new: Int, from top: Int) {
        if new - top >= Self.history {
            for index in seen.indices { seen[index] = 0 }
        } else {
            for number in (top + 1)..<new {
                let (word, bit) = slot(number)
                seen[word] &= ~bit
            }
        }
        highest = new
        mark(new)
    }
}

/// The audio a stream's packets did not bring, by their RTP timestamps: after a packet that
/// follows skipped sequence numbers (a loss, a link cut) or a jump of its timestamp (a sender whose
/// graph stood still), the samples between the end of the packet before and this one's start.
/// By the audio's own clock, so a sender that sends a cycle's packets in one burst (PipeWire does:
/// 21 ms apart at a 1024-frame quantum) is no loss, however late the burst comes. A step of
/// more samples than the caller's `maximumSamples` (the time that passed could not hold it) is no
/// loss but a new timeline: the timestamps are followed from there.
public struct NetworkLossFinder: Equatable, Sendable {
    /// Missing audio longer than this (samples) is a loss.
    public let thresholdSamples: Int
    /// A packet's samples: the SDP's ptime at the clock rate, else learnt from the first two
    /// packets in sequence (a step of at most `thresholdSamples`).
    public private(set) var samplesPerPacket: Int?
    private var lastTimestamp: UInt32?

    public init(thresholdSamples: Int, samplesPerPacket: Int?) {
        self.thresholdSamples = thresholdSamples
        self.samplesPerPacket = samplesPerPacket
    }

    /// The samples missing before a packet with `timestamp` that the sequence counter placed as
    /// `arrival`, when more than the threshold and at most `maximumSamples`; nil otherwise.
    public mutating func missing(
        before timestamp: UInt32, arrival: RTPSequenceCounter.Arrival, maximumSamples: Int
    ) -> Int? {
        switch arrival {
        case .first, .resynchronized:
            lastTimestamp = timestamp
            return nil
        case .late, .duplicate, .jump:
            return nil
        case .inOrder(let skipped):
            defer { lastTimestamp = timestamp }
            guard let last = lastTimestamp else { return nil }
            let step = Int(Int32(bitPattern: timestamp &- last))
            if samplesPerPacket == nil, skipped == 0, step > 0, step <= thresholdSamples { samplesPerPacket = step }
            guard let perPacket = samplesPerPacket, step > perPacket else { return nil }
            let missing = step - perPacket
            return missing > thresholdSamples && missing <= maximumSamples ? missing : nil
        }
    }
}
