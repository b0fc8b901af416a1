// Runs on the JACK process thread. No allocation, locks, ARC, closures, existentials, String,
// logging or blocking.
//
// The process thread accumulates; a reader (control thread) takes and resets.

import Synchronization

/// Peak and energy accumulators of one channel, shared lock-free with a reader.
///
/// The reader takes each field with an atomic exchange, which resets it, so nothing the
/// process thread adds is lost; the three fields are not taken as one, so a reading's energy
/// and frame count may disagree by at most one period (negligible over a meter interval).
struct MeterCell: ~Copyable {
    /// Bit pattern of the largest |sample| (non-negative floats order like their bits).
    let peakBits = Atomic<UInt32>(0)
    /// Bit pattern of a Double: the sum of squared samples.
    let sumOfSquaresBits = Atomic<UInt64>(0)
    let frames = Atomic<Int>(0)

    /// Process thread: adds one period's measurements of `count` samples at `samples`.
    @_noLocks
    func accumulate(_ samples: UnsafePointer<Float>, count: Int) {
        // Four independent lanes, so the adds do not wait on each other and the compiler can
        // vectorize (one running sum was a quarter of the process callback's time at 32 ports).
        var peak0: Float = 0, peak1: Float = 0, peak2: Float = 0, peak3: Float = 0
        var sum0: Float = 0, sum1: Float = 0, sum2: Float = 0, sum3: Float = 0
        var index = 0
        while index + 4 <= count {
            let a = samples[index], b = samples[index + 1], c = samples[index + 2], d = samples[index + 3]
            peak0 = max(peak0, abs(a))
            peak1 = max(peak1, abs(b))
            peak2 = max(peak2, abs(c))
            peak3 = max(peak3, abs(d))
            sum0 += a * a
            sum1 += b * b
            sum2 += c * c
            sum3 += d * d
            index += 4
        }
        while index < count {
            let sample = samples[index]
            peak0 = max(peak0, abs(sample))
            sum0 += sample * sample
            index += 1
        }
        let peak = max(max(peak0, peak1), max(peak2, peak3))
        add(peak: peak, sumOfSquares: Double((sum0 + sum1) + (sum2 + sum3)), frames: count)
    }

    /// Process thread.
    @_noLocks
    func add(peak: Float, sumOfSquares: Double, frames count: Int) {
        // NaN has no order; a NaN sample must not stick the peak at NaN forever.
        if !peak.isNaN { peakBits.max(peak.bitPattern, ordering: .relaxed) }
        var old = sumOfSquaresBits.load(ordering: .relaxed)
        while true {
            let new = (Double(bitPattern: old) + sumOfSquares).bitPattern
            let (exchanged, current) = sumOfSquaresBits.compareExchange(
                expected: old, desired: new, ordering: .relaxed)
            if exchanged { break }
            old = current
        }
        frames.add(count, ordering: .relaxed)
    }

    /// Reader: the accumulated values since the last take, resetting them.
    func take() -> (peak: Float, sumOfSquares: Double, frames: Int) {
        let count = frames.exchange(0, ordering: .relaxed)
        let sum = Double(bitPattern: sumOfSquaresBits.exchange(0, ordering: .relaxed))
        let peak = Float(bitPattern: peakBits.exchange(0, ordering: .relaxed))
        return (peak, sum, count)
    }
}
