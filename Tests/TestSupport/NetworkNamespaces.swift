// Two boxes on one machine: two Linux network namespaces joined by a veth pair, for the tests of
// audio over the network (netjack2 between a logger's jackd and a satellite's). No traffic leaves
// the machine; the namespaces have no route anywhere but to each other.
//
// netjack2 finds its master by multicast (225.3.19.154 by default), and a veth end has no route to
// 224.0.0.0/4 of its own: each end gets one. Taking a link down drops that route with it, so
// `setLink(up: true)` adds it back (a satellite would otherwise never find its master again).
//
// The names are stable (`recd-test-net-*`), like the tests' JACK servers: a run that was killed
// before its deinit leaves them behind, and the next `NamespacePair` of the same names removes
// them first (scripts/test's cleanup removes them too: lib.sh stop_stale_netns). Deleting a
// namespace deletes the veth end inside it, and so the pair.
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why namespaces cannot be made; thrown by `NamespacePair.init` with `ip`'s own words.
public struct NamespaceError: Error, CustomStringConvertible {
    public var description: String
}

/// Two network namespaces joined by a veth pair (10.231.0.1/24 and 10.231.0.2/24), each with a
/// multicast route on its veth end. Made by `init`, removed by `deinit` (and by `remove()`),
/// whatever the test did. Programs run inside one with `process(in:_:_:)`. Test threads only.
public final class NamespacePair: @unchecked Sendable {
    /// One of the two namespaces.
    public enum Side: Int, Sendable, CaseIterable {
        case first = 0
        case second = 1
    }

    /// The namespaces' names (`ip netns list`), first and second.
    public let names: [String]
    /// Each side's veth end (at most 15 characters: IFNAMSIZ).
    public let links: [String]
    /// Each side's IPv4 address on its veth end.
    public let addresses = ["10.231.0.1", "10.231.0.2"]
    /// The multicast range netjack2 discovers its master in.
    public static let multicastRoute = "224.0.0.0/4"

    /// Why namespaces cannot be used here (nil: they can): not root, no `ip` (iproute2), or the
    /// kernel or a container refusing `ip netns add`. Found once, by adding and deleting one.
    /// For `.enabled(if: NamespacePair.permitted, ...)`.
    public static let unavailableReason: String? = {
        guard geteuid() == 0 else { return "network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)" }
        // A name of this process's own: scripts/test's passes run side by side, and one
        // process's probe must not delete, or collide with, another's.
        let probe = "recd-test-net-probe-\(getpid())"
        do {
            _ = try? ip(["netns", "del", probe])
            try ip(["netns", "add", probe])
            try ip(["netns", "del", probe])
            return nil
        } catch {
            return "network namespaces are not permitted here: \(error)"
        }
    }()

    /// Whether namespaces can be made here (see `unavailableReason`).
    public static var permitted: Bool { unavailableReason == nil }

    /// The words a test that skips without namespaces shows.
    public static let skipReason =
        "needs network namespaces (root and `ip netns`, iproute2); "
        + "without them NamespacePair.unavailableReason says why"

    private var removed = false

