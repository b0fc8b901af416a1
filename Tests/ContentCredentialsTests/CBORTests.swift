// CBOR against RFC 8949's own examples (Appendix A): each item's preferred encoding, decoded and
// encoded again; the indefinite-length forms decode to the same items; §4.2.1's key order.

import Testing

@testable import ContentCredentials

func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var pending: UInt8?
    for character in text where character.isHexDigit {
        let digit = UInt8(character.hexDigitValue ?? 0)
        if let high = pending {
            bytes.append(high << 4 | digit)
            pending = nil
        } else {
            pending = digit
        }
    }
    return bytes
}

func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

struct CBORTests {
    /// RFC 8949 Appendix A, table 6: items with their preferred (and deterministic) encodings.
    static let appendixA: [(CBOR, String)] = [
        (.unsigned(0), "00"), (.unsigned(1), "01"), (.unsigned(10), "0a"), (.unsigned(23), "17"),
        (.unsigned(24), "1818"), (.unsigned(25), "1819"), (.unsigned(100), "1864"), (.unsigned(1000), "1903e8"),
        (.unsigned(1_000_000), "1a000f4240"), (.unsigned(1_000_000_000_000), "1b000000e8d4a51000"),
        (.unsigned(18_446_744_073_709_551_615), "1bffffffffffffffff"),
        (.tagged(2, .bytes(hex("010000000000000000"))), "c249010000000000000000"),
        (.negative(18_446_744_073_709_551_615), "3bffffffffffffffff"),
        (.tagged(3, .bytes(hex("010000000000000000"))), "c349010000000000000000"),
        (.int(-1), "20"), (.int(-10), "29"), (.int(-100), "3863"), (.int(-1000), "3903e7"),
        (.float(0.0), "f90000"), (.float(-0.0), "f98000"), (.float(1.0), "f93c00"), (.float(1.1), "fb3ff199999999999a"),
        (.float(1.5), "f93e00"), (.float(65504.0), "f97bff"), (.float(100000.0), "fa47c35000"),
        (.float(3.4028234663852886e+38), "fa7f7fffff"), (.float(1.0e+300), "fb7e37e43c8800759c"),
        (.float(5.960464477539063e-8), "f90001"), (.float(0.00006103515625), "f90400"), (.float(-4.0), "f9c400"),
        (.float(-4.1), "fbc010666666666666"), (.float(.infinity), "f97c00"), (.float(-.infinity), "f9fc00"),
        (.false, "f4"), (.true, "f5"), (.null, "f6"), (.undefined, "f7"), (.simple(16), "f0"), (.simple(255), "f8ff"),
        (.tagged(0, .text("2013-03-21T20:04:00Z")), "c074323031332d30332d32315432303a30343a30305a"),
        (.tagged(1, .unsigned(1_363_896_240)), "c11a514b67b0"),
        (.tagged(1, .float(1363896240.5)), "c1fb41d452d9ec200000"),
        (.tagged(23, .bytes(hex("01020304"))), "d74401020304"),
        (.tagged(24, .bytes(hex("6449455446"))), "d818456449455446"),
        (.tagged(32, .text("http://www.example.com")), "d82076687474703a2f2f7777772e6578616d706c652e636f6d"),
        (.bytes([]), "40"), (.bytes(hex("01020304")), "4401020304"), (.text(""), "60"), (.text("a"), "6161"),
        (.text("IETF"), "6449455446"), (.text("\"\\"), "62225c"), (.text("\u{00fc}"), "62c3bc"),
        (.text("\u{6c34}"), "63e6b0b4"), (.text("\u{10151}"), "64f0908591"), (.array([]), "80"),
        (.array([.unsigned(1), .unsigned(2), .unsigned(3)]), "83010203"),
        (
            .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])]),
            "8301820203820405"
        ),
        (.array((1...25).map { CBOR.unsigned($0) }), "98190102030405060708090a0b0c0d0e0f101112131415161718181819"),
        (.map([]), "a0"), (.map([.init(.unsigned(1), .unsigned(2)), .init(.unsigned(3), .unsigned(4))]), "a201020304"),
        (.textMap([("a", .unsigned(1)), ("b", .array([.unsigned(2), .unsigned(3)]))]), "a26161016162820203"),
        (.array([.text("a"), .textMap([("b", .text("c"))])]), "826161a161626163"),
        (
            .textMap([("a", .text("A")), ("b", .text("B")), ("c", .text("C")), ("d", .text("D")), ("e", .text("E"))]),
            "a56161614161626142616361436164614461656145"
        ),
    ]

    @Test func appendixAEncodings() {
        for (item, expected) in Self.appendixA {
            #expect(hexString(item.encoded) == expected, "encoding \(item)")
            #expect(CBOR.decode(hex(expected)) == item, "decoding \(expected)")
        }
    }

    /// Appendix A's NaN and the non-preferred float forms decode; NaN encodes as f97e00.
    @Test func appendixAFloatForms() {
        #expect(hexString(CBOR.float(.nan).encoded) == "f97e00")
        for form in ["f97e00", "fa7fc00000", "fb7ff8000000000000"] {
            guard case .float(let value)? = CBOR.decode(hex(form)) else {
                Issue.record("\(form) did not decode to a float")
                continue
            }
            #expect(value.isNaN, "\(form)")
        }
        #expect(CBOR.decode(hex("fa7f800000")) == .float(.infinity))
        #expect(CBOR.decode(hex("fbfff0000000000000")) == .float(-.infinity))
    }

    /// Appendix A's indefinite-length items decode to the definite items they stand for.
    @Test func appendixAIndefiniteLengths() {
        let one = CBOR.unsigned(1)
        let twoThree = CBOR.array([.unsigned(2), .unsigned(3)])
        let fourFive = CBOR.array([.unsigned(4), .unsigned(5)])
        let cases: [(String, CBOR)] = [
            ("5f42010243030405ff", .bytes(hex("0102030405"))), ("7f657374726561646d696e67ff", .text("streaming")),
            ("9fff", .array([])), ("9f018202039f0405ffff", .array([one, twoThree, fourFive])),
            ("9f01820203820405ff", .array([one, twoThree, fourFive])),
            ("83018202039f0405ff", .array([one, twoThree, fourFive])),
            ("83019f0203ff820405", .array([one, twoThree, fourFive])),
            ("9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff", .array((1...25).map { CBOR.unsigned($0) })),
            ("bf61610161629f0203ffff", .textMap([("a", one), ("b", twoThree)])),
            ("826161bf61626163ff", .array([.text("a"), .textMap([("b", .text("c"))])])),
            ("bf6346756ef563416d7421ff", .textMap([("Fun", .true), ("Amt", .int(-2))])),
        ]
        for (encoded, item) in cases {
            #expect(CBOR.decode(hex(encoded)) == item, "\(encoded)")
        }
    }

    /// RFC 8949 §4.2.1: keys in the bytewise order of their encodings, whatever order they came in.
    @Test func deterministicKeyOrder() {
        let keys: [CBOR] = [
            .false, .array([.int(-1)]), .array([.unsigned(100)]), .text("aa"), .text("z"), .int(-1),
            .unsigned(100), .unsigned(10),
        ]
        let map = CBOR.map(keys.enumerated().map { CBOR.Pair($0.element, .unsigned(UInt64($0.offset))) })
        #expect(
            hexString(map.encoded) == "a8" + "0a07" + "186406" + "2005" + "617a04" + "62616103" + "81186402"
                + "812001" + "f400")
    }

    /// Not one well-formed item: nil, never a trap.
    @Test func malformedInputs() {
        let cases = [
            "", "18", "1c", "5f", "44010203", "9f01", "a1", "a10102ff", "62c3", "7f6161ff00", "f818", "5f6161ff",
            "9b" + String(repeating: "ff", count: 8), "bb" + String(repeating: "ff", count: 8), "0101",
            String(repeating: "81", count: 100) + "00",
        ]
        for text in cases { #expect(CBOR.decode(hex(text)) == nil, "\(text)") }
    }
}
