// systemd integration, end to end: the unit files, recd's side of the sd_notify and socket
// activation protocols, scripts/install, and recd + jackd inside an approximation of their
// units' sandboxes.
//
// PID 1 is not systemd on the test machines, so no unit is ever started. Instead:
// - `scripts/install --destdir STAGE` stages a real install; the host's own unit files
//   (sysinit.target, sound.target, ...) and jackd are copied into the stage, and
//   `systemd-analyze verify|security --root=STAGE` resolves ExecStart= and every unit name
//   inside it. The unit files are checked exactly as installed: no rewritten copies.
// - NOTIFY_SOCKET, WATCHDOG_USEC and LISTEN_FDS are what systemd hands a service; the tests
//   hand them over themselves (a datagram socket; systemd-socket-activate) and watch recd.
// - The sandbox test compiles a small C helper that applies the kernel mechanisms behind the
//   units' main directives (mount and network namespaces, a private /dev, read-only /,
//   PR_SET_MDWE, seccomp, another uid) and runs jackd and recd under it.
import ControlProtocol
import Foundation
import Platform
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("systemd integration")
struct SystemdTests {
    // MARK: Unit files

    @Test(
        "systemd-analyze verify accepts recd.service, recd.socket and jackd.service as installed")
    func verifyUnits() throws {
        let stage = try StagedInstall()
        try stage.addHostSystemForAnalysis()
        let units = ["recd.service", "recd.socket", "jackd.service"]
        // --man=no: Documentation=man:jackd(1) would otherwise depend on whether this machine
        // has manual pages installed.
        let result = try runTool(
            "systemd-analyze", ["verify", "--man=no", "--root=\(stage.root)"] + units,
            environment: SystemdTools.environment)
        #expect(result.status == 0, "systemd-analyze verify failed:\n\(result.stdout)\(result.stderr)")
        // An unknown key or a bad value is only a warning (exit status 0); there must be none.
        let output = (result.stdout + result.stderr).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(output.isEmpty, "systemd-analyze verify warned:\n\(output)")

        // The check has teeth: with the binary ExecStart= names gone, verify fails.
        try FileManager.default.removeItem(atPath: stage.root + "/usr/local/bin/recd")
        let broken = try runTool(
            "systemd-analyze", ["verify", "--man=no", "--root=\(stage.root)", "recd.service"],
            environment: SystemdTools.environment)
        #expect(
            broken.status != 0 && broken.stderr.contains("/usr/local/bin/recd"),
            "verify did not notice the missing binary:\n\(broken.stderr)")
    }

    /// The checks `systemd-analyze security` fails recd.service on, each for a reason recd or
    /// JACK cannot do without. Anything else failing is a hardening regression.
    static let acceptedRecdWeaknesses: [String: String] = [
        "SystemCallFilter=~@resources": "sched_setscheduler/sched_setparam: libjack's SCHED_FIFO process thread",
        "RestrictRealtime=": "JACK's process thread runs SCHED_FIFO",
        "PrivateUsers=": "SO_PEERCRED must report each recctl caller's real uid, not 65534",
        "RootDirectory=/RootImage=": "recd runs from the host's /usr/local/bin with the host's libraries",
        "SupplementaryGroups=": "audio, for the ALSA control devices in /dev/snd",
        "RestrictAddressFamilies=~AF_UNIX": "the control socket, JACK's socket and sd_notify are Unix sockets",
        "RestrictAddressFamilies=~AF_(INET|INET6)":
            "the HTTP listener (/metrics, the status page); IPAddressAllow=localhost only",
        "PrivateNetwork=":
            "a private namespace's loopback is unreachable from the host: the HTTP listener needs the host's",
        "IPAddressDeny=": "deny any, allow localhost: systemd counts any allow-list as a weakness",
        "DeviceAllow=": "char-alsa rw for jack-sense (char-rtc r comes with ProtectClock=yes)",
        "UMask=": "0027: group recd may read the archive",
    ]

    /// The same for jackd.service.
    static let acceptedJackdWeaknesses: [String: String] = [
        "SystemCallFilter=~@resources": "sched_setscheduler for SCHED_FIFO threads",
        "RestrictRealtime=": "JACK runs SCHED_FIFO",
        "PrivateUsers=": "a user namespace would not map group audio (/dev/snd)",
        "RootDirectory=/RootImage=": "jackd runs from the host's /usr/bin",
        "SupplementaryGroups=": "audio, for /dev/snd",
        "RestrictAddressFamilies=~AF_UNIX": "JACK's server and client sockets",
        "DeviceAllow=": "char-alsa rw for the ALSA backend",
        "ProcSubset=": "alsa-lib and the ALSA backend may read /proc/asound",
    ]

    @Test(
        "systemd-analyze security rates recd.service below 2.0, held up only by what recd and JACK need")
    func securityExposure() throws {
        let stage = try StagedInstall()
        try stage.addHostSystemForAnalysis()
        for (unit, accepted) in [
            ("recd.service", Self.acceptedRecdWeaknesses), ("jackd.service", Self.acceptedJackdWeaknesses),
        ] {
            let result = try runTool(
                "systemd-analyze", ["security", "--offline=true", "--root=\(stage.root)", unit],
                environment: SystemdTools.environment)
            #expect(result.status == 0, "systemd-analyze security \(unit) failed:\n\(result.stderr)")
            let report = try #require(
                SecurityReport(parsing: result.stdout, unit: unit),
                "no overall exposure for \(unit) in:\n\(result.stdout)\(result.stderr)")
            print(
                "systemd-analyze security: \(unit) exposure \(report.exposure); held up by \(report.weaknesses.joined(separator: ", "))"
            )
            #expect(report.exposure < 2.0, "\(unit): exposure \(report.exposure)\n\(result.stdout)")
            let unexplained = report.weaknesses.filter { accepted[$0] == nil }
            #expect(unexplained.isEmpty, "\(unit) fails checks nothing requires: \(unexplained)\n\(result.stdout)")
        }
    }

    // MARK: sd_notify

    @Test(
        "recd honours NOTIFY_SOCKET: READY=1 with STATUS= once it accepts, WATCHDOG=1 every WATCHDOG_USEC/2, STOPPING=1 on SIGTERM"
    )
    func notifyProtocol() throws {
        let directory = try makeTemporaryDirectory("recd-notify")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notify = try NotifySocket(path: directory + "/notify.sock")
        let config = try RecdTestConfig(directory: directory)
        // systemd also sets WATCHDOG_PID to the service's pid, which the test cannot know
        // before spawning; sd_watchdog_enabled() accepts its absence.
        let recd = try RecdProcess(
            config: config, environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"],
            removing: ["WATCHDOG_PID"])

        let ready = notify.waitFor(timeout: 15) { $0.contains("READY=1") }
        let readyMessage = try #require(ready.found, "no READY=1; got \(ready.all); recd's log:\n\(recd.log)")
        let readyAt = Date()
        let status = readyMessage.split(separator: "\n").first { $0.hasPrefix("STATUS=") }
        #expect(status.map { $0.count > "STATUS=".count } == true, "READY=1 without STATUS=: \(readyMessage)")
        // Ready means accepting: a client gets an answer at once.
        let client = try RawClient(path: config.socket)
        client.send("{\"id\":1,\"op\":\"hello\"}\n")
        #expect(client.readJSON()?["ok"] == true)

        // Pings at half the 1 s timeout: about four in two seconds; at least two, and not a
        // ping per control-loop tick (every 100 ms).
        var pings = 0
        while Date().timeIntervalSince(readyAt) < 2.0 {
            if let message = notify.receive(timeout: 2.0 - Date().timeIntervalSince(readyAt)),
                message.contains("WATCHDOG=1")
            {
                pings += 1
            }
        }
        #expect(pings >= 2 && pings <= 8, "\(pings) WATCHDOG=1 in 2 s with WATCHDOG_USEC=1000000")

        recd.sendTerminate()
        let stopping = notify.waitFor(timeout: 15) { $0.contains("STOPPING=1") }
        #expect(stopping.found != nil, "no STOPPING=1 after SIGTERM; got \(stopping.all); log:\n\(recd.log)")
        #expect(recd.waitForExit(timeout: 15) == 0, "recd did not exit cleanly; log:\n\(recd.log)")
    }

    @Test("recd sends no WATCHDOG=1 when WATCHDOG_PID names another process")
    func watchdogForAnotherProcess() throws {
        let directory = try makeTemporaryDirectory("recd-notify")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notify = try NotifySocket(path: directory + "/notify.sock")
        let config = try RecdTestConfig(directory: directory)
        // What a child of a supervised daemon sees: the watchdog is its parent's business.
        let recd = try RecdProcess(
            config: config,
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"], removing: [])
        let ready = notify.waitFor(timeout: 15) { $0.contains("READY=1") }
        #expect(ready.found != nil, "no READY=1; got \(ready.all); log:\n\(recd.log)")
        let pings = notify.waitFor(timeout: 1.5) { $0.contains("WATCHDOG=1") }
        #expect(pings.found == nil, "WATCHDOG=1 although WATCHDOG_PID=1: \(pings.all)")
        recd.sendTerminate()
        #expect(recd.waitForExit(timeout: 15) == 0, "log:\n\(recd.log)")
    }

    // MARK: Socket activation

    @Test(
        "recd takes its control socket from LISTEN_FDS (systemd-socket-activate) and binds none of its own")
    func socketActivation() throws {
        let activate = "systemd-socket-activate"
        let directory = try makeTemporaryDirectory("recd-activate")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The configured socket is somewhere else: recd must not bind it.
        let config = try RecdTestConfig(directory: directory, socket: directory + "/configured/control.sock")
        let activationSocket = directory + "/activated.sock"
        // systemd-socket-activate passes only TERM, PATH, USER, HOME and --setenv variables.
        var arguments = ["--listen=\(activationSocket)", "--setenv=JACK_NO_AUDIO_RESERVATION=1"]
        if let server = ProcessInfo.processInfo.environment["JACK_DEFAULT_SERVER"] {
            arguments.append("--setenv=JACK_DEFAULT_SERVER=\(server)")
        }
        arguments += [productsDirectory.appendingPathComponent("recd").path, "--config", config.path]
        // Without --accept, systemd-socket-activate waits for the first connection and then
        // execs recd in its own process, so this pid becomes recd's.
        let recd = try RecdProcess(
            executable: activate, arguments: arguments, environment: [:],
            removing: ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID"], logPath: directory + "/recd.log")
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: activationSocket) && Date() < deadline && recd.isRunning {
            usleep(10_000)
        }
        #expect(!recd.log.contains("<5>recd"), "recd ran before any connection:\n\(recd.log)")

        let client = try RawClient(path: activationSocket)
        client.send("{\"id\":1,\"op\":\"hello\"}\n")
        // recd starts on this connection; give it two read timeouts (10 s) on a loaded machine.
        let reply = client.readJSON() ?? client.readJSON()
        #expect(
            reply?["ok"] == true && reply?["id"] == 1,
            "hello through the passed socket: \(reply?.jsonText ?? "no reply"); log:\n\(recd.log)")
        // recd accepts further connections on the passed socket itself (Accept=no).
        let second = try RawClient(path: activationSocket)
        second.send("{\"id\":2,\"op\":\"status\"}\n")
        #expect(second.readJSON()?["ok"] == true)

        #expect(!FileManager.default.fileExists(atPath: config.socket), "recd bound its configured socket too")
        #expect(
            !FileManager.default.fileExists(atPath: directory + "/configured"),
            "recd created its configured socket's directory")
        #expect(recd.log.contains("LISTEN_FDS"), "recd did not say it uses the passed socket:\n\(recd.log)")
        recd.sendTerminate()
        #expect(recd.waitForExit(timeout: 15) == 0, "log:\n\(recd.log)")
        // The socket file is the socket unit's: recd must leave it for the next activation.
        #expect(FileManager.default.fileExists(atPath: activationSocket), "recd removed the socket systemd passed it")
    }

    @Test(
        "the first `recctl status` of a socket-activated recd reaches it while it starts, and is answered whole"
    )
    func firstStatusWhileStarting() throws {
        // The request is waiting before recd runs, as systemd hands it over, so recd answers it
        // during its start-up: before its first asking of chrony has an answer. A chronyc that
        // takes its time (a busy chronyd, a command port that does not answer) is a script bound
        // over /usr/bin/chronyc in a mount namespace of recd's own; recd's time limit ends it
        // after 2 s.
        for round in 1...3 {
            let directory = try makeTemporaryDirectory("recd-first-status")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = try RecdTestConfig(directory: directory)
            let slowChronyc = directory + "/chronyc"
            try "#!/bin/sh\n/usr/bin/sleep 5\n".write(toFile: slowChronyc, atomically: true, encoding: .utf8)
            chmod(slowChronyc, 0o755)
            let activationSocket = directory + "/activated.sock"
            var activate = [
                "systemd-socket-activate", "--listen=\(activationSocket)", "--setenv=JACK_NO_AUDIO_RESERVATION=1",
            ]
            if let server = ProcessInfo.processInfo.environment["JACK_DEFAULT_SERVER"] {
                activate.append("--setenv=JACK_DEFAULT_SERVER=\(server)")
            }
            activate += [productsDirectory.appendingPathComponent("recd").path, "--config", config.path]
            let script = "mount --bind \(slowChronyc) /usr/bin/chronyc && exec " + activate.joined(separator: " ")
            // Spawned and reaped by Platform's ChildProcess on a thread of its own, not by
            // Foundation: systemd-socket-activate closes every descriptor it inherited before it
            // execs recd, which Foundation's Process takes for the child's end and then waits for
            // that pid on the thread that reaps all its children, so recctl, run next, would
            // never be seen to end.
            let stop = Locked(false)
            let ended = Locked<ChildOutcome?>(nil)
            let unshare = try ExternalTools.path("unshare")
            let environment = ExternalTools.environment()
            Thread.detachNewThread {
                let outcome = try? ChildProcess.run(
                    path: unshare, arguments: ["--mount", "--propagation", "private", "bash", "-c", script],
                    environment: environment, timeLimit: 120, graceSeconds: 10,
                    isCancelled: { stop.withLock { $0 } })
                ended.withLock { $0 = outcome }
            }
            defer {
                stop.withLock { $0 = true }
                _ = eventually(timeout: 15) { ended.withLock { $0 } != nil }
            }
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: activationSocket) && Date() < deadline {
                usleep(10_000)
            }
            let recctl = productsDirectory.appendingPathComponent("recctl").path
            if round < 3 {
                let status = try runProgram(recctl, ["--socket", activationSocket, "status"], timeout: 40)
                #expect(
                    status.status == 0 && status.stdout.contains("recd "),
                    "round \(round): recctl status exited \(status.status): \(status.stderr)")
            } else {
                // Every key is there from the first reply on: the clock's source is "pending"
                // until chrony answered.
                let json = try runProgram(recctl, ["--socket", activationSocket, "--json", "status"], timeout: 40)
                #expect(json.json?["clock"]?["source"]?.stringValue == "pending", "\(json.stdout)")
            }
            stop.withLock { $0 = true }
            #expect(eventually(timeout: 15) { ended.withLock { $0 } != nil })
            #expect(ended.withLock { $0 }?.termination == .exited(0), "recd did not stop cleanly on SIGTERM")
        }
    }

    // MARK: scripts/install

    @Test(
        "scripts/install --destdir stages binaries, units, sysusers/tmpfiles entries, configs, manual pages, completion and libaudiosession (a C example builds against it), and keeps an existing recd.conf"
    )
    func installStages() throws {
        let etcRecdExisted = FileManager.default.fileExists(atPath: "/etc/recd")
        let stage = try StagedInstall()
        let root = stage.root
        let expected: [(String, Int)] = [
            ("/usr/local/bin/recd", 0o755), ("/usr/local/bin/recctl", 0o755),
            ("/usr/local/lib/systemd/system/recd.service", 0o644), ("/usr/local/lib/systemd/system/recd.socket", 0o644),
            ("/usr/local/lib/systemd/system/jackd.service", 0o644),
            ("/usr/local/lib/sysusers.d/recd.conf", 0o644), ("/usr/local/lib/tmpfiles.d/recd.conf", 0o644),
            ("/etc/recd/recd.conf", 0o644), ("/etc/recd/jackd.conf", 0o644),
            ("/usr/local/share/doc/recd/recd.conf.example", 0o644),
            ("/usr/local/share/doc/recd/jackd.conf.example", 0o644),
            ("/usr/local/share/doc/recd/protocol.md", 0o644), ("/usr/local/share/doc/recd/README.md", 0o644),
            ("/usr/local/share/doc/recd/http.md", 0o644),
            ("/usr/local/share/recd/prometheus/recd-rules.yml", 0o644),
            ("/usr/local/share/recd/prometheus/recd-rules.test.yml", 0o644),
            ("/usr/local/bin/recd-signal", 0o755),
            ("/usr/local/share/bash-completion/completions/recctl", 0o644),
            ("/usr/local/share/man/man8/recd.8", 0o644), ("/usr/local/share/man/man1/recctl.1", 0o644),
            ("/usr/local/share/man/man5/recd.conf.5", 0o644), ("/usr/local/share/man/man1/recd-signal.1", 0o644),
            ("/usr/local/lib/libaudiosession.so.1.0.0", 0o644), ("/usr/local/include/audiosession.h", 0o644),
            ("/usr/local/lib/pkgconfig/audiosession.pc", 0o644),
            ("/usr/local/share/doc/libaudiosession-dev/examples/tone.c", 0o644),
            ("/usr/local/share/doc/libaudiosession-dev/examples/record.c", 0o644),
        ]
        for (path, mode) in expected {
            let attributes = try? FileManager.default.attributesOfItem(atPath: root + path)
            let actual = (attributes?[.posixPermissions] as? NSNumber)?.intValue
            #expect(
                actual == mode,
                "\(path): mode \(actual.map { String($0, radix: 8) } ?? "missing"), expected \(String(mode, radix: 8))")
        }
        #expect(
            FileManager.default.contentsEqual(
                atPath: root + "/usr/local/bin/recd", andPath: productsDirectory.appendingPathComponent("recd").path))
        #expect(
            FileManager.default.contentsEqual(
                atPath: root + "/usr/local/lib/systemd/system/recd.service",
                andPath: packageRoot + "/systemd/recd.service"))
        #expect(
            FileManager.default.contentsEqual(
                atPath: root + "/etc/recd/jackd.conf", andPath: packageRoot + "/config/jackd.conf"))
        #expect(FileManager.default.fileExists(atPath: "/etc/recd") == etcRecdExisted, "--destdir touched /etc/recd")
        try Self.expectStagedLibrary(root: root, libraryDirectory: root + "/usr/local/lib")

        // The generated config is valid and names the system paths the units use.
        let recd = productsDirectory.appendingPathComponent("recd").path
        let check = try runProgram(recd, ["--check-config", root + "/etc/recd/recd.conf"])
        #expect(check.status == 0, "installed recd.conf: \(check.stdout)\(check.stderr)")
        let installedConfig = try String(contentsOfFile: root + "/etc/recd/recd.conf", encoding: .utf8)
        #expect(
            installedConfig.contains("socket = /run/recd/control.sock")
                && installedConfig.contains("state_dir = /var/lib/recd"))

        // Run again over an edited recd.conf: it stays; the new default goes next to it.
        let edited = "# edited by the administrator\n" + installedConfig
        try edited.write(toFile: root + "/etc/recd/recd.conf", atomically: true, encoding: .utf8)
        try stage.install()
        #expect(try String(contentsOfFile: root + "/etc/recd/recd.conf", encoding: .utf8) == edited)
        #expect(try String(contentsOfFile: root + "/etc/recd/recd.conf.new", encoding: .utf8) == installedConfig)

        // sysusers.d and tmpfiles.d entries, applied to the stage offline.
        do {
            let users = try runTool("systemd-sysusers", ["--root=\(root)"], environment: SystemdTools.environment)
            #expect(users.status == 0, "systemd-sysusers: \(users.stderr)")
            let passwd = (try? String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)) ?? ""
            let group = (try? String(contentsOfFile: root + "/etc/group", encoding: .utf8)) ?? ""
            let recdEntry = passwd.split(separator: "\n").first { $0.hasPrefix("recd:") }.map(String.init)
            #expect(recdEntry?.hasSuffix(":/var/lib/recd:/usr/sbin/nologin") == true, "passwd: \(passwd)")
            #expect(
                group.split(separator: "\n").contains {
                    $0.hasPrefix("audio:")
                        && $0.split(separator: ":").last?.split(separator: ",").contains("recd") == true
                }, "group: \(group)")
            let files = try runTool(
                "systemd-tmpfiles", ["--root=\(root)", "--create", "recd.conf"], environment: SystemdTools.environment)
            #expect(files.status == 0, "systemd-tmpfiles: \(files.stderr)")
            let uid = recdEntry.flatMap { $0.split(separator: ":").dropFirst(2).first }.flatMap { Int($0) }
            for path in ["/var/lib/recd", "/var/lib/recd/archive"] {
                let attributes = try? FileManager.default.attributesOfItem(atPath: root + path)
                #expect((attributes?[.posixPermissions] as? NSNumber)?.intValue == 0o750, "\(path) mode")
                #expect((attributes?[.ownerAccountID] as? NSNumber)?.intValue == uid, "\(path) owner")
            }
        }

        // Another prefix: units go to /etc/systemd/system (systemd does not search
        // /opt/recd/lib) and ExecStart= follows the binary.
        let other = try StagedInstall(prefix: "/opt/recd")
        let unit = try String(contentsOfFile: other.root + "/etc/systemd/system/recd.service", encoding: .utf8)
        #expect(unit.contains("\nExecStart=/opt/recd/bin/recd --config /etc/recd/recd.conf\n"))
        #expect(FileManager.default.isExecutableFile(atPath: other.root + "/opt/recd/bin/recd"))
        // The loader does not look in /opt/recd/lib: programs find the library by the rpath
        // audiosession.pc gives them.
        let otherPC = try String(
            contentsOfFile: other.root + "/opt/recd/lib/pkgconfig/audiosession.pc", encoding: .utf8)
        #expect(
            otherPC.hasPrefix("prefix=/opt/recd\n") && otherPC.contains("\nlibdir=${prefix}/lib\n")
                && otherPC.contains("\nLibs: -L${libdir} -laudiosession -Wl,-rpath,${libdir}\n"),
            "audiosession.pc for /opt/recd:\n\(otherPC)")
    }

    /// libaudiosession as scripts/install stages it for /usr/local: the library under its
    /// SONAME's name with the two links, audiosession.pc naming the prefix (no build directory,
    /// no toolchain, no rpath: /usr/local/lib is on the loader's path), and a C example that
    /// builds against the staged files alone and asks the loader for the SONAME.
    static func expectStagedLibrary(root: String, libraryDirectory: String) throws {
        let files = FileManager.default
        #expect(
            (try? files.destinationOfSymbolicLink(atPath: libraryDirectory + "/libaudiosession.so.1"))
                == "libaudiosession.so.1.0.0")
        #expect(
            (try? files.destinationOfSymbolicLink(atPath: libraryDirectory + "/libaudiosession.so"))
                == "libaudiosession.so.1")
        #expect(
            files.contentsEqual(
                atPath: libraryDirectory + "/libaudiosession.so.1.0.0",
                andPath: productsDirectory.appendingPathComponent("libaudiosession.so").path))
        let pc = try String(contentsOfFile: libraryDirectory + "/pkgconfig/audiosession.pc", encoding: .utf8)
        #expect(
            pc.hasPrefix("prefix=/usr/local\n") && pc.contains("\nlibdir=${prefix}/lib\n")
                && pc.contains("\nincludedir=${prefix}/include\n")
                && pc.contains("\nLibs: -L${libdir} -laudiosession\n")
                && !pc.contains(packageRoot) && !pc.contains("swift"),
            "audiosession.pc:\n\(pc)")
        let flags = try runTool(
            "pkg-config", ["--cflags", "--libs", "audiosession"],
            environment: ["PKG_CONFIG_LIBDIR": libraryDirectory + "/pkgconfig", "PKG_CONFIG_SYSROOT_DIR": root])
        #expect(flags.status == 0, "pkg-config: \(flags.stderr)")
        let words = flags.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        #expect(words.contains("-I\(root)/usr/local/include") && words.contains("-L\(libraryDirectory)"), "\(words)")
        let program = root + "/tone"
        let example = root + "/usr/local/share/doc/libaudiosession-dev/examples/tone.c"
        let compiled = try runTool("cc", ["-Wall", "-Werror", example, "-o", program] + words + ["-ljack", "-lm"])
        #expect(compiled.status == 0, "cc against the staged files: \(compiled.stderr)")
        let dynamic = try runTool("readelf", ["-d", program])
        #expect(
            dynamic.stdout.contains("Shared library: [libaudiosession.so.1]"),
            "the example does not ask for the SONAME:\n\(dynamic.stdout)")
    }

    // MARK: The sandbox

    @Test(
        "jackd (config/jackd.conf's default) and recd run, and find each other, inside an approximation of their units' sandboxes",
        .enabled(if: SandboxHelper.canRun))
    func sandboxed() throws {
        let directory = try makeTemporaryDirectory("recd-sandbox")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        chmod(directory, 0o755)
        let helper = try SandboxHelper(directory: directory)
        let nobody = getpwnam("nobody").map { ($0.pointee.pw_uid, $0.pointee.pw_gid) } ?? (65534, 65534)
        // The daemons' own writable directory, as ReadWritePaths=/var/lib/recd is theirs.
        let writable = directory + "/var"
        try FileManager.default.createDirectory(atPath: writable, withIntermediateDirectories: false)
        chown(writable, nobody.0, nobody.1)
        for scratch in ["/dev-jackd", "/dev-recd"] {
            try FileManager.default.createDirectory(atPath: directory + scratch, withIntermediateDirectories: false)
        }
        let common = ["--writable", writable, "--uid", "\(nobody.0)", "--gid", "\(nobody.1)"]

        // What the program exec'd last may do: no W+X memory, no Internet sockets, but
        // SCHED_FIFO through LimitRTPRIO= as a user without capabilities (where this machine
        // allows real-time scheduling at all, root may unsandboxed, and lets root raise the limit).
        let probe = try runProgram(
            helper.path,
            ["--dev", directory + "/dev-recd"] + common + ["--proc-subset-pid", "--", helper.path, "--probe"])
        #expect(
            probe.status == 0 && probe.stdout.hasPrefix("wx=refused inet=refused"),
            "probe: \(probe.stdout)\(probe.stderr)")
        let unsandboxed = try runProgram(helper.path, ["--probe"])
        if unsandboxed.stdout.contains("rt=allowed") && probe.stdout.contains("rtprio=95") {
            #expect(probe.stdout.contains("rt=allowed"), "no SCHED_FIFO in the sandbox: \(probe.stdout)")
        }

        // jackd.service: the shipped default JACKD_ARGS on a private server name.
        let jackArguments = try SandboxHelper.defaultJackdArguments()
        let server = "recd-test-sandbox"  // stable: see PrivateJack
        let jackd = try RecdProcess(
            executable: helper.path,
            arguments: ["--dev", directory + "/dev-jackd", "--umask", "077"] + common + [
                "--", SystemdTools.jackd!, "-n", server,
            ] + jackArguments,
            environment: ["JACK_NO_AUDIO_RESERVATION": "1"], removing: ["JACK_DEFAULT_SERVER"],
            logPath: writable + "/jackd.log")
        defer { jackd.terminate() }
        let serverSocket = "/dev/shm/jack_\(server)_\(nobody.0)_0"
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: serverSocket) && jackd.isRunning && Date() < deadline {
            usleep(20_000)
        }
        #expect(
            FileManager.default.fileExists(atPath: serverSocket), "jackd did not start in the sandbox:\n\(jackd.log)")

        // recd.service: the install's config (the embedded default plus [daemon] paths).
        let config = RecdTestConfig.installedStyle(directory: writable)
        try config.text.write(toFile: config.path, atomically: true, encoding: .utf8)
        chown(config.path, nobody.0, nobody.1)
        let recd = try RecdProcess(
            executable: helper.path,
            arguments: ["--dev", directory + "/dev-recd", "--umask", "027", "--proc-subset-pid"] + common
                + ["--", productsDirectory.appendingPathComponent("recd").path, "--config", config.path],
            environment: [
                "JACK_DEFAULT_SERVER": server, "JACK_NO_AUDIO_RESERVATION": "1", "JACK_NO_START_SERVER": "1",
            ],
            removing: ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID"], logPath: directory + "/recd.log")
        defer { recd.terminate() }
        var jack: JSONValue?
        let connectDeadline = Date().addingTimeInterval(15)
        while Date() < connectDeadline && recd.isRunning {
            if FileManager.default.fileExists(atPath: config.socket), let client = try? RawClient(path: config.socket) {
                client.send("{\"id\":1,\"op\":\"status\"}\n")
                jack = client.readJSON()?["jack"]
                if jack?["connected"] == true { break }
            }
            usleep(100_000)
        }
        #expect(
            jack?["connected"] == true,
            "recd in its sandbox did not reach jackd in its own: \(jack?.jsonText ?? "no status")\nrecd:\n\(recd.log)\njackd:\n\(jackd.log)"
        )
        #expect(jack?["sampleRate"]?.intValue == 48000)
        #expect(
            FileManager.default.fileExists(atPath: writable + "/state"), "recd kept no state in its writable directory")
        recd.sendTerminate()
        #expect(recd.waitForExit(timeout: 15) == 0, "recd:\n\(recd.log)")
        #expect(!recd.log.contains("<3>"), "recd logged errors in the sandbox:\n\(recd.log)")
        // LimitMEMLOCK=infinity: jackd locks its shared memory (100 MB for the dummy backend).
        if !jackd.log.contains("LimitMEMLOCK=infinity not applied") {
            #expect(!jackd.log.contains("Cannot lock down"), "jackd could not mlock:\n\(jackd.log)")
        }
    }
}

