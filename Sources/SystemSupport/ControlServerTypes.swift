// The vocabulary of the control server: who is connected, who they are, why they were cut off,
// and the callbacks the daemon implements.

import Platform

/// One connection to the control socket. Numbers increase from 1 and are never reused during
/// a server's lifetime, so a stale ID can never address a newer client.
public struct ClientID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public var description: String { "client#\(rawValue)" }

    public static func < (lhs: ClientID, rhs: ClientID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Who is on the other end of a connection, as the kernel saw them at `connect` time.
public struct PeerCredentials: Sendable, Equatable {
    /// The connecting process (`SO_PEERCRED`).
    public var pid: Int32
    /// Its effective user ID.
    public var uid: UInt32
    /// Its effective group ID.
    public var gid: UInt32
    /// Its supplementary groups: `SO_PEERGROUPS` where the kernel has it (Linux 4.13+),
    /// otherwise what the user database lists for `uid` (`getgrouplist`, which includes
    /// `gid`). Membership checks should test `gid` and `groups` together.
    public var groups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32]) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// Whether the peer has `group` as its primary or a supplementary group.
    public func isMember(of group: UInt32) -> Bool {
        gid == group || groups.contains(group)
    }
}

/// Why the server is cutting a client off.
public enum ClientRejection: Sendable, Equatable {
    /// The client sent a line longer than `limit` bytes.
    case lineTooLong(limit: Int)
    /// The client does not read its output fast enough (more than
    /// `Limits.maxPendingOutputBytes` queued), or kept an incomplete line for longer than
    /// `Limits.incompleteLineTimeout`, or did not read its last replies in time.
    case tooSlow
    /// `Limits.maxClients` connections are open already, or, for a peer that is not exempt
    /// from user limits, all but the `Limits.reservedClients` kept for those that are.
    case tooManyClients
    /// The peer's uid holds `limit` connections already (`Limits.maxClientsPerUser`).
    case tooManyClientsOfUser(uid: UInt32, limit: Int)
    /// `uid`'s clients together had more than `limit` bytes of output queued
    /// (`Limits.maxPendingOutputBytesPerUser`); this one, with the most, is cut off.
    case unreadOverUserBudget(uid: UInt32, limit: Int)
    /// All clients together had more than `limit` bytes of output queued
    /// (`Limits.maxPendingOutputBytesTotal`); this one, with the most, is cut off.
    case unreadOverServerBudget(limit: Int)
}

/// The descriptors a client passed with one line (SCM_RIGHTS), owned by this value until the
/// handler takes them.
///
/// `ControlServer` gives one to every `ControlServerHandler.clientSentLine` call and closes
/// what the handler leaves in it when the call returns (in `deinit`), so each descriptor is
/// closed exactly once, by its last owner. `~Copyable`: no copy can hand one out twice.
public struct PassedDescriptors: ~Copyable {
    /// Still owned by this value, in the order the client passed them.
    private var descriptors: [Int32]
    /// The client passed more descriptors with the line than
    /// `ControlServer.Limits.maxDescriptorsPerLine`, or more than the kernel would deliver
    /// (`MSG_CTRUNC`). The server has closed them all (this value holds none); answer the line
    /// with an error.
    public let refused: Bool

    /// Takes ownership of `descriptors`.
    init(_ descriptors: [Int32] = [], refused: Bool = false) {
        precondition(!refused || descriptors.isEmpty, "refused descriptors are closed, not passed on")
        self.descriptors = descriptors
        self.refused = refused
    }

    deinit {
        for descriptor in descriptors { Descriptor.close(descriptor) }
    }

    /// How many descriptors are still here.
    public var count: Int { descriptors.count }

    public var isEmpty: Bool { descriptors.isEmpty }

    /// Takes the first remaining descriptor (in the order the client passed them), or nil when
    /// none is left. The caller owns it from now on and must close it exactly once.
    public mutating func take() -> Int32? {
        descriptors.isEmpty ? nil : descriptors.removeFirst()
    }
}

/// What the daemon plugs into a `ControlServer`.
///
/// Every method is called on the control thread (the thread inside `ControlServer.run`), one
/// at a time, never re-entrantly. Methods may call `send`, `close`, `post` and `stop` on the
/// server; a `close` takes effect after the method returns.
///
/// Lifecycle of a connection: `clientConnected` once, then any number of `clientSentLine`,
/// then (maybe) `clientRejected`, then `clientDisconnected` exactly once — whoever closed it.
/// A client turned away at the door (`.tooManyClients`, `.tooManyClientsOfUser`) gets only `clientRejected`.
public protocol ControlServerHandler: AnyObject {
    /// A client connected. `peer` is what the kernel reports about it.
    func clientConnected(_ client: ClientID, peer: PeerCredentials)

    /// One line from a client, without its terminating newline (or `\r\n`), with the
    /// descriptors the client passed with it. Bytes that are not valid UTF-8 arrive as
    /// U+FFFD. An unterminated last line before the client shuts down its sending side is
    /// delivered too.
    ///
    /// A descriptor belongs to the line that holds the first byte of the `sendmsg` that
    /// carried it (SCM_RIGHTS); a client passes descriptors by sending the line, whole, in that
    /// `sendmsg` (`DescriptorPassing.sendLine`). Most lines come with none. Take the ones to
    /// keep with `descriptors.take()`; the server closes the rest when this method returns.
    /// When `descriptors.refused`, the client passed too many and none is left: answer the
    /// line with an error.
    func clientSentLine(_ client: ClientID, line: String, descriptors: inout PassedDescriptors)

    /// The server is cutting `client` off. Return a last line to send (an error reply)
    /// before the connection closes, or nil. Output sent with `send` from inside this method
    /// to the rejected client is dropped; return the line instead.
    func clientRejected(_ client: ClientID, reason: ClientRejection) -> String?

    /// The connection is closed; the ID will never be used again.
    func clientDisconnected(_ client: ClientID)

    /// About every `Limits.tickInterval` seconds, with `CLOCK_MONOTONIC` seconds, for timers;
    /// every `Limits.quietTickInterval` while no client is connected and
    /// `wantsFrequentTicks` is false.
    func tick(now: Double)

    /// Read after each tick: whether the next must come within `Limits.tickInterval` although
    /// no client is connected (something is polled: a timer, a level, a child process).
    var wantsFrequentTicks: Bool { get }

    /// One of the signals the server was created to watch arrived (see `Signals`).
    func signalReceived(_ signo: Int32)

    /// Whether a connecting peer is spared the per-user limits (`Limits.maxClientsPerUser`,
    /// `Limits.maxPendingOutputBytesPerUser`) and may take the `Limits.reservedClients`: the
    /// daemon's trusted users. Asked once per connection, before `clientConnected`.
    func isExemptFromUserLimits(_ peer: PeerCredentials) -> Bool
}

extension ControlServerHandler {
    /// Default: ignore signals.
    public func signalReceived(_ signo: Int32) {}

    /// Default: nobody is exempt.
    public func isExemptFromUserLimits(_ peer: PeerCredentials) -> Bool { false }

    /// Default: every tick comes within `Limits.tickInterval`.
    public var wantsFrequentTicks: Bool { true }
}
