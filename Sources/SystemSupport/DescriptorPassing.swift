// The client side of passing descriptors to the control server: a request line and the open
// files it names travel in one sendmsg (SCM_RIGHTS).

/// Sends a line with open descriptors over a Unix stream socket, the way
/// `ControlServerHandler.clientSentLine` expects them: the whole line, newline included, in
/// the `sendmsg` that carries the descriptors, so that they arrive with its first byte.
public enum DescriptorPassing {
    /// Most descriptors one line may carry past the kernel; a server may allow fewer
    /// (`ControlServer.Limits.maxDescriptorsPerLine`).
    public static let maxDescriptorsPerMessage = Posix.descriptorSlots

    /// Writes `line` and a newline to `socket`, a connected, blocking Unix stream socket,
    /// passing `descriptors` with its first byte. Blocks until every byte is written.
    ///
    /// The caller keeps its descriptors (the receiver gets its own duplicates of the open
    /// files) and closes them when it likes. `line` must not contain a newline, and
    /// `descriptors` may hold at most `maxDescriptorsPerMessage`.
    public static func sendLine(_ line: String, passing descriptors: [Int32], over socket: Int32)
        throws(SystemError)
    {
        precondition(!line.utf8.contains(UInt8(ascii: "\n")), "a control line must not contain a newline")
        precondition(descriptors.count <= maxDescriptorsPerMessage, "too many descriptors for one line")
        let bytes = Array(line.utf8) + [UInt8(ascii: "\n")]
        var offset = 0
        var passing = descriptors
        while offset < bytes.count {
            // A signal can cut a blocking sendmsg short; the descriptors went with the first
            // part, so the rest follows without them.
            let sent = bytes.withUnsafeBytes { all in
                Result { () throws(SystemError) in
                    try Posix.send(socket, UnsafeRawBufferPointer(rebasing: all[offset...]), passing: passing)
                }
            }
            offset += try sent.get()
            passing = []
        }
    }
}