    /// Makes `recd-test-net-<first>` and `recd-test-net-<second>` and the veth pair between
    /// them (both up, addressed, with the multicast route); removes same-named ones an earlier,
    /// killed run left. `first` and `second`: at most 7 characters (the veth names carry them).
    public init(_ first: String = "logger", _ second: String = "studio") throws {
        guard first.count <= 7, second.count <= 7, first != second else {
            throw NamespaceError(
                description: "namespace tags must differ and be at most 7 characters: \(first), \(second)")
        }
        if let reason = Self.unavailableReason { throw NamespaceError(description: reason) }
        names = ["recd-test-net-\(first)", "recd-test-net-\(second)"]
        links = ["recdnet-\(first)", "recdnet-\(second)"]
        Self.removeStale(names)
        do {
            for name in names { try Self.ip(["netns", "add", name]) }
            try Self.ip(["link", "add", links[0], "type", "veth", "peer", "name", links[1]])
            for side in Side.allCases {
                let (name, link) = (names[side.rawValue], links[side.rawValue])
                try Self.ip(["link", "set", link, "netns", name])
                try Self.ip(["-n", name, "addr", "add", addresses[side.rawValue] + "/24", "dev", link])
                try Self.ip(["-n", name, "link", "set", "lo", "up"])
                try setLink(side, up: true)
            }
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// The namespace of `side`.
    public func name(_ side: Side) -> String { names[side.rawValue] }

    /// Takes `side`'s veth end down (the pair's link is cut: neither end carries traffic) or up
    /// again; up adds the multicast route back, which going down dropped.
    public func setLink(_ side: Side, up: Bool) throws {
        let (name, link) = (names[side.rawValue], links[side.rawValue])
        try Self.ip(["-n", name, "link", "set", link, up ? "up" : "down"])
        guard up else { return }
        try Self.ip(["-n", name, "route", "replace", Self.multicastRoute, "dev", link])
    }

    /// Makes `side`'s neighbour (ARP) entry for the other side's address permanent (`ip neigh
    /// replace ... nud permanent`), as the netjack2 recipe does on the logger for each satellite:
    /// the kernel never resolves that address again, so no datagram to it waits on a resolution
    /// that a link cut made fail (docs/network-audio.md: netmanager's reply to a returning
    /// satellite was dropped so, and its rejoin took 10 s). The entry outlives the carrier's loss
    /// (the far end going down), not this side's own link going down.
    public func pinNeighbour(on side: Side) throws {
        let other = Side.allCases[1 - side.rawValue]
        let shown = try Self.ip(["-n", names[other.rawValue], "-o", "link", "show", links[other.rawValue]])
        guard let range = shown.range(of: #"link/ether [0-9a-f:]{17}"#, options: .regularExpression) else {
            throw NamespaceError(description: "no MAC address in: \(shown)")
        }
        let mac = String(shown[range].dropFirst("link/ether ".count))
        try Self.ip([
            "-n", names[side.rawValue], "neigh", "replace", addresses[other.rawValue], "lladdr", mac, "dev",
            links[side.rawValue], "nud", "permanent",
        ])
    }

    /// The neighbour entries of `side` (`ip neigh show` there), for a test's message.
    public func neighbours(_ side: Side) -> String {
        (try? Self.ip(["-n", names[side.rawValue], "neigh", "show"])) ?? "(ip neigh failed)"
    }

    /// The routes of `side` (`ip route show` there, all tables' main), for a test's message.
    public func routes(_ side: Side) -> String {
        (try? Self.ip(["-n", names[side.rawValue], "route", "show"])) ?? "(ip route failed)"
    }

    /// `executable` (an absolute path: a declared program's `ExternalTools.path`, or one of the
    /// package's own) with `arguments`, to run inside `side`'s namespace (`ip netns exec`), not
    /// yet started. Its environment is `ExternalTools.environment()`. End it before the pair
    /// goes: a namespace with a process in it outlives its name.
    public func process(in side: Side, _ executable: String, _ arguments: [String]) throws -> Process {
        try ExternalTools.process("ip", ["netns", "exec", names[side.rawValue], executable] + arguments)
    }

    /// Deletes both namespaces (and so the veth pair). Idempotent; `deinit` calls it.
    public func remove() {
        guard !removed else { return }
        removed = true
        Self.removeStale(names)
    }

    private static func removeStale(_ names: [String]) {
        for name in names where FileManager.default.fileExists(atPath: "/run/netns/" + name) {
            _ = try? ip(["netns", "del", name])
        }
    }

    /// Runs `ip` (iproute2, declared in scripts/packages.list); throws its stderr on failure.
    @discardableResult
    static func ip(_ arguments: [String]) throws -> String {
        let result = try ExternalTools.run("ip", arguments, timeout: 10)
        guard result.status == 0 else {
            throw NamespaceError(
                description: "ip \(arguments.joined(separator: " ")): "
                    + result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return result.stdout
    }
}
