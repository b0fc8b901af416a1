// The archive browser's clips: `/api/export` (a download, with `proof=yes` its proof kept for
// `/api/export/proof`, with `credentials=yes` a WAV with its C2PA Content Credentials), `/api/listen` (a FLAC clip to play from any point, the segment being
// written included: the exporter reads it up to its last complete frame, as `recctl archive
// export --to now` does), `/api/export/progress` and `/api/loudness`. See BrowseClips.swift
// for where the clip is written and the bounds.
//
// Threads: the listener's connection threads.
import Archive
import Codec
import ControlProtocol
import Foundation
import HTTPServer
import Platform
import SessionPolicy
import SystemSupport

extension BrowseService {
    /// A finished clip: its file (open, already unlinked) and the export's reply.
    struct Clip {
        var file: OwnedFile
        var size: Int64
        var reply: [(String, JSONValue)]
        var job: String
        var fileName: String
    }

    /// Makes the clip of `range` as `format` for `caller` with the exporter.
    func makeClip(
        _ request: HTTPRequest, _ range: Range, format: String, proof: Bool, credentials: Bool = false,
        caller: HTTPCaller, records: [SegmentRecord]
    ) -> Result<Clip, HTTPResponse> {
        var job = request.query["job"] ?? BrowseClips.newJobID()
        if !BrowseClips.validJob(job) {
            return .failure(
                Self.badRequest("job=\"\(String(job.prefix(80)))\" is no job id; use 1 to 40 letters, digits, - or _"))
        }
        if request.query["job"] == nil { job = BrowseClips.newJobID() }
        let stamp = range.from.iso8601.filter { $0.isNumber || $0 == "T" }.prefix(15)
        let fileName = "\(range.feed.replacingOccurrences(of: "/", with: "_"))_\(stamp)Z.\(format)"
        if let refused = clips.begin(
            job: job, owner: caller.owner, fileName: fileName,
            expectedBytes: Self.expectedBytes(records, range, format: format))
        {
            return .failure(refused)
        }
        let made = writeClip(
            range, format: format, proof: proof, credentials: credentials, caller: caller, job: job, fileName: fileName)
        switch made {
        case .success(let clip):
            clips.end(
                job: job, owner: caller.owner, state: "done", proof: clip.reply.first { $0.0 == "proof" }?.1.stringValue
            )
        case .failure(let refusal):
            var message = ""
            if case .bytes(let body) = refusal.body { message = String(decoding: body.prefix(2000), as: UTF8.self) }
            clips.end(job: job, owner: caller.owner, state: "failed", proof: nil, message: message)
        }
        return made
    }

    /// The clip itself, into the job's file; the job's slot is `makeClip`'s.
    private func writeClip(
        _ range: Range, format: String, proof: Bool, credentials: Bool, caller: HTTPCaller, job: String,
        fileName: String
    ) -> Result<Clip, HTTPResponse> {
        guard let path = clips.job(job, owner: caller.owner)?.path else {
            return .failure(.error(500, "Internal Server Error: the job vanished; retry"))
        }
        let output: OwnedFile
        do throws(SystemError) {
            output = try OwnedFile(path, .createExclusive(permissions: 0o600))
        } catch {
            return .failure(.error(503, "Service Unavailable: recd cannot write its clip (\(error.message)); retry"))
        }
        defer { try? FileSystem.removeIfPresent(path) }
        let exportRequest = ExportRequest(
            app: range.app, stream: range.stream, from: range.from.iso8601, to: range.to.iso8601, format: format,
            file: fileName, proof: proof, credentials: credentials)
        let descriptor = output.relinquish()
        let coordinator = coordinator
        let (uid, groups) = (caller.uid, caller.groups)
        // A web account has no uid: the feed was granted to it (checked for every segment of
        // the range before), so the exporter reads with recd's own rights for this range.
        let granted = caller.web != nil
        let answer = control.askLater(timeout: BrowseClips.longestWaitSeconds) {
            (finish: @escaping @Sendable (Result<[(String, JSONValue)], SessionError>) -> Void) in
            do {
                try coordinator.archive.export(
                    exportRequest, output: descriptor, uid: uid, groups: groups, administrator: granted,
                    for: BrowseClips.client, reply: finish)
            } catch let error as SessionError {
                finish(.failure(error))
            } catch {
                finish(.failure(SessionError(.badParam, "\(error)")))
            }
        }
        guard let answer else { return .failure(HTTPEndpoints.busy) }
        let reply: [(String, JSONValue)]
        switch answer {
        case .success(let fields): reply = fields
        case .failure(let error): return .failure(Self.refusal(error))
        }
        let served: OwnedFile
        let size: Int64
        do throws(SystemError) {
            served = try OwnedFile(path, .readOnlyNoFollow)
            let status = try served.status()
            guard status.kind == .regular else { throw SystemError(.invalidArgument, operation: "open", path: path) }
            size = status.size
        } catch {
            return .failure(.error(503, "Service Unavailable: recd cannot read back its clip (\(error.message))"))
        }
        return .success(Clip(file: served, size: size, reply: reply, job: job, fileName: fileName))
    }

