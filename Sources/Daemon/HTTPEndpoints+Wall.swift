// The wall screen's routes: `GET /wall` (the page, WallPageAssets.swift) and `GET /api/health`,
// the box's health state (docs/http.md) — the same value `/api/status`'s `health`, `recctl
// status`'s first line and `/metrics`' `recd_health` show. Read-only, no recorded audio: any
// caller the listener lets in may read them, as `/api/status`.
//
// Threads: the handlers run on a listener's connection thread; the health is built on the
// control thread through `ControlThreadQuery` (503 if it does not answer within 1 s).
import ControlProtocol
import HTTPServer

extension HTTPEndpoints {
    /// Adds `/wall` and `/api/health`. Called once, while the listener is made.
    func addWall(to routes: inout HTTPServer.Routes) {
        let coordinator = coordinator
        let control = control
        routes.add("/wall") { _ in
            HTTPResponse(
                contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")],
                body: .bytes(Array(WallPageAssets.html.utf8)))
        }
        routes.add("/api/health") { _ in
            guard let health = control.ask(timeout: Self.answerTimeout, { coordinator.statusInfo().health?.json })
            else {
                return Self.busy
            }
            return Self.json(health ?? .null)
        }
    }
}
