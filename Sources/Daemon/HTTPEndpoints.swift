// The daemon's side of the HTTP listener: starting it from `[http]`, its routes, and how a
// route gets recd's state.
//
// Threads: route handlers run on the listener's connection threads (HTTPServer). They never
// touch the coordinator: `ControlThreadQuery.ask` posts a closure to the control thread
// (`ControlServer.post`, as `SlowRequestWorker` delivers its results), which builds a small
// value snapshot there; the connection thread waits for it at most `answerTimeout` and answers
// 503 if the control thread is busier than that. Nothing is computed for HTTP unless a request
// came: an idle listener costs the control thread nothing.
import ControlProtocol
import Dispatch
import Foundation
import HTTPServer
import Platform
import Synchronization
import SystemSupport

/// Builds values on the control thread for other threads, with a time limit.
final class ControlThreadQuery: Sendable {
    private let post: @Sendable (@escaping @Sendable () -> Void) -> Void

    init(post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.post = post
    }

    private final class Answer<T: Sendable>: Sendable {
        let value = Mutex<T?>(nil)
        let ready = DispatchSemaphore(value: 0)
    }

    /// Runs `build` on the control thread and returns its value, or nil when the control
    /// thread did not get to it within `timeout` seconds (the value is then dropped). Any
    /// thread but the control thread (which would wait for itself).
    func ask<T: Sendable>(timeout: Double, _ build: @escaping @Sendable () -> T) -> T? {
        let answer = Answer<T>()
        post {
            let value = build()
            answer.value.withLock { $0 = value }
            answer.ready.signal()
        }
        guard answer.ready.wait(timeout: .now() + timeout) == .success else { return nil }
        return answer.value.withLock { $0 }
    }

    /// Like `ask`, for a value the control thread has later: `start` runs there and calls its
    /// completion (on the control thread) when the value is ready, without blocking it.
    func askLater<T: Sendable>(
        timeout: Double, _ start: @escaping @Sendable (_ finish: @escaping @Sendable (T) -> Void) -> Void
    ) -> T? {
        let answer = Answer<T>()
        post {
            start { value in
                answer.value.withLock { $0 = value }
                answer.ready.signal()
            }
        }
        guard answer.ready.wait(timeout: .now() + timeout) == .success else { return nil }
        return answer.value.withLock { $0 }
    }
}

/// The routes recd serves over HTTP. More routes (the status page, `/archive/`) are added in
/// `routes()`.
struct HTTPEndpoints: Sendable {
    /// How long a request waits for the control thread before it gets 503.
    static let answerTimeout = 1.0

    let coordinator: SessionCoordinator
    let control: ControlThreadQuery
    /// Who asks, for the routes that serve recorded audio.
    let callers: HTTPCallerRule

    init(coordinator: SessionCoordinator, callers: HTTPCallerRule) {
        self.coordinator = coordinator
        self.callers = callers
        let link = coordinator.link
        control = ControlThreadQuery(post: { link.post($0) })
    }

    func routes() -> HTTPServer.Routes {
        var routes = HTTPServer.Routes()
        routes.add("/metrics") { _ in metrics() }
        addStatusPage(to: &routes)
        addDay(to: &routes)
        addWall(to: &routes)
        addBrowse(to: &routes)
        return routes
    }

    /// 503 with what to do, for a control thread that did not answer in time.
    static let busy = HTTPResponse.error(
        503,
        "Service Unavailable: recd's control thread did not answer within 1 s; retry (its log says what kept it busy)",
        headers: [("Retry-After", "1")])

    /// `GET /metrics`. Every series is in every scrape, whatever the interval: while the meters
    /// are off (nobody read them for a minute) the scrape waits for their first whole window
    /// (about two ticks, 0.2 s) rather than leave the input peaks out.
    func metrics() -> HTTPResponse {
        let coordinator = coordinator
        let snapshot = control.askLater(timeout: Self.answerTimeout) { finish in
            coordinator.whenMetersRead { finish(coordinator.metricsSnapshot()) }
        }
        guard let snapshot else { return Self.busy }
        return .text(PrometheusMetrics.render(snapshot), contentType: PrometheusMetrics.contentType)
    }

