// One key case on the wire: camelCase. Version 1 spelled some reply and event keys in
// snake_case; clients that speak version 1 still get those spellings.
//
// The rule (docs/protocol.md, "Versions and key spelling"): recd builds every reply and event
// with camelCase keys; for a client whose latest request carried `"v":1` or no `"v"`, the keys
// in `version1Spellings` are renamed back before the line is sent. Requests accept both
// spellings (`Command.legacyKeys`).
import Foundation

/// Reply and event key spellings by protocol version.
public enum WireKeys {
    /// Version 2's camelCase key → version 1's spelling, for every key that changed.
    public static let version1Spellings: [String: String] = [
        "allOK": "all_ok", "archiveDir": "archive_dir", "autoResume": "auto_resume",
        "clockDriftPpm": "clock_drift_ppm",
        "connectedOrder": "connected_order", "declaredInConfig": "declared_in_config",
        "droppedFrames": "dropped_frames", "duckedBy": "ducked_by", "endReason": "end_reason",
        "framesPlayed": "frames_played", "freeBytes": "free_bytes", "freePercent": "free_percent",
        "holdSeconds": "hold_seconds", "triggerDB": "trigger_db",
        "lastError": "last_error", "lastSuccess": "last_success",
        "gainDB": "gain_db", "ignoredOptions": "ignored_options", "levelDB": "level_db",
        "loudnessLufs": "loudness_lufs", "loudnessRangeLu": "loudness_range_lu", "micUsage": "mic_usage",
        "momentaryLufs": "momentary_lufs",
        "ownerUID": "owner_uid", "pausedBy": "paused_by", "peakDB": "peak_db", "periodFrames": "period_frames",
        "reactionFrames": "reaction_frames", "reactionUs": "reaction_us", "recdPorts": "recd_ports",
        "requestedOptions": "requested_options", "rmsDB": "rms_db", "silentSince": "silent_since",
        "stalledSince": "stalled_since", "stateDir": "state_dir",
        "shortTermLufs": "short_term_lufs", "streamsRunning": "streams_running", "truePeakDbtp": "true_peak_dbtp",
        "windowMs": "window_ms",
    ]

    /// `line` (one JSON object as recd writes it) as a client of `version` should read it.
    /// Keys are renamed where they stand as keys (`"name":`); inside a JSON string a quote is
    /// always escaped, so a string value can never match.
    ///
    /// One pass over the line's bytes, a dictionary lookup per key: a `status` reply renamed
    /// key by key with `replacingOccurrences` took 4 ms while recording (the whole line once per
    /// key in the table), two orders of magnitude more than building it.
    public static func line(_ line: String, forVersion version: Int) -> String {
        guard version < 2 else { return line }
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), colon = UInt8(ascii: ":")
        var line = line
        line.makeContiguousUTF8()
        let renamed: String? = line.utf8.withContiguousStorageIfAvailable { bytes -> String in
            var output: [UInt8] = []
            output.reserveCapacity(bytes.count + 64)
            var index = 0
            while index < bytes.count {
                guard bytes[index] == quote else {
                    output.append(bytes[index])
                    index += 1
                    continue
                }
                // A string: up to its closing quote (an escaped quote does not close it).
                var end = index + 1
                while end < bytes.count && bytes[end] != quote { end += bytes[end] == backslash ? 2 : 1 }
                guard end < bytes.count else {
                    output.append(contentsOf: bytes[index...])
                    break
                }
                if end + 1 < bytes.count, bytes[end + 1] == colon,
                    let snake = version1Spellings[String(decoding: bytes[(index + 1)..<end], as: UTF8.self)]
                {
                    output.append(quote)
                    output.append(contentsOf: snake.utf8)
                    output.append(quote)
                } else {
                    output.append(contentsOf: bytes[index...end])
                }
                index = end + 1
            }
            return String(decoding: output, as: UTF8.self)
        }
        return renamed ?? line  // contiguous after makeContiguousUTF8: always renamed
    }
}
