// FilePlayer into a recording stand-in (every sample checked) and into a real engine player on
// the JACK server (libjack's default, honouring JACK_DEFAULT_SERVER; scripts/test starts one).

import AudioEngine
import AudioTestSupport
import Codec
import Foundation
import Glibc
import Synchronization
import Testing

@testable import Daemon

/// A player ring stand-in that keeps everything written. It takes at most `bite` frames per
/// write, so the feeder has to come back for the rest.
final class RecordingSink: PlayerSink, @unchecked Sendable {
    // @unchecked: `written`/`finished` are touched by the feeder only until `isFinished` is
    // seen through the Mutex-protected state below.
    let channels: Int
    let capacityFrames: Int
    let bite: Int
    private let state = Mutex<(samples: [Float], finished: Bool, writes: Int, largestOffer: Int)>(([], false, 0, 0))
    let attached = Atomic<Bool>(true)

    init(channels: Int, capacityFrames: Int = 4096, bite: Int = .max) {
        self.channels = channels
        self.capacityFrames = capacityFrames
        self.bite = bite
    }

    var availableToWrite: Int { min(capacityFrames, bite) }

    func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        let frames = min(samples.count / channels, bite)
        state.withLock {
            $0.samples += samples[..<(frames * channels)]
            $0.writes += 1
            $0.largestOffer = max($0.largestOffer, samples.count / channels)
        }
        return frames
    }

    func finish() { state.withLock { $0.finished = true } }
    var isAttached: Bool { attached.load(ordering: .acquiring) }

    var samples: [Float] { state.withLock { $0.samples } }
    var finished: Bool { state.withLock { $0.finished } }
    var writes: Int { state.withLock { $0.writes } }
    /// The most frames one write was offered: what the feeder held converted at once.
    var largestOffer: Int { state.withLock { $0.largestOffer } }
}

/// Collects `onFinished` calls.
final class OutcomeBox: Sendable {
    private let outcomes = Mutex<[FilePlayer.Outcome]>([])
    func record(_ outcome: FilePlayer.Outcome) { outcomes.withLock { $0.append(outcome) } }
    var all: [FilePlayer.Outcome] { outcomes.withLock { $0 } }
}

@Suite("FilePlayer")
struct FilePlayerTests {
    @Test("mono at the output rate goes sample-exact to every player channel, then finish()")
    func monoDuplicated() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("mono.wav")
        let original = knownSignal(frames: 20_000, channels: 1, bits: 16)
        try writeWAV(path, sampleRate: 48_000, channels: 1, bits: 16, samples: original)

        let sink = RecordingSink(channels: 2, capacityFrames: 4096, bite: 700)
        let outcomes = OutcomeBox()
        let player = FilePlayer(
            path: path, sink: sink, outputSampleRate: 48_000, quality: .high)
        player.start(onFinished: outcomes.record)
        #expect(waitUntil(seconds: 10) { player.isDone })
        player.stop()

