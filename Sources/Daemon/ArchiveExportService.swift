// `archive.export`: one stream's audio between two times as one FLAC or WAV
// file. The client opens the output itself, as the calling user, and passes the descriptor
// with the request (SCM_RIGHTS, as `play` does): recd never opens a path a client names. recd
// reads the source segments with its own rights, so it exports only segments the caller could
// read itself (the rule `archive.verify PATH` applies); an export that needs one the caller
// may not read is refused as a whole.
//
// A stream being recorded is part of it: the control thread takes each of the
// app's recorders' snapshot (open segments up to their last complete FLAC frame, finished ones
// not yet indexed) when the request comes; the job reads nothing past it, and `to` past it is
// clamped there (`requestedEnd` in the reply).
//
// Threads:
// - `ArchiveService.export`: the control thread (checks the request, takes the snapshot,
//   submits the job).
// - The job (`ArchiveMaintenance.export`): the slow worker, one job at a time; decoding and
//   encoding never run on the control thread.
import Archive
import ArchiveProof
import ControlProtocol
import Foundation
import Platform
import SessionPolicy
import SystemSupport

extension ArchiveMaintenance {
    /// Plans and writes the clip. Worker thread. `live`: the app's recorders as the control
    /// thread saw them when the request came; their open segments are read up to that
    /// instant's last complete FLAC frame, never further.
    func export(
        _ request: ExportRequest, from: UTCTime, to asked: UTCTime, format: ClipFormat, output: OwnedFile,
        uid: UInt32, groups: Set<UInt32>, live: [RecorderSnapshot], chains: ChainKeeper? = nil, job: WorkerJob
    ) throws -> ExportInfo {
        // The snapshot's open segments stand for their files even when the index holds them
        // finished by now (they rotated meanwhile); finished ones the control thread had not
        // indexed yet come from the snapshot too.
        // (Empty ones too: the plan takes no audio from them, but the clip ends at their start.)
        let open = live.flatMap(\.open).filter { $0.record.group == 0 }
        let openByPath = Dictionary(open.map { ($0.record.path, $0) }, uniquingKeysWith: { first, _ in first })
        var all = try index().list(app: request.app).filter { $0.group == 0 && openByPath[$0.path] == nil }
        let indexed = Set(all.map(\.path))
        all += live.flatMap(\.unindexed).filter {
            $0.group == 0 && openByPath[$0.path] == nil && !indexed.contains($0.path)
        }
        all += open.map(\.record)
        let overlapping = all.filter { $0.endTime > from && $0.startTime < asked }
        let stream: String
        if let named = request.stream {
            stream = named
        } else {
            let streams = Set(overlapping.map(\.stream)).sorted()
            guard streams.count <= 1 else {
                throw SessionError(
                    .badParam,
                    "\(request.app) recorded \(streams.count) streams then (\(streams.joined(separator: ", "))); "
                        + "choose one with --stream")
            }
            stream = streams.first ?? ""
        }
        // Nothing is recorded past the newest complete frame yet: a clip of a stream being
        // recorded ends there (`--to now`), not in silence for the future.
        var to = asked
        if let written = open.filter({ $0.record.stream == stream }).map(\.record.endTime).max(), written < to {
            guard written > from else {
                throw SessionError(
                    .badParam,
                    "\(request.app) has written nothing after \(from) yet (its newest complete FLAC frame ends at "
                        + "\(written)); export an earlier stretch, or wait a moment")
            }
            to = written
        }
        let records = overlapping.filter { $0.stream == stream && $0.startTime < to }
        guard !records.isEmpty else {
            let what = request.stream.map { "stream \($0) of \(request.app)" } ?? request.app
            throw SessionError(
                .badParam,
                "no recording of \(what) between \(from) and \(to); `recctl archive list --app \(request.app)` shows "
                    + "what the archive holds")
        }
        var plan: ClipPlan
        do { plan = try ClipPlan.plan(records: records, from: from, to: to) } catch { throw error.sessionError }
        // Clamped, the clip ends with the last frame written. `to`, from the open segment's own
        // START_TIME, may lie one frame past where the rotations before it put that frame (each
        // rounded to a whole frame): that frame is not silence to add.
        if to < asked, case .silence(let frames)? = plan.pieces.last, frames == 1 {
            plan.pieces.removeLast()
            plan.frames -= 1
            to = from.advanced(byFrames: plan.frames, sampleRate: plan.sampleRate)
            plan.to = to
        }
        let planned = Set(plan.segments.map(\.path))
        plan.openSegments = openByPath.filter { planned.contains($0.key) }
        // A segment being written is its `.partial` (or, rotated meanwhile, its final file).
        func shownPath(_ record: SegmentRecord) -> String {
            guard let open = plan.openSegments[record.path], FileSystem.exists(open.partialPath) else {
                return record.path
            }
            return open.partialPath
        }
        for record in plan.segments where !ArchivePath.isReadable(shownPath(record), uid: uid, groups: groups) {
            throw SessionError(
                .badParam,
                "uid \(uid) may not read \(shownPath(record)), a segment of this clip; export only recordings you may "
                    + "read yourself (ask an administrator, or the owner of the archive, for access)")
        }
        if (request.proof || request.credentials) && !plan.openSegments.isEmpty {
            throw SessionError(
                .badParam,
                "the clip reaches into the segment being written, which is in no chain yet; export up to its start "
                    + "(`recctl archive list` shows it), or without \(request.proof ? "--proof" : "--credentials")")
        }
        if request.credentials && credentials == nil {
            throw SessionError(
                .resourceNotAvailable,
                "recd has no certificate for its archive key (its log says why at start); export without --credentials")
        }
        let comments = ClipExporter.comments(plan, app: request.app, stream: stream, archiveDirectory: directory)
        // What recd signs (the proof's hash, the credentials' data hash) must be what recd wrote:
        // the caller holds `output` and could rewrite it between recd's write and recd's hash. A
        // signed clip is written into a file of recd's own first (unlinked at once, so no one
        // else can open it), signed there, and only then copied into `output`.
        let signing = request.proof || request.credentials
        let written = signing ? try privateClipFile(for: request.file, plan: plan) : output
        do {
            let copied = try ClipExporter.write(
                plan, format: format, to: written, name: request.file, comments: comments,
                isCancelled: { job.isCancelled })
            // Frames that did not verify were decoded instead: the clip is right, the segment
            // may be damaged or odd (`recctl archive verify` says which).
            for reason in copied?.fallbacks ?? [] {
                Log.warning("export \(request.file): decoded, not copied: \(reason)")
            }
        } catch {
            throw error.sessionError
        }
        // The Content Credentials first: the proof then hashes the clip as it leaves, manifest included.
        var sidecar: String?
        if request.credentials, let credentials {
            let facts = ClipCredentials.ClipFacts(
                name: request.file, app: request.app, stream: stream, plan: plan,
                sources: comments.filter { $0.0 == "SOURCE_SEGMENT" }.map(\.1), archiveDirectory: directory)
            switch format {
            case .wav: try credentials.embed(in: written, facts: facts)
            case .flac: sidecar = Data(try credentials.sidecar(for: written, facts: facts)).base64EncodedString()
            }
        }
        // The proof: the clip's bytes as written, the chain entries they were cut from, signed.
        var proof: String?
        if request.proof {
            guard let chains else {
                throw SessionError(
                    .resourceNotAvailable,
                    "recd has no archive key (its log says why at start); export without --proof")
            }
            do throws(ProofError) {
                proof = try ClipProof.make(
                    clip: SHA256Digest.of(file: written), clipName: request.file,
                    sources: comments.filter { $0.0 == "SOURCE_SEGMENT" }.map(\.1), archiveDirectory: directory,
                    key: chains.key)
            } catch {
                throw SessionError(.resourceNotAvailable, error.message)
            }
        }
        if signing { try copy(written, into: output, name: request.file) }
        return ExportInfo(
            file: request.file, format: format.rawValue, app: request.app, stream: stream, start: from.iso8601,
            end: to.iso8601, frames: plan.frames, sampleRate: plan.sampleRate, channels: plan.channels,
            gaps: SegmentGap.commentValue(plan.gaps), segments: plan.segments.map(shownPath),
            requestedEnd: to < asked ? asked.iso8601 : nil, proof: proof, credentials: sidecar)
    }
}

