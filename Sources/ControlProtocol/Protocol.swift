// The recd control protocol: one JSON object per line over a Unix stream socket.
// Versioned and append-only: new ops and fields may be added, none renamed or removed.
// docs/protocol.md is the reference; keep the two telling the same story.
// Threads: any; everything here is a value or a pure function.
import SessionPolicy

/// The protocol version this build speaks. Requests may carry `"v"`; a higher one is refused.
/// Version 2 spells every key camelCase; a client that sends `"v":1` or no `"v"` gets replies
/// and events with version 1's spellings (`WireKeys`).
public let protocolVersion = 2

/// This build's version (recd's and recctl's, one package): reported by `hello` and `status`,
/// and on the report `recctl archive prove --report` writes.
public let recdVersion = "0.1.0"

/// Longest request line accepted, in bytes.
public let maxRequestLineBytes = 64 * 1024

/// Request operations, by wire name. Append only.
public enum Op: String, CaseIterable, Sendable {
    case hello
    case status
    case sessionList = "session.list"
    case sessionShow = "session.show"
    case sessionSet = "session.set"
    case sessionActivate = "session.activate"
    case sessionDeactivate = "session.deactivate"
    case sessionPrefer = "session.prefer"
    case sessionOverride = "session.override"
    case sessionDelete = "session.delete"
    case permissionList = "permission.list"
    case permissionRequest = "permission.request"
    case permissionGrant = "permission.grant"
    case permissionDeny = "permission.deny"
    case permissionReset = "permission.reset"
    case mute
    case watch
    case unwatch
    case routes
    case play
    case pause
    case stop
    case recordStart = "record.start"
    case recordStop = "record.stop"
    case archiveList = "archive.list"
    case archiveVerify = "archive.verify"
    case archiveReindex = "archive.reindex"
    case archiveExport = "archive.export"
    case meter
    case cueOutputs = "cue.outputs"
    case cueAssign = "cue.assign"
    case cueMix = "cue.mix"
    case cueSplit = "cue.split"
    case cueShow = "cue.show"
    case devicesInject = "devices.inject"
    case sessionAttach = "session.attach"
    case sessionDetach = "session.detach"

    /// Ops that change shared state only an administrator may change.
    public var requiresAdministrator: Bool {
        switch self {
        case .permissionGrant, .permissionDeny, .permissionReset, .archiveReindex, .devicesInject: true
        default: false
        }
    }
}

/// A protocol-level failure, before a request reaches the policy.
public enum ProtocolError: Error, Equatable, Sendable {
    case malformed(String)

    public var sessionError: SessionError {
        switch self {
        case .malformed(let message): SessionError(.badParam, message)
        }
    }
}

/// A decoded request: its id, op and arguments, with typed accessors that fail with badParam.
public struct Request: Sendable {
    public var id: JSONValue
    public var op: Op
    public var body: JSONValue

    /// A client's request. `interface` says whose terms the caller reads recd's errors in
    /// (recctl's, a library's); nil leaves it out: the protocol's own.
    public init(id: Int, op: Op, arguments: [(String, JSONValue)] = [], interface: CallerInterface? = nil) {
        self.id = .number(Double(id))
        self.op = op
        let head: [(String, JSONValue)] = [
            ("id", .number(Double(id))), ("v", .number(Double(protocolVersion))), ("op", .string(op.rawValue)),
        ]
        let caller: [(String, JSONValue)] = interface.map { [("interface", .string($0.rawValue))] } ?? []
        self.body = .object(head + caller + arguments)
    }

