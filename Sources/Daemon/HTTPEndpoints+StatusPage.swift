// The status page's routes: `GET /` (the page), `/api/status`,
// `/api/segments`, `/events` (the live meters) and `/archive/<path>` (finished segments, with
// Range requests), added to the listener's route table by `HTTPEndpoints.routes()`.
//
// Threads: the handlers run on the listener's connection threads. `/api/status` is built on
// the control thread through `ControlThreadQuery` (503 if it does not answer within 1 s);
// `/events` streams are fed by the control thread's tick (`MeterFeed`); the archive routes
// read the page's own index connection (`StatusPageArchive`) and never reach the control thread.
import Archive
import ControlProtocol
import HTTPServer
import SystemSupport

extension HTTPEndpoints {
    /// Adds the page's routes. Called once, while the listener is made.
    func addStatusPage(to routes: inout HTTPServer.Routes) {
        let coordinator = coordinator
        let control = control
        let archive = StatusPageArchive(directory: coordinator.config.archive.dir)
        let meters = coordinator.meters.pageMeters
        routes.add("/") { _ in
            HTTPResponse(
                contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")],
                body: .bytes(Array(StatusPageAssets.html.utf8)))
        }
        routes.add("/api/status") { _ in
            guard let snapshot = control.ask(timeout: Self.answerTimeout, { coordinator.statusPageSnapshot() }) else {
                return Self.busy
            }
            return Self.json(snapshot)
        }
        routes.add("/api/segments") { _ in
            do throws(ArchiveError) {
                return Self.json(try archive.recentSegments())
            } catch {
                return .error(503, "Service Unavailable: the archive index cannot be read (\(error.message))")
            }
        }
        routes.add("/events") { _ in
            guard let stream = meters.subscribe() else {
                return .error(
                    503, "Service Unavailable: \(MeterFeed.maxListeners) meter streams are open; close a status page",
                    headers: [("Retry-After", "5")])
            }
            return .events(stream)
        }
        let callers = callers
        routes.addPrefix("/archive/") { request in
            // Recorded audio: only to a caller who may read the segment's file (HTTPCaller.swift).
            // Who asks, before anything about the archive is told.
            if case .refused(let answer) = callers.caller(of: request) { return answer }
            let relative = String(request.path.dropFirst("/archive/".count))
            guard let segment = archive.openSegment(relative) else {
                // Decided in docs/status-page.md: the segment being written is not served here.
                return .error(
                    404,
                    relative.hasSuffix(".partial")
                        ? "Not Found: \(relative) is being written and the page plays finished segments only; "
                            + "`recctl archive export --app APP --from now-30s --to now -o clip.wav` clips it"
                        : "Not Found: no finished segment \(relative) in the archive; the page lists them")
            }
            let feed = "\(segment.record.app)/\(segment.record.stream)"
            if case .refused(let answer) = callers.audio(
                request, feed: feed, path: segment.path, action: "listen", naming: relative)
            {
                return answer
            }
            let descriptor = segment.file.relinquish()
            return HTTPResponse(
                contentType: "audio/flac", headers: [("Cache-Control", "no-cache")],
                body: .file(descriptor: descriptor, size: UInt64(segment.size)))
        }
    }

    static func json(_ value: JSONValue) -> HTTPResponse {
        HTTPResponse(
            contentType: "application/json", headers: [("Cache-Control", "no-store")],
            body: .bytes(Array(value.jsonText.utf8)))
    }
}