        #expect(player.state == .finished && player.isFinished)
        #expect(outcomes.all == [.finished(frames: 20_000)])
        #expect(sink.finished)
        #expect(sink.writes > 20_000 / 700, "the feeder came back for what did not fit")
        let written = sink.samples
        #expect(mismatch(channel(written, 0, of: 2), original, bits: 16) == nil)
        #expect(mismatch(channel(written, 1, of: 2), original, bits: 16) == nil)
        #expect(player.framesRead == 20_000 && player.framesWritten == 20_000)
        #expect(player.fileFormat?.channels == 1 && player.fileFormat?.format == .wav)
    }

    @Test("wider files lose their extra channels, narrower ones get silence in the rest")
    func channelMapping() throws {
        let directory = try TemporaryDirectory()
        let three = directory.file("three.flac")
        let original = knownSignal(frames: 5_000, channels: 3, bits: 16)
        let writer = try FLACWriter(path: three, sampleRate: 48_000, channels: 3, bitsPerSample: 16)
        try writer.write(floats(original, bits: 16))
        try writer.finish()

        let narrow = RecordingSink(channels: 2)
        let toNarrow = FilePlayer(
            path: three, sink: narrow, outputSampleRate: 48_000, quality: .high)
        toNarrow.start()
        let wide = RecordingSink(channels: 5)
        let toWide = FilePlayer(path: three, sink: wide, outputSampleRate: 48_000, quality: .high)
        toWide.start()
        #expect(waitUntil(seconds: 10) { toNarrow.isDone && toWide.isDone })
        #expect(toNarrow.isFinished && toWide.isFinished)

        for c in 0..<2 {
            #expect(
                mismatch(channel(narrow.samples, c, of: 2), channel(original, c, of: 3), bits: 16)
                    == nil)
        }
        for c in 0..<3 {
            #expect(
                mismatch(channel(wide.samples, c, of: 5), channel(original, c, of: 3), bits: 16)
                    == nil)
        }
        #expect(channel(wide.samples, 3, of: 5).allSatisfy { $0 == 0 })
        #expect(channel(wide.samples, 4, of: 5).allSatisfy { $0 == 0 })
        #expect(wide.samples.count == 5 * 5_000)
    }

    @Test("a 44.1 kHz file is converted to the player's 48 kHz, tone and length kept")
    func resampledIntoPlayer() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("tone-44k.wav")
        let tone = sine(frequency: 1000, sampleRate: 44_100, frames: 44_100, amplitude: 0.5)
        try writeWAV(
            path, sampleRate: 44_100, channels: 1, bits: 24,
            samples: tone.map { Int32(($0 * 8_388_608).rounded()) })

        let sink = RecordingSink(channels: 1)
        let player = FilePlayer(path: path, sink: sink, outputSampleRate: 48_000, quality: .high)
        player.start()
        #expect(waitUntil(seconds: 10) { player.isDone })
        #expect(player.isFinished)
        let output = sink.samples
        #expect(abs(output.count - 48_000) <= 2, "\(output.count) frames")
        let level = decibels(
            amplitude(of: 1000, in: output, range: 12_000..<36_000, sampleRate: 48_000))
        #expect(abs(level - decibels(0.5)) <= 0.1, "1 kHz at \(level) dBFS")
    }

    @Test(
        "a 64-channel 96 kHz file plays to a stereo player: its first two channels, converted to 48 kHz and nothing of the rest; the feeder runs nicer than the archivers"
    )
    func wideFileMappedBeforeConversion() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("wide-96k.wav")
        let frames = 96_000
        let first = sine(frequency: 1000, sampleRate: 96_000, frames: frames, amplitude: 0.5)
        let second = sine(frequency: 2000, sampleRate: 96_000, frames: frames, amplitude: 0.25)
        let rest = sine(frequency: 3000, sampleRate: 96_000, frames: frames, amplitude: 0.5)
        var samples = [Int32](repeating: 0, count: frames * 64)
        for frame in 0..<frames {
            samples[frame * 64] = Int32((first[frame] * 32767).rounded())
            samples[frame * 64 + 1] = Int32((second[frame] * 32767).rounded())
            for channel in 2..<64 { samples[frame * 64 + channel] = Int32((rest[frame] * 32767).rounded()) }
        }
        try writeWAV(path, sampleRate: 96_000, channels: 64, bits: 16, samples: samples)

        let sink = RecordingSink(channels: 2, capacityFrames: 4096, bite: 512)
        let player = FilePlayer(path: path, sink: sink, outputSampleRate: 48_000, quality: .high)
        player.start()
        #expect(waitUntil(seconds: 5) { Self.feederNice() != nil || player.isDone })
        let nice = Self.feederNice()
        #expect(waitUntil(seconds: 20) { player.isDone })
        #expect(player.isFinished)
        let expected = min(19, (Self.nice(stat: "/proc/self/stat") ?? 0) + Int(FilePlayer.feederNiceIncrement))
        #expect(nice == expected && FilePlayer.feederNiceIncrement > 10, "nice \(nice ?? -99), expected \(expected)")
        let output = sink.samples
        #expect(abs(output.count / 2 - 48_000) <= 2, "\(output.count / 2) frames")
        let left = channel(output, 0, of: 2)
        let right = channel(output, 1, of: 2)
        let middle = 12_000..<36_000
        #expect(abs(decibels(amplitude(of: 1000, in: left, range: middle, sampleRate: 48_000)) - decibels(0.5)) <= 0.1)
        #expect(
            abs(decibels(amplitude(of: 2000, in: right, range: middle, sampleRate: 48_000)) - decibels(0.25)) <= 0.1)
        for signal in [left, right] {
            #expect(decibels(amplitude(of: 3000, in: signal, range: middle, sampleRate: 48_000)) < -90)
        }
    }

    /// The nice value of this process's "player feeder" thread, if one runs (/proc/self/task).
    static func feederNice() -> Int? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            if comm.trimmingCharacters(in: .whitespacesAndNewlines) == "player feeder" {
                return nice(stat: "/proc/self/task/\(task)/stat")
            }
        }
        return nil
    }

    /// Field 19 (nice) of a /proc stat file; the fields after "pid (comm)" start at 3.
    static func nice(stat path: String) -> Int? {
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8), let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 16 ? Int(fields[16]) : nil
    }

    @Test("a 1 kHz file is converted 48-fold in chunks of about a quarter ring, its tail too")
    func highRatioInBoundedChunks() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("tone-1k.wav")
        let tone = sine(frequency: 100, sampleRate: 1000, frames: 2000, amplitude: 0.5)
        try writeWAV(
            path, sampleRate: 1000, channels: 2, bits: 16,
            samples: tone.flatMap { [Int32(($0 * 32767).rounded()), 0] })

        let sink = RecordingSink(channels: 2, capacityFrames: 4096)
        let player = FilePlayer(path: path, sink: sink, outputSampleRate: 48_000, quality: .high)
        player.start()
        #expect(waitUntil(seconds: 10) { player.isDone })
        #expect(player.isFinished)
        // A whole quarter ring of input at once would be 1024 × 48 frames in one chunk.
        #expect(sink.largestOffer <= 1024 + 128, "one chunk held \(sink.largestOffer) frames")
        #expect(abs(sink.samples.count / 2 - 96_000) <= 2, "\(sink.samples.count / 2) frames")
        let level = decibels(
            amplitude(of: 100, in: channel(sink.samples, 0, of: 2), range: 24_000..<72_000, sampleRate: 48_000))
        #expect(abs(level - decibels(0.5)) <= 0.1, "100 Hz at \(level) dBFS")
    }

    @Test(
        "a file below 1 kHz or above 384 kHz is refused with unsupportedFormat; nothing is written",
        arguments: [10, 999, 384_001])
    func rateOutsideBounds(rate: Int) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("odd-rate.wav")
        try writeWAV(
            path, sampleRate: rate, channels: 2, bits: 16,
            samples: knownSignal(frames: 4800, channels: 2, bits: 16))
        let sink = RecordingSink(channels: 2)
        let outcomes = OutcomeBox()
        let player = FilePlayer(path: path, sink: sink, outputSampleRate: 48_000, quality: .high)
        player.start(onFinished: outcomes.record)
        #expect(waitUntil(seconds: 5) { player.isDone })
        #expect(player.state == .failed)
        #expect(player.error?.kind == .unsupportedFormat)
        #expect(player.error?.message.contains("1000...384000 Hz") == true, "\(String(describing: player.error))")
        #expect(player.framesRead == 0 && sink.samples.isEmpty && !sink.finished)
    }

    @Test(
        "a file whose header changed after the probe (another rate or channel count) fails on the feeder; nothing is written"
    )
    func changedSinceProbe() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("changed.wav")
        try writeWAV(
            path, sampleRate: 96_000, channels: 1, bits: 16, samples: knownSignal(frames: 4800, channels: 1, bits: 16))
        // The probe saw 48 kHz stereo: the budget counted that, so nothing else may play.
        let probed = ProbedFile(file: try ReadOnlyFile(path: path), sampleRate: 48_000, channels: 2)
        let sink = RecordingSink(channels: 2)
        let player = FilePlayer(probed: probed, sink: sink, outputSampleRate: 48_000)
        player.start()
        #expect(waitUntil(seconds: 5) { player.isDone })
        #expect(player.state == .failed && player.error?.kind == .corrupt)
        #expect(
            player.error?.message.contains(
                "changed after recd read its header (2 channels at 48000 Hz then, 1 at 96000 Hz now)")
                == true, "\(String(describing: player.error))")
        #expect(sink.samples.isEmpty && !sink.finished)

        let same = FilePlayer(
            probed: ProbedFile(file: try ReadOnlyFile(path: path), sampleRate: 96_000, channels: 1), sink: sink,
            outputSampleRate: 48_000)
        same.start()
        #expect(waitUntil(seconds: 5) { same.isDone })
        #expect(same.isFinished)
    }

    @Test("a missing file fails on the feeder with .notFound; nothing is written")
    func missingFile() throws {
        let directory = try TemporaryDirectory()
        let sink = RecordingSink(channels: 2)
        let outcomes = OutcomeBox()
        let player = FilePlayer(
            path: directory.file("gone.flac"), sink: sink, outputSampleRate: 48_000,
            quality: .high)
        player.start(onFinished: outcomes.record)
        #expect(waitUntil(seconds: 5) { player.isDone })
        #expect(player.state == .failed)
        #expect(player.error?.kind == .notFound)
        #expect(outcomes.all.count == 1)
        if case .failed(let error)? = outcomes.all.first { #expect(error.kind == .notFound) }
        #expect(sink.samples.isEmpty && !sink.finished)
    }

    @Test("a detached sink ends the feeder with .detached")
    func detached() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("long.wav")
        try writeWAV(
            path, sampleRate: 48_000, channels: 1, bits: 16,
            samples: knownSignal(frames: 480_000, channels: 1, bits: 16))
        let sink = RecordingSink(channels: 1, capacityFrames: 4096, bite: 64)
        let outcomes = OutcomeBox()
        let player = FilePlayer(path: path, sink: sink, outputSampleRate: 48_000, quality: .high)
        player.start(onFinished: outcomes.record)
        #expect(waitUntil(seconds: 5) { player.framesWritten > 0 })
        sink.attached.store(false, ordering: .releasing)
        #expect(waitUntil(seconds: 5) { player.isDone })
        #expect(player.state == .detached && outcomes.all == [.detached])
        #expect(!sink.finished)
    }

    // MARK: Against the engine

    private func startEngine() throws -> AudioEngine {
        signal(SIGPIPE, SIG_IGN)
        let engine = AudioEngine()
        try engine.start(
            clientName: "recdtest-media-\(UInt32.random(in: 0...UInt32.max))", inputs: [],
            outputs: [PortGroupSpec(name: "out", channels: 2)])
        return engine
    }

    @Test(
        "a 44.1 kHz WAV plays through a real engine player: all of it, at 48 kHz, then drained",
        .timeLimit(.minutes(1)))
    func playsThroughEngine() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("sox-44k.wav")
        let sox = try runTool(
            "sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", path, "synth", "1", "sine", "440"])
        try #require(sox.status == 0, "sox failed: \(sox.output)")

        let engine = try startEngine()
        defer { engine.stop() }
        let rate = try #require(engine.sampleRate)
        let period = try #require(engine.bufferSize)
        // A small ring (about 85 ms at 48 kHz), so the feeder has to keep topping it up.
        let handle = try engine.addPlayer(channels: 2, outputGroup: "out", bufferFrames: 4096)
        let outcomes = OutcomeBox()
        let player = FilePlayer(path: path, player: handle, outputSampleRate: rate)
        player.start(onFinished: outcomes.record)
        #expect(waitUntil(seconds: 5) { handle.framesQueued >= 2048 || player.isDone })
        engine.play(handle)

        #expect(waitUntil(seconds: 10) { handle.state == .drained })
        #expect(player.isFinished)
        let expected = Int((Double(rate) * 1.0).rounded())
        // soxr's flush returns its delayed tail, so its delay costs no frames; allow a period
        // and a little for the length rounding.
        let tolerance = period + 64
        #expect(
            abs(handle.framesPlayed - expected) <= tolerance,
            "played \(handle.framesPlayed) of about \(expected) frames")
        #expect(handle.framesPlayed == player.framesWritten, "everything written was played")
        #expect(handle.framesQueued == 0)
        #expect(outcomes.all == [.finished(frames: player.framesWritten)])
        let meters = engine.meters().filter { $0.group == "out" }
        #expect(meters.count == 2)
    }

    @Test(
        "stop() ends a feeder waiting on a full ring promptly; the player is not finished",
        .timeLimit(.minutes(1)))
    func stopsPromptly() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("long-48k.wav")
        try writeWAV(
            path, sampleRate: 48_000, channels: 2, bits: 16,
            samples: knownSignal(frames: 240_000, channels: 2, bits: 16))

        let engine = try startEngine()
        defer { engine.stop() }
        let rate = try #require(engine.sampleRate)
        let handle = try engine.addPlayer(channels: 2, outputGroup: "out", bufferFrames: 8192)
        let outcomes = OutcomeBox()
        let player = FilePlayer(path: path, player: handle, outputSampleRate: rate)
        player.start(onFinished: outcomes.record)
        // Never played: the ring fills and the feeder waits for room.
        #expect(waitUntil(seconds: 5) { handle.availableToWrite == 0 })
        usleep(100_000)
        #expect(player.state == .feeding)
        #expect(player.framesWritten == 8192)

        let clock = ContinuousClock()
        let took = clock.measure { player.stop() }
        #expect(took < .milliseconds(200), "stop took \(took)")
        #expect(player.state == .stopped)
        #expect(outcomes.all.isEmpty, "stop's caller knows; no callback")
        #expect(handle.state == .paused)

        // And a removed player ends its feeder by itself.
        let second = try engine.addPlayer(channels: 2, outputGroup: "out", bufferFrames: 8192)
        let detaching = FilePlayer(path: path, player: second, outputSampleRate: rate)
        detaching.start(onFinished: outcomes.record)
        #expect(waitUntil(seconds: 5) { second.availableToWrite == 0 })
        engine.removePlayer(second)
        #expect(waitUntil(seconds: 2) { detaching.isDone })
        #expect(detaching.state == .detached && outcomes.all == [.detached])
    }
}
