// What the network did to an input whose audio came over it (`SegmentInputs.network`):
// NETWORK_PACKETS and NETWORK_PACKETS_LOST (the packets of the segment's span) and NETWORK_LOSS
// (where its files hold the receiver's zeros because no packets came) at each segment's end.

final class NetworkLossStage: SegmentStage {
    private let network: any NetworkReception
    private let inputRate: Int
    private let outputRate: Int
    /// The source's latest clock stamp: where monotonic time falls in the time line.
    private var lastStamp: ClockStamp?
    private var timelineStart = 0
    /// The counts when the open segment opened (a rotation's are the last segment's end).
    private var atStart: NetworkPacketCounts?

    init?(_ setup: StageSetup) {
        guard let network = setup.inputs.network else { return nil }
        self.network = network
        inputRate = setup.configuration.sampleRate
        outputRate = setup.outputRate
    }

    func open(_ segment: SegmentOpening) -> [VorbisComment] {
        timelineStart = segment.timelineStart
        if atStart == nil { atStart = network.packetCounts() }
        return []
    }

    func note(_ fact: SegmentFact) {
        if case .clockStamp(let stamp) = fact { lastStamp = stamp }
    }

    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {
        let placed = lastStamp.map { losses(stamp: $0, end: segment.timelineEnd, gaps: segment.gaps) } ?? []
        let end = network.packetCounts()
        ending.appendToEveryFile(NetworkComments.comments(start: atStart, end: end, losses: placed))
        // The index's copy of NETWORK_LOSS (the day view's network loss marks).
        if end != nil { ending.setEveryFile { $0.networkLosses = placed } }
        atStart = end
    }

    /// The network losses during the segment, as frames of its files (positions as in GAPS).
    private func losses(stamp: ClockStamp, end: Int, gaps: [SegmentGap]) -> [SegmentGap] {
        guard end > timelineStart else { return [] }
        let rate = Double(inputRate)
        let scale = Double(outputRate) / rate
        // Time-line frames (output rate) and monotonic µs, through the source's clock stamp.
        func micros(_ frame: Int) -> Int {
            stamp.micros + Int(((Double(frame) / scale - Double(stamp.frames)) * 1e6 / rate).rounded())
        }
        func frame(_ micros: Int) -> Int {
            Int(((Double(stamp.frames) + Double(micros - stamp.micros) * rate / 1e6) * scale).rounded())
        }
        var losses: [SegmentGap] = []
        for loss in network.losses(overlapping: micros(timelineStart)..<micros(end)) {
            let first = min(max(frame(loss.lowerBound), timelineStart), end)
            let last = min(max(frame(loss.upperBound), timelineStart), end)
            let position = NetworkComments.filePosition(timelineOffset: first - timelineStart, gaps: gaps)
            let length = NetworkComments.filePosition(timelineOffset: last - timelineStart, gaps: gaps) - position
            if length > 0 { losses.append(SegmentGap(position: position, length: length)) }
        }
        return losses
    }
}