extension ArchiveMaintenance {
    /// Room an export's private copy must leave on the archive's disk: the recorders write there.
    static let privateCopyFloor: (percent: Double, bytes: Int64) = (10, 1 << 30)

    /// A new file of recd's own beside the archive (0600), already unlinked: only recd holds it.
    /// Refused when `plan`'s clip (at most 4 bytes a sample, and a MiB) would leave the archive's
    /// disk with less than `privateCopyFloor` free: a signed export of days must never fill the
    /// disk the recordings go to.
    func privateClipFile(for name: String, plan: ClipPlan) throws -> OwnedFile {
        let (frames, channels) = (Int64(clamping: plan.frames), Int64(clamping: plan.channels))
        let (product, overflow) = frames.multipliedReportingOverflow(by: channels &* 4)
        let needed = overflow ? Int64.max : product &+ (1 << 20)
        if let space = FileSystem.space(at: directory) {
            let floor = max(
                Int64(Double(space.totalBytes) * Self.privateCopyFloor.percent / 100), Self.privateCopyFloor.bytes)
            guard needed <= space.availableBytes - floor else {
                throw SessionError(
                    .resourceNotAvailable,
                    "a signed clip (--proof, --credentials) is written beside the archive first, and \(name) "
                        + "(up to \(needed >> 20) MiB) would leave the archive's disk under the \(floor >> 20) MiB "
                        + "kept free for the recordings (\(space.availableBytes >> 20) MiB free now); export a shorter "
                        + "range, or without --proof and --credentials")
            }
        }
        let path = directory + "/.export-" + SecureRandom.hex(bytes: 8)
        do {
            let file = try OwnedFile(path, .createExclusive(permissions: 0o600))
            try FileSystem.removeIfPresent(path)
            return file
        } catch {
            throw SessionError(
                .resourceNotAvailable, "recd cannot write its copy of \(name) beside the archive: \(error)")
        }
    }

