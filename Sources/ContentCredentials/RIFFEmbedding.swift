// Where a manifest store goes in a WAV file: a top-level RIFF chunk `C2PA` at the end of the
// file (C2PA 2.x, A.4 "RIFF-based formats"; what c2pa-rs reads), the RIFF size grown to hold it.
// The data hash leaves out that chunk, header included (start: the chunk's offset, length: 8 +
// its data), and covers everything else — the RIFF header with its new size too, so the file's
// final layout is fixed before it is hashed.
//
// Pure: the caller reads the file's first bytes and writes what the plan says. Any thread.

public enum RIFFEmbedding {
    /// What to write, given a WAV of `fileSize` bytes. A plain value.
    public struct Plan: Sendable, Equatable {
        /// A zero byte at `fileSize` first, when the file's length is odd (chunks start even).
        public var padByte: Bool
        /// Where the `C2PA` chunk's 8-byte header goes; its data follows.
        public var chunkOffset: UInt64
        /// The RIFF size field (offset 4, little-endian) once the chunk is there.
        public var riffSize: UInt32
        /// The chunk's header: `C2PA` and the store's length, little-endian.
        public var chunkHeader: [UInt8]
        /// The store's padding (the data hash's `pad` bytes) and its length, even.
        public var padding: Int
        public var storeLength: Int
        /// The manifest with its exclusion set: sign it with `store(assetHash:padding:signer:)`.
        public var manifest: C2PAManifest

        public static func == (a: Plan, b: Plan) -> Bool {
            a.padByte == b.padByte && a.chunkOffset == b.chunkOffset && a.riffSize == b.riffSize
                && a.chunkHeader == b.chunkHeader && a.padding == b.padding && a.storeLength == b.storeLength
        }
    }

    public enum Refusal: Error, Equatable {
        /// Not `RIFF....WAVE`.
        case notWAV
        /// The RIFF size field does not say the file's length (a truncated or appended file).
        case sizeMismatch
        /// Past what a RIFF size field can say (4 GiB): an RF64 file carries no C2PA chunk here.
        case tooLarge
    }

    /// The plan for `manifest` in the WAV whose first 12 bytes are `header` and whose length
    /// is `fileSize`.
    public static func plan(header: [UInt8], fileSize: UInt64, manifest: C2PAManifest, signer: ManifestSigner)
        throws(Refusal) -> Plan
    {
        guard header.count >= 12, header[0..<4] == Array("RIFF".utf8)[...], header[8..<12] == Array("WAVE".utf8)[...]
        else { throw .notWAV }
        let declared = UInt64(header[4]) | UInt64(header[5]) << 8 | UInt64(header[6]) << 16 | UInt64(header[7]) << 24
        // libsndfile writes a WAV whose RIFF size is its length less 8 (an odd last chunk padded).
        guard declared + 8 == fileSize else { throw .sizeMismatch }
        let padByte = fileSize % 2 == 1
        let chunkOffset = fileSize + (padByte ? 1 : 0)
        var fitted = manifest
        // The exclusion's length is inside the store whose length it gives: a few rounds settle
        // it (the CBOR integer's width changes at most twice).
        var length = 0
        var padding = 0
        for _ in 0..<4 {
            fitted.exclusions = [(start: chunkOffset, length: UInt64(8 + length))]
            let size = fitted.size(padding: padding, signer: signer)
            if size == length { break }
            length = size
            if length % 2 == 1 {
                padding += 1
                length += 1
            }
        }
        fitted.exclusions = [(start: chunkOffset, length: UInt64(8 + length))]
        guard fitted.size(padding: padding, signer: signer) == length else { throw .tooLarge }
        let riffSize = chunkOffset + 8 + UInt64(length) - 8
        guard riffSize <= UInt64(UInt32.max) else { throw .tooLarge }
        let chunkHeader = Array("C2PA".utf8) + littleEndian(UInt32(length))
        return Plan(
            padByte: padByte, chunkOffset: chunkOffset, riffSize: UInt32(riffSize), chunkHeader: chunkHeader,
            padding: padding, storeLength: length, manifest: fitted)
    }

    public static func littleEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xff), UInt8(value >> 8 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 24)]
    }

    /// The `C2PA` chunk's data in `bytes`, a whole RIFF file: the manifest store, or nil when the
    /// file has none (or is no RIFF). Total over any bytes.
    public static func manifestStore(in bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= 12, bytes[0..<4] == Array("RIFF".utf8)[...] else { return nil }
        var offset = 12
        while bytes.count - offset >= 8 {
            let size =
                Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16
                | Int(bytes[offset + 7]) << 24
            guard size <= bytes.count - offset - 8 else { return nil }
            if bytes[offset..<offset + 4] == Array("C2PA".utf8)[...] {
                return Array(bytes[offset + 8..<offset + 8 + size])
            }
            offset += 8 + size + (size % 2)
        }
        return nil
    }
}
