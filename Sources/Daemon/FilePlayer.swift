// Streams an audio file into an engine player from a thread of its own: the "player feeder".

import Archive
import AudioEngine
import Codec
import Dispatch
import Platform
import Synchronization

/// Plays a FLAC or WAV file through a `PlayerHandle`: a feeder thread named "player feeder"
/// opens the file (or reads the already open `ReadOnlyFile` it was given, with a reader of its
/// own), maps its channels to the player's (mono to every channel; extra channels dropped;
/// missing ones silent), then converts their rate to the JACK rate when they differ
/// (libsoxr), and keeps the player's ring topped up, a quarter of the ring at a time, sleeping
/// while the ring is full. At the end of the file it calls `finish()` on the handle, so the
/// player drains instead of counting underruns.
///
/// Everything that scales with the file's rate or channels happens here, never on the process
/// thread: the ring holds the player's channels at the JACK rate, so the process thread's work
/// for a player is its routes × the period, whatever the file. The feeder runs
/// `feederNiceIncrement` steps nicer than recd (nicer than the archivers), and reads ahead at
/// most the ring and one chunk: on a busy machine a player may run dry, a recording may not.
///
/// The feeder only writes: starting, pausing and removing the player stay with the engine
/// (`AudioEngine.play` and friends, control thread). To avoid an underrun at the start, play
/// once `player.framesQueued` is above a period or two.
///
/// Threads:
/// - `start` and `stop` belong to the **control** thread (or whoever owns the player). Neither
///   does file I/O: `start` spawns the feeder, `stop` wakes it and waits for it to return,
///   which takes at most one step (reading and converting a quarter of the ring, or opening
///   the file).
/// - The **player feeder** thread does everything else: opening, decoding, resampling,
///   `PlayerHandle.write` and `finish` (it is the ring's single producer), and calls
///   `onFinished`.
/// - `state`, `error`, `fileFormat` and the counters may be read from any thread.
///
/// Owns its feeder thread; dropping the object stops and joins it. Holds the `ReadOnlyFile` it
/// was given (its last holder closes the descriptor).
final class FilePlayer: Sendable {
    /// Where the feeder is.
    enum State: String, Sendable {
        /// Made, not started.
        case idle
        /// Opening the file.
        case opening
        /// Writing into the player.
        case feeding
        /// The whole file was written and `finish()` called on the player.
        case finished
        /// `stop()` ended it early.
        case stopped
        /// The engine stopped reading the player (removed, engine stopped, server lost).
        case detached
        /// The file could not be opened or decoded; see `error`.
        case failed
    }

    /// How the feeder ended; given to `onFinished`.
    enum Outcome: Equatable, Sendable {
        /// All of the file went into the player (`frames` at the player's rate).
        case finished(frames: Int)
        case stopped
        case detached
        case failed(MediaError)
    }

    /// What the feeder found in the file.
    struct FileFormat: Equatable, Sendable {
        var format: AudioFileReader.Format
        var sampleRate: Int
        var channels: Int
        var bitsPerSample: Int
        var totalFrames: Int?
    }

    /// File sample rates recd plays. Below the floor a chunk of the file becomes more than a
    /// thousand times as many frames at the JACK rate (a 10 Hz file: 4,800 times), which no
    /// real recording needs; above the ceiling no converter or interface recd meets goes.
    static let acceptedSampleRates = 1000...384_000
    /// File channel counts recd plays: the channel range a config port accepts.
    static let acceptedChannels = 1...64

    /// Refuses a file whose rate or channel count is outside what recd plays, before a byte
    /// of its audio is read: the rate sizes every conversion buffer, the channels every read.
    /// Called where a file enters (the player starter's header probe) and again by the feeder.
    static func checkPlayable(sampleRate: Int, channels: Int, name: String) throws(MediaError) {
        guard acceptedSampleRates.contains(sampleRate) else {
            throw MediaError(
                .unsupportedFormat, path: name,
                message: "its sample rate is \(sampleRate) Hz; recd plays files of "
                    + "\(acceptedSampleRates.lowerBound)...\(acceptedSampleRates.upperBound) Hz: convert it "
                    + "(e.g. `sox IN -r 48000 out.flac`)")
        }
        guard acceptedChannels.contains(channels) else {
            throw MediaError(
                .unsupportedFormat, path: name,
                message: "it has \(channels) channels; recd plays files of \(acceptedChannels.lowerBound)..."
                    + "\(acceptedChannels.upperBound) channels: keep the ones to play "
                    + "(e.g. `sox IN out.flac remix 1 2`)")
        }
    }

    /// How many nice steps the feeder thread takes below the rest of recd: below the archivers
    /// too (`Recorder.archiverNiceIncrement`), so that players a user starts take CPU from
    /// their own feeders before they take it from a recording.
    static let feederNiceIncrement: Int32 = Recorder.archiverNiceIncrement + 5

