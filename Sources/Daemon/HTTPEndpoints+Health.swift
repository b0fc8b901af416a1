// The health's route: `GET /api/health`, the box's health state (docs/http.md), the same value
// `/api/status`'s `health`, `recctl status`'s first line and `/metrics`' `recd_health` show.
//
// Threads: the handler runs on a listener's connection thread; the value is built on the
// control thread through `ControlThreadQuery` (503 if it does not answer within 1 s).
import ControlProtocol
import HTTPServer

extension HTTPEndpoints {
    /// Adds `/api/health`. Called once, while the listener is made.
    func addHealth(to routes: inout HTTPServer.Routes) {
        let coordinator = coordinator
        let control = control
        routes.add("/api/health") { _ in
            guard let health = control.ask(timeout: Self.answerTimeout, { coordinator.statusInfo().health?.json })
            else {
                return Self.busy
            }
            return Self.json(health ?? .null)
        }
    }
}
