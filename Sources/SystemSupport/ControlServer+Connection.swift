// One client of the control server as the control thread keeps it: its descriptor, owner,
// line assembler, output buffer and how it is winding down, and the descriptors it passed.
import Platform

extension ControlServer {
    /// One client connection. Control thread only.
    final class Connection {
        enum Closing { case afterFlush, now }

        let id: ClientID
        /// Owned by the connection's entry in `connections`; closed in `finish`.
        let fd: Int32
        /// The peer's uid, and whether user limits spare it: whose budget it counts against.
        let owner: ClientLedger.Owner
        /// Queued output bytes as the ledger has them (`account`).
        var accountedBytes = 0
        var input: LineAssembler
        var output = OutputBuffer()
        /// Whether to poll for and deliver input.
        var reading = true
        /// The peer shut down its sending side; close once output is flushed.
        var peerFinishedSending = false
        var closing: Closing?
        /// Why `send` cut it off (its queue, or its uid's, or everyone's, grew past its limit):
        /// its output is discarded at once, and it is rejected at the next `service()`.
        var overflowed: ClientRejection?
        /// `clientRejected` was called.
        var rejected = false
        /// A read or write failed (peer gone); close at the next `service()`.
        var failed = false
        /// When the unterminated line now buffered began.
        var incompleteLineSince: Double?
        /// Last time a closing or half-closed client took some of its output.
        var lastDrainProgress: Double = 0
        /// Descriptors received and not yet delivered with their line, in arrival order. Owned
        /// here until `takePassedDescriptors` moves them into a `PassedDescriptors`.
        var passed: [PassedBatch] = []

        init(id: ClientID, fd: Int32, owner: ClientLedger.Owner, maxLineBytes: Int) {
            self.id = id
            self.fd = fd
            self.owner = owner
            self.input = LineAssembler(maxLineBytes: maxLineBytes)
        }

        /// Closes every descriptor still waiting for its line.
        func closePassedDescriptors() {
            for batch in passed {
                for descriptor in batch.descriptors { Descriptor.close(descriptor) }
            }
            passed.removeAll()
        }

        var acceptsOutput: Bool { closing == nil && overflowed == nil && !rejected && !failed }
        var acceptsInput: Bool { reading && acceptsOutput }
        var isWindingDown: Bool { closing != nil || peerFinishedSending }
    }

    /// Descriptors from one `recvmsg`, and where in the client's byte stream they belong.
    struct PassedBatch {
        /// Stream position of the last byte that `recvmsg` read. The `sendmsg` that carried
        /// the descriptors began in that read, and the read ended inside that `sendmsg`'s
        /// bytes: with one line per `sendmsg`, this byte lies in the line they came with.
        var lastByte: Int
        var descriptors: [Int32]
        /// Too many arrived (or the kernel truncated them): they were closed, and the line
        /// they belong to is delivered with `PassedDescriptors.refused`.
        var refused: Bool
    }
}
