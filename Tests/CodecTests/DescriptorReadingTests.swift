// Reading audio from an open descriptor (what recd gets from a client) instead of a path:
// the same samples, readers that never share a file offset, and a descriptor closed once.

import AudioTestSupport
import Foundation
import Glibc
import Testing

@testable import Codec

@Suite("Reading from a descriptor")
struct DescriptorReadingTests {
    @Test("a WAV or FLAC read from a descriptor gives the samples read from its path", arguments: ["wav", "flac"])
    func sameSamplesAsPath(format: String) throws {
        let directory = try TemporaryDirectory()
        let (path, original) = try writeKnownFile(directory, format: format)
        let fd = try openReadOnly(path)
        // A dup shares the descriptor's file offset: it shows whether reading moved it.
        let twin = dup(fd)
        defer { close(twin) }

        let fromDescriptor = try AudioFileReader(file: ReadOnlyFile(adopting: fd, name: "/shown/as/this.name"))
        let fromPath = try AudioFileReader(path: path)
        #expect(fromDescriptor.path == "/shown/as/this.name")
        #expect(fromDescriptor.format == fromPath.format && fromDescriptor.format.rawValue == format)
        #expect(fromDescriptor.sampleRate == 44_100 && fromDescriptor.channels == 3)
        #expect(fromDescriptor.totalFrames == fromPath.totalFrames && fromDescriptor.totalFrames == 7_000)
        let samples = try fromDescriptor.readAll()
        #expect(samples == (try fromPath.readAll()))
        #expect(mismatch(samples, original, bits: 16) == nil)
        #expect(lseek(twin, 0, SEEK_CUR) == 0, "readers use pread and leave the shared offset alone")
    }

    @Test(
        "two readers on dup'ed descriptors of one file, read in turns, each get every sample",
        arguments: ["wav", "flac"])
    func dupedReadersDoNotDisturbEachOther(format: String) throws {
        let directory = try TemporaryDirectory()
        let (path, original) = try writeKnownFile(directory, format: format)
        let fd = try openReadOnly(path)
        let twin = dup(fd)
        // Whatever the shared offset says, it is nobody's position.
        #expect(lseek(fd, 1234, SEEK_SET) == 1234)
        let first = try AudioFileReader(file: ReadOnlyFile(adopting: fd, name: path))
        let second = try AudioFileReader(file: ReadOnlyFile(adopting: twin, name: path))
        var firstSamples: [Float] = []
        var secondSamples: [Float] = []
        var buffer = [Float](repeating: 0, count: 500 * 3)
        var firstDone = false
        var secondDone = false
        while !firstDone || !secondDone {
            for (reader, frames) in [(first, 333), (second, 500)] {
                let got = try buffer.withUnsafeMutableBufferPointer { try reader.read(into: $0, maxFrames: frames) }
                if reader === first {
                    firstSamples += buffer[..<(got * 3)]
                    firstDone = firstDone || got == 0
                } else {
                    secondSamples += buffer[..<(got * 3)]
                    secondDone = secondDone || got == 0
                }
            }
        }
        #expect(mismatch(firstSamples, original, bits: 16) == nil)
        #expect(mismatch(secondSamples, original, bits: 16) == nil)
    }

    @Test("the descriptor is closed once its last holder is gone, not before")
    func closedWithLastHolder() throws {
        let directory = try TemporaryDirectory()
        let (path, _) = try writeKnownFile(directory, format: "flac")
        let fd = try openReadOnly(path)
        var reader: AudioFileReader? = try AudioFileReader(file: ReadOnlyFile(adopting: fd, name: path))
        #expect(descriptorTarget(fd) == path, "the reader holds the file open")
        _ = try reader?.readAll()
        reader = nil
        #expect(descriptorTarget(fd) != path)
    }

    @Test("a directory, a write-only and an O_PATH descriptor are refused, and closed")
    func unreadableDescriptorsAreRefused() throws {
        let directory = try TemporaryDirectory()
        let (path, _) = try writeKnownFile(directory, format: "wav")
        let cases: [(flags: Int32, target: String, message: String)] = [
            (O_RDONLY | O_DIRECTORY, directory.path, "it is a directory"),
            (O_WRONLY, path, "not open for reading"),
            (0o10_000_000 /* O_PATH */, path, "not open for reading"),
        ]
        for (flags, target, message) in cases {
            let fd = open(target, flags | O_CLOEXEC)
            try #require(fd >= 0, "open \(target): errno \(errno)")
            let error = mediaError { try ReadOnlyFile(adopting: fd, name: target) }
            #expect(error?.kind == .io)
            #expect(error?.message.contains(message) == true, "\(String(describing: error))")
            #expect(descriptorTarget(fd) != target, "a refused descriptor is closed")
        }
        let fifo = directory.file("fifo")
        try #require(mkfifo(fifo, 0o600) == 0)
        // Opening a FIFO by path must not wait for a writer.
        #expect(mediaError { try AudioFileReader(path: fifo) }?.message.contains("not a regular file") == true)
    }

    // MARK: Helpers

    /// What `fd` refers to now (/proc/self/fd), or nil when it is not open.
    private func descriptorTarget(_ fd: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
    }
}