// MARK: - Support

/// The package root (this file is Tests/EndToEndTests/SystemdTests.swift).
private let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// The systemd (and JACK) programs the tests drive, all declared in scripts/packages.list.
enum SystemdTools {
    static let jackd = try? ExternalTools.path("jackd")

    /// The C locale (ASCII marks in systemd-analyze's tables), no colours, no pager.
    static let environment = ["LC_ALL": "C", "SYSTEMD_COLORS": "0", "SYSTEMD_PAGER": ""]
}

/// `scripts/install --destdir` into a fresh directory, from the binaries under test.
private final class StagedInstall {
    let root: String
    let prefix: String?

    init(prefix: String? = nil) throws {
        root = try makeTemporaryDirectory("recd-stage")
        self.prefix = prefix
        try install()
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func install() throws {
        var arguments = ["--destdir", root, "--bin", productsDirectory.path]
        if let prefix { arguments += ["--prefix", prefix] }
        let result = try runProgram(packageRoot + "/scripts/install", arguments)
        guard result.status == 0 else {
            throw DaemonFailure(
                message: "scripts/install \(arguments) exited \(result.status):\n\(result.stdout)\(result.stderr)")
        }
    }

    /// What systemd-analyze --root needs besides our files: the host's units (the targets ours
    /// name) and the jackd binary jackd.service runs.
    func addHostSystemForAnalysis() throws {
        let hostUnits = ["/usr/lib/systemd/system", "/lib/systemd/system"].first {
            FileManager.default.fileExists(atPath: $0 + "/sysinit.target")
        }
        let units = try #require(hostUnits, "no systemd unit directory on this host")
        try FileManager.default.createDirectory(atPath: root + "/usr/lib/systemd", withIntermediateDirectories: true)
        let copy = try runTool("cp", ["-a", units, root + "/usr/lib/systemd/system"])
        guard copy.status == 0 else { throw DaemonFailure(message: "cp \(units): \(copy.stderr)") }
        let jackd = try #require(SystemdTools.jackd)
        try FileManager.default.createDirectory(atPath: root + "/usr/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: jackd, toPath: root + "/usr/bin/jackd")
    }
}

/// `systemd-analyze security` output in the C locale: `- NAME  DESCRIPTION  EXPOSURE` for a
/// failed check, `-> Overall exposure level for UNIT: 0.6 SAFE :-}` at the end.
struct SecurityReport {
    var exposure: Double
    /// Names of the failed checks (`PrivateUsers=`, `SystemCallFilter=~@resources`, ...).
    var weaknesses: [String]

    init?(parsing text: String, unit: String) {
        let marker = "Overall exposure level for \(unit): "
        guard let line = text.split(separator: "\n").first(where: { $0.contains(marker) }),
            let range = line.range(of: marker),
            let value = line[range.upperBound...].split(separator: " ").first.flatMap({ Double($0) })
        else { return nil }
        exposure = value
        weaknesses = text.split(separator: "\n").filter { $0.hasPrefix("- ") }.compactMap {
            $0.split(separator: " ").dropFirst().first.map(String.init)
        }
    }
}

/// A bound `SOCK_DGRAM` Unix socket standing in for systemd's notification socket.
private final class NotifySocket {
    let fd: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let error = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EIO)
        }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next datagram, or nil after `timeout` seconds.
    func receive(timeout: Double) -> String? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(max(0, timeout) * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// Datagrams until one satisfies `predicate` (returned as `found`) or `timeout` passes.
    func waitFor(timeout: Double, _ predicate: (String) -> Bool) -> (found: String?, all: [String]) {
        let deadline = Date().addingTimeInterval(timeout)
        var all: [String] = []
        while deadline.timeIntervalSinceNow > 0 {
            guard let message = receive(timeout: deadline.timeIntervalSinceNow) else { continue }
            all.append(message)
            if predicate(message) { return (message, all) }
        }
        return (nil, all)
    }
}

/// A recd config on private paths, as the other end-to-end tests write them.
private struct RecdTestConfig {
    let path: String
    let socket: String
    let text: String

