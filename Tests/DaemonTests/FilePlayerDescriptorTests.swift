// A file player fed an open descriptor (what recd gets from a client) while another reader of
// the same file probes it.

import AudioTestSupport
import Codec
import Testing

@testable import Daemon

@Suite("Reading from a descriptor: the file player")
struct FilePlayerDescriptorTests {
    @Test("a FilePlayer given an open file plays all of it while another reader probed it", arguments: ["wav", "flac"])
    func playerSharesFileWithProbe(format: String) throws {
        let directory = try TemporaryDirectory()
        let (path, original) = try writeKnownFile(directory, format: format)
        let file = try ReadOnlyFile(adopting: try openReadOnly(path), name: path)
        // As recd does: the control thread reads the header, the feeder decodes the file.
        let probe = try AudioFileReader(file: file)
        #expect(probe.channels == 3)
        let sink = RecordingSink(channels: 3, capacityFrames: 4096, bite: 700)
        let player = FilePlayer(file: file, sink: sink, outputSampleRate: 44_100, quality: .high)
        player.start()
        let probed = try probe.readAll()
        #expect(waitUntil(seconds: 10) { player.isDone })
        #expect(player.isFinished && player.path == path)
        #expect(mismatch(sink.samples, original, bits: 16) == nil)
        #expect(mismatch(probed, original, bits: 16) == nil)
    }
}
