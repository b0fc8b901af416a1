// The checks every request passes before it runs, in the protocol's fixed order after its
// decoding (docs/protocol.md): passed descriptors, then who the peer is — an administrator for
// administrators-only ops, the session's owner or an administrator for a change to a session.
// Names clients give (apps) are checked here too. No state but the administrators' group: the
// session's owner is asked of the caller (the router, which owns the store).
import ControlProtocol
import Platform
import SessionPolicy
import SystemSupport

struct RequestGate {
    /// `[daemon] admin_group` by name, for messages, and its gid (nil: no such group or none).
    let adminGroup: String?
    let adminGID: UInt32?

    init(adminGroup: String?) {
        self.adminGroup = adminGroup
        adminGID = adminGroup.flatMap { UserDatabase.groupID(named: $0) }
    }

    /// Root, or a member of the administrators' group.
    func isAdministrator(_ peer: PeerCredentials) -> Bool {
        if peer.uid == 0 { return true }
        guard let gid = adminGID else { return false }
        return peer.gid == gid || peer.groups.contains(gid)
    }

    private var adminHint: String {
        adminGroup.map { "run it as root or as a member of group \($0)" }
            ?? "run it as root (no admin_group is configured)"
    }

    /// Administrators-only commands need one; a change to a session needs its owner
    /// (`owner(app)`: the session's owner uid, nil for no such session) or an administrator;
    /// everyone may read.
    func authorize(_ command: Command, peer: PeerCredentials, owner: (String) -> UInt32?) throws {
        if command.op.requiresAdministrator && !isAdministrator(peer) {
            throw SessionError(.notAdministrator, "\(command.op.rawValue) needs an administrator; \(adminHint)")
        }
        if command.changesSession, let app = command.app {
            try authorizeChange(of: app, ownedBy: owner(app), by: peer)
        }
    }

    /// Owners and administrators may change a session (nil owner: it does not exist yet, the
    /// command itself says what becomes of that).
    func authorizeChange(of app: String, ownedBy owner: UInt32?, by peer: PeerCredentials) throws {
        guard let owner, owner != peer.uid, !isAdministrator(peer) else { return }
        throw SessionError(
            .notSessionOwner,
            "session \(app) belongs to uid \(owner); only its owner or an administrator may change it "
                + "(\(adminHint))"
        )
    }

    /// Descriptors passed with a request (SCM_RIGHTS) are checked after its op: only `play`
    /// and `archive.export` take one, the open file.
    static func checkPassed(_ descriptors: borrowing PassedDescriptors, for op: Op) throws {
        if descriptors.refused {
            throw SessionError(
                .badParam, "too many descriptors passed with one request line; pass one, the open file, with `play`")
        }
        let allowed = op == .play || op == .archiveExport ? 1 : 0
        guard descriptors.count > allowed else { return }
        throw SessionError(
            .badParam,
            allowed == 1
                ? "\(op.rawValue) takes one descriptor (the open file), not \(descriptors.count)"
                : "\(op.rawValue) takes no descriptor; only play (the file to play) and archive.export (the output) do")
    }

    /// What a failed request replies: its SessionError, or any other error as unspecified.
    static func replyError(_ error: any Error) -> SessionError {
        (error as? SessionError) ?? SessionError(.unspecified, "\(error)")
    }

    /// An app name a client gives: 1-64 letters, digits, '.', '_' or '-', not starting with '.'.
    static func checkedAppName(_ app: String) throws -> String {
        let allowed = app.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F
                || c == 0x2D
        }
        guard (1...64).contains(app.utf8.count), allowed, app.first != "." else {
            throw SessionError(
                .badParam,
                "app name \"\(app)\" is not valid; use 1-64 letters, digits, '.', '_' or '-', not starting with '.'")
        }
        return app
    }

    /// A paged request's limit (`limit` nil: `max`), or badParam when the offset is negative or
    /// the limit outside 1...max: one rule for `session.list` and `archive.list`.
    static func checkedPageLimit(_ op: Op, offset: Int, limit: Int?, max: Int) throws -> Int {
        let limit = limit ?? max
        guard offset >= 0, (1...max).contains(limit) else {
            throw SessionError(
                .badParam,
                "\(op.rawValue) takes an offset of 0 or more and a limit of 1...\(max) "
                    + "(not \(offset) and \(limit)); page on with the reply's \"next\"")
        }
        return limit
    }
}