    /// Writes `directory`/recd.conf with the dummy server's system ports.
    init(directory: String, socket: String? = nil) throws {
        path = directory + "/recd.conf"
        self.socket = socket ?? directory + "/run/control.sock"
        text = """
            [daemon]
            socket = \(self.socket)
            state_dir = \(directory)/state

            [jack]
            client_name = \(uniqueName("recd"))

            [archive]
            dir = \(directory)/archive

            """ + Daemon.systemPorts
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    private init(path: String, socket: String, text: String) {
        self.path = path
        self.socket = socket
        self.text = text
    }

    /// What scripts/install writes to /etc/recd/recd.conf (recd's embedded default with
    /// [daemon] paths), with the paths moved into `directory`. Not written yet.
    static func installedStyle(directory: String) -> RecdTestConfig {
        let socket = directory + "/control.sock"
        let defaults =
            (try? runProgram(productsDirectory.appendingPathComponent("recd").path, ["--print-default-config"]).stdout)
            ?? ""
        let text = "[daemon]\nsocket = \(socket)\nstate_dir = \(directory)/state\n\n" + defaults
        return RecdTestConfig(path: directory + "/recd.conf", socket: socket, text: text)
    }
}

/// A child process (recd, or something that execs into it) with stdout and stderr in a file.
private final class RecdProcess {
    let process: Process
    let logPath: String