    /// The file's name in messages: its path, or the name of the open file it was given.
    let path: String
    /// The rate the player plays at (the JACK rate).
    let outputSampleRate: Int
    let quality: Resampler.Quality

    private let source: FeedSource
    private let sink: any PlayerSink
    private let shared = Shared()
    private let thread = Mutex<NamedThread?>(nil)

    /// Prepares to play `path` into `player` at `outputSampleRate` frames per second. Touches
    /// neither the file nor the player until `start`.
    convenience init(
        path: String, player: PlayerHandle, outputSampleRate: Int,
        quality: Resampler.Quality = .high
    ) {
        self.init(source: .path(path), sink: player, outputSampleRate: outputSampleRate, quality: quality)
    }

    /// Prepares to play an open file into `player`; the feeder reads it with a reader of its
    /// own (positional reads), so a reader that probed the file meanwhile does not disturb it.
    convenience init(
        file: ReadOnlyFile, player: PlayerHandle, outputSampleRate: Int,
        quality: Resampler.Quality = .high
    ) {
        self.init(source: .file(file), sink: player, outputSampleRate: outputSampleRate, quality: quality)
    }

    convenience init(path: String, sink: any PlayerSink, outputSampleRate: Int, quality: Resampler.Quality) {
        self.init(source: .path(path), sink: sink, outputSampleRate: outputSampleRate, quality: quality)
    }

    convenience init(file: ReadOnlyFile, sink: any PlayerSink, outputSampleRate: Int, quality: Resampler.Quality) {
        self.init(source: .file(file), sink: sink, outputSampleRate: outputSampleRate, quality: quality)
    }

    /// Prepares to play a file whose header the player starter read (`PlayerService.probe`):
    /// the feeder fails if the header it reads says another rate or channel count. The file is
    /// the caller's and may change meanwhile; what the player budget counted must be what plays.
    convenience init(
        probed: ProbedFile, player: PlayerHandle, outputSampleRate: Int, quality: Resampler.Quality = .high
    ) {
        self.init(
            source: .probed(probed.file, sampleRate: probed.sampleRate, channels: probed.channels), sink: player,
            outputSampleRate: outputSampleRate, quality: quality)
    }

    convenience init(
        probed: ProbedFile, sink: any PlayerSink, outputSampleRate: Int, quality: Resampler.Quality = .high
    ) {
        self.init(
            source: .probed(probed.file, sampleRate: probed.sampleRate, channels: probed.channels), sink: sink,
            outputSampleRate: outputSampleRate, quality: quality)
    }

    private init(source: FeedSource, sink: any PlayerSink, outputSampleRate: Int, quality: Resampler.Quality) {
        precondition(outputSampleRate > 0, "a positive output rate")
        self.source = source
        switch source {
        case .path(let path): self.path = path
        case .file(let file), .probed(let file, _, _): self.path = file.name
        }
        self.sink = sink
        self.outputSampleRate = outputSampleRate
        self.quality = quality
    }

    deinit { stop() }

    // MARK: Control thread

    /// Starts the feeder. `onFinished` is called once, on the feeder thread, as it ends (not
    /// when `stop()` ended it: the caller of `stop` knows). Starting twice traps.
    func start(onFinished: (@Sendable (Outcome) -> Void)? = nil) {
        thread.withLock { thread in
            precondition(thread == nil, "a FilePlayer starts once")
            shared.state.store(State.opening.code, ordering: .releasing)
            let job = FeedJob(
                source: source, sink: sink, outputSampleRate: outputSampleRate, quality: quality,
                shared: shared)
            do {
                thread = try NamedThread(name: "player feeder", niceIncrement: Self.feederNiceIncrement) {
                    let outcome = job.run()
                    job.shared.finish(with: outcome)
                    if outcome != .stopped { onFinished?(outcome) }
                }
            } catch {
                // No thread means the process is out of resources: nothing a player can recover.
                preconditionFailure("cannot start the player feeder: \(error)")
            }
        }
    }

    /// Stops the feeder and waits for its thread to end (promptly: see the type's notes).
    /// What was written stays in the player's ring; the player is not `finish()`ed. Safe to
    /// call at any time, more than once.
    func stop() {
        // Joined under the lock, so that concurrent stops never join one thread twice; the
        // feeder never takes this lock, so it cannot deadlock.
        thread.withLock { running in
            guard let running else { return }
            shared.stopRequested.store(true, ordering: .releasing)
            shared.wake.signal()
            running.join()
        }
    }

    // MARK: Any thread

    var state: State { State(code: shared.state.load(ordering: .acquiring)) }

