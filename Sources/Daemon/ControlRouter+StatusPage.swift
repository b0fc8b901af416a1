// The control thread's part of the status page (issue 16, item 3): the snapshot behind
// `/api/status`, and the meters published to `MeterFeed` from the tick while a browser listens.
// Control thread only, like the router.
import ControlProtocol

extension ControlRouter {
    /// `/api/status`: `status`'s reply (JACK, sessions, recorders with their silence, the
    /// archive) and `routes`'s (the ports), each under its own key. Built on the control thread
    /// and handed to the HTTP thread as a value.
    func statusPageSnapshot() -> JSONValue {
        ["status": statusInfo().json, "routes": .object(routesFields())]
    }

    /// Publishes the tick's meters (every channel, and the recordings' loudness) to the page's
    /// feed; renders nothing while no browser listens.
    func publishPageMeters() {
        guard pageMeters.isWanted, let meters = try? metersInfo(app: nil) else { return }
        pageMeters.publish(meters.json)
    }
}
