// recd: the daemon. All of it lives in the Daemon module; this only hands over the arguments.
import Daemon
import Foundation

exit(Recd.main(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
