// The archiver's input: the source's next frames, one run per channel (lent in place by a
// `PlanarSampleSource`, or read interleaved and taken apart once), and the source's gaps in the
// order of their positions. Archiver thread only; owns the source once the recorder started.

import Platform

final class SourceReader {
    let source: any SampleSource
    /// The source, when it lends its frames in place.
    private let planarSource: (any PlanarSampleSource)?
    private let channels: Int
    private let chunkFrames: Int
    /// An interleaved source's frames as read, and taken apart into `inputRuns`.
    private var readBuffer: [Float]
    private let inputRuns: ChannelRuns
    /// The frames of the current read, one run per channel (in the source or in `inputRuns`).
    private let sourceStarts: UnsafeMutablePointer<UnsafePointer<Float>>
    /// Scratch channel pointers for a part of the current read (`part`).
    private let partStarts: UnsafeMutablePointer<UnsafePointer<Float>>
    /// Source frames passed on so far.
    private(set) var delivered = 0
    /// Gaps not yet reached, by position.
    private var pendingGaps: [SourceGap] = []

    init(source: any SampleSource, channels: Int, chunkFrames: Int) {
        self.source = source
        self.channels = channels
        self.chunkFrames = chunkFrames
        planarSource = source as? any PlanarSampleSource
        readBuffer = planarSource == nil ? [Float](repeating: 0, count: chunkFrames * channels) : []
        inputRuns = ChannelRuns(channels: channels, frames: planarSource == nil ? chunkFrames : 0)
        sourceStarts = .allocate(capacity: channels)
        partStarts = .allocate(capacity: channels)
    }

    deinit {
        sourceStarts.deallocate()
        partStarts.deallocate()
    }

    /// Reads the next frames (at most `chunkFrames`): lent in place, or read and taken apart.
    func take() -> Int {
        if let planarSource {
            return planarSource.peek(maxFrames: chunkFrames, channelStarts: sourceStarts)
        }
        let frames = readBuffer.withUnsafeMutableBufferPointer { source.read(into: $0) }
        readBuffer.withUnsafeBufferPointer { inputRuns.fill(from: $0.baseAddress!, frames: frames) }
        for channel in 0..<channels { sourceStarts[channel] = inputRuns.starts[channel] }
        return frames
    }

    /// Gives back the frames a planar source lent (all of the last `take`).
    func release(frames: Int) { planarSource?.release(frames: frames) }

    func collectGaps() {
        let gaps = source.drainGaps()
        guard !gaps.isEmpty else { return }
        pendingGaps += gaps
        pendingGaps.sort { $0.position < $1.position }
    }

    /// Stopped while stalled: the time from the last frame to the stop is a gap too.
    func collectTrailingStall() {
        guard let frames = source.trailingStallFrames(), frames > 0 else { return }
        pendingGaps.append(SourceGap(position: delivered, length: frames, cause: .clockStall))
        pendingGaps.sort { $0.position < $1.position }
    }

    /// The next gap whose position has been reached, taken off the list (a gap never splits a
    /// frame: positions are whole frames).
    func nextDueGap() -> SourceGap? {
        guard let gap = pendingGaps.first, gap.position <= delivered else { return nil }
        pendingGaps.removeFirst()
        return gap
    }

    /// Frames `offset ..< count` of the current read up to the next gap, passed on: their runs
    /// and how many.
    func part(from offset: Int, of count: Int) -> (UnsafePointer<UnsafePointer<Float>>, frames: Int) {
        var take = count - offset
        if let next = pendingGaps.first { take = min(take, next.position - delivered) }
        for channel in 0..<channels { partStarts[channel] = sourceStarts[channel] + offset }
        delivered += take
        return (UnsafePointer(partStarts), take)
    }
}