    /// recd itself on `config`.
    convenience init(config: RecdTestConfig, environment: [String: String], removing: [String]) throws {
        try self.init(
            executable: productsDirectory.appendingPathComponent("recd").path, arguments: ["--config", config.path],
            environment: environment, removing: removing + ["LISTEN_FDS", "LISTEN_PID"],
            logPath: (config.path as NSString).deletingLastPathComponent + "/recd.log")
    }

    /// `executable`: a path this suite owns, or the name of a declared outside program.
    init(executable: String, arguments: [String], environment: [String: String], removing: [String], logPath: String)
        throws
    {
        self.logPath = logPath
        process =
            executable.contains("/")
            ? try ExternalTools.ownProcess(executable, arguments) : try ExternalTools.process(executable, arguments)
        var merged = process.environment ?? [:]
        for name in removing { merged.removeValue(forKey: name) }
        merged.merge(environment) { $1 }
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.environment = merged
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try log.close()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var isRunning: Bool { process.isRunning }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGTERM unless it has already exited (its pid may belong to another process by
    /// then), and wait.
    func terminate() {
        sendTerminate()
        _ = waitForExit(timeout: 10)
    }

    /// SIGTERM, as systemd stops a service, unless the process has exited.
    func sendTerminate() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
    }

    /// The exit status, or nil when the process still runs after `timeout` seconds.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// The sandbox helper: C, compiled for the test, because the steps must happen between fork
/// and exec (namespaces, mounts, setuid, PR_SET_MDWE, seccomp), which Foundation cannot do.
private struct SandboxHelper {
    let path: String

    /// Root (namespaces and mounts), jackd, a C compiler, and Linux 6.3+ (PR_SET_MDWE).
    static let canRun: Bool = {
        guard getuid() == 0, SystemdTools.jackd != nil, compiler != nil else { return false }
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        return numbers.count == 2 && (numbers[0], numbers[1]) >= (6, 3)
    }()

    /// The Swift toolchain ships clang next to swift.
    static let compiler = try? ExternalTools.path("clang")

    init(directory: String) throws {
        let source = directory + "/sandbox-exec.c"
        path = directory + "/sandbox-exec"
        try Self.source.write(toFile: source, atomically: true, encoding: .utf8)
        let result = try runTool("clang", ["-O", "-Wall", "-o", path, source])
        guard result.status == 0 else {
            throw DaemonFailure(message: "compiling the sandbox helper:\n\(result.stderr)")
        }
    }

    /// The active `JACKD_ARGS="..."` of config/jackd.conf, split as systemd splits `$JACKD_ARGS`.
    static func defaultJackdArguments() throws -> [String] {
        let text = try String(contentsOfFile: packageRoot + "/config/jackd.conf", encoding: .utf8)
        let line = try #require(
            text.split(separator: "\n").first { $0.hasPrefix("JACKD_ARGS=") }, "config/jackd.conf sets no JACKD_ARGS")
        let value = line.dropFirst("JACKD_ARGS=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        return value.split(separator: " ").map(String.init)
    }

    static let source = #"""
        // sandbox-exec: runs a program inside an approximation of the sandbox that recd.service
        // and jackd.service ask systemd for, built from the kernel features systemd uses.
        //
        //   sandbox-exec --probe        prints wx=, inet=, rt= allowed|refused (may it map W+X
        //                               memory, open an AF_INET socket, run SCHED_FIFO?) and
        //                               rtprio=RLIMIT_RTPRIO
        //   sandbox-exec [options] -- PROGRAM [ARGS...]
        //     --dev DIR          PrivateDevices=yes + BindPaths=-/dev/snd: a tmpfs /dev (built in
        //                        DIR) with null zero full random urandom tty, pts, snd and the
        //                        host's /dev/shm, as systemd's mount_private_dev() builds it
        //     --writable DIR     ProtectSystem=strict + ReadWritePaths=DIR (/dev, /proc stay rw)
        //     --proc-subset-pid  ProcSubset=pid (ProtectProc=invisible always applies)
        //     --uid N --gid N    User=, Group= (no supplementary groups)
        //     --umask OCTAL      UMask=
        // Always: LimitMEMLOCK=infinity and LimitRTPRIO=95 (where the machine lets root raise
        // them), PrivateNetwork=yes (a new network namespace), NoNewPrivileges=yes,
        // MemoryDenyWriteExecute=yes (PR_SET_MDWE, kept across execve) and
        // RestrictAddressFamilies=AF_UNIX (seccomp: socket() of another family → EAFNOSUPPORT).
        // Runs as root; exits 70 when a step fails, 77 when the kernel lacks PR_SET_MDWE.
        #define _GNU_SOURCE
        #include <errno.h>
        #include <fcntl.h>
        #include <grp.h>
        #include <linux/audit.h>
        #include <linux/filter.h>
        #include <linux/seccomp.h>
        #include <sched.h>
        #include <stddef.h>
        #include <stdint.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/mman.h>
        #include <sys/mount.h>
        #include <sys/prctl.h>
        #include <sys/resource.h>
        #include <sys/socket.h>
        #include <sys/stat.h>
        #include <sys/syscall.h>
        #include <unistd.h>

        #ifndef PR_SET_MDWE
        #define PR_SET_MDWE 65
        #endif
        #ifndef PR_MDWE_REFUSE_EXEC_GAIN
        #define PR_MDWE_REFUSE_EXEC_GAIN 1
        #endif
        #ifndef SYS_mount_setattr
        #define SYS_mount_setattr 442
        #endif
        #if defined(__x86_64__)
        #define SANDBOX_AUDIT_ARCH AUDIT_ARCH_X86_64
        #elif defined(__aarch64__)
        #define SANDBOX_AUDIT_ARCH AUDIT_ARCH_AARCH64
        #else
        #error "add this architecture's AUDIT_ARCH"
        #endif

        struct sandbox_mount_attr { uint64_t attr_set, attr_clr, propagation, userns_fd; };
        enum { SANDBOX_AT_RECURSIVE = 0x8000, SANDBOX_MOUNT_ATTR_RDONLY = 0x1 };

        __attribute__((noreturn)) static void fail(const char *what) {
            fprintf(stderr, "sandbox-exec: %s: %s\n", what, strerror(errno));
            exit(70);
        }

        static void bind_mount(const char *source, const char *target) {
            if (mount(source, target, NULL, MS_BIND | MS_REC, NULL) != 0) fail(target);
        }

        static void set_read_only(const char *path, int recursive, int read_only) {
            struct sandbox_mount_attr attr = {0};
            if (read_only) attr.attr_set = SANDBOX_MOUNT_ATTR_RDONLY;
            else attr.attr_clr = SANDBOX_MOUNT_ATTR_RDONLY;
            if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? SANDBOX_AT_RECURSIVE : 0, &attr, sizeof attr) != 0)
                fail(path);
        }

