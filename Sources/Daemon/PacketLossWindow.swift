// The health's `packets-lost` fact: how many network packets each feed's input lost within the
// last minute. The RTP monitor owns the count (its running `lost` per stream, and whether a loss
// is going on now, whose packets it counts only when the packet after it comes); this reads it
// and keeps what a window needs: the count as it was up to a minute ago, a reading a second.
//
// Threads: the control thread (`HealthFeature`'s evaluation).
import NetworkAudio

/// A feed's RTP input as the monitor knows it now: its running count of lost packets and the
/// packets a loss going on has not brought yet. A plain value.
struct NetworkLossReading: Equatable {
    var lost: Int
    var missingNow: Int

    /// `stream` at `nowMicros` (CLOCK_MONOTONIC µs).
    init(_ stream: RTPStreamFacts, nowMicros: Int) {
        lost = stream.lost
        missingNow = stream.packetsMissing(now: nowMicros)
    }

    init(lost: Int, missingNow: Int) {
        self.lost = lost
        self.missingNow = missingNow
    }
}

/// Packets lost per feed within the last `seconds`, from the monitor's readings. A plain value:
/// at most one kept reading a second per feed (`seconds` + 1 of them), only for the feeds of the
/// last update.
struct PacketLossWindow: Equatable {
    /// The window the health's text names ("in the last minute").
    static let seconds = 60.0

    private struct Kept: Equatable {
        var time: Double
        var lost: Int
    }

    private var kept: [String: [Kept]] = [:]

    /// The packets each feed's input lost from `now - seconds` to `now` (monotonic seconds),
    /// given the readings now (feeds whose input is no RTP stream the monitor follows are absent):
    /// the growth of the running count since the newest reading at least a window old (or the
    /// oldest kept, for a stream newer than the window), plus a loss going on. A count that went
    /// down is a new stream (its count began again): its history starts over.
    mutating func update(_ readings: [String: NetworkLossReading], now: Double) -> [String: Int] {
        var result: [String: Int] = [:]
        var next: [String: [Kept]] = [:]
        for (feed, reading) in readings {
            var history = kept[feed] ?? []
            if let last = history.last, reading.lost < last.lost { history = [] }
            // The newest reading at least a window old is the base; older ones are not needed.
            if let base = history.lastIndex(where: { $0.time <= now - Self.seconds }), base > 0 {
                history.removeFirst(base)
            }
            let base = history.first?.lost ?? reading.lost
            if history.last.map({ now - $0.time >= 1 }) ?? true {
                history.append(Kept(time: now, lost: reading.lost))
            }
            next[feed] = history
            result[feed] = max(0, reading.lost - base) + max(0, reading.missingNow)
        }
        kept = next
        return result
    }
}
