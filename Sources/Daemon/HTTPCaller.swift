// Who asks over HTTP, for the routes that serve recorded audio (`/archive/`): recd acts with its
// caller's rights there as on the control socket, and serves a segment only to a caller whose
// uid and groups could read the file itself (`ArchivePath.isReadable`, the rule `archive
// export` and `archive verify` apply).
//
// A caller is found, per request, in this order:
// - a request with a live session cookie is its web account's (`[http] users_file`, docs/http.md
//   "Accounts"): a viewer hears nothing, a listener the feeds granted to it (`feeds:` in its line)
//   or to its group (`[web-group NAME] feeds`), an admin every feed. An account has no uid: the
//   files' modes are not asked for it.
// - a request with the listener's bearer token is the token's: `[http] token_user`, resolved
//   at start (without it the token reads no recording). The token is a machine's identity;
//   recd cannot tell who on that machine sent the request, so the operator says whose rights
//   it carries.
// - a request from loopback without the token: the owner of the peer's socket, found by the
//   kernel (`TCPConnectionOwner`: the socket tables, as identd does), with the groups the user
//   database gives that uid.
// - anything else (loopback whose socket cannot be found): no caller, 403 saying what to do.
//
// Threads: the listener's connection threads (the lookup reads /proc for milliseconds, within
// `TCPConnectionOwner.Bounds`); never the control thread.
import Archive
import ArchiveProof
import HTTPServer
import Platform
import SystemSupport

/// The account a request reads recordings as.
struct HTTPCaller: Sendable, Equatable {
    var uid: UInt32
    /// Its primary and supplementary groups.
    var groups: Set<UInt32>
    /// Who it is, in the words of a refusal: "uid 65534 (nobody)", "token_user backup (uid 998)".
    var shown: String
    /// What to do when it may not read a segment.
    var advice: String
    /// A logged-in web account's rights instead of a uid's (nil: a uid's).
    var web: WebRights?

    /// Whose clip jobs are its (`BrowseClips`): an account's name or a uid, never both alike.
    var owner: String { web.map { "account \($0.account)" } ?? "uid \(uid)" }

    /// Whether it may hear `feed` (APP/STREAM) in the file `path` (canonical, inside the
    /// archive): the one rule for every interface that hands out recorded or live audio.
    func mayRead(_ path: String, feed: String) -> Bool {
        if let web { return web.mayHear(feed) }
        return ArchivePath.isReadable(path, uid: uid, groups: groups)
    }
}

/// What a web account may hear.
struct WebRights: Sendable, Equatable {
    var account: String
    var role: WebAccount.Role
    /// The feeds granted (to the account or its group); every feed for an admin.
    var feeds: Set<String>

    func mayHear(_ feed: String) -> Bool {
        switch role {
        case .viewer: false
        case .listener: feeds.contains(feed)
        case .admin: true
        }
    }
}

/// Finds a request's caller (see the file's head). Made once at the listener's start.
struct HTTPCallerRule: Sendable {
    /// `[http] token_user` as the user database had it at start; nil: the token reads none.
    let tokenUser: UserAccount?
    /// The kernel's tables (tests give others).
    var tables = TCPConnectionOwner.tables
    /// The web accounts and the groups' feeds (`[web-group NAME]`); nil: none.
    var accounts: HTTPAccounts? = nil
    var groups: [String: [String]] = [:]

    enum Outcome: Sendable {
        case caller(HTTPCaller)
        case refused(HTTPResponse)
    }

    /// The caller of `request`, or the 403 that says why there is none and what to do.
    func caller(of request: HTTPRequest) -> Outcome {
        if let name = request.account, let account = accounts?.account(named: name) {
            var feeds: Set<String> = []
            switch account.grant {
            case .none: break
            case .feeds(let granted): feeds = Set(granted)
            case .group(let group): feeds = Set(groups[group] ?? [])
            }
            return .caller(
                HTTPCaller(
                    uid: UInt32.max, groups: [], shown: "account \(name) (\(account.role.rawValue))",
                    advice: account.role == .viewer
                        ? "a viewer sees states and meters only; ask an administrator for the listener role"
                        : "ask an administrator to grant you this feed (recctl web user add NAME --feeds APP/STREAM)",
                    web: WebRights(account: name, role: account.role, feeds: feeds)))
        }
        if request.carriesToken {
            guard let user = tokenUser else {
                return .refused(
                    .error(
                        403,
                        "Forbidden: the bearer token reads no recordings, as recd's [http] token_user is not set; "
                            + "set it to the account whose recordings a token holder may read (docs/http.md), or "
                            + "export on the box with `recctl archive export`"))
            }
            return .caller(
                HTTPCaller(
                    uid: user.uid, groups: user.groups, shown: "token_user \(user.name) (uid \(user.uid))",
                    advice:
                        "a request with the token reads as [http] token_user \(user.name): make the segment "
                        + "readable to that account, or name another in token_user"))
        }
        guard request.fromLoopback, let peer = request.peer, let local = request.local else {
            return .refused(Self.unknown("its connection's addresses are unknown"))
        }
        let client = TCPEndpoint(address: peer.address, port: peer.port)
        let server = TCPEndpoint(address: local.address, port: local.port)
        switch TCPConnectionOwner.owner(ofClient: client, connectedTo: server, tables: tables) {
        case .owner(let uid):
            let account = UserDatabase.user(uid: uid)
            let groups = account.map(\.groups) ?? []
            return .caller(
                HTTPCaller(
                    uid: uid, groups: groups, shown: "uid \(uid)" + (account.map { " (\($0.name))" } ?? ""),
                    advice:
                        "fetch only recordings you may read yourself (ask an administrator, or the owner of the "
                        + "archive, for access)"))
        case .notFound:
            return .refused(
                Self.unknown("no socket on this machine is at \(client) connected to recd's \(server)"))
        case .unreadable(let why):
            return .refused(Self.unknown(why))
        }
    }

    /// The one gate of every route that hands out audio (`action`: "listen", "export"): the
    /// caller, whether it may hear `feed` in `path`, and the audit line for what it got.
    /// `naming`: what a refusal says the caller may not have (default: the feed).
    func audio(_ request: HTTPRequest, feed: String, path: String, action: String, naming: String? = nil) -> Outcome {
        let where_ = request.peer?.addressText ?? "?"
        switch caller(of: request) {
        case .refused(let answer):
            Log.notice("http audit: \(action) \(feed) refused to an unknown caller from \(where_)")
            return .refused(answer)
        case .caller(let caller):
            guard caller.mayRead(path, feed: feed) else {
                Log.notice("http audit: \(action) \(feed) refused to \(caller.shown) from \(where_)")
                let what = naming ?? feed
                return .refused(.error(403, "Forbidden: \(caller.shown) may not read \(what); \(caller.advice)"))
            }
            Log.notice("http audit: \(action) \(feed) (\(path)) by \(caller.shown) from \(where_)")
            return .caller(caller)
        }
    }

    private static func unknown(_ why: String) -> HTTPResponse {
        .error(
            403,
            "Forbidden: recd cannot tell which user on this machine asks (\(why)), and serves recordings only to "
                + "a user who may read them; connect to recd's address straight from a program running as that "
                + "user (curl does; not through a proxy), or export with `recctl archive export`")
    }
}
