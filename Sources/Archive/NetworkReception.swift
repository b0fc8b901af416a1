// What a network receiver ahead of a recorder's input knows that the samples do not: how many
// packets came and how many were lost, and when the receiver played zeros because none came.

/// Packets of a network stream since its receiver was first watched. Both only grow while the
/// stream lasts (a new stream starts them again). A plain value: any thread.
public struct NetworkPacketCounts: Hashable, Sendable {
    public var received: Int
    public var lost: Int

    public init(received: Int, lost: Int) {
        self.received = received
        self.lost = lost
    }
}

/// The network's facts about a recorder's input, for the segment's NETWORK_PACKETS,
/// NETWORK_PACKETS_LOST and NETWORK_LOSS comments. The daemon's RTP monitor provides it for an
/// input whose audio is an RTP stream; the archive knows nothing of RTP.
///
/// Threads: called on the recorder's **archiver** thread (when a segment starts and ends); an
/// implementation guards its own state.
public protocol NetworkReception: AnyObject, Sendable {
    /// The counts now; nil while no stream is known for the input.
    func packetCounts() -> NetworkPacketCounts?

    /// The network losses (stretches of the stream without packets, whose time holds the
    /// receiver's zeros, not the sender's audio) that overlap `range`, as the input's frames were
    /// taken (CLOCK_MONOTONIC microseconds), oldest first. One still going on ends at
    /// `range.upperBound`.
    func losses(overlapping range: Range<Int>) -> [Range<Int>]
}

/// A segment's network comments, from the counts at its start and end and its network losses
/// placed in its frames. Pure.
enum NetworkComments {
    /// `pos+len,...`: frames of this file (positions as in GAPS) that hold the network's zeros.
    static func comments(
        start: NetworkPacketCounts?, end: NetworkPacketCounts?, losses: [SegmentGap]
    ) -> [VorbisComment] {
        guard let end else { return [] }
        // A new stream since the start (its counts began again): all of its counts are this segment's.
        let base = start.flatMap { $0.received <= end.received && $0.lost <= end.lost ? $0 : nil }
        var comments = [
            VorbisComment(CommentName.networkPackets, String(end.received - (base?.received ?? 0))),
            VorbisComment(CommentName.networkPacketsLost, String(end.lost - (base?.lost ?? 0))),
        ]
        if !losses.isEmpty {
            comments.append(VorbisComment(CommentName.networkLoss, SegmentGap.commentValue(losses)))
        }
        return comments
    }

    /// The file position (frames written, gaps not counted) of the segment's timeline frame
    /// `offset` (frames since the segment's start, gaps counted), given the segment's `gaps`.
    static func filePosition(timelineOffset offset: Int, gaps: [SegmentGap]) -> Int {
        var skipped = 0
        for gap in gaps {
            let gapStart = gap.position + skipped
            guard gapStart < offset else { break }
            skipped += min(gap.length, offset - gapStart)
        }
        return offset - skipped
    }
}