    /// Starts the listener `config.http` asks for (nil for `listen = no`). The error says what to fix.
    static func start(config: RecdConfig, coordinator: SessionCoordinator) throws(HTTPServerError) -> HTTPServer? {
        guard let listen = config.http.listen else { return nil }
        let address = try HTTPListenAddress(parsing: listen)
        var token: String?
        if let path = config.http.tokenFile {
            token = try readToken(path)
        }
        var callers = HTTPCallerRule(tokenUser: try tokenUser(config.http))
        let accounts = HTTPAccounts(path: usersFile(config))
        callers.accounts = accounts
        callers.groups = config.http.groups
        let tls = try tls(config: config, address: address)
        // Logins only over TLS, or on loopback: a password never crosses a network in clear.
        let login = tls != nil || address.isLoopback ? login(config: config, accounts: accounts) : nil
        if login != nil && !address.isLoopback {
            let count = accounts.current().accounts.count
            Log.notice(
                "http: web accounts from \(accounts.path): \(count)"
                    + (count == 0 && token == nil
                        ? "; nobody off this machine can log in until `recctl web user add NAME --role ROLE` adds one"
                        : ""))
        }
        return try HTTPServer(
            address: address, token: token, routes: HTTPEndpoints(coordinator: coordinator, callers: callers).routes(),
            tls: tls, login: login)
    }

    /// `[http] token_user` as the user database has it: an account that exists, and a token
    /// for it to belong to.
    static func tokenUser(_ http: HTTPSection) throws(HTTPServerError) -> UserAccount? {
        guard let name = http.tokenUser else { return nil }
        guard http.tokenFile != nil else {
            throw HTTPServerError(
                "token_user = \(name) names whose rights a request with the token has, and no token_file is set; "
                    + "set token_file, or remove token_user")
        }
        guard let account = UserDatabase.user(named: name) else {
            throw HTTPServerError(
                "token_user = \(name): no such user on this machine (getpwnam); name an existing account, e.g. one "
                    + "made for the readers of the archive (useradd --system NAME)")
        }
        return account
    }

    /// The token in `token_file`: its first line, without surrounding white space. A file that
    /// group or others may read or write is refused (recd does not start): the token would be
    /// everyone's on the box, and a token once read by others cannot be taken back by a warning.
    static func readToken(_ path: String) throws(HTTPServerError) -> String {
        func unreadable(_ error: SystemError) -> HTTPServerError {
            HTTPServerError("cannot read [http] token_file \(path): \(error.message); make it readable by recd")
        }
        // Non-blocking, then a regular file only: a FIFO here would hold recd's start for ever.
        let file: OwnedFile
        let kind: FileKind
        let permissions: UInt32
        do throws(SystemError) {
            file = try OwnedFile(path, .readOnlyNonBlocking)
            let status = try file.status()
            kind = status.kind
            permissions = status.permissions
        } catch {
            throw unreadable(error)
        }
        guard kind == .regular else {
            throw HTTPServerError(
                "[http] token_file \(path) is not a regular file; write the token into one, e.g. "
                    + "openssl rand -hex 32 > FILE")
        }
        let bytes: [UInt8]
        do throws(SystemError) {
            bytes = try file.readToEnd()
        } catch {
            throw unreadable(error)
        }
        guard permissions & 0o077 == 0 else {
            throw HTTPServerError(
                "[http] token_file \(path) is open to group or others (mode \(String(permissions, radix: 8))); run chmod 600 \(path) (owned by recd's user)"
            )
        }
        let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first ?? ""
        let token = line.trimmingCharacters(in: .whitespaces)
        guard token.count >= 16 else {
            throw HTTPServerError(
                "[http] token_file \(path) holds no token of 16 characters or more; write one, e.g. openssl rand -hex 32 > \(path)"
            )
        }
        return token
    }

    /// The start-up check of `[http]` (daemon and `--check-config`): `listen` by the listener's
    /// own parser, the token rule, and the token file as the listener will read it.
    static func check(_ config: RecdConfig) -> ConfigError? {
        guard let listen = config.http.listen else { return nil }
        do throws(HTTPServerError) {
            let address = try HTTPListenAddress(parsing: listen)
            // Beyond loopback the listener speaks TLS and offers logins: accounts may come later.
            try HTTPServer.requireToken(for: address, hasToken: config.http.tokenFile != nil || !address.isLoopback)
            if let path = config.http.tokenFile { _ = try readToken(path) }
        } catch {
            return ConfigError(
                file: config.source, line: config.http.listenLine, message: "[http] listen: \(error.message)")
        }
        do throws(HTTPServerError) {
            _ = try tokenUser(config.http)
            return nil
        } catch {
            return ConfigError(
                file: config.source, line: config.http.tokenUserLine, message: "[http] \(error.message)")
        }
    }
}
