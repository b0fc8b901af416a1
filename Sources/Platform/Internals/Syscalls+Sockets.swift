// Syscall: Unix and multicast sockets, addresses, descriptor passing and peer credentials.
// The folder's rules are at the top of Syscalls.swift.
internal import CLinux
import Glibc

extension Syscall {
    /// `socket(AF_UNIX, SOCK_STREAM or SOCK_DGRAM | SOCK_CLOEXEC [| SOCK_NONBLOCK], 0)`. The
    /// caller owns the returned descriptor.
    static func unixSocket(datagram: Bool, nonBlocking: Bool) -> Result<Int32, Errno> {
        var type = Int32(datagram ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        return valueOrErrno(Glibc.socket(AF_UNIX, type, 0))
    }

    /// A UDP socket joined to the multicast `group` on `port` beside other receivers
    /// (`recd_multicast_socket`: SO_REUSEADDR/SO_REUSEPORT, bound to the group, SO_TIMESTAMPNS,
    /// non-blocking, close-on-exec). The caller owns the returned descriptor.
    static func multicastSocket(_ group: String, _ port: UInt16, _ interface: String?) -> Result<Int32, Errno> {
        valueOrErrno(recd_multicast_socket(group, port, interface))
    }

    /// One datagram's first `buffer.count` bytes (`recd_receive_datagram`, MSG_DONTWAIT): its
    /// full size, the kernel's receive time (CLOCK_REALTIME ns, 0: none), its sender's address
    /// as two big-endian words of IPv6 (IPv4 mapped; zeros: none) and the datagrams the socket had
    /// dropped by the time it was queued (SO_RXQ_OVFL).
    static func receiveDatagram(
        _ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer
    ) -> Result<(Int, Int64, (UInt64, UInt64), UInt32), Errno> {
        var stamp: Int64 = 0
        var drops: UInt32 = 0
        var source = [UInt8](repeating: 0, count: 16)
        return retryingOnInterrupt {
            valueOrErrno(recd_receive_datagram(fd, buffer.baseAddress, buffer.count, &stamp, &source, &drops)).map {
                (Int($0), stamp, addressWords(source), drops)
            }
        }
    }

    /// 16 bytes of an IPv6 address (`source[0..<16]`) as two big-endian words.
    private static func addressWords(_ bytes: [UInt8]) -> (UInt64, UInt64) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
        return (high, low)
    }

    /// `inet_pton(3)` of an IPv4 dotted quad, else an IPv6 literal, as two big-endian words of
    /// IPv6 (IPv4 mapped); nil for text that is neither (or longer than an address can be, or
    /// holding a NUL).
    static func parseAddress(_ text: String) -> (UInt64, UInt64)? {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count < Int(INET6_ADDRSTRLEN), !utf8.contains(0) else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return (0, 0xFFFF_0000_0000 | UInt64(UInt32(bigEndian: v4.s_addr)))
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        return addressWords(withUnsafeBytes(of: &v6) { Array($0) })
    }

