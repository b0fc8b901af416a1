// recctl's command line: global options, a command path, positionals and --flags, checked
// against each command's declaration so usage errors are caught before the daemon is asked.

/// A usage error: exit status 2 with the message and the command's usage.
struct UsageError: Error {
    var message: String
    var usage: String
}

/// What a command accepts.
struct CommandSpec {
    var path: [String]
    var positionals: [String]
    var optionalPositionals: [String] = []
    /// Flags taking a value, e.g. `--category`.
    var valueFlags: [String] = []
    /// Flags without a value, e.g. `--force`.
    var boolFlags: [String] = []
    var summary: String
    var readsState = false
    /// Value flags the command cannot do without: shown without brackets, and a usage error
    /// (exit 2) when missing, before recd is asked.
    var requiredFlags: [String] = []
    /// Value flags that take a list: comma- or space-separated (`--options a,b` = `--options a b`).
    var listFlags: [String] = []
    /// What a flag (`--category`) or positional (`on|off`) accepts: the help's last lines.
    var accepts: [(String, String)] = []

    /// How a value flag is written: `-o FILE` for `--output` (its short form), else `--NAME VALUE`.
    static func flagWords(_ flag: String, list: Bool) -> String {
        if flag == "output" { return "-o FILE" }
        let value = flag.uppercased().replacingOccurrences(of: "-", with: "_")
        return "--\(flag) \(value)" + (list ? "[,\(value)...]" : "")
    }

    /// The usage's words: `recctl`, the path, positionals, required flags, then bracketed options.
    private var usageWords: [String] {
        var parts = ["recctl"] + path + positionals.map { $0 }
        parts += optionalPositionals.map { "[\($0)]" }
        parts += requiredFlags.map { Self.flagWords($0, list: listFlags.contains($0)) }
        parts += valueFlags.filter { !requiredFlags.contains($0) }.map {
            "[\(Self.flagWords($0, list: listFlags.contains($0)))]"
        }
        parts += boolFlags.map { "[--\($0)]" }
        return parts
    }

    /// The usage on one line, however long (for matching and messages that quote it).
    var usage: String { usageWords.joined(separator: " ") }

    /// The usage wrapped at `HelpText.width` (continuation lines indented), then the summary on
    /// lines of its own, indented: how `recctl help CMD` and the overview show a command.
    var help: String {
        var lines = HelpText.wrap(usageWords, indent: "", continuation: "        ")
        lines += HelpText.wrap(summary.split(separator: " ").map(String.init), indent: "    ", continuation: "    ")
        for (name, values) in accepts {
            let term = valueFlags.contains(name) ? (name == "output" ? "-o" : "--" + name) : name
            lines += HelpText.wrap(
                ["\(term):"] + values.split(separator: " ").map(String.init), indent: "      ", continuation: "        ")
        }
        return lines.joined(separator: "\n")
    }
}

/// Help text layout: nothing recctl prints as help is wider than a terminal's 100 columns.
enum HelpText {
    static let width = 100

