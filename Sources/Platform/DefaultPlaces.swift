// Where recd keeps its control socket and its state when its config does not say: one rule for
// recd (its config's defaults) and for its clients (recctl, the AudioSession library), so that
// a client finds the recd its user started without being told.
//
// A user's recd is one started by a user who is not root in a login session: XDG_RUNTIME_DIR
// is set (pam_systemd sets it at login; the XDG Base Directory spec says a relative value is
// invalid and ignored). It keeps everything per user, so that `recd` in a terminal just works
// beside the system's recd. Any other recd — root, or a system service's own user such as
// recd.service's `recd`, which has no runtime directory — keeps the system's places.
//
// Pure: the caller passes the environment and whether it is root. Any thread.

/// recd's default places: per user, or the system's.
public enum DefaultPlaces {
    public static let systemSocket = "/run/recd/control.sock"
    public static let systemStateDir = "/var/lib/recd"

    /// Whether a process with `environment`, root or not, keeps per-user places.
    public static func isPerUser(environment: [String: String], isRoot: Bool) -> Bool {
        !isRoot && runtimeDirectory(environment) != nil
    }

    /// `$XDG_RUNTIME_DIR/recd/control.sock` for a user's recd, else /run/recd/control.sock.
    public static func socket(environment: [String: String], isRoot: Bool) -> String {
        guard !isRoot, let runtime = runtimeDirectory(environment) else { return systemSocket }
        return join(runtime, "recd/control.sock")
    }

    /// For a user's recd `$XDG_STATE_HOME/recd`, else `$HOME/.local/state/recd` (else, with
    /// neither, the system's); /var/lib/recd for any other.
    public static func stateDir(environment: [String: String], isRoot: Bool) -> String {
        guard isPerUser(environment: environment, isRoot: isRoot) else { return systemStateDir }
        if let state = absolute(environment["XDG_STATE_HOME"]) { return join(state, "recd") }
        if let home = absolute(environment["HOME"]) { return join(home, ".local/state/recd") }
        return systemStateDir
    }

    /// Where a client looks, in order: its user's recd, then the system's (root: the system's).
    public static func socketCandidates(environment: [String: String], isRoot: Bool) -> [String] {
        let own = socket(environment: environment, isRoot: isRoot)
        return own == systemSocket ? [systemSocket] : [own, systemSocket]
    }

    private static func runtimeDirectory(_ environment: [String: String]) -> String? {
        absolute(environment["XDG_RUNTIME_DIR"])
    }

    private static func absolute(_ value: String?) -> String? {
        guard let value, value.hasPrefix("/") else { return nil }
        return value
    }

    private static func join(_ directory: String, _ rest: String) -> String {
        directory.hasSuffix("/") ? directory + rest : directory + "/" + rest
    }
}