    /// True once the whole file went into the player and `finish()` was called on it.
    var isFinished: Bool { state == .finished }

    /// True once the feeder has ended, for whatever reason.
    var isDone: Bool {
        switch state {
        case .idle, .opening, .feeding: false
        case .finished, .stopped, .detached, .failed: true
        }
    }

    /// Why it failed, when `state` is `.failed`.
    var error: MediaError? { shared.error.withLock { $0 } }

    /// The file's format, once the feeder has opened it.
    var fileFormat: FileFormat? { shared.fileFormat.withLock { $0 } }

    /// Frames read from the file (at the file's rate).
    var framesRead: Int { shared.framesRead.load(ordering: .relaxed) }

    /// Frames written into the player (at the player's rate).
    var framesWritten: Int { shared.framesWritten.load(ordering: .relaxed) }
}

extension FilePlayer.State {
    fileprivate var code: UInt8 {
        switch self {
        case .idle: 0
        case .opening: 1
        case .feeding: 2
        case .finished: 3
        case .stopped: 4
        case .detached: 5
        case .failed: 6
        }
    }

    fileprivate init(code: UInt8) {
        switch code {
        case 1: self = .opening
        case 2: self = .feeding
        case 3: self = .finished
        case 4: self = .stopped
        case 5: self = .detached
        case 6: self = .failed
        default: self = .idle
        }
    }
}

/// What the control thread and the feeder share.
private final class Shared: Sendable {
    let state = Atomic<UInt8>(FilePlayer.State.idle.code)
    let stopRequested = Atomic<Bool>(false)
    let framesRead = Atomic<Int>(0)
    let framesWritten = Atomic<Int>(0)
    let error = Mutex<MediaError?>(nil)
    let fileFormat = Mutex<FilePlayer.FileFormat?>(nil)
    /// Signalled by `stop` to cut a sleep short.
    let wake = DispatchSemaphore(value: 0)

    var shouldStop: Bool { stopRequested.load(ordering: .acquiring) }

    func finish(with outcome: FilePlayer.Outcome) {
        let state: FilePlayer.State
        switch outcome {
        case .finished: state = .finished
        case .stopped: state = .stopped
        case .detached: state = .detached
        case .failed(let failure):
            error.withLock { $0 = failure }
            state = .failed
        }
        self.state.store(state.code, ordering: .releasing)
    }
}

/// What a feeder reads: a path it opens itself, or a file already open (whose header the player
/// starter read, saying this rate and channel count).
private enum FeedSource: Sendable {
    case path(String)
    case file(ReadOnlyFile)
    case probed(ReadOnlyFile, sampleRate: Int, channels: Int)
}

/// The feeder's work; everything in it runs on the feeder thread.
private struct FeedJob: Sendable {
    let source: FeedSource
    let sink: any PlayerSink
    let outputSampleRate: Int
    let quality: Resampler.Quality
    let shared: Shared

    func run() -> FilePlayer.Outcome {
        do {
            return try feed()
        } catch {
            return .failed(error)
        }
    }