    /// The exporter's refusal in HTTP's words.
    static func refusal(_ error: SessionError) -> HTTPResponse {
        // The exporter words its advice for recctl; here the caller wrote a query.
        let message = error.detail.replacingOccurrences(of: "or without --proof", with: "or with proof=no")
            .replacingOccurrences(of: "choose one with --stream", with: "name it in feed=APP/STREAM")
        switch error.code {
        case .isBusy: return .error(429, "Too Many Requests: \(message)", headers: [("Retry-After", "2")])
        case .resourceNotAvailable: return .error(503, "Service Unavailable: \(message)")
        default:
            if message.contains("may not read") { return .error(403, "Forbidden: \(message)") }
            if message.hasPrefix("no recording") || message.contains("has written nothing") {
                return .error(404, "Not Found: \(message)")
            }
            return .error(400, "Bad Request: \(message)")
        }
    }

    /// What the clip will weigh, from the index (the segment being written is not in it, so the
    /// estimate can be low: progress stops at 99 % until the clip is done).
    static func expectedBytes(_ records: [SegmentRecord], _ range: Range, format: String) -> Int64 {
        // WAV: every frame of the range is written, gaps as silence, at the recording's format.
        if format == "wav", let first = records.first {
            let seconds = Double(range.to.nanosecondsSinceEpoch - range.from.nanosecondsSinceEpoch) / 1e9
            let frameBytes = first.channels * ((first.bitsPerSample + 7) / 8)
            return 44 + Int64(seconds * Double(first.sampleRate)) * Int64(frameBytes)
        }
        var total = 0.0
        for record in records {
            let start = max(record.startTime.nanosecondsSinceEpoch, range.from.nanosecondsSinceEpoch)
            let end = min(record.endTime.nanosecondsSinceEpoch, range.to.nanosecondsSinceEpoch)
            guard end > start, record.frames > 0, record.sampleRate > 0 else { continue }
            let seconds = Double(end - start) / 1e9
            if format == "wav" {
                total += seconds * Double(record.sampleRate * record.channels * ((record.bitsPerSample + 7) / 8))
            } else {
                let whole = Double(record.frames) / Double(record.sampleRate)
                total += Double(record.bytes) * min(1, seconds / whole)
            }
        }
        return Int64(total)
    }

