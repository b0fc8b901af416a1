// The config recd runs with when given none (SPEC §12): the first JACK system capture and
// playback ports as a built-in microphone and a line output, everything else at its default.
// It is INI text read by the same parser as any file, so it cannot drift from the format.

extension ConfigLoader {
    /// The embedded default configuration, as INI text (`recd --check-config` accepts it too).
    /// Socket and state paths are left out on purpose: they follow the user and environment.
    public static let embeddedDefaultText: String = """
        # recd embedded default configuration.
        # Used when recd is started without --config or RECD_CONFIG.
        #
        # Not set here, so they follow the environment. A user's recd (not root, XDG_RUNTIME_DIR
        # set, as in a login session) keeps its places per user; any other the system's:
        #   [daemon] socket    = $XDG_RUNTIME_DIR/recd/control.sock, else /run/recd/control.sock
        #   [daemon] state_dir = $XDG_STATE_HOME/recd (or ~/.local/state/recd), else /var/lib/recd
        #   [archive] dir      = <state_dir>/archive
        #   [http] listen      = off for a user's recd, else 127.0.0.1:9720

        [jack]
        # libjack's default server, so JACK_DEFAULT_SERVER is honoured.
        server = default
        client_name = recd
        # Keep the JACK buffer size whatever sessions prefer.
        allow_buffer_size_changes = no

        [archive]
        # One FLAC segment per hour, aligned to the wall clock.
        segment_seconds = 3600
        compression_level = 5

        [policy]
        # How far duckOthers lowers everybody else.
        duck_level_db = -14

        # The sound card's inputs, as the box's microphone. A pattern does not say how many
        # channels it will match, so channels is given.
        [port mic]
        type = builtInMic
        direction = input
        jack = system:capture_*
        channels = 2

        # The sound card's outputs, as a line output.
        [port out]
        type = lineOut
        direction = output
        jack = system:playback_*
        channels = 2

        # No [session] sections: sessions are created by clients.

        """
}