    /// Validates a request line in a fixed order: JSON, object, id, version, op.
    /// On failure returns the id (if one could be read) with the error, for the reply.
    public static func decode(_ line: String) -> Result<Request, RequestFailure> {
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            return .failure(RequestFailure(id: .null, error: error.sessionError))
        }
        guard case .object = value else {
            return .failure(RequestFailure(id: .null, error: .init(.badParam, "a request must be a JSON object like {\"id\":1,\"op\":\"status\"}")))
        }
        let id = value["id"] ?? .null
        switch id {
        case .null, .number, .string: break
        default:
            return .failure(RequestFailure(id: .null, error: .init(.badParam, "\"id\" must be a number or a string")))
        }
        if let version = value["v"] {
            guard let v = version.intValue else {
                return .failure(RequestFailure(id: id, error: .init(.badParam, "\"v\" must be an integer protocol version")))
            }
            guard v <= protocolVersion, v >= 1 else {
                return .failure(RequestFailure(id: id, error: .init(.badParam, "protocol version \(v) is not supported; this recd speaks version \(protocolVersion); upgrade recd or use an older client")))
            }
        }
        guard let name = value["op"]?.stringValue else {
            return .failure(RequestFailure(id: id, error: .init(.badParam, "missing \"op\"; e.g. {\"id\":1,\"op\":\"status\"}")))
        }
        guard let op = Op(rawValue: name) else {
            return .failure(RequestFailure(id: id, error: .init(.badParam, "unknown op \"\(name)\"; known ops: \(Op.allCases.map(\.rawValue).joined(separator: ", "))")))
        }
        return .success(Request(id: id, op: op, body: value))
    }

    /// The version the client speaks: its `"v"`, or 1 when it sent none (version 1 made `v`
    /// optional, so a request without one is a version-1 client's).
    public var version: Int { body["v"]?.intValue ?? 1 }

    /// The interface the caller used (its `"interface"`), whose terms the remedies of recd's
    /// errors are worded in. Absent, or a name this recd does not know (a newer client's): the
    /// protocol's own terms, never a refusal.
    public var interface: CallerInterface {
        body["interface"]?.stringValue.flatMap(CallerInterface.init(rawValue:)) ?? .protocol
    }

    private init(id: JSONValue, op: Op, body: JSONValue) {
        self.id = id
        self.op = op
        self.body = body
    }

    public func has(_ key: String) -> Bool {
        if let value = body[key], !value.isNull { return true }
        return false
    }

    public func string(_ key: String) throws(SessionError) -> String {
        guard let value = try optionalString(key) else {
            throw SessionError(.badParam, "\(op.rawValue) needs \"\(key)\"")
        }
        return value
    }

    public func optionalString(_ key: String) throws(SessionError) -> String? {
        guard let value = body[key], !value.isNull else { return nil }
        guard let text = value.stringValue else { throw SessionError(.badParam, "\"\(key)\" must be a string") }
        return text
    }

    public func optionalBool(_ key: String) throws(SessionError) -> Bool? {
        guard let value = body[key], !value.isNull else { return nil }
        guard let flag = value.boolValue else { throw SessionError(.badParam, "\"\(key)\" must be true or false") }
        return flag
    }

    public func optionalDouble(_ key: String) throws(SessionError) -> Double? {
        guard let value = body[key], !value.isNull else { return nil }
        guard let number = value.doubleValue else { throw SessionError(.badParam, "\"\(key)\" must be a number") }
        return number
    }

    public func optionalInt(_ key: String) throws(SessionError) -> Int? {
        guard let value = body[key], !value.isNull else { return nil }
        guard let number = value.intValue else { throw SessionError(.badParam, "\"\(key)\" must be an integer") }
        return number
    }

    public func optionalStrings(_ key: String) throws(SessionError) -> [String]? {
        guard let value = body[key], !value.isNull else { return nil }
        guard let items = value.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
            throw SessionError(.badParam, "\"\(key)\" must be a list of strings")
        }
        return items.compactMap(\.stringValue)
    }
}

/// A request that could not be decoded, with the id to answer to.
public struct RequestFailure: Error, Sendable {
    public var id: JSONValue
    public var error: SessionError
}

/// Reply and event lines.
public enum Wire {
    /// An error as the wire carries it, its message worded for a caller of `interface`.
    public static func errorObject(_ error: SessionError, for interface: CallerInterface) -> JSONValue {
        [
            "name": .string(error.code.name), "code": .number(Double(error.code.rawValue)),
            "message": .string(error.message(for: interface)),
        ]
    }

    /// A failed request's reply, its message worded for the interface the request came through.
    public static func failure(id: JSONValue, _ error: SessionError, for interface: CallerInterface) -> String {
        JSONValue.object([("id", id), ("ok", false), ("error", errorObject(error, for: interface))]).jsonText
    }

    /// The last line of a connection recd closes (idle for `[daemon] idle_client_timeout`): a
    /// failure with a null `id` and `"closing": true`, so that a client whose request crossed it
    /// knows the request was never read and sends it again on a new connection.
    public static func closing(_ error: SessionError, for interface: CallerInterface) -> String {
        JSONValue.object([
            ("id", .null), ("ok", false), ("closing", true), ("error", errorObject(error, for: interface)),
        ]).jsonText
    }

    public static func success(id: JSONValue, _ fields: [(String, JSONValue)] = []) -> String {
        JSONValue.object([("id", id), ("ok", true)] + fields).jsonText
    }

    /// A step of a request that replies later (`archive.verify` with `"progress": true`): a
    /// line with the request's `id` and no `ok`, before its reply.
    public static func progress(id: JSONValue, done: Int, total: Int) -> String {
        let step: JSONValue = ["done": .number(Double(done)), "total": .number(Double(total))]
        return JSONValue.object([("id", id), ("progress", step)]).jsonText
    }

    /// Decodes the error object of a failed reply.
    public static func error(from reply: JSONValue) -> SessionError? {
        guard let object = reply["error"] else { return nil }
        let code = object["code"]?.intValue.flatMap { Int32(exactly: $0) }.flatMap(ErrorCode.init(rawValue:))
            ?? object["name"]?.stringValue.flatMap(ErrorCode.init(name:)) ?? .unspecified
        return SessionError(code, object["message"]?.stringValue ?? "no message")
    }
}

/// The interface a request came through, whose terms recd words its errors' remedies in
/// (SessionPolicy's; named here for the clients that import only the protocol).
public typealias CallerInterface = SessionPolicy.CallerInterface
