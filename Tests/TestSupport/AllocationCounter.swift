// Counts heap allocations on one chosen thread: for the tests of the process path (STYLE 5) and
// of other code that promises not to allocate once made (VoiceProcessor.process).
//
// malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign are redirected in the GOT
// of every loaded object except libc and the dynamic loader, so every call that goes through a
// PLT (the Swift runtime's swift_allocObject/swift_slowAlloc, UnsafeMutablePointer.allocate,
// libjack, the test binary) lands in a counting wrapper that calls glibc's __libc_* entry
// point. Defining `malloc` in the test binary does not work (SwiftPM does not export it), glibc
// 2.34 removed the malloc hooks, and mallinfo2() only shows the net heap size, not transient
// allocations. The Swift runtime's instrumentation hooks (_swift_retain & co.) are not used:
// with this toolchain they crash when other threads retain concurrently.
//
// Counting is per thread: only calls made on the thread given to `counting` count. The
// patching is process-wide and undone afterwards; callers are serialised by a lock.

import Glibc
import Synchronization

public enum AllocationCounter {
    fileprivate static let countedThread = Atomic<UInt>(0)
    fileprivate static let allocations = Atomic<Int>(0)

    public struct Counts: Equatable, CustomStringConvertible {
        public var allocations: Int
        public var description: String { "\(allocations) allocations" }
    }

    private static let gate = Mutex(())

    /// Runs `body` with counting on for `thread` (default: the calling thread) and returns
    /// what was counted.
    public static func counting(thread: pthread_t = pthread_self(), _ body: () -> Void) -> Counts {
        gate.withLock { _ in
            prepare()
            let patches = patchGOTs()
            defer { for patch in patches.reversed() { write(patch.original, to: patch.slot) } }
            allocations.store(0, ordering: .sequentiallyConsistent)
            countedThread.store(UInt(thread), ordering: .sequentiallyConsistent)
            body()
            countedThread.store(0, ordering: .sequentiallyConsistent)
            return Counts(allocations: allocations.load(ordering: .sequentiallyConsistent))
        }
    }

    private struct Patch {
        let slot: UnsafeMutablePointer<UnsafeRawPointer?>
        let original: UnsafeRawPointer?
    }

    nonisolated(unsafe) fileprivate static let program = dlopen(nil, RTLD_NOW)
    fileprivate static func symbol(_ name: String) -> UnsafeMutableRawPointer {
        guard let address = dlsym(program, name) else { fatalError("no symbol \(name)") }
        return address
    }

