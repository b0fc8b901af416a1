/// A group of recd's own JACK ports that stands for one configured port (SPEC §4, §12): recd
/// registers `<name>_1 ... <name>_<channels>` and connects them to the system ports behind it.
///
/// For an input group the ports in `connectTo` are JACK *outputs* (e.g. `system:capture_1`)
/// connected to recd's inputs; for an output group they are JACK *inputs* (e.g.
/// `system:playback_1`) that recd's outputs connect to. Channel *n* goes to the *n*-th port
/// that `connectTo` resolves to. An entry is an exact port name or a shell-style pattern
/// (`*`, `?`, `[...]`, matched against the whole name), whose matches are taken in natural
/// order (`capture_2` before `capture_10`).
public struct PortGroupSpec: Equatable, Hashable, Sendable {
    /// Port name prefix; unique among all groups of the engine.
    public var name: String
    public var channels: Int
    /// The JACK ports behind this group, in channel order. Empty: nothing to connect, and the
    /// group is always available.
    public var connectTo: [String]

    public init(name: String, channels: Int, connectTo: [String] = []) {
        self.name = name
        self.channels = channels
        self.connectTo = connectTo
    }

    /// recd's own short port name for `channel` (0-based), e.g. `mic_1`.
    public func portName(channel: Int) -> String { "\(name)_\(channel + 1)" }
}

/// Which way audio flows through a group, seen from recd.
public enum GroupDirection: String, Sendable, Hashable {
    /// recd reads from it (capture).
    case input
    /// recd writes to it (playback).
    case output
    /// A monitoring bus (main or cue): no JACK ports of its own; appears in meter readings.
    case bus
}

enum PortPattern {
    /// Whether `entry` uses pattern characters (otherwise it is an exact port name).
    static func isPattern(_ entry: String) -> Bool {
        entry.contains { "*?[".contains($0) }
    }

    /// The anchored POSIX extended regular expression (what jack_get_ports takes) for a
    /// shell-style pattern.
    static func regularExpression(forGlob glob: String) -> String {
        var result = "^"
        var inBracket = false
        for character in glob {
            if inBracket {
                result.append(character)
                if character == "]" { inBracket = false }
                continue
            }
            switch character {
            case "*": result += ".*"
            case "?": result += "."
            case "[":
                result.append(character)
                inBracket = true
            case ".", "^", "$", "+", "(", ")", "{", "}", "|", "\\":
                result += "\\" + String(character)
            default: result.append(character)
            }
        }
        return result + "$"
    }

    /// Orders names so that digit runs compare by value: `capture_2` < `capture_10`.
    static func naturallyOrdered(_ lhs: String, _ rhs: String) -> Bool {
        var left = lhs.unicodeScalars.makeIterator()
        var right = rhs.unicodeScalars.makeIterator()
        var leftScalar = left.next()
        var rightScalar = right.next()
        while let l = leftScalar, let r = rightScalar {
            if l.properties.numericType == .decimal, r.properties.numericType == .decimal {
                var leftNumber = ""
                var rightNumber = ""
                while let scalar = leftScalar, scalar.properties.numericType == .decimal {
                    leftNumber.unicodeScalars.append(scalar)
                    leftScalar = left.next()
                }
                while let scalar = rightScalar, scalar.properties.numericType == .decimal {
                    rightNumber.unicodeScalars.append(scalar)
                    rightScalar = right.next()
                }
                let leftTrimmed = leftNumber.drop { $0 == "0" }
                let rightTrimmed = rightNumber.drop { $0 == "0" }
                if leftTrimmed.count != rightTrimmed.count {
                    return leftTrimmed.count < rightTrimmed.count
                }
                if leftTrimmed != rightTrimmed { return leftTrimmed < rightTrimmed }
                continue
            }
            if l != r { return l.value < r.value }
            leftScalar = left.next()
            rightScalar = right.next()
        }
        return leftScalar == nil && rightScalar != nil
    }
}
