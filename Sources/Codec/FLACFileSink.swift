// The one file sink of the FLAC encoder: bytes go straight to the kernel, errno is kept with
// the call that failed (so a full disk is told apart from other failures), and, for crash-safe
// writers, disk space is reserved ahead of the data and the end of the last whole frame is
// tracked.

import Platform

/// Writes an encoder's bytes to a file, with seek and tell so libFLAC can complete STREAMINFO
/// and the seek table at the end.
///
/// - Writes go straight to the kernel (no user-space buffer), one `write(2)` per FLAC frame, so
///   a crash loses at most the block libFLAC is still collecting.
/// - Space reservation (optional): while the file system allows it (`fallocate` KEEP_SIZE),
///   blocks are reserved `headroom` bytes past the end of what was written. When the disk
///   fills, growing the reservation fails *before* a write can fail, `isLowOnSpace` turns
///   true, and the headroom left is enough to finish the stream cleanly (last frame,
///   STREAMINFO, comments). File systems that cannot reserve just write.
///
/// Holds its `OwnedFile`, which the creator may share (a segment writer edits the header and
/// syncs through it); the file closes when its last holder lets go, or at `close()`. Used on
/// the encoder's one thread: libFLAC calls it from inside `encode` and `finish`.
public final class FLACFileSink: FLACStreamSink {
    /// How far ahead of the data to reserve disk space.
    public struct Reservation: Sendable {
        /// Bytes kept reserved past the highest byte written: enough to finish the stream.
        public var headroom: Int64
        /// Bytes reserved beyond the headroom at each step, so that reserving is rare.
        public var growth: Int64

        public init(headroom: Int64, growth: Int64) {
            self.headroom = headroom
            self.growth = growth
        }
    }

    public let file: OwnedFile
    public var path: String { file.path }
    /// Why the first failed write or seek failed (errno in `cause`); nil while healthy.
    /// Nothing is written after one.
    public private(set) var failure: MediaError?
    /// The highest byte offset written so far.
    public private(set) var highWater: Int64 = 0
    /// End of the last whole audio frame written, and the samples (per channel) before it.
    public private(set) var endOfLastFrame: Int64 = 0
    public private(set) var framesInFile = 0
    /// The disk is nearly full: stop writing audio and finish (the room to do so is reserved).
    /// Always false without a reservation or on file systems that cannot reserve.
    public private(set) var isLowOnSpace = false
    private var reservation: Reservation?
    private var reservedEnd: Int64 = 0
    private var position: Int64 = 0

    /// Creates `path` (mode 0644); throws `.alreadyExists` if it exists: a file is never
    /// overwritten.
    public convenience init(creating path: String) throws(MediaError) {
        do {
            self.init(file: try OwnedFile(path, .createExclusive(permissions: 0o644)))
        } catch {
            throw FileProbe.error(opening: path, error)
        }
    }

    /// Writes into `file` from its start (a new, empty file), reserving space as `reservation`
    /// says (nil: none).
    public init(file: OwnedFile, reservation: Reservation? = nil) {
        self.file = file
        self.reservation = reservation
    }

    /// Reserves the first stretch; false when not even the headroom fits (the disk is full).
    public func reserveInitialSpace() -> Bool {
        maintainReservation()
        return !isLowOnSpace
    }

    /// Rejects all further writes (the stream is being abandoned: what reached the kernel
    /// stays, as a crash would leave it).
    public func seal() {
        guard failure == nil else { return }
        failure = failure(SystemError(.badFileDescriptor, operation: "write", path: path), "write after close")
    }

    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        write(bytes, samples: 0)
    }

    public func write(_ bytes: UnsafeRawBufferPointer, samples: Int) -> Bool {
        guard failure == nil else { return false }
        do throws(SystemError) {
            try file.writeAll(bytes)
        } catch {
            failure = failure(error, "write")
            return false
        }
        position += Int64(bytes.count)
        highWater = max(highWater, position)
        if samples > 0 {
            endOfLastFrame = position
            framesInFile += samples
        }
        maintainReservation()
        return true
    }

    public func seek(to offset: UInt64) -> FLACSinkSeekResult {
        guard failure == nil else { return .failed }
        do throws(SystemError) {
            position = try file.seek(to: Int64(offset))
            return .ok
        } catch {
            if error.errno == .illegalSeek { return .unsupported }
            failure = failure(error, "seek")
            return .failed
        }
    }

    public func tell() -> UInt64? { failure == nil ? UInt64(position) : nil }

    /// Forces what was written so far to the disk (`fdatasync`): what a crash-safe writer
    /// calls at least once a second (SPEC §9).
    public func sync() throws(MediaError) {
        do throws(SystemError) {
            try file.syncData()
        } catch {
            let failure = failure(error, "sync")
            self.failure = failure
            throw failure
        }
    }

    /// Closes the file; errors the kernel reports only at close (delayed write-back) throw.
    public func close() throws(MediaError) {
        do throws(SystemError) {
            try file.close()
        } catch {
            let failure = failure(error, "close")
            self.failure = failure
            throw failure
        }
    }

    /// Closes and deletes the file: for a stream that never got started.
    func discard() {
        try? file.close()
        try? FileSystem.remove(path)
    }

    /// Gives back the reserved blocks past `size` (punch hole for tmpfs, truncate for ext4).
    public func releaseReservation(size: Int64) throws(SystemError) {
        if reservedEnd > size { file.release(offset: size, length: reservedEnd - size) }
        reservedEnd = 0
        try file.truncate(to: size)
    }

    private func maintainReservation() {
        guard let reservation, highWater + reservation.headroom > reservedEnd else { return }
        let target = highWater + reservation.headroom + reservation.growth
        do throws(SystemError) {
            try file.reserve(offset: reservedEnd, length: target - reservedEnd)
            reservedEnd = target
        } catch {
            guard error.errno == .noSpace || error.errno == .diskQuotaExceeded else {
                // EOPNOTSUPP and friends: this file system cannot reserve; a full disk will then
                // show up as a failed write (a crash-safe writer keeps its file for recovery).
                self.reservation = nil
                return
            }
            let minimum = highWater + reservation.headroom
            do throws(SystemError) {
                try file.reserve(offset: reservedEnd, length: minimum - reservedEnd)
                reservedEnd = minimum
            } catch {
                isLowOnSpace = true
            }
        }
    }

    private func failure(_ error: SystemError, _ operation: String) -> MediaError {
        let advice =
            error.errno == .noSpace || error.errno == .diskQuotaExceeded
            ? "the disk is full; free space or lower the retention limits"
            : "check the disk and the directory's permissions"
        return MediaError(
            .io, path: path, message: "\(operation) failed: \(MediaError.describe(error)); \(advice)", cause: error)
    }
}
