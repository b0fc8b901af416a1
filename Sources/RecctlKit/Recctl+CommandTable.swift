// recctl's commands: each one's words, positionals, flags, the values they accept and its
// summary (what --help and the usage lines print, and what the parser checks a command line
// against), and the overview --help opens with.
import SessionPolicy

extension Recctl {
    static let commands: [CommandSpec] = [
        CommandSpec(
            path: ["status"], positionals: [], summary: "daemon, JACK, sessions and recorders at a glance",
            readsState: true),
        CommandSpec(
            path: ["session", "list"], positionals: [], summary: "sessions with effective configuration and state",
            readsState: true),
        CommandSpec(path: ["session", "show"], positionals: ["APP"], summary: "one session in full", readsState: true),
        CommandSpec(
            path: ["session", "set"], positionals: ["APP"],
            valueFlags: [
                "category", "mode", "options", "policy", "mic-usage", "prefers-interruption",
                "prefers-no-system-alerts",
            ],
            summary: "configure category, mode, options, policy (atomic: a rejected call changes nothing)",
            requiredFlags: ["category"], listFlags: ["options"],
            accepts: [
                ("category", Category.allCases.map(\.rawValue).joined(separator: " ")),
                ("mode", Mode.allCases.map(\.rawValue).joined(separator: " ") + " (default: default)"),
                (
                    "options",
                    CategoryOption.allCases.map(\.rawValue).joined(separator: " ") + " (comma- or space-separated)"
                ),
                ("policy", RouteSharingPolicy.allCases.map(\.rawValue).joined(separator: " ") + " (default: default)"),
                ("mic-usage", "text of at most 1024 bytes, why the app records (needed to record)"),
                ("prefers-interruption", "yes|no (on|off): interrupted, rather than paused, when its output goes away"),
                ("prefers-no-system-alerts", "yes|no (on|off): system-alert-class sessions do not interrupt it"),
            ]),
        CommandSpec(path: ["session", "activate"], positionals: ["APP"], summary: "activate (arbitration applies)"),
        CommandSpec(
            path: ["session", "deactivate"], positionals: ["APP"], boolFlags: ["notify-others", "force"],
            summary: "deactivate; --force stops running streams"),
        CommandSpec(
            path: ["session", "prefer"], positionals: ["APP"],
            valueFlags: [
                "input", "sample-rate", "io-buffer", "input-channels", "output-channels", "prefers-no-system-alerts",
                "echo-cancelled-input",
            ], boolFlags: ["clear"],
            summary:
                "hardware preferences (hints; actual values come from JACK) and prefersNoInterruptionsFromSystemAlerts",
            accepts: [
                ("input", "a port name, as `recctl routes` lists them"),
                ("sample-rate", "Hz, e.g. 48000"), ("io-buffer", "seconds, e.g. 0.005"),
                ("input-channels", "a count, e.g. 2"), ("output-channels", "a count, e.g. 2"),
                ("prefers-no-system-alerts", "yes|no (on|off)"),
                ("echo-cancelled-input", "yes|no (on|off): prefersEchoCancelledInput (playAndRecord)"),
            ]),
        CommandSpec(
            path: ["session", "override"], positionals: ["APP", "speaker|none"],
            summary: "override the output to the speaker until the next route change"),
        CommandSpec(
            path: ["session", "remove"], positionals: ["APP"],
            summary: "remove a session and its saved state (owner or administrator); its streams stop"),
        CommandSpec(path: ["session", "delete"], positionals: ["APP"], summary: "the same as session remove"),
        CommandSpec(
            path: ["session", "attach"], positionals: ["APP", "CLIENT"], valueFlags: ["play", "capture"],
            summary: "put an unmodified JACK program's ports under the session (recd routes, gates and ducks them); "
                + "recctl holds the attachment until the program's JACK client goes, or until recctl is stopped",
            listFlags: ["play", "capture"],
            accepts: [
                ("CLIENT", "the program's JACK client name (jack_lsp lists them)"),
                ("play", "the program's output ports, CLIENT:PORT, comma- or space-separated"),
                ("capture", "the program's input ports, CLIENT:PORT, comma- or space-separated"),
            ]),
        CommandSpec(
            path: ["session", "detach"], positionals: ["APP", "CLIENT"], summary: "end an attachment (session.detach)"),
        CommandSpec(
            path: ["permission", "list"], positionals: [], summary: "record permission of every application",
            readsState: true),
        CommandSpec(
            path: ["permission", "request"], positionals: ["APP"],
            summary: "ask for record permission; waits until an administrator decides"),
        CommandSpec(
            path: ["permission", "grant"], positionals: ["APP"], summary: "grant record permission (administrators)"),
        CommandSpec(
            path: ["permission", "deny"], positionals: ["APP"], summary: "deny record permission (administrators)"),
        CommandSpec(
            path: ["permission", "reset"], positionals: ["APP"], summary: "back to undetermined (administrators)"),
        CommandSpec(
            path: ["mute"], positionals: ["APP", "on|off"],
            summary: "app input mute: the session's inputs record zeros",
            accepts: [("on|off", "on, yes, true | off, no, false")]),
        CommandSpec(
            path: ["play"], positionals: ["APP"], optionalPositionals: ["FILE"], valueFlags: ["stream", "to"],
            summary: "play a FLAC or WAV file through the session's output (no FILE: resume)",
            accepts: [("to", "PORT or PORT:CH,CH... (the port's channels, from 1), e.g. pa:1,2")]),
        CommandSpec(
            path: ["pause"], positionals: ["APP"], valueFlags: ["stream"], summary: "pause the session's players"),
        CommandSpec(
            path: ["stop"], positionals: ["APP"], valueFlags: ["stream"], summary: "stop the session's players"),
        CommandSpec(
            path: ["record", "start"], positionals: ["APP"], valueFlags: ["stream", "input", "bus", "trigger", "hold"],
            summary: "record an input to the FLAC archive (needs record permission); --trigger DB [--hold S]: takes "
                + "that start when the level reaches DB",
            accepts: [
                ("input", "a port name, as `recctl routes` lists them (default: the session's input route)"),
                ("bus", "main|cue: a monitoring bus instead of an input"),
                ("trigger", "a level in dBFS, e.g. -30"), ("hold", "seconds, e.g. 2.5"),
            ]),
        CommandSpec(
            path: ["record", "stop"], positionals: ["APP"], valueFlags: ["stream"],
            summary: "stop recording and finish the segment"),
        CommandSpec(
            path: ["archive", "list"], positionals: [], valueFlags: ["app", "since"],
            summary: "archived segments (from the index)", readsState: true,
            accepts: [
                ("app", "an application's name: only its segments (default: all you may read)"),
                ("since", "only segments with audio after this time: " + TimeArgument.forms),
            ]),
        CommandSpec(
            path: ["archive", "verify"], positionals: [], optionalPositionals: ["PATH"],
            summary: "decode and check MD5 of one segment or all"),
        CommandSpec(
            path: ["archive", "reindex"], positionals: [],
            summary: "rebuild the index from the files alone (administrators)"),
        CommandSpec(
            path: ["archive", "key"], positionals: [], valueFlags: ["dir"], boolFlags: ["csr"],
            summary: "the public key the archive's hash chains are signed with (ed25519:HEX), read from the archive; "
                + "--csr: a PKCS#10 certificate request for that key (PEM), for a CA of yours to issue the certificate "
                + "clips' Content Credentials are signed with",
            accepts: [("dir", "the archive's root (default: recd's [archive] dir, asked of recd)")]),
        CommandSpec(
            path: ["archive", "prove"], positionals: [],
            valueFlags: ["app", "stream", "from", "to", "dir", "key", "clip", "heads", "tsa-ca", "report"],
            summary: "check segments against their hash chains and the chains' signatures, as you, by reading the "
                + "archive; names what is missing, altered, renamed, unchained, unsigned, rolled back or unproven, "
                + "and each segment's latest trusted time from the chains' RFC 3161 time-stamps; "
                + "exit 0 only when all holds",
            accepts: [
                ("from", "segments that start at or after this time: " + TimeArgument.forms),
                ("to", "segments that start before this time, as --from"),
                ("dir", "the archive's root or a copy of it (default: recd's [archive] dir, asked of recd)"),
                ("key", "ed25519:HEX or a file holding it (default: the archive's own archive-key.pub)"),
                ("clip", "a clip exported with --proof: checks it against FILE.proof, needing only --key"),
                (
                    "heads",
                    "recd's record of the heads it signed (STATE_DIR/chain-heads, or a copy of it): chains cut short "
                        + "or put back are named (default: recd's own when the archive is asked of recd and you may "
                        + "read it)"
                ),
                (
                    "tsa-ca",
                    "the roots a time-stamp's TSA must chain to (PEM; default: recd's [evidence] tsa_ca_file when the "
                        + "archive is asked of recd, else the system's)"
                ),
                (
                    "report",
                    "also write a one-page HTML report to print and sign (self-contained: no script, nothing fetched): "
                        + "what was checked, when, by whom, the key and TSAs, the stretches that hold and those that "
                        + "do not, the chain heads and their trusted times; written whatever the verdict, replaced "
                        + "whole, never through a link"
                ),
            ]),
        CommandSpec(
            path: ["archive", "export"], positionals: [], valueFlags: ["app", "stream", "from", "to", "output"],
            boolFlags: ["proof", "credentials"],
            summary:
                "one stream from --from to --to as one file; sample-exact, gaps silent and listed in GAPS; only recordings "
                + "you may read; --proof also writes FILE.proof, the signed chain entries the clip was cut from; "
                + "--credentials writes C2PA Content Credentials into a WAV clip, beside a FLAC clip as FILE.c2pa (its "
                + "source, its chain entries and time-stamps, a hash of the file), signed with the archive key's "
                + "certificate",
            requiredFlags: ["app", "from", "output"],
            accepts: [
                ("from", "a time: " + TimeArgument.forms),
                ("to", "a time, as --from (default: now)"),
                ("output", "FILE.flac, FILE.wav, or - (FLAC on standard output)"),
                ("stream", "the stream's name (default: the app's only stream)"),
            ]),
        CommandSpec(
            path: ["archive", "loudness"], positionals: ["FEED"],
            valueFlags: ["date", "from", "to", "target", "tolerance"], boolFlags: ["csv"],
            summary:
                "loudness compliance of FEED (APP/STREAM) for a UTC day or a range: integrated loudness, loudness range, "
                + "maximum true peak, time whose short-term loudness is above the target plus the tolerance; the "
                + "numbers /api/loudness gives (--csv: its CSV, --json: its JSON)",
            accepts: [
                ("date", "YYYY-MM-DD, a UTC day (up to now)"),
                ("from", "a time: " + TimeArgument.forms),
                ("to", "a time, as --from (default: now)"),
                ("target", "LUFS, -60 to 0 (default -23, EBU R128; -24 for ATSC A/85)"),
                ("tolerance", "LU, 0 to 20 (default 1)"),
            ]),
        CommandSpec(
            path: ["web", "user", "add"], positionals: ["NAME"], valueFlags: ["role", "feeds", "group", "file"],
            summary: "add (or replace) a web account; the password from the terminal or standard input, stored as an "
                + "Argon2id hash in recd's accounts file (mode 0600, written as you)",
            requiredFlags: ["role"], listFlags: ["feeds"],
            accepts: [
                ("role", "viewer (states and meters), listener (also hears its granted feeds), admin (everything)"),
                ("feeds", "the feeds a listener may hear, APP/STREAM as `recctl archive list` names them"),
                ("group", "a [web-group NAME] of recd's config whose feeds it may hear (instead of --feeds)"),
                ("file", "the accounts file (default: STATE_DIR/http-users, STATE_DIR asked of recd)"),
            ]),
        CommandSpec(
            path: ["web", "user", "passwd"], positionals: ["NAME"], valueFlags: ["file"],
            summary: "set a web account's password (from the terminal or standard input)",
            accepts: [("file", "the accounts file (default: STATE_DIR/http-users)")]),
        CommandSpec(
            path: ["web", "user", "remove"], positionals: ["NAME"], valueFlags: ["file"],
            summary: "remove a web account (its sessions end at their next request)",
            accepts: [("file", "the accounts file (default: STATE_DIR/http-users)")]),
        CommandSpec(
            path: ["web", "user", "list"], positionals: [], valueFlags: ["file"],
            summary: "the web accounts: name, role, grant",
            accepts: [("file", "the accounts file (default: STATE_DIR/http-users)")]),
        CommandSpec(
            path: ["web", "certificate"], positionals: [], valueFlags: ["file"],
            summary: "the SHA-256 fingerprint of recd's HTTPS certificate, to compare with what a browser shows",
            accepts: [("file", "the certificate (default: STATE_DIR/http-certificate.pem, STATE_DIR asked of recd)")]),
        CommandSpec(
            path: ["cue"], positionals: ["APP"], optionalPositionals: ["outputs|assign|mix|split", "SOURCE|X|on|off"],
            valueFlags: ["main", "cue", "bus", "gain"],
            summary: "main/cue monitoring: outputs --main P --cue P; assign SOURCE --bus main|cue|both|none "
                + "[--gain DB]; mix X; split on|off",
            accepts: [
                ("bus", "main|cue|both|none"), ("gain", "dB, e.g. -6"),
                ("SOURCE|X|on|off", "mix X: 0 (main) to 1 (cue)"),
            ]),
        CommandSpec(
            path: ["meter"], positionals: [], optionalPositionals: ["APP"], boolFlags: ["once"],
            summary: "live peak/RMS in dBFS per channel (--once: one reading)", readsState: true),
        CommandSpec(
            path: ["routes"], positionals: [],
            summary: "ports (type, availability, where their audio comes from, JACK ports) and each session's route",
            readsState: true),
        CommandSpec(
            path: ["watch"], positionals: [], optionalPositionals: ["APP"], summary: "live events, one per line",
            readsState: true),
    ]

    static var overview: String {
        """
        usage: recctl [--socket PATH] [--json] COMMAND ...

        Controls recd, the recording daemon. --socket (or RECD_SOCKET) names the control socket;
        --json prints machine-readable JSON. Exit: 0 ok, 1 refused, 2 usage, 3 recd unreachable.


        """
            + commands.indices.map { index in
                // A blank line before each group of commands (session, permission, ...).
                let startsGroup = index > 0 && commands[index - 1].path[0] != commands[index].path[0]
                return (startsGroup ? "\n" : "") + commands[index].help
            }.joined(separator: "\n")
    }
}