    /// `clip`'s bytes into the caller's `output`, from the start, in 1 MiB pieces.
    func copy(_ clip: OwnedFile, into output: OwnedFile, name: String) throws {
        do {
            var offset: Int64 = 0
            while true {
                let piece = try clip.read(count: 1 << 20, at: offset)
                if piece.isEmpty { break }
                try output.writeAll(piece, at: offset)
                offset += Int64(piece.count)
            }
        } catch {
            throw SessionError(.resourceNotAvailable, "cannot write \(name): \(error)")
        }
    }
}

extension ArchiveService {
    /// Longest clip one request may ask for.
    static let longestExportSeconds: Int64 = 7 * 86_400

    /// `archive.export`: the arguments and the passed descriptor are checked here; the clip is
    /// written on the worker; `reply` follows on the control thread, never when `client` has
    /// gone (a running export then stops at its next piece).
    func export(
        _ request: ExportRequest, output descriptor: Int32?, uid: UInt32, groups: Set<UInt32>, administrator: Bool,
        for client: ClientID, reply: @escaping Reply
    ) throws {
        guard let descriptor else {
            throw SessionError(
                .badParam,
                "recd does not open files named in requests; open \(request.file) yourself (for writing) and pass "
                    + "the descriptor with the request line (SCM_RIGHTS), as `recctl archive export -o FILE` does")
        }
        // Owned from here: closed when the job is done with it, or now on a refusal.
        let output = OwnedFile(adopting: descriptor, path: request.file)
        _ = try RequestGate.checkedAppName(request.app)
        guard let format = ClipFormat(rawValue: request.format) else {
            throw SessionError(.badParam, "format \(request.format) is not one recd writes; use flac or wav")
        }
        // To the microsecond, as START_TIME and the reply's times are.
        let now = UTCTime(microsecondsSinceEpoch: UTCTime.now().microsecondsSinceEpoch)
        guard let from = Self.exportTime(request.from, now: now) else { throw Self.badTime("from", request.from) }
        guard let to = Self.exportTime(request.to, now: now) else { throw Self.badTime("to", request.to) }
        guard to > from else {
            throw SessionError(
                .badParam, "the clip must end after it begins: to \(request.to) is not after from \(request.from)")
        }
        guard to.nanosecondsSinceEpoch - from.nanosecondsSinceEpoch <= Self.longestExportSeconds * 1_000_000_000 else {
            throw SessionError(.badParam, "a clip is at most 7 days long; export longer stretches in parts")
        }
        let status: FileStatus
        do {
            status = try output.status()
            let mode = try Descriptor.accessMode(output.descriptor, path: request.file)
            guard mode == .writeOnly || mode == .readWrite else {
                throw SessionError(.badParam, "the descriptor passed for \(request.file) is not open for writing")
            }
        } catch let error as SessionError {
            throw error
        } catch {
            throw SessionError(.badParam, "the descriptor passed for \(request.file) is unusable: \(error)")
        }
        if request.proof || request.credentials {
            let mode = try? Descriptor.accessMode(output.descriptor, path: request.file)
            guard status.kind == .regular, mode == .readWrite else {
                throw SessionError(
                    .badParam,
                    "a clip's proof and its Content Credentials hash the clip as written: pass \(request.file) as a "
                        + "regular file open for reading and writing (`recctl archive export --proof -o FILE` does)")
            }
        }
        switch status.kind {
        case .regular:
            guard status.size == 0 else {
                throw SessionError(.badParam, "\(request.file) is not empty; export into a new file")
            }
        case .other where format == .flac, .socket where format == .flac:
            // A pipe (`-o -` into another program): FLAC streams; STREAMINFO then lacks the total.
            break
        default:
            throw SessionError(
                .badParam,
                format == .wav
                    ? "a WAV clip needs a regular file (its header is completed at the end); write FLAC to a pipe"
                    : "\(request.file) is neither a regular file nor a pipe")
        }
        let maintenance = maintenance
        let handedOver = HandedOverFile(output)
        // What the app's recorders have written, now, on the control thread: the job reads no
        // further (a stopping recorder still writes its last frames, so it counts too).
        let live = recorders.live.filter { $0.spec.app == request.app }.map(\.recorder.snapshot)
        let chains = chains
        try worker.submitRequest(
            for: client, of: uid, administrator: administrator,
            { job in
                Result {
                    try maintenance.export(
                        request, from: from, to: to, format: format, output: handedOver.file, uid: uid, groups: groups,
                        live: live, chains: chains, job: job
                    ).fields
                }.mapError(RequestGate.replyError)
            }, completion: reply)
    }

