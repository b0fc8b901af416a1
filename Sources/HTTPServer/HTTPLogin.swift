// Browser logins at the listener: sessions, login throttling, and the CSRF rule. They live in
// the listener, not in routes, so that every route — whoever adds it — is behind the same
// checks: a request that is not GET or HEAD passes `HTTPLoginGate.checkUnsafe` before any
// handler runs.
//
// Who an account is, and its password, is the daemon's (`HTTPLogin.verify`: the accounts file
// and Argon2id); the listener only keeps which session belongs to which account name.
//
// Bounds: at most `maxSessions` sessions (the oldest goes first), `maxSessionsPerAccount` per
// account; the throttle tables hold at most `maxThrottleEntries` accounts and as many addresses
// (a full table forgets its entry least recently failed). Threads: any connection thread; one
// lock each.
import Dispatch
import Synchronization

/// What the daemon gives the listener when it has accounts.
public struct HTTPLogin: Sendable {
    /// Whether `password` is `account`'s (slow on purpose: Argon2id). Never called for a
    /// throttled account or address.
    public var verify: @Sendable (_ account: String, _ password: String) -> Bool
    /// Whether `account` still exists (a removed account's sessions end at its next request).
    public var accountExists: @Sendable (_ account: String) -> Bool
    /// A new unguessable identifier (session ids and CSRF tokens): hex, 32 random bytes.
    public var newSecret: @Sendable () -> String
    /// The login page (`message`: why the last try failed, nil at first) and the logout page
    /// (for a logged-in `account`, with its CSRF token): HTML.
    public var loginPage: @Sendable (_ message: String?, _ next: String) -> String
    public var logoutPage: @Sendable (_ account: String, _ csrf: String) -> String
    /// One line for recd's log: every login, failed login and logout.
    public var audit: @Sendable (String) -> Void
    /// Seconds a session lasts from its login.
    public var sessionSeconds: Double
    /// Wrong passwords in a row (per account, and per address) before logins are refused for
    /// `throttleSeconds`.
    public var maxFailures: Int
    public var throttleSeconds: Double

    public init(
        verify: @escaping @Sendable (String, String) -> Bool, accountExists: @escaping @Sendable (String) -> Bool,
        newSecret: @escaping @Sendable () -> String, loginPage: @escaping @Sendable (String?, String) -> String,
        logoutPage: @escaping @Sendable (String, String) -> String, audit: @escaping @Sendable (String) -> Void,
        sessionSeconds: Double = 12 * 3600, maxFailures: Int = 10, throttleSeconds: Double = 300
    ) {
        self.verify = verify
        self.accountExists = accountExists
        self.newSecret = newSecret
        self.loginPage = loginPage
        self.logoutPage = logoutPage
        self.audit = audit
        self.sessionSeconds = sessionSeconds
        self.maxFailures = maxFailures
        self.throttleSeconds = throttleSeconds
    }
}

/// A logged-in browser.
public struct HTTPSession: Sendable, Equatable {
    public let id: String
    public let account: String
    /// What a request that changes anything must carry (header `X-CSRF-Token` or form field `csrf`).
    public let csrf: String
    let expires: Double
}

/// The sessions: id → account, bounded.
final class HTTPSessionTable: Sendable {
    static let maxSessions = 1024
    static let maxSessionsPerAccount = 16
    private let sessions = Mutex<[String: HTTPSession]>([:])

    func create(account: String, id: String, csrf: String, lasting seconds: Double, now: Double) -> HTTPSession {
        let session = HTTPSession(id: id, account: account, csrf: csrf, expires: now + seconds)
        sessions.withLock { table in
            table = table.filter { $0.value.expires > now }
            let own = table.values.filter { $0.account == account }.sorted { $0.expires < $1.expires }
            for old in own.prefix(max(0, own.count - Self.maxSessionsPerAccount + 1)) {
                table.removeValue(forKey: old.id)
            }
            if table.count >= Self.maxSessions, let oldest = table.values.min(by: { $0.expires < $1.expires }) {
                table.removeValue(forKey: oldest.id)
            }
            table[session.id] = session
        }
        return session
    }

    func session(_ id: String, now: Double) -> HTTPSession? {
        sessions.withLock { table in
            guard let found = table[id] else { return nil }
            guard found.expires > now else {
                table.removeValue(forKey: id)
                return nil
            }
            return found
        }
    }

    func remove(_ id: String) { _ = sessions.withLock { $0.removeValue(forKey: id) } }
}

/// Wrong passwords counted per key (an account name, or an address), bounded.
final class HTTPLoginThrottle: Sendable {
    static let maxEntries = 4096
    private struct Entry {
        var failures: Int
        var last: Double
        var blockedUntil: Double
    }
    private let entries = Mutex<[String: Entry]>([:])
    let maxFailures: Int
    let seconds: Double

    init(maxFailures: Int, seconds: Double) {
        self.maxFailures = maxFailures
        self.seconds = seconds
    }

    /// Seconds left of a block on `key` (nil: not blocked).
    func blocked(_ key: String, now: Double) -> Double? {
        entries.withLock { table in
            guard let entry = table[key], entry.blockedUntil > now else { return nil }
            return entry.blockedUntil - now
        }
    }

