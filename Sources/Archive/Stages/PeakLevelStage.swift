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
                let run = channelStarts[channel]
                for frame in 0..<frames { peak = max(peak, abs(run[frame])) }
            }
            peaks[index] = peak
        }
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