    /// `inet_ntop(3)`: an IPv4-mapped address as a dotted quad, another as IPv6 text.
    static func formatAddress(_ high: UInt64, _ low: UInt64) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if high == 0, low >> 32 == 0xFFFF {
            var v4 = in_addr(s_addr: UInt32(truncatingIfNeeded: low).bigEndian)
            _ = inet_ntop(AF_INET, &v4, &text, socklen_t(text.count))
        } else {
            var bytes = [UInt8](repeating: 0, count: 16)
            for index in 0..<8 {
                bytes[index] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * index))
                bytes[8 + index] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * index))
            }
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
            _ = inet_ntop(AF_INET6, &v6, &text, socklen_t(text.count))
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `SOCK_STREAM`.
    static let streamSocketType = Int32(SOCK_STREAM.rawValue)

    /// Longest `sun_path` accepted, leaving room for the terminating NUL.
    static let maxUnixPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Runs `body` with a `sockaddr_un` for `path`; `ENAMETOOLONG` for a path that does not fit
    /// (or is empty, or holds a NUL).
    private static func withUnixAddress<R>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result<R, Errno>
    ) -> Result<R, Errno> {
        let bytes = Array(path.utf8)
        if bytes.count > maxUnixPathBytes || bytes.isEmpty || bytes.contains(0) { return .failure(.nameTooLong) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// `bind(2)` to a file system path.
    static func bind(_ fd: Int32, _ path: String) -> Result<Void, Errno> {
        withUnixAddress(path) { nothingOrErrno(Glibc.bind(fd, $0, $1)) }
    }

    /// `connect(2)` to a file system path.
    static func connect(_ fd: Int32, _ path: String) -> Result<Void, Errno> {
        withUnixAddress(path) { address, length in
            retryingOnInterrupt { nothingOrErrno(Glibc.connect(fd, address, length)) }
        }
    }

    /// `listen(2)`.
    static func listen(_ fd: Int32, _ backlog: Int32) -> Result<Void, Errno> {
        nothingOrErrno(Glibc.listen(fd, backlog))
    }

    /// `accept(2)`. The caller owns the returned descriptor.
    static func accept(_ fd: Int32) -> Result<Int32, Errno> {
        retryingOnInterrupt { valueOrErrno(Glibc.accept(fd, nil, nil)) }
    }

    /// `send(2)`.
    static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, _ flags: Int32) -> Result<Int, Errno> {
        retryingOnInterrupt { valueOrErrno(Glibc.send(fd, bytes.baseAddress, bytes.count, flags)) }
    }

    /// `MSG_NOSIGNAL | MSG_DONTWAIT`.
    static let sendFlagsNonBlocking = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
    /// `MSG_NOSIGNAL`.
    static let sendFlagsBlocking = Int32(MSG_NOSIGNAL)

    /// Most descriptors one `receiveWithDescriptors` takes in (the CLinux shim's buffer).
    static let descriptorSlots = Int(RECD_DESCRIPTOR_SLOTS)

    /// `recvmsg(2)` with `MSG_CMSG_CLOEXEC | MSG_DONTWAIT`: bytes into `buffer`, the descriptors
    /// of SCM_RIGHTS messages into `slots` (`descriptorSlots` of them; their number in
    /// `received`), `truncated` set for `MSG_CTRUNC`. The caller owns the received descriptors.
    static func receiveWithDescriptors(
        _ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ slots: UnsafeMutablePointer<Int32>,
        _ received: inout Int32, _ truncated: inout Int32
    ) -> Result<Int, Errno> {
        retryingOnInterrupt {
            valueOrErrno(
                recd_receive_with_descriptors(
                    fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), slots, &received, &truncated))
        }
    }

    /// `sendmsg(2)` of `bytes` with `descriptors` as one SCM_RIGHTS message, `MSG_NOSIGNAL`,
    /// blocking. The caller keeps its descriptors.
    static func sendWithDescriptors(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, _ descriptors: [Int32])
        -> Result<Int, Errno>
    {
        retryingOnInterrupt {
            descriptors.withUnsafeBufferPointer { passed in
                valueOrErrno(
                    recd_send_with_descriptors(
                        fd, bytes.baseAddress, bytes.count, passed.baseAddress, Int32(passed.count),
                        Int32(MSG_NOSIGNAL)))
            }
        }
    }

    /// `getsockopt(SO_PEERCRED)`: pid, uid, gid.
    static func peerCredentials(_ fd: Int32) -> Result<(pid: Int32, uid: UInt32, gid: UInt32), Errno> {
        // `struct ucred`, which the toolchain's Glibc exposes only under _GNU_SOURCE; its layout
        // (pid_t, uid_t, gid_t) is Linux ABI.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        return nothingOrErrno(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length)).map { credentials }
    }

    /// `getsockopt(SO_PEERGROUPS)` into `groups`; `length` in bytes, in and out (`ERANGE`
    /// reports the size needed there).
    static func peerGroups(_ fd: Int32, _ groups: inout [UInt32], _ length: inout socklen_t) -> Result<Void, Errno> {
        groups.withUnsafeMutableBytes {
            nothingOrErrno(getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, $0.baseAddress, &length))
        }
    }
}
