// The entry points: read a config file, parse config text, or take the embedded default.
// Defaults that depend on the user (socket and state paths) come from the environment given,
// never from the process's own, so callers and tests decide what the loader sees.

import Platform

/// Loads recd's configuration (SPEC §12). Stateless; safe to call from any thread.
public enum ConfigLoader {
    /// The `source` of the embedded default config.
    public static let embeddedDefaultSource = "<embedded default>"
    /// Config files larger than this are refused: a config is a page of text.
    public static let maxFileBytes = 1 << 20

    /// Reads and parses the config file at `path`. Socket and state paths missing from the file
    /// default from `environment` (XDG_RUNTIME_DIR, XDG_STATE_HOME, HOME) and from whether the
    /// process runs as root.
    ///
    /// - Throws: `ConfigError` naming `path`: unreadable file (line 0), or the first problem
    ///   in the file with its line.
    public static func load(path: String, environment: [String: String]) throws(ConfigError)
        -> RecdConfig
    {
        let bytes = try ConfigFile.contents(path: path, limit: maxFileBytes)
        return try parse(
            bytes: bytes, source: path, environment: environment, isRoot: ConfigFile.isRoot)
    }

    /// Parses config text; `source` names it in errors and in `RecdConfig.source`.
    /// Whether the process is root is taken from getuid().
    public static func parse(text: String, source: String, environment: [String: String])
        throws(ConfigError)
        -> RecdConfig
    {
        try parse(text: text, source: source, environment: environment, isRoot: ConfigFile.isRoot)
    }

    /// Parses config text as if running as root (`isRoot`) or not: root gets system paths
    /// (/run/recd, /var/lib/recd), other users their XDG directories.
    public static func parse(
        text: String, source: String, environment: [String: String], isRoot: Bool
    ) throws(ConfigError) -> RecdConfig {
        try parse(bytes: Array(text.utf8), source: source, environment: environment, isRoot: isRoot)
    }

    /// The config recd runs with when given none: `embeddedDefaultText` with paths from
    /// `environment` and `isRoot`.
    public static func embeddedDefault(environment: [String: String], isRoot: Bool) -> RecdConfig {
        do {
            return try parse(
                text: embeddedDefaultText, source: embeddedDefaultSource, environment: environment,
                isRoot: isRoot)
        } catch {
            // The text is a constant checked by the tests: failing here is a bug, not input.
            preconditionFailure("the embedded default config does not parse: \(error)")
        }
    }

    static func parse(
        bytes: [UInt8], source: String, environment: [String: String], isRoot: Bool
    ) throws(ConfigError) -> RecdConfig {
        // INI syntax first: with a broken line, what follows from the sections would mislead.
        let (sections, syntaxIssues) = ConfigINI.scan(bytes)
        if let issue = syntaxIssues.first {
            throw ConfigError(file: source, line: issue.line, message: issue.message)
        }
        var interpreter = ConfigInterpreter(environment: environment, isRoot: isRoot)
        guard let config = interpreter.interpret(sections, source: source) else {
            let issue = interpreter.issues.first ?? ConfigIssue(line: 0, message: "invalid config")
            throw ConfigError(file: source, line: issue.line, message: issue.message)
        }
        return config
    }
}

/// Defaults for keys the config leaves out.
enum ConfigDefaults {
    /// sockaddr_un's sun_path holds 108 bytes, NUL included.
    static let maxSocketPathBytes = 107
    /// jack_client_name_size() is 64, NUL included.
    static let maxJackClientNameBytes = 63

    /// Platform's `DefaultPlaces`: a user's recd (not root, XDG_RUNTIME_DIR set) keeps its
    /// socket in the runtime directory, any other /run/recd's.
    static func socket(environment: [String: String], isRoot: Bool) -> String {
        DefaultPlaces.socket(environment: environment, isRoot: isRoot)
    }

    /// Platform's `DefaultPlaces`: a user's recd keeps its state in `$XDG_STATE_HOME/recd` or
    /// `~/.local/state/recd`, any other in /var/lib/recd.
    static func stateDir(environment: [String: String], isRoot: Bool) -> String {
        DefaultPlaces.stateDir(environment: environment, isRoot: isRoot)
    }

    static func archiveDir(stateDir: String) -> String {
        stateDir.hasSuffix("/") ? stateDir + "archive" : stateDir + "/archive"
    }

    /// `[http] listen` when the config leaves it out: 127.0.0.1:9720, but off for a user's
    /// recd (its owner asks for a listener; port 9720 is the system recd's).
    static func listen(environment: [String: String], isRoot: Bool) -> String? {
        DefaultPlaces.isPerUser(environment: environment, isRoot: isRoot) ? nil : HTTPSection.defaultListen
    }
}

/// The system side of loading: reading the file and asking who we are.
enum ConfigFile {
    static var isRoot: Bool { CurrentProcess.isRoot }

    /// The whole file at `path`, at most `limit` bytes.
    static func contents(path: String, limit: Int) throws(ConfigError) -> [UInt8] {
        func failure(_ error: SystemError) -> ConfigError {
            ConfigError(
                file: path, line: 0,
                message: "cannot read config file: \(error.operation): \(describe(error.errno))")
        }
        let file: OwnedFile
        let kind: FileKind
        do throws(SystemError) {
            // Non-blocking: opening a FIFO for reading would wait for a writer for ever; the
            // flag changes nothing for the regular file read below.
            file = try OwnedFile(path, .readOnlyNonBlocking)
            kind = try file.status().kind
        } catch {
            throw failure(error)
        }
        if kind != .regular {
            let what = kind == .directory ? "a directory" : "not a regular file (a FIFO, device or socket)"
            throw ConfigError(
                file: path, line: 0,
                message: "cannot read config file: it is \(what); give the path of a regular file")
        }
        do throws(SystemError) {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = try chunk.withUnsafeMutableBytes { buffer in
                    Result { () throws(SystemError) in
                        try file.read(into: buffer.baseAddress!, count: buffer.count)
                    }
                }.get()
                if count == 0 { return bytes }
                bytes += chunk[0..<count]
                if bytes.count > limit { break }
            }
        } catch {
            throw failure(error)
        }
        throw ConfigError(
            file: path, line: 0,
            message: "cannot read config file: it is larger than \(limit) bytes; is it the right file?")
    }

    /// "No such file or directory (ENOENT)"-style text for an errno value.
    static func describe(_ errno: Errno) -> String {
        let named: Set<Errno> = [
            .noSuchFileOrDirectory, .permissionDenied, .isDirectory, .notDirectory, .tooManySymbolicLinks, .ioError,
            .nameTooLong, .notPermitted,
        ]
        return named.contains(errno) ? "\(errno.text) (\(errno.name))" : errno.text
    }
}