    /// Counts a wrong password; the failures so far (a block begins at `maxFailures`).
    @discardableResult
    func failed(_ key: String, now: Double) -> Int {
        entries.withLock { table in
            var entry = table[key] ?? Entry(failures: 0, last: now, blockedUntil: 0)
            // Failures older than a block's length are forgotten: a typo a day is no attack.
            if now - entry.last > seconds && entry.blockedUntil <= now { entry.failures = 0 }
            entry.failures += 1
            entry.last = now
            if entry.failures >= maxFailures {
                entry.blockedUntil = now + seconds
                entry.failures = 0
            }
            if table[key] == nil && table.count >= Self.maxEntries {
                let stale = table.filter { $0.value.blockedUntil <= now }.min { $0.value.last < $1.value.last }
                if let stale { table.removeValue(forKey: stale.key) } else { return entry.failures }
            }
            table[key] = entry
            return entry.blockedUntil > now ? maxFailures : entry.failures
        }
    }

    func succeeded(_ key: String) { _ = entries.withLock { $0.removeValue(forKey: key) } }
}

/// The listener's rules for browsers: who is logged in, `/login`, `/logout`, `/api/session`,
/// and the CSRF rule for every request that is not GET or HEAD.
struct HTTPLoginGate: Sendable {
    static let sessionCookie = "recd_session"
    static let csrfCookie = "recd_csrf"

    let login: HTTPLogin
    let sessions = HTTPSessionTable()
    let accountThrottle: HTTPLoginThrottle
    let addressThrottle: HTTPLoginThrottle

    init(_ login: HTTPLogin) {
        self.login = login
        accountThrottle = HTTPLoginThrottle(maxFailures: login.maxFailures, seconds: login.throttleSeconds)
        addressThrottle = HTTPLoginThrottle(maxFailures: login.maxFailures, seconds: login.throttleSeconds)
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// The session the request's cookie names, if it is live and its account still exists.
    func session(cookies: [String: String]) -> HTTPSession? {
        guard let id = cookies[Self.sessionCookie], id.utf8.count == 64,
            let found = sessions.session(id, now: Self.now())
        else { return nil }
        guard login.accountExists(found.account) else {
            sessions.remove(id)
            return nil
        }
        return found
    }

    /// The CSRF rule, for a request that is not GET or HEAD (nil: it may go on). A browser
    /// sends `Origin` with such requests: it must be this listener's own. Then the request must
    /// show its session's token, or be a machine's (the bearer token, which no page can make
    /// a browser send), or come from this machine without any browser's marks (no Origin, no
    /// cookie: curl on the box's shell). `/login` needs no session (it makes one): the Origin
    /// check and SameSite cookies keep other sites from logging a browser in.
    func checkUnsafe(_ request: HTTPRequest, session: HTTPSession?, cookies: [String: String]) -> HTTPResponse? {
        if let origin = request.headers["origin"] {
            let host = request.headers["host"] ?? ""
            guard origin == "https://" + host || origin == "http://" + host else {
                return .error(
                    403,
                    "Forbidden: a request from \(origin) may not change anything on recd at \(host); use recd's own pages"
                )
            }
        }
        if request.path == "/login" || request.carriesToken { return nil }
        if let session {
            let given = request.headers["x-csrf-token"] ?? HTTPForm.parse(request.body)["csrf"] ?? ""
            guard HTTPLoginGate.equalInConstantTime(given, session.csrf) else {
                return .error(
                    403,
                    "Forbidden: missing or wrong CSRF token; send the recd_csrf cookie's value as X-CSRF-Token "
                        + "(or form field csrf), or reload the page")
            }
            return nil
        }
        if request.fromLoopback && request.headers["origin"] == nil && cookies.isEmpty { return nil }
        return .error(403, "Forbidden: log in at /login first (this request changes something and carries no session)")
    }

    static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count, !x.isEmpty else { return false }
        var difference: UInt8 = 0
        for (p, q) in zip(x, y) { difference |= p ^ q }
        return difference == 0
    }

    /// `/login`, `/logout` and `/api/session` (nil: another path).
    func answer(_ request: HTTPRequest, session: HTTPSession?, peer: String) -> HTTPResponse? {
        switch (request.path, request.method) {
        case ("/login", "GET"), ("/login", "HEAD"):
            return html(login.loginPage(nil, Self.safeNext(request.query["next"])))
        case ("/login", "POST"):
            return logIn(request, peer: peer)
        case ("/logout", "GET"), ("/logout", "HEAD"):
            guard let session else { return Self.redirect("/login") }
            return html(login.logoutPage(session.account, session.csrf))
        case ("/logout", "POST"):
            if let session {
                sessions.remove(session.id)
                login.audit("logout: account \(session.account) from \(peer)")
            }
            var answer = Self.redirect("/login")
            answer.headers += Self.clearedCookies
            return answer
        case ("/api/session", "GET"), ("/api/session", "HEAD"):
            guard let session else { return .error(401, "Unauthorized: not logged in; log in at /login") }
            let body = "{\"account\":\"\(session.account)\",\"csrf\":\"\(session.csrf)\"}"
            return HTTPResponse(
                contentType: "application/json", headers: [("Cache-Control", "no-store")],
                body: .bytes(Array(body.utf8)))
        case ("/login", _), ("/logout", _), ("/api/session", _):
            return .error(405, "Method Not Allowed: use GET or POST", headers: [("Allow", "GET, HEAD, POST")])
        default:
            return nil
        }
    }

