// bench/hotpath.swift: the archiver's per-sample Swift code in isolation (issue 17), in ns
// per sample. Built by bench/hotpath with swiftc -O together with recd's own
// SampleQuantizer.swift, SilenceDetector.swift and FloatRing.swift (of the tree, or of an
// older commit for the "before" column): nothing here ships.
//
// Prints one line per case: `name ns_per_sample checksum`. The checksum (of the integers, the
// peaks and transitions, the samples read) must be the same before and after.
import Glibc
import Synchronization

func seconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Best of `rounds` rounds of `repeats` calls, each handling `samples` samples; only `body` is
/// timed (`prepare` runs before each call, untimed).
func measure(samples: Int, repeats: Int, rounds: Int = 7, prepare: () -> Void = {}, _ body: () -> Void) -> Double {
    var best = Double.infinity
    for _ in 0..<rounds {
        var total = 0.0
        for _ in 0..<repeats {
            prepare()
            let start = seconds()
            body()
            total += seconds() - start
        }
        best = min(best, total / Double(repeats * samples))
    }
    return best * 1e9
}

/// Written between calls in the "evicted" cases: 8 MiB, more than this VM's L2, so the samples
/// come from L3 or memory, as they may after libFLAC encoded the other files.
let evictor = UnsafeMutablePointer<UInt8>.allocate(capacity: 8 << 20)
func evict() {
    for index in Swift.stride(from: 0, to: 8 << 20, by: 64) { evictor[index] &+= 1 }
}

/// Pink-ish noise at about −12 dBFS: white noise through a one-pole low-pass mixed with
/// itself, from a fixed seed (the same samples for every build).
func noise(count: Int) -> [Float] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var low: Float = 0
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let white = Float(Int32(truncatingIfNeeded: state >> 32)) / 2_147_483_648
        low = 0.97 * low + 0.03 * white
        return 0.25 * white + 2 * low
    }
}

/// glibc's memcpy, out of the optimizer's sight (it would drop copies nobody reads).
@inline(never) @_optimize(none)
func opaqueCopy(_ destination: UnsafeMutableRawPointer, _ source: UnsafeRawPointer, _ count: Int) {
    memcpy(destination, source, count)
}

func checksum(_ values: UnsafeBufferPointer<Int32>) -> UInt64 {
    var sum: UInt64 = 1469598103934665603
    for value in values { sum = (sum ^ UInt64(UInt32(bitPattern: value))) &* 1099511628211 }
    return sum
}

@main
struct HotPath {
    static func main() {
        // libFLAC's block at level 5 (what SegmentWriter quantizes at once), or the first argument (at least 1024: the ring's read).
        let frames = max(1024, CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 4096 : 4096)
        let wide = 32
        let source = noise(count: frames * wide)
        let output = UnsafeMutablePointer<Int32>.allocate(capacity: frames * wide)
        let quantizer = SampleQuantizer(bitsPerSample: 24)
        source.withUnsafeBufferPointer { input in
            let base = input.baseAddress!
            // Quantize: 8-of-32 groups (every group of a 32-channel tap), 2 and 1 channels.
            for (name, stride, channels, evicted) in [
                ("quantize-8-of-32", 32, 8, false), ("quantize-2", 2, 2, false), ("quantize-1", 1, 1, false),
                ("quantize-8-of-32-evicted", 32, 8, true),
            ] {
                let groups = stride / channels == 1 ? 1 : stride / channels
                let groupFrames = stride == channels ? frames * wide / channels : frames
                let ns = measure(samples: groupFrames * channels * groups, repeats: 20, prepare: evicted ? evict : {}) {
                    for group in 0..<groups {
                        quantizer.quantize(
                            base, stride: stride, firstChannel: group * channels, channels: channels,
                            frames: groupFrames, into: output + group * groupFrames * channels)
                    }
                }
                let sum = checksum(UnsafeBufferPointer(start: output, count: groupFrames * channels * groups))
                print(name, ns, sum)
            }
            // The four groups tile by tile (64 frames), as the archiver quantizes a recorder's files
            // (SegmentWriter.write(_:groups:…)): each tile's cache lines are read once for all four.
            for evicted in [false, true] {
                let ns = measure(samples: frames * wide, repeats: 20, prepare: evicted ? evict : {}) {
                    var tile = 0
                    while tile < frames {
                        let count = min(64, frames - tile)
                        for group in 0..<4 {
                            quantizer.quantize(
                                base + tile * wide, stride: wide, firstChannel: group * 8, channels: 8, frames: count,
                                into: output + group * frames * 8 + tile * 8)
                        }
                        tile += count
                    }
                }
                let sum = checksum(UnsafeBufferPointer(start: output, count: frames * wide))
                print(evicted ? "quantize-8-of-32-tiled-evicted" : "quantize-8-of-32-tiled", ns, sum)
            }
            // Silence: the detector on 32, 2 and 1 interleaved channels (one block level per 10 ms).
            for channels in [32, 2, 1] {
                let chunk = frames * wide / channels
                var detector = SilenceDetector(
                    detection: SilenceDetection(threshold: 0.001, seconds: 2), sampleRate: 48_000)
                var position = 0
                var events = 0
                let ns = measure(samples: chunk * channels, repeats: 20) {
                    detector.observe(base, frames: chunk, channels: channels, position: position) { _ in events += 1 }
                    position += chunk
                }
                // Threshold between the noise's quiet and loud blocks: transitions are checked too.
                var sum: UInt64 = 0
                var checker = SilenceDetector(
                    detection: SilenceDetection(threshold: 0.9, seconds: 0.02), sampleRate: 48_000)
                checker.observe(base, frames: chunk, channels: channels, position: 0) {
                    let frames = UInt64($0.sinceFrame) ^ UInt64($0.decidedFrame) << 20
                    let fields = frames ^ UInt64($0.peak.bitPattern) << 32
                    sum = (sum ^ fields) &* 1099511628211
                }
                print("silence-\(channels)", ns, sum &+ UInt64(events > 0 ? 0 : 1))
            }
            // The ring read: 32 channels, 1024 frames at a time, as the archiver reads a tap.
            let ring = FloatRing.allocate(channels: wide, capacityFrames: 8192)
            let destination = UnsafeMutablePointer<Float>.allocate(capacity: 1024 * wide)
            var read = 0
            let ns = measure(samples: 1024 * wide, repeats: 200) {
                _ = ring.write(from: base, frames: 1024)
                read = ring.read(into: destination, frames: 1024)
            }
            // The write is the JACK side's copy, timed with it: report the read as half.
            let sum = checksum(
                UnsafeBufferPointer(
                    start: UnsafeRawPointer(destination).assumingMemoryBound(to: Int32.self), count: read * wide))
            print("ring-write+read-32", ns, sum)
            let copy = UnsafeMutablePointer<Float>.allocate(capacity: 1024 * wide)
            let copyNs = measure(samples: 1024 * wide, repeats: 200) {
                opaqueCopy(copy, base, 1024 * wide * 4)
                opaqueCopy(destination, copy, 1024 * wide * 4)
            }
            print("memcpy-twice-32", copyNs, sum)
        }
    }
}
