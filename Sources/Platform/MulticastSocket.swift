// Listening to a multicast group beside another receiver of it (recd's RTP monitor hears the
// streams and announcements PipeWire's module-rtp-source receives, on sockets of its own).

/// A UDP socket's side of a multicast group: opening one, reading its datagrams with the
/// kernel's receive time and their sender. Stateless; the descriptors are the caller's.
public enum MulticastSocket {
    /// A non-blocking, close-on-exec UDP socket that receives `group` (an IPv4 or IPv6 multicast
    /// literal) on `port`, bound to the group's address, joined on `interface` (nil: the kernel
    /// picks by its routes), with SO_REUSEADDR and SO_REUSEPORT so that another receiver bound
    /// there (PipeWire) still gets every datagram. The caller owns the descriptor (close it with
    /// `Descriptor.close`). Throws `invalidArgument` for a group that is not a multicast literal.
    public static func open(group: String, port: UInt16, interface: String? = nil) throws(SystemError) -> Int32 {
        try Syscall.multicastSocket(group, port, interface).orThrow("join multicast \(group) port \(port)")
    }

    /// One waiting datagram: its first `buffer.count` bytes go into `buffer` (the rest of a longer
    /// one is dropped); returns its full size, when the kernel received it (CLOCK_REALTIME
    /// nanoseconds; 0 when the kernel gave no time), who sent it (nil when the kernel did not
    /// say) and `socketDrops`: how many datagrams this socket had dropped, its receive buffer
    /// full, by the time this one came (a count since the socket opened, wrapping at 2^32; the
    /// difference between two datagrams' is what this reader missed between them, whatever the
    /// network did); or nil when none is waiting.
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> (
        size: Int, realtimeNanoseconds: Int64, source: IPAddress?, socketDrops: UInt32
    )? {
        switch Syscall.receiveDatagram(fd, buffer) {
        case .success(let (size, stamp, source, drops)):
            let address = IPAddress(high: source.0, low: source.1)
            return (size, stamp, address.isUnspecified ? nil : address, drops)
        case .failure(.wouldBlock): return nil
        case .failure(let errno): throw SystemError(errno, operation: "recvmsg")
        }
    }
}