    private func logIn(_ request: HTTPRequest, peer: String) -> HTTPResponse {
        let form = HTTPForm.parse(request.body)
        let account = form["account"] ?? ""
        let password = form["password"] ?? ""
        let next = Self.safeNext(form["next"])
        let now = Self.now()
        let accountKey = account.lowercased()
        let addressKey = request.peer.map(Self.addressKey) ?? peer
        let shownAccount = HTTPForm.printable(account)
        if let left = accountThrottle.blocked(accountKey, now: now) ?? addressThrottle.blocked(addressKey, now: now) {
            login.audit("login throttled: account \(shownAccount) from \(peer), \(Int(left.rounded(.up))) s left")
            let seconds = Int(left.rounded(.up))
            return HTTPResponse(
                status: 429, contentType: "text/html; charset=utf-8",
                headers: [("Retry-After", "\(seconds)"), ("Cache-Control", "no-store")],
                body: .bytes(
                    Array(
                        login.loginPage(
                            "Too many wrong passwords: wait \(seconds) s before the next try", next
                        ).utf8)))
        }
        guard !account.isEmpty, login.verify(account, password) else {
            let byAccount = accountThrottle.failed(accountKey, now: now)
            let byAddress = addressThrottle.failed(addressKey, now: now)
            login.audit(
                "login failed: account \(shownAccount) from \(peer) (\(max(byAccount, byAddress)) of "
                    + "\(login.maxFailures) wrong passwords)")
            return HTTPResponse(
                status: 401, contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")],
                body: .bytes(Array(login.loginPage("Wrong account or password", next).utf8)))
        }
        accountThrottle.succeeded(accountKey)
        let session = sessions.create(
            account: account, id: login.newSecret(), csrf: login.newSecret(), lasting: login.sessionSeconds, now: now)
        login.audit("login: account \(shownAccount) from \(peer)")
        let age = Int(login.sessionSeconds)
        var answer = Self.redirect(next)
        answer.headers += [
            (
                "Set-Cookie",
                "\(Self.sessionCookie)=\(session.id); Path=/; Max-Age=\(age); HttpOnly; Secure; SameSite=Strict"
            ),
            ("Set-Cookie", "\(Self.csrfCookie)=\(session.csrf); Path=/; Max-Age=\(age); Secure; SameSite=Strict"),
        ]
        return answer
    }

    static let clearedCookies: [(String, String)] = [
        ("Set-Cookie", "\(sessionCookie)=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict"),
        ("Set-Cookie", "\(csrfCookie)=; Path=/; Max-Age=0; Secure; SameSite=Strict"),
    ]

    /// Where a login goes next: a path on this site only (never `//host` or a scheme).
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/"), !next.hasPrefix("//"), !next.contains("\\"), next.utf8.count <= 512,
            next.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        else { return "/" }
        return next
    }

    /// An IPv4 address, or an IPv6 address's /64 (one host holds a whole /64).
    static func addressKey(_ peer: HTTPSocketAddress) -> String {
        (peer.address.count == 16 ? Array(peer.address.prefix(8)) : peer.address).map { String($0) }.joined(
            separator: ".")
    }

    static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(
            status: 303, contentType: "text/plain; charset=utf-8",
            headers: [("Location", location), ("Cache-Control", "no-store")],
            body: .bytes(Array("303 See Other: \(location)\n".utf8)))
    }

    private func html(_ text: String) -> HTTPResponse {
        HTTPResponse(
            contentType: "text/html; charset=utf-8",
            headers: [
                ("Cache-Control", "no-store"), ("X-Frame-Options", "DENY"),
                (
                    "Content-Security-Policy",
                    "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"
                ),
            ], body: .bytes(Array(text.utf8)))
    }
}

/// `application/x-www-form-urlencoded` bodies: total (any bytes give a dictionary), bounded by
/// the body's own bound (`HTTPServer.maxBodyBytes`) and `maxFields`.
enum HTTPForm {
    static let maxFields = 32

    static func parse(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&"), maxSplits: maxFields, omittingEmptySubsequences: true)
            .prefix(maxFields)
        {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts.first else { continue }
            fields[decode(name)] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }

    /// Percent-decoding and `+` as space; a broken escape stays as written.
    static func decode(_ bytes: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), bytes.endIndex - index >= 3,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A name from outside for a log line: printable ASCII, at most 64 characters, quoted.
    static func printable(_ text: String) -> String {
        let kept = text.unicodeScalars.prefix(64).map {
            $0.value >= 0x20 && $0.value < 0x7f && $0 != "\"" ? Character($0) : "?"
        }
        return "\"" + String(kept) + "\""
    }
}
