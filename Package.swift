// swift-tools-version:6.0
// recd: a headless multi-route recording appliance on JACK.
// Dependencies point inward: executables → backends → ControlProtocol → SessionPolicy.
import PackageDescription

/// `-O` for a debug build's target (a release build is optimized anyway).
let optimizedInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

/// SampleKernelsAVX2's code generation: x86-64-v3 (AVX2, FMA, …) on x86-64 (Swift takes the
/// target's CPU from Clang's `-march`); elsewhere the baseline, and `Processor.runsX86_64v3` is
/// false. No FMA contraction either way: both builds round alike.
#if arch(x86_64)
let x86_64v3: [SwiftSetting] = [.unsafeFlags(["-Xcc", "-march=x86-64-v3"])]
#else
let x86_64v3: [SwiftSetting] = []
#endif

let package = Package(
    name: "recd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "recd", targets: ["recd"]),
        .executable(name: "recctl", targets: ["recctl"]),
        .executable(name: "recd-signal", targets: ["recd-signal"]),
        // What Swift applications link. C applications link libaudiosession.so, a C library
        // (libaudiosession/, built by scripts/build-libaudiosession: docs/audiosession.md).
        .library(name: "AudioSession", targets: ["AudioSession"]),
        .executable(name: "audiosession-tone", targets: ["audiosession-tone"]),
        .executable(name: "audiosession-record", targets: ["audiosession-record"]),
    ],
    targets: [
        // One system-library target per C library, each with a shim header.
        .systemLibrary(name: "CJack", pkgConfig: "jack", providers: [.apt(["libjack-jackd2-dev"])]),
        .systemLibrary(name: "CFLAC", pkgConfig: "flac", providers: [.apt(["libflac-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CInih", pkgConfig: "inih", providers: [.apt(["libinih-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        // Linux calls glibc declares only under _GNU_SOURCE (fallocate, renameat2, thread names).
        .systemLibrary(name: "CLinux"),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSndfile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CEbur128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),
        // libsodium: SHA-256 and Ed25519 for the archive's hash chains and signatures (ArchiveProof only).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // OpenSSL's libcrypto: X.509 certificates (PKI only).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // libcurl: the HTTP(S) queries to time-stamping authorities (PKI only).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // SpeexDSP's echo canceller and preprocessor (VoiceProcessing only).
        .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp", providers: [.apt(["libspeexdsp-dev"])]),
        // WebRTC's audio processing module (libwebrtc-audio-processing-dev) is C++: a system-library
        // target cannot hold the extern "C" shim that compiles against it, so this is a C++ target
        // with the flags `pkg-config --cflags --libs webrtc-audio-processing` gives on Debian 12.
        // Imported by VoiceProcessing only.
        .target(
            name: "CWebRTCAudioProcessing",
            cxxSettings: [
                .define("WEBRTC_AUDIO_PROCESSING_ONLY_BUILD"), .define("WEBRTC_POSIX"),
                .unsafeFlags(["-I/usr/include/webrtc_audio_processing"]),
            ],
            linkerSettings: [.linkedLibrary("webrtc_audio_processing")]),

        // The one platform layer: threads, errno and system errors, descriptors, clocks,
        // directories, eventfd/signalfd. The only importer of CLinux.
        .target(name: "Platform", dependencies: ["CLinux"]),

        // The pure policy core: no C, no I/O.
        .target(name: "SessionPolicy"),
        // Wire types and JSON-lines coding shared by recd and recctl.
        .target(name: "ControlProtocol", dependencies: ["SessionPolicy"]),
        // Config (libinih), sockets with peer credentials, atomic files, logging, sd_notify.
        .target(name: "SystemSupport", dependencies: ["Platform", "SessionPolicy", "CInih", "CSystemd"]),
        // The JACK client and the real-time graph (Sources/AudioEngine/RealTime holds the process path).
        .target(name: "AudioEngine", dependencies: ["Platform", "CJack"]),
        // The one codec layer: the FLAC encoder (crash-safe sink features), decoder and metadata
        // reader (libFLAC), WAV (libsndfile), resampling and the HFP band limit (libsoxr),
        // EBU R128 loudness (libebur128).
        // Optimized in debug builds too: its signal processing (loudness, resampling checks) is
        // what the test run spends most of its CPU on, at a tenth of the speed unoptimized.
        .target(
            name: "Codec",
            dependencies: ["Platform", "CFLAC", "CSndfile", "CSoxr", "CEbur128", "SampleKernels", "SampleKernelsAVX2"],
            swiftSettings: optimizedInDebug),
        // The walks every sample of every channel passes through (the K-weighting filters of a
        // lane group), written once as @inlinable code and built twice: for the baseline CPU here
        // and for x86-64-v3 in SampleKernelsAVX2; Codec picks one at start (Processor).
        .target(name: "SampleKernels", swiftSettings: optimizedInDebug),
        .target(name: "SampleKernelsAVX2", dependencies: ["SampleKernels"], swiftSettings: optimizedInDebug + x86_64v3),
        // Voice processing for voiceChat/videoChat capture: echo cancellation against a far-end
        // reference (SpeexDSP's canceller through CSpeexDSP), noise suppression and gain control
        // (WebRTC's module through CWebRTCAudioProcessing), in blocks of any size at a fixed added
        // latency. No JACK: it runs on a worker thread.
        .target(
            name: "VoiceProcessing", dependencies: ["CWebRTCAudioProcessing", "CSpeexDSP"],
            swiftSettings: optimizedInDebug),
        // The FLAC archive: crash-safe segments, rotation, recovery, retention, the SQLite index.
        .target(name: "Archive", dependencies: ["Platform", "Codec", "SampleKernels", "CSQLite", "SessionPolicy", "ArchiveProof"]),
        // The archive's proof: SHA-256 hash chains per stream per day, the box's Ed25519 key, and
        // checking them (libsodium). No FLAC: recctl proves an archive with it, as its caller.
        .target(name: "ArchiveProof", dependencies: ["Platform", "CSodium"]),
        // X.509 certificates (OpenSSL): the HTTP listener's self-signed certificate and fingerprints;
        // RFC 3161 time-stamps of the chains (OpenSSL's TS API, asked over HTTP with libcurl).
        .target(name: "PKI", dependencies: ["Platform", "COpenSSL", "CCurl"]),
        // The archive's proof as evidence a person reads: its time-stamp tokens checked (PKI) and the
        // one-page report to print and sign. recctl writes it to a file, the console answers it.
        .target(name: "ArchiveEvidence", dependencies: ["ArchiveProof", "PKI", "Platform"]),
        // C2PA Content Credentials in pure Swift: CBOR, COSE_Sign1, JUMBF, a manifest store and where
        // it goes in a WAV. No key and no hash of its own: the caller signs and hashes.
        .target(name: "ContentCredentials"),
        // ALSA: card discovery, jack-sense and capture-switch events (libasound's control API).
        .target(name: "Devices", dependencies: ["Platform", "CALSA"]),
        // The HTTP listener (libmicrohttpd): read-only routes, loopback or a bearer token, limits.
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD"]),
        // Audio from the network: the RTP, SAP and SDP parsers, pw-dump's reading, and the RTP
        // monitor (its decisions pure, its sockets on its own thread).
        .target(name: "NetworkAudio", dependencies: ["Platform"]),
        // The daemon's control loop: requests → policy → effects, persistence, events.
        .target(
            name: "Daemon",
            dependencies: [
                "Platform", "SessionPolicy", "ControlProtocol", "SystemSupport", "AudioEngine", "Codec", "VoiceProcessing", "Archive",
                "ArchiveProof", "ArchiveEvidence", "Devices", "HTTPServer", "NetworkAudio", "PKI", "ContentCredentials",
            ]),
        // The client's end of the control socket (connect, request, reply, events): recctl and AudioSession.
        .target(name: "ControlClient", dependencies: ["ControlProtocol", "Platform"]),
        // recctl's argument parsing and output formatting; Platform passes open files.
        .target(
            name: "RecctlKit",
            dependencies: [
                "ControlClient", "ControlProtocol", "SessionPolicy", "Platform", "ArchiveProof", "ArchiveEvidence", "Codec",
                "PKI",
            ]),
        // The application library: AVAudioSession's calls and notifications over recd's protocol.
        .target(name: "AudioSession", dependencies: ["ControlClient", "ControlProtocol", "SessionPolicy", "Platform"]),
        .executableTarget(name: "recd", dependencies: ["Daemon"]),
        .executableTarget(name: "recctl", dependencies: ["RecctlKit"]),
        // A JACK client that plays known signals and captures ports: the tests' decks,
        // microphones and headphones, the demo's test tone, the benchmarks' pink noise.
        .executableTarget(name: "recd-signal", dependencies: ["CJack", "Platform"]),
        // The example applications: JACK clients of their own (a tone player, a recorder) under a session.
        .executableTarget(name: "audiosession-tone", dependencies: ["AudioSession", "CJack"]),
        .executableTarget(name: "audiosession-record", dependencies: ["AudioSession", "CJack"]),

        // The outside programs tests may start: only those scripts/packages.list declares.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // What the codec and daemon tests share: known signals and files, reference tools, a DFT.
        .target(
            name: "AudioTestSupport", dependencies: ["Codec", "TestSupport"], path: "Tests/AudioTestSupport",
            swiftSettings: optimizedInDebug),
        .testTarget(name: "TestSupportTests", dependencies: ["TestSupport"]),
        .testTarget(name: "ArchitectureTests", dependencies: ["TestSupport"]),
        .testTarget(
            name: "DocsTests", dependencies: ["RecctlKit", "ArchiveEvidence", "SystemSupport", "SessionPolicy", "ControlProtocol", "TestSupport"]),
        .testTarget(name: "SessionPolicyTests", dependencies: ["SessionPolicy", "TestSupport"]),
        .testTarget(name: "ControlProtocolTests", dependencies: ["ControlProtocol"]),
        .testTarget(name: "SystemSupportTests", dependencies: ["SystemSupport", "Platform", "TestSupport"]),
        .testTarget(name: "AudioEngineTests", dependencies: ["AudioEngine", "CJack", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(name: "DevicesTests", dependencies: ["Devices", "Platform", "TestSupport"]),
        .testTarget(name: "ArchiveTests", dependencies: ["Archive", "ArchiveProof", "Platform", "TestSupport"]),
        .testTarget(
            name: "VoiceProcessingTests", dependencies: ["VoiceProcessing", "TestSupport"], swiftSettings: optimizedInDebug),
        .testTarget(name: "CodecTests", dependencies: ["Codec", "AudioTestSupport", "TestSupport"]),
        .testTarget(
            name: "SampleKernelsTests", dependencies: ["SampleKernels", "SampleKernelsAVX2", "Platform", "TestSupport"],
            swiftSettings: optimizedInDebug),
        .testTarget(
            name: "DaemonTests",
            dependencies: [
                "Daemon", "Codec", "AudioEngine", "SessionPolicy", "SystemSupport", "AudioTestSupport", "ControlProtocol",
                "TestSupport",
                "Archive", "Devices", "Platform", "HTTPServer", "NetworkAudio",
            ]),
        .testTarget(
            name: "ContentCredentialsTests", dependencies: ["ContentCredentials", "ArchiveProof", "PKI", "TestSupport"]),
        .testTarget(name: "NetworkAudioTests", dependencies: ["NetworkAudio", "Platform", "TestSupport"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "ArchiveProof", "ControlProtocol", "ControlClient", "SessionPolicy", "Platform", "TestSupport",
                "AudioSession",
            ]),
    ]
)