    private static func badTime(_ key: String, _ text: String) -> SessionError {
        SessionError(
            .badParam,
            "\(key) \"\(text)\" is not an ISO 8601 time with a zone nor now[-N(s|m|h)]; write e.g. "
                + "2026-12-01T10:02:00Z, 2026-12-01T11:02:00.5+01:00, now-30s or now")
    }

    /// An ISO 8601 time with a zone, or `now`, `now-30s`, `now-1.5m`, `now-2h` (recd's clock
    /// when the request came). The offset is bounded where it enters: at most the longest clip
    /// back from now (a later check refuses longer clips anyway).
    static func exportTime(_ text: String, now: UTCTime) -> UTCTime? {
        guard text.hasPrefix("now") else { return UTCTime(iso8601WithZone: text) }
        let rest = text.dropFirst(3)
        if rest.isEmpty { return now }
        let scales: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
        guard rest.first == "-", let unit = rest.last, let scale = scales[unit],
            let amount = Double(rest.dropFirst().dropLast()), amount >= 0, amount.isFinite
        else { return nil }
        let seconds = amount * scale
        guard seconds <= Double(longestExportSeconds) else { return nil }
        return UTCTime(microsecondsSinceEpoch: now.microsecondsSinceEpoch - Int64((seconds * 1e6).rounded()))
    }
}

/// The export's output on its way to the worker: the control thread checks it and lets go of
/// it before the job runs, the job is then its only user (hence `@unchecked Sendable`). The
/// descriptor closes when the job (or, for a job never run, the queue) lets go.
private final class HandedOverFile: @unchecked Sendable {
    let file: OwnedFile
    init(_ file: OwnedFile) { self.file = file }
}