    /// A usage line's words, keeping each bracketed option (`[--mode MODE]`) one word.
    static func words(of usage: String) -> [String] {
        var words: [String] = []
        var current = ""
        var depth = 0
        for character in usage {
            if character == "[" { depth += 1 }
            if character == "]" { depth = max(0, depth - 1) }
            if character == " " && depth == 0 {
                if !current.isEmpty { words.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// Words filled into lines of at most `width` columns; the first line starts with
    /// `indent`, the rest with `continuation`. A single word longer than a line stands alone.
    static func wrap(_ words: [String], indent: String, continuation: String) -> [String] {
        var lines: [String] = []
        var line = indent
        var lineHasWord = false
        for word in words {
            if lineHasWord && line.count + 1 + word.count > width {
                lines.append(line)
                line = continuation
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        if lineHasWord { lines.append(line) }
        return lines
    }
}

/// A parsed command line.
struct ParsedCommand {
    var spec: CommandSpec
    var positionals: [String]
    var values: [String: String]
    var flags: Set<String>

    func value(_ flag: String) -> String? { values[flag] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// Global options that may stand anywhere on the line.
struct GlobalOptions {
    var socket: String?
    var json = false
    var help = false
}

enum ArgumentParser {
    static func split(_ arguments: [String]) throws -> (GlobalOptions, [String]) {
        var globals = GlobalOptions()
        var rest: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--json": globals.json = true
            case "--help", "-h": globals.help = true
            case "--socket":
                index += 1
                guard index < arguments.count else { throw UsageError(message: "--socket needs a path", usage: "recctl --socket PATH COMMAND") }
                globals.socket = arguments[index]
            default:
                if argument.hasPrefix("--socket=") {
                    globals.socket = String(argument.dropFirst("--socket=".count))
                } else {
                    rest.append(argument)
                }
            }
            index += 1
        }
        return (globals, rest)
    }

    /// Finds the longest command path that matches and parses the rest against it.
    static func parse(_ words: [String], commands: [CommandSpec]) throws -> ParsedCommand {
        let candidates = commands.filter { Array(words.prefix($0.path.count)) == $0.path }
        guard let spec = candidates.max(by: { $0.path.count < $1.path.count }) else {
            let groups = Set(commands.map { $0.path[0] }).sorted().joined(separator: ", ")
            if let first = words.first, commands.contains(where: { $0.path[0] == first }) {
                let subs = commands.filter { $0.path[0] == first }.map { $0.path.dropFirst().joined(separator: " ") }
                throw UsageError(message: "\(first) needs one of: \(subs.joined(separator: ", "))", usage: "recctl \(first) --help")
            }
            throw UsageError(message: words.isEmpty ? "no command given" : "unknown command \(words[0]); commands: \(groups)", usage: "recctl --help")
        }
        var positionals: [String] = []
        var values: [String: String] = [:]
        var flags: Set<String> = []
        var index = spec.path.count
        while index < words.count {
            // `-o FILE` is `--output FILE`, for the commands that write a file.
            let word = words[index] == "-o" && spec.valueFlags.contains("output") ? "--output" : words[index]
            if word.hasPrefix("--") {
                var name = String(word.dropFirst(2))
                var inline: String?
                if let equals = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                if spec.valueFlags.contains(name) {
                    if let inline {
                        values[name] = inline
                    } else {
                        index += 1
                        guard index < words.count else { throw UsageError(message: "--\(name) needs a value", usage: spec.usage) }
                        values[name] = words[index]
                    }
                    // A list goes on over the next words that are not options, once the
                    // positionals are all there (`session set APP --options a b`).
                    if spec.listFlags.contains(name) {
                        var items = [values[name]!]
                        while index + 1 < words.count, !words[index + 1].hasPrefix("-"),
                            positionals.count >= spec.positionals.count
                        {
                            index += 1
                            items.append(words[index])
                        }
                        values[name] = items.joined(separator: ",")
                    }
                } else if spec.boolFlags.contains(name), inline == nil {
                    flags.insert(name)
                } else {
                    throw UsageError(message: "unknown option --\(name) for `\(spec.path.joined(separator: " "))`", usage: spec.usage)
                }
            } else {
                positionals.append(word)
            }
            index += 1
        }
        guard positionals.count >= spec.positionals.count else {
            throw UsageError(message: "missing \(spec.positionals[positionals.count])", usage: spec.usage)
        }
        guard positionals.count <= spec.positionals.count + spec.optionalPositionals.count else {
            throw UsageError(message: "unexpected argument \(positionals[spec.positionals.count + spec.optionalPositionals.count])", usage: spec.usage)
        }
        if let missing = spec.requiredFlags.first(where: { values[$0] == nil }) {
            let written = missing == "output" ? "-o FILE" : "--\(missing)"
            throw UsageError(message: "\(spec.path.joined(separator: " ")) needs \(written)", usage: spec.usage)
        }
        return ParsedCommand(spec: spec, positionals: positionals, values: values, flags: flags)
    }
}
