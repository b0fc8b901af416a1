// Getting a listening socket: bind our own, or take the one systemd passed (socket activation).
import Platform

extension ControlServer {
    /// Why `bindListener` could not provide a socket.
    public enum ListenerError: Error, Sendable, Equatable, CustomStringConvertible {
        /// A live process (another recd) accepts connections on the path.
        case alreadyRunning(path: String)
        /// Something that is not a socket is in the way; we do not delete it.
        case notASocket(path: String)
        /// A system call failed (`ENAMETOOLONG` for a path over 107 bytes, `EACCES`, ...).
        case system(SystemError)

        public var description: String {
            switch self {
            case .alreadyRunning(let path): "another recd is running at \(path)"
            case .notASocket(let path): "\(path) exists and is not a socket"
            case .system(let error): error.description
            }
        }
    }

    /// Creates a listening Unix stream socket at `path` and returns its descriptor, which the
    /// caller owns (hand it to `ControlServer.init`). Call before the control loop runs.
    ///
    /// Missing parent directories are created with mode 0755. A socket file left behind by a
    /// dead daemon is replaced; one that a live process answers on is not (`.alreadyRunning`).
    /// The socket gets `mode` (default 0660: owner and group may connect). The caller removes
    /// the socket file at shutdown if it wants to.
    public static func bindListener(path: String, mode: UInt32 = 0o660) throws(ListenerError) -> Int32 {
        let occupant: PathOccupant
        do {
            try makeParentDirectories(of: path)
            occupant = try clearStaleSocket(at: path)
        } catch {
            throw .system(error)
        }
        switch occupant {
        case .nothing: break
        case .liveListener: throw .alreadyRunning(path: path)
        case .notASocket: throw .notASocket(path: path)
        }
        do {
            return try createListener(at: path, mode: mode)
        } catch {
            throw .system(error)
        }
    }

    private enum PathOccupant {
        case nothing, liveListener, notASocket
    }

    /// Removes a socket file nobody listens on; reports what else is in the way.
    private static func clearStaleSocket(at path: String) throws(SystemError) -> PathOccupant {
        switch try FileSystem.kind(of: path) {
        case nil:
            return .nothing
        case .regular, .directory, .symbolicLink, .other:
            return .notASocket
        case .socket:
            let probe = try UnixSocket.make(nonBlocking: true)
            defer { Descriptor.close(probe) }
            switch try UnixSocket.probeConnect(probe, path: path) {
            case .connected:
                return .liveListener
            case .refused:
                try FileSystem.removeIfPresent(path)
                return .nothing
            case .missing:
                return .nothing
            }
        }
    }

    private static func createListener(at path: String, mode: UInt32) throws(SystemError) -> Int32 {
        let fd = try UnixSocket.make(nonBlocking: true)
        do throws(SystemError) {
            try UnixSocket.bind(fd, path: path)
        } catch {
            Descriptor.close(fd)
            throw error
        }
        do throws(SystemError) {
            // Before listen: nobody can connect while the mode is still the umask's.
            try FileSystem.changeMode(path, mode: mode)
            try UnixSocket.listen(fd, backlog: 128, path: path)
        } catch {
            Descriptor.close(fd)
            try? FileSystem.removeIfPresent(path)
            throw error
        }
        return fd
    }

    /// The control socket systemd passed us (`recd.socket`, `LISTEN_FDS`), or nil when the
    /// daemon was not socket-activated. The caller owns the returned descriptor.
    ///
    /// Uses `sd_listen_fds(1)`, which also clears `LISTEN_FDS`/`LISTEN_PID` so that child
    /// processes do not inherit them. The first passed descriptor (`SD_LISTEN_FDS_START`)
    /// must be a listening Unix stream socket; anything else is logged and ignored.
    public static func listenerFromSystemd() -> Int32? {
        let count: Int
        do {
            count = try Systemd.listenFDCount()
        } catch {
            Log.warning("control: \(error)")
            return nil
        }
        guard count > 0 else { return nil }
        if count > 1 {
            Log.warning("control: systemd passed \(count) sockets; using the first")
        }
        let fd = Systemd.firstListenFD
        guard (try? Systemd.isListeningUnixStreamSocket(fd)) == true else {
            Log.error("control: the socket systemd passed (fd \(fd)) is not a listening Unix stream socket")
            return nil
        }
        return fd
    }

    /// `mkdir -p` of `path`'s parent, new directories with mode 0755.
    private static func makeParentDirectories(of path: String) throws(SystemError) {
        guard let slash = path.lastIndex(of: "/") else { return }
        let parent = String(path[..<slash])
        if parent.isEmpty { return }
        if try FileSystem.kind(of: parent) == .directory { return }
        try FileSystem.makeDirectories(parent, mode: 0o755)
    }
}