        static void private_dev(const char *scratch) {
            static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
            static const char *const directories[] = {"shm", "pts", "snd"};
            char source[64], target[4096];
            if (mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NOEXEC | MS_STRICTATIME, "mode=0755") != 0) fail("tmpfs /dev");
            for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
                snprintf(source, sizeof source, "/dev/%s", nodes[i]);
                snprintf(target, sizeof target, "%s/%s", scratch, nodes[i]);
                int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
                if (fd < 0) fail(target);
                close(fd);
                bind_mount(source, target);
            }
            for (size_t i = 0; i < sizeof directories / sizeof directories[0]; i++) {
                snprintf(source, sizeof source, "/dev/%s", directories[i]);
                if (access(source, F_OK) != 0) continue;
                snprintf(target, sizeof target, "%s/%s", scratch, directories[i]);
                if (mkdir(target, 0755) != 0) fail(target);
                bind_mount(source, target);
            }
            if (mount(scratch, "/dev", NULL, MS_MOVE, NULL) != 0) fail("move the private /dev");
        }

        static void restrict_address_families(void) {
            struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_AUDIT_ARCH, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            struct sock_fprog program = {.len = sizeof filter / sizeof filter[0], .filter = filter};
            if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) fail("seccomp");
        }

        int main(int argc, char **argv) {
            if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
                void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                int inet = socket(AF_INET, SOCK_STREAM, 0);
                struct sched_param fifo = {.sched_priority = 10}, other = {.sched_priority = 0};
                int rt = sched_setscheduler(0, SCHED_FIFO, &fifo) == 0;
                if (rt) sched_setscheduler(0, SCHED_OTHER, &other);
                struct rlimit rtprio;
                getrlimit(RLIMIT_RTPRIO, &rtprio);
                printf("wx=%s inet=%s rt=%s rtprio=%llu\n", page == MAP_FAILED ? "refused" : "allowed",
                       inet < 0 ? "refused" : "allowed", rt ? "allowed" : "refused", (unsigned long long)rtprio.rlim_cur);
                return 0;
            }
            const char *dev = NULL, *writable = NULL;
            int proc_subset_pid = 0, i = 1;
            long uid = -1, gid = -1, mask = -1;
            for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
                if (strcmp(argv[i], "--proc-subset-pid") == 0) { proc_subset_pid = 1; continue; }
                if (i + 1 >= argc) { fprintf(stderr, "sandbox-exec: %s needs a value\n", argv[i]); return 64; }
                if (strcmp(argv[i], "--dev") == 0) dev = argv[++i];
                else if (strcmp(argv[i], "--writable") == 0) writable = argv[++i];
                else if (strcmp(argv[i], "--uid") == 0) uid = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--gid") == 0) gid = strtol(argv[++i], NULL, 10);
                else if (strcmp(argv[i], "--umask") == 0) mask = strtol(argv[++i], NULL, 8);
                else { fprintf(stderr, "sandbox-exec: unknown option %s\n", argv[i]); return 64; }
            }
            if (i + 1 >= argc) { fprintf(stderr, "sandbox-exec: no program after --\n"); return 64; }
            char **program = argv + i + 1;

            if (unshare(CLONE_NEWNS | CLONE_NEWNET) != 0) fail("unshare");
            if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail("make / private");
            if (dev) private_dev(dev);
            if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      proc_subset_pid ? "hidepid=invisible,subset=pid" : "hidepid=invisible") != 0)
                fail("mount /proc");
            if (writable) {
                bind_mount(writable, writable);
                set_read_only("/", 1, 1);
                set_read_only(writable, 1, 0);
                set_read_only("/dev", 1, 0);
                set_read_only("/proc", 0, 0);
            }
            if (mask >= 0) umask((mode_t)mask);
            struct rlimit memlock = {RLIM_INFINITY, RLIM_INFINITY}, rtprio = {95, 95};
            // Raising a hard limit needs CAP_SYS_RESOURCE, which some containers withhold.
            if (setrlimit(RLIMIT_MEMLOCK, &memlock) != 0)
                fprintf(stderr, "sandbox-exec: LimitMEMLOCK=infinity not applied: %s\n", strerror(errno));
            if (setrlimit(RLIMIT_RTPRIO, &rtprio) != 0)
                fprintf(stderr, "sandbox-exec: LimitRTPRIO=95 not applied: %s\n", strerror(errno));
            if (gid >= 0) {
                if (setgroups(0, NULL) != 0) fail("setgroups");
                if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0) fail("setresgid");
            }
            if (uid >= 0 && setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) fail("setresuid");
            if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
            if (prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0) {
                fprintf(stderr, "sandbox-exec: PR_SET_MDWE: %s (Linux 6.3 or later needed)\n", strerror(errno));
                return 77;
            }
            restrict_address_families();
            execv(program[0], program);
            fail(program[0]);
        }
        """#
}
