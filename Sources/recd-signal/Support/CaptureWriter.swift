// The disk side of `capture`: the file (raw or WAV) and the writer thread that drains the
// ring into it. The writer thread ("writer") is an ordinary thread: it may block in write(2)
// and sleep; the process thread never waits for it.

internal import CJack
import Platform
import Synchronization

/// The capture file: an open file (closed by `close(frames:)`, or when dropped), plus the WAV
/// header to patch at the end. Main thread, except `append`, which only the writer thread
/// calls (on `descriptor`) while it runs.
struct CaptureFile: ~Copyable {
    private let file: OwnedFile
    let path: String
    let wav: Bool
    let channelCount: Int
    let sampleRate: Int
    static let wavHeaderSize = 58

    /// Creates (truncates) `path`; with `wav`, writes a header whose sizes `close` fills in.
    init(path: String, wav: Bool, channelCount: Int, sampleRate: Int) throws(Failure) {
        let file: OwnedFile
        do {
            file = try OwnedFile(path, .createOrTruncate(permissions: 0o644))
        } catch {
            throw .jack("cannot create \(path): \(error.message)")
        }
        if wav {
            let header = Self.wavHeader(channels: channelCount, rate: sampleRate, frames: 0)
            if let code = header.withUnsafeBytes({
                Self.append(file.descriptor, $0.baseAddress!, $0.count)
            }) {
                throw .jack("cannot write \(path): \(errnoDescription(code))")
            }
        }
        self.file = file
        self.path = path
        self.wav = wav
        self.channelCount = channelCount
        self.sampleRate = sampleRate
    }

    /// The descriptor the writer thread appends to; the file owns it.
    var descriptor: Int32 { file.descriptor }

    /// Writes all `count` bytes; returns errno on failure.
    static func append(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int32? {
        do {
            try Descriptor.writeAll(descriptor, UnsafeRawBufferPointer(start: bytes, count: count), path: nil)
            return nil
        } catch {
            return error.errno.rawValue
        }
    }

    /// Fills in the WAV sizes for `frames` frames and closes the file.
    consuming func close(frames: Int) throws(Failure) {
        defer { try? file.close() }
        if wav {
            let header = Self.wavHeader(channels: channelCount, rate: sampleRate, frames: frames)
            do {
                try file.writeAll(header, at: 0)
            } catch {
                throw .jack("cannot write the WAV header of \(path): \(error.message)")
            }
        }
    }

    /// RIFF/WAVE, fmt (WAVE_FORMAT_IEEE_FLOAT, 32-bit, cbSize 0), fact, data: 58 bytes.
    /// Sizes past 4 GiB saturate.
    static func wavHeader(channels: Int, rate: Int, frames: Int) -> [UInt8] {
        let blockAlign = channels * 4
        let dataBytes = UInt32(clamping: frames * blockAlign)
        var bytes: [UInt8] = []
        func text(_ string: String) { bytes += Array(string.utf8) }
        func u16(_ value: Int) { bytes += [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF)] }
        func u32(_ value: UInt32) {
            bytes += [0, 8, 16, 24].map { UInt8((value >> $0) & 0xFF) }
        }
        text("RIFF")
        u32(dataBytes > UInt32.max - 50 ? UInt32.max : dataBytes + 50)
        text("WAVE")
        text("fmt ")
        u32(18)
        u16(3)  // WAVE_FORMAT_IEEE_FLOAT
        u16(channels)
        u32(UInt32(rate))
        u32(UInt32(clamping: rate * blockAlign))
        u16(blockAlign)
        u16(32)
        u16(0)  // cbSize
        text("fact")
        u32(4)
        u32(UInt32(clamping: frames))
        text("data")
        u32(dataBytes)
        return bytes
    }
}

/// What the writer thread shares with the main thread, in plain memory. The main thread
/// allocates it before starting the thread and frees it after joining it.
struct WriterShared: ~Copyable {
    let ring: UnsafeMutablePointer<jack_ringbuffer_t>
    let descriptor: Int32
    let frameBytes: Int
    /// Set by the main thread once the process thread has stopped: drain, then end.
    let stop = Atomic<Bool>(false)
    /// Bytes of samples written to the file.
    let bytesWritten = Atomic<Int>(0)
    /// errno of a failed write (0: none). After a failure the writer keeps draining the ring
    /// (so the process thread sees no overruns) but writes no more.
    let failure = Atomic<Int32>(0)
}

/// The shared memory handed to the writer thread; the main thread frees it only after joining.
private struct SharedHandoff: @unchecked Sendable {
    let shared: UnsafeMutablePointer<WriterShared>
}

/// The writer thread's body.
private func runWriter(_ shared: UnsafeMutablePointer<WriterShared>) {
    let ring = shared.pointee.ring
    let frameBytes = shared.pointee.frameBytes
    let capacity = frameBytes * 8192
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    defer { buffer.deallocate() }
    while true {
        // Read `stop` first: once it is set the process thread is done, so the read space
        // seen after it is all there will ever be.
        let stopping = shared.pointee.stop.load(ordering: .acquiring)
        let available = jack_ringbuffer_read_space(ring)
        if available < frameBytes {
            if stopping { return }
            SystemClock.sleep(seconds: 0.002)
            continue
        }
        let count = min(available, capacity) / frameBytes * frameBytes
        _ = jack_ringbuffer_read(ring, buffer.assumingMemoryBound(to: CChar.self), count)
        guard shared.pointee.failure.load(ordering: .relaxed) == 0 else { continue }
        #if _endian(big)
            let samples = buffer.assumingMemoryBound(to: UInt32.self)
            for index in 0..<(count / 4) { samples[index] = samples[index].littleEndian }
        #endif
        if let code = CaptureFile.append(shared.pointee.descriptor, buffer, count) {
            shared.pointee.failure.store(code, ordering: .relaxed)
        } else {
            shared.pointee.bytesWritten.add(count, ordering: .relaxed)
        }
    }
}

/// The running writer thread. Main thread only.
struct CaptureWriter: ~Copyable {
    private let thread: NamedThread
    let shared: UnsafeMutablePointer<WriterShared>

    init(ring: UnsafeMutablePointer<jack_ringbuffer_t>, descriptor: Int32, frameBytes: Int)
        throws(Failure)
    {
        shared = .allocate(capacity: 1)
        shared.initialize(
            to: WriterShared(ring: ring, descriptor: descriptor, frameBytes: frameBytes))
        let handoff = SharedHandoff(shared: shared)
        do throws(SystemError) {
            thread = try NamedThread(name: "writer") { runWriter(handoff.shared) }
        } catch {
            shared.deinitialize(count: 1)
            shared.deallocate()
            throw .jack("cannot start the writer thread: \(error.message)")
        }
    }

    /// Call once the process thread can no longer write: drains the ring, joins the thread.
    /// Returns the bytes written and the errno of a failed write, if any.
    consuming func finish() -> (bytes: Int, failure: Int32) {
        shared.pointee.stop.store(true, ordering: .releasing)
        thread.join()
        let result = (
            shared.pointee.bytesWritten.load(ordering: .relaxed),
            shared.pointee.failure.load(ordering: .relaxed)
        )
        shared.deinitialize(count: 1)
        shared.deallocate()
        return result
    }
}
