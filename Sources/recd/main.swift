// recd: the daemon. All of it lives in the Daemon module; this only hands over the arguments.
import Daemon
import Foundation

let status = Recd.main(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
// recd has stopped by now: every file closed, synced and indexed, its last line logged. The
// libraries' exit handlers are not run: one of them (p11-kit's, freeing a locale) hung a stopped
// recd for good on glibc's locale lock, and the process never exited.
fflush(nil)
_exit(status)