    fileprivate typealias Malloc = @convention(c) (Int) -> UnsafeMutableRawPointer?
    fileprivate typealias Calloc = @convention(c) (Int, Int) -> UnsafeMutableRawPointer?
    fileprivate typealias Realloc =
        @convention(c) (UnsafeMutableRawPointer?, Int) -> UnsafeMutableRawPointer?
    fileprivate typealias Memalign = @convention(c) (Int, Int) -> UnsafeMutableRawPointer?
    fileprivate typealias PosixMemalign =
        @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, Int, Int) -> Int32

    // Read once, before any hook is installed (see `prepare`).
    fileprivate static let libcMalloc = unsafeBitCast(symbol("__libc_malloc"), to: Malloc.self)
    fileprivate static let libcCalloc = unsafeBitCast(symbol("__libc_calloc"), to: Calloc.self)
    fileprivate static let libcRealloc = unsafeBitCast(symbol("__libc_realloc"), to: Realloc.self)
    fileprivate static let libcMemalign = unsafeBitCast(
        symbol("__libc_memalign"), to: Memalign.self)

    nonisolated(unsafe) private static let replacements: [String: UnsafeRawPointer] = [
        "malloc": unsafeBitCast(countingMalloc as Malloc, to: UnsafeRawPointer.self),
        "calloc": unsafeBitCast(countingCalloc as Calloc, to: UnsafeRawPointer.self),
        "realloc": unsafeBitCast(countingRealloc as Realloc, to: UnsafeRawPointer.self),
        "memalign": unsafeBitCast(countingMemalign as Memalign, to: UnsafeRawPointer.self),
        "aligned_alloc": unsafeBitCast(countingMemalign as Memalign, to: UnsafeRawPointer.self),
        "posix_memalign": unsafeBitCast(
            countingPosixMemalign as PosixMemalign, to: UnsafeRawPointer.self),
    ]

    /// Initialises every lazy static the wrappers use, so that no wrapper runs a lazy
    /// initialiser (which could allocate, re-entering a wrapper) once the hooks are in.
    private static func prepare() {
        _ = countedThread.load(ordering: .relaxed)
        _ = allocations.load(ordering: .relaxed)
        _ = (libcMalloc, libcCalloc, libcRealloc, libcMemalign)
        _ = replacements.count
    }

    // MARK: GOT patching (ELF64)

    #if arch(x86_64)
        private static let globalDataRelocation: UInt32 = 6  // R_X86_64_GLOB_DAT
        private static let jumpSlotRelocation: UInt32 = 7  // R_X86_64_JUMP_SLOT
    #elseif arch(arm64)
        private static let globalDataRelocation: UInt32 = 1025  // R_AARCH64_GLOB_DAT
        private static let jumpSlotRelocation: UInt32 = 1026  // R_AARCH64_JUMP_SLOT
    #endif

    /// Walks the loader's list of objects (_r_debug.r_map; link_map's public head: l_addr,
    /// l_name, l_ld, l_next) and redirects each GOT slot bound to a function we replace.
    private static func patchGOTs() -> [Patch] {
        var patches: [Patch] = []
        let debug = symbol("_r_debug")
        var map = debug.load(fromByteOffset: 8, as: UnsafeRawPointer?.self)
        while let object = map {
            let base = object.load(fromByteOffset: 0, as: UInt.self)
            let name =
                object.load(fromByteOffset: 8, as: UnsafePointer<CChar>?.self).map {
                    String(cString: $0)
                } ?? ""
            let dynamic = object.load(fromByteOffset: 16, as: UnsafeRawPointer?.self)
            map = object.load(fromByteOffset: 24, as: UnsafeRawPointer?.self)
            guard let dynamic, !name.contains("libc.so"), !name.contains("ld-linux"),
                !name.contains("vdso")
            else { continue }
            patches += patchObject(base: base, dynamic: dynamic)
        }
        return patches
    }

    private static func patchObject(base: UInt, dynamic: UnsafeRawPointer) -> [Patch] {
        var symbols: UInt = 0
        var strings: UInt = 0
        var tables: [(UInt, Int)] = []  // (address, size) of RELA tables
        var jumpRelocations: UInt = 0
        var jumpSize = 0
        var relocations: UInt = 0
        var relocationSize = 0
        var offset = 0
        while true {
            let tag = dynamic.load(fromByteOffset: offset, as: Int64.self)
            let value = dynamic.load(fromByteOffset: offset + 8, as: UInt64.self)
            offset += 16
            if tag == 0 { break }
            // glibc relocates these in place; an unrelocated one is smaller than the base.
            let address = UInt(value) < base ? base + UInt(value) : UInt(value)
            switch tag {
            case 5: strings = address  // DT_STRTAB
            case 6: symbols = address  // DT_SYMTAB
            case 7: relocations = address  // DT_RELA
            case 8: relocationSize = Int(value)  // DT_RELASZ
            case 23: jumpRelocations = address  // DT_JMPREL
            case 2: jumpSize = Int(value)  // DT_PLTRELSZ
            default: break
            }
        }
        if relocations != 0 { tables.append((relocations, relocationSize)) }
        if jumpRelocations != 0 { tables.append((jumpRelocations, jumpSize)) }
        guard symbols != 0, strings != 0 else { return [] }
        var patches: [Patch] = []
        for (table, size) in tables {
            for entry in stride(from: 0, to: size, by: 24) {
                guard let rela = UnsafeRawPointer(bitPattern: table + UInt(entry)) else { continue }
                let slotOffset = rela.load(as: UInt64.self)
                let info = rela.load(fromByteOffset: 8, as: UInt64.self)
                let type = UInt32(truncatingIfNeeded: info)
                guard type == globalDataRelocation || type == jumpSlotRelocation else { continue }
                let symbolIndex = UInt(info >> 32)
                guard let symbol = UnsafeRawPointer(bitPattern: symbols + symbolIndex * 24) else {
                    continue
                }
                let nameOffset = UInt(symbol.load(as: UInt32.self))
                guard let namePointer = UnsafePointer<CChar>(bitPattern: strings + nameOffset),
                    let replacement = replacements[String(cString: namePointer)],
                    let slot = UnsafeMutablePointer<UnsafeRawPointer?>(
                        bitPattern: base + UInt(slotOffset))
                else { continue }
                patches.append(Patch(slot: slot, original: slot.pointee))
                write(replacement, to: slot)
            }
        }
        return patches
    }

    /// Writes a GOT slot, unprotecting its page first (it may be RELRO).
    private static func write(
        _ value: UnsafeRawPointer?, to slot: UnsafeMutablePointer<UnsafeRawPointer?>
    ) {
        let pageSize = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let page = UInt(bitPattern: slot) & ~(pageSize - 1)
        let pagePointer = UnsafeMutableRawPointer(bitPattern: page)
        _ = mprotect(pagePointer, Int(pageSize), PROT_READ | PROT_WRITE)
        slot.pointee = value
        // Left writable: harmless in a test process, and the old mode need not be guessed.
    }
}

// MARK: Counting wrappers (called from any thread; they must not allocate)

@inline(__always)
private func isCounted() -> Bool {
    let thread = AllocationCounter.countedThread.load(ordering: .relaxed)
    return thread != 0 && UInt(pthread_self()) == thread
}

private func countingMalloc(_ size: Int) -> UnsafeMutableRawPointer? {
    if isCounted() { AllocationCounter.allocations.add(1, ordering: .relaxed) }
    return AllocationCounter.libcMalloc(size)
}

private func countingCalloc(_ count: Int, _ size: Int) -> UnsafeMutableRawPointer? {
    if isCounted() { AllocationCounter.allocations.add(1, ordering: .relaxed) }
    return AllocationCounter.libcCalloc(count, size)
}

private func countingRealloc(_ pointer: UnsafeMutableRawPointer?, _ size: Int)
    -> UnsafeMutableRawPointer?
{
    if isCounted() { AllocationCounter.allocations.add(1, ordering: .relaxed) }
    return AllocationCounter.libcRealloc(pointer, size)
}

private func countingMemalign(_ alignment: Int, _ size: Int) -> UnsafeMutableRawPointer? {
    if isCounted() { AllocationCounter.allocations.add(1, ordering: .relaxed) }
    return AllocationCounter.libcMemalign(alignment, size)
}

private func countingPosixMemalign(
    _ result: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ alignment: Int, _ size: Int
) -> Int32 {
    if isCounted() { AllocationCounter.allocations.add(1, ordering: .relaxed) }
    guard let memory = AllocationCounter.libcMemalign(alignment, size) else { return ENOMEM }
    result?.pointee = memory
    return 0
}
