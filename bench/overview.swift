// bench/overview's program: LevelCells.add (the level overview stage's per-sample work) on
// 2 channels of pink-ish noise in 4096-frame blocks at 48 kHz, ns per sample (best of 7 rounds),
// and the noise written as raw 24-bit PCM for the flac CLI (the encoding floor beside it).

import Glibc

@main
struct OverviewBench {
    static func main() {
        let rate = 48_000
        let channels = 2
        let block = 4096
        let seconds = 60
        let frames = rate * seconds
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var previous: [Float] = [0, 0]
        var planes = Array(repeating: [Float](repeating: 0, count: frames), count: channels)
        for frame in 0..<frames {
            for channel in 0..<channels {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let white = Float(Int64(bitPattern: state >> 11) % 65_536 - 32_768) / 32_768
                previous[channel] = 0.97 * previous[channel] + 0.03 * white * 8
                planes[channel][frame] = max(-1, min(1, previous[channel] * 0.25))
            }
        }
        var best = Double.infinity
        var checksum = 0
        for _ in 0..<7 {
            var cells = LevelCells(sampleRate: rate, walks: Walks.current)
            cells.begin(at: 0)
            var start = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start)
            planes[0].withUnsafeBufferPointer { left in
                planes[1].withUnsafeBufferPointer { right in
                    var position = 0
                    while position < frames {
                        let count = min(block, frames - position)
                        let pointers = [left.baseAddress! + position, right.baseAddress! + position]
                        pointers.withUnsafeBufferPointer { starts in
                            cells.add(starts.baseAddress!, channels: 0..<channels, frames: count, at: position)
                        }
                        position += count
                    }
                }
            }
            let codes = cells.finish(at: frames)
            var end = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end)
            let nanos = Double(end.tv_sec - start.tv_sec) * 1e9 + Double(end.tv_nsec - start.tv_nsec)
            best = min(best, nanos / Double(frames * channels))
            checksum = codes.reduce(0) { $0 &+ Int($1) }
            precondition(codes.count == seconds * 2)
        }
        print("overview_ns_per_sample \(best) \(checksum)")
        print("overview_bytes_per_second 2")
        // Raw 24-bit little-endian interleaved PCM for `flac`.
        var pcm = [UInt8]()
        pcm.reserveCapacity(frames * channels * 3)
        for frame in 0..<frames {
            for channel in 0..<channels {
                let value = Int32((planes[channel][frame] * 8_388_607).rounded())
                pcm += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8),
                        UInt8(truncatingIfNeeded: value >> 16)]
            }
        }
        let path = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "/tmp/overview-bench.raw"
        let file = fopen(path, "wb")
        _ = pcm.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
}
