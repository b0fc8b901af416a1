// The highest sample of each file's segment, in dB below full scale: SAMPLE_PEAK_DBFS at its end
// (to 0.01; 0.0 is a sample at full scale, where a louder one was clipped). Absent from a file
// of digital silence. The sample peak, not the true peak between samples (TRUE_PEAK_DBTP).

final class PeakLevelStage: SegmentStage {
    static let tag = "SAMPLE_PEAK_DBFS"

    private let files: [(first: Int, count: Int)]
    /// The open segment's highest magnitude per file (1 is full scale).
    private var peaks: [Float] = []

    init?(_ setup: StageSetup) { files = setup.files }

    func open(_ segment: SegmentOpening) -> [VorbisComment] {
        peaks = Array(repeating: 0, count: files.count)
        return []
    }

    func observe(_ channelStarts: UnsafePointer<UnsafePointer<Float>>, frames: Int, at position: Int) {
        for (index, file) in files.enumerated() where index < peaks.count {
            var peak = peaks[index]
            for channel in file.first..<(file.first + file.count) {
                peak = max(peak, Self.peak(of: channelStarts[channel], count: frames))
            }
            peaks[index] = peak
        }
    }

    /// The highest magnitude among `count` samples. Four maxima side by side: one chain of
    /// dependent maxima waits a maximum's latency on every sample.
    static func peak(of run: UnsafePointer<Float>, count: Int) -> Float {
        var (p0, p1, p2, p3) = (Float(0), Float(0), Float(0), Float(0))
        var frame = 0
        while frame + 4 <= count {
            p0 = max(p0, abs(run[frame]))
            p1 = max(p1, abs(run[frame + 1]))
            p2 = max(p2, abs(run[frame + 2]))
            p3 = max(p3, abs(run[frame + 3]))
            frame += 4
        }
        while frame < count {
            p0 = max(p0, abs(run[frame]))
            frame += 1
        }
        return max(max(p0, p1), max(p2, p3))
    }

    func close(_ segment: SegmentClosing, into ending: inout SegmentEnding) {
        for index in ending.files.indices where index < peaks.count && peaks[index] > 0 {
            let decibels = (Self.decibels(Double(min(peaks[index], 1))) * 100).rounded() / 100
            ending.files[index].tags.append(VorbisComment(Self.tag, String(decibels == 0 ? 0 : decibels)))
        }
    }

    /// 20·log10(`amplitude`) for 0 < amplitude ≤ 1, in the standard library's arithmetic alone
    /// (Archive imports no libm): amplitude = m·2^e with 1 ≤ m < 2, ln m = 2·atanh((m−1)/(m+1)),
    /// whose series converges fast for that |z| ≤ 1/3 (error below 1e-12 after 12 terms).
    static func decibels(_ amplitude: Double) -> Double {
        let m = amplitude.significand
        let z = (m - 1) / (m + 1)
        var term = z
        var sum = 0.0
        for k in stride(from: 1, through: 23, by: 2) {
            sum += term / Double(k)
            term *= z * z
        }
        let ln2 = 0.693_147_180_559_945_3
        let ln10 = 2.302_585_092_994_045_7
        let naturalLog = Double(amplitude.exponent) * ln2 + 2 * sum
        return 20 * naturalLog / ln10
    }
}
