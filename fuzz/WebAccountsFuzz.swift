// libFuzzer target: what the web accounts bring in from outside. The input as the accounts file
// (`[http] users_file`, which recctl writes and recd reads back: WebAccountsFile.parse), as a
// password hash string (PasswordHash.looksValid, which bounds what a login may cost), as a
// login form body (HTTPForm.parse) and as a login's `next` (HTTPLoginGate.safeNext). Nothing
// may trap; what the parser takes it must write back as text that parses to the same accounts;
// a `next` let through stays on this site.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
@testable import ArchiveProof
@testable import HTTPServer

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let file = WebAccountsFile.parse(bytes)
    precondition(file.accounts.count <= WebAccountsFile.maxAccounts, "more accounts than the bound")
    let again = WebAccountsFile.parse(Array(file.text.utf8))
    precondition(again.accounts == file.accounts && again.problems.isEmpty, "the file's own text reads otherwise")
    let text = String(decoding: bytes, as: UTF8.self)
    _ = PasswordHash.looksValid(text)
    let form = HTTPForm.parse(bytes)
    precondition(form.count <= HTTPForm.maxFields, "more fields than the bound")
    let next = HTTPLoginGate.safeNext(text)
    precondition(next.hasPrefix("/") && !next.hasPrefix("//"), "a next that leaves the site: \(next)")
    _ = HTTPForm.printable(text)
    return 0
}
