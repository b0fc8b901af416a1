// The control thread's part of the status page: the snapshot behind `/api/status` (the meters
// the page streams are MeterService's).
// Control thread only, like the router.
import ControlProtocol

extension ControlRouter {
    /// `/api/status`: `status`'s reply (JACK, sessions, recorders with their silence, the
    /// archive) and `routes`'s (the ports), each under its own key. Built on the control thread
    /// and handed to the HTTP thread as a value.
    func statusPageSnapshot() -> JSONValue {
        ["status": statusInfo().json, "routes": .object(routesFields())]
    }
}
