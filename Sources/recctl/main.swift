// recctl: the command-line control. All of it lives in RecctlKit.
import Foundation
import RecctlKit

exit(Recctl.main(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
