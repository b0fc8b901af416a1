// AudioFileReader on WAV files (sox and libsndfile made) and on files it must refuse.

import AudioTestSupport
import Foundation
import Testing

@testable import Codec

@Suite("Reading WAV and refusing bad files")
struct ReaderTests {
    @Test("a sox-made 16-bit stereo WAV reads as the sine sox was asked for")
    func soxSine() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("test.wav")
        let sox = try runTool(
            "sox",
            ["-n", "-r", "44100", "-c", "2", "-b", "16", path, "synth", "0.5", "sine", "440"])
        #expect(sox.status == 0, "sox failed: \(sox.output)")

        let reader = try AudioFileReader(path: path)
        #expect(reader.format == .wav)
        #expect(reader.sampleRate == 44_100 && reader.channels == 2 && reader.bitsPerSample == 16)
        #expect(reader.totalFrames == 22_050)
        let samples = try reader.readAll()
        #expect(samples.count == 2 * 22_050)
        #expect(integers(samples, bits: 16) != nil, "16-bit samples are multiples of 2^-15")

        // sox's sine: amplitude about -3 dBFS, phase 0. Measure the amplitude over a whole
        // number of cycles (22050 frames hold 220), then every sample away from sox's short
        // start and end transients must follow A·sin(2π·440·n/44100) within its dither.
        let left = channel(samples, 0, of: 2)
        let a = amplitude(of: 440, in: left, range: 0..<22_050, sampleRate: 44_100)
        #expect(a > 0.70 && a < 0.71, "amplitude \(a)")
        for n in 100..<(22_050 - 100) {
            let expected = a * sin(2 * Double.pi * 440 * Double(n) / 44_100)
            for c in 0..<2 where abs(Double(samples[2 * n + c]) - expected) > 3.0 / 32_768 {
                Issue.record("frame \(n) channel \(c): \(samples[2 * n + c]) vs \(expected)")
                return
            }
        }
    }

    @Test("libsndfile-made 16- and 24-bit WAVs read sample-exact", arguments: [16, 24])
    func libsndfileExact(bits: Int) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("exact-\(bits).wav")
        let original = knownSignal(frames: 7_000, channels: 3, bits: bits)
        try writeWAV(path, sampleRate: 32_000, channels: 3, bits: bits, samples: original)

        let reader = try AudioFileReader(path: path)
        #expect(reader.sampleRate == 32_000 && reader.channels == 3)
        #expect(reader.bitsPerSample == bits && reader.totalFrames == 7_000)
        // In small reads, to cross read boundaries.
        var decoded: [Float] = []
        var buffer = [Float](repeating: 0, count: 333 * 3)
        while true {
            let frames = try buffer.withUnsafeMutableBufferPointer {
                try reader.read(into: $0, maxFrames: 333)
            }
            if frames == 0 { break }
            decoded += buffer[..<(frames * 3)]
        }
        #expect(mismatch(decoded, original, bits: bits) == nil)
    }

    @Test("the container is chosen by content, not by extension")
    func contentNotExtension() throws {
        let directory = try TemporaryDirectory()
        let flacNamedWav = directory.file("really-flac.wav")
        let writer = try FLACWriter(
            path: flacNamedWav, sampleRate: 48_000, channels: 1, bitsPerSample: 16)
        try writer.write(sine(frequency: 1000, sampleRate: 48_000, frames: 480))
        try writer.finish()
        #expect(try AudioFileReader(path: flacNamedWav).format == .flac)

        let wavNamedFlac = directory.file("really-wav.flac")
        try writeWAV(
            wavNamedFlac, sampleRate: 48_000, channels: 1, bits: 16,
            samples: knownSignal(frames: 480, channels: 1, bits: 16))
        #expect(try AudioFileReader(path: wavNamedFlac).format == .wav)
    }

    @Test("a missing file is .notFound and says to check the path")
    func missing() throws {
        let directory = try TemporaryDirectory()
        let error = mediaError { try AudioFileReader(path: directory.file("nope.flac")) }
        #expect(error?.kind == .notFound)
        #expect(error?.path == directory.file("nope.flac"))
        #expect(error?.message.contains("check the path") == true)
        #expect(
            mediaError { try FLACInspector.streamInfo(path: directory.file("nope.flac")) }?
                .kind == .notFound)
    }

    @Test("random bytes, an empty file and a directory are refused with the right kind")
    func notAudio() throws {
        let directory = try TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        let random = directory.file("random.flac")
        try Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
            .write(to: URL(fileURLWithPath: random))
        let error = mediaError { try AudioFileReader(path: random) }
        #expect(error?.kind == .unsupportedFormat)
        #expect(error?.message.contains("convert it to FLAC or WAV") == true)

        let empty = directory.file("empty.wav")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(mediaError { try AudioFileReader(path: empty) }?.kind == .unsupportedFormat)

        #expect(mediaError { try AudioFileReader(path: directory.path) }?.kind == .io)
        #expect(
            mediaError { try FLACInspector.streamInfo(path: random) }?.kind
                == .unsupportedFormat)
    }

    @Test("FLAC and WAV magic followed by garbage is .corrupt")
    func garbageAfterMagic() throws {
        let directory = try TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        let garbage = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }

        let flac = directory.file("garbage.flac")
        try Data(Array("fLaC".utf8) + [0x00, 0x00, 0x00, 0x22] + garbage)
            .write(to: URL(fileURLWithPath: flac))
        #expect(mediaError { try AudioFileReader(path: flac).readAll() }?.kind == .corrupt)

        let wav = directory.file("garbage.wav")
        try Data(Array("RIFF".utf8) + [0xFF, 0xFF, 0x00, 0x00] + Array("WAVE".utf8) + garbage)
            .write(to: URL(fileURLWithPath: wav))
        let error = mediaError { try AudioFileReader(path: wav).readAll() }
        #expect(
            error?.kind == .corrupt || error?.kind == .unsupportedFormat,
            "\(String(describing: error))")
    }

    @Test("a truncated FLAC is .corrupt: in its header at open, in its audio at the end")
    func truncatedFLAC() throws {
        let directory = try TemporaryDirectory()
        let whole = directory.file("whole.flac")
        let writer = try FLACWriter(path: whole, sampleRate: 48_000, channels: 2, bitsPerSample: 16)
        try writer.write(
            floats(knownSignal(frames: 48_000, channels: 2, bits: 16), bits: 16))
        try writer.finish()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))

        let header = directory.file("header.flac")
        try bytes.prefix(20).write(to: URL(fileURLWithPath: header))
        #expect(mediaError { try AudioFileReader(path: header) }?.kind == .corrupt)

        let half = directory.file("half.flac")
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: half))
        let reader = try AudioFileReader(path: half)
        #expect(reader.totalFrames == 48_000)
        let error = mediaError { try reader.readAll() }
        #expect(error?.kind == .corrupt)
        #expect(error?.message.contains("re-encode") == true)

        // One flipped byte in the audio: the frame CRC or the MD5 catches it.
        var damaged = bytes
        damaged[bytes.count * 3 / 4] ^= 0x5A
        let flipped = directory.file("flipped.flac")
        try damaged.write(to: URL(fileURLWithPath: flipped))
        #expect(mediaError { try AudioFileReader(path: flipped).readAll() }?.kind == .corrupt)
    }
}
