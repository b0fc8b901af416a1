// Sessions expire: one that was never declared in the config and whose application recd has
// not seen for `[daemon] session_expiry_days` (default 7) is removed from the store and from
// state.json, with a log line — test programs' sessions do not stay for ever. The rule (which
// sessions may go) is the store's (`SessionStore.expired`); what counts as the application
// being seen is here: a request naming its session (`noteUse`, from `run`), and, once a second,
// the session active or interrupted, its players, recorders (running, waiting or armed),
// attachments, monitoring buses, or a connection watching it.
//
// Threads: the control thread.
import Archive
import Platform
import SessionPolicy
import SystemSupport

extension SessionCoordinator {
    /// The wall clock in seconds since 1970 (state.json keeps `lastUsed` across restarts).
    static func wallSeconds() -> Double { Double(SystemClock.realtimeNanoseconds()) / 1e9 }

    /// A request named `app`: its application is there.
    func noteUse(of app: String?) {
        guard let app else { return }
        store.noteUse(of: app, at: Self.wallSeconds())
    }

    /// The front end's once-a-second check. `watched`: apps a connection watches by name.
    func expireSessions(watched: Set<String>) {
        let now = Self.wallSeconds()
        var seen = watched.union(attachments.apps).union(players.all.map(\.app))
        seen.formUnion(recorders.recorders.map(\.spec.app))
        seen.formUnion(recovery.waitingInfos.map(\.app))
        seen.formUnion(triggers.armedApps)
        if let owner = monitoring.owner { seen.insert(owner) }
        seen.formUnion(store.sessions.values.filter { $0.state != .inactive }.map(\.app))
        for app in seen { store.noteUse(of: app, at: now) }
        let days = config.daemon.sessionExpiryDays
        for app in store.expired(at: now, idle: days * 86_400) {
            let since = store.lastUsed[app].map { UTCTime(nanosecondsSinceEpoch: Int64($0 * 1e9)).iso8601 } ?? "?"
            Log.notice(
                "session \(app) expired: its application has not been seen since \(since), for at least "
                    + "\(Self.durationText(days: days)) ([daemon] session_expiry_days); removed with its saved state")
            do {
                apply(try store.delete(app: app))
            } catch {
                Log.error("session \(app) could not expire: \(error)")
            }
        }
        // Persisted uses are at most an hour old, whatever else changes: a restart does not
        // expire a session used since the last write.
        if now - lastUseSaved >= 3600, store.lastUsed.values.contains(where: { $0 > lastUseSaved }) {
            save()
        }
    }

    /// `days` as a person writes it: "3.5 s", "12 min", "6 h", "1 day", "7 days".
    static func durationText(days: Double) -> String {
        func number(_ value: Double) -> String {
            let tenths = (value * 10).rounded()
            return tenths.truncatingRemainder(dividingBy: 10) == 0 ? "\(Int(tenths / 10))" : "\(tenths / 10)"
        }
        let seconds = days * 86_400
        if seconds < 60 { return number(seconds) + " s" }
        if seconds < 3600 { return number(seconds / 60) + " min" }
        if seconds < 86_400 { return number(seconds / 3600) + " h" }
        return number(days) + (number(days) == "1" ? " day" : " days")
    }
}