    /// `/api/export?feed=&from=&to=&format=flac|wav&proof=yes&job=ID` and `/api/listen?feed=&from=[&to=]`.
    func export(_ request: HTTPRequest, listening: Bool) -> HTTPResponse {
        let range: Range
        switch Self.parseRange(
            request, longest: listening ? BrowseClips.listenSeconds : BrowseClips.longestClipSeconds,
            defaultLength: listening ? BrowseClips.listenSeconds : nil)
        {
        case .success(let value): range = value
        case .failure(let answer): return answer
        }
        let format = listening ? "flac" : (request.query["format"] ?? "flac")
        guard format == "flac" || format == "wav" else {
            return Self.badRequest(
                "format=\"\(String(format.prefix(20)))\" is not one recd writes; use format=flac or format=wav")
        }
        let proof: Bool
        switch request.query["proof"] ?? "no" {
        case "yes", "1", "true": proof = !listening
        case "no", "0", "false": proof = false
        default: return Self.badRequest("proof= takes yes or no")
        }
        // Content Credentials (C2PA) go into a WAV clip's C2PA chunk, as `recctl archive export --credentials`.
        let credentials: Bool
        switch request.query["credentials"] ?? "no" {
        case "yes", "1", "true":
            guard format == "wav", !listening else {
                return Self.badRequest("credentials=yes needs format=wav: Content Credentials go into a WAV clip")
            }
            credentials = true
        case "no", "0", "false": credentials = false
        default: return Self.badRequest("credentials= takes yes or no")
        }
        let (caller, records): (HTTPCaller, [SegmentRecord])
        switch authorize(request, range, action: listening ? "listen" : "export") {
        case .success(let found): (caller, records) = found
        case .failure(let answer): return answer
        }
        let clip: Clip
        switch makeClip(
            request, range, format: format, proof: proof, credentials: credentials, caller: caller, records: records)
        {
        case .success(let made): clip = made
        case .failure(let answer): return answer
        }
        Log.info(
            "archive browser: \(caller.shown) \(listening ? "listens to" : "exports") \(range.feed) "
                + "\(range.from.iso8601) to \(range.to.iso8601) (\(clip.size) bytes)")
        var headers: [(String, String)] = [("Cache-Control", "no-store"), ("X-Recd-Job", clip.job)]
        for key in ["start", "end", "frames", "sampleRate", "channels"] {
            if let value = clip.reply.first(where: { $0.0 == key })?.1 {
                headers.append(
                    (
                        "X-Recd-" + key.prefix(1).uppercased() + key.dropFirst(),
                        value.jsonText
                            .replacingOccurrences(of: "\"", with: "")
                    ))
            }
        }
        if !listening { headers.append(("Content-Disposition", "attachment; filename=\"\(clip.fileName)\"")) }
        let descriptor = clip.file.relinquish()
        return HTTPResponse(
            contentType: format == "wav" ? "audio/wav" : "audio/flac", headers: headers,
            body: .file(descriptor: descriptor, size: UInt64(clip.size)))
    }

    /// The caller (403 when none): the key to its jobs.
    private func callerOwner(_ request: HTTPRequest) -> Result<String, HTTPResponse> {
        switch callers.caller(of: request) {
        case .caller(let found): return .success(found.owner)
        case .refused(let answer): return .failure(answer)
        }
    }

    /// `/api/export/progress?job=ID`: the caller's own jobs only.
    func progress(_ request: HTTPRequest) -> HTTPResponse {
        guard let job = request.query["job"], BrowseClips.validJob(job) else {
            return Self.badRequest("give job=ID, the id the export was started with")
        }
        let owner: String
        switch callerOwner(request) {
        case .success(let value): owner = value
        case .failure(let answer): return answer
        }
        guard let progress = clips.progress(job, owner: owner) else {
            return .error(404, "Not Found: no export job \(job) of yours (finished ones are kept 15 min)")
        }
        return HTTPEndpoints.json(progress)
    }

    /// `/api/export/proof?job=ID`: the proof `recctl archive export --proof` writes as FILE.proof.
    func proof(_ request: HTTPRequest) -> HTTPResponse {
        guard let job = request.query["job"], BrowseClips.validJob(job) else {
            return Self.badRequest("give job=ID, the id the export was started with")
        }
        let owner: String
        switch callerOwner(request) {
        case .success(let value): owner = value
        case .failure(let answer): return answer
        }
        guard let found = clips.job(job, owner: owner), let proof = found.proof else {
            return .error(
                404,
                "Not Found: no proof for job \(job) of yours: export with proof=yes, and fetch it within 15 min")
        }
        return HTTPResponse(
            contentType: "text/plain; charset=utf-8",
            headers: [
                ("Cache-Control", "no-store"),
                ("Content-Disposition", "attachment; filename=\"\(found.fileName).proof\""),
            ], body: .bytes(Array(proof.utf8)))
    }
}
