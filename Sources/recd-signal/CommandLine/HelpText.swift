// The `--help` text. It is the reference for scripts and tests: the counter formula, the
// capture file format and the output lines are specified here and nowhere else.

enum HelpText {
    static let text = """
        recd-signal: a JACK client that plays known signals and captures ports, for recd's
        tests, demo and benchmarks (decks, microphones, headphones).

        USAGE
          recd-signal [--server NAME] [--name CLIENT] [--rate-check] COMMAND OPTIONS...

          play    --ports NAME[,NAME...] --signal SIGNAL [--level DBFS] [--seconds S]
                  [--connect DEST[,DEST...]] [--silent-from S --silent-for D]
                  [--envelope STEP[,STEP...]]
          capture --ports NAME[,NAME...] --out FILE [--wav] [--seconds S]
                  [--connect SRC[,SRC...]]
          ports   --ports NAME[,NAME...] [--close-only]
          echo    --ports IN,OUT [--near FILE] [--delay MS] [--gain DB] [--seconds S]
                  [--connect SRC,DEST]

        GLOBAL OPTIONS
          --server NAME   JACK server to use. Default: libjack's default server, which
                          honours JACK_DEFAULT_SERVER. A server is never started.
          --name CLIENT   JACK client name (default recd-signal). If it is taken JACK adds
                          a suffix; the ready line shows the real name.
          --rate-check    Measure the server's real frame rate from 'ready' to the end
                          (JACK frame time against CLOCK_MONOTONIC) and print it to stderr;
                          exit 1 if it is more than 1% off the nominal rate or the nominal
                          rate changed (not judged for runs under 0.5 s).
          -h, --help      This text.

        COMMANDS
          play     Registers OUTPUT ports CLIENT:NAME..., connects port i to DEST i (an
                   empty entry leaves a port unconnected) and plays SIGNAL on them.
                   Without --seconds it runs until SIGTERM/SIGINT.
          capture  Registers INPUT ports, connects SRC i to port i and writes what they
                   receive to FILE (format below) from a writer thread fed by a ring.
                   Without --seconds it runs until SIGTERM/SIGINT.
          ports    Registers INPUT ports and holds them: a device appearing. SIGTERM/SIGINT
                   unregisters them (the device disappearing) and exits. With --close-only
                   it closes the client without unregistering them (jack_client_close alone:
                   how most clients, alsa_in and zita-a2j among them, leave).
          echo     A room in the graph, for echo cancellation: registers INPUT port IN
                   (SRC connects to it: a loudspeaker's feed) and OUTPUT port OUT
                   (connected to DEST: what a microphone hears). OUT carries IN
                   through a fixed room: the direct sound --delay MS later (default
                   30, up to 500) at --gain DB (default -6), reflections 2.9, 6.1,
                   11.7 and 17.3 ms after it at 0.45, -0.3, 0.2 and -0.12 of it, and
                   a sparse tail of 40 taps 20-40 ms after it, 0.1 of it decaying by
                   e every 10 ms (signs from a fixed seed: the same room every run),
                   plus the samples of --near FILE (raw float32 mono, the capture
                   file format, at most 10 minutes at 48 kHz) from the first frame
                   whose input is not silent on: the near end's schedule is the far
                   end's, whenever that starts.

          Options may also be written --opt=VALUE. --seconds S counts audio frames, not
          wall time: S x sample rate frames (rounded), from the first cycle after 'ready'.

        SIGNALS (--signal)
          counter              Position code, exact after 24- and 16-bit quantisation:
                                 k = (7*n + 1013*c) mod 65536
                                 sample = (k - 32768) / 32768
                               n: frame index from the first frame played (0 = the first
                               cycle after 'ready'); c: channel index (0 = first --ports
                               name). As 16-bit PCM the sample is the integer k - 32768.
                               Ignores --level. Recover n mod 65536 from a sample v of
                               channel c (28087 is the inverse of 7 mod 65536):
                                 n = 28087 * (v*32768 + 32768 - 1013*c) mod 65536
                               Without Swift, e.g.:
                                 python3 -c 'n,c=5,1; print(((7*n+1013*c)%65536-32768)/32768)'
                                 awk -v n=5 -v c=1 'BEGIN{print ((7*n+1013*c)%65536-32768)/32768}'
          sine:F[+F...]        Sum of sines at F Hz, each with peak = level, phase 0 at n=0.
          square:F             Square wave at F Hz, +level for the first half period, then
                               -level (not band-limited).
          pink                 Pink noise: Paul Kellet's filter on white noise from a fixed
                               seed per channel (the same samples every run; channels are
                               uncorrelated). RMS = level - 12 dB, so peaks rarely pass level.
          silence              Zeros.
          Frequencies must be below half the server's sample rate.

        OPTIONS
          --level DBFS    Level in dBFS (default -6: peak 0.501 for a sine). Samples are
                          not clipped.
          --silent-from S, --silent-for D
                          play zeros from S seconds of frames for D seconds (counted like
                          --seconds); the signal runs on meanwhile, so it continues where
                          it would have been. For silence alarms.
          --envelope STEP[,STEP...]
                          The level over time, the steps repeated while the signal plays
                          (at most 1024): SECONDS:DB holds a gain of DB (-144...0, relative
                          to --level), SECONDS:DB>DB ramps it linearly in dB, SECONDS:off
                          plays zeros. E.g. gated audio 0.5:0,0.5:off; a fade 4:0,3:0>-60.
                          --silent-from applies after it.
          --out FILE      Capture file. Without --wav: raw interleaved float32
                          little-endian samples, no header; frame i of channel c is at byte
                          offset 4*(i*C + c), C = number of --ports. With --wav: the same
                          samples after a 58-byte WAV header (WAVE_FORMAT_IEEE_FLOAT, 32 bit,
                          fmt + fact + data chunks), sizes filled in at exit.

        OUTPUT
          stdout  One line once active and connected (then nothing else):
                    ready CLIENT:NAME1,CLIENT:NAME2
          stderr  'recd-signal: first-frame-time=T first-frame-usecs=U' when the first
                  frame is played or captured (T: its JACK frame time; U: the start of
                  its cycle on JACK's microsecond clock, jack_get_time: jackd2 reads
                  CLOCK_MONOTONIC_RAW, PipeWire CLOCK_MONOTONIC; two jackds on one
                  machine share it); at exit of play/capture
                  'recd-signal: done frames=N channels=C rate=R xruns=X' (N: frames
                  played, or written to FILE) plus, for capture, 'overruns=O
                  dropped-frames=D' (periods that did not fit in the ring are dropped whole
                  and counted; the file then lacks those D frames). Frame 0 of a capture
                  is the first frame of the first cycle after 'ready': before a source is
                  connected, that is silence.
                  With --rate-check: 'recd-signal: rate-check nominal=R measured=M ...'.

        EXIT STATUS
          0  done (--seconds reached, or SIGTERM/SIGINT)
          1  JACK or I/O error (no server: start one with  jackd -d dummy -r 48000 )
          2  usage error
        """
}