    private func feed() throws(MediaError) -> FilePlayer.Outcome {
        if shared.shouldStop { return .stopped }
        let reader: AudioFileReader
        switch source {
        case .path(let path): reader = try AudioFileReader(path: path)
        case .file(let file), .probed(let file, _, _): reader = try AudioFileReader(file: file)
        }
        try FilePlayer.checkPlayable(sampleRate: reader.sampleRate, channels: reader.channels, name: reader.path)
        if case .probed(_, let rate, let channels) = source, reader.sampleRate != rate || reader.channels != channels {
            throw MediaError(
                .corrupt, path: reader.path,
                message: "it changed after recd read its header (\(channels) channels at \(rate) Hz then, "
                    + "\(reader.channels) at \(reader.sampleRate) Hz now); play it again once it no longer changes")
        }
        shared.fileFormat.withLock {
            $0 = FilePlayer.FileFormat(
                format: reader.format, sampleRate: reader.sampleRate, channels: reader.channels,
                bitsPerSample: reader.bitsPerSample, totalFrames: reader.totalFrames)
        }
        let fileChannels = reader.channels
        let playerChannels = sink.channels
        // The channels are mapped before the rate is converted: the converter and every buffer
        // after the read scale with the player's channels (its output's), not the file's, so
        // a 64-channel file played to a stereo output costs the converter two channels' work.
        let resampler =
            reader.sampleRate == outputSampleRate
            ? nil
            : try Resampler(
                inputRate: reader.sampleRate, outputRate: outputSampleRate,
                channels: playerChannels, quality: quality)
        shared.state.store(FilePlayer.State.feeding.code, ordering: .releasing)

        let step = max(64, sink.capacityFrames / 4)
        // Input frames per chunk: as many as make about `step` frames at the player's rate, so
        // the buffers below stay near `step` frames whatever the ratio (4,800 from a 10 Hz file
        // once made gigabytes of one chunk).
        let readStep = resampler.map { max(1, min(step, Int(Double(step) / $0.ratio))) } ?? step
        // Sleep while the ring is full for half the time a quarter of it takes to play,
        // within 2...50 ms: often enough never to let it run dry, rarely enough to cost
        // nothing.
        let quarterSeconds = Double(step) / Double(outputSampleRate)
        let sleepNanoseconds = Int(min(max(quarterSeconds / 2, 0.002), 0.05) * 1e9)

        // Every buffer is made here, once: the read-ahead is the ring and one chunk.
        var fileBuffer = [Float](repeating: 0, count: readStep * fileChannels)
        var mapped = [Float](repeating: 0, count: readStep * playerChannels)
        let outputFrames = resampler?.maximumOutputFrames(forInputFrames: readStep) ?? 0
        var scratch = [Float](repeating: 0, count: outputFrames * playerChannels)
        var converted: [Float] = []
        converted.reserveCapacity(scratch.count)
        // The chunk waiting for room in the ring: frames of `converted` (with a resampler) or
        // of `mapped`, from `pendingOffset` on.
        var pendingFrames = 0
        var pendingOffset = 0
        var endReached = false
        var inputEnded = false

        while true {
            if shared.shouldStop { return .stopped }
            if !sink.isAttached { return .detached }
            if pendingOffset < pendingFrames {
                let range = (pendingOffset * playerChannels)..<(pendingFrames * playerChannels)
                let write = { (all: UnsafeBufferPointer<Float>) in
                    sink.write(UnsafeBufferPointer(rebasing: all[range]))
                }
                let taken =
                    resampler == nil
                    ? mapped.withUnsafeBufferPointer(write) : converted.withUnsafeBufferPointer(write)
                pendingOffset += taken
                shared.framesWritten.add(taken, ordering: .relaxed)
                if pendingOffset < pendingFrames {
                    _ = shared.wake.wait(timeout: .now() + .nanoseconds(sleepNanoseconds))
                }
                continue
            }
            if endReached {
                sink.finish()
                return .finished(frames: shared.framesWritten.load(ordering: .relaxed))
            }

            // The next chunk: read, map the channels, convert the rate.
            let frames =
                inputEnded
                ? 0
                : try fileBuffer.withUnsafeMutableBufferPointer {
                    buffer throws(MediaError) in try reader.read(into: buffer, maxFrames: readStep)
                }
            inputEnded = frames == 0
            shared.framesRead.add(frames, ordering: .relaxed)
            if frames > 0 {
                fileBuffer.withUnsafeBufferPointer { source in
                    mapped.withUnsafeMutableBufferPointer { destination in
                        guard let from = source.baseAddress, let into = destination.baseAddress else { return }
                        ChannelMap.map(
                            from, sourceChannels: fileChannels, frames: frames, into: into,
                            destinationChannels: playerChannels)
                    }
                }
            }
            pendingOffset = 0
            guard let resampler else {
                pendingFrames = frames
                endReached = frames == 0
                continue
            }
            converted.removeAll(keepingCapacity: true)
            if frames > 0 {
                try resample(
                    mapped[..<(frames * playerChannels)], with: resampler, scratch: &scratch, into: &converted)
            } else {
                // soxr's tail, a scratch-full at a time (at a high ratio it is many chunks).
                let produced = try scratch.withUnsafeMutableBufferPointer {
                    buffer throws(MediaError) in try resampler.flush(into: buffer)
                }
                converted.append(contentsOf: scratch[..<(produced * playerChannels)])
                endReached = produced == 0
            }
            pendingFrames = converted.count / playerChannels
        }
    }

    /// Converts all of `input` (soxr may take it in more than one bite) through `scratch`, sized
    /// for the feeder's read step: the output of one call is bounded by the input's size.
    private func resample(
        _ input: ArraySlice<Float>, with resampler: Resampler, scratch: inout [Float], into output: inout [Float]
    ) throws(MediaError) {
        let channels = resampler.channels
        let frames = input.count / channels
        var offset = 0
        while offset < frames {
            let (consumed, produced) = try input.withUnsafeBufferPointer {
                source throws(MediaError) in
                try scratch.withUnsafeMutableBufferPointer { destination throws(MediaError) in
                    try resampler.process(
                        input: UnsafeBufferPointer(rebasing: source[(offset * channels)...]),
                        frames: frames - offset, output: destination)
                }
            }
            output.append(contentsOf: scratch[..<(produced * channels)])
            offset += consumed
            if consumed == 0 && produced == 0 { break }
        }
    }
}
