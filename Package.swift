// swift-tools-version:6.0
// recd: a headless multi-route recording appliance on JACK.
// Dependencies point inward: executables → backends → ControlProtocol → SessionPolicy.
import PackageDescription

let package = Package(
    name: "recd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "recd", targets: ["recd"]),
        .executable(name: "recctl", targets: ["recctl"]),
    ],
    targets: [
        // One system-library target per C library, each with a shim header.
        .systemLibrary(name: "CJack", pkgConfig: "jack", providers: [.apt(["libjack-jackd2-dev"])]),
        .systemLibrary(name: "CFLAC", pkgConfig: "flac", providers: [.apt(["libflac-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CInih", pkgConfig: "inih", providers: [.apt(["libinih-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),

        // The pure policy core: no C, no I/O.
        .target(name: "SessionPolicy"),
        // Wire types and JSON-lines coding shared by recd and recctl.
        .target(name: "ControlProtocol", dependencies: ["SessionPolicy"]),
        // Config (libinih), sockets with peer credentials, atomic files, logging, sd_notify.
        .target(name: "SystemSupport", dependencies: ["SessionPolicy", "CInih", "CSystemd"]),
        // The JACK client and the real-time graph (Sources/AudioEngine/RealTime holds the process path).
        .target(name: "AudioEngine", dependencies: ["CJack", "SessionPolicy"]),
        // The daemon's control loop: requests → policy → effects, persistence, events.
        .target(name: "Daemon", dependencies: ["SessionPolicy", "ControlProtocol", "SystemSupport"]),
        // recctl's argument parsing and output formatting.
        .target(name: "RecctlKit", dependencies: ["ControlProtocol", "SessionPolicy"]),

        .executableTarget(name: "recd", dependencies: ["Daemon"]),
        .executableTarget(name: "recctl", dependencies: ["RecctlKit"]),

        .testTarget(name: "SessionPolicyTests", dependencies: ["SessionPolicy"]),
        .testTarget(name: "ControlProtocolTests", dependencies: ["ControlProtocol"]),
        .testTarget(name: "SystemSupportTests", dependencies: ["SystemSupport"]),
        .testTarget(name: "AudioEngineTests", dependencies: ["AudioEngine", "CJack"]),
        .testTarget(name: "EndToEndTests", dependencies: ["ControlProtocol"]),
    ]
)
